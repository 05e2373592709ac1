"""Same-process A/B of the rule cpu-low-precision-via-f32 on one CPU target: a 1024^3
f16 (or bf16) matmul computed through f32 (the rule) against the same matmul with its
low-precision operands handed to IREE as they are, alternating blocks of calls.

    python benchmarks/ab_low_precision_matmul.py --arch x86-64-v3 --dtype f16 --blocks 8
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import fusilli as fs
from fusilli.backend import rules
from fusilli.backend.targets import Target


def build(name: str, dtype: fs.DataType, n: int) -> fs.Graph:
    g = fs.Graph(name, io_data_type=dtype, compute_data_type=fs.DataType.FLOAT)
    g.matmul(g.tensor("a", [n, n]), g.tensor("b", [n, n]), name="mm").set_output(True).set_name("c")
    return g.validate()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arch", default="host")
    p.add_argument("--dtype", default="f16", choices=("f16", "bf16"))
    p.add_argument("--n", type=int, default=1024)
    p.add_argument("--blocks", type=int, default=8)
    ns = p.parse_args()
    dtype = fs.DataType.HALF if ns.dtype == "f16" else fs.DataType.BFLOAT16
    handle = fs.Handle(fs.Backend.CPU, arch=ns.arch)
    target = Target.resolve(fs.Backend.CPU, ns.arch)
    assert target.cpu is not None
    table = rules.NATIVE_DOT_FEATURES[target.cpu.machine]
    saved = table[dtype]
    table[dtype] = ()  # no native support: the rule applies
    via_f32 = build(f"ab_{ns.dtype}_via_f32", dtype, ns.n).compile(handle)
    table[dtype] = tuple(target.features)  # counted as native: the operands go in as they are
    operands = build(f"ab_{ns.dtype}_operands", dtype, ns.n).compile(handle)
    table[dtype] = saved
    rng = np.random.default_rng(0)
    a, b = (fs.empty(t) for t in via_f32.input_tensors())
    a[...] = rng.uniform(-1, 1, a.shape)
    b[...] = rng.uniform(-1, 1, b.shape)
    graphs = {"through f32 (rule)": via_f32, "operands as they are": operands}
    outs = {name: fs.empty(g.output_tensors()[0]) for name, g in graphs.items()}
    times: dict[str, list[float]] = {name: [] for name in graphs}
    for _ in range(ns.blocks):
        for name, g in graphs.items():
            pack = {"a": a, "b": b, "c": outs[name]}
            g.execute(pack)  # untimed first call of each block
            for _ in range(5):
                t = time.perf_counter()
                g.execute(pack)
                times[name].append((time.perf_counter() - t) * 1e3)
    for name, g in graphs.items():
        ts = times[name]
        print(
            f"{ns.arch} {ns.dtype} {name}: min {min(ts):.2f} ms, median {statistics.median(ts):.2f} ms, "
            f"{g.compile_stats.dispatch_count} dispatches"
        )
    got = [o.astype(np.float32) for o in outs.values()]
    print(f"max |difference| between the two: {float(np.max(np.abs(got[0] - got[1]))):.3g}")


if __name__ == "__main__":
    main()
