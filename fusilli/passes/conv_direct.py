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
read, written once); their weight gradients (``grouped_wgrad``) contractions with a result per
filter tap over chunks of output rows that two such gathers lay out flat. A depthwise conv's
weight gradient (``depthwise_wgrad``) sums each output row's products, column pairs at a time, with a
result per filter tap over strided views of the input and DY.
"""

from __future__ import annotations

from typing import NamedTuple

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


def depth_taps(x_ndhwc: ir.Value, out_depth: int, taps: int, stride: int, padding: int, dilation: int) -> ir.Value:
    """A 3-D conv's input with its depth taps gathered into the channels, ``[N*Do, H, W, T*C]``:
    ``x'[n*Do + do, h, w, t*C + c] = x[n, do*stride + t*dilation - padding, h, w, c]``, zero outside
    ``x`` (rules.depth_folded: the 2-D conv fusilli-conv-layout folds a 3-D one into). One
    all-parallel generic over ``(n, do, h, w, t, c)``, vectors along C as ``x`` holds it; a
    reshape where every tap reads its own plane (one tap, stride 1, no padding)."""
    xt = ir.RankedTensorType(x_ndhwc.type)
    elem = xt.element_type
    n, d, h, w, c = (xt.get_dim_size(i) for i in range(5))
    groups = [[0, 1], [2], [3], [4, 5]]
    if taps == 1 and stride == 1 and padding == 0 and out_depth == d:
        return ir.collapse_shape(ir.expand_shape(x_ndhwc, [[0], [1], [2], [3], [4, 5]], [n, d, h, w, 1, c]), groups)
    zero = ir.arith.ConstantOp(elem, 0.0).result
    empty = ir.tensor.EmptyOp([n, out_depth, h, w, taps, c], elem).result
    gather = ir.linalg.GenericOp(
        [empty.type],
        [],
        [empty],
        ir.indexing_maps(ir.AffineMap.get_identity(6)),
        ir.iterator_types(*["parallel"] * 6),
    )
    block = gather.regions[0].blocks.append(elem)
    with ir.InsertionPoint(block):
        b, do, row, col, t, ch = (ir.linalg.IndexOp(i).result for i in range(6))
        plane, ok = _tap(do, t, stride, dilation, padding, d)
        v = ir.tensor.ExtractOp(x_ndhwc, [b, plane, row, col, ch]).result
        ir.linalg.YieldOp([ir.arith.SelectOp(ok, v, zero).result])
    return ir.collapse_shape(gather.result, groups)


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


class _IterationDims:
    """A generic's iteration dims by name, in ``order``, those of extent 1 left out (IREE folds
    them away, and a lowering config with them) unless named in ``keep``: the types and indexing
    maps of operands given by the names of their dims."""

    def __init__(self, order: tuple[str, ...], extent: dict[str, int], element: ir.Type, keep: tuple[str, ...] = ()):
        self.names = [name for name in order if extent[name] > 1 or name in keep]
        self._position = {name: i for i, name in enumerate(self.names)}
        self._extent, self._element = extent, element

    def kept(self, names: tuple[str, ...]) -> list[str]:
        return [name for name in names if name in self._position]

    def type(self, names: tuple[str, ...]) -> ir.RankedTensorType:
        return ir.RankedTensorType.get([self._extent[name] for name in self.kept(names)], self._element)

    def map(self, names: tuple[str, ...]) -> ir.AffineMap:
        dims = [ir.AffineDimExpr.get(self._position[name]) for name in self.kept(names)]
        return ir.AffineMap.get(len(self.names), 0, dims)


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
    space = _IterationDims(_GROUPED_DIMS, extent, f32)
    dims, operand_type, operand_map = space.names, space.type, space.map

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


# Addresses this far apart share an L1 set (x86's 4 KiB aliasing).
_ALIASING_BYTES = 4096

# The iteration dims of grouped_wgrad's contraction generics, in order, and those of its operands.
_WGRAD_DIMS = ("n", "chunk", "g", "cg", "kg", "p")
_WGRAD_X_DIMS, _WGRAD_DY_DIMS, _WGRAD_OUT_DIMS = (
    ("n", "chunk", "p", "g", "cg"),
    ("n", "chunk", "p", "g", "kg"),
    ("n", "chunk", "g", "cg", "kg"),
)


def grouped_wgrad(
    x_nhwc: ir.Value, dy_nhwc: ir.Value, groups: int, kernel, stride, padding, dilation, isa: str
) -> ir.Value:
    """``dw[g*Kg + kg, r, s, cg] = sum_{n,oh,ow} dy[n, oh, ow, g*Kg + kg] *
    x_padded[n, oh*st + r*dil, ow*st + s*dil, g*Cg + cg]``: the weight gradient of a grouped conv
    (rules.CPU_CONV_GROUPED_WGRAD) from its NHWC input and output gradient, as the KRSC filter
    ``[G*Kg, R, S, Cg]`` in f32.

    A tap's sum over every output position is a contraction of two views only if both walk the
    positions with one stride: a tap as an offset in a map left IREE's code scalar, and so did two
    reduction dims (rows and columns). So the output positions are cut into chunks of ``rows``
    output rows (gemm_config.grouped_wgrad_chunk_rows), and two gathers (``_chunked_input``,
    ``_chunked_gradient``, each behind a barrier) lay a chunk out flat with one row pitch ``Wq``:
    DY's rows padded with zero columns to ``Wq``, and X's rows the chunk's taps reach, split into
    the stride's phases, so that tap ``(r, s)`` reads X at one flat offset from the position it
    multiplies. One generic over ``(n, chunk, g, cg, kg | p)`` with a result per tap (the taps of
    one phase, up to gemm_config.GROUPED_WGRAD_TAPS_PER_GENERIC) sums a chunk's positions into per-chunk partial
    sums, vectorized along a group's output channels with X broadcast
    (gemm_config.grouped_wgrad_compilation_info): it reads DY and a chunk of X once for all its taps
    (a generic per tap read them nine times, 1.7-2.6x slower), and one last generic adds up the
    chunks. A chunk stays in cache while a workgroup runs every group over it: where groups share
    cache lines, chunks of whole images ran slower (8x128x56x56, a tap 1.12-1.49 ms against
    0.83-0.91 for chunks of 7 rows). Dims of extent 1 are left out of the generics (IREE folds them
    away, and the lowering config with them)."""
    f32 = ir.RankedTensorType(x_nhwc.type).element_type
    n, _, _, c = ir.RankedTensorType(x_nhwc.type).shape
    _, oh, ow, k = ir.RankedTensorType(dy_nhwc.type).shape
    fy, fx = kernel
    per_group, out_per_group = c // groups, k // groups
    # Tap r of the filter reads padded row oh*st + r*dil = (oh + r*dil // st)*st + r*dil % st: phase
    # r*dil % st of the rows, shifted by r*dil // st rows of it (columns alike).
    row_taps = [divmod(r * dilation[0], stride[0]) for r in range(fy)]
    col_taps = [divmod(s * dilation[1], stride[1]) for s in range(fx)]
    reach_rows, reach_cols = max(a for a, _ in row_taps), max(a for a, _ in col_taps)
    pitch = ow + reach_cols  # Wq: a chunk's flat row pitch, DY's columns past Wo zero
    partial_bytes = 4 * fy * fx * groups * per_group * out_per_group
    rows = gemm_config.grouped_wgrad_chunk_rows(
        oh, pitch, reach_rows, c * stride[0] * stride[1], k, min(per_group, out_per_group), partial_bytes
    )
    chunks = oh // rows
    # The last row's columns past Wo are left out of the views: the last tap's view then ends on
    # the gathered chunk's last element.
    positions = (rows - 1) * pitch + ow
    # A position's C (or K) f32 apart a multiple of 4 KiB (C = 1024), a vector step's positions fell
    # into one L1 set: there the gathers' channels are one group more than C and K, a tap's
    # contraction (one generic per tap) 199-213 -> 113-122 us (8x1024x7x7) for gathers twice as slow (58 -> 116 us: the
    # clamped channel read no longer a vector load); at C = 512 that ran even (s2 8x512x28x28, a call
    # 5.12 -> 5.17 ms), at C = 128 it lost (10.7 -> 15.0 ms).
    x_groups = groups + int((4 * c) % _ALIASING_BYTES == 0)
    dy_groups = groups + int((4 * k) % _ALIASING_BYTES == 0)
    x_flat = _chunked_input(x_nhwc, chunks, rows, pitch, reach_rows, stride, padding, x_groups * per_group)
    dy_flat = _chunked_gradient(dy_nhwc, chunks, rows, pitch, dy_groups * out_per_group)
    extent = {"n": n, "chunk": chunks, "g": groups, "cg": per_group, "kg": out_per_group, "p": positions}
    space = _IterationDims(_WGRAD_DIMS, extent, f32, keep=("p",))
    dims, operand_type, operand_map = space.names, space.type, space.map

    x6 = ir.expand_shape(
        x_flat, [[0], [1], [2], [3], [4, 5]], [*ir.RankedTensorType(x_flat.type).shape[:4], x_groups, per_group]
    )
    dy5 = ir.expand_shape(dy_flat, [[0], [1], [2], [3, 4]], [n, chunks, rows * pitch, dy_groups, out_per_group])
    dy_type = operand_type(_WGRAD_DY_DIMS)
    dy_view = ir.tensor.ExtractSliceOp(
        dy_type, dy5, [], [], [], [0] * 5, [n, chunks, positions, groups, out_per_group], [1] * 5
    ).result
    x_type, out_type = operand_type(_WGRAD_X_DIMS), operand_type(_WGRAD_OUT_DIMS)
    zero = ir.arith.ConstantOp(f32, 0.0).result
    init = ir.linalg.fill(zero, outs=[ir.tensor.EmptyOp(out_type.shape, f32).result])
    taps = []  # (X's phase, (r, s), X's view) per tap
    for r, (row_shift, row_phase) in enumerate(row_taps):
        for s, (col_shift, col_phase) in enumerate(col_taps):
            offset = row_shift * pitch + col_shift
            x_view = ir.tensor.ExtractSliceOp(
                x_type,
                x6,
                [],
                [],
                [],
                [0, 0, row_phase * stride[1] + col_phase, offset, 0, 0],
                [n, chunks, 1, positions, groups, per_group],
                [1] * 6,
            ).result
            taps.append((row_phase * stride[1] + col_phase, (r, s), x_view))
    partials = ir.tensor.EmptyOp([fy, fx, *out_type.shape], f32).result
    rank = len(out_type.shape)
    x_map, dy_map, out_map = (operand_map(names) for names in (_WGRAD_X_DIMS, _WGRAD_DY_DIMS, _WGRAD_OUT_DIMS))
    # A generic's taps read one phase of X: the nine taps of a stride-2 conv in one generic (views
    # into four phase planes) ran 2.7 ms a call at s2 8x512x28x28, in four generics by phase 0.88
    # (0.31 -> 0.09 ms at s2 1x512x28x28, 2.63 -> 1.95 at s2 8x256x56x56; HAL profiler, fastest).
    batches = []
    for phase in sorted({phase for phase, _, _ in taps}):
        of_phase = [(tap, view) for p, tap, view in taps if p == phase]
        for first in range(0, len(of_phase), gemm_config.GROUPED_WGRAD_TAPS_PER_GENERIC):
            batches.append(of_phase[first : first + gemm_config.GROUPED_WGRAD_TAPS_PER_GENERIC])
    for batch in batches:
        contraction = ir.linalg.GenericOp(
            [out_type] * len(batch),
            [dy_view, *(view for _, view in batch)],
            [init] * len(batch),
            ir.indexing_maps(dy_map, *[x_map] * len(batch), *[out_map] * len(batch)),
            ir.iterator_types(*["reduction" if name == "p" else "parallel" for name in dims]),
        )
        block = contraction.regions[0].blocks.append(*[f32] * (2 * len(batch) + 1))
        with ir.InsertionPoint(block):
            dyv, xs, accs = block.arguments[0], block.arguments[1 : len(batch) + 1], block.arguments[len(batch) + 1 :]
            ir.linalg.YieldOp(
                [ir.arith.AddFOp(acc, ir.arith.MulFOp(xv, dyv).result).result for xv, acc in zip(xs, accs)]
            )
        info = gemm_config.grouped_wgrad_compilation_info(isa, {name: extent[name] for name in dims}, len(batch))
        if info is not None:
            contraction.attributes["compilation_info"] = info
        for ((r, s), _), result in zip(batch, contraction.results):
            partials = ir.tensor.InsertSliceOp(
                result, partials, [], [], [], [r, s] + [0] * rank, [1, 1, *out_type.shape], [1] * (rank + 2)
            ).result
    return _sum_chunks(partials, space.kept(_WGRAD_OUT_DIMS), extent, (fy, fx))


def _chunked_input(
    x_nhwc: ir.Value, chunks: int, rows: int, pitch: int, reach_rows: int, stride, padding, channels: int
):
    """``[N, chunks, phases, (rows + reach_rows) * pitch, channels]``: for each chunk of ``rows``
    output rows, the padded input rows its taps read (``rows + reach_rows`` of each row phase),
    split into the stride's phases (row phase major) and laid out flat with row pitch ``pitch``;
    ``channels`` from C up, zero past C (``_channel``)."""
    xt = ir.RankedTensorType(x_nhwc.type)
    f32 = xt.element_type
    n, h, w, c = xt.shape
    chunk_rows = rows + reach_rows

    def source(index: list[ir.Value]):
        b, chunk, phase_row, phase_col, j, col, ch = index
        row = ir.arith.AddIOp(ir.arith.MulIOp(chunk, _index(rows)).result, j).result
        row = ir.arith.AddIOp(ir.arith.MulIOp(row, _index(stride[0])).result, phase_row).result
        col = ir.arith.AddIOp(ir.arith.MulIOp(col, _index(stride[1])).result, phase_col).result
        row, row_ok = _source(row, padding[0], h)
        col, col_ok = _source(col, padding[1], w)
        ch, ok = _channel(ch, c, channels, ir.arith.AndIOp(row_ok, col_ok).result)
        return [b, row, col, ch], ok

    gathered = _gather(x_nhwc, [n, chunks, stride[0], stride[1], chunk_rows, pitch, channels], source)
    return ir.tensor.CollapseShapeOp(
        ir.RankedTensorType.get([n, chunks, stride[0] * stride[1], chunk_rows * pitch, channels], f32),
        gathered,
        ir.reassociation([[0], [1], [2, 3], [4, 5], [6]]),
    ).result


def _chunked_gradient(dy_nhwc: ir.Value, chunks: int, rows: int, pitch: int, channels: int) -> ir.Value:
    """``[N, chunks, rows * pitch, channels]``: DY's rows in chunks of ``rows``, each row padded with
    zero columns to ``pitch``, ``channels`` from K up, zero past K (``_channel``)."""
    dt = ir.RankedTensorType(dy_nhwc.type)
    n, oh, ow, k = dt.shape

    def source(index: list[ir.Value]):
        b, chunk, i, col, ch = index
        row = ir.arith.AddIOp(ir.arith.MulIOp(chunk, _index(rows)).result, i).result
        col, col_ok = _source(col, 0, ow)
        ch, ok = _channel(ch, k, channels, col_ok)
        return [b, row, col, ch], ok

    gathered = _gather(dy_nhwc, [n, chunks, rows, pitch, channels], source)
    return ir.tensor.CollapseShapeOp(
        ir.RankedTensorType.get([n, chunks, rows * pitch, channels], dt.element_type),
        gathered,
        ir.reassociation([[0], [1], [2, 3], [4]]),
    ).result


def _channel(ch: ir.Value, extent: int, channels: int, ok: ir.Value):
    """(channel index, in-bounds flag) of a gather writing ``channels`` of a tensor's ``extent``:
    ``ch`` and ``ok`` as they are where the two agree (the read's innermost index the gather's own,
    so IREE vectorizes it), else ``ch`` clamped and flagged in bounds below ``extent``."""
    if channels == extent:
        return ch, ok
    ch, ch_ok = _source(ch, 0, extent)
    return ch, ir.arith.AndIOp(ok, ch_ok).result


def _sum_chunks(partials: ir.Value, partial_dims: list[str], extent: dict[str, int], kernel) -> ir.Value:
    """The KRSC filter ``[G*Kg, R, S, Cg]`` from the taps' per-chunk sums ``partials``
    (``[R, S, *partial_dims]``, ``partial_dims`` the kept ones of ``n, chunk, g, cg, kg``): one
    generic over ``(g, kg, r, s, cg | n, chunk)``."""
    f32 = ir.RankedTensorType(partials.type).element_type
    summed = [name for name in ("n", "chunk") if name in partial_dims]
    dims = ["g", "kg", "r", "s", "cg", *summed]
    position = {name: i for i, name in enumerate(dims)}
    groups, per_group, out_per_group = extent["g"], extent["cg"], extent["kg"]
    out_shape = [groups, out_per_group, kernel[0], kernel[1], per_group]
    init = ir.linalg.fill(ir.arith.ConstantOp(f32, 0.0).result, outs=[ir.tensor.EmptyOp(out_shape, f32).result])

    def affine(names) -> ir.AffineMap:
        return ir.AffineMap.get(len(dims), 0, [ir.AffineDimExpr.get(position[name]) for name in names])

    total = ir.sum_into(
        partials,
        init,
        affine(["r", "s", *partial_dims]),
        affine(["g", "kg", "r", "s", "cg"]),
        ["reduction" if name in summed else "parallel" for name in dims],
    )
    return ir.tensor.CollapseShapeOp(
        ir.RankedTensorType.get([groups * out_per_group, kernel[0], kernel[1], per_group], f32),
        total.result,
        ir.reassociation([[0, 1], [2], [3], [4]]),
    ).result


# The iteration dims of depthwise_wgrad's generics, in order (j: a pair of output columns), and
# those of its operands.
_DEPTHWISE_WGRAD_DIMS = ("n", "oh", "c", "j")
_DEPTHWISE_WGRAD_IN_DIMS, _DEPTHWISE_WGRAD_OUT_DIMS = ("n", "oh", "j", "c"), ("n", "oh", "c")


class _Strip(NamedTuple):
    """A rectangle of output positions: its first row and column, its rows and columns."""

    row: int
    col: int
    rows: int
    cols: int


class _Region(NamedTuple):
    """Output positions depthwise_wgrad sums in one generic: ``images x rows x 2*pairs`` of them,
    DY's at ``dy[b, dy_at[0] + i, dy_at[1] + j, :]`` and tap ``(r, s)``'s input at
    ``x[b, x_at[0] + i*st + r*dil, x_at[1] + j*st + s*dil, :]`` for region image ``b``, row ``i`` and
    column ``j``; a pair is two neighbouring columns, or, where ``paired_images``, image ``b`` and
    image ``b + images`` (``2*images`` images of ``2*pairs`` columns, any number)."""

    dy: ir.Value
    dy_at: tuple[int, int]
    x: ir.Value
    x_at: tuple[int, int]
    images: int
    rows: int
    pairs: int
    paired_images: bool = False


def depthwise_wgrad(x_nhwc: ir.Value, dy_nhwc: ir.Value, kernel, stride, padding, dilation, isa: str) -> ir.Value:
    """``dw[c, r, s] = sum_{n,oh,ow} x_padded[n, oh*st + r*dil, ow*st + s*dil, c] * dy[n, oh, ow, c]``:
    the weight gradient of a depthwise conv (rules.CPU_CONV_DEPTHWISE_WGRAD) from its NHWC input
    and output gradient, as the KRSC filter ``[C, R, S, 1]`` in f32.

    One reduction generic over ``(n, oh, c | j)`` with a result per filter tap (up to
    gemm_config.DEPTHWISE_WGRAD_TAPS_PER_GENERIC) sums each output row's products into per-row
    partial sums, vectorized along the channels (gemm_config.depthwise_wgrad_compilation_info): a
    tap's operands are strided views of the input and of DY, so each generic reads DY and the input
    once for all its taps. The columns go in pairs, ``j`` the pair: the body adds a tap's two
    products, then the accumulator. With one product (``acc + x * dy``) IREE makes the body a
    ``vector.contract`` whose only reduction is the unit column step and the channels a batch dim,
    and lowers it to scalar code (8x144x56x56: 22 ms; with pairs 0.7-0.9 ms).

    Views must stay inside their tensor, and a padded copy of the input costs as much as the sums
    (8x144x56x56: 0.65-0.77 ms). So the output positions whose taps all read inside the input (in
    whole column pairs) take views of the input and DY where they lie; the rows above and below
    them (one generic) and the columns left and right of them (another) are strips whose input,
    padded, and DY, with zero columns to whole pairs, small gathers lay out, the strips as images
    (``_strips``). Where fewer stay inside (gemm_config.DEPTHWISE_WGRAD_SPLIT_MIN_INSIDE), all
    positions are one strip. One generic sums the rows' partials into the filter (``_sum_rows``).
    As a depthwise conv of X with DY as the filter (the images joining the channels) it ran 4.6 ms
    at 8x144x56x56: IREE's conv reads its operands once per output row, and DY's transposition
    took 1.5 ms."""
    xt, dt = ir.RankedTensorType(x_nhwc.type), ir.RankedTensorType(dy_nhwc.type)
    f32 = xt.element_type
    n, h, w, c = xt.shape
    _, oh, ow, _ = dt.shape
    rows_inside = _taps_inside(oh, h, kernel[0], stride[0], padding[0], dilation[0])
    first_col, end_col = _taps_inside(ow, w, kernel[1], stride[1], padding[1], dilation[1])
    end_col = first_col + 2 * ((end_col - first_col) // 2)  # whole column pairs
    inside = _Strip(rows_inside[0], first_col, rows_inside[1] - rows_inside[0], end_col - first_col)
    conv = (kernel, stride, padding, dilation)
    if inside.rows * inside.cols >= gemm_config.DEPTHWISE_WGRAD_SPLIT_MIN_INSIDE * oh * ow:
        x_at = (inside.row * stride[0] - padding[0], inside.col * stride[1] - padding[1])
        regions = [_Region(dy_nhwc, (inside.row, inside.col), x_nhwc, x_at, n, inside.rows, inside.cols // 2)]
        above, below = (
            _Strip(0, 0, inside.row, ow),
            _Strip(inside.row + inside.rows, 0, oh - inside.row - inside.rows, ow),
        )
        left = _Strip(inside.row, 0, inside.rows, inside.col)
        right = _Strip(inside.row, inside.col + inside.cols, inside.rows, ow - inside.col - inside.cols)
        for strips in ((above, below), (left, right)):
            if any(strip.rows and strip.cols for strip in strips):
                regions.append(_strips(x_nhwc, dy_nhwc, [st for st in strips if st.rows and st.cols], conv))
    else:
        regions = [_strips(x_nhwc, dy_nhwc, [_Strip(0, 0, oh, ow)], conv)]
    taps = [(r, s) for r in range(kernel[0]) for s in range(kernel[1])]
    total_rows = sum(region.images * region.rows for region in regions)
    partials = ir.tensor.EmptyOp([len(taps), total_rows, c], f32).result
    first_row = 0
    for region in regions:
        for t, result in enumerate(_tap_sums(region, taps, stride, dilation, isa)):
            rows = region.images * region.rows
            partials = ir.tensor.InsertSliceOp(
                _as_rows(result, rows), partials, [], [], [], [t, first_row, 0], [1, rows, c], [1, 1, 1]
            ).result
        first_row += region.images * region.rows
    return _sum_rows(partials, kernel, isa)


def _taps_inside(out: int, extent: int, kernel: int, stride: int, pad: int, dilation: int) -> tuple[int, int]:
    """The output indices ``[first, end)`` (along one spatial dim) whose taps all read inside the
    input's ``extent``: ``o*stride - pad >= 0`` and ``o*stride - pad + (kernel-1)*dilation < extent``."""
    first = min(out, -(-pad // stride))
    end = (extent - 1 + pad - (kernel - 1) * dilation) // stride + 1
    return first, max(first, min(out, end))


def _strips(x_nhwc: ir.Value, dy_nhwc: ir.Value, strips: list[_Strip], conv) -> _Region:
    """One or two strips of output positions as a region of ``N * len(strips)`` images: two gathers
    (behind barriers) lay out DY's positions ``[N, strips, rows, 2*pairs, C]`` (zero past a
    strip's own) and the padded input rows and columns their taps read; a whole DY of whole
    column pairs, and an input whose taps stay inside it, are read where they lie. A whole DY of
    odd width in an even batch pairs its images instead, read where it lies: at 8x960x7x7 the
    zero column's gather took 22-66 us of a 0.17 ms call."""
    kernel, stride, padding, dilation = conv
    f32 = ir.RankedTensorType(x_nhwc.type).element_type
    n, h, w, c = ir.RankedTensorType(x_nhwc.type).shape
    _, oh, ow, _ = ir.RankedTensorType(dy_nhwc.type).shape
    rows, pairs = max(strip.rows for strip in strips), max(-(-strip.cols // 2) for strip in strips)
    whole = strips == [_Strip(0, 0, oh, ow)]
    # A whole DY of odd width pairs its images instead (no gather for a zero column), where they are even.
    paired_images = whole and ow % 2 == 1 and n % 2 == 0
    cols = ow if paired_images else 2 * pairs
    x_rows = (rows - 1) * stride[0] + (kernel[0] - 1) * dilation[0] + 1
    x_cols = (cols - 1) * stride[1] + (kernel[1] - 1) * dilation[1] + 1
    images = n * len(strips)

    def of_strip(k: ir.Value, value) -> ir.Value:
        """``value(strip)`` for strip index ``k`` (at most two strips: affine in ``k``)."""
        first = value(strips[0])
        if len(strips) == 1:
            return _index(first)
        return ir.arith.AddIOp(_index(first), ir.arith.MulIOp(k, _index(value(strips[1]) - first)).result).result

    def as_images(gathered: ir.Value) -> ir.Value:
        shape = ir.RankedTensorType(gathered.type).shape
        return ir.tensor.CollapseShapeOp(
            ir.RankedTensorType.get([images, *shape[2:]], f32), gathered, ir.reassociation([[0, 1], [2], [3], [4]])
        ).result

    if whole and cols == ow:
        dy_region = dy_nhwc
    else:

        def dy_source(index: list[ir.Value]):
            b, k, i, j, ch = index
            row_ok = ir.arith.CmpIOp(ir.arith.CmpIPredicate.ult, i, of_strip(k, lambda st: st.rows)).result
            col_ok = ir.arith.CmpIOp(ir.arith.CmpIPredicate.ult, j, of_strip(k, lambda st: st.cols)).result
            row = ir.arith.MinSIOp(ir.arith.AddIOp(of_strip(k, lambda st: st.row), i).result, _index(oh - 1)).result
            col = ir.arith.MinSIOp(ir.arith.AddIOp(of_strip(k, lambda st: st.col), j).result, _index(ow - 1)).result
            return [b, row, col, ch], ir.arith.AndIOp(row_ok, col_ok).result

        dy_region = as_images(_gather(dy_nhwc, [n, len(strips), rows, 2 * pairs, c], dy_source))
    if whole and not any(padding) and x_rows <= h and x_cols <= w:
        x_region = x_nhwc
    else:

        def x_source(index: list[ir.Value]):
            b, k, i, j, ch = index
            row = ir.arith.AddIOp(of_strip(k, lambda st: st.row * stride[0]), i).result
            col = ir.arith.AddIOp(of_strip(k, lambda st: st.col * stride[1]), j).result
            row, row_ok = _source(row, padding[0], h)
            col, col_ok = _source(col, padding[1], w)
            return [b, row, col, ch], ir.arith.AndIOp(row_ok, col_ok).result

        x_region = as_images(_gather(x_nhwc, [n, len(strips), x_rows, x_cols, c], x_source))
    if paired_images:
        return _Region(dy_region, (0, 0), x_region, (0, 0), n // 2, rows, ow, paired_images=True)
    return _Region(dy_region, (0, 0), x_region, (0, 0), images, rows, pairs)


def _tap_sums(region: _Region, taps: list[tuple[int, int]], stride, dilation, isa: str) -> list[ir.Value]:
    """Per tap, the region's partial sums per row ``[images, rows, C]`` (dims of extent 1 left
    out): generics over ``(n, oh, c | j)`` of up to DEPTHWISE_WGRAD_TAPS_PER_GENERIC taps."""
    f32 = ir.RankedTensorType(region.x.type).element_type
    c = ir.RankedTensorType(region.x.type).shape[3]
    extent = {"n": region.images, "oh": region.rows, "c": c, "j": region.pairs}
    space = _IterationDims(_DEPTHWISE_WGRAD_DIMS, extent, f32, keep=("c", "j"))
    in_type, out_type = space.type(_DEPTHWISE_WGRAD_IN_DIMS), space.type(_DEPTHWISE_WGRAD_OUT_DIMS)
    in_map, out_map = space.map(_DEPTHWISE_WGRAD_IN_DIMS), space.map(_DEPTHWISE_WGRAD_OUT_DIMS)

    def view(source: ir.Value, image: int, row: int, col: int, row_step: int, col_step: int) -> ir.Value:
        """``source[image + n, row + oh*row_step, col + j*col_step, :]`` over ``(n, oh, j, c)``."""
        return ir.tensor.ExtractSliceOp(
            in_type,
            source,
            [],
            [],
            [],
            [image, row, col, 0],
            [region.images, region.rows, region.pairs, c],
            [1, row_step, col_step, 1],
        ).result

    # A pair's member k: its image and column offsets, and the column step between pairs.
    if region.paired_images:
        member, dy_step = [(k * region.images, 0) for k in range(2)], 1
    else:
        member, dy_step = [(0, k) for k in range(2)], 2
    (dy_row, dy_col), (x_row, x_col) = region.dy_at, region.x_at
    dy_pair = [view(region.dy, image, dy_row, dy_col + col, 1, dy_step) for image, col in member]
    init = ir.linalg.fill(ir.arith.ConstantOp(f32, 0.0).result, outs=[ir.tensor.EmptyOp(out_type.shape, f32).result])
    info = gemm_config.depthwise_wgrad_compilation_info(isa, {name: extent[name] for name in space.names})
    results = []
    per_generic = gemm_config.DEPTHWISE_WGRAD_TAPS_PER_GENERIC
    for first in range(0, len(taps), per_generic):
        batch = taps[first : first + per_generic]
        x_pairs = [
            view(
                region.x,
                image,
                x_row + r * dilation[0],
                x_col + s * dilation[1] + col * stride[1],
                stride[0],
                dy_step * stride[1],
            )
            for r, s in batch
            for image, col in member
        ]
        sums = ir.linalg.GenericOp(
            [out_type] * len(batch),
            [*dy_pair, *x_pairs],
            [init] * len(batch),
            ir.indexing_maps(*[in_map] * (2 + len(x_pairs)), *[out_map] * len(batch)),
            ir.iterator_types(*["reduction" if name == "j" else "parallel" for name in space.names]),
        )
        block = sums.regions[0].blocks.append(*[f32] * (2 + len(x_pairs) + len(batch)))
        with ir.InsertionPoint(block):
            dy0, dy1 = block.arguments[0], block.arguments[1]
            xs, accs = block.arguments[2 : 2 + len(x_pairs)], block.arguments[2 + len(x_pairs) :]
            products = [
                ir.arith.AddFOp(ir.arith.MulFOp(xs[2 * i], dy0).result, ir.arith.MulFOp(xs[2 * i + 1], dy1).result)
                for i in range(len(batch))
            ]
            ir.linalg.YieldOp([ir.arith.AddFOp(acc, pair.result).result for acc, pair in zip(accs, products)])
        if info is not None:
            sums.attributes["compilation_info"] = info
        results.extend(sums.results)
    return results


def _as_rows(result: ir.Value, rows: int) -> ir.Value:
    """A tap's partial sums ``[images, rows, C]`` (dims of extent 1 left out) as ``[images*rows, C]``."""
    shape = ir.RankedTensorType(result.type).shape
    if len(shape) == 3:
        f32 = ir.RankedTensorType(result.type).element_type
        return ir.tensor.CollapseShapeOp(
            ir.RankedTensorType.get([rows, shape[2]], f32), result, ir.reassociation([[0, 1], [2]])
        ).result
    if len(shape) == 1:
        return ir.expand_shape(result, [[0, 1]], [1, shape[0]])
    return result


def _sum_rows(partials: ir.Value, kernel, isa: str) -> ir.Value:
    """The KRSC filter ``[C, R, S, 1]`` from depthwise_wgrad's partial sums per output row
    ``partials`` (``[T, N*Ho, C]``): one generic over ``(c, t | q)``, ``q`` the rows, vectorized
    along the channels (gemm_config.depthwise_wgrad_sum_compilation_info)."""
    f32 = ir.RankedTensorType(partials.type).element_type
    taps, _, channels = ir.RankedTensorType(partials.type).shape
    init = ir.linalg.fill(ir.arith.ConstantOp(f32, 0.0).result, outs=[ir.tensor.EmptyOp([channels, taps], f32).result])
    d = [ir.AffineDimExpr.get(i) for i in range(3)]  # c, t | q
    total = ir.sum_into(
        partials,
        init,
        ir.AffineMap.get(3, 0, [d[1], d[2], d[0]]),
        ir.AffineMap.get(3, 0, [d[0], d[1]]),
        ["parallel", "parallel", "reduction"],
    )
    info = gemm_config.depthwise_wgrad_sum_compilation_info(isa, channels)
    if info is not None:
        total.attributes["compilation_info"] = info
    return ir.expand_shape(total.result, [[0], [1, 2, 3]], [channels, kernel[0], kernel[1], 1])


def _gather(nhwc: ir.Value, shape: list[int], source) -> ir.Value:
    """A tensor of ``shape`` written by one all-parallel generic reading ``nhwc`` with
    ``tensor.extract`` at the indices ``source(indices)`` gives (with an in-bounds flag, or None:
    always in bounds; zero where not), behind a barrier: the grouped and depthwise weight gradients'
    layouts of X and DY. IREE runs it as a gather, vectorized along the innermost dim where the
    read's innermost index is the generic's: a plain ``linalg.transpose`` of DY ran 2.5x as long."""
    f32 = ir.RankedTensorType(nhwc.type).element_type
    rank = len(shape)
    empty = ir.tensor.EmptyOp(shape, f32).result
    gather = ir.linalg.GenericOp(
        [empty.type],
        [],
        [empty],
        ir.indexing_maps(ir.AffineMap.get_identity(rank)),
        ir.iterator_types(*["parallel"] * rank),
    )
    block = gather.regions[0].blocks.append(f32)
    with ir.InsertionPoint(block):
        indices, ok = source([ir.linalg.IndexOp(i).result for i in range(rank)])
        v = ir.tensor.ExtractOp(nhwc, indices).result
        if ok is not None:
            v = ir.arith.SelectOp(ok, v, ir.arith.ConstantOp(f32, 0.0).result).result
        ir.linalg.YieldOp([v])
    return ir.fusion_barrier(gather.result)
