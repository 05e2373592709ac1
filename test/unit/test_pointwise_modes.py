"""Every PointwiseMode: numerics against the NumPy reference, broadcasting, scalar
operands, strides, dtypes, fusion into one dispatch, and validation errors.

Compiles are the cost here, so each dtype gets ONE graph that holds many modes
side by side (one output per mode) over tiny tensors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import random_array, run_and_check

import fusilli as fs
from fusilli.ops.pointwise import MODES, PointwiseAttrs
from fusilli.reference.pointwise import COMPUTE_TYPE_KERNELS, MODE_KERNELS, mode_kernel

M = fs.PointwiseMode

# Inputs of the f32 graph, by role:
#   x: [2,3,4] in [-1.5, 1.5], stored transposed (non-contiguous strides)
#   y: [2,1,4] in [-1.5, 1.5]  (broadcast along dim 1)
#   p: [3,4]   in [0.2, 2.0]   (positive; broadcast along the leading dim)
#   a, b: [2,3,4] / [4] integer-valued floats in {-2..2} (ties and zeros for cmp / logical)
F32_OPERANDS = {
    M.ABS: "x",
    M.CEIL: "x",
    M.FLOOR: "x",
    M.ERF: "x",
    M.EXP: "x",
    M.NEG: "x",
    M.RELU_FWD: "x",
    M.SIGMOID_FWD: "x",
    M.SIN: "x",
    M.TAN: "x",
    M.TANH_FWD: "x",
    M.IDENTITY: "x",
    M.ELU_FWD: "x",
    M.GELU_FWD: "x",
    M.GELU_APPROX_TANH_FWD: "x",
    M.SOFTPLUS_FWD: "x",
    M.SWISH_FWD: "x",
    M.LOG: "p",
    M.SQRT: "p",
    M.RSQRT: "p",
    M.RECIPROCAL: "p",
    M.ADD: "xy",
    M.SUB: "xy",
    M.MUL: "xy",
    M.ADD_SQUARE: "xy",
    M.DIV: "xp",
    M.MAX_OP: "ab",
    M.MIN_OP: "ab",
    M.CMP_EQ: "ab",
    M.CMP_NEQ: "ab",
    M.CMP_LT: "ab",
    M.CMP_LE: "ab",
    M.CMP_GT: "ab",
    M.CMP_GE: "ab",
    M.LOGICAL_AND: "ab",
    M.LOGICAL_OR: "ab",
    M.LOGICAL_NOT: "a",
    M.GELU_BWD: "yx",
    M.GELU_APPROX_TANH_BWD: "yx",
    M.RELU_BWD: "ya",
    M.SWISH_BWD: "yx",
    M.TANH_BWD: "yx",
    M.BINARY_SELECT: "cxy",
}


def _integer_valued(t: fs.TensorAttr, rng: np.random.Generator) -> np.ndarray:
    arr = fs.empty(t)
    arr[...] = rng.integers(-2, 3, arr.shape)
    return arr


def test_mode_table_is_complete():
    assert len(M) == 43
    assert set(MODES) == set(M)
    assert set(MODE_KERNELS) | set(COMPUTE_TYPE_KERNELS) == set(M)
    assert set(F32_OPERANDS) == set(M)


def test_every_mode_has_a_declared_graph_method():
    """Each mode's Graph method exists and is declared on Graph for type checkers."""
    declared = {name for name, hint in fs.Graph.__annotations__.items() if hint == "_PointwiseMethod"}
    assert declared == {m.method_name for m in M}
    for m in M:
        assert callable(getattr(fs.Graph, m.method_name))


def test_every_mode_f32(cpu, rng):
    g = fs.Graph(name="pointwise_all_modes_f32")
    t = {
        "x": g.tensor(name="x", dim=[2, 3, 4], stride=[12, 1, 3]),
        "y": g.tensor(name="y", dim=[2, 1, 4]),
        "p": g.tensor(name="p", dim=[3, 4]),
        "a": g.tensor(name="a", dim=[2, 3, 4]),
        "b": g.tensor(name="b", dim=[4]),
    }
    t["c"] = g.cmp_gt(t["a"], t["b"], name="cond")
    for m, roles in F32_OPERANDS.items():
        g.pointwise(*[t[r] for r in roles], mode=m, name=f"op_{m.value}").set_output(True).set_name(f"out_{m.value}")
    # Mode parameters away from their defaults; softplus gets both of its branches.
    g.elu(t["x"], alpha=0.5, name="elu_alpha").set_output(True)
    g.softplus(t["x"], beta=2.0, threshold=1.0, name="softplus_params").set_output(True)
    g.swish(t["x"], beta=2.0, name="swish_beta").set_output(True)
    g.swish_bwd(t["y"], t["x"], beta=0.5, name="swish_bwd_beta").set_output(True)
    g.validate()
    for m in (M.CMP_EQ, M.CMP_LT, M.LOGICAL_AND, M.LOGICAL_NOT):
        assert next(o for o in g.output_tensors() if o.name == f"out_{m.value}").data_type == fs.DataType.BOOLEAN
    assert next(o for o in g.output_tensors() if o.name == "out_abs").stride == [12, 1, 3]
    inputs = {
        t["x"]: random_array(t["x"], rng, -1.5, 1.5),
        t["y"]: random_array(t["y"], rng, -1.5, 1.5),
        t["p"]: random_array(t["p"], rng, 0.2, 2.0),
        t["a"]: _integer_valued(t["a"], rng),
        t["b"]: _integer_valued(t["b"], rng),
    }
    run_and_check(g, cpu, inputs, rtol=2e-5, atol=2e-5)


F16_MODES = [
    M.ADD,
    M.MUL,
    M.DIV,
    M.EXP,
    M.GELU_FWD,
    M.GELU_APPROX_TANH_FWD,
    M.SIGMOID_FWD,
    M.TANH_FWD,
    M.SWISH_FWD,
    M.SOFTPLUS_FWD,
    M.RSQRT,
    M.CMP_LT,
    M.GELU_BWD,
    M.TANH_BWD,
    M.MAX_OP,
]


def test_representative_modes_f16(cpu, rng):
    g = fs.Graph(name="pointwise_f16", io_data_type=fs.DataType.HALF, intermediate_data_type=fs.DataType.HALF)
    x = g.tensor(name="x", dim=[2, 3, 4])
    y = g.tensor(name="y", dim=[1, 3, 1])
    for m in F16_MODES:
        ins = (y, x) if m in (M.GELU_BWD, M.TANH_BWD) else (x, y)[: MODES[m].arity]
        if m == M.RSQRT:
            ins = (y,)
        g.pointwise(*ins, mode=m, name=f"op_{m.value}").set_output(True)
    g.validate()
    inputs = {x: random_array(x, rng, -2.0, 2.0), y: random_array(y, rng, 0.25, 2.0)}
    run_and_check(g, cpu, inputs, rtol=2e-3, atol=2e-3)


INT_MODES = [
    M.ABS,
    M.ADD,
    M.ADD_SQUARE,
    M.CEIL,
    M.FLOOR,
    M.CMP_EQ,
    M.CMP_NEQ,
    M.CMP_LT,
    M.CMP_LE,
    M.CMP_GT,
    M.CMP_GE,
    M.IDENTITY,
    M.LOGICAL_AND,
    M.LOGICAL_OR,
    M.LOGICAL_NOT,
    M.MAX_OP,
    M.MIN_OP,
    M.MUL,
    M.NEG,
    M.RELU_FWD,
    M.RELU_BWD,
    M.SUB,
]


def test_integer_modes_int32(cpu, rng):
    g = fs.Graph(name="pointwise_i32", io_data_type=fs.DataType.INT32, intermediate_data_type=fs.DataType.INT32)
    x = g.tensor(name="x", dim=[2, 3, 4])
    y = g.tensor(name="y", dim=[3, 1])
    z = g.tensor(name="z", dim=[2, 3, 4], data_type=fs.DataType.INT8)  # mixed integer widths promote
    for m in INT_MODES:
        g.pointwise(x, y, mode=m, name=f"op_{m.value}") if MODES[m].arity == 2 else g.pointwise(
            x, mode=m, name=f"op_{m.value}"
        )
    for node in g.nodes:
        node.outputs["OUT_0"].set_output(True)
    g.binary_select(g.cmp_gt(x, y, name="gt"), x, z, name="select").set_output(True)
    g.add(x, z, name="add_i8").set_output(True)
    # Float-domain modes on integers compute in floating point (torch.exp(int) is float).
    g.div(x, y, name="true_div").set_output(True).set_data_type(fs.DataType.FLOAT)
    g.sigmoid(x, name="int_sigmoid").set_output(True).set_data_type(fs.DataType.FLOAT)
    g.validate()
    assert g.nodes[-3].outputs["OUT_0"].data_type == fs.DataType.INT32  # add_i8
    inputs = {x: random_array(x, rng, -1, 1), y: random_array(y, rng, -1, 1), z: random_array(z, rng, -1, 1)}
    inputs[y][inputs[y] == 0] = 1  # no division by zero
    run_and_check(g, cpu, inputs, rtol=1e-6, atol=1e-6)


def test_boolean_modes(cpu, rng):
    g = fs.Graph(name="pointwise_bool", io_data_type=fs.DataType.BOOLEAN, intermediate_data_type=fs.DataType.BOOLEAN)
    a = g.tensor(name="a", dim=[2, 4])
    b = g.tensor(name="b", dim=[1, 4])
    v = g.tensor(name="v", dim=[2, 4], data_type=fs.DataType.FLOAT)
    g.logical_and(a, b, name="and").set_output(True)
    g.logical_or(a, b, name="or").set_output(True)
    g.logical_not(a, name="not").set_output(True)
    g.cmp_eq(a, b, name="eq").set_output(True)
    g.max(a, b, name="max").set_output(True)
    g.identity(a, name="copy").set_output(True)
    g.binary_select(a, b, g.logical_not(b, name="nb"), name="sel_bool").set_output(True)
    g.binary_select(a, v, g.neg(v, name="negv"), name="sel_float").set_output(True).set_data_type(fs.DataType.FLOAT)
    g.logical_and(v, a, name="and_float_bool").set_output(True)
    g.validate()
    inputs = {t: random_array(t, rng) for t in (a, b, v)}
    inputs[v][0, 0] = 0.0
    run_and_check(g, cpu, inputs)


def test_scalar_operands_and_broadcasting(cpu, rng):
    g = fs.Graph(name="pointwise_scalars")
    x = g.tensor(name="x", dim=[2, 3, 4], stride=fs.strides([2, 3, 4], "NHC"))
    bias = g.tensor(name="bias", dim=[1, 3, 1])
    g.mul(x, g.scalar(2.5, name="two_and_half"), name="scale").set_output(True)
    g.sub(g.scalar(1.0, name="one"), x, name="one_minus").set_output(True)
    g.cmp_ge(x, g.scalar(0.0, name="zero"), name="nonneg").set_output(True)
    g.binary_select(
        g.cmp_lt(bias, g.scalar(0.0, name="zero_b"), name="neg_bias"),
        x,
        g.scalar(7.0, name="seven"),
        name="select_scalar",
    ).set_output(True)
    g.max(x, g.scalar(3, fs.DataType.INT32, name="three"), name="max_int_scalar").set_output(True)
    # A user-set output larger than the inputs' broadcast.
    g.add(bias, g.scalar(1.0, name="one_b"), name="widened").set_output(True).set_dim([2, 3, 4])
    g.validate()
    inputs = {x: random_array(x, rng, -4, 4), bias: random_array(bias, rng)}
    out = run_and_check(g, cpu, inputs)
    np.testing.assert_allclose(out["widened_OUT_0"], np.broadcast_to(inputs[bias] + 1.0, [2, 3, 4]), rtol=1e-6)


def test_fused_chain_is_one_dispatch(cpu, rng):
    g = fs.Graph(name="pointwise_chain")
    x = g.tensor(name="x", dim=[2, 8, 4], stride=fs.strides([2, 8, 4], "NHC"))
    b = g.tensor(name="b", dim=[1, 8, 1])
    h = g.add(x, b, name="bias")
    h = g.gelu(h, name="gelu")
    h = g.mul(h, g.scalar(0.5, name="half"), name="scale")
    h = g.swish(h, beta=1.5, name="swish")
    h = g.softplus(h, name="softplus")
    h = g.binary_select(g.cmp_gt(h, b, name="gt"), h, g.tanh(h, name="tanh"), name="select")
    g.erf(h, name="erf").set_output(True)
    g.validate()
    inputs = {x: random_array(x, rng, -2, 2), b: random_array(b, rng)}
    run_and_check(g, cpu, inputs, rtol=1e-5, atol=1e-5)
    assert g.compile_stats.dispatch_count == 1


def test_reference_closed_forms():
    attrs = PointwiseAttrs()

    def k(mode, *values, **params):
        a = PointwiseAttrs(mode=mode, **params)
        return float(mode_kernel(mode, np.dtype(np.float32))(a, *[np.array([v], np.float64) for v in values])[0])

    assert k(M.GELU_FWD, 1.0) == pytest.approx(0.8413447460685429, abs=1e-15)
    assert k(M.GELU_APPROX_TANH_FWD, 1.0) == pytest.approx(0.8411919906082768, abs=1e-15)
    assert k(M.GELU_BWD, 1.0, 0.0) == pytest.approx(0.5)
    assert k(M.GELU_BWD, 1.0, 1.0) == pytest.approx(0.8413447460685429 + math.exp(-0.5) / math.sqrt(2 * math.pi))
    assert k(M.GELU_APPROX_TANH_BWD, 1.0, 0.0) == pytest.approx(0.5)
    assert k(M.ERF, 1.0) == pytest.approx(0.8427007929497149, abs=1e-15)
    assert k(M.SOFTPLUS_FWD, 0.0) == pytest.approx(math.log(2.0))
    assert k(M.SOFTPLUS_FWD, 30.0) == 30.0  # above the threshold: linear
    assert k(M.SOFTPLUS_FWD, 1.0, softplus_beta=2.0, softplus_threshold=1.0) == 1.0
    assert k(M.SOFTPLUS_FWD, 0.25, softplus_beta=2.0) == pytest.approx(math.log1p(math.exp(0.5)) / 2.0)
    assert k(M.SWISH_FWD, 1.0, swish_beta=2.0) == pytest.approx(1.0 / (1.0 + math.exp(-2.0)))
    s = 1.0 / (1.0 + math.exp(-2.0))
    assert k(M.SWISH_BWD, 3.0, 1.0, swish_beta=2.0) == pytest.approx(3.0 * (s + 2.0 * s * (1.0 - s)))
    assert k(M.SWISH_BWD, 1.0, 0.0) == pytest.approx(0.5)
    assert k(M.ELU_FWD, -1.0) == pytest.approx(math.exp(-1.0) - 1.0)
    assert k(M.ELU_FWD, -1.0, elu_alpha=0.5) == pytest.approx(0.5 * (math.exp(-1.0) - 1.0))
    assert k(M.ELU_FWD, 2.0, elu_alpha=0.5) == 2.0
    assert k(M.TANH_BWD, 2.0, 0.5) == pytest.approx(2.0 * (1.0 - math.tanh(0.5) ** 2))
    assert k(M.RELU_BWD, 3.0, 0.0) == 0.0  # x <= 0 passes no gradient
    assert k(M.RELU_BWD, 3.0, 1e-3) == 3.0
    assert k(M.SIGMOID_FWD, -1000.0) == 0.0
    assert k(M.RSQRT, 4.0) == 0.5
    assert k(M.ADD_SQUARE, 1.0, 3.0) == 10.0
    assert k(M.BINARY_SELECT, 0.0, 1.0, 2.0) == 2.0
    assert attrs.elu_alpha == 1.0 and attrs.softplus_beta == 1.0 and attrs.softplus_threshold == 20.0
    assert attrs.swish_beta == 1.0


def _validate_error(g: fs.Graph) -> fs.FusilliError:
    with pytest.raises(fs.FusilliError) as info:
        g.validate()
    return info.value


def test_missing_input_is_attribute_not_set():
    g = fs.Graph(name="bad")
    x = g.tensor(name="x", dim=[2, 3])
    g.add(x, name="lonely_add").set_output(True)
    err = _validate_error(g)
    assert err.code == fs.ErrorCode.ATTRIBUTE_NOT_SET
    assert "lonely_add" in str(err) and "IN_1" in str(err)


def test_extra_input_is_invalid_attribute():
    g = fs.Graph(name="bad")
    x = g.tensor(name="x", dim=[2, 3])
    y = g.tensor(name="y", dim=[2, 3])
    g.relu(x, y, name="relu_two").set_output(True)
    err = _validate_error(g)
    assert err.code == fs.ErrorCode.INVALID_ATTRIBUTE
    assert "relu_two" in str(err) and "IN_1" in str(err) and "'y'" in str(err)


def test_broadcast_clash_names_tensors():
    g = fs.Graph(name="bad")
    x = g.tensor(name="x", dim=[2, 3])
    y = g.tensor(name="y", dim=[2, 4])
    g.mul(x, y, name="clash").set_output(True)
    err = _validate_error(g)
    assert err.code == fs.ErrorCode.INVALID_ATTRIBUTE
    assert "clash" in str(err) and "'x'" in str(err) and "'y'" in str(err)


def test_arithmetic_on_booleans_is_rejected():
    g = fs.Graph(name="bad")
    x = g.tensor(name="flags", dim=[2, 3], data_type=fs.DataType.BOOLEAN)
    g.neg(x, name="neg_bool").set_output(True)
    err = _validate_error(g)
    assert err.code == fs.ErrorCode.INVALID_ATTRIBUTE
    assert "neg_bool" in str(err) and "flags" in str(err)


def test_unknown_parameter_and_mode():
    g = fs.Graph(name="bad")
    x = g.tensor(name="x", dim=[2, 3])
    with pytest.raises(fs.FusilliError) as info:
        g.relu(x, alpha=2.0)
    assert info.value.code == fs.ErrorCode.INVALID_ARGUMENT
    with pytest.raises(fs.FusilliError) as info:
        g.pointwise(x, mode="no_such_mode")
    assert info.value.code == fs.ErrorCode.INVALID_ARGUMENT


def test_params_survive_json_round_trip():
    g = fs.Graph(name="params")
    x = g.tensor(name="x", dim=[2, 3])
    g.softplus(x, beta=2.0, threshold=5.0, name="sp").set_output(True)
    g.validate()
    g2 = fs.Graph.from_json(g.to_json())
    assert g2.nodes[0].attrs.softplus_beta == 2.0 and g2.nodes[0].attrs.softplus_threshold == 5.0
    assert g2.canonical_json() == g.canonical_json()
