"""``python -m fusilli``: ``--version``, and the command-line tools as subcommands
(``python -m fusilli cache list`` is ``fusilli-cache list``)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

# Subcommand -> the tool's module (each has ``main(argv) -> int``).
TOOLS = {"cache": "fusilli.tools.cache", "opt": "fusilli.tools.opt", "benchmark": "fusilli.tools.benchmark"}

USAGE = f"""usage: python -m fusilli [--version] {{{",".join(TOOLS)}}} ...

  --version    fusilli's and IREE's versions and the host CPU's features
  cache        show and manage the compile cache (fusilli-cache)
  opt          run fusilli's passes over a graph or MLIR (fusilli-opt)
  benchmark    time graphs, optionally against PyTorch (fusilli-benchmark)"""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--version"]:
        from fusilli.tools import version_text

        print(version_text("fusilli"))
        return 0
    if args[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if not args or args[0] not in TOOLS:
        print(USAGE, file=sys.stderr)
        print(f"python -m fusilli: expected --version or one of {', '.join(TOOLS)}", file=sys.stderr)
        return 2
    return importlib.import_module(TOOLS[args[0]]).main(args[1:])


if __name__ == "__main__":
    sys.exit(main())
