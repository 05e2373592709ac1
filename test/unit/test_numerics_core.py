"""Numerics of conv_fprop, matmul and pointwise against the NumPy reference.

Every case runs with f32 I/O; a subset also with f16 I/O (f32 compute), compared
with a tolerance of ~2e-2. Shapes are small: each distinct graph costs one compile.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_array, run_and_check

import fusilli as fs
from fusilli.tensor import strides_for_order

F32, F16 = fs.DataType.FLOAT, fs.DataType.HALF
TOL = {F32: dict(rtol=1e-4, atol=1e-4), F16: dict(rtol=2e-2, atol=2e-2)}


def inputs_for(g: fs.Graph, rng, low=-1.0, high=1.0, overrides=None) -> dict:
    overrides = overrides or {}
    return {t: random_array(t, rng, *overrides.get(t.name, (low, high))) for t in g.input_tensors() if not t.is_scalar}


# ------------------------------------------------------------------------------ conv
# id -> (x dim, w dim, x layout, w layout, padding, stride, dilation)
CONV_CASES = {
    "1d_nch": ([2, 4, 9], [6, 4, 3], "NCH", "NCH", [1], [1], [1]),
    "1d_nhc_stride_dilation": ([1, 4, 12], [5, 4, 3], "NHC", "NHC", [2], [2], [2]),
    "2d_nchw_pad": ([2, 4, 6, 6], [8, 4, 3, 3], "NCHW", "NCHW", [1, 1], [1, 1], [1, 1]),
    "2d_nhwc_stride": ([1, 4, 7, 7], [8, 4, 3, 3], "NHWC", "NHWC", [0, 0], [2, 2], [1, 1]),
    "2d_nhwc_dilation": ([1, 3, 8, 8], [4, 3, 3, 3], "NHWC", "NHWC", [2, 2], [1, 1], [2, 2]),
    "2d_asymmetric_attrs": ([1, 4, 7, 6], [4, 4, 3, 2], "NCHW", "NCHW", [1, 0], [2, 1], [1, 2]),
    "2d_groups": ([2, 8, 5, 5], [6, 4, 3, 3], "NCHW", "NCHW", [1, 1], [1, 1], [1, 1]),
    "2d_depthwise_nhwc": ([1, 6, 6, 6], [6, 1, 3, 3], "NHWC", "NHWC", [1, 1], [1, 1], [1, 1]),
    "2d_x_nhwc_w_nchw": ([1, 4, 6, 6], [8, 4, 3, 3], "NHWC", "NCHW", [1, 1], [1, 1], [1, 1]),
    "2d_x_nchw_w_nhwc": ([1, 4, 6, 6], [8, 4, 3, 3], "NCHW", "NHWC", [1, 1], [1, 1], [1, 1]),
    "3d_ncdhw": ([1, 3, 4, 5, 5], [4, 3, 3, 3, 3], "NCDHW", "NCDHW", [1, 1, 1], [1, 1, 1], [1, 1, 1]),
    "3d_ndhwc_stride": ([1, 4, 5, 6, 6], [4, 4, 2, 3, 3], "NDHWC", "NDHWC", [0, 1, 1], [1, 2, 2], [1, 1, 1]),
    "3d_groups": ([1, 4, 4, 4, 4], [4, 2, 3, 3, 3], "NDHWC", "NDHWC", [1, 1, 1], [1, 1, 1], [1, 1, 1]),
}
CONV_F16 = {"1d_nch", "2d_nhwc_stride", "2d_groups", "2d_x_nhwc_w_nchw", "3d_ndhwc_stride"}


def build_conv(case: str, dtype: fs.DataType) -> tuple[fs.Graph, fs.TensorAttr]:
    x_dim, w_dim, x_layout, w_layout, padding, stride, dilation = CONV_CASES[case]
    g = fs.Graph(name=f"conv_{case}_{dtype.short_name}", io_data_type=dtype, compute_data_type=F32)
    x = g.tensor(name="x", dim=x_dim, stride=fs.strides(x_dim, x_layout))
    w = g.tensor(name="w", dim=w_dim, stride=fs.strides(w_dim, w_layout))
    y = g.conv_fprop(x, w, padding=padding, stride=stride, dilation=dilation, name="conv").set_output(True)
    g.validate()
    return g, y


@pytest.mark.parametrize(
    "case,dtype",
    [(c, F32) for c in CONV_CASES] + [(c, F16) for c in sorted(CONV_F16)],
    ids=lambda v: v.short_name if isinstance(v, fs.DataType) else v,
)
def test_conv_fprop(cpu, rng, case, dtype):
    g, y = build_conv(case, dtype)
    x_dim, w_dim, x_layout, *_ = CONV_CASES[case]
    # The result follows X's layout (contiguous or channels-last).
    assert y.stride == fs.strides(y.dim, x_layout)
    assert y.data_type == dtype
    out = run_and_check(g, cpu, inputs_for(g, rng), **TOL[dtype])
    assert out["conv_Y"].any()


def test_conv_output_layout_set_by_caller(cpu, rng):
    # NCHW input, channels-last output requested through the output strides.
    g = fs.Graph(name="conv_out_nhwc")
    x = g.tensor(name="x", dim=[1, 4, 6, 6])
    w = g.tensor(name="w", dim=[8, 4, 3, 3])
    y = g.conv_fprop(x, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv").set_output(True)
    y.set_dim([1, 8, 6, 6]).set_stride(fs.strides([1, 8, 6, 6], "NHWC"))
    g.validate()
    run_and_check(g, cpu, inputs_for(g, rng), **TOL[F32])


@pytest.mark.parametrize("dtype", [F32, F16], ids=lambda d: d.short_name)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_conv_bias_scale_relu(cpu, rng, layout, dtype):
    """conv -> + bias [1,K,1,1] -> * scalar -> relu, one graph per layout and dtype."""
    n, c, h, w, k = 1, 4, 6, 6, 8
    g = fs.Graph(name=f"cbsr_{layout}_{dtype.short_name}", io_data_type=dtype, compute_data_type=F32)
    x = g.tensor(name="x", dim=[n, c, h, w], stride=fs.strides([n, c, h, w], layout))
    wt = g.tensor(name="w", dim=[k, c, 3, 3], stride=fs.strides([k, c, 3, 3], layout))
    b = g.tensor(name="b", dim=[1, k, 1, 1], stride=fs.strides([1, k, 1, 1], layout))
    y = g.conv_fprop(x, wt, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv")
    y = g.add(y, b, name="bias")
    y = g.mul(y, g.scalar(0.5, name="half"), name="scale")
    y = g.relu(y, name="relu").set_output(True)
    g.validate()
    assert y.stride == fs.strides(y.dim, layout)
    out = run_and_check(g, cpu, inputs_for(g, rng), **TOL[dtype])
    assert (out["relu_OUT_0"] >= 0).all() and out["relu_OUT_0"].any()


# ------------------------------------------------------------------------------ matmul
def transposed(dim):
    """Strides of ``dim`` whose last two dims are swapped in memory (batch outermost)."""
    order = list(range(len(dim) - 2)) + [len(dim) - 1, len(dim) - 2]
    return strides_for_order(dim, order)


# id -> (a dim, b dim, a transposed, b transposed, c transposed)
MATMUL_CASES = {
    "2d": ([5, 7], [7, 3], False, False, False),
    "batched": ([2, 3, 4], [2, 4, 5], False, False, False),
    "broadcast_batch": ([2, 1, 3, 4], [3, 4, 5], False, False, False),
    "broadcast_batch_b": ([3, 4], [2, 4, 6], False, False, False),
    "a_transposed": ([6, 4], [4, 3], True, False, False),
    "b_transposed": ([2, 3, 4], [2, 4, 5], False, True, False),
    "both_transposed": ([2, 5, 4], [2, 4, 3], True, True, False),
    "c_noncontiguous": ([5, 4], [4, 6], False, False, True),
    "batched_c_noncontiguous": ([2, 3, 4], [4, 5], True, False, True),
}
MATMUL_F16 = {"2d", "broadcast_batch", "both_transposed", "c_noncontiguous"}


@pytest.mark.parametrize(
    "case,dtype",
    [(c, F32) for c in MATMUL_CASES] + [(c, F16) for c in sorted(MATMUL_F16)],
    ids=lambda v: v.short_name if isinstance(v, fs.DataType) else v,
)
def test_matmul(cpu, rng, case, dtype):
    a_dim, b_dim, a_t, b_t, c_t = MATMUL_CASES[case]
    g = fs.Graph(name=f"mm_{case}_{dtype.short_name}", io_data_type=dtype, compute_data_type=F32)
    a = g.tensor(name="a", dim=a_dim, stride=transposed(a_dim) if a_t else None)
    b = g.tensor(name="b", dim=b_dim, stride=transposed(b_dim) if b_t else None)
    c = g.matmul(a, b, name="mm").set_output(True)
    if c_t:
        c_dim = [*np.broadcast_shapes(tuple(a_dim[:-2]), tuple(b_dim[:-2])), a_dim[-2], b_dim[-1]]
        c.set_dim(c_dim).set_stride(transposed(c_dim))
    g.validate()
    assert c.is_contiguous is not c_t
    assert c.stride == (transposed(c.dim) if c_t else fs.strides(c.dim))
    out = run_and_check(g, cpu, inputs_for(g, rng), **TOL[dtype])
    assert out["mm_C"].any()


@pytest.mark.parametrize("dtype", [F32, F16], ids=lambda d: d.short_name)
def test_matmul_bias_relu(cpu, rng, dtype):
    g = fs.Graph(name=f"mm_bias_relu_{dtype.short_name}", io_data_type=dtype, compute_data_type=F32)
    a = g.tensor(name="a", dim=[2, 4, 8])
    b = g.tensor(name="b", dim=[8, 6], stride=transposed([8, 6]))
    bias = g.tensor(name="bias", dim=[1, 1, 6])
    y = g.relu(g.add(g.matmul(a, b, name="mm"), bias, name="bias_add"), name="relu").set_output(True)
    g.validate()
    assert y.dim == [2, 4, 6]
    run_and_check(g, cpu, inputs_for(g, rng), **TOL[dtype])


# ------------------------------------------------------------------------------ pointwise
BINARY = ["add", "sub", "mul", "div"]


@pytest.mark.parametrize("dtype", [F32, F16], ids=lambda d: d.short_name)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_pointwise_binary_with_bias_broadcast(cpu, rng, layout, dtype):
    """All four binary modes and relu in one graph, each against a [1,K,1,1] bias."""
    dim = [2, 3, 4, 5]
    g = fs.Graph(name=f"pw_bias_{layout}_{dtype.short_name}", io_data_type=dtype, compute_data_type=F32)
    x = g.tensor(name="x", dim=dim, stride=fs.strides(dim, layout))
    b = g.tensor(name="b", dim=[1, 3, 1, 1])
    outs = {}
    for mode in BINARY:
        outs[mode] = getattr(g, mode)(x, b, name=mode).set_output(True)
    r = g.relu(x, name="relu").set_output(True)
    g.validate()
    for t in [*outs.values(), r]:
        assert t.dim == dim and t.stride == fs.strides(dim, layout), t
    # Divisor away from zero.
    run_and_check(g, cpu, inputs_for(g, rng, overrides={"b": (0.5, 1.5)}), **TOL[dtype])


@pytest.mark.parametrize("dtype", [F32, F16], ids=lambda d: d.short_name)
def test_pointwise_scalar_operands(cpu, rng, dtype):
    g = fs.Graph(name=f"pw_scalar_{dtype.short_name}", io_data_type=dtype, compute_data_type=F32)
    x = g.tensor(name="x", dim=[3, 5])
    two = g.scalar(2.0, data_type=F32, name="two")
    three = g.scalar(3.0, name="three")
    g.add(x, two, name="add_s").set_output(True)
    g.sub(three, x, name="rsub_s").set_output(True)  # scalar as the first operand
    g.mul(x, two, name="mul_s").set_output(True)
    g.div(x, three, name="div_s").set_output(True)
    g.relu(g.sub(x, g.scalar(0.25, name="quarter"), name="shift"), name="relu_s").set_output(True)
    g.validate()
    assert [t.name for t in g.output_tensors()] == [
        "add_s_OUT_0",
        "rsub_s_OUT_0",
        "mul_s_OUT_0",
        "div_s_OUT_0",
        "relu_s_OUT_0",
    ]
    out = run_and_check(g, cpu, inputs_for(g, rng), **TOL[dtype])
    assert (out["relu_s_OUT_0"] >= 0).all()


def test_pointwise_broadcast_both_sides_and_rank(cpu, rng):
    """[3,1] + [1,4] -> [3,4]; [4] * [2,3,4] -> [2,3,4] (right-aligned ranks)."""
    g = fs.Graph(name="pw_bcast_rank")
    a = g.tensor(name="a", dim=[3, 1])
    b = g.tensor(name="b", dim=[1, 4])
    c = g.tensor(name="c", dim=[4])
    d = g.tensor(name="d", dim=[2, 3, 4])
    s = g.add(a, b, name="outer").set_output(True)
    m = g.mul(c, d, name="rank").set_output(True)
    g.validate()
    assert s.dim == [3, 4] and m.dim == [2, 3, 4]
    run_and_check(g, cpu, inputs_for(g, rng), **TOL[F32])


def test_pointwise_transposed_operand(cpu, rng):
    """A transposed (column-major) operand plus a row-major one; result follows IN_0."""
    g = fs.Graph(name="pw_transposed")
    a = g.tensor(name="a", dim=[4, 6], stride=[1, 4])
    b = g.tensor(name="b", dim=[4, 6])
    y = g.sub(a, b, name="sub").set_output(True)
    g.validate()
    assert y.stride == [1, 4]
    run_and_check(g, cpu, inputs_for(g, rng), **TOL[F32])


def test_pointwise_chain_through_virtual_tensors(cpu, rng):
    g = fs.Graph(name="pw_chain")
    x = g.tensor(name="x", dim=[2, 8])
    y = g.tensor(name="y", dim=[2, 8])
    t = g.mul(g.add(x, y, name="a0"), x, name="m0")
    out = g.relu(g.div(t, g.scalar(4.0, name="four"), name="d0"), name="r0").set_output(True)
    g.validate()
    assert t.is_virtual and not out.is_virtual
    run_and_check(g, cpu, inputs_for(g, rng), **TOL[F32])
