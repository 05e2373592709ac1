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
"""

from __future__ import annotations

from fusilli import ir


def _index(v: int) -> ir.Value:
    return ir.arith.ConstantOp(ir.IndexType.get(), v).result


def _tap(out: ir.Value, tap: ir.Value, stride: int, dilation: int, pad: int, extent: int):
    """(clamped source index, in-bounds flag) of ``out * stride + tap * dilation - pad``."""
    src = ir.arith.AddIOp(ir.arith.MulIOp(out, _index(stride)).result, ir.arith.MulIOp(tap, _index(dilation)).result)
    src = ir.arith.SubIOp(src.result, _index(pad)).result
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
