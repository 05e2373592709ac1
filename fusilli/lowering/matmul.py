"""Matmul lowering: ``torch.aten.matmul`` on logical operands."""

from __future__ import annotations

import math

from fusilli import ir
from fusilli.backend.rules import CPU_LOW_PRECISION_VIA_F32, CPU_MATMUL_GEMM_CONFIG, vector_isa
from fusilli.backend.targets import Target, cpu_vendor
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
    with the lowering config of the target's CPU (rule cpu-matmul-gemm-config): see
    ``configured_gemm``."""
    from fusilli.backend.rules import problem_of

    # A transposed B (a linear layer's weight as W^T: the rule's b_layout) is copied row-major first.
    transposed = problem_of(ctx.node).fact("b_layout") == "transposed"
    return configured_gemm(ctx.b, ctx.target, a, b, copy_rhs=transposed)


def configured_gemm(builder: ir.TorchBuilder, target: Target, a: ir.Value, b: ir.Value, *, copy_rhs: bool) -> ir.Value:
    """The f32 product (a torch vtensor) of f32 vtensors ``a [*batch, M, K]`` and ``b [*batch, K,
    N]`` as ``linalg.matmul`` (no batch) or ``linalg.batch_matmul`` (the batch dims collapsed into
    one) with ``gemm_config.user_matmul_compilation_info`` for ``target``'s CPU, where torch-mlir
    would leave IREE its own config (an 8x8 register tile on AVX2). ``copy_rhs``: ``b`` is a
    transposed view (a permute of the tensor in memory), copied row-major in a dispatch of its own
    (a fusion barrier): folded into the GEMM, it would be read transposed along the vectorized N."""
    from fusilli.passes.gemm_config import user_matmul_compilation_info

    at, bt = ir.TensorType.of(a), ir.TensorType.of(b)
    *batch, m, k = at.dims
    n = bt.dims[-1]
    f32 = builtin_element_type("f32")
    lhs, rhs = builder.to_builtin(a), builder.to_builtin(b)
    count = math.prod(batch)
    if len(batch) > 1:  # one batch dim for linalg.batch_matmul (a free reshape of dense values)
        lhs = ir.tensor.CollapseShapeOp(
            ir.RankedTensorType.get([count, m, k], f32), lhs, _reassociation(len(batch))
        ).result
        rhs = ir.tensor.CollapseShapeOp(
            ir.RankedTensorType.get([count, k, n], f32), rhs, _reassociation(len(batch))
        ).result
    if copy_rhs:
        rhs = ir.fusion_barrier(rhs)
    zero = ir.arith.ConstantOp(f32, 0.0).result
    shape = [count, m, n] if batch else [m, n]
    init = ir.linalg.fill(zero, outs=[ir.tensor.EmptyOp(shape, f32).result])
    gemm = ir.linalg.batch_matmul if batch else ir.linalg.matmul
    product = gemm(lhs, rhs, outs=[init])
    info = user_matmul_compilation_info(vector_isa(target), cpu_vendor(target.cpu), count if batch else None, m, n, k)
    if info is not None:
        product.owner.attributes["compilation_info"] = info
    if len(batch) > 1:
        product = ir.tensor.ExpandShapeOp(
            ir.RankedTensorType.get([*batch, m, n], f32), product, _reassociation(len(batch)), [], [*batch, m, n]
        ).result
    result_type = at.with_dims([*batch, m, n]).with_element("f32")
    return builder.op("torch_c.from_builtin_tensor", [product], result_type.to_type())


def _reassociation(batch_rank: int) -> ir.ArrayAttr:
    """Collapsing ``batch_rank`` leading batch dims into one, keeping the matrix's two dims."""
    return ir.reassociation([list(range(batch_rank)), [batch_rank], [batch_rank + 1]])
