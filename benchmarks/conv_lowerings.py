"""Conv lowerings (``FUSILLI_CONV_LOWERING`` values) against each other and PyTorch, in one process.

Each row of the suite is compiled once per lowering (the lowering is part of the cache
key), then the lowerings and PyTorch run interleaved in blocks, each block started as
fusilli-benchmark starts one (``measure._switch_to``: idle, then untimed calls), swapping
who goes first; the medians and the ratios to PyTorch are printed. A lowering that does
not apply to a row's conv leaves it to the rules (``auto``), so such columns show the
method's noise. ``LOWERING@EXECUTOR`` also sets ``FUSILLI_CPU_EXECUTOR`` for that column.

Usage: python benchmarks/conv_lowerings.py SUITE [--lowering auto] [--lowering gemm@split]... [--blocks 6] [--iters 15] [--torch-threads N]
  default lowerings: auto, gemm, polyphase2
"""

from __future__ import annotations

import argparse
import os
import statistics

import fusilli as fs
from fusilli import pipeline
from fusilli.tools.benchmark import parse_command, read_suite
from fusilli.tools.benchmark.measure import _import_torch, interleaved_ms
from fusilli.tools.benchmark.ops import SUBCOMMANDS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("suite")
    parser.add_argument("--lowering", action="append", default=[], help="LOWERING[@EXECUTOR]")
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--iters", type=int, default=15)
    parser.add_argument(
        "--torch-threads",
        type=int,
        help="PyTorch's threads (one-thread comparisons: 1, with FUSILLI_CPU_EXECUTOR=local-sync)",
    )
    args = parser.parse_args()
    lowerings = args.lowering or ["auto", "gemm", "polyphase2"]
    torch = _import_torch()
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    names = [*lowerings, "torch"]
    print("ratio = PyTorch median / lowering median")
    print(
        f"{'row':46} " + " ".join(f"{n[:11]:>11}" for n in names) + "  " + " ".join(f"{n[:10]:>10}" for n in lowerings)
    )
    for _, argv in read_suite(args.suite):
        if argv is None:
            continue
        ns = parse_command(argv)
        runs = {}
        for name in lowerings:
            lowering, _, executor = name.partition("@")
            if lowering not in pipeline.CONV_LOWERINGS:
                raise SystemExit(f"{lowering!r}: expected one of {', '.join(pipeline.CONV_LOWERINGS)}")
            saved, pipeline.CONV_LOWERING = pipeline.CONV_LOWERING, lowering
            saved_executor = os.environ.get("FUSILLI_CPU_EXECUTOR")
            if executor:
                os.environ["FUSILLI_CPU_EXECUTOR"] = executor
            try:
                problem = SUBCOMMANDS[ns.subcommand].build(ns)
                problem.graph.compile(fs.Handle(ns.backend, arch=ns.arch))
            finally:
                pipeline.CONV_LOWERING = saved
                if saved_executor is None:
                    os.environ.pop("FUSILLI_CPU_EXECUTOR", None)
                else:
                    os.environ["FUSILLI_CPU_EXECUTOR"] = saved_executor
            runs[name] = problem
        with torch.inference_mode():
            fns = {name: (lambda p=p: p.graph.execute(p.pack)) for name, p in runs.items()}
            fns["torch"] = runs[lowerings[0]].torch_builder(torch)
            times = interleaved_ms(fns, args.blocks, args.iters)
        med = {name: statistics.median(t) for name, t in times.items()}
        cells = " ".join(f"{med[n]:11.3f}" for n in names)
        ratios = " ".join(f"{med['torch'] / med[n]:10.2f}" for n in lowerings)
        print(f"{(ns.label or '')[:46]:46} {cells}  {ratios}", flush=True)


if __name__ == "__main__":
    main()
