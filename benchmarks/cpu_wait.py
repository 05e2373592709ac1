"""How a worker-pool graph's caller should wait: inline (IREE's spinning call) or through
fusilli's low-priority helper thread (``FUSILLI_CPU_WAIT``, see
``fusilli.backend.runtime.cpu_wait_mode``).

Compiles each benchmark row once, binds it twice (one ``CompiledGraph`` per wait mode),
then times ``Graph.execute`` in interleaved blocks, swapping who goes first, so both modes
see the same machine load. Prints the median and 90th percentile per mode: the spinning
caller shows up in the tail (a call that waits for a scheduling quantum).

Usage: python benchmarks/cpu_wait.py [--suite benchmarks/cpu.txt] [--match conv] [--blocks 6] [--iters 40]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import fusilli as fs
from fusilli.tools.benchmark import parse_command, read_suite
from fusilli.tools.benchmark.ops import SUBCOMMANDS

MODES = ("inline", "helper")


def _bound_graphs(argv: list[str]) -> tuple[str, dict[str, tuple[fs.Graph, dict]]]:
    ns = parse_command(argv)
    handle = fs.Handle(ns.backend, arch=ns.arch)
    bound = {}
    for mode in MODES:
        os.environ["FUSILLI_CPU_WAIT"] = mode
        problem = SUBCOMMANDS[ns.subcommand].build(ns)  # a fresh graph: the mode is read when it binds
        problem.graph.compile(handle)
        bound[mode] = (problem.graph, problem.pack)
    os.environ.pop("FUSILLI_CPU_WAIT")
    return ns.label or " ".join(argv), bound


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", default=os.path.join(os.path.dirname(__file__), "cpu.txt"))
    parser.add_argument("--match", default="", help="only rows whose command contains this text")
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--iters", type=int, default=40)
    args = parser.parse_args()
    print(f"{'row':48} {'inline p50':>10} {'p90':>7} {'mean':>7} {'helper p50':>10} {'p90':>7} {'mean':>7}  (ms)")
    for line, argv in read_suite(args.suite):
        if argv is None or args.match not in line:
            continue
        label, bound = _bound_graphs(argv)
        times: dict[str, list[float]] = {m: [] for m in MODES}
        for block in range(args.blocks):
            for mode in MODES if block % 2 == 0 else MODES[::-1]:
                g, pack = bound[mode]
                g.execute(pack)  # untimed: absorbs the switch
                for _ in range(args.iters):
                    t0 = time.perf_counter()
                    g.execute(pack)
                    times[mode].append((time.perf_counter() - t0) * 1e3)
        cells = " ".join(
            f"{np.median(times[m]):10.3f} {np.percentile(times[m], 90):7.3f} {np.mean(times[m]):7.3f}" for m in MODES
        )
        print(f"{label[:48]:48} {cells}", flush=True)


if __name__ == "__main__":
    main()
