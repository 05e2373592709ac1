"""Reduction lowering, following upstream Fusilli (sum.dim_IntList, amin/amax,
mean.dim, prims.prod) with the keepdim shape restored after ``prims.prod``."""

from __future__ import annotations

from fusilli import ir
from fusilli.errors import ErrorCode
from fusilli.ir.torch import DYNAMIC
from fusilli.lowering.emit import EmitContext
from fusilli.lowering.registry import register_lowering
from fusilli.ops.reduction import ReductionMode, ReductionNode


@register_lowering(ReductionNode)
def emit_reduction(node: ReductionNode, ctx: EmitContext) -> None:
    b = ctx.b
    mode = node.attrs.mode
    if mode is None:
        raise node.error(ErrorCode.ATTRIBUTE_NOT_SET, "reduction mode not set")
    compute = node.compute_element()
    x = ctx.cast(ctx.input("X"), compute)
    dims = node.reduced_dims()
    y_type = ctx.result_type("Y", element=compute)
    x_type = ir.TensorType.of(x).to_type()

    def keepdim_reduce(op_name: str, v: ir.Value, *extra: ir.Value) -> ir.Value:
        return b.op(op_name, [v, b.int_list(dims), b.const_bool(True), *extra], y_type)

    def product(v: ir.Value) -> ir.Value:
        x_tt = ir.TensorType.of(v)
        if DYNAMIC in x_tt.dims:
            # torch-mlir cannot lower prims.prod on dynamic shapes: one prod.dim_int per reduced dim.
            for d in dims:
                tt = ir.TensorType.of(v)
                reduced = tt.with_dims(tt.dims[:d] + (1,) + tt.dims[d + 1 :]).to_type()
                v = b.op("torch.aten.prod.dim_int", [v, b.const_int(d), b.const_bool(True), b.const_none()], reduced)
            return v
        # prims.prod (as upstream) drops the reduced dims; unsqueeze them back (keepdim), lowest first.
        kept = [d for i, d in enumerate(x_tt.dims) if i not in dims]
        v = b.op("torch.prims.prod", [v, b.int_list(dims), b.const_none()], x_tt.with_dims(kept).to_type())
        for d in dims:
            tt = ir.TensorType.of(v)
            v = b.op(
                "torch.aten.unsqueeze", [v, b.const_int(d)], tt.with_dims(tt.dims[:d] + (1,) + tt.dims[d:]).to_type()
            )
        return v

    if mode == ReductionMode.ADD:
        y = keepdim_reduce("torch.aten.sum.dim_IntList", x, b.const_none())
    elif mode == ReductionMode.MIN:
        y = keepdim_reduce("torch.aten.amin", x)
    elif mode == ReductionMode.MAX:
        y = keepdim_reduce("torch.aten.amax", x)
    elif mode == ReductionMode.AMAX:
        y = keepdim_reduce("torch.aten.amax", b.op("torch.aten.abs", [x], x_type))
    elif mode == ReductionMode.AVG:
        y = keepdim_reduce("torch.aten.mean.dim", x, b.const_none())
    elif mode == ReductionMode.NORM1:
        y = keepdim_reduce("torch.aten.sum.dim_IntList", b.op("torch.aten.abs", [x], x_type), b.const_none())
    elif mode == ReductionMode.NORM2:
        square = b.op("torch.aten.mul.Tensor", [x, x], x_type)
        y = b.op("torch.aten.sqrt", [keepdim_reduce("torch.aten.sum.dim_IntList", square, b.const_none())], y_type)
    elif mode == ReductionMode.MUL:
        y = product(x)
    elif mode == ReductionMode.MUL_NO_ZEROS:
        mask_type = ir.TensorType.of(x).with_element("i1").to_type()
        nonzero = b.op("torch.aten.ne.Scalar", [x, b.const_int(0)], mask_type)
        y = product(b.op("torch.aten.where.ScalarOther", [nonzero, x, b.const_int(1)], x_type))
    else:
        raise node.error(ErrorCode.NOT_IMPLEMENTED, f"reduction mode {mode.name} is not implemented")
    ctx.define("Y", y)
