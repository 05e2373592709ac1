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


# ---- the one table: every encoding of a type comes from DataType -------------------
@pytest.mark.parametrize("dt", list(fs.DataType), ids=lambda d: d.name)
def test_table_encodings_agree(dt):
    import iree.runtime as rt

    from fusilli import ir

    assert fs.DataType.from_mlir_name(dt.mlir_name) is dt
    assert dt.bits <= dt.numpy_dtype.itemsize * 8
    assert isinstance(getattr(rt.HalElementType, dt.hal_name), rt.HalElementType)
    with ir.fusilli_context(), ir.Location.unknown():
        builtin = ir.builtin_tensor_type(ir.TensorType((1,), dt.mlir_name))
        assert str(builtin) == f"tensor<1x{dt.builtin_name}>"


def test_unknown_mlir_element_type():
    with pytest.raises(fs.FusilliError) as e:
        fs.DataType.from_mlir_name("f8E4M3FN")
    assert e.value.code == fs.ErrorCode.NOT_IMPLEMENTED and "f8E4M3FN" in str(e.value)


@pytest.mark.parametrize(
    "dt,value,expected",
    [
        (fs.DataType.FP8_E5M2, 2.0, 2.0),
        (fs.DataType.FP8_E5M2, 0.3, 0.3125),  # rounded to the nearest e5m2 value
        (fs.DataType.HALF, -65504.0, -65504.0),
        (fs.DataType.BFLOAT16, 1.0e38, 9.969209968386869e37),
        (fs.DataType.FLOAT, float("inf"), float("inf")),
        (fs.DataType.INT4, -8, -8),
        (fs.DataType.INT8, 3.0, 3),
        (fs.DataType.UINT8, 255, 255),
        (fs.DataType.INT64, -(2**63), -(2**63)),
        (fs.DataType.BOOLEAN, True, True),
        (fs.DataType.BOOLEAN, 0, False),
    ],
)
def test_scalar_array_of_representable_values(dt, value, expected):
    array = dt.scalar_array(value, "scalar 's'")
    assert array.dtype == dt.numpy_dtype and array.shape == (1,)
    assert array.astype(np.float64)[0] == pytest.approx(float(expected))


@pytest.mark.parametrize(
    "dt,value,reason",
    [
        (fs.DataType.FP8_E5M2, 1.0e6, "overflows"),
        (fs.DataType.HALF, 70000.0, "overflows"),
        (fs.DataType.INT4, 8, "outside [-8, 7]"),
        (fs.DataType.UINT8, -1, "outside [0, 255]"),
        (fs.DataType.INT64, 2**63, "outside"),
        (fs.DataType.INT32, 2.5, "not integral"),
        (fs.DataType.BOOLEAN, 2, "outside [0, 1]"),
        (fs.DataType.FLOAT, "1.0", "not a number"),
    ],
)
def test_unrepresentable_scalar_is_invalid_argument_naming_it(dt, value, reason):
    g = fs.Graph(name="scalars")
    with pytest.raises(fs.FusilliError) as e:
        g.scalar(value, dt, name="my_scalar")
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT
    assert "scalar 'my_scalar'" in str(e.value) and reason in str(e.value) and dt.name in str(e.value)


def test_unrepresentable_scalar_from_tensor_attr_fails_validate():
    g = fs.Graph(name="scalar_attr")
    x = g.tensor(name="x", dim=[4], data_type=fs.DataType.INT8)
    s = g.tensor(fs.TensorAttr(name="big", dim=[1], stride=[1], data_type=fs.DataType.INT8, scalar_value=300))
    g.add(x, s, name="add").set_output(True)
    with pytest.raises(fs.FusilliError) as e:
        g.validate()
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT and "scalar 'big'" in str(e.value)
