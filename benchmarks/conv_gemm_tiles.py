"""Conv GEMM tile configs (``fusilli/passes/gemm_config.py``) against each other, in one process.

Each row of the suite is compiled once per variant with the compile cache off (the tile
tables are not in the cache key); the variants and PyTorch run interleaved in blocks,
swapping who goes first, and the medians and ratios to PyTorch are printed. A variant
is ``name=DM,DN,VM,VN,KR[,CR,MIN_DEPTH]`` (distribution tile, register tile, K per vector
step, K per cache block from a GEMM depth) and replaces the tile the host's tables would
give each conv GEMM (``gemm_config.conv_gemm_tile``: per ISA and CPU vendor, strided convs'
patch matrices apart); ``current`` is the tables as they stand. Rows a variant compiles alike show
the method's noise.

Usage: python benchmarks/conv_gemm_tiles.py [SUITE] [--variant NAME=...]... [--blocks 6] [--iters 15] [--torch-threads N]
  default variants: current, and whole-K (the current register tile, no K blocks)
"""

from __future__ import annotations

import argparse
import os
import statistics

import fusilli as fs
from fusilli.backend import rules
from fusilli.backend.targets import Target, cpu_vendor
from fusilli.passes import gemm_config
from fusilli.tools.benchmark import parse_command, read_suite
from fusilli.tools.benchmark.measure import _import_torch, interleaved_ms
from fusilli.tools.benchmark.ops import SUBCOMMANDS


def _tile(spec: str) -> gemm_config.GemmTile:
    v = [int(x) for x in spec.split(",")]
    if len(v) not in (5, 7):
        raise SystemExit(f"a variant is DM,DN,VM,VN,KR[,CR,MIN_DEPTH], not {spec!r}")
    cr, min_depth = (v[5] or None, v[6]) if len(v) == 7 else (None, 0)
    return gemm_config.GemmTile((v[0], v[1]), (v[2], v[3]), v[4], cr, min_depth)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("suite", nargs="?", default=os.path.join(os.path.dirname(__file__), "conv_gemm_tiles.txt"))
    parser.add_argument("--variant", action="append", default=[], help="NAME=DM,DN,VM,VN,KR[,CR,MIN_DEPTH]")
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--iters", type=int, default=15)
    parser.add_argument(
        "--torch-threads",
        type=int,
        help="PyTorch's threads (one-thread comparisons: 1, with FUSILLI_CPU_EXECUTOR=local-sync)",
    )
    args = parser.parse_args()
    os.environ["FUSILLI_DISABLE_CACHE"] = "1"
    torch = _import_torch()
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    target = Target.resolve("cpu", None)
    key = (rules.vector_isa(target), cpu_vendor(target.cpu) or "")
    current = gemm_config.conv_gemm_tile(key[0], 256, key[1] or None)
    if current is None:
        raise SystemExit(f"no tuned conv GEMM for this host ({key[0]})")
    variants: dict[str, gemm_config.GemmTile | None] = {"current": None}  # None: the tables' own choice
    for v in args.variant or [
        f"whole-K={','.join(map(str, (*current.distribution, *current.vector, current.reduction)))}"
    ]:
        name, _, spec = v.partition("=")
        variants[name] = _tile(spec)
    tables_tile = gemm_config.conv_gemm_tile
    names = [*variants, "torch"]
    print(f"host {key}; ratio = PyTorch median / variant median")
    print(f"{'row':46} " + " ".join(f"{n[:12]:>12}" for n in names) + "  " + " ".join(f"{n[:8]:>8}" for n in variants))
    for _, argv in read_suite(args.suite):
        if argv is None:
            continue
        ns = parse_command(argv)
        runs = {}
        for name, tile in variants.items():
            if tile is not None:
                gemm_config.conv_gemm_tile = lambda *a, tile=tile, **k: tile
            try:
                problem = SUBCOMMANDS[ns.subcommand].build(ns)
                problem.graph.compile(fs.Handle(ns.backend, arch=ns.arch))
            finally:
                gemm_config.conv_gemm_tile = tables_tile
            runs[name] = problem
        with torch.inference_mode():
            fns = {name: (lambda p=p: p.graph.execute(p.pack)) for name, p in runs.items()}
            fns["torch"] = runs["current"].torch_builder(torch)
            # One untimed call absorbs the switch.
            times = interleaved_ms(fns, args.blocks, args.iters, switch=lambda fn: fn())
        med = {name: statistics.median(t) for name, t in times.items()}
        cells = " ".join(f"{med[n]:12.3f}" for n in names)
        ratios = " ".join(f"{med['torch'] / med[n]:8.2f}" for n in variants)
        print(f"{(ns.label or '')[:46]:46} {cells}  {ratios}", flush=True)


if __name__ == "__main__":
    main()
