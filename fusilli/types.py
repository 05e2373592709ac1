"""Data types: the one table from fusilli's DataType to its numpy / ml_dtypes dtype,
MLIR element types (torch and builtin spellings), PyTorch ScalarType code, IREE HAL
element type and bit width. Every other module asks this table; none re-derives
these facts."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from fusilli.errors import ErrorCode, FusilliError, fail


@dataclass(frozen=True)
class _TypeInfo:
    mlir: str  # element type in !torch.vtensor
    builtin: str  # element type in builtin tensors (signless ints)
    numpy: Any
    torch_code: int | None  # c10::ScalarType, used by ops like aten.empty
    hal: str  # iree.runtime.HalElementType member
    short_names: tuple[str, ...]
    kind: str  # "float", "int", "uint", "bool"
    bits: int


class DataType(enum.Enum):
    """Element types of fusilli tensors (upstream Fusilli's set)."""

    HALF = _TypeInfo("f16", "f16", np.float16, 5, "FLOAT_16", ("f16", "float16", "half"), "float", 16)
    BFLOAT16 = _TypeInfo("bf16", "bf16", ml_dtypes.bfloat16, 15, "BFLOAT_16", ("bf16", "bfloat16"), "float", 16)
    FLOAT = _TypeInfo("f32", "f32", np.float32, 6, "FLOAT_32", ("f32", "float32", "float"), "float", 32)
    DOUBLE = _TypeInfo("f64", "f64", np.float64, 7, "FLOAT_64", ("f64", "float64", "double"), "float", 64)
    UINT8 = _TypeInfo("ui8", "i8", np.uint8, 0, "UINT_8", ("ui8", "u8", "uint8"), "uint", 8)
    INT4 = _TypeInfo("si4", "i4", ml_dtypes.int4, None, "SINT_4", ("si4", "i4", "int4"), "int", 4)
    INT8 = _TypeInfo("si8", "i8", np.int8, 1, "SINT_8", ("si8", "i8", "int8"), "int", 8)
    INT16 = _TypeInfo("si16", "i16", np.int16, 2, "SINT_16", ("si16", "i16", "int16"), "int", 16)
    INT32 = _TypeInfo("si32", "i32", np.int32, 3, "SINT_32", ("si32", "i32", "int32"), "int", 32)
    INT64 = _TypeInfo("si64", "i64", np.int64, 4, "SINT_64", ("si64", "i64", "int64"), "int", 64)
    BOOLEAN = _TypeInfo("i1", "i1", np.bool_, 11, "BOOL_8", ("i1", "bool", "boolean"), "bool", 1)
    FP8_E5M2 = _TypeInfo(
        "f8E5M2", "f8E5M2", ml_dtypes.float8_e5m2, 23, "FLOAT_8_E5M2", ("f8e5m2", "fp8_e5m2", "float8_e5m2"), "float", 8
    )

    @property
    def numpy_dtype(self) -> np.dtype:
        return np.dtype(self.value.numpy)

    @property
    def mlir_name(self) -> str:
        """The element type as the torch dialect spells it (``si32``, ``f16``, ``i1``)."""
        return self.value.mlir

    @property
    def builtin_name(self) -> str:
        """The element type of builtin tensors (signless integers: ``i32``)."""
        return self.value.builtin

    @property
    def torch_code(self) -> int | None:
        return self.value.torch_code

    @property
    def hal_name(self) -> str:
        """The ``iree.runtime.HalElementType`` member of buffers of this type."""
        return self.value.hal

    @property
    def is_float(self) -> bool:
        return self.value.kind == "float"

    @property
    def is_integer(self) -> bool:
        return self.value.kind in ("int", "uint")

    @property
    def is_integral_or_bool(self) -> bool:
        return self.value.kind != "float"

    @property
    def is_signed(self) -> bool:
        return self.value.kind in ("int", "float")

    @property
    def is_unsigned(self) -> bool:
        """Unsigned integers and booleans (zero-extended, compared unsigned)."""
        return self.value.kind in ("uint", "bool")

    @property
    def bits(self) -> int:
        return self.value.bits

    @property
    def short_name(self) -> str:
        return self.value.short_names[0]

    @classmethod
    def from_mlir_name(cls, name: str) -> DataType:
        """The DataType of a torch-dialect element type (``si32``, ``f16``, ``i1``)."""
        member = _BY_MLIR_NAME.get(name)
        if member is None:
            raise fail(ErrorCode.NOT_IMPLEMENTED, f"element type {name} has no fusilli DataType")
        return member

    def scalar_array(self, value: float | int | bool, what: str) -> np.ndarray:
        """``value`` as a one-element array of this type; INVALID_ARGUMENT naming ``what``
        (e.g. "scalar 'eps'") if the type cannot represent it."""

        def unrepresentable(reason: str) -> FusilliError:
            return fail(ErrorCode.INVALID_ARGUMENT, f"{what}: {value!r} {reason} {self.name}")

        if not isinstance(value, (bool, int, float)):
            raise unrepresentable("is not a number, so it is not representable in")
        if self.is_integral_or_bool:
            if isinstance(value, float) and not value.is_integer():
                raise unrepresentable("is not integral, so it is not representable in")
            low, high = (
                (int(ml_dtypes.iinfo(self.numpy_dtype).min), int(ml_dtypes.iinfo(self.numpy_dtype).max))
                if self.is_integer
                else (0, 1)
            )
            if not low <= value <= high:
                raise unrepresentable(f"is outside [{low}, {high}], the range of")
            return np.array([int(value)], dtype=self.numpy_dtype)
        with np.errstate(over="ignore"):
            array = np.array([value], dtype=self.numpy_dtype)
        if math.isfinite(value) and not np.isfinite(array[0]):
            raise unrepresentable("overflows")
        return array

    @classmethod
    def from_numpy(cls, dtype: Any) -> DataType:
        """Maps a numpy / ml_dtypes dtype to a DataType."""
        try:
            dt = np.dtype(dtype)
        except TypeError as e:
            raise fail(ErrorCode.INVALID_ARGUMENT, f"not a numpy dtype: {dtype!r}") from e
        for member in cls:
            if member.numpy_dtype == dt:
                return member
        raise fail(ErrorCode.INVALID_ARGUMENT, f"numpy dtype {dt} has no fusilli DataType")

    @classmethod
    def coerce(cls, value: Any) -> DataType:
        """Accepts a DataType, a numpy dtype (or type), or a name such as "f16"."""
        if isinstance(value, DataType):
            return value
        if isinstance(value, str):
            lowered = value.lower()
            for member in cls:
                if lowered == member.name.lower() or lowered in member.value.short_names:
                    return member
            raise fail(ErrorCode.INVALID_ARGUMENT, f"unknown data type name {value!r}")
        return cls.from_numpy(value)

    def __repr__(self) -> str:
        return f"DataType.{self.name}"


_BY_MLIR_NAME = {member.mlir_name: member for member in DataType}


def torch_code_of(dt: DataType) -> int:
    """``dt``'s c10::ScalarType code; NOT_IMPLEMENTED for a type PyTorch lacks (INT4)."""
    code = dt.torch_code
    if code is None:
        raise fail(ErrorCode.NOT_IMPLEMENTED, f"data type {dt.name} has no PyTorch ScalarType code")
    return code


def promote(a: DataType, b: DataType) -> DataType:
    """PyTorch-style promotion of two tensor element types."""
    if a == b:
        return a
    order = {"bool": 0, "uint": 1, "int": 1, "float": 2}
    ka, kb = order[a.value.kind], order[b.value.kind]
    if ka != kb:
        return a if ka > kb else b
    if {a, b} == {DataType.HALF, DataType.BFLOAT16}:
        return DataType.FLOAT
    return a if a.bits >= b.bits else b
