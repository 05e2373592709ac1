"""A conv layer's whole backward graph on IREE's worker pool against ``auto``, same process.

The graph is the one ``fusilli.torch``'s conv2d backward builds for a conv + bias + relu layer
(fusilli/torch/ops.py): relu's backward from the layer's result, then the data gradient, the
weight gradient and the bias gradient (a sum over N, H and W), channels-last f32. ``auto``
splits it in two on a 2-CPU machine (the split executor: DX cut, DW and DB each half's partial
sum, added), where the pool used to run it whole. Each shape is compiled with
``FUSILLI_CPU_EXECUTOR=local-task`` and with ``auto``; the two run in alternating blocks (each
block after a few untimed calls, the order swapped every block), their results must agree
(L2-relative 1e-5), and the medians are printed with what ``auto`` chose.

Usage: python benchmarks/conv_backward_split.py [--blocks 8] [--calls 10] [N,C,H,K,R ...]
  default shapes: ResNet-50's 3x3 8x64x56x56, 8x128x28x28, 8x256x14x14 and 1x1 1x256x56x56->64,
  8x256x56x56->64 (N,C,H,K,R: batch, input channels, height = width, output channels, kernel)
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

import fusilli as fs

SHAPES = ("8,64,56,64,3", "8,128,28,128,3", "8,256,14,256,3", "1,256,56,64,1", "8,256,56,64,1")
EXECUTORS = ("local-task", "auto")


def backward_graph(n: int, c: int, h: int, k: int, r: int, name: str) -> fs.Graph:
    """relu's backward, conv_dgrad, conv_wgrad and the bias gradient of a stride-1 'same' conv."""
    g = fs.Graph(name=name)

    def nhwc(name: str, dims: list[int]) -> fs.TensorAttr:
        return g.tensor(name=name, dim=dims, stride=fs.strides(dims, "NHWC"))

    dy, y, x, w = nhwc("dy", [n, k, h, h]), nhwc("y", [n, k, h, h]), nhwc("x", [n, c, h, h]), nhwc("w", [k, c, r, r])
    dz = g.relu_bwd(dy, y, name="relu_bwd")
    attrs = dict(padding=[r // 2] * 2, stride=[1, 1], dilation=[1, 1])
    dx = g.conv_dgrad(dz, w, name="dgrad", **attrs)
    dx.set_dim([n, c, h, h]).set_stride(fs.strides([n, c, h, h], "NHWC")).set_output(True).set_name("dx")
    dw = g.conv_wgrad(dz, x, name="wgrad", **attrs)
    dw.set_dim([k, c, r, r]).set_stride(fs.strides([k, c, r, r], "NHWC")).set_output(True).set_name("dw")
    g.reduction(dz, mode=fs.ReductionMode.ADD, axes=[0, 2, 3], name="bias_grad").set_output(True).set_name("db")
    return g.validate()


def shape(text: str) -> tuple[int, int, int, int, int]:
    """N,C,H,K,R as five positive ints (argparse's type: a bad one is its usage error)."""
    try:
        n, c, h, k, r = (int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected N,C,H,K,R (five ints)") from None
    if min(n, c, h, k, r) < 1 or r % 2 == 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected positive sizes and an odd kernel")
    return n, c, h, k, r


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shapes", nargs="*", type=shape, default=[shape(s) for s in SHAPES])
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--calls", type=int, default=10)
    args = parser.parse_args()
    handle = fs.Handle(fs.Backend.CPU)
    rng = np.random.default_rng(0)
    for n, c, h, k, r in args.shapes:
        graphs, packs = {}, {}
        values = None
        for executor in EXECUTORS:
            os.environ["FUSILLI_CPU_EXECUTOR"] = executor
            try:
                g = backward_graph(n, c, h, k, r, f"conv_backward_{executor.replace('-', '_')}")
                g.compile(handle)
            finally:
                os.environ.pop("FUSILLI_CPU_EXECUTOR")
            if values is None:
                values = {t.name: rng.standard_normal(t.dim).astype(np.float32) for t in g.input_tensors()}
            pack = {t: fs.empty(t) for t in (*g.input_tensors(), *g.output_tensors())}
            for t in g.input_tensors():
                pack[t][...] = values[t.name]
            graphs[executor], packs[executor] = g, pack
        times: dict[str, list[float]] = {e: [] for e in EXECUTORS}
        for block in range(args.blocks):
            for executor in EXECUTORS if block % 2 == 0 else EXECUTORS[::-1]:
                g, pack = graphs[executor], packs[executor]
                for _ in range(3):
                    g.execute(pack)
                for _ in range(args.calls):
                    start = time.perf_counter()
                    g.execute(pack)
                    times[executor].append((time.perf_counter() - start) * 1e3)
        for name in ("dx", "dw", "db"):
            a, b = (next(v for t, v in packs[e].items() if t.name == name) for e in EXECUTORS)
            error = float(np.linalg.norm(a - b) / np.linalg.norm(b))
            if error > 1e-5:
                raise SystemExit(
                    f"{n},{c},{h},{k},{r}: '{name}' differs between the executors (L2-relative {error:.2e})"
                )
        label = f"{'3x3' if r == 3 else f'{r}x{r}'} {n}x{c}x{h}x{h}->{k}"
        medians = "  ".join(f"{e} {statistics.median(times[e]):.3f} ms" for e in EXECUTORS)
        print(f"{label:22s} {medians}  (auto: {graphs['auto'].executor})", flush=True)


if __name__ == "__main__":
    main()
