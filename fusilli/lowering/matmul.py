"""Matmul lowering: ``torch.aten.matmul`` on logical operands."""

from __future__ import annotations

from fusilli.lowering.emit import EmitContext
from fusilli.lowering.registry import register_lowering
from fusilli.ops.matmul import MatmulNode, accumulator_type
from fusilli.tensor import data_type_of


@register_lowering(MatmulNode)
def emit_matmul(node: MatmulNode, ctx: EmitContext) -> None:
    a_t, b_t, c_t = node.tensor("A"), node.tensor("B"), node.tensor("C")
    a_dt, b_dt = data_type_of(a_t), data_type_of(b_t)
    acc = accumulator_type(a_dt, b_dt, data_type_of(c_t), node.compute_data_type)
    # Same-typed operands go in as they are with an accumulator-typed result:
    # torch-mlir lowers that to a linalg.matmul extending its operands in the
    # body (f16 x f16 -> f32, i8 x i8 -> i32), one dispatch. Mixed operands
    # (int4 x f16) are first brought to the wider type, so they work at any rank.
    operand = a_dt if a_dt == b_dt else acc if a_dt.is_float == b_dt.is_float else (a_dt if a_dt.is_float else b_dt)
    a, b = ctx.cast(ctx.input("A"), operand), ctx.cast(ctx.input("B"), operand)
    c = ctx.b.op("torch.aten.matmul", [a, b], ctx.result_type("C", element=acc))
    ctx.define("C", c)
