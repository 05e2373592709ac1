"""conv_wgrad of channels-last, ungrouped 2-D convs as one GEMM over the im2col
patches or, for 3x3 stride 1, by Winograd (fusilli-conv-layout): numerics against
the NumPy reference (strided, padded, dilated, ragged, C = 256, f16/bf16 through
f32) and the IR left (no convolution_backward)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_array, run_and_check

import fusilli as fs
from fusilli import pipeline, reference

F32, F16, BF16 = fs.DataType.FLOAT, fs.DataType.HALF, fs.DataType.BFLOAT16

# name: x dims (NCHW), K, kernel, padding, stride, dilation
CASES = {
    "3x3_pad1": ([2, 8, 10, 10], 16, [3, 3], [1, 1], [1, 1], [1, 1]),
    "3x3_s2": ([1, 6, 11, 9], 4, [3, 3], [1, 1], [2, 2], [1, 1]),
    "rect_dilated": ([2, 3, 9, 12], 5, [2, 3], [1, 0], [1, 2], [2, 1]),
    "1x1": ([2, 16, 5, 4], 8, [1, 1], [0, 0], [1, 1], [1, 1]),
}


def _out(size, k, p, s, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def build(name, spec, dtype=F32):
    x_dim, k, kernel, padding, stride, dilation = spec
    n, c, h, w = x_dim
    dy_dim = [n, k] + [_out(x_dim[2 + i], kernel[i], padding[i], stride[i], dilation[i]) for i in range(2)]
    g = fs.Graph(name=f"wgrad_gemm_{name}_{dtype.short_name}", io_data_type=dtype, compute_data_type=F32)
    dy = g.tensor(name="dy", dim=dy_dim, stride=fs.strides(dy_dim, "NHWC"))
    x = g.tensor(name="x", dim=x_dim, stride=fs.strides(x_dim, "NHWC"))
    dw = g.conv_wgrad(dy, x, padding=padding, stride=stride, dilation=dilation, name="wgrad")
    dw.set_dim([k, c, *kernel]).set_output(True).set_name("dw")
    g.validate()
    return g


@pytest.mark.parametrize("name", sorted(CASES))
def test_wgrad_as_gemm_f32(cpu, rng, name):
    g = build(name, CASES[name])
    ir_text = g.mlir("optimized")
    assert "convolution_backward" not in ir_text and "linalg.matmul" in ir_text
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [F16, BF16])
def test_wgrad_as_gemm_low_precision(cpu, rng, dtype):
    g = build("lp", CASES["3x3_pad1"], dtype)
    assert "convolution_backward" not in g.mlir("optimized")
    tol = 2e-2 if dtype == F16 else 5e-2
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=tol, atol=tol * 10)


def test_grouped_wgrad_is_not_the_gemm():
    """A grouped weight gradient has its own lowering (cpu-conv-grouped-wgrad,
    test_conv_grouped_wgrad.py), not the ungrouped one's GEMM over the im2col patches."""
    x_dim, dy_dim = [1, 4, 6, 6], [1, 8, 6, 6]
    g = fs.Graph(name="wgrad_grouped")
    dy = g.tensor(name="dy", dim=dy_dim, stride=fs.strides(dy_dim, "NHWC"))
    x = g.tensor(name="x", dim=x_dim, stride=fs.strides(x_dim, "NHWC"))
    dw = g.conv_wgrad(dy, x, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="wgrad")
    dw.set_dim([8, 2, 3, 3]).set_output(True).set_name("dw")
    g.validate()
    explained = g.explain(None, "znver4")
    assert "cpu-conv-grouped-wgrad" in explained and "cpu-conv-wgrad-gemm" not in explained
    assert "convolution_backward" not in g.mlir("optimized", None, "znver4")


# 3x3 stride-1 weight gradients by Winograd F(3x3, 4x4) (fusilli/passes/winograd.py),
# forced with FUSILLI_CONV_LOWERING=winograd: padded, ragged (Ho, Wo not multiples
# of 4), unpadded, and C = 256. Tolerance relative to max|dw| (the sums run over
# N*Ho*Wo products of transformed values).
WINOGRAD_CASES = {
    "pad1": ([2, 8, 12, 12], 16, [3, 3], [1, 1], [1, 1], [1, 1]),
    "ragged_pad1": ([1, 5, 9, 7], 6, [3, 3], [1, 1], [1, 1], [1, 1]),
    "nopad": ([2, 4, 10, 11], 8, [3, 3], [0, 0], [1, 1], [1, 1]),
    "c256": ([1, 256, 14, 14], 32, [3, 3], [1, 1], [1, 1], [1, 1]),
}


@pytest.fixture
def winograd_lowering(monkeypatch):
    monkeypatch.setattr(pipeline, "CONV_LOWERING", "winograd")


@pytest.mark.parametrize("name", sorted(WINOGRAD_CASES))
def test_wgrad_winograd_f32(cpu, rng, winograd_lowering, name):
    g = build(f"wino_{name}", WINOGRAD_CASES[name])
    ir_text = g.mlir("optimized")
    assert "convolution_backward" not in ir_text and "linalg.batch_matmul" in ir_text
    inputs = {t: random_array(t, rng) for t in g.input_tensors()}
    want = np.asarray(reference.run(g, inputs)["dw"], np.float64)
    run_and_check(g, cpu, inputs, rtol=0, atol=1e-5 * float(np.abs(want).max()))


def test_wgrad_winograd_bf16_through_f32(cpu, rng, winograd_lowering):
    g = build("wino_bf16", WINOGRAD_CASES["pad1"], BF16)
    assert "linalg.batch_matmul" in g.mlir("optimized")
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=5e-2, atol=0.5)


# One channel in X (a grayscale first layer) or in DY (a one-channel output): NHWC and NCHW are
# the same memory there, emission leaves that operand's permute out, and the weight gradient is
# rewritten from the other's (it stayed IREE's convolution_backward before, 0.05x PyTorch).
ONE_CHANNEL_CASES = {
    "x_one_channel_7x7_s2": ([2, 1, 20, 20], 16, [7, 7], [3, 3], [2, 2], [1, 1]),
    "x_one_channel_3x3": ([3, 1, 12, 12], 8, [3, 3], [1, 1], [1, 1], [1, 1]),
    "dy_one_channel_3x3": ([2, 8, 10, 10], 1, [3, 3], [1, 1], [1, 1], [1, 1]),
}


@pytest.mark.parametrize("name", sorted(ONE_CHANNEL_CASES))
def test_wgrad_of_one_channel_operand(cpu, rng, name):
    g = build(name, ONE_CHANNEL_CASES[name])
    assert "convolution_backward" not in g.mlir("optimized")
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)


def test_wgrad_of_one_channel_both_keeps_convolution_backward():
    """One channel in X and in DY: nothing says the graph is channels-last."""
    g = build("both_one_channel", ([1, 1, 8, 8], 1, [3, 3], [1, 1], [1, 1], [1, 1]))
    assert "convolution_backward" in g.mlir("optimized")
