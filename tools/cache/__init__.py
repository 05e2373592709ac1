"""``fusilli-cache``: show and manage the compile cache (also ``python -m fusilli cache``).

    fusilli-cache list                 every entry, least recently used first
    fusilli-cache info [KEY]           the cache's totals, or one entry's full record
    fusilli-cache clear                remove every entry
    fusilli-cache prune [--max-bytes SIZE] [--older-than DAYS]
                                       remove broken and stale entries, then the least
                                       recently used beyond SIZE (default FUSILLI_CACHE_MAX_BYTES)

The directory is ``--cache-dir``, else ``FUSILLI_CACHE_DIR``, else ``~/.cache/fusilli``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

from fusilli.backend import cache

from .. import add_version_argument

PROG = "fusilli-cache"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Show and manage fusilli's compile cache.",
        epilog="Environment: FUSILLI_CACHE_DIR (the directory), FUSILLI_CACHE_MAX_BYTES (the size limit compiles "
        "enforce by least-recently-used eviction, and prune's default).",
    )
    add_version_argument(parser)
    parser.add_argument("--cache-dir", metavar="DIR", help="the cache directory (default: FUSILLI_CACHE_DIR)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    ls = sub.add_parser("list", help="list the entries, least recently used first")
    ls.add_argument("--json", action="store_true", help="one JSON object per entry, with its full metadata")
    info = sub.add_parser("info", help="the cache's totals, or one entry's record")
    info.add_argument("key", nargs="?", help="an entry's key or a unique prefix of it")
    info.add_argument("--json", action="store_true", help="print JSON")
    sub.add_parser("clear", help="remove every entry (and lock and temporary files)")
    prune = sub.add_parser("prune", help="remove broken entries, old ones, then the least recently used")
    prune.add_argument(
        "--max-bytes", metavar="SIZE", help="keep at most SIZE (e.g. 500M, 2G); default FUSILLI_CACHE_MAX_BYTES"
    )
    prune.add_argument("--older-than", metavar="DAYS", type=float, help="remove entries unused for DAYS days")
    return parser


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _when(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "-"


def _describe_target(target: dict) -> str:
    backend = target.get("backend", "?")
    return f"{backend}:{target['arch']}" if target.get("arch") else str(backend)


def _entry_json(e: cache.Entry) -> dict:
    return {
        "key": e.key,
        "path": e.path,
        "bytes": e.size,
        "created": e.metadata.get("created", e.created),
        "last_used": e.last_used,
        "problem": e.problem,
        "metadata": e.metadata,
    }


def _find(root: str, prefix: str) -> cache.Entry:
    matches = [e for e in cache.entries(root) if e.key.startswith(prefix.lower())]
    if len(matches) != 1:
        raise LookupError(f"{'no' if not matches else len(matches)} entries match {prefix!r}")
    return matches[0]


def run(args: argparse.Namespace, root: str) -> int:
    out = sys.stdout
    if args.command == "list":
        listed = cache.entries(root)
        if args.json:
            for e in listed:
                print(json.dumps(_entry_json(e)), file=out)
            return 0
        print(f"{'key':<16}  {'size':>10}  {'created':<19}  {'last used':<19}  {'target':<10}  graph", file=out)
        for e in listed:
            name = e.metadata.get("graph_name", "?") if e.problem is None else f"<{e.problem}>"
            created = e.metadata.get("created", e.created)
            target = _describe_target(e.metadata.get("target", {}))
            print(
                f"{e.key[:16]}  {_size(e.size):>10}  {_when(created)}  {_when(e.last_used)}  {target:<10}  {name}",
                file=out,
            )
        print(f"{len(listed)} entries, {_size(sum(e.size for e in listed))} in {root}", file=out)
        return 0
    if args.command == "info":
        if args.key:
            entry = _find(root, args.key)
            print(json.dumps(_entry_json(entry), indent=2), file=out)
            return 0
        listed = cache.entries(root)
        limit = cache.max_bytes_from_environment()
        summary: dict[str, Any] = {
            "directory": root,
            "entries": len(listed),
            "bytes": sum(e.size for e in listed),
            "max_bytes": limit,
            "broken_entries": sum(e.problem is not None for e in listed),
            "oldest_use": min((e.last_used for e in listed), default=None),
            "newest_use": max((e.last_used for e in listed), default=None),
            "versions": dict(cache.versions()),
        }
        if args.json:
            print(json.dumps(summary, indent=2), file=out)
            return 0
        print(f"directory:   {root}", file=out)
        print(f"entries:     {summary['entries']} ({summary['broken_entries']} broken)", file=out)
        print(f"size:        {_size(summary['bytes'])}", file=out)
        print(f"limit:       {_size(limit) if limit is not None else 'none (FUSILLI_CACHE_MAX_BYTES unset)'}", file=out)
        print(f"last used:   {_when(summary['oldest_use'])} .. {_when(summary['newest_use'])}", file=out)
        print("versions:    " + ", ".join(f"{k}={v}" for k, v in cache.versions().items()), file=out)
        return 0
    if args.command == "clear":
        count = cache.clear(root)
        print(f"removed {count} entries from {root}", file=out)
        return 0
    # prune
    limit = cache.parse_size(args.max_bytes) if args.max_bytes is not None else cache.max_bytes_from_environment()
    older = args.older_than * 86400.0 if args.older_than is not None else None
    removed = cache.prune(root, limit, older)
    left = cache.entries(root, with_metadata=False)
    print(
        f"removed {len(removed)} entries ({_size(sum(e.size for e in removed))}); "
        f"{len(left)} entries, {_size(sum(e.size for e in left))} left in {root}",
        file=out,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    root = args.cache_dir or cache.configured_cache_dir()
    try:
        return run(args, root)
    except (LookupError, ValueError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
