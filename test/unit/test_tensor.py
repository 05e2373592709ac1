"""fs.strides, TensorAttr (properties, setters, physical order, validity) and fs.empty."""

import numpy as np
import pytest

import fusilli as fs
from fusilli.tensor import is_valid_layout, physical_order

# layout -> (dim, expected strides): layouts listed slowest-to-fastest.
STRIDE_CASES = {
    "NC": ([4, 3], [3, 1]),
    "NCH": ([2, 3, 5], [15, 5, 1]),
    "NHC": ([2, 3, 5], [15, 1, 3]),
    "NCHW": ([2, 3, 4, 5], [60, 20, 5, 1]),
    "NHWC": ([2, 3, 4, 5], [60, 1, 15, 3]),
    "NCDHW": ([2, 3, 4, 5, 6], [360, 120, 30, 6, 1]),
    "NDHWC": ([2, 3, 4, 5, 6], [360, 1, 90, 18, 3]),
    "contiguous": ([2, 3, 4], [12, 4, 1]),
}


@pytest.mark.parametrize("layout", list(STRIDE_CASES))
def test_strides_for_every_layout(layout):
    dim, expected = STRIDE_CASES[layout]
    assert fs.strides(dim, layout) == expected
    assert fs.strides(dim=dim, layout=layout) == expected
    assert is_valid_layout(dim, expected)


def test_strides_default_is_contiguous_and_lowercase_layouts_work():
    assert fs.strides([2, 3, 4]) == [12, 4, 1]
    assert fs.strides([2, 3, 4, 5], "nhwc") == [60, 1, 15, 3]


def test_strides_match_numpy_channels_last():
    arr = np.empty([2, 4, 5, 3], np.float32).transpose(0, 3, 1, 2)  # NHWC in memory, NCHW logical
    assert fs.strides(arr.shape, "NHWC") == [s // 4 for s in arr.strides]


@pytest.mark.parametrize("layout,dim", [("NXYZ", [1, 2, 3, 4]), ("", [2]), ("NCHW", [2, 3, 4]), ("NC", [1, 2, 3])])
def test_bad_layout_is_invalid_argument(layout, dim):
    with pytest.raises(fs.FusilliError) as e:
        fs.strides(dim, layout)
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT
    assert repr(layout) in str(e.value)


@pytest.mark.parametrize(
    "dim,stride,order",
    [
        ([2, 3, 4, 5], [60, 20, 5, 1], (0, 1, 2, 3)),
        ([2, 3, 4, 5], [60, 1, 15, 3], (0, 2, 3, 1)),
        ([4, 6], [1, 4], (1, 0)),  # column-major / transposed matrix
        ([3, 4, 6], [24, 1, 4], (0, 2, 1)),
        ([1, 8, 1, 1], [8, 1, 8, 8], (0, 1, 2, 3)),  # unit dims keep their logical slot
        ([2, 3], [0, 1], (0, 1)),  # broadcast dim keeps its slot
    ],
)
def test_physical_order(dim, stride, order):
    assert physical_order(dim, stride) == order
    t = fs.TensorAttr("t", dim, stride, fs.DataType.FLOAT)
    assert t.physical_order == order


@pytest.mark.parametrize(
    "dim,stride,valid",
    [
        ([2, 3], [3, 1], True),
        ([2, 3], [1, 2], True),
        ([2, 3], [4, 1], False),  # gap
        ([2, 3], [1, 1], False),  # overlap
        ([2, 3], [3, -1], False),  # negative
        ([2, 3, 4], [12, 1, 3], True),
        ([2, 3, 4], [12, 2, 3], False),
        ([1, 5], [999, 1], True),  # extent-1 dims may have any stride
    ],
)
def test_layout_validity(dim, stride, valid):
    assert is_valid_layout(dim, stride) is valid


def test_tensor_attr_properties_and_fluent_setters():
    t = fs.TensorAttr()
    assert t.name == "" and t.dim == [] and t.stride == [] and t.data_type is None
    assert not t.is_virtual and not t.is_output
    same = t.set_name("a").set_dim([2, 3]).set_stride([3, 1]).set_data_type("f16")
    assert same is t
    assert (t.name, t.dim, t.stride, t.data_type) == ("a", [2, 3], [3, 1], fs.DataType.HALF)
    # dim/stride return copies: mutating them does not change the tensor
    t.dim.append(7)
    assert t.dim == [2, 3]


def test_op_results_are_virtual_until_set_output():
    g = fs.Graph(name="g")
    a = g.tensor(name="a", dim=[2, 3])
    b = g.tensor(name="b", dim=[2, 3])
    y = g.add(a, b)
    assert isinstance(y, fs.TensorAttr)
    assert y.is_virtual and not y.is_output
    assert y.set_output(True) is y
    assert y.is_output and not y.is_virtual
    y.set_output(False)
    assert y.is_virtual
    assert not a.is_virtual and not a.is_output


def test_graph_tensor_default_stride_is_contiguous_and_tensor_like():
    g = fs.Graph(name="g")
    t = g.tensor(name="t", dim=[2, 3, 4])
    assert t.stride == [12, 4, 1]
    arr = np.zeros([2, 5, 3], np.float16).transpose(0, 2, 1)
    u = g.tensor_like(arr, name="u")
    assert u.dim == [2, 3, 5] and u.stride == [15, 1, 3] and u.data_type is fs.DataType.HALF


def test_unnamed_tensors_and_ops_get_unique_names():
    g = fs.Graph(name="g")
    a = g.tensor(dim=[2, 2])
    b = g.tensor(dim=[2, 2])
    y = g.relu(g.add(a, b)).set_output(True)
    g.validate()
    names = [t.name for t in g.all_tensors()] + [n.name for n in g.nodes]
    assert all(names) and len(set(names)) == len(names)
    assert y.name


@pytest.mark.parametrize(
    "dim,layout,dtype",
    [
        ([2, 3, 4, 5], "NHWC", fs.DataType.FLOAT),
        ([2, 3, 4, 5], "NCHW", fs.DataType.HALF),
        ([2, 3, 4, 5, 6], "NDHWC", fs.DataType.INT8),
        ([3, 4], "contiguous", fs.DataType.BFLOAT16),
    ],
)
def test_empty_matches_tensor(dim, layout, dtype):
    t = fs.TensorAttr("t", dim, fs.strides(dim, layout), dtype)
    arr = fs.empty(t)
    assert list(arr.shape) == dim
    assert arr.dtype == dtype.numpy_dtype
    assert [s // arr.itemsize for s in arr.strides] == t.stride
    assert arr.flags.writeable


def test_empty_transposed_matrix():
    t = fs.TensorAttr("t", [4, 6], [1, 4], fs.DataType.FLOAT)
    arr = fs.empty(t)
    assert arr.shape == (4, 6) and arr.strides == (4, 16)


def test_empty_without_dims_fails():
    with pytest.raises(fs.FusilliError) as e:
        fs.empty(fs.TensorAttr("nodims"))
    assert "nodims" in str(e.value)
