"""Scaled dot-product attention lowering.

Two emissions, chosen per problem and target by the lowering rules
(fusilli/backend/rules.py; measured on a 2-core CPU against PyTorch,
``fusilli-benchmark --compare torch sdpa``; see BENCHMARKS.md):

* **Decomposed** (CPU; static shapes, at least ``CPU_SDPA_DECOMPOSE_MIN_FLOPS``
  of work and at most ``CPU_SDPA_MAX_SCORES_BYTES`` of f32 scores): ``Q @ K^T``
  (``torch.aten.matmul`` on a permuted K), ``* scale``, mask add (causal: a
  ``where`` on an iota comparison, no constant), the softmax (``linalg.generic``
  row reductions in lanes, ``_softmax``), ``@ V``, in f32 (f16/bf16 inputs are
  widened, the result narrowed): 7-9 dispatches (matmul, the softmax's five to
  seven, matmul; on AMD's cores K^T's copy first, rules.sdpa_gemm_config) with
  IREE's tuned matmul codegen; its ``iree_linalg_ext.attention`` CPU kernel runs
  at 1-4 GFLOP/s (1x8x512x64 f32: ~15x faster decomposed). The matmul flags (O3,
  data tiling, ukernels) measured slower here (more dispatches), so no CPU flag
  rule.
* **Fused** on AMD GPUs always (upstream Fusilli's lowering: IREE's attention
  kernel), as ``iree_linalg_ext.attention`` directly for static shapes (a
  causal mask is a computed boolean ``[1, 1, Sq, Skv]`` operand). On CPU:
  ``torch.aten.scaled_dot_product_attention`` (IREE lowers it to
  ``iree_linalg_ext.attention``) for tiny problems (same speed, 1 dispatch),
  dynamic dims, and scores too large to materialize. An explicit ``scale`` is
  passed to the op (IREE 3.13 lowers it correctly; upstream's #404 XFAIL does
  not reproduce); ``is_causal`` becomes a constant additive mask of the full
  attention shape when small (so it stays 1 dispatch), else a computed
  ``[1, 1, Sq, Skv]`` mask. With a user mask or Hk != Hv (static shapes),
  ``iree_linalg_ext.attention`` is emitted directly instead: the mask (bool
  or float) at its own shape and K/V at their own head counts, broadcast by
  the indexing maps (1 CPU dispatch; torch's lowering materializes the
  broadcast mask / repeated K or V in a second one).

Both fold GQA the same way: K and V are brought to one head count L
(repeating the one with fewer heads only when Hk != Hv), then each group of
Hq/L query heads is folded into q's sequence dim (a free reshape), so
Hk == Hv needs no copy of K/V. Causal rows are top-left aligned like torch's.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from fusilli import ir
from fusilli.backend import rules
from fusilli.backend.targets import Target
from fusilli.ir.torch import builtin_element_type
from fusilli.lowering.emit import EmitContext
from fusilli.lowering.matmul import configured_gemm
from fusilli.lowering.registry import register_lowering
from fusilli.ops.sdpa import SdpaNode
from fusilli.tensor import TensorAttr, data_type_of
from fusilli.types import DataType, torch_code_of


def _repeat_heads(b: ir.TorchBuilder, x: ir.Value, heads: int) -> ir.Value:
    """``[B, H, S, D] -> [B, heads, S, D]`` with head h reading head ``h // (heads // H)``
    (torch's ``repeat_interleave`` on dim 1, as SDPA's enable_gqa does)."""
    tt = ir.TensorType.of(x)
    bsz, h, s, d = tt.dims
    rep = heads // h
    x = b.op("torch.aten.unsqueeze", [x, b.const_int(2)], tt.with_dims([bsz, h, 1, s, d]).to_type())
    x = b.expand(x, [bsz, h, rep, s, d])
    return b.op("torch.aten.reshape", [x, b.int_list([bsz, heads, s, d])], tt.with_dims([bsz, heads, s, d]).to_type())


# A causal mask of at most this many elements is a constant of the full
# attention shape (IREE then keeps the fused op one dispatch).
CONST_CAUSAL_MASK_MAX_ELEMENTS = 1 << 16


# Causal decomposed SDPA (rule cpu-sdpa-causal-query-blocks) is split into
# CAUSAL_ROW_BLOCKS query blocks, block i attending only to keys [0, end of
# block i): 4 blocks compute 10/16 of the scores.
CAUSAL_ROW_BLOCKS = 4


def _causal_keep(b: ir.TorchBuilder, rows: int, sq: int, skv: int, offset: int = 0) -> ir.Value:
    """A boolean ``[rows, Skv]`` tensor, True where key ``j <= i`` for row ``r`` (``i = (r + offset) % Sq``):
    the top-left aligned causal pattern, repeated per group of folded query heads."""
    i64 = "si64"
    r = b.op(
        "torch.aten.arange",
        [b.const_int(rows), b.const_int(4), b.const_none(), b.const_none(), b.const_none()],
        ir.vtensor_type([rows], i64),
    )
    if offset:
        r = b.op("torch.aten.add.Scalar", [r, b.const_int(offset), b.const_int(1)], ir.vtensor_type([rows], i64))
    if rows != sq:
        r = b.op("torch.aten.remainder.Scalar", [r, b.const_int(sq)], ir.vtensor_type([rows], i64))
    r = b.op("torch.aten.unsqueeze", [r, b.const_int(1)], ir.vtensor_type([rows, 1], i64))
    c = b.op(
        "torch.aten.arange",
        [b.const_int(skv), b.const_int(4), b.const_none(), b.const_none(), b.const_none()],
        ir.vtensor_type([skv], i64),
    )
    return b.op("torch.aten.le.Tensor", [c, r], ir.vtensor_type([rows, skv], "i1"))


def _causal_mask(b: ir.TorchBuilder, shape: list[int], sq: int, skv: int, element: DataType) -> ir.Value:
    """An additive causal mask (0 where attended, -inf above the diagonal) for the fused op:
    a constant of the full ``shape`` = [B, L, rows, Skv] when small, else computed as
    ``[1, 1, rows, Skv]``."""
    rows = shape[2]
    if math.prod(shape) <= CONST_CAUSAL_MASK_MAX_ELEMENTS:
        tri = np.where(np.tril(np.ones((sq, skv), dtype=bool)), 0.0, -np.inf)
        values = np.broadcast_to(np.tile(tri, (rows // sq, 1)), shape).astype(element.numpy_dtype)
        tt = ir.TensorType(tuple(shape), element.mlir_name)
        attr = ir.DenseElementsAttr.get(np.ascontiguousarray(values), type=ir.builtin_tensor_type(tt))
        return ir.Operation.create("torch.vtensor.literal", results=[tt.to_type()], attributes={"value": attr}).result
    keep = _causal_keep(b, rows, sq, skv)
    zero = b.scalar_literal(0.0, "f32")
    ninf = b.scalar_literal(-math.inf, "f32")
    m = b.op("torch.aten.where.self", [keep, zero, ninf], ir.vtensor_type([rows, skv], "f32"))
    m = _reshape(b, m, [1, 1, rows, skv])
    return m if element == DataType.FLOAT else b.to_dtype(m, element.mlir_name, torch_code_of(element))


def _reshape(b: ir.TorchBuilder, x: ir.Value, dims: list[int]) -> ir.Value:
    return b.op("torch.aten.reshape", [x, b.int_list(dims)], ir.TensorType.of(x).with_dims(dims).to_type())


def _float_mask(ctx: EmitContext, mask_t: TensorAttr, element: DataType) -> ir.Value:
    """The user mask as an additive mask of ``element`` (boolean: True = attend -> 0, else -inf)."""
    b = ctx.b
    m = ctx.logical(mask_t)
    if mask_t.data_type == DataType.BOOLEAN:
        zero = b.scalar_literal(0.0, "f32")
        ninf = b.scalar_literal(-math.inf, "f32")
        m = b.op("torch.aten.where.self", [m, zero, ninf], ir.TensorType.of(m).with_element("f32").to_type())
    return ctx.cast(m, element)


def _emit_decomposed(
    ctx: EmitContext,
    q: ir.Value,
    k: ir.Value,
    v: ir.Value,
    mask: ir.Value | None,
    causal_sq: int | None,
    scale: float,
    blocks: bool,
) -> ir.Value:
    """``softmax(q @ k^T * scale + mask) @ v`` in f32 on ``[B, L, M, *]`` operands (f32 result);
    with ``blocks`` (causal, no mask, no folded heads) as CAUSAL_ROW_BLOCKS query blocks."""
    b = ctx.b
    q, k, v = (ctx.cast(x, DataType.FLOAT) for x in (q, k, v))
    if mask is not None:
        mask = ctx.cast(mask, DataType.FLOAT)
    gemm_target = ctx.target if rules.sdpa_gemm_config(ctx.target) else None
    qt = ir.TensorType.of(q)
    bsz, groups, rows, _ = qt.dims
    skv, dv = ir.TensorType.of(k).dims[2], ir.TensorType.of(v).dims[3]
    if blocks and causal_sq is not None:
        # Query blocks: block [r0, r1) attends to keys [0, min(r1, Skv)) only.
        bounds = [rows * i // CAUSAL_ROW_BLOCKS for i in range(CAUSAL_ROW_BLOCKS + 1)]
        outs = []
        for r0, r1 in zip(bounds, bounds[1:]):
            kv_end = min(r1, skv)
            qb = _slice(b, q, 2, r0, r1)
            kb, vb = _slice(b, k, 2, 0, kv_end), _slice(b, v, 2, 0, kv_end)
            outs.append(_attend(b, qb, kb, vb, (causal_sq, r0), scale, gemm_target=gemm_target))
        ot = qt.with_dims([bsz, groups, rows, dv]).to_type()
        return b.op("torch.aten.cat", [b.list_of(outs, "vtensor"), b.const_int(2)], ot)
    return _attend(b, q, k, v, None if causal_sq is None else (causal_sq, 0), scale, mask, gemm_target)


def _slice(b: ir.TorchBuilder, x: ir.Value, dim: int, start: int, end: int) -> ir.Value:
    t = ir.TensorType.of(x)
    dims = list(t.dims)
    if start == 0 and end == dims[dim]:
        return x
    dims[dim] = end - start
    return b.op(
        "torch.aten.slice.Tensor",
        [x, b.const_int(dim), b.const_int(start), b.const_int(end), b.const_int(1)],
        t.with_dims(dims).to_type(),
    )


def _attend(
    b: ir.TorchBuilder,
    q: ir.Value,
    k: ir.Value,
    v: ir.Value,
    causal: tuple[int, int] | None,
    scale: float,
    mask: ir.Value | None = None,
    gemm_target: Target | None = None,
) -> ir.Value:
    """``softmax(q @ k^T * scale [causal] [+ mask]) @ v`` on f32 ``[B, L, M, *]`` operands; ``causal``
    is (Sq, the first query row's index) for a top-left aligned causal mask. With ``gemm_target``
    both products are GEMMs with that CPU's lowering config (``matmul.configured_gemm``; K^T copied
    row-major first), else ``torch.aten.matmul`` (IREE's own config)."""
    qt = ir.TensorType.of(q)
    bsz, groups, rows, _ = qt.dims
    skv, dv = ir.TensorType.of(k).dims[2], ir.TensorType.of(v).dims[3]
    st = qt.with_dims([bsz, groups, rows, skv]).to_type()
    if gemm_target is not None and rows < rules.sdpa_gemm_min_rows(gemm_target):
        gemm_target = None  # (a causal query block) too few rows to repay K^T's copy
    if gemm_target is not None:
        s = configured_gemm(b, gemm_target, q, b.permute(k, [0, 1, 3, 2]), copy_rhs=True)
    else:
        s = b.op("torch.aten.matmul", [q, b.permute(k, [0, 1, 3, 2])], st)
    s = b.op("torch.aten.mul.Scalar", [s, b.const_float(scale)], st)
    if causal is not None:
        keep = _causal_keep(b, rows, causal[0], skv, causal[1])
        s = b.op("torch.aten.where.self", [keep, s, b.scalar_literal(-math.inf, "f32")], st)
    if mask is not None:
        s = b.op("torch.aten.add.Tensor", [s, mask, b.const_int(1)], st)
    p = _softmax(b, s)
    if gemm_target is not None:
        return configured_gemm(b, gemm_target, p, v, copy_rhs=False)
    return b.op("torch.aten.matmul", [p, v], qt.with_dims([bsz, groups, rows, dv]).to_type())


# The decomposed softmax's row reductions (max, then the sum of exp(x - max)) run in
# SOFTMAX_LANES independent lanes per row, each a strided slice of it, and the lanes are then
# reduced: IREE vectorizes a reduction along the reduced dim as one horizontal reduction per
# vector, which LLVM expands to a chain of scalar ops for an ordered float sum or a NaN-aware
# max (vaddss, vmaxss + vcmpunordss per element), where per-lane partials are plain vector
# maxima and sums. Zen 5 (znver5), one thread, 1x8x512x64 (dispatch_profile --device
# local-sync): torch's softmax (IREE's linalg.softmax) 2.75 ms, these generics reduced along the
# row 1.79 ms, in lanes 1.40 ms (max 0.19, sum 0.65, normalization 0.56); see BENCHMARKS.md.
# A row of N keys, N no multiple of 16, reduces its last N % 16 keys along the row into the value
# the lanes' reduction starts from: 1x12x197x64, one thread, the call 1.19 -> 0.86 ms (the two
# reductions along the row 0.62 ms, in lanes with the tail 0.16 and a 0.04 ms copy of the slice).
SOFTMAX_LANES = 16


def _softmax(b: ir.TorchBuilder, s: ir.Value) -> ir.Value:
    """``softmax(s)`` over the last dim of the f32 vtensor ``s`` as ``linalg.generic`` ops: the
    row max, the row sum of ``exp(s - max)``, then ``exp(s - max) * (1 / sum)`` (exp computed
    again there, not stored by the sum). The max is ``arith.maxnumf``: a NaN score
    still makes its row NaN through the sum, as torch's softmax does, and a row of -inf scores is
    NaN in both."""
    dims = list(ir.TensorType.of(s).dims)
    rank = len(dims)
    f32 = builtin_element_type("f32")
    x = b.to_builtin(s)

    def maximum(acc: ir.Value, value: ir.Value, *_: ir.Value) -> ir.Value:
        return ir.arith.MaxNumFOp(acc, value).result

    def add_exp(acc: ir.Value, value: ir.Value, row_max: ir.Value) -> ir.Value:
        return ir.arith.AddFOp(acc, ir.math.ExpOp(ir.arith.SubFOp(value, row_max).result).result).result

    def add(acc: ir.Value, value: ir.Value, *_: ir.Value) -> ir.Value:
        return ir.arith.AddFOp(acc, value).result

    row_max = _row_reduce(x, dims, -math.inf, maximum, maximum)
    row_sum = _row_reduce(x, dims, 0.0, add_exp, add, row_max)
    d = [ir.AffineDimExpr.get(i) for i in range(rank)]
    full, row = ir.AffineMap.get(rank, 0, d), ir.AffineMap.get(rank, 0, d[:-1])
    out = ir.tensor.EmptyOp(dims, f32).result
    normalized = ir.linalg.GenericOp(
        [out.type],
        [x, row_max, row_sum],
        [out],
        ir.indexing_maps(full, row, row, full),
        ir.iterator_types(*["parallel"] * rank),
    )
    block = normalized.regions[0].blocks.append(f32, f32, f32, f32)
    with ir.InsertionPoint(block):
        value, m, total, _ = block.arguments
        e = ir.math.ExpOp(ir.arith.SubFOp(value, m).result).result
        # 1 / sum depends on the row only: LLVM hoists it out of the row's loop.
        inv = ir.arith.DivFOp(ir.arith.ConstantOp(f32, 1.0).result, total).result
        ir.linalg.YieldOp([ir.arith.MulFOp(e, inv).result])
    return b.from_builtin(normalized.result, "f32")


def _row_reduce(
    x: ir.Value,
    dims: list[int],
    init: float,
    accumulate: Callable[..., ir.Value],
    combine: Callable[..., ir.Value],
    *row_values: ir.Value,
) -> ir.Value:
    """The reduction of builtin ``x`` (shape ``dims``) over its last dim into ``dims[:-1]``:
    ``acc = accumulate(acc, x[..., j], *row_values[...])`` from ``init``. Where the row holds at
    least two rows of SOFTMAX_LANES lanes (``x[..., i*L + l]`` to lane l), each lane is reduced
    first (the lanes a parallel vector dim) and the lanes then with ``combine``, from the
    reduction of the row's last ``N % L`` values (a tail no lane takes) where there is one."""
    rank = len(dims)
    f32 = builtin_element_type("f32")
    lead = rank - 1  # the row's own dims

    def reduction(
        source: ir.Value,
        shape: list[int],
        lanes: bool,
        body: Callable[..., ir.Value],
        rows: tuple,
        start: ir.Value | None = None,
    ) -> ir.Value:
        loops = len(shape)
        d = [ir.AffineDimExpr.get(i) for i in range(loops)]
        if lanes:  # [..., N / L, L]: reduce dim lead, lanes stay
            out_map = ir.AffineMap.get(loops, 0, [*d[:lead], d[lead + 1]])
            kinds = [*["parallel"] * lead, "reduction", "parallel"]
            out_shape = [*shape[:lead], shape[lead + 1]]
        else:
            out_map = ir.AffineMap.get(loops, 0, d[:lead])
            kinds = [*["parallel"] * lead, "reduction"]
            out_shape = shape[:lead]
        if start is None:
            empty = ir.tensor.EmptyOp(out_shape, f32).result
            start = ir.linalg.fill(ir.arith.ConstantOp(f32, init).result, outs=[empty])
        row_map = ir.AffineMap.get(loops, 0, d[:lead])
        op = ir.linalg.GenericOp(
            [start.type],
            [source, *rows],
            [start],
            ir.indexing_maps(ir.AffineMap.get(loops, 0, d), *[row_map] * len(rows), out_map),
            ir.iterator_types(*kinds),
        )
        block = op.regions[0].blocks.append(*[f32] * (len(rows) + 2))
        with ir.InsertionPoint(block):
            value, *row_args, current = block.arguments
            ir.linalg.YieldOp([body(current, value, *row_args)])
        return op.result

    def columns(begin: int, end: int) -> ir.Value:
        if (begin, end) == (0, dims[-1]):
            return x
        shape = [*dims[:lead], end - begin]
        result = ir.RankedTensorType.get(shape, f32)
        return ir.tensor.ExtractSliceOp(result, x, [], [], [], [0] * lead + [begin], shape, [1] * rank).result

    n = dims[-1]
    whole = n - n % SOFTMAX_LANES
    if whole < 2 * SOFTMAX_LANES:
        return reduction(x, dims, False, accumulate, row_values)
    split = [*dims[:lead], whole // SOFTMAX_LANES, SOFTMAX_LANES]
    groups = [[i] for i in range(lead)] + [[lead, rank]]
    lanes = ir.tensor.ExpandShapeOp(
        ir.RankedTensorType.get(split, f32), columns(0, whole), ir.reassociation(groups), [], split
    )
    partials = reduction(lanes.result, split, True, accumulate, row_values)
    tail = None
    if whole < n:
        tail = reduction(columns(whole, n), [*dims[:lead], n - whole], False, accumulate, row_values)
    return reduction(partials, [*dims[:lead], SOFTMAX_LANES], False, combine, (), tail)


def _direct_attention(
    b: ir.TorchBuilder,
    q: ir.Value,
    k: ir.Value,
    v: ir.Value,
    mask: ir.Value | None,
    scale: float,
) -> ir.Value:
    """``iree_linalg_ext.attention`` on builtin tensors, for static ``q`` = [B, Hq, Sq, D] and
    ``k``/``v`` = [B, Hk, Skv, D] / [B, Hv, Skv, Dv] (Hq a multiple of both, the larger of Hk and
    Hv a multiple of the smaller). Heads are loops of their own: ``lo`` = min(Hk, Hv), ``x`` =
    max/min, ``r`` = Hq/max; q is [B, lo, x, r, Sq, D] and k, v read only the head loops they
    have (free reshapes, no repeated K/V). The mask (bool: True = attend, or float, additive)
    keeps its own shape: its size-1 dims are dropped by a free reshape and its indexing map reads
    the remaining loops, so no broadcast is materialized (torch's SDPA lowering broadcasts it in
    a dispatch of its own). Returns [B, Hq, Sq, Dv] in q's element type."""
    qt = ir.TensorType.of(q)
    bsz, hq, sq, d = qt.dims
    hk, skv = ir.TensorType.of(k).dims[1:3]
    hv, dv = ir.TensorType.of(v).dims[1], ir.TensorType.of(v).dims[3]
    lo, hi = sorted((hk, hv))
    head_loops = [(n, e) for n, e in (("lo", lo), ("x", hi // lo), ("r", hq // hi)) if e > 1 or n == "lo"]
    names = ["b"] + [n for n, _ in head_loops] + ["m", "n", "k1", "k2"]
    loop = {n: ir.AffineDimExpr.get(i) for i, n in enumerate(names)}
    heads = [n for n, _ in head_loops]
    head_dims = [e for _, e in head_loops]

    def kv_heads(h: int) -> list[str]:
        return ["lo", "x"] if h == hi and "x" in heads else ["lo"]

    def amap(*ns: str) -> ir.AffineMap:
        return ir.AffineMap.get(len(names), 0, [loop[n] for n in ns])

    def builtin(x: ir.Value, dims: list[int]) -> ir.Value:
        if list(ir.TensorType.of(x).dims) != dims:
            x = _reshape(b, x, dims)
        return b.to_builtin(x)

    operands = [
        builtin(q, [bsz, *head_dims, sq, d]),
        builtin(k, [bsz, *[e for n, e in head_loops if n in kv_heads(hk)], skv, d]),
        builtin(v, [bsz, *[e for n, e in head_loops if n in kv_heads(hv)], skv, dv]),
        ir.arith.ConstantOp(builtin_element_type("f32"), scale).result,
    ]
    maps = [
        amap("b", *heads, "m", "k1"),
        amap("b", *kv_heads(hk), "k2", "k1"),
        amap("b", *kv_heads(hv), "k2", "n"),
        amap(),
    ]
    if mask is not None:
        md = list(ir.TensorType.of(mask).dims)
        mask_loops: list[str] = []
        mask_dims: list[int] = []
        for size, ls, ext in (
            (md[0], ["b"], [bsz]),
            (md[1], heads, head_dims),
            (md[2], ["m"], [sq]),
            (md[3], ["k2"], [skv]),
        ):
            if size != 1:
                mask_loops += ls
                mask_dims += ext
        operands.append(builtin(mask, mask_dims))
        maps.append(amap(*mask_loops))
    maps.append(amap("b", *heads, "m", "n"))
    element = builtin_element_type(qt.element)
    out = ir.tensor.EmptyOp([bsz, *head_dims, sq, dv], element).result
    f32 = builtin_element_type("f32")
    op = ir.Operation.create(
        "iree_linalg_ext.attention",
        results=[out.type],
        operands=[*operands, out],
        attributes={"indexing_maps": ir.indexing_maps(*maps)},
        regions=1,
    )
    block = op.regions[0].blocks.append(f32)
    with ir.InsertionPoint(block):
        ir.Operation.create("iree_linalg_ext.yield", operands=[block.arguments[0]])
    o = b.op("torch_c.from_builtin_tensor", [op.result], ir.vtensor_type([bsz, *head_dims, sq, dv], qt.element))
    return o if len(head_dims) == 1 else _reshape(b, o, [bsz, hq, sq, dv])


def _zero_fully_masked_rows(ctx: EmitContext, mask_t: TensorAttr | None, o: ir.Value) -> ir.Value:
    """``o`` with 0 in every query row whose keys the mask removes entirely (all False, or all
    -inf), as PyTorch (2.5+, its "safe softmax") returns; softmax over no keys is 0/0 = NaN.

    The rows are found from the mask alone (a reduction over its key dim, at the mask's own,
    usually broadcast, shape) and applied as an elementwise select that fuses with o's consumer.
    """
    if mask_t is None:
        return o
    b = ctx.b
    mask = ctx.logical(mask_t)
    row_dims = mask_t.dim[:-1] + [1]
    keep_dim = [b.int_list([-1]), b.const_bool(True)]
    flag_type = ir.vtensor_type(row_dims, "i1")
    if mask_t.data_type == DataType.BOOLEAN:
        attends = b.op("torch.aten.any.dim", [mask, b.const_int(-1), b.const_bool(True)], flag_type)
    else:
        row_max = b.op("torch.aten.amax", [mask, *keep_dim], ir.vtensor_type(row_dims, data_type_of(mask_t).mlir_name))
        attends = b.op("torch.aten.ne.Scalar", [row_max, b.const_float(-math.inf)], flag_type)
    return b.op("torch.aten.where.ScalarOther", [attends, o, b.const_float(0.0)], o.type)


@register_lowering(SdpaNode)
def emit_sdpa(node: SdpaNode, ctx: EmitContext) -> None:
    b = ctx.b
    q_t, k_t, v_t = node.tensor("Q"), node.tensor("K"), node.tensor("V")
    dt = data_type_of(q_t)
    q, k, v = ctx.input("Q"), ctx.input("K"), ctx.input("V")
    bsz, hq, sq, _ = q_t.dim
    hk, hv, skv, dv = k_t.dim[1], v_t.dim[1], k_t.dim[2], v_t.dim[3]
    mask_t = node.inputs.get("MASK")
    lo, hi = sorted((hk, hv))
    # The target's rules (fusilli/backend/rules.py): decomposed (CPU, with causal
    # query blocks) or fused; f16/bf16 through f32 on CPUs without native dot products.
    algorithm = ctx.choose("algorithm")
    blocks = algorithm is not None and algorithm.rule is rules.CPU_SDPA_CAUSAL_QUERY_BLOCKS
    decomposed = blocks or (algorithm is not None and algorithm.rule is rules.CPU_SDPA_DECOMPOSED)
    on_gpu = algorithm is not None and algorithm.rule is rules.AMDGPU_SDPA_FUSED_ATTENTION
    compute = ctx.choose("compute")
    if compute is not None and compute.rule is rules.CPU_LOW_PRECISION_VIA_F32:
        q, k, v = (ctx.cast(x, DataType.FLOAT) for x in (q, k, v))
        dt = DataType.FLOAT
    static = not any(t.dynamic_dims for t in (q_t, k_t, v_t) + ((mask_t,) if mask_t is not None else ()))
    if (
        (mask_t is not None or hk != hv or on_gpu)
        and hi % lo == 0
        and (not node.attrs.is_causal or on_gpu)
        and not decomposed
        and static
    ):
        # iree_linalg_ext.attention directly, broadcasting by indexing maps (a mask
        # or Hk != Hv: 1 CPU dispatch where torch's SDPA lowering materializes the
        # broadcast mask or repeated K/V; on AMD GPUs always, as upstream Fusilli).
        m = None
        if mask_t is not None:
            m = ctx.logical(mask_t)
            if mask_t.data_type != DataType.BOOLEAN:
                m = ctx.cast(m, dt)
        elif node.attrs.is_causal:
            m = _reshape(b, _causal_keep(b, sq, sq, skv), [1, 1, sq, skv])
        direct_scale = node.attrs.scale if node.attrs.scale is not None else 1.0 / math.sqrt(q_t.dim[3])
        ctx.define("O", _zero_fully_masked_rows(ctx, mask_t, _direct_attention(b, q, k, v, m, direct_scale)))
        return
    # GQA: bring K and V to one head count L (repeating the one with fewer heads,
    # or both to Hq), then fold each group of Hq/L query heads into the sequence
    # dim of q: [B, Hq, Sq, D] -> [B, L, (Hq/L)*Sq, D]. That reshape is free, so
    # the common Hk == Hv case stays one attention dispatch with no copies of K/V.
    groups = hq
    if hk != hq or hv != hq:
        groups = hi if hi % lo == 0 else hq
        if hk != groups:
            k = _repeat_heads(b, k, groups)
        if hv != groups:
            v = _repeat_heads(b, v, groups)
    rep = hq // groups
    if rep > 1:
        q = _reshape(b, q, [bsz, groups, rep * sq, q_t.dim[3]])
    mask = None
    if mask_t is not None:
        mask = _float_mask(ctx, mask_t, DataType.FLOAT if decomposed else dt)
        if rep > 1:
            mask = _reshape(b, b.expand(mask, [bsz, hq, sq, skv]), [bsz, groups, rep * sq, skv])
    scale = node.attrs.scale
    if decomposed:
        o = _emit_decomposed(
            ctx,
            q,
            k,
            v,
            mask,
            sq if node.attrs.is_causal else None,
            scale if scale is not None else 1.0 / math.sqrt(q_t.dim[3]),
            blocks,
        )
        if rep > 1:
            o = _reshape(b, o, [bsz, hq, sq, dv])
        ctx.define("O", _zero_fully_masked_rows(ctx, mask_t, o))  # casts back to O's data type
        return
    if node.attrs.is_causal:
        mask = _causal_mask(b, [bsz, groups, rep * sq, skv], sq, skv, dt)
    elif mask is None:
        mask = b.const_none()
    o_type = ir.TensorType.of(q).with_dims([bsz, groups, rep * sq, dv]).with_element(dt.mlir_name)
    o = b.op(
        "torch.aten.scaled_dot_product_attention",
        [
            q,
            k,
            v,
            mask,
            b.const_float(0.0),
            b.const_bool(False),
            b.const_none() if scale is None else b.const_float(scale),
            b.const_bool(False),
        ],
        o_type.to_type(),
    )
    if rep > 1:
        o = _reshape(b, o, [bsz, hq, sq, dv])
    ctx.define("O", _zero_fully_masked_rows(ctx, mask_t, o))
