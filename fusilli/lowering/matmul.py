"""Matmul lowering: ``torch.aten.matmul`` on logical operands."""

from __future__ import annotations

from fusilli import ir
from fusilli.backend.rules import CPU_LOW_PRECISION_VIA_F32, CPU_MATMUL_GEMM_CONFIG, vector_isa
from fusilli.backend.targets import cpu_vendor
from fusilli.ir.torch import builtin_element_type
from fusilli.lowering.emit import EmitContext
from fusilli.lowering.registry import register_lowering
from fusilli.ops.matmul import MatmulNode, accumulator_type
from fusilli.tensor import data_type_of
from fusilli.types import DataType


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
    # A CPU without native bf16/f16 dot products widens the operands once where
    # they are read and runs an f32 matmul (rule cpu-low-precision-via-f32).
    compute = ctx.choose("compute")
    if compute is not None and compute.rule is CPU_LOW_PRECISION_VIA_F32:
        operand = DataType.FLOAT
    a, b = ctx.cast(ctx.input("A"), operand), ctx.cast(ctx.input("B"), operand)
    algorithm = ctx.choose("algorithm")
    if algorithm is not None and algorithm.rule is CPU_MATMUL_GEMM_CONFIG:
        ctx.define("C", _configured_gemm(ctx, a, b))
        return
    if compute is not None and compute.rule is CPU_LOW_PRECISION_VIA_F32 and DataType.BFLOAT16 in (a_dt, b_dt):
        # IREE's data tiling looks through a widening cast to the bf16 operand and
        # picks bf16 encodings, for which a CPU without avx512bf16 has no fast
        # kernel: materialize the f32 operands so the matmul really is f32.
        a, b = ctx.b.materialized(a), ctx.b.materialized(b)
    c = ctx.b.op("torch.aten.matmul", [a, b], ctx.result_type("C", element=acc))
    ctx.define("C", c)


def _configured_gemm(ctx: EmitContext, a: ir.Value, b: ir.Value) -> ir.Value:
    """The f32 product of ``a [.., M, K]`` and ``b [.., K, N]`` (2-D, or one batch dim both have)
    as ``linalg.matmul`` / ``linalg.batch_matmul`` with the lowering config of the target's CPU
    (rule cpu-matmul-gemm-config; gemm_config.user_matmul_compilation_info). torch-mlir would
    emit the same op, to which IREE gives its own config (an 8x8 register tile on AVX2)."""
    from fusilli.passes.gemm_config import user_matmul_compilation_info

    at, bt = ir.TensorType.of(a), ir.TensorType.of(b)
    *batch, m, k = at.dims
    n = bt.dims[-1]
    f32 = builtin_element_type("f32")
    zero = ir.arith.ConstantOp(f32, 0.0).result
    init = ir.linalg.fill(zero, outs=[ir.tensor.EmptyOp([*batch, m, n], f32).result])
    lhs, rhs = ctx.b.to_builtin(a), ctx.b.to_builtin(b)
    b_t = ctx.node.tensor("B")
    if list(b_t.physical_order) != list(range(b_t.rank)):
        # A transposed B (a linear layer's weight as W^T) is copied row-major in a dispatch of its
        # own: folded into the GEMM, B would be read transposed along the vectorized N dimension.
        rhs = ir.fusion_barrier(rhs)
    gemm = ir.linalg.batch_matmul if batch else ir.linalg.matmul
    product = gemm(lhs, rhs, outs=[init])
    info = user_matmul_compilation_info(
        vector_isa(ctx.target), cpu_vendor(ctx.target.cpu), batch[0] if batch else None, m, n, k
    )
    if info is not None:
        product.owner.attributes["compilation_info"] = info
    return ctx.b.op("torch_c.from_builtin_tensor", [product], ctx.result_type("C", element=DataType.FLOAT))
