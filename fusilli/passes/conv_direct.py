"""A small padded convolution as one ``linalg.generic`` that reads through the padding.

Below the size where convs take IREE's im2col path (``rules.CPU_CONV_IM2COL_MIN_FLOPS``)
a channels-last conv is ``tensor.pad`` + ``linalg.conv_2d_nhwc_hwcf``: two dispatches,
the pad's a full copy of the input. Here the conv is a reduction generic over
``(n, oh, ow, k, r, s, c)`` whose body reads the unpadded NHWC input with
``tensor.extract`` at clamped indices and zeroes the taps that fall into the
padding (the same read as the Winograd input transform's), so a padded conv and
its fused epilogue are one dispatch (upstream Fusilli: 2).

The im2col GEMM's patch gather (``padded_patches``) reads through the padding the same
way, as does the weight gradient's row-phase gather (``row_phase_patches``), and ``col2im``
is its adjoint for strided data gradients: each input position gathers the GEMM columns
of the taps that land on it.

Grouped convs of several channels per group (``grouped_conv``) are a reduction generic whose
operands are the filter's taps, views of the input padded by ``padded_copy`` (the same clamped
read, written once).
"""

from __future__ import annotations

from fusilli import ir
from fusilli.passes import gemm_config


def _index(v: int) -> ir.Value:
    return ir.arith.ConstantOp(ir.IndexType.get(), v).result


def _tap(out: ir.Value, tap: ir.Value, stride: int, dilation: int, pad: int, extent: int):
    """(clamped source index, in-bounds flag) of ``out * stride + tap * dilation - pad``."""
    src = ir.arith.AddIOp(ir.arith.MulIOp(out, _index(stride)).result, ir.arith.MulIOp(tap, _index(dilation)).result)
    return _source(src.result, pad, extent)


def _source(padded: ir.Value, pad: int, extent: int):
    """(clamped source index, in-bounds flag) of ``padded - pad`` in an extent of ``extent``."""
    src = ir.arith.SubIOp(padded, _index(pad)).result
    ok = ir.arith.CmpIOp(
        ir.arith.CmpIPredicate.ult, src, _index(extent)
    ).result  # unsigned: negative indices are out of bounds too
    clamped = ir.arith.MinSIOp(ir.arith.MaxSIOp(src, _index(0)).result, _index(extent - 1)).result
    return clamped, ok


def padded_direct_conv(x_nhwc: ir.Value, w_hwcf: ir.Value, out_dims, stride, padding, dilation) -> ir.Value:
    """``y[n, oh, ow, k] = sum_{r,s,c} x_padded[n, oh*st + r*dil, ow*st + s*dil, c] * w[r, s, c, k]`` in f32."""
    f32 = ir.Type.parse("f32")
    xt = ir.RankedTensorType(x_nhwc.type)
    h, w = xt.get_dim_size(1), xt.get_dim_size(2)
    zero = ir.arith.ConstantOp(f32, 0.0).result
    init = ir.linalg.fill(zero, outs=[ir.tensor.EmptyOp(list(out_dims), f32).result])
    d = [ir.AffineDimExpr.get(i) for i in range(7)]  # n, oh, ow, k, r, s, c
    w_map = ir.AffineMap.get(7, 0, [d[4], d[5], d[6], d[3]])
    y_map = ir.AffineMap.get(7, 0, [d[0], d[1], d[2], d[3]])
    conv = ir.linalg.GenericOp(
        [init.type],
        [w_hwcf],
        [init],
        ir.indexing_maps(w_map, y_map),
        ir.iterator_types(*["parallel"] * 4, *["reduction"] * 3),
    )
    block = conv.regions[0].blocks.append(f32, f32)
    with ir.InsertionPoint(block):
        n, oh, ow, _, r, s, ch = (ir.linalg.IndexOp(i).result for i in range(7))
        row, row_ok = _tap(oh, r, stride[0], dilation[0], padding[0], h)
        col, col_ok = _tap(ow, s, stride[1], dilation[1], padding[1], w)
        v = ir.tensor.ExtractOp(x_nhwc, [n, row, col, ch]).result
        v = ir.arith.SelectOp(ir.arith.AndIOp(row_ok, col_ok).result, v, zero).result
        ir.linalg.YieldOp([ir.math.FmaOp(v, block.arguments[0], block.arguments[1]).result])
    return conv.result


def padded_patches(
    x_nhwc: ir.Value, out_hw, kernel, stride, padding, dilation, flipped: bool = False, channels_first: bool = False
) -> ir.Value:
    """The im2col patches ``p[n, oh, ow, r, s, c] = x_padded[n, oh*st + r*dil, ow*st + s*dil, c]``
    (``flipped``: tap ``(R-1-r, S-1-s)`` at ``(r, s)``, for a spatially flipped filter;
    ``channels_first``: laid out ``p[n, oh, ow, c, r, s]``).

    One all-parallel generic reading the unpadded input like ``padded_direct_conv``:
    no padded copy of the input is made.
    """
    xt = ir.RankedTensorType(x_nhwc.type)
    elem = xt.element_type
    n, h, w, c = (xt.get_dim_size(i) for i in range(4))
    zero = ir.arith.ConstantOp(elem, 0.0).result
    dims = [n, *out_hw, c, *kernel] if channels_first else [n, *out_hw, *kernel, c]
    empty = ir.tensor.EmptyOp(dims, elem).result
    # The generic iterates (n, oh, ow, r, s, c) either way, so its vectors run along C, which
    # the input holds contiguous; channels first, they are written with a stride of R*S.
    # (Iterating (n, oh, ow, c, r, s) vectorized along S, 3 wide: 3x3 2x512x7x7 dgrad's gather
    # 271 against 218 us, one thread.)
    d = [ir.AffineDimExpr.get(i) for i in range(6)]
    out_map = (
        ir.AffineMap.get(6, 0, [d[0], d[1], d[2], d[5], d[3], d[4]]) if channels_first else ir.AffineMap.get_identity(6)
    )
    gather = ir.linalg.GenericOp(
        [empty.type], [], [empty], ir.indexing_maps(out_map), ir.iterator_types(*["parallel"] * 6)
    )
    block = gather.regions[0].blocks.append(elem)
    with ir.InsertionPoint(block):
        b, oh, ow, r, s, ch = (ir.linalg.IndexOp(i).result for i in range(6))
        if flipped:
            r = ir.arith.SubIOp(_index(kernel[0] - 1), r).result
            s = ir.arith.SubIOp(_index(kernel[1] - 1), s).result
        row, row_ok = _tap(oh, r, stride[0], dilation[0], padding[0], h)
        col, col_ok = _tap(ow, s, stride[1], dilation[1], padding[1], w)
        v = ir.tensor.ExtractOp(x_nhwc, [b, row, col, ch]).result
        ir.linalg.YieldOp([ir.arith.SelectOp(ir.arith.AndIOp(row_ok, col_ok).result, v, zero).result])
    return gather.result


def row_phase_patches(x_nhwc: ir.Value, out_hw, kernel, stride, padding, row_blocks: int) -> ir.Value:
    """The A operand of a weight gradient's row-block GEMMs (conv_layout._row_block_wgrad):
    ``p[n, ph, s, c, h2, ow] = x_padded[n, h2*sh + ph, ow*sw + s, c]`` for the ``sh`` row phases
    ``ph`` of X and ``h2 < OH + row_blocks - 1``: the S taps along W of every output column, on
    every padded input row, so R / sh times fewer than the im2col patches. Filter row
    ``r = q*sh + ph`` of output row ``oh`` reads phase ``ph``'s row ``oh + q``: block ``q``'s
    rows start ``q * OW`` into the flattened ``(h2, ow)``, a plain offset.

    One all-parallel generic reading the unpadded input through clamped indices (like
    ``padded_patches``), vectorized along the output columns; rows past the padded input are
    zero (the phases' rows a last block ``R`` leaves short does not read).
    """
    xt = ir.RankedTensorType(x_nhwc.type)
    elem = xt.element_type
    n, h, w, c = (xt.get_dim_size(i) for i in range(4))
    (oh, ow), (_, fx), (sh, sw) = out_hw, kernel, stride
    zero = ir.arith.ConstantOp(elem, 0.0).result
    empty = ir.tensor.EmptyOp([n, sh, fx, c, oh + row_blocks - 1, ow], elem).result
    gather = ir.linalg.GenericOp(
        [empty.type], [], [empty], ir.indexing_maps(ir.AffineMap.get_identity(6)), ir.iterator_types(*["parallel"] * 6)
    )
    block = gather.regions[0].blocks.append(elem)
    with ir.InsertionPoint(block):
        b, ph, s, ch, h2, col_out = (ir.linalg.IndexOp(i).result for i in range(6))
        row, row_ok = _tap(h2, ph, sh, 1, padding[0], h)
        col, col_ok = _tap(col_out, s, sw, 1, padding[1], w)
        v = ir.tensor.ExtractOp(x_nhwc, [b, row, col, ch]).result
        ir.linalg.YieldOp([ir.arith.SelectOp(ir.arith.AndIOp(row_ok, col_ok).result, v, zero).result])
    return gather.result


def col2im(cols: ir.Value, out_dims, stride, padding, dilation) -> ir.Value:
    """The data gradient ``dx[n, h, w, c]`` from the columns ``cols[n, oh, ow, r, s, c] = (DY x W)``
    of a strided conv: ``sum`` over the taps ``(r, s)`` with ``h + pad - r*dil = oh*stride`` (and
    the same along ``w``) of ``cols[n, oh, ow, r, s, c]``.

    One all-parallel generic over ``dx`` (vectorized along C, which ``cols`` holds
    contiguous) whose body reads every tap with ``tensor.extract`` and zeroes those that
    fall between the strides or outside DY: a gather, so no tap's writes race.
    """
    ct = ir.RankedTensorType(cols.type)
    elem = ct.element_type
    _, oh, ow, fy, fx, _ = (ct.get_dim_size(i) for i in range(6))
    zero = ir.arith.ConstantOp(elem, 0.0).result
    empty = ir.tensor.EmptyOp(list(out_dims), elem).result
    gather = ir.linalg.GenericOp(
        [empty.type], [], [empty], ir.indexing_maps(ir.AffineMap.get_identity(4)), ir.iterator_types(*["parallel"] * 4)
    )
    block = gather.regions[0].blocks.append(elem)
    with ir.InsertionPoint(block):
        n, h, w, ch = (ir.linalg.IndexOp(i).result for i in range(4))
        rows = [_col_source(h, r * dilation[0] - padding[0], stride[0], oh) for r in range(fy)]
        cols_ = [_col_source(w, s * dilation[1] - padding[1], stride[1], ow) for s in range(fx)]
        acc = None
        for r, (row, row_ok) in enumerate(rows):
            for s, (col, col_ok) in enumerate(cols_):
                v = ir.tensor.ExtractOp(cols, [n, row, col, _index(r), _index(s), ch]).result
                v = ir.arith.SelectOp(ir.arith.AndIOp(row_ok, col_ok).result, v, zero).result
                acc = v if acc is None else ir.arith.AddFOp(acc, v).result
        ir.linalg.YieldOp([acc])
    return gather.result


def _col_source(out: ir.Value, offset: int, stride: int, extent: int):
    """(clamped DY index, flag) of the DY position ``(out - offset) / stride`` a tap at
    ``offset`` (``tap * dilation - pad``) of input position ``out`` reads: flagged where
    ``out - offset`` is a multiple of ``stride`` within ``[0, extent * stride)``."""
    src = ir.arith.SubIOp(out, _index(offset)).result if offset else out
    ok = ir.arith.CmpIOp(ir.arith.CmpIPredicate.ult, src, _index((extent - 1) * stride + 1)).result
    clamped = ir.arith.MinSIOp(ir.arith.MaxSIOp(src, _index(0)).result, _index((extent - 1) * stride)).result
    if stride == 1:
        return clamped, ok
    on_stride = ir.arith.CmpIOp(
        ir.arith.CmpIPredicate.eq, ir.arith.RemUIOp(clamped, _index(stride)).result, _index(0)
    ).result
    return ir.arith.DivUIOp(clamped, _index(stride)).result, ir.arith.AndIOp(ok, on_stride).result


def padded_copy(x_nhwc: ir.Value, padding) -> ir.Value:
    """The NHWC ``x_nhwc`` with ``padding`` (H, W) zero rows and columns on both sides, written by
    one all-parallel generic that reads the input through clamped indices (like ``padded_patches``,
    vectorized along C) behind a compute barrier: its consumer reads views of it.

    ``tensor.pad`` became a fill of the padded tensor and a copy of the input into it: the grouped
    conv 3x3 g32 s2 8x256x56x56 (a 25.7 MB input) ran 3.02-3.13 ms with it, 2.58-2.76 this way
    (alternating processes, three rounds); 8x256x28x28 1.09-1.13 -> 1.05-1.08.
    """
    xt = ir.RankedTensorType(x_nhwc.type)
    elem = xt.element_type
    n, h, w, c = (xt.get_dim_size(i) for i in range(4))
    zero = ir.arith.ConstantOp(elem, 0.0).result
    empty = ir.tensor.EmptyOp([n, h + 2 * padding[0], w + 2 * padding[1], c], elem).result
    copy = ir.linalg.GenericOp(
        [empty.type], [], [empty], ir.indexing_maps(ir.AffineMap.get_identity(4)), ir.iterator_types(*["parallel"] * 4)
    )
    block = copy.regions[0].blocks.append(elem)
    with ir.InsertionPoint(block):
        b, row, col, ch = (ir.linalg.IndexOp(i).result for i in range(4))
        row, row_ok = _source(row, padding[0], h)
        col, col_ok = _source(col, padding[1], w)
        v = ir.tensor.ExtractOp(x_nhwc, [b, row, col, ch]).result
        ir.linalg.YieldOp([ir.arith.SelectOp(ir.arith.AndIOp(row_ok, col_ok).result, v, zero).result])
    return ir.fusion_barrier(copy.result)


# The iteration dims of grouped_conv's generic, in order, and those of its operands.
_GROUPED_DIMS = ("n", "oh", "ow", "g", "kg", "cg")
_GROUPED_X_DIMS, _GROUPED_W_DIMS, _GROUPED_Y_DIMS = (
    ("n", "oh", "ow", "g", "cg"),
    ("g", "cg", "kg"),
    ("n", "oh", "ow", "g", "kg"),
)


def grouped_conv(x_padded: ir.Value, w_krsc: ir.Value, groups: int, out_dims, stride, dilation, isa: str) -> ir.Value:
    """``y[n, oh, ow, g, kg] = sum_{r,s,cg} x_padded[n, oh*st + r*dil, ow*st + s*dil, g, cg] *
    w[g*Kg + kg, r, s, cg]``: a grouped conv over the padded NHWC input, its result
    ``[N, Ho, Wo, G*Kg]`` NHWC (rules.CPU_CONV_GROUPED_DIRECT), with ``isa``'s register tile
    (gemm_config.grouped_conv_compilation_info).

    One reduction generic over ``(n, oh, ow, g, kg, cg)`` whose operands are the R*S taps: each a
    strided slice of the input ``[N, Ho, Wo, G, Cg]`` (a view its dispatch loads, no copy; the
    input comes padded by ``padded_copy``) and a ``[G, Cg, Kg]`` slice of the filter, transposed to
    ``[R, S, G, Cg, Kg]`` behind a barrier (a small dispatch of its own) so that a group's output
    channels are contiguous. Every operand
    map is a projected permutation, so IREE vectorizes along ``kg`` with the input broadcast
    (a tap as an affine offset in one operand's map, ``oh*st + r*dil``, left the conv scalar). The
    products are summed before the accumulator is added once: IREE's vectorizer recognizes a
    reduction only through a single combining op. Dims of extent 1 (one image, one channel per
    group) are left out of the generic: IREE folds them away, and the lowering config with them.

    Its 2*R*S + 1 operands are over IREE's 16 a dispatch may fuse for a 3x3 filter, so there an
    elementwise epilogue is a dispatch of its own.
    """
    xt = ir.RankedTensorType(x_padded.type)
    f32 = xt.element_type
    n, hp, wp, _ = (xt.get_dim_size(i) for i in range(4))
    _, fy, fx, per_group = ir.RankedTensorType(w_krsc.type).shape
    _, oh, ow, k = out_dims
    out_per_group = k // groups
    extent = {"n": n, "oh": oh, "ow": ow, "g": groups, "kg": out_per_group, "cg": per_group}
    dims = [name for name in _GROUPED_DIMS if extent[name] > 1]
    position = {name: i for i, name in enumerate(dims)}

    def kept(names: tuple[str, ...]) -> list[str]:
        return [name for name in names if name in position]

    def operand_type(names: tuple[str, ...]) -> ir.RankedTensorType:
        return ir.RankedTensorType.get([extent[name] for name in kept(names)], f32)

    def operand_map(names: tuple[str, ...]) -> ir.AffineMap:
        return ir.AffineMap.get(len(dims), 0, [ir.AffineDimExpr.get(position[name]) for name in kept(names)])

    x5 = ir.expand_shape(x_padded, [[0], [1], [2], [3, 4]], [n, hp, wp, groups, per_group])
    w5 = ir.expand_shape(w_krsc, [[0, 1], [2], [3], [4]], [groups, out_per_group, fy, fx, per_group])
    w_init = ir.tensor.EmptyOp([fy, fx, groups, per_group, out_per_group], f32).result
    w_rsgck = ir.fusion_barrier(ir.linalg.transpose(w5, outs=[w_init], permutation=[2, 3, 0, 4, 1]).results[0])
    x_tap, w_tap = operand_type(_GROUPED_X_DIMS), operand_type(_GROUPED_W_DIMS)
    operands = []
    for r in range(fy):
        for s in range(fx):
            x_offsets = [0, r * dilation[0], s * dilation[1], 0, 0]
            x_sizes = [n, oh, ow, groups, per_group]
            x_strides = [1, stride[0], stride[1], 1, 1]
            operands.append(ir.tensor.ExtractSliceOp(x_tap, x5, [], [], [], x_offsets, x_sizes, x_strides).result)
            w_sizes = [1, 1, groups, per_group, out_per_group]
            operands.append(
                ir.tensor.ExtractSliceOp(w_tap, w_rsgck, [], [], [], [r, s, 0, 0, 0], w_sizes, [1] * 5).result
            )
    zero = ir.arith.ConstantOp(f32, 0.0).result
    y_type = operand_type(_GROUPED_Y_DIMS)
    init = ir.linalg.fill(zero, outs=[ir.tensor.EmptyOp(y_type.shape, f32).result])
    x_map, w_map = operand_map(_GROUPED_X_DIMS), operand_map(_GROUPED_W_DIMS)
    conv = ir.linalg.GenericOp(
        [y_type],
        operands,
        [init],
        ir.indexing_maps(*[x_map, w_map] * (fy * fx), operand_map(_GROUPED_Y_DIMS)),
        ir.iterator_types(*["reduction" if name == "cg" else "parallel" for name in dims]),
    )
    block = conv.regions[0].blocks.append(*[f32] * (len(operands) + 1))
    with ir.InsertionPoint(block):
        args = list(block.arguments)
        taps = None
        for i in range(0, len(operands), 2):
            product = ir.arith.MulFOp(args[i], args[i + 1]).result
            taps = product if taps is None else ir.arith.AddFOp(taps, product).result
        ir.linalg.YieldOp([ir.arith.AddFOp(args[-1], taps).result])
    info = gemm_config.grouped_conv_compilation_info(isa, {name: extent[name] for name in dims})
    if info is not None:
        conv.attributes["compilation_info"] = info
    return _as_nhwk(conv.result, out_per_group > 1, [n, oh, ow, k])


def _as_nhwk(value: ir.Value, kg_kept: bool, nhwk: list[int]) -> ir.Value:
    """grouped_conv's result, ``(n, oh, ow, g, kg)`` without its unit dims, as ``[N, Ho, Wo, K]``:
    ``g`` and ``kg`` collapsed into K, the unit dims put back."""
    vt = ir.RankedTensorType(value.type)
    shape = list(vt.shape)
    if kg_kept:
        last = len(shape) - 1
        value = ir.tensor.CollapseShapeOp(
            ir.RankedTensorType.get([*shape[:-2], nhwk[3]], vt.element_type),
            value,
            ir.reassociation([[i] for i in range(last - 1)] + [[last - 1, last]]),
        ).result
    # Each dim of [N, Ho, Wo, K] joins the group of the next one kept (K always is).
    reassociation: list[list[int]] = []
    pending: list[int] = []
    for i, d in enumerate(nhwk):
        pending.append(i)
        if d > 1 or i == 3:
            reassociation.append(pending)
            pending = []
    return value if len(reassociation) == 4 else ir.expand_shape(value, reassociation, list(nhwk))
