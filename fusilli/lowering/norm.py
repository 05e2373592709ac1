"""Normalization lowerings: ``batchnorm``, ``layernorm`` and ``rmsnorm``.

Float inputs are computed in the node's ``compute_data_type`` and rounded once
to each output's data type. BatchNorm and RMSNorm inference emit upstream's torch
ops (``native_batch_norm``, ``rms_norm``); their training forms are composites of
torch ops (mean, centered mean of squares, rsqrt: 3 CPU dispatches vs 4 for
``native_batch_norm``; rmsnorm training, which torch-mlir cannot lower natively).
LayerNorm with static shapes is two ``linalg.generic`` row reductions (the sum of
the row's leading quarter, then sums about that shift) that IREE fuses with Y into one CPU dispatch in
inference and training (upstream: 2 and 4); with dynamic dims it falls back to
``layer_norm`` / the two-pass composite.
"""

from __future__ import annotations

from fusilli import ir
from fusilli.ir.torch import builtin_element_type
from fusilli.lowering.emit import EmitContext
from fusilli.lowering.registry import register_lowering
from fusilli.ops.norm import BatchNormNode, LayerNormNode, RmsNormNode
from fusilli.types import DataType


@register_lowering(BatchNormNode)
def emit_batchnorm(node: BatchNormNode, ctx: EmitContext) -> None:
    b = ctx.b
    compute = node.compute_element()
    x = ctx.cast(ctx.input("X"), compute)
    c = node.tensor("X").dim[1]
    channel = [c if i == 1 else 1 for i in range(node.tensor("X").rank)]

    def per_channel(slot: str) -> ir.Value | None:
        """A [C] input viewed as [1, C, 1, ...] so it broadcasts against X."""
        if node.inputs.get(slot) is None:
            return None
        v = per_channel_1d(ctx, slot, compute)
        return b.op("torch.aten.view", [v, b.int_list(channel)], ir.vtensor_type(channel, compute.mlir_name))

    eps = node.scalar("EPSILON")
    y_type = ctx.result_type("Y", element=compute)
    if not node.training:
        # Upstream's op; its saved-stat results are unused placeholders in inference.
        stat_type = ir.vtensor_type([c], compute.mlir_name)
        y, _, _ = b.op(
            "torch.aten.native_batch_norm",
            [
                x,
                *[per_channel_1d(ctx, slot, compute) for slot in ("SCALE", "BIAS", "MEAN", "VAR")],
                b.const_bool(False),
                b.const_float(node.scalar("MOMENTUM")),
                b.const_float(eps),
            ],
            [y_type, stat_type, stat_type],
        )
        ctx.define("Y", y)
        return
    mean, inv_var = emit_moments(ctx, x, [0, *range(2, len(channel))], eps, compute)
    saved_type = ir.vtensor_type([c], compute.mlir_name)
    ctx.define("SAVED_MEAN", b.op("torch.aten.view", [mean, b.int_list([c])], saved_type))
    ctx.define("SAVED_INV_VARIANCE", b.op("torch.aten.view", [inv_var, b.int_list([c])], saved_type))
    y = b.op("torch.aten.sub.Tensor", [x, mean, b.const_int(1)], y_type)
    y = b.op("torch.aten.mul.Tensor", [y, inv_var], y_type)
    ctx.define("Y", emit_affine(ctx, y, per_channel("SCALE"), per_channel("BIAS")))


def per_channel_1d(ctx: EmitContext, slot: str, compute: DataType) -> ir.Value:
    """An optional [C] input in the compute type, or ``torch.constant.none``."""
    t = ctx.node.inputs.get(slot)
    return ctx.b.const_none() if t is None else ctx.cast(ctx.logical(t), compute)


def emit_moments(
    ctx: EmitContext, x: ir.Value, dims: list[int], eps: float, compute: DataType
) -> tuple[ir.Value, ir.Value]:
    """Mean and 1/sqrt(biased variance + eps) of ``x`` over ``dims`` (kept with extent 1)."""
    b = ctx.b
    tt = ir.TensorType.of(x)
    stat_type = ir.vtensor_type([1 if i in dims else d for i, d in enumerate(tt.dims)], compute.mlir_name)
    dim_list = b.int_list(dims)
    mean = b.op("torch.aten.mean.dim", [x, dim_list, b.const_bool(True), b.const_none()], stat_type)
    centered = b.op("torch.aten.sub.Tensor", [x, mean, b.const_int(1)], x.type)
    var = b.op(
        "torch.aten.mean.dim",
        [
            b.op("torch.aten.mul.Tensor", [centered, centered], x.type),
            b.int_list(dims),
            b.const_bool(True),
            b.const_none(),
        ],
        stat_type,
    )
    inv_var = b.op(
        "torch.aten.rsqrt",
        [b.op("torch.aten.add.Scalar", [var, b.const_float(eps), b.const_int(1)], stat_type)],
        stat_type,
    )
    return mean, inv_var


def emit_affine(ctx: EmitContext, y: ir.Value, scale: ir.Value | None, bias: ir.Value | None) -> ir.Value:
    """``y * scale + bias`` (either may be absent)."""
    b = ctx.b
    if scale is not None:
        y = b.op("torch.aten.mul.Tensor", [y, scale], y.type)
    if bias is not None:
        y = b.op("torch.aten.add.Tensor", [y, bias, b.const_int(1)], y.type)
    return y


def _optional_affine(ctx: EmitContext, slot: str, compute: DataType) -> ir.Value | None:
    t = ctx.node.inputs.get(slot)
    return None if t is None else ctx.cast(ctx.logical(t), compute)


def _normalized_affine(ctx: EmitContext, slot: str, compute: DataType) -> ir.Value:
    """An optional [1, ...] scale/bias squeezed to the normalized shape (X dims but the first), or none."""
    v = _optional_affine(ctx, slot, compute)
    if v is None:
        return ctx.b.const_none()
    dims = ir.TensorType.of(v).dims[1:]
    return ctx.b.op("torch.aten.squeeze.dim", [v, ctx.b.const_int(0)], ir.vtensor_type(dims, compute.mlir_name))


def _normalized_shape(ctx: EmitContext) -> ir.Value:
    return ctx.b.int_list(ctx.node.tensor("X").dim[1:])


@register_lowering(LayerNormNode)
def emit_layernorm(node: LayerNormNode, ctx: EmitContext) -> None:
    b = ctx.b
    compute = node.compute_element()
    x = ctx.cast(ctx.input("X"), compute)
    y_type = ctx.result_type("Y", element=compute)
    xt = node.tensor("X")
    if not xt.dynamic_dims and compute.is_float:
        _emit_layernorm_one_pass(node, ctx, x, compute)
        return
    # Dynamic shapes: upstream's op in inference, a two-pass composite in training.
    eps = b.const_float(node.scalar("EPSILON"))
    if not node.training:
        scale, bias = (_normalized_affine(ctx, slot, compute) for slot in ("SCALE", "BIAS"))
        ctx.define(
            "Y",
            b.op("torch.aten.layer_norm", [x, _normalized_shape(ctx), scale, bias, eps, b.const_bool(False)], y_type),
        )
        return
    mean, inv_var = emit_moments(ctx, x, list(range(1, xt.rank)), node.scalar("EPSILON"), compute)
    y = b.op("torch.aten.sub.Tensor", [x, mean, b.const_int(1)], y_type)
    y = b.op("torch.aten.mul.Tensor", [y, inv_var], y_type)
    ctx.define(
        "Y", emit_affine(ctx, y, _optional_affine(ctx, "SCALE", compute), _optional_affine(ctx, "BIAS", compute))
    )
    ctx.define("MEAN", mean)
    ctx.define("INV_VARIANCE", inv_var)


def _emit_layernorm_one_pass(node: LayerNormNode, ctx: EmitContext, x: ir.Value, compute: DataType) -> None:
    """LayerNorm statistics by sums shifted by a robust estimate of the row mean: m0 =
    the mean of the row's leading quarter (``_shift_chunk``), then s1 = sum(x - m0) and
    s2 = sum((x - m0)^2) over the whole row, so mean = m0 + s1/n and var = s2/n - (s1/n)^2.
    Because m0 is the mean of a fixed fraction of the row it lies within 2 standard
    deviations of the mean, which bounds the cancellation in var (a factor of 5 at most)
    and keeps s1 small, so the mean stays exact to f32 rounding even for large values
    with a small spread.

    (A one-pass form shifted by the row's first element lost all precision when that
    element was an outlier: rows of 0 then 1000 +- 0.01 came out 4.6 off; the full-row
    m0 of the corrected two-pass algorithm is as accurate but reads each row twice, ~20%
    slower.) Each sum is a ``linalg.generic`` reduction over the row; the second reads the
    first's result, and IREE's aggressive dispatch fusion (the CPU layernorm rules,
    fusilli/backend/rules.py) puts both, the finalization and Y in one dispatch.
    Inference finishes in torch ops (which the epilogue-fusion pass makes one
    elementwise region with the affine and any user epilogue). Training finalizes the
    stats in a generic over [B, 1, ...] that also yields the stat outputs in their own
    data types, and Y reads them.
    """
    b = ctx.b
    xt = node.tensor("X")
    rank, batch = xt.rank, xt.dim[0]
    n = 1
    for d in xt.dim[1:]:
        n *= d
    eps = node.scalar("EPSILON")
    f = builtin_element_type(compute.mlir_name)
    xb = b.to_builtin(x)
    dims = [ir.AffineDimExpr.get(i) for i in range(rank)]
    identity = ir.AffineMap.get(rank, 0, dims)
    row = ir.AffineMap.get(rank, 0, [dims[0]])
    init = ir.linalg.fill(ir.arith.ConstantOp(f, 0.0).result, outs=[ir.tensor.EmptyOp([batch], f).result])
    reduce_rows = ir.iterator_types("parallel", *["reduction"] * (rank - 1))
    lead, shift_count = _shift_chunk(xb, xt.dim, xt.stride)
    row_sum = ir.linalg.GenericOp([init.type], [lead], [init], ir.indexing_maps(identity, row), reduce_rows)
    block = row_sum.regions[0].blocks.append(f, f)
    with ir.InsertionPoint(block):
        xv, acc = block.arguments
        ir.linalg.YieldOp([ir.arith.AddFOp(acc, xv).result])
    # Sums about the shift m0: x - m0 is exact for x near m0 (Sterbenz), and sum(x - m0)
    # corrects m0's distance from the mean.
    centered = ir.linalg.GenericOp(
        [init.type, init.type],
        [xb, row_sum.result],
        [init, init],
        ir.indexing_maps(identity, row, row, row),
        reduce_rows,
    )
    block = centered.regions[0].blocks.append(f, f, f, f)
    with ir.InsertionPoint(block):
        xv, total, acc1, acc2 = block.arguments
        dv = ir.arith.SubFOp(xv, ir.arith.MulFOp(total, ir.arith.ConstantOp(f, 1.0 / shift_count).result).result).result
        ir.linalg.YieldOp(
            [ir.arith.AddFOp(acc1, dv).result, ir.arith.AddFOp(acc2, ir.arith.MulFOp(dv, dv).result).result]
        )
    sums_results = [row_sum.result, *centered.results]
    stat_dims = [batch] + [1] * (rank - 1)
    stat_type = ir.vtensor_type(stat_dims, compute.mlir_name)

    if not node.training:
        total, s1, s2 = (
            b.op(
                "torch.aten.view",
                [_from_builtin(b, r, [batch], compute), b.int_list(stat_dims)],
                stat_type,
            )
            for r in sums_results
        )
        rough_mean = b.op("torch.aten.mul.Scalar", [total, b.const_float(1.0 / shift_count)], stat_type)
        correction = b.op("torch.aten.mul.Scalar", [s1, b.const_float(1.0 / n)], stat_type)
        var = b.op(
            "torch.aten.relu",
            [
                b.op(
                    "torch.aten.sub.Tensor",
                    [
                        b.op("torch.aten.mul.Scalar", [s2, b.const_float(1.0 / n)], stat_type),
                        b.op("torch.aten.mul.Tensor", [correction, correction], stat_type),
                        b.const_int(1),
                    ],
                    stat_type,
                )
            ],
            stat_type,
        )
        inv_var = b.op(
            "torch.aten.rsqrt",
            [b.op("torch.aten.add.Scalar", [var, b.const_float(eps), b.const_int(1)], stat_type)],
            stat_type,
        )
        x_type = ctx.result_type("Y", element=compute)
        centered_x = b.op(
            "torch.aten.sub.Tensor",
            [b.op("torch.aten.sub.Tensor", [x, rough_mean, b.const_int(1)], x_type), correction, b.const_int(1)],
            x_type,
        )
    else:
        # Finalize over [B, 1, ...]: f32 stats for Y, plus the stat outputs in their types.
        out_types = [compute, compute] + [
            node.data_type(slot) for slot in ("MEAN", "INV_VARIANCE") if node.data_type(slot) != compute
        ]
        extra = len(out_types) > 2
        if extra and len(out_types) != 4:  # one stat in the compute type, one not: cast both
            out_types = [compute, compute, node.data_type("MEAN"), node.data_type("INV_VARIANCE")]
        elems = [builtin_element_type(t.mlir_name) for t in out_types]
        empties = [ir.tensor.EmptyOp(stat_dims, e).result for e in elems]
        fin = ir.linalg.GenericOp(
            [e.type for e in empties],
            sums_results,
            empties,
            ir.indexing_maps(row, row, row, *[identity] * len(empties)),
            ir.iterator_types(*["parallel"] * rank),
        )
        block = fin.regions[0].blocks.append(f, f, f, *elems)
        with ir.InsertionPoint(block):
            a0, a1, a2 = block.arguments[:3]
            inv_n = ir.arith.ConstantOp(f, 1.0 / n).result
            correction = ir.arith.MulFOp(a1, inv_n).result
            var = ir.arith.SubFOp(ir.arith.MulFOp(a2, inv_n).result, ir.arith.MulFOp(correction, correction).result)
            var = ir.arith.MaximumFOp(var.result, ir.arith.ConstantOp(f, 0.0).result).result
            inv = ir.math.RsqrtOp(ir.arith.AddFOp(var, ir.arith.ConstantOp(f, eps).result).result).result
            results = [
                ir.arith.AddFOp(
                    ir.arith.MulFOp(a0, ir.arith.ConstantOp(f, 1.0 / shift_count).result).result, correction
                ).result,
                inv,
            ]
            for v, t, e in zip(list(results), out_types[2:], elems[2:]):
                results.append(_round(v, compute, t, e))
            ir.linalg.YieldOp(results)
        mean, inv_var = (_from_builtin(b, r, stat_dims, compute) for r in fin.results[:2])
        stat_out = [mean, inv_var]
        if len(out_types) == 4:
            stat_out = [_from_builtin(b, r, stat_dims, t) for r, t in zip(fin.results[2:], out_types[2:])]
        ctx.define("MEAN", stat_out[0])
        ctx.define("INV_VARIANCE", stat_out[1])
        centered_x = b.op("torch.aten.sub.Tensor", [x, mean, b.const_int(1)], ctx.result_type("Y", element=compute))
    y = b.op("torch.aten.mul.Tensor", [centered_x, inv_var], ctx.result_type("Y", element=compute))
    ctx.define(
        "Y", emit_affine(ctx, y, _optional_affine(ctx, "SCALE", compute), _optional_affine(ctx, "BIAS", compute))
    )


# The shift is the mean of the leading 1/SHIFT_CHUNK_DIVISOR (or more) of each row. For any
# k-element subset, |subset mean - mean| <= std * sqrt(n / k), so the shifted sums'
# cancellation, sum((x - shift)^2) / n over var = 1 + (shift - mean)^2 / var, is at most
# 1 + SHIFT_CHUNK_DIVISOR whatever the row holds (a 1-element shift: 1 + n).
# 4 against the full-row first pass (1) and 8, training 4096x768 affine f32, min ms,
# alternated: AVX-512 0.44-0.47 / 0.38-0.39 / 0.38, AVX2 0.61 / 0.46-0.53 / 0.46-0.47;
# 8 puts the mean of 1e4-then-U(-1,1) rows 1.3e-6 off (PyTorch 3.9e-7), 4 passes the
# outlier-row tests of test_numerics_edges.py.
SHIFT_CHUNK_DIVISOR = 4


def _shift_chunk(x: ir.Value, dims: list[int], strides: list[int]) -> tuple[ir.Value, int]:
    """The leading chunk of each row of ``x`` whose mean is the shift, and its element count.

    The chunk is cut along the normalized dim that is outermost in memory, so it is one
    contiguous run of each stored row. A cut that would leave that dim 1 long takes the
    whole row instead: IREE folds the unit dim away, the two reductions then collapse to
    different shapes and no longer share a dispatch.
    """
    cut = max(range(1, len(dims)), key=lambda i: strides[i])
    sizes = list(dims)
    sizes[cut] = -(-dims[cut] // SHIFT_CHUNK_DIVISOR)
    if sizes[cut] == 1:
        sizes[cut] = dims[cut]
    count = 1
    for d in sizes[1:]:
        count *= d
    if sizes[cut] == dims[cut]:
        return x, count
    result = ir.RankedTensorType.get(sizes, ir.RankedTensorType(x.type).element_type)
    return ir.tensor.ExtractSliceOp(result, x, [], [], [], [0] * len(dims), sizes, [1] * len(dims)).result, count


def _from_builtin(b: ir.TorchBuilder, v: ir.Value, dims: list[int], dt: DataType) -> ir.Value:
    return b.op("torch_c.from_builtin_tensor", [v], ir.vtensor_type(dims, dt.mlir_name))


def _round(v: ir.Value, src: DataType, dst: DataType, dst_type: ir.Type) -> ir.Value:
    """A float scalar of type ``src`` converted to ``dst`` (rounded to nearest)."""
    if src.bits > dst.bits:
        return ir.arith.TruncFOp(dst_type, v).result
    return ir.arith.ExtFOp(dst_type, v).result


@register_lowering(RmsNormNode)
def emit_rmsnorm(node: RmsNormNode, ctx: EmitContext) -> None:
    b = ctx.b
    compute = node.compute_element()
    x = ctx.cast(ctx.input("X"), compute)
    if not node.training:
        scale = _normalized_affine(ctx, "SCALE", compute)
        eps = b.const_float(node.scalar("EPSILON"))
        y = b.op("torch.aten.rms_norm", [x, _normalized_shape(ctx), scale, eps], ctx.result_type("Y", element=compute))
        ctx.define("Y", y)
        return
    # Training: torch-mlir does not lower native_rms_norm's training form, so compose it.
    dims = ir.TensorType.of(x).dims
    stat_type = ir.vtensor_type([dims[0]] + [1] * (len(dims) - 1), compute.mlir_name)
    square = b.op("torch.aten.mul.Tensor", [x, x], x.type)
    mean_square = b.op(
        "torch.aten.mean.dim",
        [square, b.int_list(list(range(1, len(dims)))), b.const_bool(True), b.const_none()],
        stat_type,
    )
    inv_rms = b.op(
        "torch.aten.rsqrt",
        [
            b.op(
                "torch.aten.add.Scalar", [mean_square, b.const_float(node.scalar("EPSILON")), b.const_int(1)], stat_type
            )
        ],
        stat_type,
    )
    y = b.op("torch.aten.mul.Tensor", [x, inv_rms], ctx.result_type("Y", element=compute))
    ctx.define("Y", emit_affine(ctx, y, _optional_affine(ctx, "SCALE", compute), None))
    ctx.define("INV_RMS", inv_rms)
