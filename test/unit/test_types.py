"""fs.DataType: numpy / ml_dtypes mapping and coercion of names and dtypes."""

import ml_dtypes
import numpy as np
import pytest

import fusilli as fs

EXPECTED_NUMPY = {
    fs.DataType.HALF: np.float16,
    fs.DataType.BFLOAT16: ml_dtypes.bfloat16,
    fs.DataType.FLOAT: np.float32,
    fs.DataType.DOUBLE: np.float64,
    fs.DataType.UINT8: np.uint8,
    fs.DataType.INT4: ml_dtypes.int4,
    fs.DataType.INT8: np.int8,
    fs.DataType.INT16: np.int16,
    fs.DataType.INT32: np.int32,
    fs.DataType.INT64: np.int64,
    fs.DataType.BOOLEAN: np.bool_,
    fs.DataType.FP8_E5M2: ml_dtypes.float8_e5m2,
}


def test_members_are_upstream_set():
    assert {m.name for m in fs.DataType} == {
        "HALF",
        "BFLOAT16",
        "FLOAT",
        "DOUBLE",
        "UINT8",
        "INT4",
        "INT8",
        "INT16",
        "INT32",
        "INT64",
        "BOOLEAN",
        "FP8_E5M2",
    }


@pytest.mark.parametrize("dt", list(fs.DataType), ids=lambda d: d.name)
def test_numpy_round_trip(dt):
    assert dt.numpy_dtype == np.dtype(EXPECTED_NUMPY[dt])
    assert fs.DataType.from_numpy(dt.numpy_dtype) is dt
    assert fs.DataType.from_numpy(EXPECTED_NUMPY[dt]) is dt
    assert fs.DataType.coerce(dt) is dt
    assert fs.DataType.coerce(dt.numpy_dtype) is dt
    assert fs.DataType.coerce(dt.name.lower()) is dt


@pytest.mark.parametrize(
    "name,dt",
    [
        ("f16", fs.DataType.HALF),
        ("half", fs.DataType.HALF),
        ("float16", fs.DataType.HALF),
        ("bf16", fs.DataType.BFLOAT16),
        ("f32", fs.DataType.FLOAT),
        ("float32", fs.DataType.FLOAT),
        ("F32", fs.DataType.FLOAT),
        ("f64", fs.DataType.DOUBLE),
        ("i8", fs.DataType.INT8),
        ("int32", fs.DataType.INT32),
        ("i64", fs.DataType.INT64),
        ("bool", fs.DataType.BOOLEAN),
        ("ui8", fs.DataType.UINT8),
        ("int4", fs.DataType.INT4),
        ("fp8_e5m2", fs.DataType.FP8_E5M2),
    ],
)
def test_coerce_names(name, dt):
    assert fs.DataType.coerce(name) is dt


@pytest.mark.parametrize("value", [np.float16, np.dtype("float32"), "float64", np.int32, np.bool_])
def test_coerce_numpy_types(value):
    assert fs.DataType.coerce(value).numpy_dtype == np.dtype(value)


@pytest.mark.parametrize("bad", ["f17", "complex", np.complex64, np.dtype("U3")])
def test_unknown_data_type_is_invalid_argument(bad):
    with pytest.raises(fs.FusilliError) as e:
        fs.DataType.coerce(bad)
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT
    assert str(e.value).startswith("INVALID_ARGUMENT: ")


def test_from_numpy_rejects_non_dtype():
    with pytest.raises(fs.FusilliError) as e:
        fs.DataType.from_numpy(object())
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT


def test_graph_and_tensor_accept_names_and_numpy_dtypes():
    g = fs.Graph(name="dt", io_data_type="f16", intermediate_data_type=np.float32, compute_data_type="float")
    assert g.io_data_type is fs.DataType.HALF
    assert g.intermediate_data_type is fs.DataType.FLOAT
    assert g.compute_data_type is fs.DataType.FLOAT
    t = g.tensor(name="t", dim=[2], data_type="bf16")
    assert t.data_type is fs.DataType.BFLOAT16
    t.set_data_type(np.int8)
    assert t.data_type is fs.DataType.INT8


def test_error_codes_and_str():
    assert {c.name for c in fs.ErrorCode} == {
        "NOT_IMPLEMENTED",
        "NOT_VALIDATED",
        "NOT_COMPILED",
        "ATTRIBUTE_NOT_SET",
        "INTERNAL_ERROR",
        "INVALID_ATTRIBUTE",
        "INVALID_ARGUMENT",
        "VARIANT_PACK_ERROR",
        "COMPILE_FAILURE",
        "RUNTIME_FAILURE",
        "FILE_SYSTEM_FAILURE",
    }
    err = fs.FusilliError(fs.ErrorCode.INVALID_ATTRIBUTE, "conv_fprop 'c': bad")
    assert isinstance(err, Exception)
    assert err.code is fs.ErrorCode.INVALID_ATTRIBUTE
    assert str(err) == "INVALID_ATTRIBUTE: conv_fprop 'c': bad"
