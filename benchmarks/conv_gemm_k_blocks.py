"""Conv GEMMs with and without K blocks (``gemm_config.CONV_GEMM_TILES_BY_VENDOR``).

Each row of the suite is compiled twice, with the host's tile table and with the
per-vendor entries removed (whole K), the compile cache off (the tables are not in
the cache key); both run interleaved in blocks with PyTorch, swapping who goes first,
and the medians and ratios to PyTorch are printed. Rows whose GEMM is shallower than
the blocks' minimum depth compile alike: their spread is the method's noise.

Usage: python benchmarks/conv_gemm_k_blocks.py [benchmarks/conv_gemm_k_blocks.txt] [--blocks 6] [--iters 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import fusilli as fs
from fusilli.passes import gemm_config
from fusilli.tools.benchmark import parse_command, read_suite
from fusilli.tools.benchmark.measure import _import_torch
from fusilli.tools.benchmark.ops import SUBCOMMANDS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("suite", nargs="?", default=os.path.join(os.path.dirname(__file__), "conv_gemm_k_blocks.txt"))
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--iters", type=int, default=15)
    args = parser.parse_args()
    os.environ["FUSILLI_DISABLE_CACHE"] = "1"
    torch = _import_torch()
    tables = {"blocks": dict(gemm_config.CONV_GEMM_TILES_BY_VENDOR), "whole K": {}}
    print(f"{'row':46} {'blocks ms':>9} {'whole ms':>9} {'torch ms':>9} {'ratio blocks':>12} {'whole':>6}")
    for _, argv in read_suite(args.suite):
        if argv is None:
            continue
        ns = parse_command(argv)
        runs = {}
        for name, table in tables.items():
            gemm_config.CONV_GEMM_TILES_BY_VENDOR.clear()
            gemm_config.CONV_GEMM_TILES_BY_VENDOR.update(table)
            problem = SUBCOMMANDS[ns.subcommand].build(ns)
            problem.graph.compile(fs.Handle(ns.backend, arch=ns.arch))
            runs[name] = problem
        gemm_config.CONV_GEMM_TILES_BY_VENDOR.update(tables["blocks"])
        with torch.inference_mode():
            fns = {name: (lambda p=p: p.graph.execute(p.pack)) for name, p in runs.items()}
            fns["torch"] = runs["blocks"].torch_builder(torch)
            times: dict[str, list[float]] = {name: [] for name in fns}
            for block in range(args.blocks):
                for name in list(fns) if block % 2 == 0 else list(fns)[::-1]:
                    fns[name]()  # untimed: absorbs the switch
                    for _ in range(args.iters):
                        t0 = time.perf_counter()
                        fns[name]()
                        times[name].append((time.perf_counter() - t0) * 1e3)
        med = {name: statistics.median(t) for name, t in times.items()}
        print(
            f"{(ns.label or '')[:46]:46} {med['blocks']:9.3f} {med['whole K']:9.3f} {med['torch']:9.3f} "
            f"{med['torch'] / med['blocks']:12.2f} {med['torch'] / med['whole K']:6.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
