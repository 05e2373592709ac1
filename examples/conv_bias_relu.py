"""fusilli's main example: an NHWC conv + bias + relu, compiled for CPU and AMD GPU.

Builds the graph, compiles it in process for CPU (cached on disk), runs it on
NumPy arrays, checks it against fusilli's NumPy reference interpreter and
prints the max error, the dispatch count and the time per run. Then builds the
AMD GPU (gfx942) artifact, which needs no GPU, and prints its size.
"""

from __future__ import annotations

import time

import numpy as np

import fusilli as fs
from fusilli import reference


def build_graph() -> tuple[fs.Graph, dict[str, fs.TensorAttr]]:
    n, c, h, w, k = 1, 64, 56, 56, 64
    g = fs.Graph(name="conv_bias_relu", io_data_type=fs.DataType.FLOAT, compute_data_type=fs.DataType.FLOAT)
    x = g.tensor(name="x", dim=[n, c, h, w], stride=fs.strides([n, c, h, w], "NHWC"))
    wt = g.tensor(name="w", dim=[k, c, 3, 3], stride=fs.strides([k, c, 3, 3], "NHWC"))
    b = g.tensor(name="b", dim=[1, k, 1, 1], stride=fs.strides([1, k, 1, 1], "NHWC"))
    y = g.conv_fprop(x, wt, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv")
    y = g.add(y, b, name="bias")
    y = g.relu(y, name="relu").set_output(True).set_name("y")
    g.validate()
    return g, {"x": x, "w": wt, "b": b, "y": y}


def main() -> None:
    g, t = build_graph()
    handle = fs.Handle(fs.Backend.CPU)
    start = time.perf_counter()
    g.compile(handle)
    compile_ms = (time.perf_counter() - start) * 1e3

    rng = np.random.default_rng(0)
    inputs = {}
    for name in ("x", "w", "b"):
        arr = fs.empty(t[name])
        arr[...] = rng.standard_normal(arr.shape)
        inputs[t[name]] = arr
    y = fs.empty(t["y"])
    pack = {**inputs, t["y"]: y}
    g.execute(pack)

    expected = reference.run(g, inputs)["y"]
    max_error = float(np.abs(y - expected).max())

    iters = 20
    start = time.perf_counter()
    for _ in range(iters):
        g.execute(pack)
    per_run_ms = (time.perf_counter() - start) * 1e3 / iters

    print(f"compile (or cache load): {compile_ms:.1f} ms")
    print(f"max abs error vs reference: {max_error:.3e}")
    print(f"dispatch count (CPU): {g.compile_stats.dispatch_count}")
    print(f"time per run (CPU): {per_run_ms:.3f} ms")

    artifact = g.compile_to_artifact(fs.Backend.AMDGPU, arch="gfx942")
    print(f"AMDGPU (gfx942) artifact: {len(artifact)} bytes")
    if max_error > 1e-3:
        raise SystemExit(f"numerics mismatch: max error {max_error}")


if __name__ == "__main__":
    main()
