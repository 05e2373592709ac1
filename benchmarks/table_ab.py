"""Values of fusilli's rule and tile tables against each other and PyTorch, in one process.

Each variant sets module attributes (the tables in fusilli/backend/rules.py and
fusilli/passes/gemm_config.py) while each row of the suite is compiled, with the compile cache
off (the tables are not in the cache key), then restores them; the variants and PyTorch run
interleaved in blocks, swapping who goes first, and the medians, the ratios to PyTorch and each
variant's dispatch count are printed. A variant with no assignments compiles with the tables as
they stand; EXPR is evaluated among the module's own names. ``NAME@ARCH`` compiles that variant
for the CPU ``ARCH`` instead of the row's own (``--arch`` or the host): one host's named-core
rules against the generic ones, e.g. ``--variant znver3 --variant v3@x86-64-v3``.

Usage: python benchmarks/table_ab.py SUITE --variant NAME[@ARCH][:MODULE.ATTR=EXPR[;MODULE.ATTR=EXPR]...]...
  [--blocks 6] [--iters 10]
  e.g. the twenty-eighth session's A/B of Winograd's 64-column filter panels on AVX2:
  python benchmarks/table_ab.py SUITE --variant 'plain:fusilli.passes.gemm_config.WINOGRAD_B_PANEL_ISAS=set()' \\
      --variant panels
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import fusilli as fs
from fusilli.tools.benchmark import parse_command, read_suite
from fusilli.tools.benchmark.measure import _import_torch, interleaved_ms
from fusilli.tools.benchmark.ops import SUBCOMMANDS


def _parse(spec: str) -> tuple[str, tuple[str | None, list[tuple[Any, str, Any]]]]:
    """``NAME[@ARCH][:MODULE.ATTR=EXPR;...]`` as the name, its CPU (None: the row's) and its
    (module, attribute, value) list."""
    head, _, assignments = spec.partition(":")
    name, _, arch = head.partition("@")
    parsed = []
    for assignment in filter(None, assignments.split(";")):
        target, sep, expr = assignment.partition("=")
        module_name, _, attr = target.strip().rpartition(".")
        if not sep or not module_name:
            raise SystemExit(f"{assignment!r}: expected MODULE.ATTR=EXPR")
        module = importlib.import_module(module_name)
        if not hasattr(module, attr):
            raise SystemExit(f"{module_name} has no attribute {attr!r}")
        # EXPR sees the module's names (its tables, GemmTile): a developer's own command line.
        parsed.append((module, attr, eval(expr, dict(vars(module)))))  # noqa: S307
    return name, (arch or None, parsed)


@contextmanager
def _applied(assignments: list[tuple[Any, str, Any]]) -> Iterator[None]:
    saved = [(module, attr, getattr(module, attr)) for module, attr, _ in assignments]
    try:
        for module, attr, value in assignments:
            setattr(module, attr, value)
        yield
    finally:
        for module, attr, value in saved:
            setattr(module, attr, value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("suite")
    parser.add_argument("--variant", action="append", required=True, help="NAME[@ARCH][:MODULE.ATTR=EXPR;...]")
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--iters", type=int, default=10)
    args = parser.parse_args()
    os.environ["FUSILLI_DISABLE_CACHE"] = "1"
    variants = dict(_parse(spec) for spec in args.variant)
    torch = _import_torch()
    print("ratio = PyTorch median / variant median; ms are medians")
    for _, argv in read_suite(args.suite):
        if argv is None:
            continue
        ns = parse_command(argv)
        runs = {}
        for name, (arch, assignments) in variants.items():
            with _applied(assignments):
                problem = SUBCOMMANDS[ns.subcommand].build(ns)
                problem.graph.compile(fs.Handle(ns.backend, arch=arch or ns.arch))
            runs[name] = problem
        with torch.inference_mode():
            fns = {name: (lambda p=p: p.graph.execute(p.pack)) for name, p in runs.items()}
            fns["torch"] = next(iter(runs.values())).torch_builder(torch)
            times = interleaved_ms(fns, args.blocks, args.iters)
        med = {name: statistics.median(t) for name, t in times.items()}
        cells = "  ".join(
            f"{name} {med[name]:.3f} ms ({med['torch'] / med[name]:.2f}, "
            f"{p.graph.compile_stats.dispatch_count} dispatches)"
            for name, p in runs.items()
        )
        print(f"{(ns.label or '')[:40]:40} {cells}  torch {med['torch']:.3f} ms", flush=True)


if __name__ == "__main__":
    main()
