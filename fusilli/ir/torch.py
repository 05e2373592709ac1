"""Typed helpers for building torch-dialect ops with the generic op builder.

The IREE wheel registers the torch dialect but has no Python op classes for it,
so ops are created with ``Operation.create`` behind these helpers (the way
torch-mlir's importers do). Each helper creates its op at the current insertion
point and location.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from fusilli.ir.bindings import (
    BoolAttr,
    DenseElementsAttr,
    F32Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Operation,
    RankedTensorType,
    StringAttr,
    Type,
    Value,
)
from fusilli.types import DataType

DYNAMIC = -1
_VTENSOR_RE = re.compile(r"^!torch\.(v?tensor)<\[([^\]]*)\],([A-Za-z0-9_]+)>$")


@dataclass(frozen=True)
class TensorType:
    """The shape and element type of a ``!torch.vtensor`` (or builtin tensor) type."""

    dims: tuple[int, ...]  # DYNAMIC (-1) for '?'
    element: str  # torch spelling: f32, si32, i1, ...
    value_semantics: bool = True

    @staticmethod
    def of(value_or_type: Value | Type) -> TensorType:
        t = value_or_type.type if isinstance(value_or_type, Value) else value_or_type
        text = str(t)
        m = _VTENSOR_RE.match(text)
        if m:
            dims = tuple(DYNAMIC if d.strip() == "?" else int(d) for d in m.group(2).split(",") if d.strip())
            return TensorType(dims, m.group(3), m.group(1) == "vtensor")
        rt = RankedTensorType(t)
        dims = tuple(DYNAMIC if rt.is_dynamic_dim(i) else rt.get_dim_size(i) for i in range(rt.rank))
        return TensorType(dims, str(rt.element_type), True)

    @property
    def rank(self) -> int:
        return len(self.dims)

    def with_dims(self, dims: Sequence[int]) -> TensorType:
        return TensorType(tuple(dims), self.element, self.value_semantics)

    def with_element(self, element: str) -> TensorType:
        return TensorType(self.dims, element, self.value_semantics)

    def to_type(self) -> Type:
        return vtensor_type(self.dims, self.element, value_semantics=self.value_semantics)


def vtensor_type(dims: Sequence[int], element: str, *, value_semantics: bool = True) -> Type:
    shape = ",".join("?" if d == DYNAMIC else str(int(d)) for d in dims)
    kind = "vtensor" if value_semantics else "tensor"
    return Type.parse(f"!torch.{kind}<[{shape}],{element}>")


def builtin_element_type(torch_element: str) -> Type:
    """torch element spelling -> builtin element type (signedness dropped)."""
    return Type.parse(DataType.from_mlir_name(torch_element).builtin_name)


def builtin_tensor_type(tt: TensorType) -> Type:
    return RankedTensorType.get(
        [RankedTensorType.get_dynamic_size() if d == DYNAMIC else d for d in tt.dims],
        builtin_element_type(tt.element),
    )


def element_type(value: Value) -> str:
    return TensorType.of(value).element


def _i64(v: int) -> IntegerAttr:
    return IntegerAttr.get(IntegerType.get_signless(64), int(v))


class TorchBuilder:
    """Creates torch ops at the current insertion point (``with InsertionPoint``)."""

    def __init__(self) -> None:
        self._int_type = Type.parse("!torch.int")
        self._float_type = Type.parse("!torch.float")
        self._bool_type = Type.parse("!torch.bool")
        self._none_type = Type.parse("!torch.none")
        self._str_type = Type.parse("!torch.str")
        self._int_list_type = Type.parse("!torch.list<int>")

    # ---- constants ---------------------------------------------------------
    def const_int(self, v: int) -> Value:
        return Operation.create("torch.constant.int", results=[self._int_type], attributes={"value": _i64(v)}).result

    def const_float(self, v: float) -> Value:
        return Operation.create(
            "torch.constant.float",
            results=[self._float_type],
            attributes={"value": FloatAttr.get_f64(float(v))},
        ).result

    def const_bool(self, v: bool) -> Value:
        return Operation.create(
            "torch.constant.bool", results=[self._bool_type], attributes={"value": BoolAttr.get(bool(v))}
        ).result

    def const_none(self) -> Value:
        return Operation.create("torch.constant.none", results=[self._none_type]).result

    def const_str(self, v: str) -> Value:
        return Operation.create(
            "torch.constant.str", results=[self._str_type], attributes={"value": StringAttr.get(v)}
        ).result

    def int_list(self, values: Sequence[int]) -> Value:
        items = [self.const_int(v) for v in values]
        return Operation.create("torch.prim.ListConstruct", results=[self._int_list_type], operands=items).result

    def list_of(self, items: Sequence[Value], element: str) -> Value:
        t = Type.parse(f"!torch.list<{element}>")
        return Operation.create("torch.prim.ListConstruct", results=[t], operands=list(items)).result

    def scalar_literal(self, value: float | int | bool, element: str) -> Value:
        """A rank-1, one-element ``torch.vtensor.literal`` (how graph scalars are inlined);
        INVALID_ARGUMENT if ``element`` cannot represent ``value``."""
        dt = DataType.from_mlir_name(element)
        array = dt.scalar_array(value, f"{element} scalar literal")
        tt = TensorType((1,), element)
        # The literal's type is inferred from its value's: signless integers read as
        # signed, so an unsigned literal keeps its ``ui`` element type.
        attr_type = (
            RankedTensorType.get([1], Type.parse(element))
            if dt.is_integer and dt.is_unsigned
            else builtin_tensor_type(tt)
        )
        if dt.bits < 8:  # i1 / i4 have no byte-per-element buffer form: a splat of the value
            splat = IntegerAttr.get(IntegerType.get_signless(dt.bits), int(array[0]))
            attr = DenseElementsAttr.get_splat(attr_type, splat)
        else:
            attr = DenseElementsAttr.get(array.tobytes(), type=attr_type)
        return Operation.create("torch.vtensor.literal", results=[tt.to_type()], attributes={"value": attr}).result

    # ---- generic op ----------------------------------------------------------
    def op(self, name: str, operands: Sequence[Value], results: Sequence[Type] | Type) -> Value | list[Value]:
        result_types = [results] if isinstance(results, Type) else list(results)
        op = Operation.create(name, results=result_types, operands=list(operands))
        if len(result_types) == 1:
            return op.result
        return list(op.results)

    # ---- layout ----------------------------------------------------------------
    def permute(self, value: Value, perm: Sequence[int]) -> Value:
        tt = TensorType.of(value)
        out = tt.with_dims([tt.dims[p] for p in perm])
        return self.op("torch.aten.permute", [value, self.int_list(perm)], out.to_type())

    def expand(self, value: Value, dims: Sequence[int]) -> Value:
        tt = TensorType.of(value)
        return self.op(
            "torch.aten.expand",
            [value, self.int_list(dims), self.const_bool(False)],
            tt.with_dims(dims).to_type(),
        )

    def to_dtype(self, value: Value, torch_element: str, torch_code: int) -> Value:
        """``torch.aten.to.dtype`` (non_blocking=false, copy=false, memory_format=none)."""
        tt = TensorType.of(value)
        return self.op(
            "torch.aten.to.dtype",
            [value, self.const_int(torch_code), self.const_bool(False), self.const_bool(False), self.const_none()],
            tt.with_element(torch_element).to_type(),
        )

    def to_builtin(self, value: Value) -> Value:
        tt = TensorType.of(value)
        return self.op("torch_c.to_builtin_tensor", [value], builtin_tensor_type(tt))

    def from_builtin(self, value: Value, element: str) -> Value:
        tt = TensorType.of(value)
        return self.op("torch_c.from_builtin_tensor", [value], tt.with_element(element).to_type())

    def materialized(self, value: Value) -> Value:
        """``value`` behind a ``util.optimization_barrier``: IREE computes it in a dispatch of
        its own instead of folding the ops that made it (a widening cast, say) into its consumer."""
        tt = TensorType.of(value)
        builtin = self.to_builtin(value)
        kept = Operation.create("util.optimization_barrier", results=[builtin.type], operands=[builtin]).result
        return self.from_builtin(kept, tt.element)

    def overwrite(self, value: Value, target: Value) -> None:
        Operation.create("torch.overwrite.tensor.contents", results=[], operands=[value, target])


__all__ = ["DYNAMIC", "TensorType", "TorchBuilder", "builtin_tensor_type", "vtensor_type", "F32Type"]
