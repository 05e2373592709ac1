"""fusilli-benchmark: time fusilli graphs (and optionally PyTorch eager) on one problem or a suite.

Flags mirror upstream Fusilli's ``fusilli_benchmark_driver`` and MIOpenDriver /
iree-boo-driver, whose command lines run verbatim, e.g.::

    fusilli-benchmark --iter 10 conv -F 1 -n 16 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 \\
        -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 --in_layout NHWC --out_layout NHWC --fil_layout NHWC --spatial_dim 2
    fusilli-benchmark convbfp16 -n 16 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -m conv -F 1 -t 1

Timing happens in this process: inputs are allocated once (64-byte aligned, so
``execute`` imports them without copying), each ``execute`` call is timed on its
own with ``time.perf_counter``. With ``--compare torch`` the same problem runs in
PyTorch eager on the same data, alternating fusilli and PyTorch in blocks (a call
right after the other library's call is slower: caches, thread wake-up), and the
ratio ``torch median / fusilli median`` is printed (above 1: fusilli is faster).

``--suite FILE`` (or ``--commands-file FILE``, as iree-boo-driver names it) reads
one command per line (``#`` starts a comment, blank lines are skipped, a
``[SKIP]`` prefix records a skipped row, a leading driver name such as
``MIOpenDriver`` is dropped); options given on the command line before it are
defaults that a line's own options override. Rows are printed and flushed as they
finish, so an interrupted suite keeps what it measured. ``--compile-only -j N``
fills the compile cache for a suite in N processes (the cache's lock per entry
makes that safe); ``--plot FILE.png`` draws the suite's ratios.

The op families live in ``ops/``, one module each (see ``ops/__init__.py``).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any

from .. import add_version_argument
from .measure import compile_row, run_problem
from .ops import FAMILIES, SUBCOMMANDS
from .problem import BenchmarkError, Problem
from .report import COLUMNS, HOST_COLUMNS, PEAK_GFLOPS_DEFAULT, RowWriter, host_record, plot_ratios

PROG = "fusilli-benchmark"
# First words of a command line that name a driver, not a subcommand (dropped).
DRIVER_NAMES = ("MIOpenDriver", "iree-boo-driver", "fusilli-benchmark", "fusilli_benchmark_driver")
# Options of the driver itself: not passed on to a suite's rows. (flag, takes a value)
_DRIVER_OPTIONS = {
    "--suite": True,
    "--commands-file": True,
    "--plot": True,
    "--jobs": True,
    "-j": True,
    "--compile-only": False,
    "--progress": False,
    "--no-progress": False,
}

__all__ = [
    "COLUMNS",
    "HOST_COLUMNS",
    "PEAK_GFLOPS_DEFAULT",
    "BenchmarkError",
    "Problem",
    "main",
    "parse_command",
    "read_suite",
]


# --------------------------------------------------------------------------- argument parsing
def _add_global_options(p: argparse.ArgumentParser, *, defaults: bool) -> None:
    def d(value: Any) -> Any:
        return value if defaults else argparse.SUPPRESS

    p.add_argument("--iter", "-i", type=int, default=d(10), help="timed iterations (per library), >= 1")
    p.add_argument("--warmup", type=int, default=d(3), help="untimed iterations before timing (per library)")
    p.add_argument("--device", "-D", type=int, default=d(0), help="device index (ignored on CPU)")
    p.add_argument("--backend", default=d("cpu"), choices=("cpu", "amdgpu"), help="fusilli backend")
    p.add_argument(
        "--arch",
        default=d(None),
        help="target arch: an LLVM CPU name for cpu (default FUSILLI_CPU_ARCH or 'host'; e.g. x86-64-v3 to "
        "measure AVX2 code), a gfx arch for amdgpu",
    )
    p.add_argument(
        "--dump", "-d", action="store_true", default=d(False), help="print the optimized IR, flags and statistics"
    )
    p.add_argument(
        "--dump-stage", default=d(None), help="with --dump: also print the IR at this IREE phase (e.g. flow)"
    )
    p.add_argument("--output-format", default=d("text"), choices=("text", "csv", "json"))
    p.add_argument("--compare", default=d(None), choices=("torch",), help="also time PyTorch eager (CPU)")
    p.add_argument(
        "--Xiree-compile",
        dest="xiree",
        action="append",
        default=d([]),
        metavar="FLAG",
        help="extra IREE compiler flag (repeatable; appended to FUSILLI_EXTRA_COMPILER_FLAGS)",
    )
    p.add_argument(
        "--peak-gflops",
        type=float,
        default=d(PEAK_GFLOPS_DEFAULT),
        help="machine peak for the %%-of-peak column (default: f32 peak at the nominal clock, %(default)s)",
    )
    p.add_argument("--label", default=d(None), help="row label (default: the command line)")


def build_parser(*, defaults: bool = True) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Benchmark fusilli graphs (MIOpen-style flags); optionally against PyTorch eager.",
    )
    add_version_argument(p)
    _add_global_options(p, defaults=defaults)
    p.add_argument("--suite", "--commands-file", dest="suite", metavar="FILE", help="one command per line")
    p.add_argument(
        "--progress",
        dest="progress",
        action="store_true",
        default=None,
        help="print progress with an ETA on stderr (default: on for suites)",
    )
    p.add_argument("--no-progress", dest="progress", action="store_false")
    p.add_argument(
        "--compile-only",
        action="store_true",
        help="compile each row into the cache without timing (fills the cache for later runs)",
    )
    p.add_argument("--jobs", "-j", type=int, default=1, help="with --compile-only: compile in N processes")
    p.add_argument("--plot", metavar="FILE.png", help="draw the rows' torch/fusilli ratios (needs --compare torch)")
    sub = p.add_subparsers(dest="subcommand", metavar="SUBCOMMAND")
    for name, family in FAMILIES.items():
        family.add_arguments(sub.add_parser(name, aliases=list(family.ALIASES), help=family.HELP))
    return p


def _strip_driver_name(argv: list[str]) -> list[str]:
    if argv and os.path.basename(argv[0]) in DRIVER_NAMES:
        return argv[1:]
    return argv


def parse_command(argv: Sequence[str], defaults: Sequence[str] = ()) -> argparse.Namespace:
    """Parses one benchmark command (``defaults`` are global options placed before it).
    ``--help`` prints help and exits 0 (SystemExit passes through)."""
    parser = build_parser()
    argv = _strip_driver_name(list(argv))
    try:
        ns = parser.parse_args(list(defaults) + argv)
    except SystemExit as e:
        if e.code in (0, None):
            raise
        raise BenchmarkError(f"cannot parse {' '.join(argv)!r}") from e
    if ns.subcommand is None:
        raise BenchmarkError(f"no subcommand in {' '.join(argv)!r} (expected {', '.join(FAMILIES)})")
    if ns.iter < 1:
        raise BenchmarkError("--iter must be >= 1")
    if ns.warmup < 0:
        raise BenchmarkError("--warmup must be >= 0")
    return ns


def read_suite(path: str) -> list[tuple[str, list[str] | None]]:
    """(line, argv) per command of a suite file; argv is None for a [SKIP] line."""
    rows: list[tuple[str, list[str] | None]] = []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if line.startswith("[SKIP]"):
                rows.append((line[len("[SKIP]") :].strip(), None))
                continue
            rows.append((line, _strip_driver_name(shlex.split(line))))
    return rows


def _row_defaults(argv: Sequence[str]) -> list[str]:
    """The command line minus the driver's own options (those before the subcommand: after
    it, ``-j`` is conv's dilation): the defaults of every suite row, or the one command."""
    out: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg in SUBCOMMANDS or os.path.basename(arg) in DRIVER_NAMES:
            out.append(arg)
            out.extend(args)
            break
        flag = arg.split("=", 1)[0]
        if flag in _DRIVER_OPTIONS:
            if _DRIVER_OPTIONS[flag] and "=" not in arg:
                next(args, None)
            continue
        out.append(arg)
    return out


# --------------------------------------------------------------------------- the driver
def _compile_job(args: list[str], defaults: list[str], line: str) -> dict[str, Any]:
    """One --compile-only row in a worker process."""
    try:
        ns = parse_command(args, defaults)
    except BenchmarkError as e:
        return {"command": line, "status": "error", "error": str(e)}
    return compile_row(ns, ns.label or line)


class Progress:
    """``[i/n] elapsed, ETA`` lines on stderr."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled, self.start, self.done = total, enabled, time.perf_counter(), 0

    def starting(self, line: str) -> None:
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.start
        eta = f"ETA {elapsed / self.done * (self.total - self.done):.0f}s" if self.done else "ETA ?"
        print(f"[{self.done + 1}/{self.total}] {elapsed:6.1f}s  {eta}  {line}", file=sys.stderr, flush=True)

    def finished(self, row: dict[str, Any]) -> None:
        self.done += 1
        if self.enabled and row.get("status") == "error":
            print(f"    error: {row['error']}", file=sys.stderr, flush=True)

    def summary(self) -> None:
        if self.enabled:
            elapsed = time.perf_counter() - self.start
            print(f"done: {self.done} row(s) in {elapsed:.1f}s", file=sys.stderr, flush=True)


def _rows(commands, defaults: list[str], ns: argparse.Namespace, progress: Progress) -> Iterator[dict[str, Any]]:
    if ns.compile_only and ns.jobs > 1:
        yield from _parallel_compile(commands, defaults, ns.jobs, progress)
        return
    for line, args in commands:
        progress.starting(line)
        if args is None:
            row: dict[str, Any] = {"command": line, "status": "skipped"}
        elif ns.compile_only:
            row = _compile_job(args, defaults, line)
        else:
            try:
                row_ns = parse_command(args, defaults)
                row = run_problem(row_ns, row_ns.label or line)
            except BenchmarkError as e:
                row = {"command": line, "status": "error", "error": str(e)}
        progress.finished(row)
        yield row


def _parallel_compile(commands, defaults: list[str], jobs: int, progress: Progress) -> Iterator[dict[str, Any]]:
    """--compile-only -j N: rows compiled in N processes (spawned: IREE's state must not be forked)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {}
        for line, args in commands:
            if args is None:
                row: dict[str, Any] = {"command": line, "status": "skipped"}
                progress.finished(row)
                yield row
                continue
            futures[pool.submit(_compile_job, args, defaults, line)] = line
        for future in as_completed(futures):
            progress.starting(futures[future])
            row = future.result()
            progress.finished(row)
            yield row


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if any(a.split("=", 1)[0] in ("--suite", "--commands-file") for a in argv):
            try:
                top = build_parser(defaults=True).parse_args(argv)
            except SystemExit as e:
                if e.code in (0, None):
                    raise
                raise BenchmarkError(f"cannot parse {' '.join(argv)!r}") from e
            if top.subcommand is not None:
                raise BenchmarkError("--suite takes no subcommand on the command line (the file has one per line)")
            defaults = _row_defaults(argv)
            ns = parse_command(["pointwise", "-N", "1"], defaults)  # the global options, checked
            ns.compile_only, ns.jobs, ns.plot = top.compile_only, top.jobs, top.plot
            commands = read_suite(top.suite)
            progress_on = True if top.progress is None else top.progress
        else:
            ns = parse_command(argv)
            commands = [(ns.label or " ".join(argv), _row_defaults(argv))]
            defaults, progress_on = [], bool(ns.progress)
        if ns.jobs < 1:
            raise BenchmarkError("--jobs must be >= 1")
        if ns.plot and ns.compare != "torch":
            raise BenchmarkError("--plot draws torch/fusilli ratios: add --compare torch")
    except BenchmarkError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"{PROG}: error: cannot read suite: {e}", file=sys.stderr)
        return 2
    writer = RowWriter(sys.stdout, ns.output_format, ns.peak_gflops, host_record(ns.compare == "torch"))
    progress = Progress(len(commands), progress_on)
    rows: list[dict[str, Any]] = []
    interrupted = False
    writer.begin(with_torch=ns.compare == "torch")
    try:
        for row in _rows(commands, defaults, ns, progress):
            rows.append(row)
            writer.row(row)
    except KeyboardInterrupt:  # keep what was measured: the output stays complete and valid
        interrupted = True
        print(f"{PROG}: interrupted after {len(rows)} row(s)", file=sys.stderr, flush=True)
    writer.end()
    progress.summary()
    if ns.plot and rows:
        try:
            plot_ratios(rows, ns.plot)
        except BenchmarkError as e:
            print(f"{PROG}: error: {e}", file=sys.stderr)
            return 2
    if interrupted:
        return 130
    return 1 if any(r["status"] == "error" for r in rows) else 0
