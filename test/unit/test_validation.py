"""One test per validation rule: the error code, and a message naming the node and tensor.

Shape and attribute checks happen in ``validate()``, never in the op call.
"""

import numpy as np
import pytest

import fusilli as fs
from fusilli.tensor import TensorAttr


def expect(g: fs.Graph, code: fs.ErrorCode, *fragments: str) -> str:
    with pytest.raises(fs.FusilliError) as e:
        g.validate()
    assert e.value.code == code, str(e.value)
    text = str(e.value)
    assert text.startswith(code.name + ": "), text
    for f in fragments:
        assert f in text, f"{f!r} not in {text!r}"
    assert not g._validated
    return text


def conv_graph(x_dim=(1, 4, 8, 8), w_dim=(8, 4, 3, 3), x_stride=None, w_stride=None, **attrs):
    g = fs.Graph(name="cv")
    x = g.tensor(name="x", dim=list(x_dim), stride=x_stride)
    w = g.tensor(name="w", dim=list(w_dim), stride=w_stride)
    kw = {"padding": [1] * (len(x_dim) - 2), "stride": [1] * (len(x_dim) - 2), "dilation": [1] * (len(x_dim) - 2)}
    kw.update(attrs)
    y = g.conv_fprop(x, w, name="conv0", **kw).set_output(True)
    return g, x, w, y


def matmul_graph(a_dim, b_dim, a_stride=None, b_stride=None):
    g = fs.Graph(name="mm")
    a = g.tensor(name="a", dim=a_dim, stride=a_stride)
    b = g.tensor(name="b", dim=b_dim, stride=b_stride)
    c = g.matmul(a, b, name="mm0").set_output(True)
    return g, a, b, c


# ---------------------------------------------------------------- graph-level rules
def test_valid_graphs_validate():
    for g in (conv_graph()[0], matmul_graph([2, 3], [3, 4])[0]):
        assert g.validate() is g


def test_graph_name_not_set():
    g, *_ = conv_graph()
    g.name = ""
    expect(g, fs.ErrorCode.ATTRIBUTE_NOT_SET, "name")


def test_duplicate_tensor_names():
    g = fs.Graph(name="dup")
    a = g.tensor(name="same", dim=[2])
    b = g.tensor(name="same", dim=[2])
    g.add(a, b, name="add0").set_output(True)
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "'same'", "already in use")


def test_duplicate_node_and_tensor_name():
    g = fs.Graph(name="dup")
    a = g.tensor(name="a", dim=[2])
    g.relu(a, name="a").set_output(True)
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "'a'", "already in use")


def test_input_dims_not_set():
    g = fs.Graph(name="g")
    a = g.tensor(TensorAttr("nodim"))
    g.relu(a, name="r").set_output(True)
    expect(g, fs.ErrorCode.ATTRIBUTE_NOT_SET, "'nodim'", "dims not set")


def test_input_strides_not_set():
    g = fs.Graph(name="g")
    a = g.tensor(TensorAttr("nostride", [2, 3]))
    g.relu(a, name="r").set_output(True)
    expect(g, fs.ErrorCode.ATTRIBUTE_NOT_SET, "'nostride'", "strides not set")


def test_dim_stride_rank_mismatch():
    g = fs.Graph(name="g")
    a = g.tensor(name="ranky", dim=[2, 3], stride=[1])
    g.relu(a, name="r").set_output(True)
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "'ranky'", "dimensionality")


def test_non_positive_dims():
    g = fs.Graph(name="g")
    a = g.tensor(name="zero", dim=[2, 0], stride=[1, 1])
    g.relu(a, name="r").set_output(True)
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "'zero'", "non-positive")


@pytest.mark.parametrize("stride", [[4, 1], [1, 1], [3, -1]])
def test_invalid_physical_representation(stride):
    g = fs.Graph(name="g")
    a = g.tensor(name="gappy", dim=[2, 3], stride=stride)
    g.relu(a, name="r").set_output(True)
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "'gappy'", "invalid physical representation")


def test_op_output_with_invalid_strides():
    g = fs.Graph(name="g")
    a = g.tensor(name="a", dim=[2, 3])
    g.relu(a, name="r0").set_output(True).set_stride([5, 1]).set_name("out")
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "'r0'", "'out'", "invalid physical representation")


def test_output_broadcast_strides_rejected():
    g = fs.Graph(name="g")
    a = g.tensor(name="a", dim=[2, 3])
    g.relu(a, name="r0").set_output(True).set_name("bcast").set_stride([0, 1])
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "'r0'", "'bcast'", "broadcast")


def test_dynamic_dim_out_of_range():
    g = fs.Graph(name="g")
    a = g.tensor(name="dyn", dim=[2, 3], dynamic_dims=[5])
    g.relu(a, name="r").set_output(True)
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "'dyn'", "out of range")


def test_dynamic_dim_broadcast():
    g = fs.Graph(name="g")
    a = g.tensor(name="dyn", dim=[2, 3], stride=[0, 1], dynamic_dims=[0])
    g.relu(a, name="r").set_output(True)
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "'dyn'", "broadcast")


def test_dynamic_dim_extent_one():
    g = fs.Graph(name="g")
    a = g.tensor(name="dyn", dim=[1, 3], dynamic_dims=[0])
    g.relu(a, name="r").set_output(True)
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "'dyn'", "extent")


def test_graph_without_output():
    g = fs.Graph(name="nooutput")
    a = g.tensor(name="a", dim=[2])
    g.relu(a, name="r")
    expect(g, fs.ErrorCode.ATTRIBUTE_NOT_SET, "'nooutput'", "no output")


def test_op_input_must_be_tensor():
    g = fs.Graph(name="g")
    with pytest.raises(fs.FusilliError) as e:
        g.relu(np.zeros(3), name="r0")
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT
    assert "'r0'" in str(e.value) and "IN_0" in str(e.value)


def test_load_artifact_requires_validation(cpu):
    g, *_ = conv_graph()
    with pytest.raises(fs.FusilliError) as e:
        g.load_artifact(cpu, b"whatever")
    assert e.value.code == fs.ErrorCode.NOT_VALIDATED
    assert "'cv'" in str(e.value)


# ---------------------------------------------------------------- conv_fprop
@pytest.mark.parametrize("field", ["padding", "stride", "dilation"])
def test_conv_attribute_not_set(field):
    g, *_ = conv_graph(**{field: None})
    expect(g, fs.ErrorCode.ATTRIBUTE_NOT_SET, "conv_fprop 'conv0'", field)


def test_conv_input_not_set():
    g = fs.Graph(name="g")
    w = g.tensor(name="w", dim=[8, 4, 3, 3])
    g.conv_fprop(None, w, padding=[0, 0], stride=[1, 1], dilation=[1, 1], name="conv0").set_output(True)
    expect(g, fs.ErrorCode.ATTRIBUTE_NOT_SET, "conv_fprop 'conv0'", "X")


def test_conv_input_dims_not_set():
    g = fs.Graph(name="g")
    x = g.tensor(TensorAttr("xx", data_type=fs.DataType.FLOAT))
    w = g.tensor(name="w", dim=[8, 4, 3, 3])
    g.conv_fprop(x, w, padding=[0, 0], stride=[1, 1], dilation=[1, 1], name="conv0").set_output(True)
    expect(g, fs.ErrorCode.ATTRIBUTE_NOT_SET, "'xx'", "dims not set")


def test_conv_rank_too_small():
    g, *_ = conv_graph(x_dim=(4, 8), w_dim=(8, 4), padding=[], stride=[], dilation=[])
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "conv_fprop 'conv0'", "'x'", "rank")


@pytest.mark.parametrize("field", ["padding", "stride", "dilation"])
def test_conv_attribute_wrong_length(field):
    g, *_ = conv_graph(**{field: [1, 1, 1]})
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "conv_fprop 'conv0'", field, "spatial")


def test_conv_negative_padding():
    g, *_ = conv_graph(padding=[-1, 0])
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "conv_fprop 'conv0'", "padding")


@pytest.mark.parametrize("field", ["stride", "dilation"])
def test_conv_non_positive_stride_dilation(field):
    g, *_ = conv_graph(**{field: [1, 0]})
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "conv_fprop 'conv0'", field)


def test_conv_channels_not_divisible():
    g, *_ = conv_graph(x_dim=(1, 64, 8, 8), w_dim=(96, 48, 3, 3))
    expect(
        g,
        fs.ErrorCode.INVALID_ATTRIBUTE,
        "conv_fprop 'conv0'",
        "input channels of X 'x' (64) must be divisible by filter channels of W 'w' (48)",
    )


def test_conv_output_channels_not_divisible_by_groups():
    g, *_ = conv_graph(x_dim=(1, 8, 8, 8), w_dim=(6, 2, 3, 3))  # groups = 4, K = 6
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "conv_fprop 'conv0'", "'w'", "group")


def test_conv_rank_mismatch():
    g, *_ = conv_graph(x_dim=(1, 4, 8, 8), w_dim=(8, 4, 3, 3, 3))
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "conv_fprop 'conv0'", "rank")


def test_conv_filter_larger_than_input():
    g, *_ = conv_graph(x_dim=(1, 4, 3, 3), w_dim=(8, 4, 5, 5), padding=[0, 0])
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "conv_fprop 'conv0'", "'w'", "'x'", "larger")


def test_conv_output_dims_mismatch():
    g, x, w, y = conv_graph()
    y.set_dim([1, 8, 7, 7]).set_name("yy")
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "conv_fprop 'conv0'", "'yy'", "[1, 8, 8, 8]")


def test_conv_neither_contiguous_nor_channels_last():
    dim = [1, 4, 8, 8]
    odd = fs.tensor.strides_for_order(dim, (0, 2, 1, 3))  # N H C W
    g, *_ = conv_graph(x_stride=odd)
    expect(g, fs.ErrorCode.NOT_IMPLEMENTED, "conv_fprop 'conv0'", "'x'", "channels-last")


def test_conv_completed_after_op_call():
    # Output dims set by the caller after the op call are checked (and accepted) in validate().
    g, x, w, y = conv_graph()
    y.set_dim([1, 8, 8, 8])
    g.validate()
    assert y.dim == [1, 8, 8, 8] and y.stride == [512, 64, 8, 1]


# ---------------------------------------------------------------- matmul
def test_matmul_rank_too_small():
    g, *_ = matmul_graph([3], [3, 4])
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "matmul 'mm0'", "'a'", "rank")


def test_matmul_inner_dims_mismatch():
    g, *_ = matmul_graph([2, 3], [4, 5])
    expect(
        g,
        fs.ErrorCode.INVALID_ATTRIBUTE,
        "matmul 'mm0'",
        "'a'",
        "'b'",
        "incompatible inner dimensions (K): A has K=3, B has K=4",
    )


def test_matmul_batch_not_broadcastable():
    g, *_ = matmul_graph([2, 3, 4], [3, 4, 5])
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "matmul 'mm0'", "'a'", "'b'", "broadcast")


def test_matmul_batch_not_outermost():
    dim = [2, 3, 4]
    g, *_ = matmul_graph(dim, [2, 4, 5], a_stride=fs.tensor.strides_for_order(dim, (1, 0, 2)))
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "matmul 'mm0'", "'a'", "not outermost")


def test_matmul_output_dims_mismatch():
    g, a, b, c = matmul_graph([2, 3], [3, 4])
    c.set_dim([2, 5]).set_name("cc")
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "matmul 'mm0'", "'cc'", "[2, 4]")


# ---------------------------------------------------------------- pointwise
def test_pointwise_missing_operand():
    g = fs.Graph(name="g")
    a = g.tensor(name="a", dim=[2, 3])
    g.pointwise(a, mode=fs.PointwiseMode.ADD, name="add0").set_output(True)
    expect(g, fs.ErrorCode.ATTRIBUTE_NOT_SET, "pointwise 'add0'", "ADD mode requires IN_1 input")


def test_pointwise_extra_operand():
    g = fs.Graph(name="g")
    a = g.tensor(name="a", dim=[2, 3])
    b = g.tensor(name="b", dim=[2, 3])
    g.pointwise(a, b, mode=fs.PointwiseMode.RELU_FWD, name="relu0").set_output(True)
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "pointwise 'relu0'", "IN_1")


def test_pointwise_cannot_broadcast():
    g = fs.Graph(name="g")
    a = g.tensor(name="a", dim=[2, 3])
    b = g.tensor(name="b", dim=[2, 4])
    g.add(a, b, name="add0").set_output(True)
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "pointwise 'add0'", "'a'", "'b'", "broadcast")


def test_pointwise_output_dims_mismatch():
    g = fs.Graph(name="g")
    a = g.tensor(name="a", dim=[2, 3])
    b = g.tensor(name="b", dim=[1, 3])
    g.add(a, b, name="add0").set_output(True).set_dim([2, 4]).set_name("o")
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "pointwise 'add0'", "'o'")


def test_pointwise_unknown_mode_and_parameter():
    g = fs.Graph(name="g")
    a = g.tensor(name="a", dim=[2])
    with pytest.raises(fs.FusilliError) as e:
        g.pointwise(a, mode="NOT_A_MODE")
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT and "NOT_A_MODE" in str(e.value)
    with pytest.raises(fs.FusilliError) as e:
        g.relu(a, alpha=2.0)
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT and "alpha" in str(e.value)


def test_pointwise_mode_by_name_and_method_agree():
    g = fs.Graph(name="g")
    a = g.tensor(name="a", dim=[2])
    b = g.tensor(name="b", dim=[2])
    g.pointwise(a, b, mode="add", name="p0").set_output(True)
    g.add(a, b, name="p1").set_output(True)
    g.validate()
    assert g.nodes[0].attrs.mode is g.nodes[1].attrs.mode is fs.PointwiseMode.ADD


def test_validate_is_idempotent_and_reinfers():
    g, x, w, y = conv_graph()
    g.validate()
    assert y.dim == [1, 8, 8, 8]
    x.set_dim([1, 4, 6, 6]).set_stride([144, 36, 6, 1])  # inferred results are recomputed, user-set ones kept
    g.validate()
    assert y.dim == [1, 8, 6, 6]


def test_user_settings_after_validate_survive_revalidation():
    g, a, b, c = matmul_graph([5, 4], [4, 6])
    g.validate()
    assert c.stride == [6, 1]
    c.set_stride([1, 5])  # column-major result, set after the first validate
    g.validate()
    assert c.stride == [1, 5] and c.dim == [5, 6]
    a.set_dim([3, 4]).set_stride([4, 1])  # C's dims re-infer; its user-set stride no longer fits
    expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "matmul 'mm0'", "'mm0_C'")
    assert c.dim == [3, 6]


@pytest.mark.parametrize("op", ["pointwise", "reduction"])
def test_mode_left_unset_is_reported_by_validate(op):
    g = fs.Graph(name="mode_unset")
    x = g.tensor(name="x", dim=[2, 4])
    if op == "pointwise":
        g.pointwise(x, mode=None, name="node").set_output(True)
    else:
        g.reduction(x, mode=None, name="node").set_output(True)
    expect(g, fs.ErrorCode.ATTRIBUTE_NOT_SET, f"{op} 'node'", "mode not set")


def test_norm_phase_by_name_and_unknown_phase():
    g = fs.Graph(name="phase_names")
    x = g.tensor(name="x", dim=[2, 4])
    y, mean, inv_var = g.layernorm(x, epsilon=1e-5, phase="training")
    assert mean is not None and inv_var is not None
    with pytest.raises(fs.FusilliError) as e:
        g.layernorm(x, epsilon=1e-5, phase="sideways")
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT
    assert "norm phase 'sideways'" in str(e.value) and "NormPhase" in str(e.value)
