"""Where running a graph inline (IREE local-sync) stops beating the worker pool (local-task).

For pointwise adds and square matmuls of growing size, times ``Graph.execute`` of the
same compiled graph on both CPU executors (``FUSILLI_CPU_EXECUTOR``), in alternating
blocks so both see the same machine load, and prints median microseconds per call and
the ratio. ``fusilli.backend.runtime.INLINE_MAX_FLOPS`` / ``INLINE_MAX_BYTES`` are set
from this table.

Usage: python benchmarks/cpu_executor.py [--iters 200] [--blocks 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

import fusilli as fs


def _add_graph(n: int) -> tuple[fs.Graph, str, int]:
    g = fs.Graph(name=f"exec_add_{n}", io_data_type=fs.DataType.FLOAT)
    x, y = g.tensor(name="x", dim=[n]), g.tensor(name="y", dim=[n])
    g.add(x, y, name="add").set_output(True)
    return g, f"add {n}", 3 * 4 * n


def _matmul_graph(m: int) -> tuple[fs.Graph, str, int]:
    g = fs.Graph(name=f"exec_mm_{m}", io_data_type=fs.DataType.FLOAT)
    a, b = g.tensor(name="a", dim=[m, m]), g.tensor(name="b", dim=[m, m])
    g.matmul(a, b, name="mm").set_output(True)
    return g, f"matmul {m}x{m} ({2 * m**3 / 1e6:.2f} MFLOP)", 3 * 4 * m * m


def _timed(g: fs.Graph, pack: dict, iters: int) -> float:
    times = []
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        g.execute(pack)
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--blocks", type=int, default=5)
    args = parser.parse_args()
    handle = fs.Handle(fs.Backend.CPU)
    cases = [_add_graph(n) for n in (4, 1 << 12, 1 << 14, 1 << 16, 1 << 18)]
    cases += [_matmul_graph(m) for m in (16, 64, 100, 128, 192, 256)]
    print(f"{'graph':36} {'io bytes':>9} {'inline us':>10} {'pool us':>9} {'pool/inline':>11}")
    for g, label, io_bytes in cases:
        graphs = {}
        for executor in ("local-sync", "local-task"):
            os.environ["FUSILLI_CPU_EXECUTOR"] = executor
            graphs[executor] = fs.Graph.from_json(g.to_json()).compile(handle)
        os.environ.pop("FUSILLI_CPU_EXECUTOR")
        packs = {}
        for executor, cg in graphs.items():
            packs[executor] = {t: fs.empty(t) for t in (*cg.input_tensors(), *cg.output_tensors())}
            for t in cg.input_tensors():
                packs[executor][t][...] = np.random.rand(*t.dim)
        medians: dict[str, list[float]] = {e: [] for e in graphs}
        for _ in range(args.blocks):
            for executor, cg in graphs.items():
                medians[executor].append(_timed(cg, packs[executor], args.iters))
        inline, pool = (min(medians[e]) for e in ("local-sync", "local-task"))
        print(f"{label:36} {io_bytes:9d} {inline:10.1f} {pool:9.1f} {pool / inline:11.2f}")


if __name__ == "__main__":
    main()
