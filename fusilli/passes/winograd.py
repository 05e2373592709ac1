"""Winograd convolution (F(m x m, 3 x 3), and 3x3 stride 2 by phases) built as linalg ops (used by ``fusilli-conv-layout``).

A 3x3, stride-1, dilation-1 NHWC convolution ``y = x * g`` becomes, with
``t = m + 2`` and the output cut into ``m x m`` tiles,

1. the **filter transform** ``U = G g G^T`` over the filter's nine ``[C, K]`` taps
   (slices of the HWCF filter; dgrad's, of its forward filter read flipped), inside the
   graph: one ``linalg.generic`` with a result per row of ``G`` (``filter_transform``),
2. the **input transform** ``V = B^T d B`` of every ``t x t`` input tile (tiles
   overlap by 2), one ``linalg.generic`` with a result per row of ``B^T``
   (``one_pass_tile_transform``) that reads the unpadded input with clamped
   ``tensor.extract`` and zeroes the taps that fall into the padding
   (``arith.select`` on 1-D masks along tile rows and tile columns), so no
   padded copy of the input is made,
3. one batched GEMM ``M[t*t, tiles, K] = V[t*t, tiles, C] x U[t*t, C, K]``
   carrying an explicit CPU lowering config (fusilli/passes/gemm_config.py),
4. the **output transform** ``Y = A^T M A``: two separable stages, the second
   iterating the NHWC result itself (cropped where the tiles overrun it); the
   epilogue fused after the conv (bias, activation, any pointwise chain) is an
   elementwise consumer of the last stage, which IREE fuses into that dispatch.

A 3x3 **stride-2** conv (``WinogradPlan.stride == 2``, rule cpu-conv-winograd-strided) takes
the same four stages with the transforms of ``polyphase_matrices``: split by the parity of
rows and columns, it is four stride-1 convs over the input's phases (2x2, 2x1, 1x2 and 1x1
taps), F(m, 2) along a 2-tap dim beside the identity along a 1-tap one, whose products
sit side by side in one ``(2m + 1)^2``-batch GEMM; the input tiles are ``2m + 1`` wide and
``2m`` apart, and one output transform sums the phases. F(2x2, 2x2) multiplies 6.25 times
per output and channel pair instead of 9.

The data gradient of a 3x3 stride-2 conv (``WinogradPlan.transposed``, rule
cpu-conv-dgrad-winograd-strided) runs the same way over DY with the transforms of
``polyphase_dgrad_matrices``: DX's positions of one parity are a 2-tap stride-1 correlation of DY
(F(m, 2)), the others a 1-tap one; a ``2m x 2m`` tile of DX reads an ``(m + 1)^2`` tile of DY,
``m`` apart, and the filter transform reads the forward filter's KRSC ``[K, C]`` taps
(``krsc_taps``). The stride-2 plans' output transforms (forward and dgrad) are one stage reading
only each position's nonzero terms of their sparse ``A^T`` (``sparse_output_transform``).

The weight gradient of a 3x3 stride-2 conv (``polyphase_wgrad``, rule
cpu-conv-wgrad-winograd-strided) takes the forward polyphase transforms the other way round:
each tile's filter gradient is ``G^T [(A dy) * (B^T x)]``, summed over tiles by one batched GEMM.

The weight gradient of a 3x3 stride-1 conv (``winograd_wgrad``) is Winograd F(3x3, 4x4):
the same 6x6 input tiles, DY's 4x4 tiles as the "filter", the sum over tiles
done by one batched GEMM in the transformed domain.

Every stage is a ``linalg.generic`` whose iteration space puts a transform's
coefficient dimension right outside the channel dimension (the channels are
the vectorized, contiguous dimension): one transform is applied with its
coefficients read from a small constant tensor broadcast by the indexing maps,
the other (in the one-pass filter and input transforms) unrolled with them as
constants, one result per row; source indices of the reads come from
``linalg.index``, so the loads stay contiguous along channels. This shape of
IR is what IREE 3.13 vectorizes well; its own Winograd pass (scalar
transforms) lost to im2col (BENCHMARKS.md). Per dispatch, one thread, Zen 4
VM (benchmarks/dispatch_profile.py --device local-sync), 4x64x56x56->64:
filter 0.02 ms, input 0.64-0.72, GEMM 2.1-2.4, output 0.31-0.44 + 0.21-0.35.

The transform matrices are the Cook-Toom ones for the interpolation points
of Lavin & Gray (0, +-1, +-2, +-1/2, ... and infinity); ``transform_matrices``
builds them and checks they compute a correlation exactly (in float64).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from fusilli import ir
from fusilli.passes.gemm_config import (
    batch_matmul_compilation_info,
    wgrad_batch_matmul_compilation_info,
    winograd_b_panel,
)

# Finite interpolation points per transform size t = m + r - 1 (t - 1 of them).
_POINTS = {
    3: (0.0, -1.0),
    4: (0.0, 1.0, -1.0),
    5: (0.0, 1.0, -1.0, 0.5),
    6: (0.0, 1.0, -1.0, 2.0, -2.0),
    8: (0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5),
}
KERNEL = 3


@dataclass(frozen=True)
class WinogradPlan:
    """The tiling of one conv: output tile ``m``, stride 1 or 2, input tile ``t``, tile counts.

    Stride 1: F(m, 3), ``t = m + 2``. Stride 2: the polyphase F(m, 2) of
    ``polyphase_matrices``, ``t = 2m + 1``. Consecutive tiles start ``stride * m`` input
    rows (columns) apart.
    """

    m: int
    n: int
    h: int
    w: int
    c: int
    k: int
    out_h: int
    out_w: int
    pad: tuple[int, int]
    stride: int = 1
    transposed: bool = False

    @property
    def t(self) -> int:
        return self.m + KERNEL - 1 if self.stride == 1 else 2 * self.m + 1

    @property
    def step(self) -> int:
        """Input rows (columns) between the starts of neighbouring tiles."""
        return self.m if self.transposed else self.stride * self.m

    @property
    def out_tile(self) -> int:
        """Output rows (columns) per tile: ``m``, or ``2m`` for a transposed (dgrad) plan."""
        return 2 * self.m if self.transposed else self.m

    @property
    def read_pad(self) -> tuple[int, int]:
        """How far before ``step * tile`` each tile's first input row (column) lies."""
        if not self.transposed:
            return self.pad
        return (-_dgrad_first_row(self.pad[0]), -_dgrad_first_row(self.pad[1]))

    @property
    def matrices(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(A^T [out_tile, t], G [t, 3], B^T [t, input tile]) of this plan's transforms, float64."""
        if self.transposed:  # (the padding's parity, all they depend on, agrees along H and W)
            return polyphase_dgrad_matrices(self.m, self.pad[0])
        return transform_matrices(self.m) if self.stride == 1 else polyphase_matrices(self.m)

    @property
    def tiles_h(self) -> int:
        return -(-self.out_h // self.out_tile)

    @property
    def tiles_w(self) -> int:
        return -(-self.out_w // self.out_tile)

    @property
    def tiles(self) -> int:
        return self.n * self.tiles_h * self.tiles_w


@functools.cache
def transform_matrices(m: int, r: int = KERNEL) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A^T [m, t], G [t, r], B^T [t, t]) of F(m, r) with t = m + r - 1, float64.

    A^T and G follow Cook-Toom for the points of ``_POINTS[t]`` plus infinity;
    B^T is then the unique matrix with ``A^T diag(G e_k) B^T = shift_k`` for
    every filter tap k (the 1-D correlation identity), solved exactly.
    """
    t = m + r - 1
    points = _POINTS[t]
    at = np.zeros((m, t))
    g = np.zeros((t, r))
    for j, p in enumerate(points):
        at[:, j] = [p**i for i in range(m)]
        f = np.prod([p - q for q in points if q != p])
        g[j] = [p**k / f for k in range(r)]
    at[m - 1, t - 1] = 1.0
    g[t - 1, r - 1] = 1.0
    # Solve for B^T: for each tap k, sum_j at[i, j] g[j, k] bt[j, l] = [l == i + k].
    rows, rhs = [], []
    for k in range(r):
        for i in range(m):
            for col in range(t):
                coeffs = np.zeros((t, t))
                coeffs[:, col] = at[i] * g[:, k]
                rows.append(coeffs.ravel())
                rhs.append(1.0 if col == i + k else 0.0)
    bt, *_ = np.linalg.lstsq(np.array(rows), np.array(rhs), rcond=None)
    bt = bt.reshape(t, t)
    # lstsq leaves its integer entries (0, +-1, +-2, ...) some 1e-15 off; exact, they are terms that
    # _constant_combination drops, adds or subtracts instead of multiplying.
    integral = np.abs(bt - np.round(bt)) < 1e-12
    bt[integral] = np.round(bt[integral]) + 0.0  # (+ 0.0: no -0.0 in the constants)
    for k in range(r):
        if not np.allclose(at @ np.diag(g[:, k]) @ bt, np.eye(m, t, k), atol=1e-9):
            raise AssertionError(f"F({m},{r}) transform matrices do not compute a correlation (tap {k})")
    return at, g, bt


# The scales tried, in order, on a row equal to an earlier one: powers of two, so that the scaled
# products are exactly the unscaled ones.
_ROW_SCALES = (1.0, -1.0, 2.0, -2.0, 4.0, -4.0, 8.0, -8.0)


def _distinct_rows(at: np.ndarray, g: np.ndarray, bt: np.ndarray) -> None:
    """Scale each row of G and of B^T equal to an earlier row of its matrix by the first of
    -1, 2, -2, 4, ... that makes it differ, and A^T's matching column by the inverse, in place:
    the same products (powers of two, exact), from rows that differ.

    The polyphase plans repeat rows: G's tap-1 rows are each ``[0, 1, 0]``; a dgrad's B^T picks
    a DY value F(2, 2)'s B^T also picks. Equal rows make equal results of the transforms'
    multi-result generics (``filter_transform``, ``one_pass_tile_transform``); IREE merges them
    into one, writes it aside and copies it into place once per row: the suite's 3x3 s2
    4x128x28x28->256 two copies of 640 KB a call (0.66 MB more transient memory, and the filter
    transform ordered after them instead of beside the input transform), a dgrad's four or more.
    With distinct rows none (``CompileStats.copy_count``, checked by test_winograd.py and
    test/lit/ops/conv_fprop_polyphase_nhwc.py)."""
    for matrix in (g, bt):
        seen: set[tuple[float, ...]] = set()
        for i, row in enumerate(matrix):
            scale = next((s for s in _ROW_SCALES if tuple(row * s + 0.0) not in seen), None)
            if scale is None:
                raise AssertionError(f"row {i} of a Winograd transform repeats more than {len(_ROW_SCALES)} times")
            matrix[i] = row * scale + 0.0  # (+ 0.0: no -0.0 in the constants)
            at[:, i] = at[:, i] / scale + 0.0
            seen.add(tuple(matrix[i]))


@functools.cache
def polyphase_matrices(m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A^T [m, t], G [t, 3], B^T [t, t]), t = 2m + 1: a 3-tap stride-2 correlation as Winograd.

    With ``x'`` the padded input, ``y[o] = sum_r g[r] x'[2o + r]``. Split by parity
    (``P0[i] = x'[2i]``, ``P1[i] = x'[2i + 1]``), ``y[o] = sum_u g[2u] P0[o + u] + g[1] P1[o]``:
    a 2-tap stride-1 correlation over the even phase, F(m, 2) with ``m + 1`` products, and a
    1-tap one over the odd phase, ``m`` products. The two sets of products side by side are
    one transform of size ``2m + 1`` over the input tile ``x'[2mT .. 2mT + 2m]``:
    B^T's first ``m + 1`` rows apply F(m, 2)'s B^T to the tile's even taps, the next ``m``
    pick its odd ones; G's rows apply F(m, 2)'s G to taps 0 and 2, then repeat tap 1 (scaled
    by 1, -1, 2, ..., ``_distinct_rows``); A^T is F(m, 2)'s A^T beside the identity (its
    columns scaled back). In 2-D the ``(2m + 1)^2`` products of a tile are the four phases'
    (``(m + 1)^2``, two of ``(m + 1) m`` and ``m^2``): per output and channel pair
    ``((m + 1) / m + 1)^2`` multiplies instead of 9, 6.25 for m = 2 and 5.06 for m = 4.
    """
    at2, g2, bt2 = transform_matrices(m, 2)
    t = 2 * m + 1
    at = np.concatenate([at2, np.eye(m)], axis=1)
    g = np.zeros((t, KERNEL))
    g[: m + 1, 0], g[: m + 1, 2], g[m + 1 :, 1] = g2[:, 0], g2[:, 1], 1.0
    bt = np.zeros((t, t))
    bt[: m + 1, 0::2] = bt2
    bt[m + 1 :, 1::2] = np.eye(m)
    _distinct_rows(at, g, bt)
    # The identity it must satisfy (in float64): A^T diag(G e_r) B^T = the stride-2 shift by r.
    for r in range(KERNEL):
        shift = np.zeros((m, t))
        shift[np.arange(m), 2 * np.arange(m) + r] = 1.0
        if not np.allclose(at @ np.diag(g[:, r]) @ bt, shift, atol=1e-9):
            raise AssertionError(f"polyphase F({m}, 2) matrices do not compute a stride-2 correlation (tap {r})")
    return at, g, bt


def plan(
    x_dims: tuple[int, ...], k: int, out_hw: tuple[int, int], pad: tuple[int, int], m: int, stride: int = 1
) -> WinogradPlan:
    n, h, w, c = x_dims
    return WinogradPlan(m, n, h, w, c, k, out_hw[0], out_hw[1], (pad[0], pad[1]), stride)


def _dgrad_first_row(pad: int) -> int:
    """The first DY row a transposed plan's tile ``T`` reads, less ``m * T``: ``ceil((pad - 2) / 2)``."""
    return -((2 - pad) // 2)


@functools.cache
def polyphase_dgrad_matrices(m: int, pad: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A^T [2m, t], G [t, 3], B^T [t, m + 1]), t = 2m + 1: the data gradient of a 3-tap,
    stride-2 correlation padded by ``pad``, as Winograd, in tiles of ``2m`` outputs.

    The forward conv is ``y[o] = sum_r g[r] x[2o + r - pad]``, so
    ``dx[j] = sum_{2o + r - pad = j} g[r] dy[o]``. Split by parity: the ``j`` with ``j + pad``
    even take taps 0 and 2, ``dx[j] = g[2] dy[o] + g[0] dy[o + 1]`` with
    ``o = (j + pad) / 2 - 1``, a 2-tap stride-1 correlation of DY, F(m, 2) with ``m + 1``
    products; the others take tap 1 alone, ``m`` products. A tile of ``2m`` outputs starting at
    ``2mT`` reads the ``m + 1`` DY values from ``mT + ceil((pad - 2) / 2)`` (tiles overlap by
    one): B^T's first ``m + 1`` rows are F(m, 2)'s B^T, the next ``m`` pick the tap-1 values;
    G applies F(m, 2)'s G to taps 2 and 0, then repeats tap 1; A^T interleaves the phases'
    outputs (``_distinct_rows`` scales the repeated rows of G and B^T, A^T's columns back).
    In 2-D, per output and channel pair ``(2m + 1)^2 / (2m)^2`` multiplies instead of 9/4: 1.56
    for m = 2, 1.27 for m = 4; and no col2im. The transposition of ``polyphase_matrices`` would
    make overlapping output tiles (an overlap-add) instead.
    """
    at2, g2, bt2 = transform_matrices(m, 2)
    t, first = 2 * m + 1, _dgrad_first_row(pad)
    two_tap, one_tap = pad % 2, 1 - pad % 2  # the first output of each phase in a tile
    tap1_offset = 1 - pad % 2  # the first DY value of the tap-1 phase, in the tile
    at = np.zeros((2 * m, t))
    at[two_tap::2, : m + 1] = at2
    at[one_tap::2, m + 1 :] = np.eye(m)
    g = np.zeros((t, KERNEL))
    g[: m + 1, 2], g[: m + 1, 0], g[m + 1 :, 1] = g2[:, 0], g2[:, 1], 1.0
    bt = np.zeros((t, m + 1))
    bt[: m + 1] = bt2
    bt[m + 1 :, tap1_offset : tap1_offset + m] = np.eye(m)
    _distinct_rows(at, g, bt)
    # The identity it must satisfy (in float64): A^T diag(G e_r) B^T scatters DY value i of the
    # tile to output 2(first + i) + r - pad.
    for r in range(KERNEL):
        scatter = np.zeros((2 * m, m + 1))
        for i in range(m + 1):
            j = 2 * (first + i) + r - pad
            if 0 <= j < 2 * m:
                scatter[j, i] = 1.0
        if not np.allclose(at @ np.diag(g[:, r]) @ bt, scatter, atol=1e-9):
            raise AssertionError(f"polyphase dgrad F({m}, 2) matrices (pad {pad}) do not compute tap {r}")
    return at, g, bt


# ----------------------------------------------------------------------------- IR helpers


def _f32() -> ir.Type:
    return ir.Type.parse("f32")


def _dense(values: np.ndarray, element: ir.Type) -> ir.Value:
    shape = list(values.shape)
    tensor_type = ir.RankedTensorType.get(shape, element)
    return ir.arith.ConstantOp(tensor_type, ir.DenseElementsAttr.get(values, type=element)).result


def _coefficients(matrix: np.ndarray) -> ir.Value:
    return _dense(np.ascontiguousarray(matrix, dtype=np.float32), _f32())


def _map(num_dims: int, exprs: list) -> ir.AffineMap:
    return ir.AffineMap.get(num_dims, 0, exprs)


def _dims(n: int) -> list:
    return [ir.AffineDimExpr.get(i) for i in range(n)]


def _const(v: int):
    return ir.AffineConstantExpr.get(v)


def _empty(shape: list[int]) -> ir.Value:
    return ir.tensor.EmptyOp(shape, _f32()).result


def _generic(ins: list[ir.Value], maps: list[ir.AffineMap], out_shape: list[int], out_map: ir.AffineMap, body):
    """An all-parallel ``linalg.generic`` writing an f32 ``out_shape``; ``body(args)`` yields the value."""
    out = _empty(out_shape)
    generic = ir.linalg.GenericOp(
        [out.type], ins, [out], ir.indexing_maps(*maps, out_map), ir.iterator_types(*["parallel"] * out_map.n_dims)
    )
    block = generic.regions[0].blocks.append(*[ir.RankedTensorType(v.type).element_type for v in ins], _f32())
    with ir.InsertionPoint(block):
        ir.linalg.YieldOp([body(list(block.arguments))])
    return generic.result


def _stacked_generic(
    ins: list[ir.Value], maps: list[ir.AffineMap], out_shape: list[int], out_map: ir.AffineMap, count: int, body
) -> ir.Value:
    """An all-parallel ``linalg.generic`` with ``count`` f32 results of ``out_shape``
    (``body(args)`` yields them), stacked along a new outermost dim: ``[count, *out_shape]``.
    The concatenation is along the outermost dim, so each result is written in place."""
    outs = [_empty(out_shape) for _ in range(count)]
    generic = ir.linalg.GenericOp(
        [o.type for o in outs],
        ins,
        outs,
        ir.indexing_maps(*maps, *[out_map] * count),
        ir.iterator_types(*["parallel"] * out_map.n_dims),
    )
    block = generic.regions[0].blocks.append(*[ir.RankedTensorType(v.type).element_type for v in ins + outs])
    with ir.InsertionPoint(block):
        ir.linalg.YieldOp(body(list(block.arguments)))
    rank = len(out_shape)
    groups = [[0, 1], *[[d] for d in range(2, rank + 1)]]
    parts = [ir.expand_shape(r, groups, [1, *out_shape]) for r in generic.results]
    return ir.tensor.ConcatOp(ir.RankedTensorType.get([count, *out_shape], _f32()), 0, parts).result


def _fma_chain(coefs: list[ir.Value], values: list[ir.Value]) -> ir.Value:
    acc = ir.arith.MulFOp(coefs[0], values[0]).result
    for c, v in zip(coefs[1:], values[1:]):
        acc = ir.math.FmaOp(c, v, acc).result
    return acc


def _separable_stage(
    taps: list[ir.Value], matrix: np.ndarray, coef_dim: int, out_shape: list[int], out_map, tap_map=None
) -> ir.Value:
    """``out[..., a, ...] = sum_i matrix[a, i] * taps[i][...]``: one separable transform stage.

    Every tap is read through the same projected-permutation ``tap_map``
    (default: ``out_map`` without ``coef_dim``); the coefficients of tap ``i``
    are column ``i`` of ``matrix``, a 1-D constant read along ``coef_dim``.
    """
    n_dims = out_map.n_dims
    d = _dims(n_dims)
    if tap_map is None:
        tap_map = _map(n_dims, [e for e in out_map.results if not _is_dim(e, coef_dim)])
    coefs = [_coefficients(matrix[:, i]) for i in range(matrix.shape[1])]
    maps = [tap_map] * len(taps) + [_map(n_dims, [d[coef_dim]])] * len(coefs)

    def body(args):
        return _fma_chain(args[len(taps) :], args[: len(taps)])

    return _generic(list(taps) + coefs, maps, out_shape, out_map, body)


def _is_dim(expr, dim: int) -> bool:
    return isinstance(expr, ir.AffineDimExpr) and expr.position == dim


def _slice(value: ir.Value, dim: int, offset: int) -> ir.Value:
    """``value[..., offset, ...]`` along ``dim``, that dim dropped (a rank-reducing slice)."""
    src = ir.RankedTensorType(value.type)
    sizes = [src.get_dim_size(i) for i in range(src.rank)]
    offsets = [0] * src.rank
    offsets[dim] = offset
    result = ir.RankedTensorType.get(sizes[:dim] + sizes[dim + 1 :], src.element_type)
    full = sizes[:dim] + [1] + sizes[dim + 1 :]
    return ir.tensor.ExtractSliceOp(result, value, [], [], [], offsets, full, [1] * src.rank).result


def _tap(w_hwcf: ir.Value, r: int, s: int) -> ir.Value:
    """The ``[C, K]`` tap ``(r, s)`` of an HWCF filter (a rank-reducing slice)."""
    src = ir.RankedTensorType(w_hwcf.type)
    c, k = src.get_dim_size(2), src.get_dim_size(3)
    result = ir.RankedTensorType.get([c, k], src.element_type)
    return ir.tensor.ExtractSliceOp(result, w_hwcf, [], [], [], [r, s, 0, 0], [1, 1, c, k], [1] * 4).result


def _strided_slice(value: ir.Value, dim: int, offset: int, count: int, stride: int) -> ir.Value:
    """``value[..., offset : offset + stride * count : stride, ...]`` along ``dim``."""
    src = ir.RankedTensorType(value.type)
    sizes = [src.get_dim_size(i) for i in range(src.rank)]
    offsets, strides = [0] * src.rank, [1] * src.rank
    offsets[dim], strides[dim], sizes[dim] = offset, stride, count
    result = ir.RankedTensorType.get(sizes, src.element_type)
    return ir.tensor.ExtractSliceOp(result, value, [], [], [], offsets, sizes, strides).result


def _collapse(value: ir.Value, groups: list[list[int]], shape: list[int]) -> ir.Value:
    return ir.tensor.CollapseShapeOp(ir.RankedTensorType.get(shape, _f32()), value, ir.reassociation(groups)).result


# ----------------------------------------------------------------------------- the stages


def _constant_combination(coefs: np.ndarray, values: list[ir.Value]) -> ir.Value:
    """``sum_i coefs[i] * values[i]`` with the coefficients as constants: zero terms dropped,
    +-1 ones added or subtracted, the others fused multiply-adds."""
    acc = None
    for coef, value in zip(coefs.tolist(), values):
        if coef == 0.0:
            continue
        if acc is None:
            acc = value if coef == 1.0 else ir.arith.MulFOp(ir.arith.ConstantOp(_f32(), coef).result, value).result
        elif coef in (1.0, -1.0):
            acc = (ir.arith.AddFOp if coef == 1.0 else ir.arith.SubFOp)(acc, value).result
        else:
            acc = ir.math.FmaOp(ir.arith.ConstantOp(_f32(), coef).result, value, acc).result
    return acc if acc is not None else ir.arith.ConstantOp(_f32(), 0.0).result


def hwcf_taps(w_hwcf: ir.Value) -> list[ir.Value]:
    """The nine ``[C, K]`` taps of a 3x3 HWCF filter, in ``(r, s)`` order."""
    return [_tap(w_hwcf, r, s) for r in range(KERNEL) for s in range(KERNEL)]


def krsc_taps(w_krsc: ir.Value) -> list[ir.Value]:
    """The nine ``[K, C]`` taps of a 3x3 KRSC filter, in ``(r, s)`` order: a strided dgrad's
    (``K`` is what its GEMM contracts, DY's channels)."""
    src = ir.RankedTensorType(w_krsc.type)
    k, c = src.get_dim_size(0), src.get_dim_size(3)
    result = ir.RankedTensorType.get([k, c], src.element_type)
    return [
        ir.tensor.ExtractSliceOp(result, w_krsc, [], [], [], [0, r, s, 0], [k, 1, 1, c], [1] * 4).result
        for r in range(KERNEL)
        for s in range(KERNEL)
    ]


def filter_transform(p: WinogradPlan, taps: list[ir.Value], panel: int | None = None) -> ir.Value:
    """``U[t*t, C, K] = G g G^T`` of the 3x3 filter ``g`` given as its nine ``[C, K]`` taps
    (``hwcf_taps``; dgrad's are slices of its forward filter), in one dispatch; with ``panel``,
    written as ``[t*t, K / panel, C, panel]``: each panel of ``panel`` columns contiguous, the
    layout the GEMM reads B in (gemm_config.winograd_b_panel says where and why).

    One ``linalg.generic`` iterating ``(b, c, k)`` reads the nine ``[C, K]`` taps once and
    has ``t`` results, one per row ``a`` of ``G``: the column transform
    ``sum_s G[b, s] g[r, s]`` reads ``G[:, s]`` along ``b`` (three fused multiply-adds per
    row ``r``), the row transform is unrolled with ``G[a, r]`` as constants. The results,
    ``[t, C, K]`` each, are concatenated along the outermost dim, so each is written in
    place. Why not two all-parallel stages like the data's transforms (as before): with
    ``C * K`` large and few tiles the filter transform is most of the conv. Zen 4 VM, one
    thread (benchmarks/dispatch_profile.py --device local-sync), 3x3 8x512x7x7->512 F(2x2):
    the two stages 1.6 + 2.3 ms min, this 1.7 ms; whole call 19.9 -> 15.9 ms (PyTorch one
    thread 16.6). One generic over ``(a, b, c, k)`` with ``G[a, r] G[b, s]`` read from
    tensors ran at 3.0 ms (9 loaded coefficients per output); one with ``t * t`` results
    exceeds IREE's 32 bindings per dispatch at ``t = 6``.
    """
    _, g, _ = p.matrices
    t, c, k = p.t, p.c, p.k
    columns = [_coefficients(g[:, s]) for s in range(KERNEL)]

    def body(args):
        column_coefs = args[len(taps) : len(taps) + KERNEL]
        rows = [_fma_chain(column_coefs, args[r * KERNEL : (r + 1) * KERNEL]) for r in range(KERNEL)]
        return [_constant_combination(g[a], rows) for a in range(t)]

    if panel is None:
        b_, c_, k_ = _dims(3)
        maps = [_map(3, [c_, k_])] * len(taps) + [_map(3, [b_])] * KERNEL
        u = _stacked_generic(taps + columns, maps, [t, c, k], _map(3, [b_, c_, k_]), t, body)
        return _collapse(u, [[0, 1], [2], [3]], [t * t, c, k])
    # Iterating (b, j, c, n), the output's order: each tap read as [C, K / panel, panel] with c and j
    # swapped, so each result is written as one stream and the nine taps are read as strided ones
    # (the panel's columns innermost in both: contiguous vectors). Iterating (b, c, j, n), the taps'
    # order, wrote K / panel streams per result, a panel's width apart. One thread (python
    # benchmarks/dispatch_profile.py SUITE --device local-sync), min us, the taps' order -> the
    # output's: Zen 3's 16-column panels, 3x3 1x128x28x28->128 F(4x4) 177, 177 -> 114, 116, its dgrad
    # 171, 174 -> 122, 114; 1x256x14x14->256 F(2x2) 339, 353 -> 320, 313, its dgrad 331, 339 -> 344,
    # 277; x86-64-v3 code's 64-column panels on the same VM, 3x3 8x512x7x7->512 3490, 3544 -> 3084, 3290,
    # its dgrad 3582, 3789 -> 3062, 3064.
    b_, j_, c_, n_ = _dims(4)
    panels = [ir.expand_shape(tap, [[0], [1, 2]], [c, k // panel, panel]) for tap in taps]
    maps = [_map(4, [c_, j_, n_])] * len(taps) + [_map(4, [b_])] * KERNEL
    u = _stacked_generic(panels + columns, maps, [t, k // panel, c, panel], _map(4, [b_, j_, c_, n_]), t, body)
    return _collapse(u, [[0, 1], [2], [3], [4]], [t * t, k // panel, c, panel])


def _in_bounds(extent: int, count: int, step: int, tap: int, pad: int) -> np.ndarray:
    """Which of the source indices ``step * i + tap - pad`` (i < count) lie inside ``[0, extent)``."""
    index = np.arange(count) * step + tap - pad
    return (index >= 0) & (index < extent)


def _index(v: int) -> ir.Value:
    return ir.arith.ConstantOp(ir.IndexType.get(), v).result


def _clamped(i: ir.Value, extent: int) -> ir.Value:
    """``min(max(i, 0), extent - 1)``: an index that is always safe to read."""
    return ir.arith.MinSIOp(ir.arith.MaxSIOp(i, _index(0)).result, _index(extent - 1)).result


def input_transform(p: WinogradPlan, x_nhwc: ir.Value) -> ir.Value:
    """``V[t*t, tiles, C] = B^T d B`` of every t x t input tile, padding folded into the reads."""
    _, _, bt = p.matrices
    return one_pass_tile_transform(x_nhwc, bt, p.step, p.read_pad, (p.tiles_h, p.tiles_w))


def one_pass_tile_transform(src: ir.Value, matrix: np.ndarray, step: int, pad, tiles) -> ir.Value:
    """``tile_transform`` in one dispatch: the forward conv's input transform.

    Like ``filter_transform``: one ``linalg.generic`` iterating ``(n, th, tw, b, c)``
    with a result per row ``a`` of ``M``. Each tap row ``i`` of the tile is combined along
    its columns with ``M[b, :]`` (read along ``b``), then the rows with ``M[a, :]`` as
    constants; the results, ``[t, N, TH, TW, C]`` each, are concatenated along the
    outermost dim. The input is read with clamped ``tensor.extract`` at indices from
    ``linalg.index`` (uniform along the channel dim, so IREE emits contiguous loads, not
    gathers); taps in the padding are zeroed by 1-D masks along tile rows and tile columns,
    one per tap row (column) that reaches outside the input in some tile (with 1-D operands
    per dim IREE keeps the dims apart instead of collapsing them into scalar code). ``b``
    iterates right outside the channels, so a tile's taps stay in L1 across it. Against ``tile_transform`` (rows into a ``[N, TH, W', t, C]`` intermediate,
    then columns): one dispatch less and no intermediate, at ``t`` times the tap reads; Zen 4
    VM, ratio to PyTorch in one process (2 threads), separable -> one pass: 3x3 s2 + bias +
    relu 4x128x28x28->256 0.84 -> 0.95, 3x3 s2 1x128x56x56->128 0.87 -> 1.19, 3x3
    8x256x14x14->256 1.47 -> 1.59, the other Winograd rows of benchmarks/cpu.txt and
    resnet50_conv.txt even; one thread, the 4x128x28x28 s2 transform 226 + 133 us -> 123 us.
    The weight gradient's transforms lost so (4x64x28x28 wgrad 2.11 -> 1.06) and stay
    separable.
    """
    st = ir.RankedTensorType(src.type)
    n, h, w, c = (st.get_dim_size(i) for i in range(4))
    t, taps = matrix.shape
    th, tw = tiles
    i1 = ir.IntegerType.get_signless(1)
    n_, th_, tw_, b_, c_ = _dims(5)
    ins = [_coefficients(matrix[:, j]) for j in range(taps)]
    maps = [_map(5, [b_])] * taps
    # A mask operand per tap row (column) that reaches outside the input in some tile: its
    # block argument's index, or None where every tile's tap is inside.
    row_mask: list[int | None] = []
    col_mask: list[int | None] = []
    for masks, extent, count, p, dim in ((row_mask, h, th, pad[0], th_), (col_mask, w, tw, pad[1], tw_)):
        for tap in range(taps):
            inside = _in_bounds(extent, count, step, tap, p)
            masks.append(None if inside.all() else len(ins))
            if not inside.all():
                ins.append(_dense(inside, i1))
                maps.append(_map(5, [dim]))

    def body(args):
        coefs = args[:taps]
        batch, tile_row, tile_col, ch = (ir.linalg.IndexOp(d).result for d in (0, 1, 2, 4))
        row0 = ir.arith.MulIOp(tile_row, _index(step)).result
        col0 = ir.arith.MulIOp(tile_col, _index(step)).result
        cols = [_clamped(ir.arith.AddIOp(col0, _index(j - pad[1])).result, w) for j in range(taps)]
        zero = ir.arith.ConstantOp(_f32(), 0.0).result
        rows = []
        for i in range(taps):
            row = _clamped(ir.arith.AddIOp(row0, _index(i - pad[0])).result, h)
            values = []
            for j in range(taps):
                v = ir.tensor.ExtractOp(src, [batch, row, cols[j], ch]).result
                masks = [args[m] for m in (row_mask[i], col_mask[j]) if m is not None]
                if masks:
                    ok = masks[0] if len(masks) == 1 else ir.arith.AndIOp(*masks).result
                    v = ir.arith.SelectOp(ok, v, zero).result
                values.append(v)
            rows.append(_fma_chain(coefs, values))
        return [_constant_combination(matrix[a], rows) for a in range(t)]

    v = _stacked_generic(ins, maps, [t, n, th, tw, c], _map(5, [b_, n_, th_, tw_, c_]), t, body)
    return _collapse(v, [[0, 1], [2, 3, 4], [5]], [t * t, n * th * tw, c])


def tile_transform(src: ir.Value, matrix: np.ndarray, step: int, pad, tiles, width: int) -> ir.Value:
    """``V[t*t, tiles, C] = M d M^T`` of the ``taps x taps`` tiles of ``src`` ``[N, H, W, C]``.

    Tile ``(th, tw)`` starts at ``(th*step - pad_h, tw*step - pad_w)``; ``matrix`` is
    ``[t, taps]``; reads outside ``src`` are zeros (the padding, or the ragged edge).
    """
    st = ir.RankedTensorType(src.type)
    n, h, w, c = (st.get_dim_size(i) for i in range(4))
    t, taps = matrix.shape
    th, tw = tiles
    i1 = ir.IntegerType.get_signless(1)
    # Tile rows: U1[n, th, w', a, c] = sum_i M[a, i] src[n, th*step + i - ph, w' - pw, c] over
    # the padded width w'. The input is read with clamped indices and out-of-bounds taps
    # are zeroed by 1-D masks along tile rows and padded columns (with one 1-D operand per
    # dim IREE keeps the dims apart instead of collapsing them into scalar code).
    row_ok = [_in_bounds(h, th, step, i, pad[0]) for i in range(taps)]
    col_ok = _in_bounds(w, width, 1, 0, pad[1])
    masked = not (all(ok.all() for ok in row_ok) and col_ok.all())
    n_, th_, w_, a_, c_ = _dims(5)
    ins = [_coefficients(matrix[:, i]) for i in range(taps)]
    maps = [_map(5, [a_])] * taps
    if masked:
        ins += [_dense(ok, i1) for ok in row_ok] + [_dense(col_ok, i1)]
        maps += [_map(5, [th_])] * taps + [_map(5, [w_])]

    def rows_body(args):
        coefs = args[:taps]
        # Source indices come from linalg.index (not from operands): IREE's vectorizer then
        # sees them uniform along the channel dim and emits contiguous loads, not gathers.
        batch, tile_row, col, ch = (ir.linalg.IndexOp(d).result for d in (0, 1, 2, 4))
        col = _clamped(ir.arith.SubIOp(col, _index(pad[1])).result, w)
        row0 = ir.arith.MulIOp(tile_row, _index(step)).result
        zero = ir.arith.ConstantOp(_f32(), 0.0).result
        values = []
        for i in range(taps):
            row = _clamped(ir.arith.AddIOp(row0, _index(i - pad[0])).result, h)
            v = ir.tensor.ExtractOp(src, [batch, row, col, ch]).result
            if masked:
                ok = ir.arith.AndIOp(args[taps + i], args[2 * taps]).result
                v = ir.arith.SelectOp(ok, v, zero).result
            values.append(v)
        return _fma_chain(coefs, values)

    u1 = _generic(ins, maps, [n, th, width, t, c], _map(5, [n_, th_, w_, a_, c_]), rows_body)
    # Tile columns: V[a, b, n, th, tw, c] = sum_j M[b, j] U1[n, th, tw*step + j, a, c]:
    # strided slices read the (overlapping) tiles; iterating (n, th, tw, a, b, c).
    n_, th_, tw_, a_, b_, c_ = _dims(6)
    col_taps = [_strided_slice(u1, 2, j, tw, step) for j in range(taps)]
    out_map = _map(6, [a_, b_, n_, th_, tw_, c_])
    v = _separable_stage(col_taps, matrix, 4, [t, t, n, th, tw, c], out_map, _map(6, [n_, th_, tw_, a_, c_]))
    return _collapse(v, [[0, 1], [2, 3, 4], [5]], [t * t, n * th * tw, c])


def batched_gemm(
    p: WinogradPlan,
    v: ir.Value,
    u: ir.Value,
    isa: str,
    vendor: str | None = None,
    core: str | None = None,
    panel: int | None = None,
) -> ir.Value:
    """``M[t*t, tiles, K] = V x U`` (one GEMM per transform coefficient), with the lowering config
    of the ISA, CPU vendor and core (gemm_config.batch_matmul_compilation_info). With ``panel``,
    U is ``filter_transform``'s ``[t*t, K / panel, C, panel]`` and the GEMM a contraction over
    ``(b, m, j, n, c)`` writing ``[t*t, tiles, K / panel, panel]``, the same memory as the result."""
    zero = ir.arith.ConstantOp(_f32(), 0.0).result
    if panel is None:
        init = ir.linalg.fill(zero, outs=[_empty([p.t * p.t, p.tiles, p.k])])
        result = ir.linalg.batch_matmul(v, u, outs=[init])
        info = batch_matmul_compilation_info(isa, p.t * p.t, p.tiles, p.k, p.c, vendor, core)
        if info is not None:
            result.owner.attributes["compilation_info"] = info
        return result
    shape = [p.t * p.t, p.tiles, p.k // panel, panel]
    init = ir.linalg.fill(zero, outs=[_empty(shape)])
    b_, m_, j_, n_, c_ = _dims(5)
    maps = [_map(5, [b_, m_, c_]), _map(5, [b_, j_, c_, n_]), _map(5, [b_, m_, j_, n_])]
    gemm = ir.contraction(v, u, init, maps, ["parallel"] * 4 + ["reduction"])
    info = batch_matmul_compilation_info(isa, p.t * p.t, p.tiles, p.k, p.c, vendor, core, panel)
    if info is not None:
        gemm.attributes["compilation_info"] = info
    return _collapse(gemm.result, [[0], [1], [2, 3]], [p.t * p.t, p.tiles, p.k])


def output_transform(p: WinogradPlan, mm: ir.Value) -> ir.Value:
    """``y[N, Ho, Wo, K] = A^T M A`` of every tile's GEMM result, in two separable stages (stride-1
    plans; the polyphase ones' sparse ``A^T`` takes ``sparse_output_transform``).

    The rows stage writes ``O1[N, TH, m, TW, t, K]``. The columns stage iterates the NHWC
    result itself, ``(n, oy, ox, k)``, cropped to ``Ho x Wo`` where the tiles overrun it: it
    reads ``O1[n, oy / m, oy % m, ox / m, b, k]`` with ``tensor.extract`` at indices from
    ``linalg.index`` (uniform along the channels, so the loads stay contiguous) and takes
    ``A^T[ox % m, b]`` from a 1-D ``[Wo]`` constant per ``b`` read along ``ox`` (with that
    operand IREE keeps ``ox`` apart from the channels instead of collapsing the iteration
    space into scalar code: 95 against 10 us, 1x256x14x14 below). Its output map is the
    identity, so the epilogue fused after the conv is an elementwise consumer IREE fuses
    into this dispatch, cropped or not.

    Why not the columns stage over ``[N, TH, m, TW, m, K]`` and a crop (as before): the crop
    was a copy dispatch of its own (``slow_memcpy``), and with bias + relu their dispatch:
    3x3 1x256x14x14->256 (F(4x4), 16x16 -> 14x14) 7 dispatches with or without them, now 6;
    the stage one thread 10 + 11 us (copy) -> 10 us (benchmarks/dispatch_profile.py
    --device local-sync); ratio to PyTorch in one process, Zen 4 VM, 1.21 -> 1.26, 8x256x14x14
    1.67 -> 1.80, 8x512x7x7 1.16 -> 1.14, and the uncropped rows of benchmarks/cpu.txt even
    (4x64x56x56 2.34 -> 2.42, + bias + relu 2.42 -> 2.44, s2 0.99 -> 0.99). One stage
    reading a tile's ``t x t`` products per output (a generic over ``(n, th, y, tw, x, k)``)
    lost: 3x3 s2 4x128x28x28->256, one thread, 537-547 us against 153 + 52 us for the two.
    """
    at, _, _ = p.matrices
    t, m, k = p.t, p.out_tile, p.k
    th, tw = p.tiles_h, p.tiles_w
    m6 = ir.expand_shape(mm, [[0, 1], [2, 3, 4], [5]], [t, t, p.n, th, tw, k])
    # Rows: O1[n, th, y, tw, b, k] = sum_a A^T[y, a] M[a, b, n, th, tw, k], iterating (n, th, tw, b, y, k).
    n_, th_, tw_, b_, y_, k_ = _dims(6)
    taps = [_slice(m6, 0, a) for a in range(t)]
    out_map = _map(6, [n_, th_, y_, tw_, b_, k_])
    o1 = _separable_stage(taps, at, 4, [p.n, th, m, tw, t, k], out_map, _map(6, [b_, n_, th_, tw_, k_]))
    # Columns: Y[n, oy, ox, k] = sum_b A^T[ox % m, b] O1[n, oy / m, oy % m, ox / m, b, k].
    n_, oy_, ox_, k_ = _dims(4)
    columns = np.arange(p.out_w) % m
    coefs = [_coefficients(at[columns, b]) for b in range(t)]

    def columns_body(args):
        batch, oy, ox, ch = (ir.linalg.IndexOp(d).result for d in range(4))
        tile_row, y = ir.arith.DivUIOp(oy, _index(m)).result, ir.arith.RemUIOp(oy, _index(m)).result
        tile_col = ir.arith.DivUIOp(ox, _index(m)).result
        values = [ir.tensor.ExtractOp(o1, [batch, tile_row, y, tile_col, _index(b), ch]).result for b in range(t)]
        return _fma_chain(args, values)

    return _generic(coefs, [_map(4, [ox_])] * t, [p.n, p.out_h, p.out_w, k], _map(4, [n_, oy_, ox_, k_]), columns_body)


def _sparse_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's nonzeros of ``matrix`` as (column [rows, L], coefficient [rows, L]), L the most
    in a row; shorter rows padded with zero coefficients on a column of their own."""
    width = max(int(np.count_nonzero(row)) for row in matrix)
    columns = np.zeros((matrix.shape[0], width), dtype=np.int64)
    coefs = np.zeros((matrix.shape[0], width))
    for u, row in enumerate(matrix):
        nonzero = np.flatnonzero(row)
        columns[u, : len(nonzero)], coefs[u, : len(nonzero)] = nonzero, row[nonzero]
        columns[u, len(nonzero) :] = nonzero[-1]
    return columns, coefs


def _table_lookup(u: ir.Value, table: np.ndarray) -> ir.Value:
    """``table[u]`` for an index ``u`` below ``len(table)``: selects among constants, so that the
    value stays uniform along the channels (a ``tensor.extract`` whose index came from a block
    argument would be a gather to IREE's vectorizer)."""
    value = _index(int(table[-1]))
    for i in range(len(table) - 2, -1, -1):
        if table[i] != table[-1]:
            same = ir.arith.CmpIOp(ir.arith.CmpIPredicate.eq, u, _index(i)).result
            value = ir.arith.SelectOp(same, _index(int(table[i])), value).result
    return value


def sparse_output_transform(p: WinogradPlan, mm: ir.Value) -> ir.Value:
    """``Y = A^T M A`` of a stride-2 plan in one stage over the result itself, reading only the
    products each output's row and column of A^T name (``_sparse_rows``).

    The polyphase plans' ``A^T`` are sparse: a transposed (dgrad) plan's rows have F(m, 2)'s
    nonzeros for the two-tap phase and one for the other (for m = 2 at most two, so a DX
    position reads 4 of its tile's 25 products); a forward plan's, ``[F(m, 2)'s A^T | I]``, have
    ``m + 2`` at most (3 for m = 2: 9 reads). One ``linalg.generic`` iterates ``(n, y, x, c)``
    over the NHWC result (cropped where tiles overrun it), finds its products at indices from
    ``linalg.index`` (selects among constants: uniform along the channels, so the loads stay
    contiguous), and takes their coefficients from 1-D ``[H]`` and ``[W]`` constants read along
    ``y`` and ``x`` (which keep IREE from collapsing those dims into the channels). Its output
    map is the identity, so a fused epilogue is an elementwise consumer IREE fuses into it.

    The separable two stages (``output_transform``) wrote an intermediate as large as M for a
    dgrad (tiles of ``2m`` outputs from ``2m + 1`` products) and ran their FMAs over the zeros.
    One thread (benchmarks/dispatch_profile.py --device local-sync), Zen 4 VM, the output
    transform's dispatches, mean (min) us, two stages -> one: dgrad 3x3 s2 8x128x56x56 7,800
    (5,200) -> 3,360 (2,200), the whole call 29.6 -> 26.7 ms; forward 3x3 s2 8x128x56x56 4,400
    (3,100) -> 1,700 (1,500), 1x128x56x56 140 (69) -> 82 (43), 4x64x56x56->128 1,140 (540) -> 700
    (385); the suite's 3x3 s2 + bias + relu even, one dispatch fewer. At 2 threads, in one
    process, the forward rows moved within the host's noise (+-12%: rows whose IR was the same
    moved as much).
    """
    at, _, _ = p.matrices
    t, tile, k = p.t, p.out_tile, p.k
    th, tw = p.tiles_h, p.tiles_w
    m6 = ir.expand_shape(mm, [[0, 1], [2, 3, 4], [5]], [t, t, p.n, th, tw, k])
    columns, coefs = _sparse_rows(at)
    width = columns.shape[1]
    row_coefs = [_coefficients(coefs[np.arange(p.out_h) % tile, i]) for i in range(width)]
    col_coefs = [_coefficients(coefs[np.arange(p.out_w) % tile, j]) for j in range(width)]
    n_, y_, x_, c_ = _dims(4)

    def body(args):
        rcoef, ccoef = args[:width], args[width : 2 * width]
        batch, y, x, ch = (ir.linalg.IndexOp(d).result for d in range(4))
        tile_row, u = ir.arith.DivUIOp(y, _index(tile)).result, ir.arith.RemUIOp(y, _index(tile)).result
        tile_col, v = ir.arith.DivUIOp(x, _index(tile)).result, ir.arith.RemUIOp(x, _index(tile)).result
        col_products = [_table_lookup(v, columns[:, j]) for j in range(width)]
        rows = []
        for i in range(width):
            a = _table_lookup(u, columns[:, i])
            values = [ir.tensor.ExtractOp(m6, [a, b, batch, tile_row, tile_col, ch]).result for b in col_products]
            rows.append(_fma_chain(ccoef, values))
        return _fma_chain(rcoef, rows)

    maps = [_map(4, [y_])] * width + [_map(4, [x_])] * width
    return _generic(row_coefs + col_coefs, maps, [p.n, p.out_h, p.out_w, k], _map(4, [n_, y_, x_, c_]), body)


def winograd_conv(
    p: WinogradPlan,
    x_nhwc: ir.Value,
    w_taps: list[ir.Value],
    isa: str,
    vendor: str | None = None,
    core: str | None = None,
) -> ir.Value:
    """The f32 NHWC result of the 3x3 conv (the plan's stride) of builtin f32 tensors: ``x_nhwc``
    and the filter's nine ``[C, K]`` taps ``w_taps`` (``hwcf_taps``)."""
    panel = winograd_b_panel(isa, p.k, p.tiles, p.c, vendor, core)
    u = filter_transform(p, w_taps, panel)
    v = input_transform(p, x_nhwc)
    products = batched_gemm(p, v, u, isa, vendor, core, panel)
    return sparse_output_transform(p, products) if p.stride == 2 else output_transform(p, products)


def winograd_wgrad(x_nhwc: ir.Value, dy_nhwc: ir.Value, pad, isa: str = "generic") -> ir.Value:
    """The KRSC ``[K, 3, 3, C]`` weight gradient of a 3x3 stride-1 conv, by Winograd F(3x3, 4x4).

    ``dw[r, s] = sum dy[o] x[o + (r, s) - pad]`` over every output position ``o`` is, per
    4x4 tile of DY, a correlation of the 6x6 input tile with the DY tile giving 3x3:
    Winograd F(3, 4) with the same t = 6 transforms as the forward F(4, 3). The sum over
    tiles (and the batch) happens in the transformed domain, as one batched GEMM
    ``M[36, K, C] = D[36, tiles, K]^T x V[36, tiles, C]``; one output transform follows.
    The GEMM's rows are the output channels and its columns the input channels, so the
    transform writes the channels-last (KRSC) gradient with C innermost in both its read
    and its write: no transposing store. With M as [36, C, K] and an HWCF result the final
    KRSC store transposed; against that, ratio to PyTorch, 2 threads, two runs each: Intel
    AVX-512 4x64x28x28->64 0.91-0.96 -> 1.04-1.12, 8x256x14x14->256 0.85-0.88 -> 1.30-1.36,
    1x64x56x56->64 0.86-0.88 -> 1.02-1.04, 8x128x28x28->128 1.38-1.45 -> 1.59-1.64; AVX2
    (x86-64-v3, PyTorch held to AVX2) 1.29 -> 1.43, 1.03 -> 1.36, 1.41 -> 1.58, 1.60 -> 1.73.
    """
    at, g, bt = transform_matrices(3, 4)
    xt, dyt = ir.RankedTensorType(x_nhwc.type), ir.RankedTensorType(dy_nhwc.type)
    c, k = xt.get_dim_size(3), dyt.get_dim_size(3)
    oh, ow = dyt.get_dim_size(1), dyt.get_dim_size(2)
    tiles = (-(-oh // 4), -(-ow // 4))
    v = tile_transform(x_nhwc, bt, 4, pad, tiles, tiles[1] * 4 + 2)
    d = tile_transform(dy_nhwc, g, 4, (0, 0), tiles, tiles[1] * 4)
    zero = ir.arith.ConstantOp(_f32(), 0.0).result
    init = ir.linalg.fill(zero, outs=[_empty([36, k, c])])
    b_, m_, n_, r_ = _dims(4)
    maps = [_map(4, [b_, r_, m_]), _map(4, [b_, r_, n_]), _map(4, [b_, m_, n_])]
    mm = ir.linalg.batch_matmul(d, v, outs=[init], indexing_maps=maps)
    # Its own table per ISA, whatever the vendor (gemm_config.WINOGRAD_GEMM_TILES* say why).
    info = wgrad_batch_matmul_compilation_info(isa, 36, k, c, tiles[0] * tiles[1] * xt.get_dim_size(0))
    if info is not None:
        mm.owner.attributes["compilation_info"] = info
    m6 = ir.expand_shape(mm, [[0, 1], [2], [3]], [6, 6, k, c])
    # Rows: O1[r, b, k, c] = sum_a A^T[r, a] M[a, b, k, c], iterating (b, k, r, c).
    b_, k_, r_, c_ = _dims(4)
    o1 = _separable_stage([_slice(m6, 0, a) for a in range(6)], at, 2, [3, 6, k, c], _map(4, [r_, b_, k_, c_]))
    # Columns: DW[k, r, s, c] = sum_b A^T[s, b] O1[r, b, k, c], iterating (r, k, s, c).
    r_, k_, s_, c_ = _dims(4)
    return _separable_stage(
        [_slice(o1, 1, b) for b in range(6)], at, 2, [k, 3, 3, c], _map(4, [k_, r_, s_, c_]), _map(4, [r_, k_, c_])
    )


def polyphase_wgrad(x_nhwc: ir.Value, dy_nhwc: ir.Value, pad, m: int, isa: str = "generic") -> ir.Value:
    """The KRSC ``[K, 3, 3, C]`` weight gradient of a 3x3 stride-2 conv, by the polyphase F(m, 2).

    The forward conv's 1-D identity ``y = A^T [(G g) * (B^T x)]`` per tile
    (``polyphase_matrices``) makes ``sum_i dy[i] y[i]`` the bilinear form
    ``sum_j (A dy)_j (G g)_j (B^T x)_j``, so the gradient of one tile's filter taps is
    ``G^T [(A dy) * (B^T x)]``: X's tiles transformed as the forward conv's input (``2m + 1``
    wide, ``2m`` apart, the padding folded into the reads), DY's ``m x m`` tiles by ``A``, the sum
    over tiles (and the batch) in the transformed domain as one batched GEMM
    ``M[t*t, K, C] = D[t*t, tiles, K]^T x V[t*t, tiles, C]``, then ``G^T`` along both dims. Per DY
    position and channel pair ``((2m + 1) / m)^2`` multiplies instead of 9: 6.25 for m = 2, 5.06
    for m = 4. The transforms are separable (``tile_transform``) as the stride-1 weight
    gradient's.
    """
    at, g, bt = polyphase_matrices(m)
    t = 2 * m + 1
    xt, dyt = ir.RankedTensorType(x_nhwc.type), ir.RankedTensorType(dy_nhwc.type)
    n, c, k = xt.get_dim_size(0), xt.get_dim_size(3), dyt.get_dim_size(3)
    oh, ow = dyt.get_dim_size(1), dyt.get_dim_size(2)
    tiles = (-(-oh // m), -(-ow // m))
    v = tile_transform(x_nhwc, bt, 2 * m, pad, tiles, tiles[1] * 2 * m + 1)
    d = tile_transform(dy_nhwc, at.T.copy(), m, (0, 0), tiles, tiles[1] * m)
    zero = ir.arith.ConstantOp(_f32(), 0.0).result
    init = ir.linalg.fill(zero, outs=[_empty([t * t, k, c])])
    b_, m_, n_, r_ = _dims(4)
    maps = [_map(4, [b_, r_, m_]), _map(4, [b_, r_, n_]), _map(4, [b_, m_, n_])]
    mm = ir.linalg.batch_matmul(d, v, outs=[init], indexing_maps=maps)
    info = wgrad_batch_matmul_compilation_info(isa, t * t, k, c, tiles[0] * tiles[1] * n)
    if info is not None:
        mm.owner.attributes["compilation_info"] = info
    m4 = ir.expand_shape(mm, [[0, 1], [2], [3]], [t, t, k, c])
    gt = g.T.copy()
    # Rows: O1[r, b, k, c] = sum_a G[a, r] M[a, b, k, c], iterating (b, k, r, c).
    b_, k_, r_, c_ = _dims(4)
    o1 = _separable_stage([_slice(m4, 0, a) for a in range(t)], gt, 2, [KERNEL, t, k, c], _map(4, [r_, b_, k_, c_]))
    # Columns: DW[k, r, s, c] = sum_b G[b, s] O1[r, b, k, c], iterating (r, k, s, c).
    r_, k_, s_, c_ = _dims(4)
    return _separable_stage(
        [_slice(o1, 1, b) for b in range(t)],
        gt,
        2,
        [k, KERNEL, KERNEL, c],
        _map(4, [k_, r_, s_, c_]),
        _map(4, [r_, k_, c_]),
    )
