"""Channels-last convolutions as layout-native linalg ops (``fusilli-conv-layout``).

Emission gives every convolution logical NCHW operands: a conv on NHWC tensors
reads ``permute(x, [0, 3, 1, 2])`` and its result is permuted back to NHWC.
IREE then runs an NCHW conv with transposes around it, several dispatches and
a slow convolution on CPU. This pass rewrites a 2-D ``torch.aten.convolution``
whose input comes from a channels-last permute (one group, static shapes,
floating point) into

* ``linalg.conv_2d_nhwc_hwcf`` on builtin tensors (``tensor.pad`` for the
  padding, ``linalg.fill`` for the accumulator), the filter transposed to HWCF
  once per call (never FHWC on CPU: IREE's FHWC convs are very slow), or
* for 1x1 filters with unit stride and no padding, a plain ``torch.aten.mm``
  over ``[N*H*W, C] x [C, K]``,

framed by ``permute(..., [0, 2, 3, 1])`` of the input and
``permute(y, [0, 3, 1, 2])`` of the result, then runs ``fusilli-layout`` so
these permutes cancel against emission's: no activation transpose remains.
f16/bf16 convs compute in f32 (inputs cast, one rounding of the result, which
epilogue fusion folds into the epilogue); IREE 3.13 cannot im2col an f16/bf16
conv and its direct f16 conv is very slow. A channels-last ungrouped 3-D conv (forward, or the
forward conv a stride-1 dgrad runs as) and 3-D weight gradient are first folded into 2-D ones, their
depth taps gathered into the channels (_fold_depth, _fold_wgrad_depth; rules.depth_folded), which
everything below then takes. Other convs (1-D, other 3-D ones, NCHW
inputs, dynamic shapes, grouped ones cpu-conv-grouped-direct leaves) stay ``torch.aten.convolution``; an f16/bf16 one
among them is computed in f32 the same way (cast inputs, conv, one rounding),
so the im2col flags of fusilli/backend/targets.py are safe for every
f16/bf16 conv.

Heavy bf16 convs (``fusilli.pipeline.CONV_LOWERING``) instead become an explicit im2col: a
``linalg.generic`` gathering (padded) NHWC patches into ``[N*Ho*Wo, R*S*C]``
(a reshape for 1x1 unit-stride unpadded convs) and a ``linalg.matmul`` with the
KRSC filter reshaped to ``[K, R*S*C]`` read transposed (no filter permute for a
channels-last filter), bf16 operands and an f32 accumulator, rounded once.
IREE data-tiles that into its fast bf16 ukernel; its own im2col cannot
handle a bf16-operand, f32-accumulator conv.

Large 1x1 and strided convs on AVX2 / AVX-512 (rule cpu-conv-im2col-gemm) are one
f32 ``linalg.matmul`` of the patches (gathered through the padding, a reshape for
1x1) and the HWCF filter, carrying an explicit lowering config
(fusilli/passes/gemm_config.py): IREE does not data-tile it, so the epilogue fuses
into the GEMM's dispatch instead of needing an encode dispatch for the bias. On AMD's
AVX-512 cores a strided unpadded 1x1 conv reads its rows as a view of the input split by
the stride (_strided_1x1_rows), a GEMM whose rows are two loops, with no gather dispatch.

Depthwise convs (one filter per channel) become linalg.depthwise_conv_2d_nhwc_hwc over the padded
NHWC input (_rewrite_depthwise, cpu-conv-depthwise); other grouped convs a direct conv over the
padded NHWC input vectorized along each group's output channels (_rewrite_grouped,
conv_direct.grouped_conv, cpu-conv-grouped-direct).

3x3 convs go to Winograd where the rules say it pays (fusilli/passes/winograd.py):
F(m, 3) for stride 1 (cpu-conv-winograd), and for stride 2 Winograd over the input's
four phases (cpu-conv-winograd-strided).

Data gradients: a stride-1 dgrad is emitted as the forward conv of DY with the flipped
filter, which every path above reads unflipped from the forward filter (_flipped_taps); a
strided one is a transposed conv, rewritten (_rewrite_strided_dgrad) into Winograd per DX phase
for 3x3 stride 2 (cpu-conv-dgrad-winograd-strided) or else one GEMM of DY and the forward
filter and a col2im gather (cpu-conv-dgrad-col2im-gemm). Weight gradients
(``convolution_backward``) are Winograd (3x3 stride 1; 3x3 stride 2 over X's phases), GEMMs over
blocks of filter rows for few input channels and tall filters (the 7x7 stem, _row_block_wgrad) or
one GEMM over the output positions (_rewrite_wgrad; over many positions a batched GEMM over chunks
of them and the partials' sum, _chunked_wgrad_gemm). An operand with one channel (X of a grayscale
first layer) comes without a permute, its NHWC and NCHW being the same memory.

IREE's Winograd rewrite was measured too (see below) and is not used.
"""

from __future__ import annotations

from collections.abc import Callable

from fusilli import ir, pipeline
from fusilli.backend import rules
from fusilli.backend.targets import Target, cpu_core, cpu_vendor
from fusilli.errors import ErrorCode, fail
from fusilli.ir.rewrite import (
    block_ops,
    constant_value,
    defining_op,
    erase_dead,
    func_blocks,
    int_list_value,
    permutation_of,
)
from fusilli.ir.torch import DYNAMIC, builtin_element_type
from fusilli.passes import Pass, conv_direct, gemm_config, register_pass, winograd
from fusilli.passes.layout import FoldPermutesPass
from fusilli.types import DataType

TO_NHWC = [0, 2, 3, 1]
TO_NCHW = [0, 3, 1, 2]
TO_HWCF = [2, 3, 1, 0]  # logical KCYX filter -> YXCK
# torch dtype codes of the floating element types this pass computes in f32.
_FLOAT_CODES = {"f32": 6, "f16": 5, "bf16": 15}
# How a rewritten conv is computed: "winograd<m>" (Winograd F(m, 3) for 3x3
# stride-1 convs, fusilli/passes/winograd.py), "polyphase<m>" (3x3 stride-2 convs as
# Winograd F(m, 2) over the input's phases), "im2col" (explicit patch gather + a
# mixed-precision linalg.matmul over a KRSC filter), "gemm" (patches read through
# the padding x the HWCF filter, an f32 matmul with the ISA's explicit lowering
# config, no data tiling: cpu-conv-im2col-gemm), "linalg"
# (linalg.conv_2d_nhwc_hwcf, or torch.aten.mm for 1x1) or "auto": what the
# target's lowering rules choose (fusilli/backend/rules.py: im2col for heavy
# bf16 convs on CPUs with native bf16 dot products, else linalg; f16/bf16 in
# f32). FUSILLI_CONV_LOWERING (fusilli.pipeline.CONV_LOWERING) overrides it
# for measuring; it is one of the pass's cache-key options.
#
# Measured side by side with PyTorch on the 2-core Zen 4 (fusilli-benchmark
# --compare torch, min of 20): bf16 3x3 4x64x56x56->64 ~10.5 ms -> ~6.3 ms
# (bf16 x bf16 -> f32 data-tiled ukernel matmul; torch 2.05 ms); f32 3x3 the
# same as IREE's own im2col (9.4 ms); f32 3x3 s2 and 1x1, f16 3x3 (widened to
# f32) 5-15% slower than the linalg path, which they keep. IREE's Winograd
# rewrite (all 3x3 convs) ran f32 3x3 at 9.2 ms vs 9.4 with 9 dispatches instead
# of 4 and 5e-5 max error: not enabled.


@register_pass
class ConvLayoutPass(Pass):
    name: str = "fusilli-conv-layout"
    description = "channels-last 2-D convs as linalg.conv_2d_nhwc_hwcf (or a matmul for 1x1), f16/bf16 in f32"

    def run(self, module: ir.Module) -> None:
        if pipeline.CONV_LOWERING not in pipeline.CONV_LOWERINGS:
            raise fail(
                ErrorCode.INVALID_ARGUMENT,
                f"FUSILLI_CONV_LOWERING={pipeline.CONV_LOWERING!r}: expected one of {', '.join(pipeline.CONV_LOWERINGS)}",
            )
        target = self.lowering_target()
        # On AMD GPUs convs stay torch.aten.convolution in their own type (upstream
        # Fusilli's lowering): only a CPU target has a rule for this pass's rewrites.
        algorithm = rules.choose(rules.Problem("conv_fprop", DataType.FLOAT), target, "algorithm")
        if algorithm is None or algorithm.rule is not rules.CPU_CONV_CHANNELS_LAST_LINALG:
            return
        changed = False
        with module.context:
            for block in func_blocks(module):
                for op in block_ops(block):
                    if op.name == "torch.aten.convolution":
                        # A 3-D conv becomes the 2-D one the rewrites below take.
                        folded = _fold_depth(op)
                        op = folded or op
                        rewritten = (
                            _rewrite(op, target)
                            or _rewrite_depthwise(op, target)
                            or _rewrite_grouped(op, target)
                            or _rewrite_strided_dgrad(op, target)
                            or _compute_in_f32(op)
                        )
                        changed = changed or folded is not None or rewritten
                    elif op.name == "torch.aten.convolution_backward":
                        folded = _fold_wgrad_depth(op)
                        op = folded or op
                        rewritten = _rewrite_wgrad(op, target) or _rewrite_grouped_wgrad(op, target)
                        changed = changed or folded is not None or rewritten
        if changed:
            FoldPermutesPass().run(module)


def _channels_last_conv_types(op: ir.Operation) -> tuple[ir.TensorType, ir.TensorType, ir.TensorType] | None:
    """The (input, filter, result) types of a ``torch.aten.convolution`` this pass may rewrite: rank
    4, static, one float type, no bias, its input (X, or DY for a transposed conv) from a
    channels-last tensor (else the rewrite adds transposes); else None."""
    x, w, bias = op.operands[0], op.operands[1], op.operands[2]
    xt, wt, yt = ir.TensorType.of(x), ir.TensorType.of(w), ir.TensorType.of(op.results[0])
    if xt.rank != 4 or wt.rank != 4 or any(d == DYNAMIC for d in xt.dims + wt.dims + yt.dims):
        return None
    if xt.element not in _FLOAT_CODES or wt.element != xt.element or yt.element != xt.element:
        return None
    bias_op = defining_op(bias)
    if bias_op is None or bias_op.name != "torch.constant.none" or permutation_of(defining_op(x)) != TO_NCHW:
        return None
    return xt, wt, yt


def _conv_params(op: ir.Operation):
    """(stride, padding, dilation) if ``op`` is a conv this pass handles, else None."""
    if _channels_last_conv_types(op) is None:
        return None
    params = _static_conv_params(op, 3)
    if params is None:
        return None
    stride, padding, dilation = params
    if len(stride) != 2 or len(padding) != 2 or len(dilation) != 2:
        return None
    return stride, padding, dilation


TO_NDHWC = [0, 2, 3, 4, 1]
TO_NCDHW = [0, 4, 1, 2, 3]


def _as_nchw(b: ir.TorchBuilder, value: ir.Value, element: str) -> ir.Value:
    """The channels-last rank-4 builtin tensor ``value`` as the NCHW-ordered torch tensor a 2-D conv
    takes (its permute cancels against the rewrites' own, FoldPermutesPass)."""
    dims = [ir.RankedTensorType(value.type).get_dim_size(i) for i in range(4)]
    return b.permute(b.op("torch_c.from_builtin_tensor", [value], ir.vtensor_type(dims, element)), TO_NCHW)


def _gathered_depth_taps(b: ir.TorchBuilder, x: ir.Value, out_depth: int, taps: int, stride, pad, dilation) -> ir.Value:
    """The NCDHW-ordered 3-D conv input ``x`` with its depth taps gathered into the channels
    (conv_direct.depth_taps) as the 2-D conv input ``[N*Do, T*C, H, W]``: what both folds read."""
    gathered = conv_direct.depth_taps(b.to_builtin(b.permute(x, TO_NDHWC)), out_depth, taps, stride, pad, dilation)
    return _as_nchw(b, gathered, ir.TensorType.of(x).element)


def _fold_depth(op: ir.Operation) -> ir.Operation | None:
    """A channels-last, ungrouped, static 3-D ``torch.aten.convolution`` (a forward conv, or the
    forward conv of DY a stride-1 data gradient runs as) rewritten as the 2-D conv of its input with
    the depth taps gathered into the channels (rules.depth_folded, conv_direct.depth_taps) and the
    filter read as ``[K, R, S, T*C]``; returns the new 2-D conv (for the rewrites above), or None.

    The 2-D conv's result ``[N*Do, Ho, Wo, K]`` is the 3-D result's NDHWC memory: a reshape, and
    the permutes around it cancel against emission's (FoldPermutesPass), as for a 2-D conv."""
    x, w, bias = op.operands[0], op.operands[1], op.operands[2]
    xt, wt, yt = ir.TensorType.of(x), ir.TensorType.of(w), ir.TensorType.of(op.results[0])
    if xt.rank != 5 or wt.rank != 5 or any(d == DYNAMIC for d in xt.dims + wt.dims + yt.dims):
        return None
    if xt.element not in _FLOAT_CODES or wt.element != xt.element or yt.element != xt.element:
        return None
    bias_op = defining_op(bias)
    if bias_op is None or bias_op.name != "torch.constant.none" or permutation_of(defining_op(x)) != TO_NCDHW:
        return None
    params = _static_conv_params(op, 3)
    if params is None or len(params[0]) != 3:
        return None
    (sd, sh, sw), (pd, ph, pw), (dd, dh, dw) = params
    k, _, t = wt.dims[:3]
    n, _, do, ho, wo = yt.dims
    element = yt.element
    b = ir.TorchBuilder()
    with ir.InsertionPoint(op), op.location:
        x2 = _gathered_depth_taps(b, x, do, t, sd, pd, dd)
        # The filter [K, C, T, R, S] as KRSC of T*C channels, tap-major like the gathered input.
        w_krstc = b.to_builtin(b.permute(w, [0, 3, 4, 2, 1]))
        w_krsc = ir.collapse_shape(w_krstc, [[0], [1], [2], [3, 4]])
        w2 = _as_nchw(b, w_krsc, element)
        conv2d = b.op(
            "torch.aten.convolution",
            [
                x2,
                w2,
                b.const_none(),
                b.int_list([sh, sw]),
                b.int_list([ph, pw]),
                b.int_list([dh, dw]),
                b.const_bool(False),
                b.int_list([]),
                b.const_int(1),
            ],
            ir.vtensor_type([n * do, k, ho, wo], element),
        )
        y2 = b.to_builtin(b.permute(conv2d, TO_NHWC))
        y_ndhwc = ir.expand_shape(y2, [[0, 1], [2], [3], [4]], [n, do, ho, wo, k])
        y = b.permute(
            b.op("torch_c.from_builtin_tensor", [y_ndhwc], ir.vtensor_type([n, do, ho, wo, k], element)), TO_NCDHW
        )
    op.results[0].replace_all_uses_with(y)
    op.erase()
    return defining_op(conv2d)


def _channels_last_5d(v: ir.Value) -> bool:
    """A rank-5 conv operand from a channels-last (NDHWC) tensor, or of one channel (NCDHW and
    NDHWC then the same memory, and emission leaves the permute out)."""
    return permutation_of(defining_op(v)) == TO_NCDHW or ir.TensorType.of(v).dims[1] == 1


def _fold_wgrad_depth(op: ir.Operation) -> ir.Operation | None:
    """A channels-last, ungrouped, static 3-D ``torch.aten.convolution_backward`` whose weight
    gradient alone is used, rewritten as the 2-D weight gradient of DY as ``[N*Do, Ho, Wo, K]`` (its
    NDHWC memory) and X with its depth taps gathered into the channels (``_fold_depth``'s, as the
    forward conv reads them): ``DW'[K, R, S, T*C]`` is DW as ``[K, R, S, T, C]``, permuted to the
    filter's layout. Returns the new 2-D op (for the rewrites above), or None."""
    dy, x = op.operands[0], op.operands[1]
    dyt, xt, dwt = ir.TensorType.of(dy), ir.TensorType.of(x), ir.TensorType.of(op.results[1])
    if dyt.rank != 5 or xt.rank != 5 or any(d == DYNAMIC for d in dyt.dims + xt.dims + dwt.dims):
        return None
    if xt.element not in _FLOAT_CODES or dyt.element != xt.element or dwt.element != xt.element:
        return None
    if any(list(r.uses) for r in (op.results[0], op.results[2])):
        return None
    if not (_channels_last_5d(x) and _channels_last_5d(dy)) or (xt.dims[1] == 1 and dyt.dims[1] == 1):
        return None
    params = _static_conv_params(op, 4)
    if params is None or len(params[0]) != 3:
        return None
    (sd, sh, sw), (pd, ph, pw), (dd, dh, dw) = params
    n, c, _, h, wd = xt.dims
    _, k, do, ho, wo = dyt.dims
    _, _, t, r, s = dwt.dims
    element = dwt.element
    b = ir.TorchBuilder()
    with ir.InsertionPoint(op), op.location:
        x2 = _gathered_depth_taps(b, x, do, t, sd, pd, dd)
        dy_rows = ir.collapse_shape(b.to_builtin(b.permute(dy, TO_NDHWC)), [[0, 1], [2], [3], [4]])
        dy2 = _as_nchw(b, dy_rows, element)
        code = b.const_int(_FLOAT_CODES[element])
        w2 = b.op(
            "torch.aten.empty.memory_format",
            [b.int_list([k, t * c, r, s]), code, *[b.const_none() for _ in range(4)]],
            ir.vtensor_type([k, t * c, r, s], element),
        )
        grads = b.op(
            "torch.aten.convolution_backward",
            [
                dy2,
                x2,
                w2,
                b.const_none(),
                b.int_list([sh, sw]),
                b.int_list([ph, pw]),
                b.int_list([dh, dw]),
                b.const_bool(False),
                b.int_list([]),
                b.const_int(1),
                b.list_of([b.const_bool(m) for m in (False, True, False)], "bool"),
            ],
            [
                ir.vtensor_type([n * do, t * c, h, wd], element),
                ir.vtensor_type([k, t * c, r, s], element),
                ir.vtensor_type([k], element),
            ],
        )
        dw_krsc = b.to_builtin(b.permute(grads[1], TO_NHWC))
        dw_krstc = ir.expand_shape(dw_krsc, [[0], [1], [2], [3, 4]], [k, r, s, t, c])
        dw_krstc_t = b.op("torch_c.from_builtin_tensor", [dw_krstc], ir.vtensor_type([k, r, s, t, c], element))
        result = b.permute(dw_krstc_t, [0, 4, 3, 1, 2])  # [K, C, T, R, S]
    op.results[1].replace_all_uses_with(result)
    op.erase()
    return defining_op(grads[1])


def _rewrite(op: ir.Operation, target: Target) -> bool:
    params = _conv_params(op)
    if params is None:
        return False
    stride, padding, dilation = params
    x, w = op.operands[0], op.operands[1]
    xt, wt, yt = ir.TensorType.of(x), ir.TensorType.of(w), ir.TensorType.of(op.results[0])
    n, c, h, wd = xt.dims
    k, _, fy, fx = wt.dims
    _, _, oh, ow = yt.dims
    element = yt.element
    b = ir.TorchBuilder()
    flops = 2 * n * oh * ow * k * c * fy * fx
    facts = rules.conv_facts((fy, fx), stride, dilation, 1, True, n, (oh, ow), c, padding)
    # dgrad's forward filter, flipped in w (read as KRSC by either path, see _flipped_taps), or None.
    dgrad_filter = _dgrad_forward_filter(w)
    # A dgrad asks the rules as the dgrad node does (g.explain shows the same choice): the
    # facts of the forward conv it runs as, kind conv_dgrad.
    kind = "conv_fprop" if dgrad_filter is None else "conv_dgrad"
    problem = rules.Problem(kind, DataType.from_mlir_name(element), flops, facts)
    winograd_m = winograd_tile(pipeline.CONV_LOWERING, problem, target)
    polyphase_m = polyphase_tile(pipeline.CONV_LOWERING, problem, target)
    # Winograd of either stride as (output tile m, stride), or None.
    wino = (winograd_m, 1) if winograd_m is not None else (polyphase_m, 2) if polyphase_m is not None else None
    compute = rules.choose(problem, target, "compute")
    bf16_matmul = compute is not None and compute.rule is rules.CPU_CONV_BF16_IM2COL_MATMUL
    lowering = pipeline.CONV_LOWERING
    if lowering.startswith(("winograd", "polyphase")) and wino is None:
        # winogradM forces Winograd on 3x3 stride-1 convs only, polyphaseM on 3x3 stride-2 ones;
        # the others take the rules' choice (left on the plain linalg conv, a strided conv lost
        # its im2col: 3x3 s2 1x128x56x56 20 ms).
        lowering = "auto"
    im2col = wino is None and (lowering == "im2col" or (lowering == "auto" and bf16_matmul))
    gemm = wino is None and not im2col and im2col_gemm(lowering, problem, target)
    # The transposed GEMM of few positions reads the KRSC filter in place (rules.CPU_CONV_GEMM_FEW_POSITIONS).
    # (A forward conv's choice only: a dgrad, which reads its filter flipped, is never one.)
    choice = rules.choose(problem, target, "algorithm") if gemm and lowering == "auto" else None
    few_positions = choice is not None and choice.rule is rules.CPU_CONV_GEMM_FEW_POSITIONS
    direct_info = None
    row_bands = 1
    if lowering == "auto" and not (wino or im2col or gemm):
        choice = rules.choose(problem, target, "algorithm")
        if choice is not None and choice.rule is rules.CPU_CONV_DIRECT_FEW_CHANNELS:
            row_bands = gemm_config.direct_conv_row_bands(n, oh)
            direct_info = gemm_config.direct_conv_compilation_info(
                rules.vector_isa(target), (n * row_bands, oh // row_bands, ow, k), c, cpu_vendor(target.cpu)
            )
    # bf16 operands stay bf16 on the im2col path of a CPU with native bf16
    # dot products (a bf16 x bf16 -> f32 matmul); everything else computes
    # in f32 (no fast f16 matmul on CPU, emulated bf16 without avx512bf16).
    keep_bf16 = im2col and element == "bf16" and rules.native_dot(target, DataType.BFLOAT16) is not None
    with ir.InsertionPoint(op), op.location:
        x_nhwc = b.permute(x, TO_NHWC)
        if element != "f32" and not keep_bf16:
            x_nhwc = b.to_dtype(x_nhwc, "f32", _FLOAT_CODES["f32"])
        # A 1x1 dgrad's plain matmul reads the forward filter too: KRSC [K, 1, 1, C] is its [K, C]
        # B (as torch.aten.flip + transpose, IREE gathers the filter element by element).
        matmul_1x1 = (fy, fx) == (1, 1) and stride == [1, 1] and padding == [0, 0]
        matmul_1x1 = matmul_1x1 and not (wino or im2col or gemm or direct_info is not None)
        forward_filter = dgrad_filter if wino is not None or gemm or matmul_1x1 else None
        if forward_filter is not None:
            w_t = b.permute(forward_filter, TO_NHWC)  # KRSC
        else:
            # The im2col matmul and the GEMMs read the filter as KRSC (this permute cancels a
            # channels-last filter's; _im2col_gemm transposes it as a matrix), the linalg conv as HWCF.
            w_t = b.permute(w, TO_NHWC if im2col or few_positions or gemm else TO_HWCF)
        if element != "f32" and not keep_bf16:
            w_t = b.to_dtype(w_t, "f32", _FLOAT_CODES["f32"])
        if wino is not None:
            wplan = winograd.plan((n, h, wd, c), k, (oh, ow), (padding[0], padding[1]), *wino)
            w_builtin = b.to_builtin(w_t)
            taps = _flipped_taps(w_builtin) if forward_filter is not None else winograd.hwcf_taps(w_builtin)
            isa, vendor, core = rules.vector_isa(target), cpu_vendor(target.cpu), cpu_core(target.cpu)
            y = winograd.winograd_conv(wplan, b.to_builtin(x_nhwc), taps, isa, vendor, core)
            y_nhwc = b.op("torch_c.from_builtin_tensor", [y], ir.vtensor_type([n, oh, ow, k], "f32"))
        elif im2col:
            y_nhwc = _im2col_matmul(b, x_nhwc, w_t, (n, oh, ow, k), stride, padding, dilation, (fy, fx))
        elif few_positions:
            y = _few_positions_gemm(
                b.to_builtin(x_nhwc), b.to_builtin(w_t), (n, oh, ow, k), stride, padding, dilation, target
            )
            y_nhwc = b.op("torch_c.from_builtin_tensor", [y], ir.vtensor_type([n, oh, ow, k], "f32"))
        elif gemm:
            y = _im2col_gemm(
                b.to_builtin(x_nhwc),
                b.to_builtin(w_t),
                (n, oh, ow, k),
                stride,
                padding,
                dilation,
                target,
                flipped_taps=forward_filter is not None,
            )
            y_nhwc = b.op("torch_c.from_builtin_tensor", [y], ir.vtensor_type([n, oh, ow, k], "f32"))
        elif direct_info is not None:
            y_nhwc = _linalg_conv(
                b, x_nhwc, w_t, (n, oh, ow, k), stride, padding, dilation, (fy, fx), direct_info, row_bands
            )
        elif matmul_1x1:
            y_nhwc = _matmul_1x1(b, x_nhwc, w_t, (n, h, wd, c, k))
        elif lowering == "auto" and any(padding) and flops < rules.CPU_CONV_IM2COL_MIN_FLOPS:
            y = conv_direct.padded_direct_conv(
                b.to_builtin(x_nhwc), b.to_builtin(w_t), (n, oh, ow, k), stride, padding, dilation
            )
            y_nhwc = b.op("torch_c.from_builtin_tensor", [y], ir.vtensor_type([n, oh, ow, k], "f32"))
        else:
            y_nhwc = _linalg_conv(b, x_nhwc, w_t, (n, oh, ow, k), stride, padding, dilation, (fy, fx))
        if element != "f32":
            y_nhwc = b.to_dtype(y_nhwc, element, _FLOAT_CODES[element])
        y = b.permute(y_nhwc, TO_NCHW)
    op.results[0].replace_all_uses_with(y)
    op.erase()
    if forward_filter is not None:
        erase_dead([defining_op(w)])  # the flip and transpose the slices replaced
    return True


def _dgrad_forward_filter(w: ir.Value) -> ir.Value | None:
    """The forward filter ``w0`` where ``w`` is dgrad's ``transpose(flip(w0, [2, 3]), 0, 1)``
    (fusilli/lowering/conv.py, one group), else None."""
    transpose = defining_op(w)
    if transpose is None or transpose.name != "torch.aten.transpose.int":
        return None
    try:
        dims = sorted(constant_value(v) for v in transpose.operands[1:3])
    except (ValueError, KeyError, TypeError):
        return None  # dims that are not constants: not dgrad's
    if dims != [0, 1]:
        return None
    flip = defining_op(transpose.operands[0])
    if flip is None or flip.name != "torch.aten.flip" or int_list_value(flip.operands[1]) != [2, 3]:
        return None
    return flip.operands[0]


# dgrad (stride 1) is a forward conv of DY with the forward filter w0 [K, C, R, S] flipped
# spatially and its channels swapped: w[r, s, k, c] = w0[k, c, R-1-r, S-1-s] in HWCF. Both
# paths read w0 as KRSC (its permute cancels a channels-last filter's), copying nothing:
# every tap (r, s) of w is a [K, C] slice of it, rows contiguous along C, which Winograd's
# filter transform reads (_flipped_taps); the im2col GEMM takes it whole as the [K*R*S, C]
# matrix B, its patches laid out (k, r, s) to match and gathered in flipped tap order.
# As torch.aten.flip + transpose (kept for the linalg conv) they become one scalar gather
# over the whole filter: 3x3 8x512x7x7 dgrad, 3.4-4.0 ms of a 21 ms call (one thread). The
# GEMM's B as RSKC (a transpose to (r, s, k) rows, and patches in tap order) was a dispatch
# of its own, slow for its size: 3x3 2x512x7x7 dgrad, one thread, 1.8-2.7 ms of 7.8 (the
# patches laid out (k, r, s) took 218-255 us against 85-151).
# (A copy whose read map flips r and s, (k, R-1-r, S-1-s, c), fails IREE's tiling.)


def _flipped_taps(krsc: ir.Value) -> list[ir.Value]:
    """dgrad's filter taps ``[K, C]`` in ``(r, s)`` order from the forward filter as KRSC."""
    st = ir.RankedTensorType(krsc.type)
    k, r, s, c = (st.get_dim_size(i) for i in range(4))
    tap_type = ir.RankedTensorType.get([k, c], st.element_type)
    return [
        ir.tensor.ExtractSliceOp(
            tap_type, krsc, [], [], [], [0, r - 1 - i // s, s - 1 - i % s, 0], [k, 1, 1, c], [1] * 4
        ).result
        for i in range(r * s)
    ]


def _rewrite_depthwise(op: ir.Operation, target: Target) -> bool:
    """A channels-last f32 depthwise conv (groups = input channels = output channels, one filter per
    channel, MobileNet's; rules.CPU_CONV_DEPTHWISE) as ``linalg.depthwise_conv_2d_nhwc_hwc`` over the
    padded NHWC input and its filter ``[R, S, C]``: vectors along C, which both hold contiguous.

    Left grouped, torch-mlir's grouped conv reads NCHW and ran at 0.05-0.08 of PyTorch
    (BENCHMARKS.md, "twentieth session")."""
    types, attrs = _channels_last_conv_types(op), _conv_attrs(op, 3)
    if types is None or attrs is None or types[0].element != "f32":
        return False
    (xt, wt, yt), (stride, padding, dilation, transposed, groups) = types, attrs
    x, w = op.operands[0], op.operands[1]
    n, c, _, _ = xt.dims
    k, per_group, fy, fx = wt.dims
    if len(stride) != 2 or transposed:
        return False
    _, _, oh, ow = yt.dims
    facts = rules.conv_facts((fy, fx), stride, dilation, groups, True, n, (oh, ow), per_group, padding)
    flops = 2 * n * oh * ow * k * per_group * fy * fx
    choice = rules.choose(rules.Problem("conv_fprop", DataType.FLOAT, flops, facts), target, "algorithm")
    if choice is None or choice.rule is not rules.CPU_CONV_DEPTHWISE:
        return False
    b = ir.TorchBuilder()
    with ir.InsertionPoint(op), op.location:
        f32 = builtin_element_type("f32")
        xin = b.to_builtin(b.permute(x, TO_NHWC))
        # The filter materialized [R, S, C] (its own small dispatch): folded into the conv, it is read
        # with a stride of R*S along the vectorized channels.
        w_rsc = ir.fusion_barrier(_collapse(b.to_builtin(b.permute(w, [2, 3, 0, 1])), [[0], [1], [2, 3]]))
        zero = ir.arith.ConstantOp(f32, 0.0).result
        if any(padding):
            xin = _pad(xin, padding, zero)
        init = ir.linalg.fill(zero, outs=[ir.tensor.EmptyOp([n, oh, ow, c], f32).result])
        conv = ir.linalg.depthwise_conv_2d_nhwc_hwc(xin, w_rsc, outs=[init], strides=stride, dilations=dilation)
        y_nhwc = b.op("torch_c.from_builtin_tensor", [conv], ir.vtensor_type([n, oh, ow, c], "f32"))
        y = b.permute(y_nhwc, TO_NCHW)
    op.results[0].replace_all_uses_with(y)
    op.erase()
    return True


def _rewrite_grouped(op: ir.Operation, target: Target) -> bool:
    """A channels-last grouped conv of several channels per group (ResNeXt's 3x3 g32;
    rules.CPU_CONV_GROUPED_DIRECT) as ``conv_direct.grouped_conv`` over the padded NHWC input and its
    KRSC filter, vectorized along each group's output channels; f16/bf16 computed in f32 (inputs
    cast, the result rounded once, which epilogue fusion folds into the epilogue).

    Left grouped, torch-mlir's grouped conv reads NCHW and ran at 0.02-0.10 of PyTorch
    (BENCHMARKS.md, "twenty-second session")."""
    types, attrs = _channels_last_conv_types(op), _conv_attrs(op, 3)
    if types is None or attrs is None:
        return False
    (xt, wt, yt), (stride, padding, dilation, transposed, groups) = types, attrs
    if len(stride) != 2 or len(padding) != 2 or len(dilation) != 2 or transposed or groups < 2:
        return False
    x, w = op.operands[0], op.operands[1]
    n = xt.dims[0]
    k, per_group, fy, fx = wt.dims
    _, _, oh, ow = yt.dims
    element = yt.element
    facts = rules.conv_facts((fy, fx), stride, dilation, groups, True, n, (oh, ow), per_group, padding)
    flops = 2 * n * oh * ow * k * per_group * fy * fx
    # A stride-1 dgrad is this forward conv of DY (fusilli/lowering/conv.py); the rule's dgrad
    # checks (stride 1, no negative padding) hold for it, so asking as a forward conv agrees.
    problem = rules.Problem("conv_fprop", DataType.from_mlir_name(element), flops, facts)
    choice = rules.choose(problem, target, "algorithm")
    if choice is None or choice.rule is not rules.CPU_CONV_GROUPED_DIRECT:
        return False
    b = ir.TorchBuilder()
    with ir.InsertionPoint(op), op.location:
        x_nhwc, w_krsc = _channels_last_in_f32(b, element, x, w)
        xin = b.to_builtin(x_nhwc)
        if any(padding):
            xin = conv_direct.padded_copy(xin, padding)
        y = conv_direct.grouped_conv(
            xin, b.to_builtin(w_krsc), groups, (n, oh, ow, k), stride, dilation, rules.vector_isa(target)
        )
        y = _from_f32(b, y, [n, oh, ow, k], element, TO_NCHW)
    op.results[0].replace_all_uses_with(y)
    op.erase()
    return True


def _channels_last_in_f32(b: ir.TorchBuilder, element: str, *values: ir.Value) -> list[ir.Value]:
    """``values`` (NCHW-ordered torch tensors of a conv) permuted channels-last, then cast to f32
    unless ``element`` is f32: the f32 operands the CPU conv rewrites compute with."""
    out = [b.permute(v, TO_NHWC) for v in values]
    if element != "f32":
        out = [b.to_dtype(v, "f32", _FLOAT_CODES["f32"]) for v in out]
    return out


def _from_f32(b: ir.TorchBuilder, value: ir.Value, dims: list[int], element: str, perm: list[int]) -> ir.Value:
    """The f32 builtin tensor ``value`` of ``dims`` as a torch tensor, rounded once to ``element``
    unless that is f32 (epilogue fusion folds the rounding into the epilogue), permuted by ``perm``."""
    out = b.op("torch_c.from_builtin_tensor", [value], ir.vtensor_type(dims, "f32"))
    if element != "f32":
        out = b.to_dtype(out, element, _FLOAT_CODES[element])
    return b.permute(out, perm)


def _conv_attrs(op: ir.Operation, first: int) -> tuple[list[int], list[int], list[int], bool, int] | None:
    """Stride, padding, dilation, transposed and groups of a ``torch.aten.convolution`` (``first`` =
    3) or ``convolution_backward`` (``first`` = 4), whose operands from ``first`` on are stride,
    padding, dilation, transposed, output_padding, groups; None unless they are constants."""
    stride, padding, dilation = (int_list_value(op.operands[first + i]) for i in range(3))
    try:
        transposed, groups = constant_value(op.operands[first + 3]), constant_value(op.operands[first + 5])
    except (ValueError, KeyError):
        return None
    if stride is None or padding is None or dilation is None:
        return None
    return stride, padding, dilation, transposed, groups


def _static_conv_params(op: ir.Operation, first: int) -> tuple[list[int], list[int], list[int]] | None:
    """Stride, padding and dilation (``_conv_attrs``) of a forward (not transposed), ungrouped conv,
    else None."""
    attrs = _conv_attrs(op, first)
    if attrs is None or attrs[3] or attrs[4] != 1:
        return None
    return attrs[0], attrs[1], attrs[2]


def winograd_tile(lowering: str, problem: rules.Problem, target: Target) -> int | None:
    """The output tile m of Winograd F(m, 3) for this conv on ``target``, or None for another lowering.

    ``FUSILLI_CONV_LOWERING=winograd<m>`` forces it on every 3x3 stride-1 conv
    this pass rewrites; ``auto`` asks the target's rules (cpu-conv-winograd).
    """
    return _winograd_family_tile(
        lowering, problem, target, "winograd", (1, 1), 4, rules.CPU_CONV_WINOGRAD, rules.winograd_output_tile
    )


# The polyphase rule and output tile of each conv kind (the forward conv, the strided dgrad per DX
# phase, the weight gradient over X's phases).
_POLYPHASE_RULES: dict[str, tuple[rules.Rule, Callable[[rules.Problem, Target], int | None]]] = {
    "conv_fprop": (rules.CPU_CONV_WINOGRAD_STRIDED, rules.polyphase_output_tile),
    "conv_dgrad": (rules.CPU_CONV_DGRAD_WINOGRAD_STRIDED, rules.polyphase_dgrad_output_tile),
    "conv_wgrad": (rules.CPU_CONV_WGRAD_WINOGRAD_STRIDED, rules.polyphase_wgrad_output_tile),
}


def polyphase_tile(lowering: str, problem: rules.Problem, target: Target) -> int | None:
    """The output tile m of the polyphase Winograd F(m, 2) for this 3x3 stride-2 conv (forward, data
    or weight gradient, by ``problem.kind``) on ``target``, or None.

    ``FUSILLI_CONV_LOWERING=polyphase<m>`` forces it on every 3x3 stride-2 conv of the kind this pass
    rewrites; ``auto`` asks the target's rules (cpu-conv-winograd-strided,
    cpu-conv-dgrad-winograd-strided, cpu-conv-wgrad-winograd-strided).
    """
    rule, output_tile = _POLYPHASE_RULES[problem.kind]
    return _winograd_family_tile(lowering, problem, target, "polyphase", (2, 2), 2, rule, output_tile)


def _winograd_family_tile(
    lowering: str,
    problem: rules.Problem,
    target: Target,
    prefix: str,
    stride: tuple[int, int],
    default_m: int,
    rule: rules.Rule,
    output_tile: Callable[[rules.Problem, Target], int | None],
) -> int | None:
    """``prefix<m>`` forces the lowering (m, else ``default_m``) on 3x3 convs of ``stride`` and
    dilation 1; ``auto`` takes ``output_tile`` where ``rule`` is the rules' algorithm choice."""
    if lowering.startswith(prefix):
        eligible = (problem.fact("kernel"), problem.fact("stride"), problem.fact("dilation")) == (
            (3, 3),
            stride,
            (1, 1),
        )
        return int(lowering[len(prefix) :] or default_m) if eligible else None
    if lowering != "auto":
        return None
    choice = rules.choose(problem, target, "algorithm")
    return output_tile(problem, target) if choice is not None and choice.rule is rule else None


def im2col_gemm(lowering: str, problem: rules.Problem, target: Target) -> bool:
    """Whether this conv is an im2col GEMM with an explicit lowering config
    (cpu-conv-im2col-gemm; for a dgrad also cpu-conv-dgrad-flipped-gemm).

    ``FUSILLI_CONV_LOWERING=gemm`` forces it on every conv this pass rewrites.
    """
    if lowering == "gemm":
        return True
    choice = rules.choose(problem, target, "algorithm") if lowering == "auto" else None
    return choice is not None and choice.rule in rules.CPU_CONV_GEMM_RULES


def _compute_in_f32(op: ir.Operation) -> bool:
    """A f16/bf16 ``torch.aten.convolution`` this pass does not rewrite runs in f32, rounded once."""
    yt = ir.TensorType.of(op.results[0])
    if yt.element not in ("f16", "bf16") or any(ir.TensorType.of(v).element != yt.element for v in op.operands[:2]):
        return False
    bias_op = defining_op(op.operands[2])
    if bias_op is None or bias_op.name != "torch.constant.none":
        return False
    b = ir.TorchBuilder()
    with ir.InsertionPoint(op), op.location:
        x, w = (b.to_dtype(v, "f32", _FLOAT_CODES["f32"]) for v in op.operands[:2])
        y = b.op(op.name, [x, w, *op.operands[2:]], yt.with_element("f32").to_type())
        y = b.to_dtype(y, yt.element, _FLOAT_CODES[yt.element])
    op.results[0].replace_all_uses_with(y)
    op.erase()
    return True


def _matmul_1x1(b: ir.TorchBuilder, x_nhwc, w_hwcf, dims) -> ir.Value:
    n, h, wd, c, k = dims
    rows = n * h * wd
    x2 = b.op("torch.aten.view", [x_nhwc, b.int_list([rows, c])], ir.vtensor_type([rows, c], "f32"))
    w2 = b.op("torch.aten.view", [w_hwcf, b.int_list([c, k])], ir.vtensor_type([c, k], "f32"))
    y2 = b.op("torch.aten.mm", [x2, w2], ir.vtensor_type([rows, k], "f32"))
    return b.op("torch.aten.view", [y2, b.int_list([n, h, wd, k])], ir.vtensor_type([n, h, wd, k], "f32"))


def _linalg_conv(
    b: ir.TorchBuilder,
    x_nhwc,
    w_hwcf,
    out_dims,
    stride,
    padding,
    dilation,
    kernel,
    compilation_info=None,
    row_bands: int = 1,
) -> ir.Value:
    """``linalg.conv_2d_nhwc_hwcf`` (after a ``tensor.pad``), with ``compilation_info`` when the
    target's rules give one (cpu-conv-direct-few-channels), else IREE's own lowering.

    ``row_bands`` > 1 (a batch of one image): the conv runs over that many images, each a band
    of the output's rows and of the padded input's rows it reads (bands overlap by the filter's
    reach), and its output is reshaped back to the one image's (rows stay contiguous)."""
    f32 = builtin_element_type("f32")
    xin = b.to_builtin(x_nhwc)
    win = b.to_builtin(w_hwcf)
    if compilation_info is not None:
        # As for the im2col GEMM: IREE would fold the filter permute into the conv, which
        # then reads the filter transposed along its vectorized K dimension (the stem
        # 1x3x224x224->64 37.7 ms, against 1.10-1.17 with the HWCF filter its own small dispatch).
        win = ir.fusion_barrier(win)
    zero = ir.arith.ConstantOp(f32, 0.0).result
    if any(padding):
        xin = _pad(xin, padding, zero)
    conv_dims = list(out_dims)
    if row_bands > 1:
        xin = _row_bands(xin, row_bands, out_dims[1] // row_bands, stride[0], dilation[0] * (kernel[0] - 1) + 1)
        conv_dims = [row_bands, out_dims[1] // row_bands, *out_dims[2:]]
    empty = ir.tensor.EmptyOp(conv_dims, f32).result
    init = ir.linalg.fill(zero, outs=[empty])
    conv = ir.linalg.conv_2d_nhwc_hwcf(xin, win, outs=[init], strides=list(stride), dilations=list(dilation))
    if compilation_info is not None:
        conv.owner.attributes["compilation_info"] = compilation_info
    if row_bands > 1:
        conv = ir.expand_shape(_collapse(conv, [[0, 1], [2], [3]]), [[0, 1], [2], [3]], list(out_dims))
    return b.op("torch_c.from_builtin_tensor", [conv], ir.vtensor_type(list(out_dims), "f32"))


def _row_bands(xin: ir.Value, parts: int, out_rows: int, stride: int, reach: int) -> ir.Value:
    """``[parts, rows, W, C]`` from a one-image ``[1, H, W, C]``: band ``p`` holds the rows that
    output rows ``[p * out_rows, (p + 1) * out_rows)`` read, ``(out_rows - 1) * stride + reach``."""
    src = ir.RankedTensorType(xin.type)
    _, _, wd, c = (src.get_dim_size(i) for i in range(4))
    rows = (out_rows - 1) * stride + reach
    band = ir.RankedTensorType.get([1, rows, wd, c], src.element_type)
    bands = ir.tensor.EmptyOp([parts, rows, wd, c], src.element_type).result
    for p in range(parts):
        part = ir.tensor.ExtractSliceOp(
            band, xin, [], [], [], [0, p * out_rows * stride, 0, 0], [1, rows, wd, c], [1] * 4
        )
        bands = ir.tensor.InsertSliceOp(part.result, bands, [], [], [], [p, 0, 0, 0], [1, rows, wd, c], [1] * 4).result
    return bands


def _pad(value: ir.Value, padding: list[int], zero: ir.Value) -> ir.Value:
    """The NHWC ``value`` with ``padding`` (H, W) ``zero`` rows and columns on both sides."""
    low = [0, padding[0], padding[1], 0]
    return _padded(value, low, low, zero)


def _padded(value: ir.Value, low: list[int], high: list[int], zero: ir.Value) -> ir.Value:
    """``tensor.pad`` of ``value`` by ``low`` / ``high`` elements per dim, filled with ``zero``."""
    src = ir.RankedTensorType(value.type)
    out_dims = [d + lo + hi for d, lo, hi in zip(src.shape, low, high)]
    pad = ir.tensor.PadOp(ir.RankedTensorType.get(out_dims, src.element_type), value, [], [], low, high)
    block = pad.regions[0].blocks.append(*[ir.IndexType.get()] * src.rank)
    with ir.InsertionPoint(block):
        ir.tensor.YieldOp(zero)
    return pad.result


def _collapse(value: ir.Value, groups: list[list[int]]) -> ir.Value:
    src = ir.RankedTensorType(value.type)
    dims = [src.get_dim_size(i) for i in range(src.rank)]
    out = []
    for g in groups:
        size = 1
        for d in g:
            size *= dims[d]
        out.append(size)
    if len(out) == len(dims):
        return value
    return ir.tensor.CollapseShapeOp(
        ir.RankedTensorType.get(out, src.element_type), value, ir.reassociation(groups)
    ).result


def _patches(xin: ir.Value, out_hw, stride, padding, dilation, kernel) -> ir.Value:
    """The ``[N*Ho*Wo, R*S*C]`` patch matrix of the NHWC builtin tensor ``xin``.

    A ``linalg.generic`` gather of the (padded) input, or a reshape for 1x1
    unit-stride unpadded convs.
    """
    oh, ow = out_hw
    fy, fx = kernel
    xt = ir.RankedTensorType(xin.type)
    elem = xt.element_type
    n, c = xt.get_dim_size(0), xt.get_dim_size(3)
    if any(padding):
        xin = _pad(xin, padding, ir.arith.ConstantOp(elem, 0.0).result)
    if (fy, fx) == (1, 1) and list(stride) == [1, 1] and not any(padding):
        return _collapse(xin, [[0, 1, 2], [3]])
    d = [ir.AffineDimExpr.get(i) for i in range(6)]  # n, oh, ow, r, s, c
    row = d[1] * stride[0] + d[3] * dilation[0]
    col = d[2] * stride[1] + d[4] * dilation[1]
    in_map = ir.AffineMap.get(6, 0, [d[0], row, col, d[5]])
    empty = ir.tensor.EmptyOp([n, oh, ow, fy, fx, c], elem).result
    gather = ir.linalg.GenericOp(
        [empty.type],
        [xin],
        [empty],
        ir.indexing_maps(in_map, ir.AffineMap.get_identity(6)),
        ir.iterator_types(*["parallel"] * 6),
    )
    block = gather.regions[0].blocks.append(elem, elem)
    with ir.InsertionPoint(block):
        ir.linalg.YieldOp([block.arguments[0]])
    return _collapse(gather.result, [[0, 1, 2], [3, 4, 5]])


def _matmul(lhs: ir.Value, rhs: ir.Value, rows: int, cols: int, lhs_map, rhs_map) -> ir.Value:
    """An f32 ``linalg.matmul`` ``[rows, cols]`` over (m, n, k) with the operands' maps given."""
    f32 = builtin_element_type("f32")
    zero = ir.arith.ConstantOp(f32, 0.0).result
    init = ir.linalg.fill(zero, outs=[ir.tensor.EmptyOp([rows, cols], f32).result])
    out_map = ir.AffineMap.get(3, 0, [ir.AffineDimExpr.get(0), ir.AffineDimExpr.get(1)])
    return ir.linalg.matmul(lhs, rhs, outs=[init], indexing_maps=[lhs_map, rhs_map, out_map])


def _chunked_wgrad_gemm(
    lhs: ir.Value,
    rhs: ir.Value,
    chunk: int,
    isa: str,
    vendor: str | None,
    core: str | None = None,
) -> ir.Value:
    """``out[M, N] = sum_c lhs_c^T x rhs_c`` of a weight gradient's ``[positions, M]`` and ``[positions,
    N]`` operands (DY and the patches for DW[K, R*S*C], the other way round for DW^T) over chunks of
    ``chunk`` output positions (gemm_config.wgrad_chunk_positions): a batched GEMM of partials with
    the ISA's tile for ``N`` columns (the ``core``'s K step), then their sum over the chunks (a reduction
    dispatch of its own)."""
    f32 = builtin_element_type("f32")
    positions, k = ir.RankedTensorType(lhs.type).shape
    columns = ir.RankedTensorType(rhs.type).get_dim_size(1)
    chunks = positions // chunk
    a = ir.expand_shape(lhs, [[0, 1], [2]], [chunks, chunk, k])
    b = ir.expand_shape(rhs, [[0, 1], [2]], [chunks, chunk, columns])
    zero = ir.arith.ConstantOp(f32, 0.0).result
    d = [ir.AffineDimExpr.get(i) for i in range(4)]  # chunk, m, n, position in the chunk
    maps = [ir.AffineMap.get(4, 0, [d[0], d[3], d[1]]), ir.AffineMap.get(4, 0, [d[0], d[3], d[2]])]
    maps.append(ir.AffineMap.get(4, 0, [d[0], d[1], d[2]]))
    init = ir.linalg.fill(zero, outs=[ir.tensor.EmptyOp([chunks, k, columns], f32).result])
    partial = ir.linalg.batch_matmul(a, b, outs=[init], indexing_maps=maps)
    info = gemm_config.wgrad_chunked_compilation_info(isa, chunks, k, columns, chunk, vendor, core)
    if info is not None:
        partial.owner.attributes["compilation_info"] = info
    e = [ir.AffineDimExpr.get(i) for i in range(3)]  # m, n, chunk
    total = ir.linalg.fill(zero, outs=[ir.tensor.EmptyOp([k, columns], f32).result])
    reduce = ir.sum_into(
        partial,
        total,
        ir.AffineMap.get(3, 0, [e[2], e[0], e[1]]),
        ir.AffineMap.get(3, 0, [e[0], e[1]]),
        ["parallel", "parallel", "reduction"],
    )
    return reduce.result


def _mnk_map(*dims: int) -> ir.AffineMap:
    return ir.AffineMap.get(3, 0, [ir.AffineDimExpr.get(d) for d in dims])


M, N, K = 0, 1, 2  # the iteration dims of _matmul


def _im2col_matmul(b: ir.TorchBuilder, x_nhwc, w_krsc, out_dims, stride, padding, dilation, kernel) -> ir.Value:
    """``[N*Ho*Wo, R*S*C] x [K, R*S*C]^T`` in f32, operands kept in their element type.

    The filter is the KRSC filter reshaped, read transposed by the matmul's indexing maps.
    """
    n, oh, ow, k = out_dims
    xin, win = b.to_builtin(x_nhwc), b.to_builtin(w_krsc)
    patches = _patches(xin, (oh, ow), stride, padding, dilation, kernel)
    filt = _collapse(win, [[0], [1, 2, 3]])
    mm = _matmul(patches, filt, n * oh * ow, k, _mnk_map(M, K), _mnk_map(N, K))
    y = ir.expand_shape(mm, [[0, 1, 2], [3]], [n, oh, ow, k])
    return b.op("torch_c.from_builtin_tensor", [y], ir.vtensor_type([n, oh, ow, k], "f32"))


def _patches_are_x(kernel, stride, padding) -> bool:
    """Whether a conv's patch matrix is its NHWC input reshaped (1x1, unit stride, unpadded), not
    a gather the graph materializes."""
    return tuple(kernel) == (1, 1) and list(stride) == [1, 1] and not any(padding)


def _gemm_patches(x_nhwc: ir.Value, out_hw, kernel, stride, padding, dilation, flipped_taps: bool = False) -> ir.Value:
    """The ``[N*Ho*Wo, R*S*C]`` patch matrix the explicit conv GEMMs read: a reshape of the NHWC
    input for 1x1 unit-stride unpadded convs, else ``conv_direct.padded_patches`` (read through
    the padding; ``flipped_taps``: dgrad's flipped taps, laid out ``(c, r, s)``)."""
    if _patches_are_x(kernel, stride, padding):
        return _collapse(x_nhwc, [[0, 1, 2], [3]])
    gathered = conv_direct.padded_patches(x_nhwc, out_hw, kernel, stride, padding, dilation, flipped_taps, flipped_taps)
    return _collapse(gathered, [[0, 1, 2], [3, 4, 5]])


def _transpose_2d(value: ir.Value) -> ir.Value:
    """``value^T`` of a 2-D f32 tensor, as ``linalg.transpose``."""
    rows, cols = ir.RankedTensorType(value.type).shape
    init = ir.tensor.EmptyOp([cols, rows], builtin_element_type("f32")).result
    return ir.linalg.transpose(value, outs=[init], permutation=[1, 0]).results[0]


def _few_positions_gemm(
    x_nhwc: ir.Value, w_krsc: ir.Value, out_dims, stride, padding, dilation, target: Target
) -> ir.Value:
    """``y^T[K, N*Ho*Wo] = w[K, R*S*C] x patches(x)^T``, transposed back to ``y[N*Ho*Wo, K]``
    (rules.CPU_CONV_GEMM_FEW_POSITIONS), the filter's K rows in the workgroups of
    gemm_config.FEW_POSITIONS_GEMM_TILES and every position in one column block.

    The KRSC filter is the GEMM's A, read where it lies (no transposed copy of it, which the
    other forms make every call). The barriers keep the forms IREE would otherwise fold back:
    the patch gather writes ``[R*S*C, positions]`` in its dispatch (not read transposed along
    the vectorized columns), and the result's transposition stays a small dispatch of its own
    (folded into the GEMM, it makes both operands reduction-innermost, shuffled in registers).
    """
    n, oh, ow, k = out_dims
    _, fy, fx, c = ir.RankedTensorType(w_krsc.type).shape
    positions, depth = n * oh * ow, fy * fx * c
    patches = _gemm_patches(x_nhwc, (oh, ow), (fy, fx), stride, padding, dilation)
    patches_t = ir.fusion_barrier(_transpose_2d(patches))
    filt = _collapse(w_krsc, [[0], [1, 2, 3]])
    mm = _matmul(filt, patches_t, k, positions, _mnk_map(M, K), _mnk_map(K, N))
    info = gemm_config.few_positions_compilation_info(
        rules.vector_isa(target), cpu_vendor(target.cpu), k, positions, depth
    )
    if info is not None:
        mm.owner.attributes["compilation_info"] = info
    y = _transpose_2d(ir.fusion_barrier(mm))
    return ir.expand_shape(y, [[0, 1, 2], [3]], [n, oh, ow, k])


def _im2col_gemm(
    x_nhwc: ir.Value, w_krsc: ir.Value, out_dims, stride, padding, dilation, target: Target, flipped_taps: bool = False
) -> ir.Value:
    """``y[N*Ho*Wo, K] = patches(x)[N*Ho*Wo, R*S*C] x w[R*S*C, K]`` in f32, with the ISA's GEMM config.

    ``w_krsc``: the filter as KRSC, made the ``[R*S*C, K]`` B by one 2-D transposition of its
    ``[K, R*S*C]`` matrix (a transposition of the 4-D filter followed by the collapse left the
    padding of B's rows, ``_materialized_b``, to a strided copy of its own: 3x3 s2
    8x512x14x14->512, 4 dispatches, the copy 0.47-0.50 ms of one thread's 9.3 ms).
    ``flipped_taps``: dgrad's spatially flipped filter, read unflipped: ``w_krsc`` is the
    forward filter as KRSC (``[C, R, S, K]`` in this conv's terms), B as it is, and the patches
    hold tap ``(R-1-r, S-1-s)`` at ``(c, r, s)`` (see _flipped_taps).

    The patch gather reads through the padding (no padded copy of the input; a
    reshape for 1x1 unit-stride unpadded convs). The matmul carries an explicit
    ``compilation_info`` (fusilli/passes/gemm_config.py), so IREE neither data-tiles
    it nor needs an encode dispatch for an epilogue: bias and activation fuse into
    the GEMM's dispatch.
    """
    n, oh, ow, k = out_dims
    wt = ir.RankedTensorType(w_krsc.type)
    if flipped_taps:
        c, fy, fx = (wt.get_dim_size(i) for i in range(3))
    else:
        fy, fx, c = (wt.get_dim_size(i) for i in range(1, 4))
    rows, depth = n * oh * ow, fy * fx * c
    isa, vendor, core = rules.vector_isa(target), cpu_vendor(target.cpu), cpu_core(target.cpu)
    strided_rows = None
    if (isa, vendor or "") in gemm_config.STRIDED_ROWS_VIEW_TARGETS:
        strided_rows = _strided_1x1_rows(x_nhwc, (fy, fx), stride, padding, flipped_taps)
    if strided_rows is None:
        patches = _gemm_patches(x_nhwc, (oh, ow), (fy, fx), stride, padding, dilation, flipped_taps)
    # Left to itself IREE folds the filter permute into the GEMM, which then reads B
    # transposed along its vectorized N dimension: 1x1 4x256x28x28->128 0.83 ms;
    # with the HWCF filter materialized (its own small dispatch) 0.43-0.48 ms.
    # A dgrad's filter (flipped_taps) is KRSC as it is; a forward one's transposed.
    strided_patches = (fy, fx) != (1, 1) and list(stride) != [1, 1]
    gathered = not _patches_are_x((fy, fx), stride, padding)
    panel = None
    if strided_rows is None:
        panel = gemm_config.conv_b_panel(isa, k, rows, depth, vendor, core, strided_patches, copied=flipped_taps)
    if panel is not None:
        mm = _panel_gemm(patches, _b_panels(w_krsc, panel, flipped_taps), rows)
        info = gemm_config.matmul_compilation_info(
            isa, rows, k, depth, vendor, strided_patches, core, gathered, panel=panel
        )
        if info is not None:
            mm.owner.attributes["compilation_info"] = info
        # Rows expanded to NHWC first, the panel dims collapsed last: collapsed first ([rows, K]),
        # the epilogue did not fuse into the GEMM's dispatch (a dispatch of its own, 2 -> 3).
        y = ir.expand_shape(mm, [[0, 1, 2], [3], [4]], [n, oh, ow, k // panel, panel])
        return _collapse(y, [[0], [1], [2], [3, 4]])
    if flipped_taps:
        filt, padded_b = _materialized_b(_collapse(w_krsc, [[0, 1, 2], [3]]), isa, rows, transposed=False)
    else:
        filt, padded_b = _materialized_b(_transpose_2d(_collapse(w_krsc, [[0], [1, 2, 3]])), isa, rows, transposed=True)
    if strided_rows is not None:
        mm = _strided_rows_gemm(strided_rows, filt)
        info = gemm_config.strided_rows_compilation_info(isa, n * oh, ow, k, depth, vendor, core)
        if info is not None:
            mm.owner.attributes["compilation_info"] = info
        return ir.expand_shape(mm, [[0, 1], [2], [3]], [n, oh, ow, k])
    mm = _matmul(patches, filt, rows, k, _mnk_map(M, K), _mnk_map(K, N))
    info = gemm_config.matmul_compilation_info(isa, rows, k, depth, vendor, strided_patches, core, gathered, padded_b)
    if info is not None:
        mm.owner.attributes["compilation_info"] = info
    return ir.expand_shape(mm, [[0, 1, 2], [3]], [n, oh, ow, k])


def _materialized_b(filt: ir.Value, isa: str, rows: int, transposed: bool) -> tuple[ir.Value, bool]:
    """A GEMM's B operand ``filt`` (``[depth, columns]``, for a GEMM of ``rows``) computed in a
    dispatch of its own, its rows written ``gemm_config.padded_b_columns`` long where that says B's
    rows would alias in L1, and read back as the ``[depth, columns]`` slice (the GEMM's dispatch
    loads it as it is); and whether its rows are padded. ``transposed``: making ``filt`` moves its
    data (the padding costs no copy)."""
    ft = ir.RankedTensorType(filt.type)
    depth, columns = ft.shape
    padded = gemm_config.padded_b_columns(isa, columns, ft.element_type.width // 8, rows, not transposed)
    if padded is None:
        return ir.fusion_barrier(filt), False
    zero = ir.arith.ConstantOp(ft.element_type, 0.0).result
    written = ir.fusion_barrier(_padded(filt, [0, 0], [0, padded - columns], zero))
    return ir.tensor.ExtractSliceOp(ft, written, [], [], [], [0, 0], [depth, columns], [1, 1]).result, True


def _b_panels(w_krsc: ir.Value, panel: int, flipped_taps: bool) -> ir.Value:
    """The conv GEMM's B, ``[depth, columns]``, written in a dispatch of its own as panels of ``panel``
    columns, ``[columns / panel, depth, panel]`` (gemm_config.conv_b_panel): one transposition of the
    KRSC filter, its ``[K / panel, panel, R*S*C]`` view with the last two dims swapped (a forward conv),
    or of a dgrad's ``[R*S*C, C / panel, panel]`` (``flipped_taps``: B as it is) with the first two."""
    wt = ir.RankedTensorType(w_krsc.type)
    if flipped_taps:
        depth, columns = wt.get_dim_size(0) * wt.get_dim_size(1) * wt.get_dim_size(2), wt.get_dim_size(3)
        view = ir.expand_shape(_collapse(w_krsc, [[0, 1, 2], [3]]), [[0], [1, 2]], [depth, columns // panel, panel])
        permutation = [1, 0, 2]
    else:
        columns, depth = wt.get_dim_size(0), wt.get_dim_size(1) * wt.get_dim_size(2) * wt.get_dim_size(3)
        view = ir.expand_shape(_collapse(w_krsc, [[0], [1, 2, 3]]), [[0, 1], [2]], [columns // panel, panel, depth])
        permutation = [0, 2, 1]
    init = ir.tensor.EmptyOp([columns // panel, depth, panel], wt.element_type).result
    return ir.fusion_barrier(ir.linalg.transpose(view, outs=[init], permutation=permutation).results[0])


def _panel_gemm(patches: ir.Value, panels: ir.Value, rows: int) -> ir.Value:
    """``y[m, j, n] = sum_c patches[m, c] * panels[j, c, n]``: the conv GEMM over B in panels
    (``_b_panels``), its ``[rows, columns / panel, panel]`` result the ``[rows, columns]`` one split."""
    f32 = builtin_element_type("f32")
    blocks, _, panel = ir.RankedTensorType(panels.type).shape
    zero = ir.arith.ConstantOp(f32, 0.0).result
    init = ir.linalg.fill(zero, outs=[ir.tensor.EmptyOp([rows, blocks, panel], f32).result])
    m, j, n, c = (ir.AffineDimExpr.get(d) for d in range(4))
    maps = [ir.AffineMap.get(4, 0, [m, c]), ir.AffineMap.get(4, 0, [j, c, n]), ir.AffineMap.get(4, 0, [m, j, n])]
    return ir.contraction(patches, panels, init, maps, ["parallel", "parallel", "parallel", "reduction"]).result


def _strided_1x1_rows(x_nhwc: ir.Value, kernel, stride, padding, flipped_taps: bool) -> ir.Value | None:
    """The rows a strided, unpadded 1x1 conv reads, ``A[N*Ho, Wo, C] = x[n, ho*sy, wo*sx, c]``, as a
    view of the NHWC input (its H and W split by the stride, the first of each kept: a slice the
    GEMM's dispatch loads as it is), or None for other convs and extents the stride does not divide.

    The patch gather it replaces was a dispatch of its own (a copy of the rows and one more of the
    pool's hand-offs); gemm_config.STRIDED_ROWS_VIEW_TARGETS says where this measured faster."""
    if tuple(kernel) != (1, 1) or list(stride) == [1, 1] or any(padding) or flipped_taps:
        return None
    xt = ir.RankedTensorType(x_nhwc.type)
    n, h, w, c = (xt.get_dim_size(i) for i in range(4))
    sy, sx = stride
    if h % sy or w % sx:
        return None
    rows = ir.expand_shape(
        _collapse(x_nhwc, [[0, 1], [2], [3]]), [[0, 1], [2, 3], [4]], [n * h // sy, sy, w // sx, sx, c]
    )
    view = ir.RankedTensorType.get([n * h // sy, w // sx, c], xt.element_type)
    sizes = [n * h // sy, 1, w // sx, 1, c]
    return ir.tensor.ExtractSliceOp(view, rows, [], [], [], [0] * 5, sizes, [1] * 5).result


def _strided_rows_gemm(rows: ir.Value, filt: ir.Value) -> ir.Value:
    """``y[i, j, n] = sum_k rows[i, j, k] * filt[k, n]``: a GEMM whose rows are two loops, so that
    its A stays the strided view (``_strided_1x1_rows``) and is not copied to be collapsed."""
    f32 = builtin_element_type("f32")
    outer, inner, _ = ir.RankedTensorType(rows.type).shape
    cols = ir.RankedTensorType(filt.type).shape[1]
    zero = ir.arith.ConstantOp(f32, 0.0).result
    init = ir.linalg.fill(zero, outs=[ir.tensor.EmptyOp([outer, inner, cols], f32).result])
    i, j, n, k = (ir.AffineDimExpr.get(d) for d in range(4))
    maps = [ir.AffineMap.get(4, 0, [i, j, k]), ir.AffineMap.get(4, 0, [k, n]), ir.AffineMap.get(4, 0, [i, j, n])]
    return ir.contraction(rows, filt, init, maps, ["parallel", "parallel", "parallel", "reduction"]).result


def _rewrite_strided_dgrad(op: ir.Operation, target: Target) -> bool:
    """A strided dgrad (fusilli/lowering/conv.py emits it as a transposed conv of DY with the
    forward filter) as Winograd per DX phase (3x3 stride 2: cpu-conv-dgrad-winograd-strided,
    winograd.polyphase_dgrad_matrices; FUSILLI_CONV_LOWERING=polyphase<m>) or one GEMM and a
    col2im gather, where the rules choose it (cpu-conv-dgrad-col2im-gemm;
    FUSILLI_CONV_LOWERING=gemm: every one this pass can take).

    ``cols[N*Ho*Wo, R*S*C] = DY[N*Ho*Wo, K] x W[K, R*S*C]``: the forward filter as KRSC is B
    as it is (a channels-last filter's permute cancels). Each input position then sums the
    columns of the taps that reach it (``conv_direct.col2im``). As a transposed
    ``torch.aten.convolution``, IREE convolves the zero-inserted DY, stride*stride times the
    FLOPs (3x3 s2 1x128x56x56 dgrad: 0.19 of PyTorch on AVX-512, 0.07 as x86-64-v3 code).
    """
    types, attrs = _channels_last_conv_types(op), _conv_attrs(op, 3)
    if types is None or attrs is None:
        return False
    (dyt, wt, dxt), (stride, padding, dilation, transposed, groups) = types, attrs
    dy, w = op.operands[0], op.operands[1]
    if not transposed or groups != 1:
        return False
    if len(stride) != 2 or len(padding) != 2 or len(dilation) != 2:
        return False
    n, k, oh, ow = dyt.dims
    _, c, fy, fx = wt.dims
    _, _, h, wd = dxt.dims
    element = dxt.element
    flops = 2 * n * oh * ow * k * c * fy * fx
    # The facts the dgrad node gives the rules: the forward conv it runs as produces DX from
    # DY's channels (rules._conv_facts_of_node).
    facts = rules.conv_facts((fy, fx), stride, dilation, 1, True, n, (h, wd), k, padding)
    problem = rules.Problem("conv_dgrad", DataType.from_mlir_name(element), flops, facts)
    lowering = pipeline.CONV_LOWERING
    polyphase_m = polyphase_tile(lowering, problem, target)
    if polyphase_m is not None and padding[0] % 2 != padding[1] % 2:
        polyphase_m = None  # (forced) one transform for rows and columns: their padding's parity must agree
    choice = rules.choose(problem, target, "algorithm") if lowering == "auto" else None
    col2im = lowering == "gemm" or (choice is not None and choice.rule is rules.CPU_CONV_DGRAD_COL2IM_GEMM)
    if polyphase_m is None and not col2im:
        return False
    b = ir.TorchBuilder()
    with ir.InsertionPoint(op), op.location:
        dy_nhwc, w_krsc = _channels_last_in_f32(b, element, dy, w)
        if polyphase_m is not None:
            wplan = winograd.WinogradPlan(
                polyphase_m, n, oh, ow, k, c, h, wd, (padding[0], padding[1]), stride=2, transposed=True
            )
            taps = winograd.krsc_taps(b.to_builtin(w_krsc))
            isa, vendor, core = rules.vector_isa(target), cpu_vendor(target.cpu), cpu_core(target.cpu)
            dx = winograd.winograd_conv(wplan, b.to_builtin(dy_nhwc), taps, isa, vendor, core)
        else:
            dx = _col2im_gemm(
                b, dy_nhwc, w_krsc, (n, oh, ow, k), (h, wd, c), (fy, fx), stride, padding, dilation, target
            )
        result = _from_f32(b, dx, [n, h, wd, c], element, TO_NCHW)
    op.results[0].replace_all_uses_with(result)
    op.erase()
    return True


def _col2im_gemm(b: ir.TorchBuilder, dy_nhwc, w_krsc, dy_dims, dx_dims, kernel, stride, padding, dilation, target):
    """DX (builtin NHWC f32) of a strided dgrad as ``DY x W`` into every tap's columns, then col2im."""
    n, oh, ow, k = dy_dims
    h, wd, c = dx_dims
    fy, fx = kernel
    rows, cols = n * oh * ow, fy * fx * c
    dy2 = _collapse(b.to_builtin(dy_nhwc), [[0, 1, 2], [3]])
    # As in _im2col_gemm: a filter that is not channels-last is transposed in a dispatch of
    # its own, not read transposed along the GEMM's vectorized dimension.
    isa = rules.vector_isa(target)
    w2, padded_b = _materialized_b(_collapse(b.to_builtin(w_krsc), [[0], [1, 2, 3]]), isa, rows, transposed=False)
    mm = _matmul(dy2, w2, rows, cols, _mnk_map(M, K), _mnk_map(K, N))
    info = gemm_config.matmul_compilation_info(
        isa, rows, cols, k, cpu_vendor(target.cpu), core=cpu_core(target.cpu), padded_b=padded_b
    )
    if info is not None:
        mm.owner.attributes["compilation_info"] = info
    columns = ir.expand_shape(mm, [[0, 1, 2], [3, 4, 5]], [n, oh, ow, fy, fx, c])
    return conv_direct.col2im(columns, (n, h, wd, c), stride, padding, dilation)


def row_block_wgrad(lowering: str, problem: rules.Problem, target: Target) -> bool:
    """Whether this weight gradient is the row-block GEMMs (cpu-conv-wgrad-row-blocks).

    ``FUSILLI_CONV_LOWERING=rowblocks`` forces them on every weight gradient of dilation 1 this
    pass rewrites; ``auto`` asks the target's rules.
    """
    if lowering == "rowblocks":
        return problem.fact("dilation") == (1, 1)
    choice = rules.choose(problem, target, "algorithm") if lowering == "auto" else None
    return choice is not None and choice.rule is rules.CPU_CONV_WGRAD_ROW_BLOCKS


def _row_block_wgrad(x_nhwc: ir.Value, dy_nhwc: ir.Value, kernel, stride, padding, isa: str) -> ir.Value:
    """``DW^T[R, S, C, K]`` of a weight gradient (dilation 1) as GEMMs over blocks of filter rows.

    Filter row ``r = q*sh + ph`` of output row ``oh`` reads X's padded row ``(oh + q)*sh + ph``,
    so with X's row-phase patches ``A[n, (ph, s, c), (h2, ow)]`` (conv_direct.row_phase_patches:
    R / sh times fewer than the im2col patches, which for the C = 3 stem are 12 times X) block
    ``q``'s GEMM ``DW^T_q[(ph, s, c), K] = sum over (oh, ow) of A[n, :, q*OW + oh*OW + ow] x
    DY[n, oh, ow, :]`` reads A at a plain offset: a slice the GEMM's dispatch loads as it is, no
    gather per block. One GEMM per block and image, each image's accumulating into the last's
    (a batched GEMM over the images, whose DY and A outgrow the cache, measured no faster); a last
    block that R leaves short (R = 7 at stride 2: one row of two) takes the rows of its phases only.
    """
    f32 = builtin_element_type("f32")
    n, oh, ow, k = ir.RankedTensorType(dy_nhwc.type).shape
    c = ir.RankedTensorType(x_nhwc.type).get_dim_size(3)
    (fy, fx), sh = kernel, stride[0]
    blocks = -(-fy // sh)
    patches = conv_direct.row_phase_patches(x_nhwc, (oh, ow), kernel, stride, padding, blocks)
    row_size, positions = fx * c, oh * ow  # GEMM rows per filter row; the GEMM's depth
    a_all = _collapse(patches, [[0], [1, 2, 3], [4, 5]])  # [n, sh * S * C, (OH + blocks - 1) * OW]
    dy_all = _collapse(dy_nhwc, [[0], [1, 2], [3]])  # [n, positions, k]
    zero = ir.arith.ConstantOp(f32, 0.0).result
    sums = ir.linalg.fill(zero, outs=[ir.tensor.EmptyOp([fy * row_size, k], f32).result])  # DW^T[(r, s, c), K]
    for image in range(n):
        dy_image = ir.tensor.ExtractSliceOp(
            ir.RankedTensorType.get([positions, k], f32), dy_all, [], [], [], [image, 0, 0], [1, positions, k], [1] * 3
        ).result
        for q in range(blocks):
            rows = min(sh, fy - q * sh) * row_size
            a = ir.tensor.ExtractSliceOp(
                ir.RankedTensorType.get([rows, positions], f32),
                a_all,
                [],
                [],
                [],
                [image, 0, q * ow],
                [1, rows, positions],
                [1] * 3,
            ).result
            # Each block's GEMM accumulates into its rows of one tensor: the chain keeps an image's
            # blocks together, so its DY is read from cache by all of them.
            first = q * sh * row_size
            block_type = ir.RankedTensorType.get([rows, k], f32)
            part = ir.tensor.ExtractSliceOp(block_type, sums, [], [], [], [first, 0], [rows, k], [1, 1]).result
            gemm = ir.linalg.matmul(a, dy_image, outs=[part])
            info = gemm_config.row_block_wgrad_compilation_info(isa, rows, k, positions)
            if info is not None:
                gemm.owner.attributes["compilation_info"] = info
            sums = ir.tensor.InsertSliceOp(gemm, sums, [], [], [], [first, 0], [rows, k], [1, 1]).result
    return ir.expand_shape(sums, [[0, 1, 2], [3]], [fy, fx, c, k])


def _wgrad_operands(op: ir.Operation) -> tuple[ir.Value, ir.Value, ir.TensorType, ir.TensorType] | None:
    """(DY, X, DY's type, DW's type) of a ``torch.aten.convolution_backward`` whose weight gradient
    alone is used, of static 2-D float operands of one element type; None for any other."""
    dy, x = op.operands[0], op.operands[1]
    dyt, xt, dwt = ir.TensorType.of(dy), ir.TensorType.of(x), ir.TensorType.of(op.results[1])
    if dyt.rank != 4 or xt.rank != 4 or any(d == DYNAMIC for d in dyt.dims + xt.dims + dwt.dims):
        return None
    if xt.element not in _FLOAT_CODES or dyt.element != xt.element or dwt.element != xt.element:
        return None
    if any(list(r.uses) for r in (op.results[0], op.results[2])):
        return None
    return dy, x, dyt, dwt


def _rewrite_wgrad(op: ir.Operation, target: Target) -> bool:
    """A channels-last, ungrouped 2-D weight gradient as Winograd (3x3 stride 1; 3x3 stride 2 over X's
    phases, winograd.polyphase_wgrad; where the target's rules choose them), as GEMMs over blocks of
    filter rows (_row_block_wgrad, cpu-conv-wgrad-row-blocks) or as one GEMM over the im2col patches.

    ``DW[K, R*S*C] = DY[N*Ho*Wo, K]^T x patches(X)[N*Ho*Wo, R*S*C]``: the forward conv's
    im2col read of X, contracted with DY over every output position. The result is the
    KRSC filter gradient (a channels-last DW's own layout); ``torch.aten.convolution_backward``
    runs at ~0.06x PyTorch on CPU (BENCHMARKS.md). Where R*S*C does not fill the GEMM tile's
    register columns (the C = 3 stem), or on AVX2 where K is small, the GEMM is ``DW^T[R*S*C, K]``,
    the same operands swapped, and the permute to the filter's layout reads it transposed
    (gemm_config.wgrad_gemm_transposed). Over many output positions the GEMM sums chunks of
    them (gemm_config.wgrad_chunk_positions, _chunked_wgrad_gemm).
    """
    operands = _wgrad_operands(op)
    if operands is None:
        return False
    dy, x, dyt, dwt = operands
    # Both operands channels-last (a permute from NHWC), or one channel: NHWC and NCHW are then the
    # same memory and emission leaves the permute out (the NHWC view below is a reshape).
    if not all(permutation_of(defining_op(v)) == TO_NCHW or ir.TensorType.of(v).dims[1] == 1 for v in (x, dy)):
        return False
    if all(ir.TensorType.of(v).dims[1] == 1 for v in (x, dy)):
        return False  # nothing says the graph is channels-last
    params = _static_conv_params(op, 4)
    if params is None or len(params[0]) != 2:
        return False
    stride, padding, dilation = params
    n, k, oh, ow = dyt.dims
    _, c, fy, fx = dwt.dims
    element = dwt.element
    b = ir.TorchBuilder()
    with ir.InsertionPoint(op), op.location:
        x_nhwc, dy_nhwc = _channels_last_in_f32(b, element, x, dy)
        flops = 2 * n * oh * ow * k * c * fy * fx
        facts = rules.conv_facts((fy, fx), stride, dilation, 1, True, n, (oh, ow), c, padding)
        problem = rules.Problem("conv_wgrad", DataType.from_mlir_name(element), flops, facts)
        polyphase_m = polyphase_tile(pipeline.CONV_LOWERING, problem, target)
        if winograd_tile(pipeline.CONV_LOWERING, problem, target) is not None or polyphase_m is not None:
            x_b, dy_b, isa = b.to_builtin(x_nhwc), b.to_builtin(dy_nhwc), rules.vector_isa(target)
            if polyphase_m is not None:
                dw = winograd.polyphase_wgrad(x_b, dy_b, padding, polyphase_m, isa)
            else:
                dw = winograd.winograd_wgrad(x_b, dy_b, padding, isa)
            result = _from_f32(b, dw, [k, fy, fx, c], element, TO_NCHW)
        elif row_block_wgrad(pipeline.CONV_LOWERING, problem, target):
            dw_t = _row_block_wgrad(
                b.to_builtin(x_nhwc), b.to_builtin(dy_nhwc), (fy, fx), stride, padding, rules.vector_isa(target)
            )
            result = _from_f32(b, dw_t, [fy, fx, c, k], element, [3, 2, 0, 1])
        else:
            # The patches read through the padding (conv_direct.padded_patches): no padded copy of X,
            # and the gather (vectors along C, masked at the border) ran faster than a tensor.pad and a
            # plain gather of the padded copy. Zen 4 VM, in one process, ratio to PyTorch, two runs,
            # AVX-512 / x86-64-v3 code: 3x3 s2 8x128x56x56->128 0.68 -> 0.96, 0.59 -> 0.93 / 0.74 ->
            # 1.03 (one thread: pad 1.7 + gather 11.5 ms -> gather 3.3 ms, the GEMM 22 ms either way),
            # 3x3 s2 1x128x56x56 0.88 -> 0.97, 0.96 -> 1.17 / 1.05 -> 1.22; 1x1 s2 1x256x56x56->512
            # 0.59 -> 0.67 / 0.43 -> 0.52, 8x512x28x28->1024 0.60 -> 0.85 / 0.58 -> 0.69 (one run); the
            # C = 3 stem (its gather 3 channels wide: 0.11 + 0.68 -> 0.88 ms at batch 1, 1.0 + 6.9 ->
            # 7.7 at batch 8) batch 8 0.62 -> 0.66, 0.43 -> 0.55 / 0.75 -> 0.83, batch 1 even (0.57 ->
            # 0.45, 0.47 -> 0.56 / 0.87 -> 0.85).
            patches = _gemm_patches(b.to_builtin(x_nhwc), (oh, ow), (fy, fx), stride, padding, dilation)
            dy2 = _collapse(b.to_builtin(dy_nhwc), [[0, 1, 2], [3]])
            # The conv GEMM's tile where the rules choose it (FUSILLI_CONV_LOWERING=gemm: everywhere),
            # as DW^T[R*S*C, K] where R*S*C does not fill the tile's columns (gemm_config); a plain
            # GEMM for IREE's data tiling where rules.CPU_CONV_WGRAD_DATA_TILING chose that (its flags).
            lowering = pipeline.CONV_LOWERING
            choice = rules.choose(problem, target, "algorithm") if lowering == "auto" else None
            tiled = lowering == "gemm" or (choice is not None and choice.rule is rules.CPU_CONV_WGRAD_GEMM)
            isa, vendor, columns, positions = rules.vector_isa(target), cpu_vendor(target.cpu), fy * fx * c, n * oh * ow
            core = cpu_core(target.cpu)
            transposed = tiled and gemm_config.wgrad_gemm_transposed(isa, k, columns, vendor, core, positions)
            chunk = (
                gemm_config.wgrad_chunk_positions((fy, fx), positions, k, transposed, isa, vendor, columns, core)
                if tiled
                else None
            )
            # DW^T[R*S*C, K] = patches^T x DY, or DW[K, R*S*C] = DY^T x patches.
            if transposed:
                lhs, rhs, rows, cols = patches, dy2, columns, k
                dw_shape, groups, to_nchw = [fy, fx, c, k], [[0, 1, 2], [3]], [3, 2, 0, 1]
            else:
                lhs, rhs, rows, cols = dy2, patches, k, columns
                dw_shape, groups, to_nchw = [k, fy, fx, c], [[0], [1, 2, 3]], TO_NCHW
            info = None
            if chunk is not None:
                mm = _chunked_wgrad_gemm(lhs, rhs, chunk, isa, vendor, core)
                if transposed:
                    # The chunks' sum as DW^T, its permute to the filter's layout a small dispatch of
                    # its own: fused, the sum wrote DW^T transposed (1x1 8x512x28x28->128, one thread:
                    # 3.3 ms against 1.45 + 0.05). Zen 1, in one process, ratio to PyTorch, two runs:
                    # 8x512x28x28->128 0.84 -> 0.91, 0.85 -> 0.88; 3x3 s2 8x64x56x56->128 1.20 -> 1.26,
                    # 1.19 -> 1.25; the stem 8x3x224x224 0.76 -> 0.81, 0.80 -> 0.85; 1x1 8x256x56x56->64
                    # 0.99 -> 1.01, 0.98 -> 0.98; the stem at batch 1 0.76 -> 0.78, 0.82 -> 0.83. As
                    # x86-64-v3 code (one run): 0.77 -> 0.81, 1.23 -> 1.25, 0.72 -> 0.78, 0.95 -> 0.99,
                    # 0.76 -> 0.80. (DW^T comes in chunks on AVX2: gemm_config.wgrad_chunk_positions.)
                    mm = ir.fusion_barrier(mm)
            else:
                mm = _matmul(lhs, rhs, rows, cols, _mnk_map(K, M), _mnk_map(K, N))
                if transposed:
                    info = gemm_config.wgrad_transposed_matmul_compilation_info(
                        isa, columns, k, positions, vendor, core
                    )
                elif tiled:
                    info = gemm_config.wgrad_matmul_compilation_info(isa, k, columns, positions, vendor, core)
            if info is not None:
                mm.owner.attributes["compilation_info"] = info
            dw = ir.expand_shape(mm, groups, dw_shape)
            result = _from_f32(b, dw, dw_shape, element, to_nchw)
    op.results[1].replace_all_uses_with(result)
    op.erase()
    return True


def _rewrite_grouped_wgrad(op: ir.Operation, target: Target) -> bool:
    """A channels-last weight gradient of a grouped conv of several channels per group (ResNeXt's
    3x3 g32; rules.CPU_CONV_GROUPED_WGRAD) as ``conv_direct.grouped_wgrad``: contractions over
    chunks of output rows with a result per filter tap, then the chunks' sum; of a depthwise conv
    (rules.CPU_CONV_DEPTHWISE_WGRAD) as ``conv_direct.depthwise_wgrad``: per output row, sums of
    column pairs' products with a result per filter tap, then the rows' sum; f16/bf16 computed in f32.

    Left to ``torch.aten.convolution_backward`` they ran at 0.02-0.25 and 0.06-0.11 of PyTorch
    (BENCHMARKS.md, "twenty-third session")."""
    operands = _wgrad_operands(op)
    if operands is None:
        return False
    dy, x, dyt, dwt = operands
    if not all(permutation_of(defining_op(v)) == TO_NCHW for v in (x, dy)):
        return False
    attrs = _conv_attrs(op, 4)
    if attrs is None:
        return False
    stride, padding, dilation, transposed, groups = attrs
    if len(stride) != 2 or len(padding) != 2 or len(dilation) != 2 or transposed or groups < 2:
        return False
    n, k, oh, ow = dyt.dims
    _, per_group, fy, fx = dwt.dims
    element = dwt.element
    facts = rules.conv_facts((fy, fx), stride, dilation, groups, True, n, (oh, ow), per_group, padding)
    problem = rules.Problem(
        "conv_wgrad", DataType.from_mlir_name(element), 2 * n * oh * ow * k * per_group * fy * fx, facts
    )
    choice = rules.choose(problem, target, "algorithm")
    if choice is None or choice.rule not in (rules.CPU_CONV_GROUPED_WGRAD, rules.CPU_CONV_DEPTHWISE_WGRAD):
        return False
    b = ir.TorchBuilder()
    with ir.InsertionPoint(op), op.location:
        x_nhwc, dy_nhwc = _channels_last_in_f32(b, element, x, dy)
        x_b, dy_b = b.to_builtin(x_nhwc), b.to_builtin(dy_nhwc)
        if choice.rule is rules.CPU_CONV_DEPTHWISE_WGRAD:
            dw = conv_direct.depthwise_wgrad(x_b, dy_b, (fy, fx), stride, padding, dilation, rules.vector_isa(target))
        else:
            dw = conv_direct.grouped_wgrad(
                x_b, dy_b, groups, (fy, fx), stride, padding, dilation, rules.vector_isa(target)
            )
        result = _from_f32(b, dw, [k, fy, fx, per_group], element, TO_NCHW)
    op.results[1].replace_all_uses_with(result)
    op.erase()
    return True
