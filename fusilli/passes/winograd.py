"""Winograd F(m x m, 3 x 3) convolution built as linalg ops (used by ``fusilli-conv-layout``).

A 3x3, stride-1, dilation-1 NHWC convolution ``y = x * g`` becomes, with
``t = m + 2`` and the output cut into ``m x m`` tiles,

1. the **filter transform** ``U = G g G^T`` (two separable all-parallel
   ``linalg.generic`` stages over the HWCF filter, inside the graph: it is cheap),
2. the **input transform** ``V = B^T d B`` of every ``t x t`` input tile (tiles
   overlap by 2), again two separable stages; the first reads the unpadded input
   with clamped ``tensor.extract`` and zeroes the taps that fall into the
   padding (``arith.select`` on 1-D masks along tile rows and padded columns),
   so no padded copy of the input is made,
3. one batched GEMM ``M[t*t, tiles, K] = V[t*t, tiles, C] x U[t*t, C, K]``
   carrying an explicit CPU lowering config (fusilli/passes/gemm_config.py),
4. the **output transform** ``Y = A^T M A``: two separable stages writing
   the NHWC result; the epilogue fused after the conv (bias, activation, any
   pointwise chain) is an elementwise consumer of the last stage, which IREE
   fuses into that dispatch.

Every stage is a ``linalg.generic`` whose iteration space puts the transform's
coefficient dimension right outside the channel dimension (the channels are
the vectorized, contiguous dimension) and whose body is a chain of
``math.fma`` with the coefficients read from a small constant tensor
broadcast by the indexing maps. This shape of IR is what IREE 3.13
vectorizes well; its own Winograd pass (scalar transforms) is 3x slower
(measurements in ../shared/reference/winograd-cpu.md and BENCHMARKS.md).

The transform matrices are the Cook-Toom ones for the interpolation points
of Lavin & Gray (0, +-1, +-2, +-1/2, ... and infinity); ``transform_matrices``
builds them and checks they compute a correlation exactly (in float64).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from fusilli import ir
from fusilli.passes.gemm_config import batch_matmul_compilation_info

# Finite interpolation points per output tile size m (alpha - 1 = m + 1 of them).
_POINTS = {
    2: (0.0, 1.0, -1.0),
    4: (0.0, 1.0, -1.0, 2.0, -2.0),
    6: (0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5),
}
KERNEL = 3


@dataclass(frozen=True)
class WinogradPlan:
    """The tiling of one conv: output tile ``m``, input tile ``t = m + 2``, tile counts."""

    m: int
    n: int
    h: int
    w: int
    c: int
    k: int
    out_h: int
    out_w: int
    pad: tuple[int, int]

    @property
    def t(self) -> int:
        return self.m + KERNEL - 1

    @property
    def tiles_h(self) -> int:
        return -(-self.out_h // self.m)

    @property
    def tiles_w(self) -> int:
        return -(-self.out_w // self.m)

    @property
    def padded_w(self) -> int:
        """Width of the (virtually) padded input the row stage produces."""
        return self.tiles_w * self.m + KERNEL - 1

    @property
    def tiles(self) -> int:
        return self.n * self.tiles_h * self.tiles_w


@functools.cache
def transform_matrices(m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A^T [m, t], G [t, 3], B^T [t, t]) of F(m, 3), float64.

    A^T and G follow Cook-Toom for the points of ``_POINTS[m]`` plus infinity;
    B^T is then the unique matrix with ``A^T diag(G e_k) B^T = shift_k`` for
    every filter tap k (the 1-D correlation identity), solved exactly.
    """
    points = _POINTS[m]
    t = m + KERNEL - 1
    at = np.zeros((m, t))
    g = np.zeros((t, KERNEL))
    for j, p in enumerate(points):
        at[:, j] = [p**i for i in range(m)]
        f = np.prod([p - q for q in points if q != p])
        g[j] = [p**k / f for k in range(KERNEL)]
    at[m - 1, t - 1] = 1.0
    g[t - 1, KERNEL - 1] = 1.0
    # Solve for B^T: for each tap k, sum_j at[i, j] g[j, k] bt[j, l] = [l == i + k].
    rows, rhs = [], []
    for k in range(KERNEL):
        for i in range(m):
            for col in range(t):
                coeffs = np.zeros((t, t))
                coeffs[:, col] = at[i] * g[:, k]
                rows.append(coeffs.ravel())
                rhs.append(1.0 if col == i + k else 0.0)
    bt, *_ = np.linalg.lstsq(np.array(rows), np.array(rhs), rcond=None)
    bt = bt.reshape(t, t)
    bt[np.abs(bt) < 1e-12] = 0.0
    check = [at @ np.diag(g[:, k]) @ bt for k in range(KERNEL)]
    for k, c in enumerate(check):
        if not np.allclose(c, np.eye(m, t, k), atol=1e-9):
            raise AssertionError(f"F({m},3) transform matrices do not compute a correlation (tap {k})")
    return at, g, bt


def plan(x_dims: tuple[int, ...], k: int, out_hw: tuple[int, int], pad: tuple[int, int], m: int) -> WinogradPlan:
    n, h, w, c = x_dims
    return WinogradPlan(m, n, h, w, c, k, out_hw[0], out_hw[1], (pad[0], pad[1]))


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


def _strided_slice(value: ir.Value, dim: int, offset: int, count: int, stride: int) -> ir.Value:
    """``value[..., offset : offset + stride * count : stride, ...]`` along ``dim``."""
    src = ir.RankedTensorType(value.type)
    sizes = [src.get_dim_size(i) for i in range(src.rank)]
    offsets, strides = [0] * src.rank, [1] * src.rank
    offsets[dim], strides[dim], sizes[dim] = offset, stride, count
    result = ir.RankedTensorType.get(sizes, src.element_type)
    return ir.tensor.ExtractSliceOp(result, value, [], [], [], offsets, sizes, strides).result


def _reassoc(groups: list[list[int]]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in g]) for g in groups])


def _collapse(value: ir.Value, groups: list[list[int]], shape: list[int]) -> ir.Value:
    return ir.tensor.CollapseShapeOp(ir.RankedTensorType.get(shape, _f32()), value, _reassoc(groups)).result


def _expand(value: ir.Value, groups: list[list[int]], shape: list[int]) -> ir.Value:
    return ir.tensor.ExpandShapeOp(ir.RankedTensorType.get(shape, _f32()), value, _reassoc(groups), [], shape).result


# ----------------------------------------------------------------------------- the stages


def filter_transform(p: WinogradPlan, w_hwcf: ir.Value) -> ir.Value:
    """``U[t*t, C, K] = G g G^T`` of the HWCF filter ``g``."""
    _, g, _ = transform_matrices(p.m)
    t, c, k = p.t, p.c, p.k
    # Filter rows: U1[a, s, c, k] = sum_r G[a, r] g[r, s, c, k], iterating (s, c, a, k).
    s_, c_, a_, k_ = _dims(4)
    taps = [_slice(w_hwcf, 0, r) for r in range(KERNEL)]
    u1 = _separable_stage(taps, g, 2, [t, KERNEL, c, k], _map(4, [a_, s_, c_, k_]))
    # Filter columns: U[a, b, c, k] = sum_s G[b, s] U1[a, s, c, k], iterating (a, c, b, k).
    a_, c_, b_, k_ = _dims(4)
    taps = [_slice(u1, 1, s) for s in range(KERNEL)]
    u = _separable_stage(taps, g, 2, [t, t, c, k], _map(4, [a_, b_, c_, k_]))
    return _collapse(u, [[0, 1], [2], [3]], [t * t, c, k])


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
    _, _, bt = transform_matrices(p.m)
    t, m, c = p.t, p.m, p.c
    th, tw, wp = p.tiles_h, p.tiles_w, p.padded_w
    i1 = ir.IntegerType.get_signless(1)
    # Tile rows: U1[n, th, w', a, c] = sum_i B^T[a, i] x[n, th*m + i - ph, w' - pw, c] over the
    # padded width w'. The input is read with clamped indices and out-of-bounds taps are
    # zeroed by 1-D masks along tile rows and padded columns (with one 1-D operand per
    # dim IREE keeps the dims apart instead of collapsing them into scalar code).
    row_ok = [_in_bounds(p.h, th, m, i, p.pad[0]) for i in range(t)]
    col_ok = _in_bounds(p.w, wp, 1, 0, p.pad[1])
    masked = not (all(ok.all() for ok in row_ok) and col_ok.all())
    n_, th_, w_, a_, c_ = _dims(5)
    ins = [_coefficients(bt[:, i]) for i in range(t)]
    maps = [_map(5, [a_])] * t
    if masked:
        ins += [_dense(ok, i1) for ok in row_ok] + [_dense(col_ok, i1)]
        maps += [_map(5, [th_])] * t + [_map(5, [w_])]

    def rows_body(args):
        coefs = args[:t]
        # Source indices come from linalg.index (not from operands): IREE's vectorizer then
        # sees them uniform along the channel dim and emits contiguous loads, not gathers.
        n, tile_row, col, ch = (ir.linalg.IndexOp(d).result for d in (0, 1, 2, 4))
        col = _clamped(ir.arith.SubIOp(col, _index(p.pad[1])).result, p.w)
        row0 = ir.arith.MulIOp(tile_row, _index(m)).result
        zero = ir.arith.ConstantOp(_f32(), 0.0).result
        values = []
        for i in range(t):
            row = _clamped(ir.arith.AddIOp(row0, _index(i - p.pad[0])).result, p.h)
            v = ir.tensor.ExtractOp(x_nhwc, [n, row, col, ch]).result
            if masked:
                ok = ir.arith.AndIOp(args[t + i], args[2 * t]).result
                v = ir.arith.SelectOp(ok, v, zero).result
            values.append(v)
        return _fma_chain(coefs, values)

    u1 = _generic(ins, maps, [p.n, th, wp, t, c], _map(5, [n_, th_, w_, a_, c_]), rows_body)
    # Tile columns: V[a, b, n, th, tw, c] = sum_j B^T[b, j] U1[n, th, tw*m + j, a, c]: strided
    # slices read the overlapping tiles; iterating (n, th, tw, a, b, c).
    n_, th_, tw_, a_, b_, c_ = _dims(6)
    taps = [_strided_slice(u1, 2, j, tw, m) for j in range(t)]
    out_map = _map(6, [a_, b_, n_, th_, tw_, c_])
    v = _separable_stage(taps, bt, 4, [t, t, p.n, th, tw, c], out_map, _map(6, [n_, th_, tw_, a_, c_]))
    return _collapse(v, [[0, 1], [2, 3, 4], [5]], [t * t, p.tiles, c])


def batched_gemm(p: WinogradPlan, v: ir.Value, u: ir.Value, isa: str) -> ir.Value:
    """``M[t*t, tiles, K] = V x U`` (one GEMM per transform coefficient), with a lowering config."""
    zero = ir.arith.ConstantOp(_f32(), 0.0).result
    init = ir.linalg.fill(zero, outs=[_empty([p.t * p.t, p.tiles, p.k])])
    result = ir.linalg.batch_matmul(v, u, outs=[init])
    info = batch_matmul_compilation_info(isa, p.t * p.t, p.tiles, p.k, p.c)
    if info is not None:
        result.owner.attributes["compilation_info"] = info
    return result


def output_transform(p: WinogradPlan, mm: ir.Value) -> ir.Value:
    """``y[N, Ho, Wo, K] = A^T M A`` of every tile's GEMM result."""
    at, _, _ = transform_matrices(p.m)
    t, m, k = p.t, p.m, p.k
    th, tw = p.tiles_h, p.tiles_w
    m6 = _expand(mm, [[0, 1], [2, 3, 4], [5]], [t, t, p.n, th, tw, k])
    # Rows: O1[n, th, y, tw, b, k] = sum_a A^T[y, a] M[a, b, n, th, tw, k], iterating (n, th, tw, b, y, k).
    n_, th_, tw_, b_, y_, k_ = _dims(6)
    taps = [_slice(m6, 0, a) for a in range(t)]
    out_map = _map(6, [n_, th_, y_, tw_, b_, k_])
    o1 = _separable_stage(taps, at, 4, [p.n, th, m, tw, t, k], out_map, _map(6, [b_, n_, th_, tw_, k_]))
    # Columns: Y[n, th, y, tw, x, k] = sum_b A^T[x, b] O1[n, th, y, tw, b, k], iterating as stored.
    n_, th_, y_, tw_, x_, k_ = _dims(6)
    taps = [_slice(o1, 4, b) for b in range(t)]
    y6 = _separable_stage(taps, at, 4, [p.n, th, m, tw, m, k], _map(6, [n_, th_, y_, tw_, x_, k_]))
    y = _collapse(y6, [[0], [1, 2], [3, 4], [5]], [p.n, th * m, tw * m, k])
    if (th * m, tw * m) != (p.out_h, p.out_w):
        y = ir.tensor.ExtractSliceOp(
            ir.RankedTensorType.get([p.n, p.out_h, p.out_w, k], _f32()),
            y,
            [],
            [],
            [],
            [0, 0, 0, 0],
            [p.n, p.out_h, p.out_w, k],
            [1, 1, 1, 1],
        ).result
    return y


def winograd_conv(p: WinogradPlan, x_nhwc: ir.Value, w_hwcf: ir.Value, isa: str) -> ir.Value:
    """The f32 NHWC result of the 3x3 stride-1 conv of builtin f32 tensors ``x_nhwc`` and ``w_hwcf``."""
    u = filter_transform(p, w_hwcf)
    v = input_transform(p, x_nhwc)
    return output_transform(p, batched_gemm(p, v, u, isa))
