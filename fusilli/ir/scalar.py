"""Scalar arithmetic helpers for building the bodies of fused elementwise regions.

Values are builtin scalars (``f32``, signless ``i32`` ...); their torch element
spelling (``si32``, ``ui8``, ``i1``) is carried alongside so conversions know
signedness.
"""

from __future__ import annotations

import re

from fusilli.ir.bindings import FloatAttr, IntegerAttr, Type, Value, arith
from fusilli.ir.torch import builtin_element_type

_FLOAT_RE = re.compile(r"^(f\d+|bf16|f8E\w+)$")


def is_float(elem: str) -> bool:
    return bool(_FLOAT_RE.match(elem))


def int_bits(elem: str) -> int:
    if elem == "i1":
        return 1
    m = re.fullmatch(r"[su]?i(\d+)", elem)
    if not m:
        raise ValueError(f"not an integer element type: {elem}")
    return int(m.group(1))


def float_bits(elem: str) -> int:
    return {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}.get(elem, 8)


def is_unsigned(elem: str) -> bool:
    return elem.startswith("ui") or elem == "i1"


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
        if float_bits(dst) > float_bits(src):
            return arith.ExtFOp(dst_t, v).result
        return arith.TruncFOp(dst_t, v).result
    if is_float(src):
        return (arith.FPToUIOp if is_unsigned(dst) else arith.FPToSIOp)(dst_t, v).result
    if is_float(dst):
        return (arith.UIToFPOp if is_unsigned(src) else arith.SIToFPOp)(dst_t, v).result
    sb, db = int_bits(src), int_bits(dst)
    if db > sb:
        return (arith.ExtUIOp if is_unsigned(src) else arith.ExtSIOp)(dst_t, v).result
    if db < sb:
        return arith.TruncIOp(dst_t, v).result
    return v
