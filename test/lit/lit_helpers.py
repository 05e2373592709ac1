"""Helpers for lit graph scripts: a ``run`` decorator that prints the case name.

    @run
    def conv_nhwc():
        g = ...
        print(g.emit_mlir())

prints ``TEST: conv_nhwc`` then the IR, so each case starts with
``CHECK-LABEL: TEST: conv_nhwc``. ``print_stats(g)`` compiles for CPU and prints
``dispatch-count: N`` and ``transient-memory-bytes: N`` for ``STATS`` checks.

Every op script runs once per target: ``FUSILLI_LIT_TARGET=amdgpu:gfx942`` (RUN
line with ``--check-prefixes=CHECK,AMDGPU``) or the host CPU (``CHECK,CPU``).
``emitted(g)`` / ``optimized(g)`` print the graph's IR lowered for that target
(``explained_and_optimized(g)``: after the rules ``g.explain`` names),
so ``CHECK`` lines pin what both targets share and ``CPU`` / ``AMDGPU`` lines
what each target's lowering rules make different.
"""

from __future__ import annotations

import os

import fusilli as fs

_backend, _, _arch = os.environ.get("FUSILLI_LIT_TARGET", "cpu").partition(":")
TARGET_BACKEND = fs.Backend.coerce(_backend)
TARGET_ARCH = _arch or None


def emitted(g: fs.Graph) -> str:
    """The module ``g`` emits for the lit run's target."""
    return g.mlir("emitted", TARGET_BACKEND, TARGET_ARCH)


def optimized(g: fs.Graph) -> str:
    """The module after fusilli's passes for the lit run's target."""
    return g.mlir("optimized", TARGET_BACKEND, TARGET_ARCH)


def explained_and_optimized(g: fs.Graph) -> str:
    """``g.explain`` for the lit run's target (the rules each node gets), then the module after
    fusilli's passes: CHECK lines pin the choice and the IR it made."""
    return f"{g.explain(TARGET_BACKEND, TARGET_ARCH)}\n{optimized(g)}"


def run(fn):
    print(f"TEST: {fn.__name__}", flush=True)
    fn()
    print(flush=True)
    return fn


def print_stats(g: fs.Graph, backend: fs.Backend = fs.Backend.CPU, arch: str | None = None) -> None:
    """``g``'s compile statistics for the host (``arch`` None), or compiled for ``arch`` (no run:
    a named CPU pins rules that differ from CPU to CPU)."""
    if arch is None:
        g.compile(fs.Handle(backend))
        stats = g.compile_stats
    else:
        from fusilli.backend.cache import Artifact

        stats = Artifact.from_bytes(g.compile_to_artifact(backend, arch)).stats
    print(f"dispatch-count: {stats.dispatch_count}")
    print(f"transient-memory-bytes: {stats.transient_memory_bytes}")
    print(f"copy-count: {stats.copy_count}")


def nhwc_wgrad_graph(name: str, n: int, c: int, hw: int, k: int, kernel: int, stride: int, padding: int) -> fs.Graph:
    """A validated channels-last conv_wgrad of square ``hw`` images and a square ``kernel``: DY and X
    NHWC, DW ``[K, C, R, S]`` with KRSC strides."""
    g = fs.Graph(name=name)
    oh = (hw + 2 * padding - kernel) // stride + 1
    dy = g.tensor(name="dy", dim=[n, k, oh, oh], stride=fs.strides([n, k, oh, oh], "NHWC"))
    x = g.tensor(name="x", dim=[n, c, hw, hw], stride=fs.strides([n, c, hw, hw], "NHWC"))
    dw = g.conv_wgrad(dy, x, padding=[padding] * 2, stride=[stride] * 2, dilation=[1, 1], name="wgrad")
    dw.set_dim([k, c, kernel, kernel]).set_stride(fs.strides([k, c, kernel, kernel], "NHWC")).set_output(True)
    return g.validate()


def square_conv_graph(
    name: str, n: int, c: int, hw: int, k: int, kernel: int, stride: int, epilogue: bool = False
) -> fs.Graph:
    """A channels-last forward conv of an n x c x hw x hw input to k channels, a square filter
    padded to keep its center, optionally + bias + relu (the lit tests of ResNet-50's last stage)."""
    g = fs.Graph(name=name)
    x = g.tensor(name="x", dim=[n, c, hw, hw], stride=fs.strides([n, c, hw, hw], "NHWC"))
    w = g.tensor(name="w", dim=[k, c, kernel, kernel], stride=fs.strides([k, c, kernel, kernel], "NHWC"))
    pad = kernel // 2
    y = g.conv_fprop(x, w, padding=[pad] * 2, stride=[stride] * 2, dilation=[1, 1], name="conv")
    if epilogue:
        b = g.tensor(name="b", dim=[1, k, 1, 1], stride=fs.strides([1, k, 1, 1], "NHWC"))
        y = g.relu(g.add(y, b, name="bias"), name="relu")
    y.set_output(True)
    return g.validate()
