"""Scalar arithmetic helpers for building the bodies of fused elementwise regions.

Values are builtin scalars (``f32``, signless ``i32`` ...); their torch element
spelling (``si32``, ``ui8``, ``i1``) is carried alongside so conversions know
signedness.
"""

from __future__ import annotations

from fusilli.ir.bindings import FloatAttr, IntegerAttr, Type, Value, arith
from fusilli.ir.torch import builtin_element_type
from fusilli.types import DataType


def is_float(elem: str) -> bool:
    return DataType.from_mlir_name(elem).is_float


def bits(elem: str) -> int:
    return DataType.from_mlir_name(elem).bits


def is_unsigned(elem: str) -> bool:
    return DataType.from_mlir_name(elem).is_unsigned


def constant(elem: str, value: float | int | bool) -> Value:
    t = builtin_element_type(elem)
    if is_float(elem):
        return arith.ConstantOp(t, FloatAttr.get(t, float(value))).result
    return arith.ConstantOp(t, IntegerAttr.get(t, int(value))).result


def convert(v: Value, src: str, dst: str) -> Value:
    """Converts a scalar between torch element types (PyTorch cast semantics)."""
    if src == dst:
        return v
    dst_t: Type = builtin_element_type(dst)
    if dst == "i1":
        zero = constant(src, 0)
        if is_float(src):
            return arith.CmpFOp(arith.CmpFPredicate.UNE, v, zero).result
        return arith.CmpIOp(arith.CmpIPredicate.ne, v, zero).result
    if is_float(src) and is_float(dst):
        if src in ("bf16", "f16") and dst in ("bf16", "f16"):
            return arith.TruncFOp(dst_t, arith.ExtFOp(Type.parse("f32"), v).result).result
        if bits(dst) > bits(src):
            return arith.ExtFOp(dst_t, v).result
        return arith.TruncFOp(dst_t, v).result
    if is_float(src):
        return (arith.FPToUIOp if is_unsigned(dst) else arith.FPToSIOp)(dst_t, v).result
    if is_float(dst):
        return (arith.UIToFPOp if is_unsigned(src) else arith.SIToFPOp)(dst_t, v).result
    sb, db = bits(src), bits(dst)
    if db > sb:
        return (arith.ExtUIOp if is_unsigned(src) else arith.ExtSIOp)(dst_t, v).result
    if db < sb:
        return arith.TruncIOp(dst_t, v).result
    return v
