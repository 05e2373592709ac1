"""Reductions: every ReductionMode against the NumPy reference (one graph per dtype
holding all modes), reduced dims from ``axes`` or from Y's dims, strides, and
validation errors."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_array, run_and_check

import fusilli as fs

R = fs.ReductionMode


def test_every_mode_f32(cpu, rng):
    g = fs.Graph(name="reduction_all_modes_f32")
    x = g.tensor(name="x", dim=[2, 3, 4], stride=fs.strides([2, 3, 4], "NHC"))
    for m in R:
        g.reduction(x, mode=m, axes=[1, 2], name=f"r_{m.value}").set_output(True)
    # Reduced dims implied by Y's dims, and a single negative axis.
    y = g.reduction(x, mode=R.ADD, name="sum_implied")
    y.set_output(True).set_dim([1, 3, 1])
    g.reduction(x, mode=R.MAX, axes=[-1], name="max_last").set_output(True)
    g.reduction(x, mode=R.MUL, axes=[0], name="prod_first").set_output(True)
    g.validate()
    assert y.dim == [1, 3, 1] and y.stride == [3, 1, 1]
    assert g.nodes[0].outputs["Y"].dim == [2, 1, 1]
    inputs = {x: random_array(x, rng, -2.0, 2.0)}
    inputs[x][0, 1, 2] = 0.0  # MUL_NO_ZEROS skips it, MUL does not
    out = run_and_check(g, cpu, inputs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["r_avg_Y"], inputs[x].mean(axis=(1, 2), keepdims=True), rtol=1e-5)
    assert out["r_mul_Y"][0, 0, 0] == 0.0 and out["r_mul_no_zeros_Y"][0, 0, 0] != 0.0


def test_integer_modes_int32(cpu, rng):
    g = fs.Graph(name="reduction_i32", io_data_type=fs.DataType.INT32, intermediate_data_type=fs.DataType.INT32)
    x = g.tensor(name="x", dim=[3, 5])
    for m in R:
        if m == R.AVG:
            continue
        y = g.reduction(x, mode=m, axes=[1], name=f"r_{m.value}").set_output(True)
        if m == R.NORM2:
            y.set_data_type(fs.DataType.FLOAT)
    g.validate()
    inputs = {x: random_array(x, rng, -1, 1)}
    inputs[x][1, 3] = 0
    run_and_check(g, cpu, inputs, rtol=1e-6, atol=1e-6)


def test_representative_modes_f16(cpu, rng):
    g = fs.Graph(name="reduction_f16", io_data_type=fs.DataType.HALF, intermediate_data_type=fs.DataType.HALF)
    x = g.tensor(name="x", dim=[4, 16])
    for m in (R.ADD, R.AVG, R.MAX, R.NORM2):
        g.reduction(x, mode=m, axes=[1], name=f"r_{m.value}").set_output(True)
    g.validate()
    run_and_check(g, cpu, {x: random_array(x, rng)}, rtol=2e-3, atol=2e-3)


def test_pointwise_then_reduction(cpu, rng):
    g = fs.Graph(name="sq_sum")
    x = g.tensor(name="x", dim=[4, 8])
    h = g.mul(x, x, name="square")
    y = g.reduction(h, mode="add", name="sum")
    y.set_dim([4, 1]).set_output(True)
    g.validate()
    run_and_check(g, cpu, {x: random_array(x, rng)})
    assert g.compile_stats.dispatch_count == 1


def _validate_error(g: fs.Graph) -> fs.FusilliError:
    with pytest.raises(fs.FusilliError) as info:
        g.validate()
    return info.value


def test_avg_on_integers_is_rejected():
    g = fs.Graph(name="bad")
    x = g.tensor(name="counts", dim=[2, 3], data_type=fs.DataType.INT32)
    g.reduction(x, mode=R.AVG, axes=[1], name="mean_int").set_output(True)
    err = _validate_error(g)
    assert err.code == fs.ErrorCode.INVALID_ATTRIBUTE
    assert "mean_int" in str(err) and "counts" in str(err)


def test_no_reduced_dim_is_rejected():
    g = fs.Graph(name="bad")
    x = g.tensor(name="x", dim=[2, 3])
    g.reduction(x, mode=R.ADD, name="nothing").set_output(True)
    err = _validate_error(g)
    assert err.code == fs.ErrorCode.INVALID_ATTRIBUTE
    assert "nothing" in str(err) and "'x'" in str(err)


@pytest.mark.parametrize(
    "y_dim, axes",
    [([2], None), ([2, 2], None), ([2, 3], [1]), ([2, 1], [5]), ([1, 1], [0, -2])],
    ids=["rank", "dim", "axes_not_one", "axis_range", "axis_twice"],
)
def test_bad_shapes_are_rejected(y_dim, axes):
    g = fs.Graph(name="bad")
    x = g.tensor(name="x", dim=[2, 3])
    g.reduction(x, mode=R.MAX, axes=axes, name="red").set_output(True).set_dim(y_dim)
    err = _validate_error(g)
    assert err.code == fs.ErrorCode.INVALID_ATTRIBUTE
    assert "red" in str(err)


def test_unknown_mode_and_json_round_trip():
    g = fs.Graph(name="rt")
    x = g.tensor(name="x", dim=[2, 3, 4])
    with pytest.raises(fs.FusilliError) as info:
        g.reduction(x, mode="median")
    assert info.value.code == fs.ErrorCode.INVALID_ARGUMENT
    g.reduction(x, mode=R.NORM1, axes=[0, 2], name="n1").set_output(True)
    g.validate()
    g2 = fs.Graph.from_json(g.to_json())
    assert g2.nodes[0].attrs.mode == R.NORM1 and g2.nodes[0].attrs.axes == [0, 2]
    assert g2.canonical_json() == g.canonical_json()


def test_reference_closed_forms():
    from fusilli.reference.reduction import MODE_KERNELS

    x = np.array([[3.0, -4.0, 0.0, 2.0]])
    expected = {
        R.ADD: 1.0,
        R.MUL: 0.0,
        R.MIN: -4.0,
        R.MAX: 3.0,
        R.AMAX: 4.0,
        R.AVG: 0.25,
        R.NORM1: 9.0,
        R.NORM2: np.sqrt(29.0),
        R.MUL_NO_ZEROS: -24.0,
    }
    for m, want in expected.items():
        got = MODE_KERNELS[m](x, (1,))
        assert got.shape == (1, 1) and got[0, 0] == pytest.approx(want), m
    assert MODE_KERNELS[R.ADD](np.array([[True, True, False]]), (1,)).dtype == np.int64


def test_dynamic_batch(cpu, rng):
    g = fs.Graph(name="reduction_dynamic")
    x = g.tensor(name="x", dim=[4, 6], dynamic_dims=[0])
    ys = [g.reduction(x, mode=m, axes=[1], name=f"r_{m.value}").set_output(True) for m in (R.ADD, R.MUL, R.MAX)]
    g.validate()
    assert all(y.dynamic_dims == [0] for y in ys)
    g.compile(cpu)
    for n in (1, 5):
        xa = fs.empty(x, dim=[n, 6])
        xa[...] = rng.uniform(-1, 1, xa.shape)
        outs = {y: fs.empty(y, dim=[n, 1]) for y in ys}
        g.execute({x: xa, **outs})
        np.testing.assert_allclose(outs[ys[0]], xa.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(outs[ys[1]], xa.prod(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(outs[ys[2]], xa.max(axis=1, keepdims=True), rtol=1e-6)
