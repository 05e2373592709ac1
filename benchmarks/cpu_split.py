"""The split CPU executor against IREE's worker pool, same process, alternating blocks.

For each command of a suite (``fusilli-benchmark`` syntax), compiles the graph twice,
with ``FUSILLI_CPU_EXECUTOR=split`` and ``=local-task``, and times them in alternating
blocks, each started as fusilli-benchmark starts a block (a pause, then 10 ms of untimed
calls). Prints the median of each and the pool/split ratio (above 1: the split is
faster), the executor each actually got (``split`` falls back to the pool for a graph that
cannot be split), the dispatch counts, and what ``auto`` chooses. What ``auto`` chooses is
``fusilli.backend.runtime.choose_cpu_executor``; this script measures the evidence.

Usage: python benchmarks/cpu_split.py SUITE [--rounds 6] [--calls 5]
"""

from __future__ import annotations

import argparse
import os
import shlex
import time

import numpy as np

import fusilli as fs
from fusilli.backend.runtime import choose_cpu_executor
from fusilli.tools.benchmark import parse_command
from fusilli.tools.benchmark.measure import _switch_to
from fusilli.tools.benchmark.ops import SUBCOMMANDS

EXECUTORS = ("split", "local-task")


def build(argv: list[str], executor: str):
    os.environ["FUSILLI_CPU_EXECUTOR"] = executor
    try:
        ns = parse_command(argv)
        problem = SUBCOMMANDS[ns.subcommand].build(ns)
        problem.graph.compile(fs.Handle(ns.backend, arch=ns.arch))  # reads FUSILLI_CPU_EXECUTOR
    finally:
        os.environ.pop("FUSILLI_CPU_EXECUTOR")
    return problem


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=5, help="timed calls per block")
    args = parser.parse_args()
    for line in open(args.suite):
        line = line.split("#", 1)[0].strip() if line.lstrip().startswith("#") else line.strip()
        if not line:
            continue
        argv = shlex.split(line)
        label = argv[argv.index("--label") + 1] if "--label" in argv else line[:48]
        argv = argv[next(i for i, a in enumerate(argv) if a in SUBCOMMANDS) :]
        problems = {ex: build(argv, ex) for ex in EXECUTORS}
        times: dict[str, list[float]] = {ex: [] for ex in EXECUTORS}
        for r in range(args.rounds):
            for ex in EXECUTORS if r % 2 == 0 else EXECUTORS[::-1]:
                graph, pack = problems[ex].graph, problems[ex].pack
                _switch_to(lambda g=graph, p=pack: g.execute(p))
                for _ in range(args.calls):
                    t0 = time.perf_counter()
                    graph.execute(pack)
                    times[ex].append(time.perf_counter() - t0)
        split, pool = (float(np.median(times[ex])) * 1e3 for ex in EXECUTORS)
        got = problems["split"].graph._compiled.executor
        auto = choose_cpu_executor(problems["split"].graph, problems["split"].graph._compiled.handle.arch)
        dispatches = "/".join(str(problems[ex].graph.compile_stats.dispatch_count) for ex in EXECUTORS)
        print(
            f"{label:48s} split ({got}) {split:8.3f} ms  pool {pool:8.3f} ms  pool/split {pool / split:5.2f}  "
            f"dispatches {dispatches}  auto: {auto}",
            flush=True,
        )


if __name__ == "__main__":
    main()
