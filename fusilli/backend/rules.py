"""Lowering rules: every hardware-dependent choice, named, per target.

JAX registers an op's lowering per platform; fusilli goes one step finer. Each
choice that depends on the hardware (a rewrite, a compute type, a compiler
flag) is a ``Rule``: a name, the backend it is for, the op kinds it covers,
the *aspect* it decides (``compute``: the element type the arithmetic runs in;
``algorithm``: how the op is expressed; ``flags``: compiler flags), a predicate
on the op's ``Problem`` (kind, element type, arithmetic, shape facts) and the
``Target`` (backend, arch, ISA features), and the measurement that justifies it.
For each node and aspect the first registered rule whose predicate holds is the
choice; its predicate returns the fact that made it hold (a size, a data type,
an ISA feature), which ``explain`` prints. Emitters and passes ask ``choose``;
``compile_flags`` collects the flags of a graph's choices (they join the cache
key through ``Target.flags``).

Adding a rule (a Winograd conv, a GEMM tile configuration, a new ISA's kernel):
register its predicate with ``@rule(name, backend, kinds, aspect, flags=...,
evidence=...)`` above the rules it should take precedence over, and have the
lowering or pass that implements it test ``choice.rule is THE_RULE``;
``explain`` and the cache key pick it up by themselves.

This module is IR-free: the cache key and ``Graph.explain`` use it without
loading the MLIR bindings. Measurements quoted are ``fusilli-benchmark
--compare torch`` ratios (PyTorch time / fusilli time, same run) on the 2-core
dev machine (AMD Zen 4/5, AVX-512 + avx512bf16); the AVX2 side is the same
machine compiling for ``arch="x86-64-v3"`` against PyTorch run with
``ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2`` (BENCHMARKS.md, one table
per ISA).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from fusilli.backend.targets import Backend, Target, cpu_core, cpu_vendor
from fusilli.types import DataType

# ---------------------------------------------------------------- problems


@dataclass(frozen=True)
class Problem:
    """What a rule looks at: an op's kind, element type, arithmetic and shape facts.

    Built from a graph node (``problem_of``) or, inside a pass, from the IR op
    the node became, so a node and its IR get the same answer.
    """

    kind: str
    element: DataType
    flops: int = 0
    facts: Mapping[str, Any] = field(default_factory=dict)

    def fact(self, name: str, default: Any = None) -> Any:
        return self.facts.get(name, default)


def _sdpa_facts(node: Any) -> dict[str, Any]:
    q, k, v = (node.tensor(s) for s in ("Q", "K", "V"))
    bsz, hq, sq, d = q.dim
    hk, hv, skv = k.dim[1], v.dim[1], k.dim[2]
    lo, hi = sorted((hk, hv))
    groups = hq if hk == hq and hv == hq else (hi if hi % lo == 0 else hq)
    mask = node.inputs.get("MASK")
    return {
        "flops": 4 * bsz * hq * sq * skv * d,
        "dynamic": any(t.dynamic_dims for t in (q, k, v)),
        "scores_bytes": 4 * bsz * hq * sq * skv,
        "causal": bool(node.attrs.is_causal),
        "rows": sq,
        "mask": mask is not None,
        "folded_heads": hq // groups,
    }


def _matmul_facts(node: Any) -> dict[str, Any]:
    from fusilli.tensor import data_type_of

    a, b, c = (node.tensor(s) for s in ("A", "B", "C"))
    compute = node.compute_data_type
    return {
        "rank": c.rank,
        "m": a.dim[-2],
        "n": b.dim[-1],
        "k": a.dim[-1],
        # One batch dim that both operands have whole (no broadcast): linalg.batch_matmul's form.
        "same_batch": a.rank == b.rank == c.rank and a.dim[:-2] == b.dim[:-2] == c.dim[:-2],
        "dynamic": any(t.dynamic_dims for t in (a, b, c)),
        # Row-major A and C (strides in dim order), and B row-major or transposed (its last two
        # dims swapped in memory, a linear layer's weight read as W^T).
        "row_major": all(list(t.physical_order) == list(range(t.rank)) for t in (a, c)),
        "b_layout": (
            "row_major"
            if list(b.physical_order) == list(range(b.rank))
            else "transposed"
            if list(b.physical_order) == [*range(b.rank - 2), b.rank - 1, b.rank - 2]
            else "other"
        ),
        "all_f32": all(data_type_of(t) == DataType.FLOAT for t in (a, b, c)) and compute in (None, DataType.FLOAT),
    }


def _conv_facts_of_node(node: Any) -> dict[str, Any]:
    x, w, y = node.conv_operands()
    # One channel: NHWC and NCHW are the same memory, and emission keeps the conv NCHW (no
    # permute for fusilli-conv-layout to rewrite), so the channels-last rules must not apply;
    # a weight gradient is rewritten from its DY's permute alone, so there DY decides.
    channels_last = x.stride[1] == 1 and x.rank > 3 and x.dim[1] > 1
    if node.kind == "conv_wgrad" and x.rank > 3 and x.dim[1] == 1:
        channels_last = y.stride[1] == 1 and y.dim[1] > 1  # y: DY
    # dgrad runs as a forward conv of DY producing DX (stride 1; fusilli/lowering/conv.py):
    # its output is DX, its input channels DY's (fusilli-conv-layout asks the rules so).
    dgrad = node.kind == "conv_dgrad"
    out = x if dgrad else y
    channels = w.dim[0] // node.groups if dgrad else w.dim[1]
    facts = conv_facts(
        w.dim[2:],
        node.stride,
        node.dilation,
        node.groups,
        channels_last,
        out.dim[0],
        out.dim[2:],
        channels,
        node.padding,
    )
    facts["dynamic"] = any(t.dynamic_dims for t in (x, w, y))  # (fusilli-conv-layout leaves such convs)
    return facts


def conv_facts(
    kernel, stride, dilation, groups: int, channels_last: bool, batch: int, out_spatial, channels: int = 0, padding=()
) -> dict[str, Any]:
    """The shape facts of a forward conv that algorithm rules look at (from a node or from IR);
    ``channels``: input channels per group (0: not known)."""
    return {
        "channels": channels,
        "padding": tuple(padding),
        "kernel": tuple(kernel),
        "stride": tuple(stride),
        "dilation": tuple(dilation),
        "groups": groups,
        "channels_last": channels_last,
        "batch": batch,
        "out_spatial": tuple(out_spatial),
    }


# Facts beyond the node's workload, per op kind.
_FACTS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "sdpa": _sdpa_facts,
    "matmul": _matmul_facts,
    "conv_fprop": _conv_facts_of_node,
    "conv_wgrad": _conv_facts_of_node,
    "conv_dgrad": _conv_facts_of_node,
}


def problem_of(node: Any) -> Problem:
    """The ``Problem`` of a validated graph node."""
    from fusilli.tensor import data_type_of

    facts = _FACTS[node.kind](node) if node.kind in _FACTS else {}
    workload = node.workload()
    if workload is not None:
        return Problem(node.kind, workload.element, workload.flops, facts)
    first = next((t for t in node.inputs.values() if t is not None), None)
    element = data_type_of(first) if first is not None else DataType.FLOAT
    return Problem(node.kind, element, int(facts.pop("flops", 0)), facts)


# ---------------------------------------------------------------- rules


Predicate = Callable[[Problem, Target], "str | None"]


@dataclass(frozen=True)
class Rule:
    name: str
    backend: Backend
    kinds: tuple[str, ...]  # op kinds; () = every kind
    aspect: str  # "compute", "algorithm" or "flags"
    applies: Predicate  # the fact that makes the rule hold, or None
    flags: tuple[str, ...] = ()
    evidence: str = ""  # the measurement that justifies it

    def covers(self, kind: str, target: Target) -> bool:
        return self.backend == target.backend and (not self.kinds or kind in self.kinds)


@dataclass(frozen=True)
class Choice:
    rule: Rule
    fact: str

    @property
    def name(self) -> str:
        return self.rule.name


RULES: list[Rule] = []


def rule(
    name: str,
    backend: Backend,
    kinds: tuple[str, ...],
    aspect: str,
    flags: tuple[str, ...] = (),
    evidence: str = "",
) -> Callable[[Predicate], Rule]:
    """Registers the decorated predicate as a rule; earlier rules take precedence."""

    def register(applies: Predicate) -> Rule:
        if any(r.name == name for r in RULES):
            raise ValueError(f"lowering rule {name!r} registered twice")
        r = Rule(name, backend, kinds, aspect, applies, flags, evidence)
        RULES.append(r)
        return r

    return register


# A row-split half (fusilli/batch_split.py: a batch-1 graph run as two calls over half its rows)
# is lowered as the whole graph it is one of: the rules see its convs at the whole's size, so a
# half does not cross a size threshold into another lowering. ResNet-50's batch-1 1x1 convs of
# 784 GEMM rows (cpu-conv-im2col-gemm from 512) have halves of 392, which took data tiling, so
# the split was refused (runtime._split_does_not_pay) and they ran on the pool. Zen 5 VM
# (znver5), in one process, interleaved with PyTorch, ratio (benchmarks/conv_lowerings.py: auto
# on the pool, auto@split with data-tiled halves, gemm@split with the GEMM's): 1x1 1x512x28x28->128
# 0.69 / 0.77 / 1.02; 1x1 s2 1x256x56x56->512 0.84 / 0.83 / 0.93, + bias + relu 0.89 / 0.85 / 0.95.
# The code before and after in alternating processes (fusilli-benchmark, three rounds, fusilli's
# median ms): 1x512x28x28->128 0.343, 0.411, 0.376 -> 0.229, 0.286, 0.269; 1x1 s2 0.565, 0.595, 0.658
# -> 0.493, 0.564, 0.596; + bias + relu even (0.598, 0.571, 0.684 -> 0.613, 0.596, 0.590). As
# x86-64-v3 code (PyTorch held to AVX2) the split lost or ran even against the pool (0.90 -> 0.83,
# 0.82 -> 0.79, 0.77 -> 0.78), so only these targets' halves are lowered as their whole. (A row
# split holds 1x1 convs, their data gradients and pointwise ops, whose lowerings ``choose`` decides.)
LOWERED_AS_WHOLE_TARGETS = {("avx512", "amd")}
_LOWERED_AS_PARTS: contextvars.ContextVar[int] = contextvars.ContextVar("fusilli_lowered_as_parts", default=1)


@contextlib.contextmanager
def lowered_as_parts(parts: int) -> Iterator[None]:
    """Within it the rules see each conv problem as ``parts`` of it (a row-split half's whole), on
    ``LOWERED_AS_WHOLE_TARGETS``."""
    token = _LOWERED_AS_PARTS.set(parts)
    try:
        yield
    finally:
        _LOWERED_AS_PARTS.reset(token)


def _as_whole(problem: Problem, target: Target) -> Problem:
    parts = _LOWERED_AS_PARTS.get()
    if parts == 1 or not problem.kind.startswith("conv_") or "batch" not in problem.facts:
        return problem
    if (vector_isa(target), cpu_vendor(target.cpu) or "") not in LOWERED_AS_WHOLE_TARGETS:
        return problem
    facts = dict(problem.facts, batch=int(problem.fact("batch")) * parts)
    return replace(problem, flops=problem.flops * parts, facts=facts)


def depth_folded(problem: Problem) -> Problem | None:
    """A channels-last, ungrouped 3-D forward conv (or stride-1 data gradient, which runs as the
    forward conv of DY; or weight gradient, of DY and the gathered X) as the 2-D one
    fusilli-conv-layout folds it into on CPUs, else None.

    Its T depth taps are gathered into the channels (conv_direct.depth_taps): X'[n*Do + do, h, w,
    t*C + c] = X[n, do*sd + t*dd - pd, h, w, c], zero outside X, and the filter read as [K, R, S,
    T*C]; a 2-D conv of batch N*Do and T*C channels over H and W then gives Y as [N*Do, Ho, Wo, K],
    which is Y's NDHWC memory. Every 2-D lowering (Winograd, the tuned GEMMs) applies to it: IREE's
    own 3-D conv ran 3x3x3 2x64x8x28x28->64 at 0.01x PyTorch (BENCHMARKS.md, thirty-ninth session).
    The depth gather costs T times X's bytes (none for T = 1 at stride 1 unpadded)."""
    kernel = problem.fact("kernel")
    if problem.kind not in ("conv_fprop", "conv_dgrad", "conv_wgrad") or kernel is None or len(kernel) != 3:
        return None
    if not problem.fact("channels_last") or problem.fact("groups") != 1 or problem.fact("dynamic"):
        return None
    stride, dilation, padding = problem.fact("stride"), problem.fact("dilation"), problem.fact("padding")
    if problem.kind == "conv_dgrad":
        if any(st != 1 for st in stride):
            return None  # a transposed conv (conv_layout._rewrite_strided_dgrad's, 2-D only)
        # The forward conv of DY it runs as pads by (k - 1) * dilation - padding.
        padding = tuple((k - 1) * d - p for k, d, p in zip(kernel, dilation, padding))
    (t, r, s), (sd, sh, sw), (dd, dh, dw), (pd, ph, pw) = kernel, stride, dilation, padding
    depth, ho, wo = problem.fact("out_spatial")
    facts = dict(
        problem.facts,
        kernel=(r, s),
        stride=(sh, sw),
        dilation=(dh, dw),
        padding=(ph, pw),
        channels=t * int(problem.fact("channels")),
        batch=int(problem.fact("batch")) * depth,
        out_spatial=(ho, wo),
        depth_fold=(t, sd, pd, dd),
    )
    return replace(problem, kind="conv_wgrad" if problem.kind == "conv_wgrad" else "conv_fprop", facts=facts)


def depth_fold_text(problem: Problem) -> str:
    """What ``depth_folded`` made of ``problem``: g.explain's words for it."""
    t = problem.fact("depth_fold")[0]
    return (
        f"3-D as 2-D: {t} depth tap{'s' if t != 1 else ''} gathered into {problem.fact('channels')} channels, batch "
        f"{problem.fact('batch')} (cpu-conv-depth-fold)"
    )


def as_lowered(problem: Problem, target: Target) -> Problem:
    """``problem`` as ``target`` lowers it: on CPUs a 3-D conv as the 2-D conv it is folded into
    (``depth_folded``), else as it is."""
    if target.backend == Backend.CPU:
        return depth_folded(problem) or problem
    return problem


def choose(problem: Problem, target: Target, aspect: str) -> Choice | None:
    """The first rule for ``target`` deciding ``aspect`` of ``problem`` that holds (a conv's at
    its whole graph's size inside ``lowered_as_parts``, on the targets measured; a 3-D conv's on CPUs
    as the 2-D conv it is folded into, ``depth_folded``)."""
    problem = as_lowered(_as_whole(problem, target), target)
    for r in RULES:
        if r.aspect == aspect and r.covers(problem.kind, target):
            fact = r.applies(problem, target)
            if fact is not None:
                return Choice(r, fact)
    return None


def choices(problem: Problem, target: Target) -> list[Choice]:
    """One choice per aspect that has a rule for ``problem`` on ``target``."""
    out = []
    for aspect in ASPECTS:
        c = choose(problem, target, aspect)
        if c is not None:
            out.append(c)
    return out


def compile_flags(nodes: Iterable[Any], target: Target) -> list[str]:
    """The flags the chosen rules of a graph's ``nodes`` add (deduplicated, stable order), less
    IREE's im2col where a depthwise conv is among them: IREE 3.13 turns a depthwise conv into a
    ``linalg.batch_matvec`` that fails to verify (its filter operand 576 where 144 is found)."""
    out: list[str] = []
    depthwise = False
    for node in nodes or ():
        for c in choices(problem_of(node), target):
            out += [f for f in c.rule.flags if f not in out]
            depthwise = depthwise or c.rule is CPU_CONV_DEPTHWISE
    return [f for f in out if f not in IM2COL_FLAGS] if depthwise else out


def explain(nodes: Iterable[Any], target: Target) -> str:
    """One line per node: each aspect's rule for ``target`` and the fact that chose it."""
    lines = [f"target: {target.describe()}; features: {describe_features(target)}"]
    nodes = list(nodes)
    for node in nodes:
        problem = problem_of(node)
        cs = choices(problem, target)
        what = "; ".join(f"{c.name} ({c.fact})" for c in cs) or "no target-specific rule"
        folded = as_lowered(problem, target)
        if folded is not problem:
            what = f"{depth_fold_text(folded)}; {what}"
        lines.append(f"{node.name} [{node.kind}]: {what}")
    forced = forced_conv_lowering(nodes)
    if forced:
        lines.append(
            f"FUSILLI_CONV_LOWERING={forced} forces the conv lowering where it applies "
            "(the conv rules above are what auto would take)"
        )
    return "\n".join(lines)


def forced_conv_lowering(nodes: Iterable[Any]) -> str | None:
    """``FUSILLI_CONV_LOWERING`` where it is set (not ``auto``) and ``nodes`` hold a conv."""
    from fusilli import pipeline

    if pipeline.CONV_LOWERING == "auto" or not any(node.kind.startswith("conv_") for node in nodes):
        return None
    return pipeline.CONV_LOWERING


def lowering_summary(nodes: Iterable[Any], target: Target) -> str:
    """The algorithm and flag rules ``target`` chose for a graph's ``nodes``, deduplicated in
    node order, as one short line (``cpu-conv-winograd F(4x4)``, ``cpu-conv-im2col-gemm``);
    the benchmark tables' lowering column. Empty where no such rule applies."""
    names: list[str] = []
    nodes = list(nodes or ())
    for node in nodes:
        problem = as_lowered(problem_of(node), target)
        if "depth_fold" in problem.facts and "cpu-conv-depth-fold" not in names:
            names.append("cpu-conv-depth-fold")
        for c in choices(problem, target):
            if c.rule.aspect == "compute":
                continue
            name = c.name
            if c.rule is CPU_CONV_WINOGRAD:
                m = winograd_output_tile(problem, target)
                name += f" F({m}x{m})"
            elif c.rule is CPU_CONV_WINOGRAD_STRIDED:
                m = polyphase_output_tile(problem, target)
                name += f" F({m}x{m}, 2x2)"
            elif c.rule is CPU_CONV_DGRAD_WINOGRAD_STRIDED:
                m = polyphase_dgrad_output_tile(problem, target)
                name += f" F({m}x{m}, 2x2)"
            elif c.rule is CPU_CONV_WGRAD_WINOGRAD_STRIDED:
                m = polyphase_wgrad_output_tile(problem, target)
                name += f" F({m}x{m}, 2x2)"
            elif c.rule is CPU_CONV_WGRAD_GEMM and _wgrad_gemm_chunk(problem, target) is not None:
                name += " in chunks"
            if name not in names:
                names.append(name)
    forced = forced_conv_lowering(nodes)
    return " + ".join([f"FUSILLI_CONV_LOWERING={forced}"] * bool(forced) + names)


# The features explain lists (all a rule looks at).
_FEATURES_OF_INTEREST = (
    "avx2",
    "fma",
    "avx512f",
    "avx512bf16",
    "avx512fp16",
    "avx512vnni",
    "amx-bf16",
    "amx-fp16",
    "neon",
    "sve",
    "bf16",
    "fp16fml",
    "i8mm",
    "mfma",
    "wmma",
)


def describe_features(target: Target) -> str:
    present = [f for f in _FEATURES_OF_INTEREST if f in target.features]
    if target.gpu is not None and target.gpu.matrix_types:
        present.append(f"{target.gpu.matrix_unit} types {'/'.join(target.gpu.matrix_types)}")
    return ", ".join(present) or "none of interest"


ASPECTS = ("compute", "algorithm", "flags")

_LOW_PRECISION = (DataType.BFLOAT16, DataType.HALF)

# The ISA features with which IREE's CPU kernels take bf16 / f16 operands as they
# are, per CPU architecture: native low-precision dot products (avx512bf16,
# amx; arm bf16, fp16fml) and, for f16 on x86, AVX-512's in-register widening
# (IREE's f16 ukernel converts with vcvtph2ps zmm). Without them the bf16
# arithmetic is emulated element by element, and the rule
# cpu-low-precision-via-f32 widens the operands instead. f16 matmul 1024^3,
# same-process A/B (benchmarks/ab_low_precision_matmul.py; min / median of
# 30-40 calls on the loaded 2-core machine): AVX-512 f16 operands 32.6 / 81 ms
# vs through f32 40.0 / 88 ms; AVX2 (x86-64-v3) f16 operands 92.5 / 154 ms vs
# through f32 80.0 / 135 ms.
NATIVE_DOT_FEATURES: dict[str, dict[DataType, tuple[str, ...]]] = {
    "x86_64": {DataType.BFLOAT16: ("avx512bf16", "amx-bf16"), DataType.HALF: ("avx512fp16", "amx-fp16", "avx512f")},
    "aarch64": {DataType.BFLOAT16: ("bf16",), DataType.HALF: ("fp16fml",)},
}


def _native_dot_features(target: Target, element: DataType) -> tuple[str, ...]:
    machine = target.cpu.machine if target.cpu is not None else ""
    return NATIVE_DOT_FEATURES.get(machine, {}).get(element, ())


def native_dot(target: Target, element: DataType) -> str | None:
    """The ISA feature giving ``target`` native ``element`` dot products, if any."""
    return next((f for f in _native_dot_features(target, element) if f in target.features), None)


def _lacks_native_dot(p: Problem, t: Target) -> str | None:
    if p.element not in _LOW_PRECISION or native_dot(t, p.element) is not None:
        return None
    return f"{p.element.mlir_name}, {t.arch} has no {'/'.join(_native_dot_features(t, p.element)) or 'native dot'}"


def _isa_of(isa: str, vendor: str | None) -> str:
    """The ISA a rule's GEMM is tuned for, in explain's words: ``"avx512, Intel"``, ``"avx2, AMD"``,
    or the ISA alone for code for no named CPU."""
    return f"{isa}, {'AMD' if vendor == 'amd' else 'Intel'}" if vendor in ("amd", "intel") else isa


def _mflop(flops: int) -> str:
    """``flops`` for people: 2.15 GFLOP, 268 MFLOP."""
    return f"{flops / 1e9:.3g} GFLOP" if flops >= 1e9 else f"{flops / 1e6:.3g} MFLOP"


# ---------------------------------------------------------------- CPU: compute types

CPU_MATMUL_KINDS = ("matmul",)
CPU_CONV_KINDS = ("conv_fprop", "conv_dgrad", "conv_wgrad")
# Convs from this size take im2col (the conv flags rule) or the bf16 im2col matmul.
CPU_CONV_IM2COL_MIN_FLOPS = 1 << 20

CPU_LOW_PRECISION_VIA_F32: Rule = rule(
    "cpu-low-precision-via-f32",
    Backend.CPU,
    CPU_MATMUL_KINDS + CPU_CONV_KINDS + ("sdpa",),
    "compute",
    evidence=(
        "AVX2 (x86-64-v3), benchmarks/ab_low_precision_matmul.py --dtype bf16: bf16 matmul 1024^3 "
        "through f32 63 ms vs IREE's emulated bf16 3691 ms (same process); against PyTorch AVX2: "
        "ratio 67 (bf16 matmul) and 3.5 (bf16 3x3 conv), BENCHMARKS.md AVX2 table"
    ),
)(_lacks_native_dot)


@rule(
    "cpu-conv-bf16-im2col-matmul",
    Backend.CPU,
    ("conv_fprop",),
    "compute",
    evidence=(
        "AVX-512 + avx512bf16: bf16 3x3 4x64x56x56->64 as explicit im2col + bf16 x bf16 -> f32 "
        "data-tiled ukernel matmul, ratio 0.19 -> 0.31 (min 9.9 -> 6.3 ms) over computing it in f32"
    ),
)
def CPU_CONV_BF16_IM2COL_MATMUL(p: Problem, t: Target) -> str | None:
    feature = native_dot(t, DataType.BFLOAT16)
    if p.element != DataType.BFLOAT16 or feature is None or p.flops < CPU_CONV_IM2COL_MIN_FLOPS:
        return None
    # Winograd in f32 beats the bf16 ukernel where it applies: bf16 3x3 4x64x56x56->64
    # min 6.3 ms (bf16 im2col matmul) -> 1.7 ms (Winograd F(4,3) in f32), AVX-512 host.
    if CPU_CONV_WINOGRAD.applies(p, t) is not None:
        return None
    return f"bf16, {_mflop(p.flops)} >= {_mflop(CPU_CONV_IM2COL_MIN_FLOPS)}, {feature}"


@rule(
    "cpu-conv-low-precision-in-f32",
    Backend.CPU,
    CPU_CONV_KINDS,
    "compute",
    evidence=(
        "IREE 3.13 cannot im2col an f16/bf16 conv ('arith.addf' op requires the same type) and its "
        "direct f16 conv is slow; f16 3x3 4x64x56x56->64 in f32: ratio 2.36 (PyTorch's f16 CPU conv is slow)"
    ),
)
def CPU_CONV_LOW_PRECISION_IN_F32(p: Problem, t: Target) -> str | None:
    return f"{p.element.mlir_name} conv" if p.element in _LOW_PRECISION else None


@rule(
    "cpu-sdpa-decomposed-in-f32",
    Backend.CPU,
    ("sdpa",),
    "compute",
    evidence="f16 1x8x512x64 decomposed in f32: ratio 1.24 (PyTorch's f16 attention on CPU is slower)",
)
def CPU_SDPA_DECOMPOSED_IN_F32(p: Problem, t: Target) -> str | None:
    if p.element not in _LOW_PRECISION or not _sdpa_decomposes(p):
        return None
    return f"{p.element.mlir_name}, decomposed: scores, softmax and both matmuls in f32"


@rule(
    "cpu-own-type",
    Backend.CPU,
    CPU_MATMUL_KINDS + CPU_CONV_KINDS + ("sdpa",),
    "compute",
    evidence="f32 is native everywhere; bf16/f16 with native dot products use IREE's low-precision ukernels",
)
def CPU_OWN_TYPE(p: Problem, t: Target) -> str | None:
    feature = native_dot(t, p.element)
    return f"{p.element.mlir_name}" + (f" with {feature}" if feature else "")


# ---------------------------------------------------------------- CPU: algorithms


def vector_isa(target: Target) -> str:
    """The vector ISA class CPU tile configs are tuned for: ``avx512``, ``avx2`` or ``generic``."""
    if "avx512f" in target.features:
        return "avx512"
    if {"avx2", "fma"} <= target.features:
        return "avx2"
    return "generic"


# Winograd F(4x4, 3x3) from this much arithmetic; below it the im2col path's
# single GEMM wins and small graphs keep few dispatches.
CPU_CONV_WINOGRAD_MIN_FLOPS = 1 << 24
# ... and from this many 4x4 output tiles (N * ceil(Ho/4) * ceil(Wo/4)): the filter-side
# transform costs 36*C*K per call whatever the image size, so small images lose.
# ResNet-50 3x3 shapes, min ms Winograd vs im2col (AVX-512 host, loaded): 1x28x28 (49
# tiles) 0.41 vs 1.35, 8x14x14 (128) 8.6 vs 17.8; 1x14x14 (16) 1.30 vs 0.90, 8x7x7 (32)
# 29.8 vs 19.5, 1x7x7 (4) 9.8 vs 1.6.
CPU_CONV_WINOGRAD_MIN_TILES = 48
# ... or, for forward and data-gradient convs on cores not Intel's, from this many: with the
# filter transform one dispatch reading the filter once (winograd.filter_transform; dgrad's
# flipped filter read in place, conv_layout._flipped_taps) it pays from far fewer tiles.
# AMD Zen 4 VM (znver4), in one process, interleaved, ratio to PyTorch, im2col GEMM ->
# F(4x4) / F(2x2), AVX-512 and x86-64-v3 code (PyTorch held to AVX2): 3x3 1x256x14x14->256
# (16 tiles) 0.64 -> 1.30 / 1.34 and 0.81 -> 1.06 / 1.15; 8x512x7x7->512 (32) 0.70 -> 0.90-1.09 /
# 0.97-1.06 and 0.65 -> 1.18-1.24 / 0.98-1.09; dgrad 1x256x14x14 0.61 -> 0.85 and 0.05 -> 0.59 (before
# its filter was read in place), 8x512x7x7 0.75 -> 1.01 and 0.03 -> 1.00. Fewer lose: 2x512x7x7
# (8 tiles) 0.74 -> 0.46 / 0.63 and 0.81 -> 0.61 / 0.85, 1x512x7x7 (4) 1.02 -> 0.33 / 0.70.
# The weight gradient (no filter transform) keeps 48.
CPU_CONV_WINOGRAD_MIN_TILES_ONE_PASS_FILTER = 16
# Intel's AVX-512 cores take it from this many (fewer take F(2x2) below, where its filter fits):
# Intel Xeon VM (sapphirerapids as named), python benchmarks/table_ab.py (in one process, run
# interleaved with PyTorch), ratio to PyTorch, K-blocked im2col GEMM -> F(4x4): 3x3 8x512x7x7->512 (32
# tiles) 0.75 -> 0.89 (a run of AMD's rules on that host), its dgrad 0.77 -> 1.05, 0.78 -> 1.10;
# 1x256x14x14->256 (16 tiles) lost to F(2x2) there (0.76 -> 0.64). Intel's AVX2 code (haswell as named, PyTorch held to AVX2) takes it
# from 16 as the others do: 8x512x7x7->512 0.66 -> 1.18, its dgrad 0.71 -> 1.39; 1x256x14x14->256 (16
# tiles; data tiling before) 0.53 -> 0.86 (F(2x2) 0.78), its dgrad 0.69 -> 1.03 (python
# benchmarks/conv_lowerings.py with --arch haswell rows, --lowering auto --lowering winograd4).
CPU_CONV_WINOGRAD_MIN_TILES_ONE_PASS_FILTER_BY_TARGET = {("avx512", "intel"): 32}
CPU_CONV_WINOGRAD_ONE_PASS_FILTER_KINDS = ("conv_fprop", "conv_dgrad")
# Those few tiles (fewer than CPU_CONV_WINOGRAD_MIN_TILES) take F(2x2, 3x3) on AMD's AVX2 cores where
# its transformed filter (16*C*K f32) is at most CPU_CONV_WINOGRAD_F2_MAX_FILTER_BYTES: ResNet-50's
# 3x3 1x256x14x14->256 (16 4x4 tiles, 49 2x2 ones, a 4 MiB filter), EPYC Zen 1 VM (znver1), in one
# process, ratio to PyTorch, F(4x4) -> F(2x2), three runs: forward 0.81 -> 0.90, 0.72 -> 0.86,
# 0.71 -> 0.83; data gradient 0.90 -> 1.10, 0.91 -> 1.11, 0.84 -> 1.04 (x86-64-v3 code on the Zen 4
# VM had it even or ahead as well: 1.06 -> 1.15). 8x512x7x7 (a 16 MiB filter) keeps F(4x4).
CPU_CONV_WINOGRAD_F2_FEW_TILES = {("avx2", "amd")}
# A weight gradient's Winograd transforms DY's K channels per tile for a batched GEMM whose
# columns are X's C channels: with C = 3 (a first layer's RGB input) the transforms outweigh
# the GEMM, and one GEMM over the output positions (cpu-conv-wgrad-gemm, DW^T[27, K]) wins.
# Zen 4 VM (znver4), in one process, ratio to PyTorch, Winograd / GEMM (benchmarks/conv_lowerings.py
# --lowering auto --lowering gemm), AVX-512 and x86-64-v3 code (PyTorch held to AVX2):
# 1x3x224x224->64 0.22-0.23 / 0.44-0.45, 0.19 / 0.36 (GEMM in one row workgroup: before its
# two-block rows); 1x3x112x112->64 0.49 / 0.47 and 0.37 / 0.65; from 4 channels Winograd
# wins or is even: 1x4x112x112 0.65 / 0.44 and 0.67 / 0.56, 1x6x112x112 0.49 / 0.48 and
# 0.84 / 0.70, 1x8x112x112 1.39 / 0.68 and 1.28 / 0.98.
CPU_CONV_WINOGRAD_WGRAD_MIN_CHANNELS = 4


def winograd_tiles(p: Problem, m: int = 4) -> int:
    """m x m output tiles of a conv problem (its batch times the tiles per image)."""
    return int(p.fact("batch", 0)) * math.prod(-(-int(d) // m) for d in p.fact("out_spatial", ()))


def winograd_output_tile(p: Problem, t: Target) -> int | None:
    """m of the Winograd F(m x m, 3x3) cpu-conv-winograd computes this conv with, or None.

    F(4x4) from CPU_CONV_WINOGRAD_MIN_TILES 4x4 tiles. On Intel AVX-512 cores a forward
    (or data-gradient: CPU_CONV_WINOGRAD_F2_INTEL_KINDS) conv with fewer 4x4 tiles but that
    many 2x2 ones takes F(2x2, 3x3): its filter
    transform is 16*C*K per call (F(4x4): 36*C*K), which the smaller images repay (f32
    convs: low-precision ones keep their native-dot-product rules).
    ResNet-50 3x3 1x256x14x14->256 (16 4x4 tiles, 49 2x2), Intel Xeon, median ms, data
    tiling -> F(2x2): 3.0-4.2 -> 2.1-2.2 (PyTorch 1.3-1.6), one thread 4.17 -> 2.09 (PyTorch
    2.1-2.2); 8x512x7x7 (32 / 128 tiles) 16.4-17.3 -> 15.4-18.2, even; 1x512x7x7 (16 2x2
    tiles, below the limit) 4.1 -> 7.4 single-threaded. On x86-64-v3 it was even
    (1x256x14x14 3.6-3.9 -> 3.0-3.6), so AVX2 keeps data tiling.
    """
    if p.fact("kernel") != (3, 3) or p.fact("stride") != (1, 1) or p.fact("dilation") != (1, 1):
        return None
    if p.fact("groups") != 1 or not p.fact("channels_last") or p.element not in (DataType.FLOAT, *_LOW_PRECISION):
        return None
    isa = vector_isa(t)
    if isa == "generic" or p.flops < CPU_CONV_WINOGRAD_MIN_FLOPS:
        return None
    if p.kind == "conv_wgrad" and 0 < int(p.fact("channels", 0)) < CPU_CONV_WINOGRAD_WGRAD_MIN_CHANNELS:
        return None
    if winograd_tiles(p) >= CPU_CONV_WINOGRAD_MIN_TILES:
        return 4
    vendor = cpu_vendor(t.cpu)
    one_pass_filter = p.kind in CPU_CONV_WINOGRAD_ONE_PASS_FILTER_KINDS
    if one_pass_filter and winograd_tiles(p) >= winograd_one_pass_min_tiles(t):
        if (isa, vendor) in CPU_CONV_WINOGRAD_F2_FEW_TILES and p.element == DataType.FLOAT and _f2_filter_fits(p):
            return 2
        return 4
    intel_avx512 = isa == "avx512" and vendor == "intel"
    f32 = p.kind in CPU_CONV_WINOGRAD_F2_INTEL_KINDS and p.element == DataType.FLOAT  # as measured
    if f32 and intel_avx512 and winograd_tiles(p, 2) >= CPU_CONV_WINOGRAD_MIN_TILES:
        if _f2_filter_fits(p):
            return 2
    return None


def winograd_one_pass_min_tiles(t: Target) -> int:
    """The fewest 4x4 tiles a forward or data-gradient conv takes Winograd F(4x4) (its filter
    transformed in one pass) from on ``t``, below CPU_CONV_WINOGRAD_MIN_TILES."""
    key = (vector_isa(t), cpu_vendor(t.cpu) or "")
    return CPU_CONV_WINOGRAD_MIN_TILES_ONE_PASS_FILTER_BY_TARGET.get(key, CPU_CONV_WINOGRAD_MIN_TILES_ONE_PASS_FILTER)


# The conv kinds that take F(2x2, 3x3) on Intel's AVX-512 cores (winograd_output_tile): the data gradient
# too, Intel Xeon VM (sapphirerapids as named), python benchmarks/conv_lowerings.py --lowering auto (the
# K-blocked im2col GEMM) --lowering winograd2, ratio to PyTorch in one process: dgrad 3x3 1x256x14x14
# (49 2x2 tiles, a 4 MiB filter) 0.70 -> 1.02, 0.65 -> 0.98; 1x128x14x14 0.65 -> 0.93 (1x512x14x14, a 16
# MiB filter past the limit below, 0.64 -> 1.01: the limit is the forward conv's, kept).
CPU_CONV_WINOGRAD_F2_INTEL_KINDS = ("conv_fprop", "conv_dgrad")


# F(2x2, 3x3) only while its transformed filter (16*C*K f32) fits in the 2 cores' L2 (2 x 2 MiB):
# 8x512x7x7->512 (16 MiB of it) ran at 0.61-0.65 of PyTorch against the K-blocked GEMM's
# 0.72-0.73 (cpu-conv-im2col-gemm); 1x256x14x14->256 (4 MiB) 0.71-0.78 against 0.48-0.49.
CPU_CONV_WINOGRAD_F2_MAX_FILTER_BYTES = 4 << 20


def _f2_filter_fits(p: Problem) -> bool:
    """Whether F(2x2, 3x3)'s transformed filter (16*C*K f32) is at most CPU_CONV_WINOGRAD_F2_MAX_FILTER_BYTES."""
    return 16 * conv_filter_elements(p) * 4 <= CPU_CONV_WINOGRAD_F2_MAX_FILTER_BYTES


def conv_filter_elements(p: Problem) -> int:
    """C*K of a conv problem (its FLOPs over 2 * batch * output positions * R*S)."""
    positions = int(p.fact("batch", 0)) * math.prod(int(d) for d in p.fact("out_spatial", ()))
    taps = math.prod(int(d) for d in p.fact("kernel", ()))
    return p.flops // max(2 * positions * taps, 1)


# A conv with at most this many input channels (the 7x7 stride-2 stem: 3) whose filter is
# spatial is a direct conv with an explicit register tile (gemm_config.DIRECT_CONV_TILES_BY_VENDOR)
# instead of an im2col GEMM, whose patch matrix is R*S times the input, or Winograd, whose GEMM
# would be as deep as the channels: it is registered before cpu-conv-winograd, so it goes first.
CPU_CONV_DIRECT_MAX_CHANNELS = 4


# IREE's im2col conversion of convs (cpu-conv-im2col-data-tiling's flag; see compile_flags).
IM2COL_FLAGS = ("--iree-global-opt-use-im2col-for-convs",)


def _transposed_dgrad(p: Problem) -> bool:
    """Whether a data gradient runs as a transposed conv (fusilli/lowering/conv.py: strided, or
    padded beyond its filter's reach) rather than as the forward conv of DY with the flipped filter."""
    kernel = p.fact("kernel", ())
    return any(st != 1 for st in p.fact("stride", ())) or any(
        pad > d * (k - 1) for pad, d, k in zip(p.fact("padding", ()), p.fact("dilation", ()), kernel)
    )


@rule(
    "cpu-conv-depthwise",
    Backend.CPU,
    ("conv_fprop", "conv_dgrad"),
    "algorithm",
    evidence=(
        "Zen 5 VM (znver5), fusilli-benchmark --compare torch, ratio to PyTorch: torch-mlir's grouped NCHW "
        "conv -> linalg.depthwise_conv_2d_nhwc_hwc over the padded NHWC input with its [R, S, C] filter "
        "materialized: 3x3 1x32x112x112 g32 0.08 -> 1.04, 3x3 8x144x56x56 g144 0.05 -> 0.41-0.45; the "
        "filter folded into the conv (read with a stride of R*S along the vectorized channels) 0.11 / "
        "0.06; explicit ConvTileAndDecomposeExpert tiles (8x16, 4x32, 4x16 output columns x channels) "
        "no faster than IREE's own. Stride-1 data gradients (the forward conv of DY with the flipped filter) "
        "took it before the rule named them: 3x3 dgrad 1x32x112x112 11-14x PyTorch, 8x144x56x56 16-34x, "
        "8x384x14x14 3.2-4.0x; strided ones (a compile failure as torch-mlir's transposed conv) over DY with the "
        "transposed conv's zeros: 3x3 s2 8x144x56x56 6.4-8.7x, s2 8x96x112x112 5.0-5.4x (x86-64-v3 code 5.2x, 4.5x); "
        "3-D ones (a compile failure) as 2-D ones over their depth taps: 3x3x3 1x96x8x28x28 forward 0.45-0.50, dgrad "
        "15-17x"
    ),
)
def CPU_CONV_DEPTHWISE(p: Problem, t: Target) -> str | None:
    if not p.fact("channels_last") or p.element != DataType.FLOAT or len(p.fact("kernel", ())) not in (2, 3):
        return None
    groups = int(p.fact("groups", 1))
    if groups < 2 or int(p.fact("channels", 0)) != 1 or conv_out_channels(p) != groups:
        return None
    text = f"{groups} channels, one filter each: linalg.depthwise_conv_2d_nhwc_hwc, vectors along C"
    if len(p.fact("kernel", ())) == 3:  # fusilli/lowering/conv.py: torch-mlir fails on the 3-D conv
        text += ", 3-D as the sum over its depth taps of 2-D ones"
    if p.kind == "conv_dgrad" and _transposed_dgrad(p):
        # fusilli/lowering/conv.py: DY with the transposed conv's zeros, then a forward conv
        return text + ", over DY with the zeros and padding of the transposed conv"
    return text


# Grouped convs of at most this many filter taps (each tap is two operands of the conv's generic).
CPU_CONV_GROUPED_MAX_TAPS = 25


def _grouped_channels(p: Problem, t: Target) -> tuple[int, int, int] | None:
    """(groups, input channels per group, output channels per group) of a channels-last 2-D conv
    problem that cpu-conv-grouped-direct or cpu-conv-grouped-wgrad may take: f32 or f16/bf16
    (computed in f32), several channels per group (not depthwise, which cpu-conv-depthwise and
    cpu-conv-depthwise-wgrad take), at most CPU_CONV_GROUPED_MAX_TAPS filter taps, a vector ISA
    with a register tile; None otherwise."""
    if not p.fact("channels_last") or p.element not in (DataType.FLOAT, *_LOW_PRECISION):
        return None
    kernel, groups = p.fact("kernel", ()), int(p.fact("groups", 1))
    if len(kernel) != 2 or groups < 2 or math.prod(kernel) > CPU_CONV_GROUPED_MAX_TAPS:
        return None
    if vector_isa(t) == "generic":
        return None
    per_group, out_per_group = int(p.fact("channels", 0)), conv_out_channels(p) // groups
    if per_group == 0 or per_group == out_per_group == 1:
        return None  # not known; depthwise
    return groups, per_group, out_per_group


@rule(
    "cpu-conv-grouped-direct",
    Backend.CPU,
    ("conv_fprop", "conv_dgrad"),
    "algorithm",
    evidence=(
        "Zen 5 VM (znver5), grouped NHWC convs of several channels per group (ResNeXt's 3x3 g32), "
        "torch-mlir's grouped NCHW conv + IREE's im2col -> a direct conv vectorized along each group's "
        "output channels (conv_direct.grouped_conv, gemm_config.grouped_conv_compilation_info), "
        "fusilli-benchmark --compare torch --suite benchmarks/resnext50_conv.txt, old and new code in "
        "alternating processes, ratio to PyTorch: 8x256x28x28 0.05-0.06 -> 0.89-0.93, 8x512x14x14 "
        "0.02-0.03 -> 0.81-0.91, s2 8x1024x14x14 0.03-0.04 -> 0.44-0.65, every row 0.02-0.13 -> 0.44-1.21; "
        "as x86-64-v3 code (PyTorch held to AVX2) 0.05-0.17 -> 0.47-1.43 (BENCHMARKS.md, 'twenty-second "
        "session'); stride-1 data gradients (emitted as the forward conv of DY with the flipped filter) "
        "take it too: 8x256x28x28 dgrad 0.06 -> 1.03"
    ),
)
def CPU_CONV_GROUPED_DIRECT(p: Problem, t: Target) -> str | None:
    if p.kind == "conv_dgrad" and _transposed_dgrad(p):
        return None  # a transposed conv (fusilli/lowering/conv.py), not a forward one of the flipped filter
    channels = _grouped_channels(p, t)
    if channels is None:
        return None
    groups, per_group, out_per_group = channels
    return (
        f"{groups} groups of {per_group} -> {out_per_group} channels: a direct conv over the NHWC input, "
        f"vectors along a group's {out_per_group} output channels"
    )


@rule(
    "cpu-conv-grouped-wgrad",
    Backend.CPU,
    ("conv_wgrad",),
    "algorithm",
    evidence=(
        "Zen 5 VM (znver5), ResNeXt-50's 3x3 g32 weight gradients (benchmarks/resnext50_grad.txt), "
        "torch.aten.convolution_backward -> contractions over chunks of output rows laid out flat, one generic "
        "per phase of X with a result per tap (conv_direct.grouped_wgrad, gemm_config.grouped_wgrad_compilation_info), "
        "old and new code in alternating fusilli-benchmark --compare torch processes, two rounds, ratio to "
        "PyTorch: 8x256x28x28 0.04-0.05 -> 0.55-0.59, 8x128x56x56 0.18-0.19 -> 1.28-1.51, 8x1024x7x7 0.02-0.03 "
        "-> 0.63, every row 0.02-0.25 -> 0.43-1.51; as x86-64-v3 code (PyTorch held to AVX2), one round, "
        "0.04-0.18 -> 0.55-1.77. A generic per tap instead ran 0.29-1.35 (BENCHMARKS.md, 'twenty-third session')"
    ),
)
def CPU_CONV_GROUPED_WGRAD(p: Problem, t: Target) -> str | None:
    channels = _grouped_channels(p, t)
    if channels is None:
        return None
    groups, per_group, out_per_group = channels
    return (
        f"{groups} groups of {per_group} -> {out_per_group} channels: contractions over chunks of output rows, "
        f"a result per filter tap, vectors along a group's {out_per_group} output channels"
    )


@rule(
    "cpu-conv-depthwise-wgrad",
    Backend.CPU,
    ("conv_wgrad",),
    "algorithm",
    evidence=(
        "Zen 5 VM (znver5), benchmarks/depthwise.txt's weight gradients, fusilli-benchmark --compare torch, "
        "old and new code in alternating processes, ratio to PyTorch: convolution_backward -> a depthwise conv "
        "of X with DY as the filter over the images' channels, two rounds: 3x3 1x32x112x112 0.06-0.07 -> "
        "0.28-0.33, 8x144x56x56 0.07-0.08 -> 0.18, s2 8x144x56x56 0.06-0.11 -> 0.14-0.18, 8x384x14x14 "
        "0.08-0.09 -> 0.16-0.19 (x86-64-v3 code 0.08-0.13 -> 0.15-0.29); that -> sums of column pairs per "
        "output row with a result per tap (conv_direct.depthwise_wgrad), two rounds: 1x32x112x112 0.24-0.31 -> "
        "0.45-0.69, 8x144x56x56 0.12 -> 0.53-0.58 (4.7 -> 1.6 ms), s2 8x144x56x56 0.11-0.14 -> 0.19-0.23, "
        "8x384x14x14 0.11-0.16 -> 0.47-0.52; the positions whose taps read inside X reading it in place, small "
        "gathers for the strips around them (where they are 88% of the positions), two rounds, ms: 8x144x56x56 "
        "1.57-2.70 -> 1.03-1.33 (0.78-0.92 of PyTorch), s2 8x144x56x56 0.89-1.11 -> 0.45-0.48, s2 8x96x112x112 "
        "3.2-3.7 -> 1.4-1.7 (0.44-0.49 -> 1.12-1.18); odd widths pairing an even batch's images instead of a DY "
        "gather, three rounds, ms: 8x960x7x7 0.17-0.55 -> 0.12-0.34, s2 8x576x14x14 0.18-0.59 -> 0.13-0.43. One contraction per tap (cpu-conv-grouped-wgrad's form) "
        "ran 0.05-0.11"
    ),
)
def CPU_CONV_DEPTHWISE_WGRAD(p: Problem, t: Target) -> str | None:
    if not p.fact("channels_last") or p.element not in (DataType.FLOAT, *_LOW_PRECISION):
        return None
    groups = int(p.fact("groups", 1))
    if len(p.fact("kernel", ())) != 2 or groups < 2 or vector_isa(t) == "generic":
        return None
    if int(p.fact("channels", 0)) != 1 or conv_out_channels(p) != groups:
        return None
    from fusilli.passes import gemm_config  # the split's share (it imports this module)

    share = round(100 * gemm_config.DEPTHWISE_WGRAD_SPLIT_MIN_INSIDE)
    return (
        f"{groups} channels, one filter each: per output row, sums of column pairs' products with a result "
        "per filter tap, vectorized along the channels (X read in place at the positions whose taps stay inside "
        f"it, where those are {share}% of them or more), then the rows' sum"
    )


@rule(
    "cpu-conv-direct-few-channels",
    Backend.CPU,
    ("conv_fprop",),
    "algorithm",
    evidence=(
        "Intel AVX-512 (sapphirerapids as named), 7x7 s2 stem, im2col GEMM -> direct "
        "linalg.conv_2d_nhwc_hwcf with an 8x32 register tile (gemm_config.DIRECT_CONV_TILES_BY_VENDOR): "
        "one thread (iree-benchmark-module local-sync) 8x3x224x224->64 25.0 -> 12.6-13.6 ms (PyTorch one "
        "thread 12.8); fusilli-benchmark --compare torch, 2 threads, see BENCHMARKS.md; ahead of Winograd: "
        "3x3 s1 1x3x224x224->64 Winograd 0.23 -> direct 0.70 of PyTorch; AMD Zen 5 (znver5), fusilli-benchmark "
        "--compare torch: stem 8x3x224x224 0.31-0.38 -> 1.01-1.04, 1x3x224x224 0.59-0.60 -> 0.87-0.95, first "
        "layer 0.12-0.16 -> 0.58-1.03 (znver3 code, PyTorch held to AVX2: 0.63 -> 0.89, 0.87 -> 0.82, 0.26 -> 0.78)"
    ),
)
def CPU_CONV_DIRECT_FEW_CHANNELS(p: Problem, t: Target) -> str | None:
    if not p.fact("channels_last") or p.fact("groups") != 1 or p.element != DataType.FLOAT:
        return None
    channels, kernel = int(p.fact("channels", 0)), p.fact("kernel")
    if not 0 < channels <= CPU_CONV_DIRECT_MAX_CHANNELS or kernel == (1, 1) or p.fact("dilation") != (1, 1):
        return None
    if p.flops < CPU_CONV_IM2COL_MIN_FLOPS:
        return None
    from fusilli.passes import gemm_config  # the tile table (it imports this module)

    isa, vendor = vector_isa(t), cpu_vendor(t.cpu)
    tile = gemm_config.direct_conv_vector_tile(isa, vendor)
    out_w = int(p.fact("out_spatial", (0, 0))[-1])
    if tile is None or out_w % tile[0] or conv_out_channels(p) % tile[1]:
        return None
    out_h = int(p.fact("out_spatial", (0, 0))[0])
    bands = gemm_config.direct_conv_row_bands(int(p.fact("batch", 0)), out_h)
    return (
        f"{kernel[0]}x{kernel[1]}, {channels} input channels <= {CPU_CONV_DIRECT_MAX_CHANNELS}, "
        f"direct conv with a {tile[0]}x{tile[1]} register tile for {isa}, {vendor or 'any vendor'}"
        + (f", its one image as {bands} bands of rows" if bands > 1 else "")
    )


@rule(
    "cpu-conv-winograd",
    Backend.CPU,
    ("conv_fprop", "conv_dgrad", "conv_wgrad"),
    "algorithm",
    evidence=(
        "3x3 + bias + relu 4x64x56x56->64 f32 (fusilli-benchmark --compare torch, min ms): im2col + data "
        "tiling 9.9 -> Winograd F(4,3) 1.3 (F(6,3) 1.7, F(2,3) 1.8); PyTorch 3.6 (AVX-512 host). "
        "AVX2 prototype (winograd-cpu.md): 1.34-1.69x PyTorch"
    ),
)
def CPU_CONV_WINOGRAD(p: Problem, t: Target) -> str | None:
    m = winograd_output_tile(p, t)
    if m is None:
        return None
    tiles, isa, vendor = winograd_tiles(p, m), vector_isa(t), cpu_vendor(t.cpu)
    head = f"F({m}x{m}, 3x3), 3x3 stride 1, {_mflop(p.flops)} >= {_mflop(CPU_CONV_WINOGRAD_MIN_FLOPS)}"
    limit = CPU_CONV_WINOGRAD_MIN_TILES
    if m == 2 and vendor != "intel":  # CPU_CONV_WINOGRAD_F2_FEW_TILES
        few, mib = winograd_tiles(p, 4), CPU_CONV_WINOGRAD_F2_MAX_FILTER_BYTES >> 20
        return (
            f"{head}, {few} 4x4 tiles in [{CPU_CONV_WINOGRAD_MIN_TILES_ONE_PASS_FILTER}, {limit}), F(2x2)'s "
            f"transformed filter <= {mib} MiB, GEMM tuned for {isa}, AMD"
            + _winograd_panel_text(t, conv_out_channels(p), tiles, int(p.fact("channels", 0)))
        )
    on = f"{isa}, Intel" if m == 2 else isa
    if m == 4 and tiles < limit:
        limit = winograd_one_pass_min_tiles(t)
        on += ", its filter transformed in one pass"
    depth = int(p.fact("channels", 0))
    core_tile = _core_winograd_tile_text(t, tiles, depth) if p.kind == "conv_fprop" else ""
    panels = _winograd_panel_text(t, conv_out_channels(p), tiles, depth)
    return f"{head}, {tiles} {m}x{m} tiles >= {limit}, GEMM tuned for {on}{core_tile}{panels}"


# cpu-conv-winograd-strided: 3x3 stride-2 convs as Winograd over the input's phases
# (winograd.polyphase_matrices, F(2, 2): 6.25 multiplies per output and channel pair instead
# of 9), where measured faster than the K-blocked im2col GEMM (python
# benchmarks/conv_lowerings.py SUITE --lowering gemm --lowering polyphase2, ratio to PyTorch,
# AMD Zen 5): from this many 2x2 output tiles (batch x ceil(Ho/2) x ceil(Wo/2)); fewer leave
# the filter transform (25*C*K values every call) a large share: 2x128x28x28->256 (98 tiles)
# 0.79 -> 0.69 ...
CPU_CONV_POLYPHASE_MIN_TILES = 128
# ... while the transformed activations and GEMM results (25 * tiles * (C + K) f32) stay
# this small. With the input transform in two dispatches the limit was 8 MiB (larger ones
# were bound by its memory traffic: 8x128x28x28->256 (392 tiles, 15 MB) 0.81 -> 0.73,
# 8x128x56x56->128 (1568, 40 MB) 0.65-0.67 -> 0.60-0.63); in one (winograd.one_pass_tile_transform)
# they win up to the largest measured, Zen 4 VM, in one process, ratio to PyTorch, auto (the
# im2col GEMM) -> polyphase on the pool, AVX-512 / x86-64-v3 code (PyTorch held to AVX2):
# 8x128x56x56->128 0.68 -> 0.78 / 0.80 -> 0.85, 4x128x56x56->128 (784, 20 MB) 0.75 -> 0.80 /
# 0.82 -> 0.98, 8x128x28x28->256 1.13 -> 1.21 / 0.78 -> 0.92 ...
CPU_CONV_POLYPHASE_MAX_TRANSFORMED_BYTES = 40 << 20
# ... and the transformed filter at most this large (1x512x14x14->512, 26 MB: 0.72 -> 0.25) ...
CPU_CONV_POLYPHASE_MAX_FILTER_BYTES = 4 << 20
# ... or this large per 2x2 output tile, where many tiles share its transform. Zen 4 VM, python
# benchmarks/conv_lowerings.py --lowering auto (the K-blocked GEMM then) --lowering polyphase2, ms in
# one process, AVX-512 / x86-64-v3 code: 8x256x28x28->256 (6.5 MB, 392 tiles: 17 KB each) 13.3 -> 10.8,
# 11.9 -> 10.4 / 14.2 -> 12.3, 18.1 -> 13.8; 8x256x28x28->512 (13 MB, 33 KB) 25.5 -> 20.7 / 30.4 ->
# 24.7; 1x256x56x56->256 (6.5 MB, 784 tiles) 6.08 -> 5.53 / 8.56 -> 7.38; 4x256x28x28->256 (6.5 MB, 196:
# 33 KB) even, 7.28 -> 7.43 / 7.58 -> 6.71; 8x512x14x14->512 (26 MB, 128: 205 KB) lost or even, 14.3 ->
# 15.7 / 23.7 -> 21.6.
CPU_CONV_POLYPHASE_MAX_FILTER_BYTES_PER_TILE = 40 << 10
# Measured on AMD cores (AVX-512, and AVX2 as x86-64-v3 code, whose Winograd GEMM tiles are the
# vendor-free ones); per conv kind, the vendors a rule leaves out: the forward conv takes it on Intel's
# cores within their own limits only (below), the data and weight gradients as on AMD's. Data
# gradients, Intel Xeon VM (sapphirerapids as named), python benchmarks/conv_lowerings.py --lowering
# auto (the col2im GEMM) --lowering polyphase2 --lowering polyphase4, ratio to PyTorch in one process:
# 3x3 s2 1x128x56x56->128 0.78 -> F(2x2) 0.87 (F(4x4) 0.68); 8x128x56x56 0.80 -> 1.04 / 1.05;
# 8x256x28x28->256 0.80 -> 1.08 / 0.90; a second run, the rule against the col2im GEMM, fusilli's ms:
# 1.20 -> 1.10, 7.83 -> 6.78, 7.67 -> 5.58 (python benchmarks/table_ab.py); Intel's AVX2 code (haswell
# as named, PyTorch held to AVX2) 1.49 / 1.52 (even), 10.04 -> 8.20, 11.27 -> 8.23. Weight gradients: Intel Xeon VM (sapphirerapids as named), python benchmarks/table_ab.py (the
# wgrad GEMM against this rule, in one process, run interleaved with PyTorch), ratio to PyTorch: 3x3
# s2 8x128x56x56->128 (392 4x4 DY tiles: F(4x4)) 0.61 -> 0.96, 1x128x56x56->128 (196 2x2: F(2x2))
# 0.66 -> 0.77 (a run of AMD's rules on that host); a second run, against the GEMM with Intel's own
# tile: 8x128x56x56 0.54 -> 0.82, 8x256x28x28->256 0.76 -> 1.02, 1x128x56x56 even (0.76 / 0.76);
# Intel's AVX2 code (haswell as named, PyTorch held to AVX2): 0.86 -> 1.14, 0.61 -> 1.02, 0.90 -> 0.95.
CPU_CONV_POLYPHASE_EXCLUDED_VENDORS: dict[str, tuple[str, ...]] = {
    "conv_fprop": ("intel",),
    "conv_dgrad": (),
    "conv_wgrad": (),
}


@dataclass(frozen=True)
class PolyphaseCoreLimits:
    """A core's own limits for a polyphase Winograd rule, in place of the shared ones: from
    ``min_tiles`` tiles, with no transformed-filter limit where ``any_filter``, for convs of at
    least ``min_channels`` (the fewest measured; narrower ones keep the shared limits)."""

    min_tiles: int
    min_channels: int
    any_filter: bool


# Zen 1 (znver1: its 256-bit FMAs issued as two 128-bit halves, the GEMM's share of the time
# larger than on the cores above) repays the filter transform from fewer tiles, and of any filter
# measured. EPYC Zen 1 VM, python benchmarks/conv_lowerings.py SUITE --lowering auto (the
# K-blocked im2col GEMM) --lowering polyphase2, ratio to PyTorch in one process: 3x3 s2
# 1x256x28x28->256 (49 tiles, 6.5 MB transformed filter) 0.57, 0.59, 0.71 -> 0.75, 0.77, 0.99;
# 1x256x28x28->512 (49, 13 MB) 0.54 -> 0.72; 1x128x28x28->256 (49) 0.75, 0.77 -> 0.80, 0.85;
# 2x128x28x28->256 (98) 0.79, 0.65 -> 1.00, 0.81; 2x256x28x28->256 (98) 0.79, 0.83 -> 1.21, 1.08;
# 1x64x28x28->128 (49) even, 0.94, 0.70 -> 0.96, 0.71; 4x512x14x14->512 (64, 26 MB) 0.53, 0.68,
# 0.52 -> 0.60, 0.70, 0.58; 8x512x14x14->512 (128, 26 MB) 0.58, 0.60, 0.53 -> 0.59, 0.63, 0.58.
# With this rule (auto) against the GEMM forced (--lowering gemm), three more runs: 1x256x28x28->256
# 0.88, 0.64, 0.56 -> 0.79, 0.80, 0.70; 8x512x14x14->512 0.66, 0.56, 0.58 -> 0.71, 0.61, 0.56.
# Where it lost, hence the limit: 16 tiles (1x256x14x14->256 0.91 -> 0.55, 1x128x14x14->256
# 0.84 -> 0.50; 1x512x14x14->512 1.41, 1.20 with the few-positions GEMM -> 0.55, 0.49).
# Measured from 64 input channels (1x64x28x28->128 ran even), hence the core's limits only from there.
# Intel's cores (an entry for the vendor: excluded above, it takes the forward rule within its entry)
# repay it only from many tiles. Intel Xeon VM (sapphirerapids as named), python
# benchmarks/conv_lowerings.py --lowering auto (the im2col GEMM) --lowering polyphase2, ratio to PyTorch
# in one process: 3x3 s2 8x128x56x56->128 (1568 tiles) 0.74 -> 0.85 (0.73 -> 0.93 in a run of AMD's
# rules there); 8x256x28x28->256 (392) 0.71 -> 0.90 (0.68 -> 0.90); 8x128x28x28->256 (392) even,
# 0.82 / 0.82. Fewer tiles lost or ran even: 1x128x56x56->128 (196) 0.64 -> 0.65, 4x128x28x28->256
# (196, + bias + relu) 0.83 -> 0.79, 2x128x28x28->256 (98) 0.79 -> 0.69, 1x256x28x28->256 (49) 0.56
# -> 0.59, 8x512x14x14->512 (128) 0.68 -> 0.45; so did 64 channels (2x64x56x56->128, 392 tiles: 0.75
# -> 0.73). Intel's AVX2 code (haswell as named, PyTorch held to AVX2): 8x128x56x56->128 0.87 -> 1.14,
# 8x256x28x28->256 0.75 -> 0.90.
CPU_CONV_POLYPHASE_CORE_LIMITS = {
    "znver1": PolyphaseCoreLimits(min_tiles=49, min_channels=64, any_filter=True),
    "intel": PolyphaseCoreLimits(min_tiles=392, min_channels=128, any_filter=False),
}


def _core_polyphase_limits(
    table: dict[str, PolyphaseCoreLimits], t: Target, channels: int
) -> PolyphaseCoreLimits | None:
    """``t``'s core's entry of a polyphase rule's ``table`` (else its vendor's) where it covers
    ``channels``, else None."""
    limits = table.get(cpu_core(t.cpu) or "") or table.get(cpu_vendor(t.cpu) or "")
    return limits if limits is not None and channels >= limits.min_channels else None


def _polyphase_applies(p: Problem, t: Target, limits_table: dict[str, PolyphaseCoreLimits] | None = None) -> bool:
    """What the three polyphase rules (forward, dgrad, wgrad) share: an ungrouped channels-last f32
    3x3 stride-2 conv of dilation 1, on a tuned vector ISA of a vendor they were measured on (an
    excluded vendor where the rule's ``limits_table`` has an entry of its own covering the channels)."""
    if p.fact("kernel") != (3, 3) or p.fact("stride") != (2, 2) or p.fact("dilation") != (1, 1):
        return False
    if p.fact("groups") != 1 or not p.fact("channels_last") or p.element != DataType.FLOAT:
        return False
    if vector_isa(t) == "generic":
        return False
    vendor = cpu_vendor(t.cpu)
    if vendor not in CPU_CONV_POLYPHASE_EXCLUDED_VENDORS[p.kind]:
        return True
    return limits_table is not None and _core_polyphase_limits(limits_table, t, int(p.fact("channels", 0))) is not None


def polyphase_min_tiles(t: Target, channels: int) -> int:
    """The fewest 2x2 output tiles cpu-conv-winograd-strided takes a conv of ``channels`` with on ``t``."""
    limits = _core_polyphase_limits(CPU_CONV_POLYPHASE_CORE_LIMITS, t, channels)
    return CPU_CONV_POLYPHASE_MIN_TILES if limits is None else limits.min_tiles


def polyphase_output_tile(p: Problem, t: Target) -> int | None:
    """m of the polyphase Winograd F(m, 2) cpu-conv-winograd-strided computes this conv with, or None."""
    if not _polyphase_applies(p, t, CPU_CONV_POLYPHASE_CORE_LIMITS):
        return None
    tiles, channels = winograd_tiles(p, 2), int(p.fact("channels", 0))
    if channels <= 0:
        return None  # (not known: the transformed sizes cannot be checked)
    filter_bytes = 25 * conv_filter_elements(p) * 4
    if tiles < polyphase_min_tiles(t, channels):
        return None
    limits = _core_polyphase_limits(CPU_CONV_POLYPHASE_CORE_LIMITS, t, channels)
    any_filter = limits is not None and limits.any_filter
    if not any_filter and filter_bytes > max(
        CPU_CONV_POLYPHASE_MAX_FILTER_BYTES, tiles * CPU_CONV_POLYPHASE_MAX_FILTER_BYTES_PER_TILE
    ):
        return None
    if 25 * tiles * (channels + conv_out_channels(p)) * 4 > CPU_CONV_POLYPHASE_MAX_TRANSFORMED_BYTES:
        return None
    return 2


@rule(
    "cpu-conv-winograd-strided",
    Backend.CPU,
    ("conv_fprop",),
    "algorithm",
    evidence=(
        "3x3 stride 2, Winograd F(2x2, 2x2) over the input's four phases against the K-blocked im2col GEMM, "
        "ratio to PyTorch, python benchmarks/conv_lowerings.py (in one process, interleaved), AMD Zen 5 "
        "(znver5): 3x3 s2 + bias + relu 4x128x28x28->256 0.82-0.91 -> 0.95-1.04 (later, under other load, even: "
        "0.78-0.94 -> 0.74-0.93), 1x128x56x56->128 0.59-0.71 -> 0.74-0.87, 1x128x56x56->256 0.78-0.86 -> 0.91-0.99, "
        "1x64x56x56->128 0.64-0.73 -> 0.71-0.86, "
        "4x96x28x28->192 0.69-0.73 -> 0.77-0.94, 2x64x56x56->128 0.77 -> 0.86; one thread (iree-benchmark-module "
        "local-sync, dispatches summed) 2.25 -> 1.80 ms; x86-64-v3 code, PyTorch held to AVX2 (6x16 GEMM tile): "
        "0.82-0.89 -> 0.93-0.97, 1x128x56x56->256 0.87 -> 0.97, 1x128x56x56->128 0.83-0.88 -> 0.85-1.00, "
        "1x64x56x56->128 0.83-0.89 -> 0.84-0.88; EPYC Zen 1 (znver1), from 49 tiles and of any filter, ahead in 5 "
        "of 6 runs: 1x256x28x28->256 0.56-0.88 -> 0.70-0.99, 8x512x14x14->512 0.53-0.66 -> 0.56-0.71; "
        "2x256x28x28->256 0.79-0.83 -> 1.08-1.21, 1x256x28x28->512 0.54 -> 0.72; Intel Xeon (sapphirerapids), from 392 "
        "tiles of >= 128 channels: 8x128x56x56->128 0.74-0.77 -> 0.85-0.95, 8x256x28x28->256 0.66-0.71 -> 0.88-0.90"
    ),
)
def CPU_CONV_WINOGRAD_STRIDED(p: Problem, t: Target) -> str | None:
    m = polyphase_output_tile(p, t)
    if m is None:
        return None
    tiles, isa, vendor = winograd_tiles(p, m), vector_isa(t), cpu_vendor(t.cpu)
    on = _isa_of(isa, vendor)
    channels = int(p.fact("channels", 0))
    return (
        f"F({m}x{m}, 2x2) over the input's 4 phases, 3x3 stride 2, {tiles} {m}x{m} tiles >= "
        f"{polyphase_min_tiles(t, channels)}, transformed data <= {CPU_CONV_POLYPHASE_MAX_TRANSFORMED_BYTES >> 20} "
        f"MiB, GEMM tuned for {on}"
        + _core_winograd_tile_text(t, tiles, channels)
        + _winograd_panel_text(t, conv_out_channels(p), tiles, channels)
    )


def _core_conv_gemm_tile_text(
    t: Target, columns: int, rows: int, depth: int, strided_patches: bool = False, copied: bool = False
) -> str:
    """As ``_core_winograd_tile_text``, for a conv GEMM (gemm_config.CONV_GEMM_TILES_BY_CORE and
    DEEP_VECTOR_BY_CORE); where the core blocks this GEMM's K otherwise than its vendor
    (gemm_config.CONV_WHOLE_K_BELOW_BY_CORE, STRIDED_PATCH_TABLE_K_BLOCK_CORES), ``" (znver3: K whole
    below 1024 deep)"`` or ``" (znver3: K in blocks of 256)"`` (``copied`` as in ``_padded_filter_columns``:
    whether the filter's rows are written padded)."""
    from fusilli.passes import gemm_config  # the tile tables (they import this module)

    isa, vendor, core = vector_isa(t), cpu_vendor(t.cpu), cpu_core(t.cpu)
    own, vendors = (
        gemm_config.conv_gemm_tile(isa, columns, vendor, strided_patches, rows, depth, c) for c in (core, None)
    )

    def shape_of(tile: Any) -> Any:  # the register tile and workgroups; K below
        return tile if tile is None else replace(tile, conv_whole_k_below=0, narrow_k_block=None)

    text = _core_tile_text(t, lambda c: shape_of(own if c is not None else vendors))
    if core is None or own is None or vendors is None:
        return text
    padded = _padded_filter_columns(t, columns, rows, copied) is not None
    own_block, vendors_block = (
        gemm_config.k_block(gemm_config.conv_gemm_k_tile(tile, depth, padded), rows, depth, columns)
        for tile in (own, vendors)
    )
    if own_block == vendors_block:
        return text
    if own_block is None:
        return text + f" ({core}: K whole below {own.conv_whole_k_below} deep)"
    return text + f" ({core}: K in blocks of {own_block})"


def _gemm_rows_text(
    t: Target, columns: int, rows: int, depth: int, strided_patches: bool = False, materialized: bool = False
) -> str:
    """``", its 196 rows in workgroups of 49 (...)"`` where a conv GEMM takes workgroup rows other than
    its table's (gemm_config.gemm_rows_tile: a ``materialized`` patch matrix's that leave no masked
    last register tile, an A the graph reads as it is a divisor of its rows), else ``""``."""
    from fusilli.passes import gemm_config  # the tile tables (they import this module)

    isa, vendor = vector_isa(t), cpu_vendor(t.cpu)
    tile = gemm_config.conv_gemm_tile(isa, columns, vendor, strided_patches, rows, depth, cpu_core(t.cpu))
    if tile is None:
        return ""
    block = gemm_config.gemm_rows_tile(tile, isa, vendor, rows, materialized).distribution[0]
    if block == tile.distribution[0]:
        return ""
    why = (
        "no masked register tile past the patch matrix"
        if materialized
        else "a divisor: no partial register tile in a last workgroup"
    )
    return f", its {rows} rows in workgroups of {block} ({why})"


def _core_winograd_tile_text(t: Target, rows: int, depth: int) -> str:
    """``" (znver5: 6x64 register tile in 60x64 workgroups)"`` where the CPU core's own Winograd GEMM
    tile (gemm_config.WINOGRAD_GEMM_TILES_BY_CORE) replaces its vendor's, else ``""``."""
    from fusilli.passes import gemm_config  # the tile tables (they import this module)

    isa, vendor = vector_isa(t), cpu_vendor(t.cpu)
    return _core_tile_text(t, lambda core: gemm_config.winograd_gemm_tile(isa, rows, depth, vendor, core))


def _winograd_panel_text(t: Target, columns: int, rows: int, depth: int) -> str:
    """``", the transformed filter in 64-column panels (rows of 512 would alias in L1)"`` where
    gemm_config.winograd_b_panel writes a Winograd GEMM's B (``columns`` wide, ``rows`` x
    ``depth``) in panels, else ``""``."""
    from fusilli.passes import gemm_config  # the tile tables (they import this module)

    panel = gemm_config.winograd_b_panel(vector_isa(t), columns, rows, depth, cpu_vendor(t.cpu), cpu_core(t.cpu))
    if panel is None:
        return ""
    return f", the transformed filter in {panel}-column panels (rows of {columns} would alias in L1)"


def _core_tile_text(t: Target, tile_of: Callable[[str | None], Any]) -> str:
    """``" (core: tile)"`` where ``tile_of(core)``, the tile for the target's CPU core, differs from
    ``tile_of(None)``, its vendor's or ISA's; else ``""``."""
    core = cpu_core(t.cpu)
    tile = tile_of(core) if core is not None else None
    if tile is None or tile == tile_of(None):
        return ""
    return f" ({core}: {_tile_text(tile)})"


def _padded_filter_columns(t: Target, columns: int, rows: int, copied: bool) -> int | None:
    """The row length a conv GEMM's f32 B of ``columns`` (its filter, for ``rows`` GEMM rows;
    ``copied``: B is in its layout already) is materialized with (gemm_config.padded_b_columns),
    or None where its rows stay as they are."""
    from fusilli.passes import gemm_config  # the tables (they import this module)

    return gemm_config.padded_b_columns(vector_isa(t), columns, 4, rows, copied)


def _padded_filter_text(t: Target, columns: int, rows: int, copied: bool) -> str:
    """``", the filter written in rows of 528 (512 would alias in L1)"`` where
    ``_padded_filter_columns`` pads the filter's rows, else ``""``."""
    return _filter_rows_text(columns, _padded_filter_columns(t, columns, rows, copied))


def _filter_layout_text(
    t: Target, columns: int, rows: int, depth: int, copied: bool, strided_patches: bool = False
) -> str:
    """``", the filter written in 64-column panels"`` where gemm_config.conv_b_panel writes a conv
    GEMM's B (``rows`` x ``columns`` x ``depth``) in panels, else ``_padded_filter_text``'s."""
    from fusilli.passes import gemm_config  # the tables (they import this module)

    isa, vendor, core = vector_isa(t), cpu_vendor(t.cpu), cpu_core(t.cpu)
    panel = gemm_config.conv_b_panel(isa, columns, rows, depth, vendor, core, strided_patches, copied)
    if panel is None:
        return _padded_filter_text(t, columns, rows, copied)
    text = f", the filter written in {panel}-column panels (each panel's rows contiguous)"
    own = gemm_config.panel_core_tile(isa, core, rows, depth)
    if own is not None:
        tile_rows, (vm, vn) = own
        text += f" under a {vm}x{vn} tile in {tile_rows}-row workgroups"
    return text


def _filter_rows_text(columns: int, padded: int | None) -> str:
    """The explain text of a filter of ``columns`` written in rows of ``padded`` (None: as it is)."""
    return "" if padded is None else f", the filter written in rows of {padded} ({columns} would alias in L1)"


def _tile_text(tile: Any) -> str:
    """A GEMM tile as explain names it."""
    (vm, vn), (dm, dn) = tile.vector, tile.distribution
    return f"{vm}x{vn} register tile in {dm}x{dn} workgroups"


# Convs (not Winograd's) as an im2col GEMM with an explicit lowering config
# (fusilli/passes/gemm_config.py) instead of IREE's im2col + data tiling, where
# measured faster: 1x1 convs with at least this many GEMM rows (N*Ho*Wo) and at
# most this many input channels (the GEMM's depth; an unpacked B panel of 1024
# rows loses to data tiling on AMD Zen 4/5 without K blocks) ...
CPU_CONV_GEMM_MIN_ROWS_1X1 = 512
CPU_CONV_GEMM_MAX_CHANNELS_1X1 = 512
# ... which AVX2 tiles have (gemm_config.CONV_GEMM_TILES): there, as on Intel and AMD AVX-512, 1x1
# convs up to CPU_CONV_GEMM_MAX_CHANNELS_1X1_INTEL channels and of either stride take the GEMM.
# x86-64-v3 code (PyTorch held to AVX2) on a Zen 4 VM, python benchmarks/conv_lowerings.py
# --lowering auto --lowering gemm, ratio to PyTorch, three runs: 1x1 s2 1x256x56x56->512 (784
# rows) 0.63-0.64 -> 0.81-0.88, 1x1 8x1024x14x14->256 (1568) 0.67-0.74 -> 0.87-0.96, one run: 1x1
# s2 8x256x56x56->512 0.70 -> 0.88. Below CPU_CONV_GEMM_MIN_ROWS_1X1 the GEMM lost and is not
# taken: 1x1 1x1024x14x14->256 (196 rows) 0.79 -> 0.73, 1x1 s2 1x512x28x28->1024 (196) 0.73 ->
# 0.59. (The first sessions' stride-2 loss, 1.16-1.18 -> 1.22-1.26 ms, was before AVX2's K blocks.)
# 1x1 stride-1 dgrads take the GEMM from any rows and depth (on Intel AVX-512 with the limit
# below): as IREE's GEMM (fusilli-conv-layout's plain matmul) they ran at half the explicit
# config's rate where rows are few. Zen 4 VM, python benchmarks/conv_lowerings.py --lowering auto
# --lowering gemm, ms in one process, AVX-512 / x86-64-v3 code: 1x1 dgrad 1x512x7x7->2048 (49 rows,
# 2048 deep) 1.85-2.21 -> 0.73-0.91 / 1.55-1.88 -> 1.27-1.44 (one thread: 2.11 -> 0.97 ms),
# 1x2048x7x7->512 (49, 512) 0.91-0.96 -> 0.69-0.70 / 1.62-1.96 -> 1.28-1.63, 1x1024x14x14->256 (196,
# 256) 0.84-0.93 -> 0.65-0.69 / 1.39-1.61 -> 0.91-0.99, 1x512x28x28->128 (784: the GEMM before)
# 0.58-0.60 -> 0.57-0.58 / 0.71-0.72 -> 0.68-0.74. The forward convs of these GEMM shapes stay
# data-tiled below 512 rows: 1x1 1x256x14x14->1024 0.66 -> 0.77 / 1.08 -> 1.25, 1x2048x7x7->512
# 0.97 -> 0.88 / 1.23 -> 2.12.
# Intel's AVX-512 cores take 1x1 dgrads so too, but for GEMMs at most this deep and at least this
# wide, which keep the forward conv's limits (IREE's own GEMM below them). Intel Xeon VM (sapphirerapids as named),
# python benchmarks/table_ab.py (in one process, run interleaved with PyTorch), ratio to PyTorch,
# IREE's GEMM -> this one (dgrad 1x1 NxCxHxW->K: a GEMM K deep, C wide): 1x512x7x7->2048 (49 rows,
# 2048 deep) 0.36 -> 1.37, 0.38 -> 1.41, 0.36 -> 1.41; 1x2048x7x7->512 0.62 -> 1.12, 0.61 -> 1.29;
# 4x512x7x7->2048 0.33 -> 0.82; 1x256x14x14->1024 1.34 -> 3.30; 1x512x14x14->512 1.24 -> 1.51;
# 1x256x7x7->256 0.58 -> 1.81; 1x1024x7x7->256 1.03 -> 1.14. Lost, hence the limit: 1x1024x14x14->256
# (196 rows, 256 deep, 1024 wide) 1.14 -> 0.83, 1.17 -> 0.92, 1.17 -> 0.85; 2x1024x14x14->256 even
# (2.36 / 2.27).
CPU_CONV_GEMM_1X1_DGRAD_SHALLOW_WIDE_KEPT = {("avx512", "intel"): (256, 1024)}
# ... or, where the filter's rows are written apart (gemm_config.padded_b_columns: 512, 1024, 2048
# output channels) and the GEMM has K blocks, from this many rows and up to this many channels (the
# fewest and most measured; not on Intel, not measured there). Zen 5 VM, python
# benchmarks/conv_lowerings.py --lowering auto (data tiling) --lowering gemm, ratio to PyTorch in one
# process, AVX-512 two runs / x86-64-v3 / znver3 code (PyTorch held to AVX2): 1x1 1x256x14x14->1024
# (196 rows) 0.93, 1.46 -> 0.96, 1.49 / 0.78 -> 0.93 / 0.81 -> 0.82; 1x1024x14x14->512 (196)
# 0.94, 0.89 -> 1.01, 1.04 / 0.68 -> 0.84 / 0.77 -> 0.84; 1x512x7x7->2048 (49) 1.08, 0.99 -> 1.27,
# 1.23 / 0.74 -> 0.92 / 0.55 -> 1.02; 1x2048x7x7->512 (49, 2048 deep) 2.03, 2.63 -> 2.66, 3.05 /
# 0.97 -> 1.15 / 1.02 -> 1.16; s2 1x1024x14x14->2048 (49) 1.52, 1.77 -> 2.47, 2.35 / 0.89 -> 1.18 /
# 1.08 -> 1.27; 8x512x7x7->2048 (392) 0.95, 0.90 -> 1.12, 1.04 / 0.87 -> 0.98 / 0.85 -> 0.98;
# 8x2048x7x7->512 0.98, 1.17 -> 1.23, 1.41 / 0.89 -> 1.01 / 0.90 -> 1.01; s2 8x1024x14x14->2048 1.15,
# 1.16 -> 1.38, 1.35 / 0.88 -> 1.04 / 0.87 -> 1.00.
CPU_CONV_GEMM_MIN_ROWS_1X1_PADDED = 49
CPU_CONV_GEMM_MAX_CHANNELS_1X1_PADDED = 2048
# ... and on AMD's AVX-512 cores a stride-1 1x1 conv (A is X itself) of any output channels from
# CPU_CONV_GEMM_MIN_ROWS_1X1_PADDED rows, up to the K-blocked tiles' channels. Zen 5 VM (znver5),
# python benchmarks/conv_lowerings.py --lowering auto (data tiling) --lowering gemm, ratio to
# PyTorch in one process, two runs: 1x1 1x1024x14x14->256 (196 rows) 0.88, 0.89 -> 1.00, 1.01;
# 1x256x14x14->256 (196) 0.99, 1.05 -> 1.06, 1.13; 1x1024x7x7->256 (49) 0.74, 0.98 -> 0.89, 1.08;
# the split executor's 392-row halves of 1x512x28x28->128 and ->256 even (1.07 / 1.03 either way).
# AVX2 code did not gain (x86-64-v3 and znver3 code, PyTorch held to AVX2: 0.80 -> 0.82, 0.86 ->
# 0.86-0.87, 0.59-0.88 -> 0.57-0.93) and keeps CPU_CONV_GEMM_MIN_ROWS_1X1, but on a Zen 3 host Zen 3's
# own code did (CPU_CONV_GEMM_1X1_FEW_ROWS_CORES): EPYC Zen 3 VM (znver3), python
# benchmarks/table_ab.py (this table with and without the AMD AVX2 entry, in one process, run
# interleaved with PyTorch), ratio to PyTorch, two runs on two threads and one on one
# (FUSILLI_CPU_EXECUTOR=local-sync OMP_NUM_THREADS=1): 1x1 1x512x14x14->256 (196 rows) 0.59, 0.58 ->
# 0.76, 0.80 (one thread 0.63 -> 0.89); 1x256x14x14->256 0.81, 0.84 -> 1.01, 1.07 (0.88 -> 0.95);
# 1x512x14x14->128 0.76, 0.87 -> 0.96, 1.15 (0.78 -> 0.93); 1x1024x14x14->256 0.69, 0.72 -> 0.77, 0.77
# (0.90 -> 0.85); 1x1024x7x7->256 (49) 0.89, 0.89 -> 1.07, 0.89 (0.86 -> 0.90); 2x1024x14x14->256
# (392) 1.26, 1.01 -> 1.39, 1.00 (0.77 -> 0.84).
CPU_CONV_GEMM_1X1_FEW_ROWS_TARGETS = {("avx512", "amd")}
# ... and on Intel's AVX-512 cores a stride-1 1x1 forward conv of at most this many output channels
# (with Intel's own tile: gemm_config.CONV_GEMM_TILES_BY_VENDOR). Intel Xeon VM (sapphirerapids as
# named), python benchmarks/table_ab.py (this table with and without its entry, in one process, run
# interleaved with PyTorch), ratio to PyTorch, two runs: 1x1 1x512x28x28->128 (784 rows, halves of 392
# on the split executor, which data tiling had kept whole) 0.70 -> 1.06, 0.92 -> 1.03 (the second a
# run of AMD's rules there); 1x512x28x28->256 0.79 -> 0.97, 0.73 -> 0.99; 1x1024x14x14->256 (196 rows)
# 0.65 -> 0.87, 0.70 -> 0.90; 1x1024x14x14->512 0.64 -> 0.73, 0.64 -> 0.70. Wider ones lost:
# 1x256x14x14->1024 0.74 -> 0.64 (0.54 split in rows), hence the limit.
CPU_CONV_GEMM_1X1_FEW_ROWS_MAX_OUT_CHANNELS = {("avx512", "intel"): 512}
CPU_CONV_GEMM_1X1_FEW_ROWS_CORES = {("avx2", "znver3")}
# ... and on cores whose deep conv GEMMs take a register tile of their own (gemm_config.DEEP_VECTOR_BY_CORE:
# Zen 1's 2x32 from 1024 deep) a stride-1 1x1 conv that deep from CPU_CONV_GEMM_MIN_ROWS_1X1_PADDED
# rows. EPYC Zen 1 VM (znver1), python benchmarks/conv_lowerings.py --lowering auto (IREE's data
# tiling) --lowering gemm (with 2x32), ratio to PyTorch in one process, two runs: 1x1
# 1x1024x14x14->256 (196 rows) 0.70, 0.82 -> 0.86, 0.90; 1x1024x14x14->128 0.71, 0.99 -> 0.93, 1.36;
# 1x1024x7x7->256 (49) 0.96, 0.99 -> 1.01, 0.94 (even). With 6x16 the GEMM had run even there
# (twenty-sixth session: 1x1024x14x14->256 0.73, 1.06 -> 0.72, 0.92).
# ... and stride-2 convs with larger kernels from this many rows ...
CPU_CONV_GEMM_MIN_ROWS_STRIDED = 4096
# ... or, where the GEMM tile has K blocks of 256 (gemm_config: AVX2, and AMD AVX-512 cores;
# Intel's: below), from this many rows where the GEMM is this deep (R*S*C), which the blocks
# keep in cache. Zen 5 VM (znver5), fusilli-benchmark --compare torch, two runs each, data
# tiling -> K-blocked explicit GEMM: 3x3 s2 + bias + relu 4x128x28x28->256 (784 rows, depth
# 1152) 0.65-0.71 -> 0.85-0.87 of PyTorch, 5 -> 3 dispatches; 3x3 s2 1x128x56x56->128 (784
# rows) 0.46-0.56 -> 0.66; as x86-64-v3 code (PyTorch held to AVX2): 0.58-0.74 -> 0.84-0.88,
# 0.63-0.66 -> 0.86-0.89 (the first sessions' loss here was AVX2's 4x16 tile without K blocks).
CPU_CONV_GEMM_MIN_ROWS_DEEP_STRIDED = 512
CPU_CONV_GEMM_DEEP_STRIDED_MIN_DEPTH = 512
# ... and on AMD AVX-512 cores from this many (the fewest measured): data tiling -> K-blocked
# GEMM, Zen 5 VM (znver5), python benchmarks/conv_lowerings.py --lowering auto --lowering gemm,
# ratio to PyTorch, one run: 3x3 s2 1x512x14x14->512 (49 rows, 4608 deep) 0.72 -> 0.93,
# 1x256x28x28->256 (196) 0.53 -> 0.71, 2x256x28x28->256 (392) 0.54 -> 0.67, 2x128x28x28->256
# (392) 0.61 -> 0.69, 8x512x14x14->512 (392) 0.85 -> 0.91, 1x64x28x28->128 (196, 576 deep) 0.62 ->
# 0.82, 1x512x7x7->512 (16) 1.56 -> 1.71. AVX2 (not Intel's, not measured there) takes them from
# as few rows only up to this depth: as x86-64-v3 code (PyTorch held to AVX2) GEMMs <= 1152 deep
# went 1x128x28x28->128 (49 rows) 0.46 -> 0.70, 1x64x28x28->128 (196) 0.39-0.48 -> 0.61-0.69,
# 2x64x28x28->128 (392) 0.62 -> 0.82, 1x96x28x28->96 (196) 0.58 -> 0.72, 4x64x14x14->128 (196)
# 0.63 -> 0.83, 2x128x28x28->256 (392) 0.60-0.63 -> 0.73-0.78; deeper ones split or lost:
# 1x256x28x28->256 (2304 deep) 0.64 -> 0.75, 2x256x28x28 0.66 -> 0.50, 1x512x14x14 (4608) 0.83 ->
# 0.15, 1x512x7x7 1.07 -> 0.82.
CPU_CONV_GEMM_MIN_ROWS_DEEP_STRIDED_FEW = 16
# ... on these targets (ISA, CPU vendor; "" for code for no named CPU), Intel's AVX2 code among them:
# Intel Xeon VM, haswell code (PyTorch held to AVX2), python benchmarks/conv_lowerings.py --lowering
# auto (data tiling) --lowering gemm, ratio to PyTorch in one process, two runs: 3x3 s2
# 1x256x28x28->256 (196 rows) 0.53 -> 0.59, 0.52 -> 0.58; s2 1x512x14x14->512 (49) 0.77 -> 0.86,
# 0.77 -> 0.87; s2 8x512x14x14->512 0.70 -> 0.76, 0.70 -> 0.76; s2 2x128x28x28->256 0.61 -> 0.73.
# (Its deep stride-1 ones did not gain: 3x3 2x512x7x7 0.77 -> 0.59; 1x512x7x7 0.73 -> 0.79, 0.75 -> 0.80.)
CPU_CONV_GEMM_MIN_ROWS_DEEP_STRIDED_FEW_TARGETS = {("avx512", "amd"), ("avx2", "amd"), ("avx2", ""), ("avx2", "intel")}
# That depth limit (1152) is gone: those losses were measured while the GEMM's filter had a strided
# copy besides its transposition (the pad of its rows for 512 output channels, conv_layout._im2col_gemm)
# and before 49-row GEMMs took one row block (gemm_config.ONE_BLOCK_SHORT_REMAINDER_ISAS). AVX2 code
# (not Intel's) takes deeper strided convs from as few rows, and forward stride-1 ones from
# CPU_CONV_GEMM_MIN_DEPTH_AVX512 (below) as AVX-512 does.
# Zen 5 VM, python benchmarks/conv_lowerings.py --lowering auto (IREE's data tiling) --lowering gemm,
# PyTorch held to AVX2, ratio to PyTorch in one process; x86-64-v3 code, two runs: 3x3 s2
# 1x256x28x28->256 (2304 deep) 0.69, 0.72 -> 0.83, 0.78; s2 1x512x14x14->512 (4608) 0.80, 0.75 ->
# 1.05, 1.00; s2 8x512x14x14->512 0.75, 0.84 -> 0.86, 0.99; 3x3 1x512x7x7->512 0.84, 0.78 -> 1.09,
# 1.02; one run: s2 2x256x28x28->256 0.73 -> 0.87, s2 4x256x14x14->256 0.79 -> 0.84, 3x3
# 2x512x7x7->512 0.76 -> 0.92, 1x256x7x7->256 0.77 -> 0.80; znver3 code, one run: s2 1x256x28x28
# 0.73 -> 0.81, s2 8x512x14x14 0.75 -> 0.82 (and against cpu-conv-gemm-few-positions: 3x3 1x512x7x7
# 0.61 -> 1.06, s2 1x512x14x14 0.89 -> 1.09). Stride-1 data gradients keep cpu-conv-dgrad-flipped-gemm.
# On Intel cores IREE's data-tiled GEMM is the slower one at these shapes too: the
# explicit GEMM takes 1x1 convs up to this many channels (any stride, either ISA) and
# stride-2 convs from this many rows (cpu-conv-im2col-gemm's evidence).
CPU_CONV_GEMM_MAX_CHANNELS_1X1_INTEL = 1024
CPU_CONV_GEMM_MIN_ROWS_STRIDED_INTEL = 512
# ... and on Intel AVX-512, where stride-2 convs with a spatial filter and at least 128 output
# channels get wide GEMM workgroups (gemm_config.STRIDED_PATCH_GEMM_TILES_BY_VENDOR), from this
# many rows: data tiling -> explicit GEMM, ratio to PyTorch, in one process (FUSILLI_CONV_LOWERING
# auto against gemm, interleaved): 3x3 s2 1x256x28x28->256 (196 rows) 0.44 -> 0.57, 1x64x32x32->128
# (256 rows) 0.42 -> 0.50; 1x512x14x14->512 (49 rows) 0.54 -> 0.49 stays data-tiled.
CPU_CONV_GEMM_MIN_ROWS_STRIDED_INTEL_AVX512_WIDE = 192
CPU_CONV_GEMM_WIDE_MIN_OUT_CHANNELS = 128
# ... and on Intel and AMD AVX-512 (K-blocked GEMM, gemm_config.CONV_GEMM_TILES_BY_VENDOR)
# stride-1 convs Winograd leaves with a GEMM this deep (R*S*C): Intel, 3x3 1x512x7x7->512 data
# tiling 0.56-0.59 of PyTorch -> 0.65-0.66, 8x512x7x7 0.51-0.64 -> 0.72-0.73; AMD Zen 5
# (znver5), fusilli-benchmark --compare torch, FUSILLI_CONV_LOWERING auto -> gemm, two runs:
# 1x512x7x7 0.69-0.92 -> 1.10-1.15, 8x512x7x7 0.65-0.73 -> 0.87-0.88, 3x3 1x256x14x14->256
# 0.55-0.63 -> 0.68-0.71. The same runs took AMD's 1x1 convs up to 1024 channels (as Intel's):
# 8x1024x14x14->256 0.77-0.82 -> 0.90-0.93 (1x1024x14x14, 196 rows, stays below the 1x1 rows).
CPU_CONV_GEMM_MIN_DEPTH_AVX512 = 2304
CPU_CONV_GEMM_DEEP_VENDORS = ("intel", "amd")


def conv_gemm_rows(p: Problem) -> int:
    """The GEMM rows of a conv problem as im2col: batch times output positions."""
    return int(p.fact("batch", 0)) * math.prod(int(d) for d in p.fact("out_spatial", ()))


def conv_gemm_depth(p: Problem) -> int:
    """R*S*C of a conv problem: its im2col GEMM's depth, a weight gradient's filter columns."""
    return math.prod(int(d) for d in p.fact("kernel", ())) * int(p.fact("channels", 0))


def conv_out_channels(p: Problem) -> int:
    """A conv problem's output channels, from its FLOP count, 2 * rows * R*S*C * K (the facts
    carry no K; the rules that ask look at ungrouped convs). A data gradient's ``out_spatial`` is
    DX's, its FLOPs the forward conv's: rows are the forward conv's outputs."""
    rows = conv_gemm_rows(p)
    if p.kind == "conv_dgrad":
        extents = zip(
            p.fact("out_spatial", ()),
            p.fact("padding", ()),
            p.fact("kernel", ()),
            p.fact("dilation", ()),
            p.fact("stride", ()),
        )
        rows = int(p.fact("batch", 0)) * math.prod(
            (x + 2 * pad - d * (k - 1) - 1) // st + 1 for x, pad, k, d, st in extents
        )
    depth = conv_gemm_depth(p)
    return int(p.flops) // (2 * rows * depth) if rows and depth else 0


# cpu-conv-gemm-few-positions: a forward conv of few output positions and a large filter (ResNet's
# last stage at batch 1: 7x7 = 49 positions, filters of 4-9 MiB) as Y^T[K, N*Ho*Wo] = W[K, R*S*C] x
# patches^T on Zen 1 (znver1), whose 256-bit FMAs issue as two 128-bit halves. Both other forms
# spend their time on the filter: the im2col GEMM (and IREE's data tiling alike) reads it as
# B[R*S*C, K], a transposed copy of the KRSC filter made in a dispatch of its own every call (3x3
# 1x512x7x7, one thread: 2.6-3.2 ms a call beside the GEMM's 8.5-10); here the filter is the GEMM's
# A, broadcast from in place, and the few positions are its columns (the patch gather writes them
# transposed, [R*S*C, positions]; the [K, positions] result is transposed back in a small
# dispatch, with any epilogue). All positions fit one column block of the conv GEMM's tile (64),
# so each workgroup streams its 48 filter rows once. First measured against IREE's data tiling:
# EPYC Zen 1 VM, in one process, interleaved with PyTorch, ratio to PyTorch, 3x3 1x512x7x7->512
# 0.66-0.77 -> 0.72-1.19 (K blocks of 256; whole K 0.85, blocks of 128 0.92-1.18, of 64
# 0.89-1.06), 1x1 1x512x7x7->2048 0.66-0.82 -> 0.96-1.05, 1x1 1x2048x7x7->512 0.86-0.94 -> 1.07-1.14,
# 1x1 s2 1x1024x14x14->2048 0.93-1.05 -> 1.25-1.42, 3x3 s2 1x512x14x14->512 1.05 -> 1.37, 0.78 ->
# 1.11. More positions lost, hence the limit: 98 (3x3 2x512x7x7) 0.72 -> 0.46, 0.73 -> 0.50; 196
# (1x1 1x1024x14x14->256 0.79 -> 0.26, 3x3 1x256x14x14 1.10 -> 0.52, 3x3 4x512x7x7 0.95 -> 0.57).
# Against the K-blocked im2col GEMM as it is now (its filter transposed as a [K, R*S*C] matrix and
# its rows padded in one dispatch; what the other cores take, below), on the Zen 1 VM, python
# benchmarks/conv_lowerings.py --lowering auto (this) --lowering gemm --lowering im2col (IREE's
# data tiling), ratio to PyTorch in one process, two runs: 3x3 1x512x7x7->512 1.49, 1.18 / 0.84,
# 0.71 / 0.65, 0.66; 3x3 s2 1x512x14x14->512 1.39, 1.24 / 0.83, 0.73 / 0.70, 0.69; 1x1 1x512x7x7->2048
# 0.84, 1.00 / 0.64, 0.76 / 0.51, 0.78; 1x1 1x2048x7x7->512 1.43, 1.06 / 0.84, 0.81 / 0.59, 0.64; 1x1 s2
# 1x1024x14x14->2048 1.21, 1.19 / 0.78, 0.77 / 0.87, 0.86 (1x1 convs with padded filter rows
# included: the GEMM's pad of B is one more copy of the filter).
# Other cores take the K-blocked im2col GEMM: AMD's AVX-512 ones took this rule until that GEMM's
# filter lost its strided copy, then measured the GEMM ahead (Zen 5 VM, the same script, four
# runs: 3x3 1x512x7x7->512 0.82-0.84 -> 0.92-0.96, 3x3 s2 1x512x14x14->512 0.77-0.79 -> 0.97-0.98);
# so did znver3 code on that VM, PyTorch held to AVX2 (full-width 256-bit FMAs, as Zen 2 and 3 have;
# seven runs: 3x3 1x512x7x7 0.61-0.89 -> 1.03-1.12 in six, 0.82 -> 0.71 in one; s2 1x512x14x14
# 0.86-0.89 -> 1.06-1.18; 1x1 1x512x7x7->2048 1.13, 0.70, 0.69 -> 0.61, 0.54, 0.54 ms). Zen 2 and 3
# themselves were not measured. Intel cores and AVX2 code for no named CPU never took it.
CPU_CONV_GEMM_FEW_POSITIONS_CORES = {("avx2", "znver1")}
CPU_CONV_GEMM_FEW_POSITIONS_MAX = 64
CPU_CONV_GEMM_FEW_POSITIONS_MIN_FILTER_BYTES = 4 << 20  # the smallest measured: 1x1 512x2048 f32


@rule(
    "cpu-conv-gemm-few-positions",
    Backend.CPU,
    ("conv_fprop",),
    "algorithm",
    evidence=(
        "EPYC Zen 1 VM (znver1), in one process, interleaved, ratio to PyTorch, K-blocked im2col GEMM / IREE's "
        "data tiling -> Y^T = W x patches^T, two runs: 3x3 1x512x7x7->512 0.71-0.84 / 0.65-0.66 -> 1.18-1.49, "
        "3x3 s2 1x512x14x14->512 0.73-0.83 / 0.69-0.70 -> 1.24-1.39, 1x1 1x512x7x7->2048 0.64-0.76 / 0.51-0.78 -> "
        "0.84-1.00, 1x1 1x2048x7x7->512 0.81-0.84 / 0.59-0.64 -> 1.06-1.43, 1x1 s2 1x1024x14x14->2048 0.77-0.78 / "
        "0.86-0.87 -> 1.19-1.21; lost from 98 positions (the limits: rules.py). Other cores take the im2col "
        "GEMM, measured ahead there (Zen 5: 3x3 1x512x7x7->512 0.82-0.84 -> 0.92-0.96 against this)"
    ),
)
def CPU_CONV_GEMM_FEW_POSITIONS(p: Problem, t: Target) -> str | None:
    if p.kind != "conv_fprop":
        return (
            None  # other rules ask this predicate directly, which skips the rule's kinds (a dgrad's filter is flipped)
        )
    if not p.fact("channels_last") or p.fact("groups") != 1 or p.element != DataType.FLOAT:
        return None
    if (vector_isa(t), cpu_core(t.cpu)) not in CPU_CONV_GEMM_FEW_POSITIONS_CORES:
        return None
    if any(int(d) != 1 for d in p.fact("dilation", ())):
        return None
    positions, depth, out_channels = conv_gemm_rows(p), conv_gemm_depth(p), conv_out_channels(p)
    filter_bytes = 4 * depth * out_channels
    if (
        not 0 < positions <= CPU_CONV_GEMM_FEW_POSITIONS_MAX
        or filter_bytes < CPU_CONV_GEMM_FEW_POSITIONS_MIN_FILTER_BYTES
    ):
        return None
    return (
        f"Y^T[{out_channels}, {positions}] = W x patches^T: {positions} output positions <= "
        f"{CPU_CONV_GEMM_FEW_POSITIONS_MAX}, the {filter_bytes / (1 << 20):.1f} MiB filter read in place, "
        f"GEMM tuned for {vector_isa(t)}, {cpu_core(t.cpu)}"
    )


@rule(
    "cpu-conv-im2col-gemm",
    Backend.CPU,
    ("conv_fprop", "conv_dgrad"),
    "algorithm",
    evidence=(
        "fusilli-benchmark --compare torch --iter 30, min ms, IREE im2col + data tiling -> explicit-config "
        "GEMM, AVX-512 host / x86-64-v3, two rounds at load ~1.5 (BENCHMARKS.md): 1x1 4x256x28x28->128 "
        "0.58-0.59 -> 0.42-0.47 (PyTorch 0.42-0.44) / 1.14 -> 0.96; 1x1 8x64x56x56->64 0.83 -> 0.42-0.43 / "
        "1.36-1.39 -> 0.93-0.96; 7x7 s2 stem 1x3x224x224 0.99-1.03 -> 0.81 / 1.78-1.79 -> 1.38-1.44; 3x3 s2 "
        "8x128x56x56->128 10.8-11.4 -> 5.1 / 16.5-16.9 -> 10.3-10.6; 2-3 dispatches instead of 3-4 (4-5 with "
        "bias + relu). Losses, hence the limits: 1x1 8x1024x14x14->256 2.0 -> 1.8-2.3 / 4.0 -> 4.5-4.6 and "
        "1x1 s2 1x256x56x56->512 on AVX2 1.16-1.18 -> 1.22-1.26 (AVX-512 0.61-0.63 -> 0.50-0.55), both won "
        "once AVX2's GEMM had K blocks (CPU_CONV_GEMM_MAX_CHANNELS_1X1 says by how much); 3x3 s2 "
        "4x128x28x28->256 (784 rows) 1.23 -> 1.57 / 2.96 -> 3.29; 3x3 stride 1 with C >= 256 (1x512x7x7 "
        "0.95 -> 1.48). Those were AMD Zen 4/5 hosts. On an Intel Xeon (AVX-512, icelake-client as named) the "
        "losses are wins, hence the Intel limits: ratio to PyTorch, data tiling -> explicit GEMM, AVX-512 / "
        "x86-64-v3, medians of fusilli-benchmark --compare torch: 3x3 s2 4x128x28x28->256 0.55 -> 0.68 / "
        "0.58 -> 0.73, 3x3 s2 1x128x56x56->128 (784 rows) 0.44 -> 0.62 / 0.60 -> 0.67, 1x1 s2 "
        "1x256x56x56->512 0.69 -> 0.79 / 0.68 -> 0.87, 1x1 8x1024x14x14->256 0.64 -> 0.79 / 0.80 -> 0.91; "
        "one thread each (FUSILLI_CPU_EXECUTOR=local-sync, torch.set_num_threads(1)): 3x3 s2 1x128x56x56 "
        "4.56 -> 2.43 ms, 1x1 1x1024x14x14 1.61 -> 0.88 ms. With K blocks (gemm_config.CONV_GEMM_TILES_BY_VENDOR) "
        "AVX2 and AMD AVX-512 win the deep ones too: see CPU_CONV_GEMM_MIN_ROWS_DEEP_STRIDED and "
        "CPU_CONV_GEMM_MIN_DEPTH_AVX512"
    ),
)
def CPU_CONV_IM2COL_GEMM(p: Problem, t: Target) -> str | None:
    if not p.fact("channels_last") or p.fact("groups") != 1 or p.element not in (DataType.FLOAT, *_LOW_PRECISION):
        return None
    isa = vector_isa(t)
    if isa == "generic" or p.flops < CPU_CONV_IM2COL_MIN_FLOPS or p.fact("dilation") != (1, 1):
        return None
    if p.kind == "conv_dgrad" and p.fact("stride") != (1, 1):
        return None  # a strided dgrad is a transposed conv: cpu-conv-dgrad-col2im-gemm's
    if CPU_CONV_BF16_IM2COL_MATMUL.applies(p, t) is not None:
        return None  # the bf16-operand im2col matmul keeps bf16 for the native dot product
    rows, kernel, channels = conv_gemm_rows(p), p.fact("kernel"), int(p.fact("channels", 0))
    vendor = cpu_vendor(t.cpu)
    intel = vendor == "intel"
    # Whose conv GEMM tile has K blocks (gemm_config): AVX2's, and these vendors' AVX-512 ones. (AVX2
    # code for no named CPU takes K whole below gemm_config.CONV_WHOLE_K_BELOW, measured faster still.)
    avx512_k_blocked = isa == "avx512" and vendor in CPU_CONV_GEMM_DEEP_VENDORS
    k_blocked = isa == "avx2" or avx512_k_blocked
    avx2_not_intel = isa == "avx2" and not intel  # AVX2's deep GEMMs (measured on AMD and generic AVX2 code)
    on = _isa_of(isa, vendor)
    # The GEMM's B: a dgrad's filter as it is (padding it a copy), a forward conv's transposed.
    out_channels = conv_out_channels(p)
    copied = p.kind == "conv_dgrad"
    padded_columns = _padded_filter_columns(t, out_channels, rows, copied)
    shallow_wide = CPU_CONV_GEMM_1X1_DGRAD_SHALLOW_WIDE_KEPT.get((isa, vendor or ""))
    kept = shallow_wide is not None and channels <= shallow_wide[0] and out_channels >= shallow_wide[1]
    if kernel == (1, 1) and p.kind == "conv_dgrad" and not kept:
        # 1x1 dgrads take the GEMM at any rows and depth (see CPU_CONV_GEMM_MIN_ROWS_1X1).
        return (
            f"1x1 dgrad, {rows} GEMM rows: DY x the forward filter as it is, GEMM tuned for {on}"
            + _core_conv_gemm_tile_text(t, out_channels, rows, channels, copied=copied)
            + (_gemm_rows_text(t, out_channels, rows, channels) if p.fact("stride") == (1, 1) else "")
            + _filter_layout_text(t, out_channels, rows, channels, copied)
        )
    if kernel == (1, 1):
        from fusilli.passes import gemm_config  # the tables (they import this module)

        wide = k_blocked  # Intel's tiles have K blocks on either ISA
        max_channels = CPU_CONV_GEMM_MAX_CHANNELS_1X1_INTEL if wide else CPU_CONV_GEMM_MAX_CHANNELS_1X1
        min_rows = CPU_CONV_GEMM_MIN_ROWS_1X1
        if k_blocked and not intel and padded_columns is not None:  # a forward conv here (copied: False)
            min_rows, max_channels = CPU_CONV_GEMM_MIN_ROWS_1X1_PADDED, CPU_CONV_GEMM_MAX_CHANNELS_1X1_PADDED
        elif p.fact("stride") == (1, 1) and (
            (isa, vendor or "") in CPU_CONV_GEMM_1X1_FEW_ROWS_TARGETS
            or (
                p.kind == "conv_fprop"
                and out_channels <= CPU_CONV_GEMM_1X1_FEW_ROWS_MAX_OUT_CHANNELS.get((isa, vendor or ""), 0)
            )
            or (isa, cpu_core(t.cpu) or "") in CPU_CONV_GEMM_1X1_FEW_ROWS_CORES
            or gemm_config.deep_vector(isa, cpu_core(t.cpu), channels) is not None
        ):
            min_rows = CPU_CONV_GEMM_MIN_ROWS_1X1_PADDED
        if rows < min_rows or not 0 < channels <= max_channels:
            return None
        strided_view = p.fact("stride") != (1, 1) and not any(p.fact("padding", ()))
        strided_view = strided_view and (isa, vendor or "") in gemm_config.STRIDED_ROWS_VIEW_TARGETS
        return (
            f"1x1, {rows} GEMM rows >= {min_rows}, {channels} channels <= {max_channels}, "
            f"GEMM tuned for {on}"
            + _core_conv_gemm_tile_text(t, out_channels, rows, channels, copied=copied)
            + (_gemm_rows_text(t, out_channels, rows, channels) if p.fact("stride") == (1, 1) else "")
            + (
                ", its rows a view of the input where the stride divides H and W (there: whole output rows"
                " per workgroup, register tiles as tall as a divisor of the output width)"
                if strided_view
                else ""
            )
            + (
                _padded_filter_text(t, out_channels, rows, copied)
                if strided_view  # conv_layout's strided rows: B in rows, never panels
                else _filter_layout_text(t, out_channels, rows, channels, copied)
            )
        )
    depth = math.prod(int(d) for d in kernel) * channels
    if intel and isa == "avx512" and conv_out_channels(p) >= CPU_CONV_GEMM_WIDE_MIN_OUT_CHANNELS:
        min_rows = CPU_CONV_GEMM_MIN_ROWS_STRIDED_INTEL_AVX512_WIDE
    else:
        min_rows = CPU_CONV_GEMM_MIN_ROWS_STRIDED_INTEL if intel else CPU_CONV_GEMM_MIN_ROWS_STRIDED
        if k_blocked and depth >= CPU_CONV_GEMM_DEEP_STRIDED_MIN_DEPTH:
            few_rows = (isa, vendor or "") in CPU_CONV_GEMM_MIN_ROWS_DEEP_STRIDED_FEW_TARGETS
            min_rows = CPU_CONV_GEMM_MIN_ROWS_DEEP_STRIDED_FEW if few_rows else CPU_CONV_GEMM_MIN_ROWS_DEEP_STRIDED
    if p.fact("stride") == (2, 2) and rows >= min_rows:
        patch_rows = _gemm_rows_text(t, out_channels, rows, depth, strided_patches=True, materialized=True)
        return (
            f"{kernel[0]}x{kernel[1]} stride 2, {rows} GEMM rows >= {min_rows}, GEMM tuned for {on}"
            + _core_conv_gemm_tile_text(t, out_channels, rows, depth, strided_patches=True, copied=copied)
            + patch_rows
            + _filter_layout_text(t, out_channels, rows, depth, copied, strided_patches=True)
        )
    deep_k_blocked = avx512_k_blocked or (avx2_not_intel and p.kind == "conv_fprop")
    if deep_k_blocked and p.fact("stride") == (1, 1) and depth >= CPU_CONV_GEMM_MIN_DEPTH_AVX512:
        return (
            f"{kernel[0]}x{kernel[1]}, GEMM depth {depth} >= {CPU_CONV_GEMM_MIN_DEPTH_AVX512}, K-blocked GEMM for {on}"
            + _core_conv_gemm_tile_text(t, out_channels, rows, depth, copied=copied)
            + _gemm_rows_text(t, out_channels, rows, depth, materialized=True)
            + _filter_layout_text(t, out_channels, rows, depth, copied)
        )
    return None


@rule(
    "cpu-conv-dgrad-flipped-gemm",
    Backend.CPU,
    ("conv_dgrad",),
    "algorithm",
    evidence=(
        "AVX2 (x86-64-v3 code, PyTorch held to AVX2), Zen 4 VM, one process, ratio to PyTorch, IREE's "
        "conv of the flipped filter (torch.aten.flip: a scalar gather, then im2col) -> the explicit GEMM over "
        "flipped patches: 3x3 dgrad 1x512x7x7 0.03 -> 0.25-0.42, 1x256x7x7 0.04 -> 0.54, 2x512x7x7 0.02 -> "
        "0.31, 5x5 2x32x28x28->64 0.37 -> 0.87, 1x64x8x8 0.36 -> 0.62; on AVX-512 even or worse (5x5 0.91 -> "
        "0.58), so AVX2 only"
    ),
)
def CPU_CONV_DGRAD_FLIPPED_GEMM(p: Problem, t: Target) -> str | None:
    if vector_isa(t) != "avx2" or not p.fact("channels_last") or p.fact("groups") != 1:
        return None
    if p.fact("kernel") == (1, 1) or p.fact("dilation") != (1, 1) or p.fact("stride") != (1, 1):
        return None  # a 1x1 filter needs no flip; strided dgrad is a transposed conv
    if p.element not in (DataType.FLOAT, *_LOW_PRECISION) or p.flops < CPU_CONV_IM2COL_MIN_FLOPS:
        return None
    if CPU_CONV_WINOGRAD.applies(p, t) is not None:
        return None
    kernel = p.fact("kernel")
    columns, rows = conv_out_channels(p), conv_gemm_rows(p)
    return (
        f"{kernel[0]}x{kernel[1]} stride 1 on avx2: the im2col GEMM over flipped patches, no filter flip"
        + _core_conv_gemm_tile_text(t, columns, rows, conv_gemm_depth(p), copied=True)
        + _filter_layout_text(t, columns, rows, conv_gemm_depth(p), copied=True)
    )


# The algorithm rules whose choice makes a conv the im2col GEMM with an explicit lowering config
# (fusilli-conv-layout's im2col_gemm; the split executor keeps such GEMMs over spatial filters whole).
CPU_CONV_GEMM_RULES = (CPU_CONV_GEMM_FEW_POSITIONS, CPU_CONV_IM2COL_GEMM, CPU_CONV_DGRAD_FLIPPED_GEMM)


# Weight gradients Winograd leaves are one GEMM DW[K, R*S*C] = DY^T x patches over the N*Ho*Wo
# output positions (fusilli-conv-layout), which IREE compiles with its default tiles: there the
# conv GEMM's tile (gemm_config.wgrad_matmul_compilation_info) and its K blocks run it faster.
# Intel's AVX-512 cores too, where IREE's own conv ran at a fraction of PyTorch: Intel Xeon VM
# (sapphirerapids as named), python benchmarks/table_ab.py (in one process, run interleaved with
# PyTorch), ratio to PyTorch, IREE's conv -> this GEMM with Intel's conv GEMM tile: 1x1
# 8x1024x14x14->256 0.30 -> 0.77, 8x256x56x56->64 0.18 -> 0.60, 8x512x28x28->128 0.20 -> 0.86,
# 8x128x28x28->512 0.21 -> 0.90, s2 8x256x56x56->512 0.18 -> 0.77, 1x64x56x56->256 0.51 -> 1.16,
# 1x256x56x56->64 0.38 -> 0.76, 1x512x28x28->128 0.60 -> 1.04, 1x128x28x28->512 0.67 -> 1.18,
# 1x256x14x14->1024 0.74 -> 1.43, s2 1x256x56x56->512 0.53 -> 0.87, 1x512x7x7->2048 1.46 -> 2.28;
# 3x3 8x512x7x7 0.85 -> 0.92, 1x256x14x14 0.91 -> 0.95; the 7x7 s2 stems 0.09-0.12 -> 0.50-0.62
# (cpu-conv-wgrad-row-blocks takes them further).
CPU_CONV_WGRAD_GEMM_VENDORS = {"avx2": None, "avx512": ("amd", "intel")}  # None: every vendor


# cpu-conv-wgrad-winograd-strided: 3x3 stride-2 weight gradients as Winograd over X's phases
# (winograd.polyphase_wgrad: the forward polyphase F(m, 2)'s transforms, ((2m + 1) / m)^2
# multiplies per DY position and channel pair instead of 9) where measured faster than the wgrad
# GEMM. Zen 4 VM (znver4), python benchmarks/conv_lowerings.py --lowering auto (the GEMM) --lowering
# polyphase2 --lowering polyphase4, ms in one process, two runs, AVX-512 / x86-64-v3 code: 8x128x56x56
# 17.1, 17.4 -> F(2) 17.4, 15.7, F(4) 14.5, 12.9 / 24.8, 28.1 -> 22.4, 22.6 and 16.0, 16.8: F(4) from
# this many 4x4 DY tiles ...
CPU_CONV_WGRAD_POLYPHASE_F4_MIN_TILES = 392
# ... else F(2) from this many 2x2 ones: 1x128x56x56 (196) 1.99, 1.74 -> 1.87, 1.52 / 2.89, 2.79 ->
# 1.88, 2.54; 8x256x28x28 (392) 13.8, 15.9 -> 13.0, 15.5 / 24.7, 18.6 -> 19.4, 13.7. 1x256x28x28 (49)
# lost, 1.46 -> 1.50 / 2.92 -> 3.37.
CPU_CONV_WGRAD_POLYPHASE_F2_MIN_TILES = 128
# X's channels (the GEMM's columns) at least this many: 4x64x56x56->128 lost on AVX-512 (3.44, 3.05
# -> F(2) 5.66, 5.22, F(4) 5.15, 4.97), though F(4) won as x86-64-v3 code (4.36, 4.97 -> 3.01, 3.91).
CPU_CONV_WGRAD_POLYPHASE_MIN_CHANNELS = 128
# The GEMM's products (t*t*K*C f32, summed over every tile) at most this large: 8x512x14x14 (26 MB at
# F(2)) lost, 12.1 -> 16.4 / even 24.7 -> 23.7.
CPU_CONV_WGRAD_POLYPHASE_MAX_PRODUCT_BYTES = 8 << 20


def polyphase_wgrad_output_tile(p: Problem, t: Target) -> int | None:
    """m of the polyphase Winograd F(m, 2) cpu-conv-wgrad-winograd-strided computes this 3x3 stride-2
    weight gradient with (tiles of m x m DY positions), or None."""
    if p.kind != "conv_wgrad" or not _polyphase_applies(p, t):
        return None
    c, k = int(p.fact("channels", 0)), conv_out_channels(p)
    if c < CPU_CONV_WGRAD_POLYPHASE_MIN_CHANNELS or k <= 0:
        return None
    for m, min_tiles in ((4, CPU_CONV_WGRAD_POLYPHASE_F4_MIN_TILES), (2, CPU_CONV_WGRAD_POLYPHASE_F2_MIN_TILES)):
        small = (2 * m + 1) ** 2 * k * c * 4 <= CPU_CONV_WGRAD_POLYPHASE_MAX_PRODUCT_BYTES
        if winograd_tiles(p, m) >= min_tiles and small:
            return m
    return None


@rule(
    "cpu-conv-wgrad-winograd-strided",
    Backend.CPU,
    ("conv_wgrad",),
    "algorithm",
    evidence=(
        "3x3 stride-2 weight gradients, Winograd over X's phases against the wgrad GEMM, Zen 4 VM (znver4), "
        "python benchmarks/conv_lowerings.py --lowering auto --lowering polyphase2 --lowering polyphase4, ms "
        "in one process, two runs, AVX-512 / x86-64-v3 code: 8x128x56x56 17.1, 17.4 -> F(4x4) 14.5, 12.9 / "
        "24.8, 28.1 -> 16.0, 16.8; 1x128x56x56 1.99, 1.74 -> F(2x2) 1.87, 1.52 / 2.89, 2.79 -> 1.88, 2.54; "
        "8x256x28x28 13.8, 15.9 -> 13.0, 15.5 / 24.7, 18.6 -> 19.4, 13.7 (the limits: rules.py)"
    ),
)
def CPU_CONV_WGRAD_WINOGRAD_STRIDED(p: Problem, t: Target) -> str | None:
    m = polyphase_wgrad_output_tile(p, t)
    if m is None:
        return None
    tiles, isa, vendor = winograd_tiles(p, m), vector_isa(t), cpu_vendor(t.cpu)
    on = _isa_of(isa, vendor)
    limit = CPU_CONV_WGRAD_POLYPHASE_F4_MIN_TILES if m == 4 else CPU_CONV_WGRAD_POLYPHASE_F2_MIN_TILES
    return f"F({m}x{m}, 2x2) over X's 4 phases, 3x3 stride 2, {tiles} {m}x{m} DY tiles >= {limit}, GEMM tuned for {on}"


# cpu-conv-wgrad-row-blocks: a weight gradient with few input channels and a filter of at least
# CPU_CONV_WGRAD_ROW_BLOCKS_MIN_ROWS rows (the 7x7 stride-2 stem) as one GEMM per block of stride
# filter rows over X's row-phase patches (conv_layout._row_block_wgrad): the one GEMM's im2col
# patches are R*S times X over the stride squared (12 times for the stem: 7.4 MB an image, written
# then read back), the row-phase patches S times over the stride (3.5: 2.2 MB), and each block's
# GEMM reads them at an offset. 3x3 and 5x5 filters with C = 3 ran even with the one GEMM.
CPU_CONV_WGRAD_ROW_BLOCKS_MAX_CHANNELS = 4
CPU_CONV_WGRAD_ROW_BLOCKS_MIN_ROWS = 7
# Intel's AVX-512 cores as AMD's: Intel Xeon VM (sapphirerapids as named), python benchmarks/table_ab.py
# (the one GEMM against the row blocks, in one process, run interleaved with PyTorch), ratio to
# PyTorch, two runs: stem 1x3x224x224->64 0.62 -> 0.67 (AMD's rules there), 0.59 -> 0.64;
# 8x3x224x224->64 0.50 -> 0.60, 0.51 -> 0.64.
CPU_CONV_WGRAD_ROW_BLOCKS_TARGETS = {("avx512", "amd"), ("avx512", "intel"), ("avx2", "amd"), ("avx2", "")}


@rule(
    "cpu-conv-wgrad-row-blocks",
    Backend.CPU,
    ("conv_wgrad",),
    "algorithm",
    evidence=(
        "Zen 5 VM (znver5), the stem's weight gradient 7x7 s2 Nx3x224x224->64, one GEMM over the im2col "
        "patches (cpu-conv-wgrad-gemm) -> the row-block GEMMs, the code before and after in alternating "
        "processes (fusilli-benchmark), fusilli median ms, two rounds, N = 1 / 2 / 4 / 8: AVX-512 0.90, 1.06 "
        "-> 0.77, 0.70 / 3.05, 2.02 -> 1.68, 1.33 / 4.53, 4.48 -> 3.12, 2.81 / 8.83, 9.02 -> 7.68, 7.56 "
        "(ratio to PyTorch 0.68-0.78 -> 0.90-1.02, 0.41-0.64 -> 0.87-0.93, 0.64-0.67 -> 1.02-1.03, 0.69-0.70 "
        "-> 0.80-0.82); x86-64-v3 code 1.65, 1.44 -> 1.29, 1.30 / 3.45, 3.28 -> 2.67, 2.69 / 7.69, 7.36 -> "
        "5.91, 5.91 / 15.1, 15.1 -> 12.3, 12.2; znver3 code 1.80, 1.68 -> 1.39, 1.34 / 4.39, 4.22 -> 2.73, "
        "2.79 / 9.08, 8.96 -> 6.00, 5.96 / 18.8, 18.5 -> 12.05, 12.05. In one process against PyTorch held "
        "to AVX2 (benchmarks/conv_lowerings.py), ratio, N = 1 / 2 / 4 / 8: x86-64-v3 0.83 -> 0.89, 0.72 -> "
        "0.94, 0.79 -> 1.00, 0.82 -> 1.02; znver3 0.78 -> 1.07, 0.61 -> 0.98, 0.69 -> 1.04, 0.69 -> 0.96. "
        "The short last block's rows only (r = 6 of a 2-row block), alternating processes, ms: batch 8 7.94, "
        "7.67 -> 6.20, 6.68 (0.79-0.83 -> 0.94-1.01), x86-64-v3 12.6, 12.1 -> 11.2, 11.1. "
        "One channel (its X not permuted: left to IREE's convolution_backward before) 1x1x224x224 15.2, 11.9 "
        "-> 0.34, 0.34 ms (0.05 -> 1.72-1.90 of PyTorch). 3x3 and 5x5 filters with C = 3 ran even"
    ),
)
def CPU_CONV_WGRAD_ROW_BLOCKS(p: Problem, t: Target) -> str | None:
    if not p.fact("channels_last") or p.fact("groups") != 1 or p.element != DataType.FLOAT:
        return None
    if (vector_isa(t), cpu_vendor(t.cpu) or "") not in CPU_CONV_WGRAD_ROW_BLOCKS_TARGETS:
        return None
    if len(p.fact("kernel", ())) != 2 or p.fact("dilation") != (1, 1):
        return None  # 2-D convs only (fusilli-conv-layout rewrites those)
    channels, (fy, fx), (sy, _) = int(p.fact("channels", 0)), p.fact("kernel"), p.fact("stride")
    if not 0 < channels <= CPU_CONV_WGRAD_ROW_BLOCKS_MAX_CHANNELS:
        return None
    if fy < CPU_CONV_WGRAD_ROW_BLOCKS_MIN_ROWS:
        return None
    blocks = -(-fy // sy)
    return (
        f"{blocks} GEMMs DW^T[{sy}x{fx}x{channels}, K] over X's {sy} row phases, one per {sy} of the "
        f"{fy} >= {CPU_CONV_WGRAD_ROW_BLOCKS_MIN_ROWS} filter rows ({channels} channels <= "
        f"{CPU_CONV_WGRAD_ROW_BLOCKS_MAX_CHANNELS}), a {_row_block_tile_text(vector_isa(t), sy * fx * channels)}"
    )


def _row_block_tile_text(isa: str, rows: int) -> str:
    from fusilli.passes import gemm_config  # the tile table (it imports this module)

    tile = gemm_config.row_block_wgrad_register_tile(isa, rows)
    return "register tile of IREE's choosing" if tile is None else f"{tile[0]}x{tile[1]} register tile"


# IREE's data tiling: GEMM operands packed into panels by dispatches of their own, the GEMM an
# mmt4d ukernel (the flags of cpu-matmul-data-tiling and cpu-conv-wgrad-data-tiling).
CPU_DATA_TILING_FLAGS = (
    "--iree-opt-level=O3",
    "--iree-opt-data-tiling=true",
    "--iree-llvmcpu-enable-ukernels=all",
)

# cpu-conv-wgrad-data-tiling: on AMD's AVX2 cores a weight gradient's one GEMM DW[K, R*S*C] = DY^T x
# patches runs faster data-tiled than with the conv GEMM tile. The tile's kernel reads its operands
# where they lie: per reduction step 6 broadcasts from a DY row and 16 columns of an X row, rows
# K*4 and C*4 bytes apart (4 KB for C = 1024), so a K block's B rows all map to a few L1 sets and
# each lies on a page of its own; the packs put each panel in one run of memory. EPYC Zen 1 VM
# (znver1), the two compiled in one process and run interleaved with PyTorch, ratio to PyTorch,
# three runs: 1x1 8x1024x14x14->256 0.74 -> 1.07, 0.67 -> 0.96, 0.82 -> 1.13 (and 0.72 -> 1.08);
# 8x256x14x14->1024 0.72 -> 1.03, 0.81 -> 0.99, 0.76 -> 0.98; 8x2048x7x7->512 1.07 -> 1.55, 1.11 ->
# 1.59, 0.85 -> 1.20; 8x1024x14x14->512 0.80 -> 1.19, 0.70 -> 1.14, 0.83 -> 1.20; 4x128x28x28->512
# (3136 positions) 0.61 -> 0.83, 0.88 -> 1.05, 0.48 -> 0.74; 4x512x28x28->128 0.73 -> 0.95, 0.84 ->
# 1.04, 0.86 -> 1.03; batch 1, 1x1024x14x14->256 0.98 -> 1.21, 1.05 -> 1.18, 1.03 -> 1.16;
# 1x512x28x28->128 0.84 -> 1.08, 1.00 -> 1.02, 0.88 -> 1.00; 1x1024x14x14->512 0.91 -> 1.15, 1.08
# -> 1.38, 1.07 -> 1.37; 3x3 (after the patch gather) 8x512x7x7 1.14 -> 1.59, 1.01 -> 1.53;
# 8x256x7x7 1.05 -> 1.47; 4x512x7x7 1.62 -> 2.23, 1.83 -> 2.41, 1.50 -> 1.98, 1.69 -> 2.21; 1x512x14x14
# 1.71 -> 2.30, 1.40 -> 1.90, 1.52 -> 2.12; 2x256x14x14 1.06 -> 1.44, 1.19 -> 1.70, 1.30 -> 1.71, 1.26 ->
# 1.75; 98 positions (2x512x7x7) 2.28 -> 2.41. Where it lost or ran even, hence the limits: 3x3
# filters below CPU_CONV_WGRAD_DATA_TILING_MIN_SPATIAL_FLOPS (their patches are gathered by a
# dispatch of their own, into which the pack fuses: the tile then reads a dense, fresh matrix):
# 1x256x14x14 (231 MFLOP) 1.40 -> 1.11, 1.88 -> 1.59, 1.82 -> 1.82, 1.52 -> 1.50, 1.90 -> 1.85, 1.83
# -> 1.77, 1.96 -> 2.00; 1x128x14x14 (58 MFLOP) 1.48 -> 1.44, 1.44 -> 1.36, 1.80 -> 1.75, 1.33 ->
# 1.41; 49 positions
# (1x512x7x7->2048 2.22 -> 1.30, 2.86 -> 1.75; 1x2048x7x7->512 1.91 -> 1.67, 1.94 -> 1.79: the
# packs and the unpack of DW outweigh a GEMM 49 deep), 64 output channels or 64 filter columns
# (1x256x56x56->64 1.06 -> 0.99, 1.00 -> 0.94; 1x64x56x56->256 1.06 -> 0.96, 1.01 -> 0.92), and
# the chunked GEMMs of >= 4096 positions (gemm_config.wgrad_chunk_positions: 8x128x28x28->512
# 0.75 -> 0.68, 8x256x56x56->64 0.91 -> 0.67, 8x512x28x28->128 0.99 -> 0.96). 1x1 stride 2 (its
# row gather first) ran even (1x256x56x56->512 0.97 -> 0.94, 8x256x56x56->512 0.75 -> 0.76) and
# keeps the tile there (Zen 3 takes data tiling for them from 392 positions: below). Zen 2 and
# Intel's AVX2 cores not measured.
CPU_CONV_WGRAD_DATA_TILING_TARGETS = {("avx2", "amd")}
CPU_CONV_WGRAD_DATA_TILING_MIN_POSITIONS = 96
CPU_CONV_WGRAD_DATA_TILING_MIN_SIDE = 128  # output channels K and filter columns R*S*C
CPU_CONV_WGRAD_DATA_TILING_MIN_SPATIAL_FLOPS = 1 << 28  # filters larger than 1x1
# Strided 1x1 weight gradients take data tiling on the cores named here, from as many output
# positions as CPU_CONV_WGRAD_DATA_TILING_STRIDED_MIN_POSITIONS (chunked GEMMs excepted, as above):
# their X rows are gathered by a dispatch of their own, into which X's pack then fuses. 2-core EPYC
# Zen 3 VM (znver3), the GEMM tile against data tiling, in one process, interleaved with PyTorch
# (python benchmarks/table_ab.py SUITE --variant cur --variant 'dt:...'), ms, two runs (ratio to
# PyTorch): stride 2 8x512x28x28->1024 (1568 positions) 25.2, 27.1 -> 14.4, 16.3 (0.93, 0.80 -> 1.63,
# 1.34); 8x1024x14x14->2048 (392) 18.7, 17.8 -> 16.3, 14.6; 4x256x56x56->512 (3136) 12.1, 8.5 -> 9.5,
# 6.2; 2x256x56x56->512 (1568) 5.0, 4.1 -> 3.8, 3.5; 4x512x28x28->1024 (784) 10.2, 15.3 -> 11.3, 11.4;
# 2x512x28x28->1024 (392) 4.9, 4.5 -> 5.5, 3.7; ResNet-50's 1x256x56x56->512 (784) 2.74, 2.44, 2.71,
# 2.89, 2.97 -> 2.40, 2.52, 2.75, 2.87, 2.93 (one thread, the dispatches alone, benchmarks/
# dispatch_profile.py --device local-sync: 4.5-5.6 -> 3.3-3.4 ms a call, the GEMM 55 -> 85 GFLOP/s).
# Below 392 positions the tile stayed ahead: 1x512x28x28->1024 (196) 2.47, 2.36 -> 3.09, 2.96
# (4x1024x14x14->2048, 196, ran even: 9.0, 8.5 -> 9.1, 7.1). Against the chunks of 8x256x56x56->512
# (6272 positions), even: 15.9, 18.7 -> 15.1, 22.3. Other cores were not measured (Zen 1 ran the
# stride-2 rows even, above) and keep the tile.
CPU_CONV_WGRAD_DATA_TILING_STRIDED_1X1_CORES = frozenset({"znver3"})
CPU_CONV_WGRAD_DATA_TILING_STRIDED_MIN_POSITIONS = 392


def _wgrad_gemm_chunk(p: Problem, t: Target) -> int | None:
    """The output positions per chunk of a weight gradient's GEMM (cpu-conv-wgrad-gemm) on ``t``, or
    None where it is one GEMM (gemm_config.wgrad_chunk_positions)."""
    from fusilli.passes import gemm_config  # the chunk rule (it imports this module)

    isa, vendor, core = vector_isa(t), cpu_vendor(t.cpu), cpu_core(t.cpu)
    columns, out_channels, positions = conv_gemm_depth(p), conv_out_channels(p), conv_gemm_rows(p)
    transposed = gemm_config.wgrad_gemm_transposed(isa, out_channels, columns, vendor, core, positions)
    return gemm_config.wgrad_chunk_positions(
        p.fact("kernel"), positions, out_channels, transposed, isa, vendor, columns, core
    )


@rule(
    "cpu-conv-wgrad-data-tiling",
    Backend.CPU,
    ("conv_wgrad",),
    "algorithm",
    flags=CPU_DATA_TILING_FLAGS,
    evidence=(
        "EPYC Zen 1 VM (znver1), data tiling against the conv GEMM tile, in one process, interleaved, "
        "ratio to PyTorch, three runs: 1x1 8x1024x14x14->256 0.67-0.82 -> 0.96-1.13, 8x256x14x14->1024 "
        "0.72-0.81 -> 0.98-1.03, 4x128x28x28->512 0.48-0.88 -> 0.74-1.05, 1x1024x14x14->256 0.98-1.05 -> "
        "1.16-1.21, 1x512x28x28->128 0.84-1.00 -> 1.00-1.08; 3x3 8x512x7x7 1.01-1.14 -> 1.53-1.59, 4x512x7x7 "
        "1.50-1.83 -> 1.98-2.41. Lost or ran even at 49 positions, 64 output channels or filter columns, 3x3 "
        "filters below 268 MFLOP, and against the chunks of >= 4096 positions (the limits: rules.py). "
        "Zen 3 VM (znver3): strided 1x1 from 392 positions, s2 8x512x28x28->1024 25.2-27.1 -> 14.4-16.3 ms, "
        "2x256x56x56->512 4.1-5.0 -> 3.5-3.8 ms (CPU_CONV_WGRAD_DATA_TILING_STRIDED_1X1_CORES)"
    ),
)
def CPU_CONV_WGRAD_DATA_TILING(p: Problem, t: Target) -> str | None:
    if not p.fact("channels_last") or p.fact("groups") != 1 or p.element != DataType.FLOAT:
        return None
    isa, vendor = vector_isa(t), cpu_vendor(t.cpu)
    if (isa, vendor) not in CPU_CONV_WGRAD_DATA_TILING_TARGETS:
        return None
    # 2-D: fusilli's GEMM lowering of a weight gradient (conv_layout) is for 2-D convs; a channels-last
    # 3-D one comes here folded into one (depth_folded), others stay one IREE conv dispatch, as fast
    # with these flags as without (Zen 3, 1x1x1 2x256x8x28x28->128 before the fold: 43.6 against 43.3
    # ms median, in one process).
    if len(p.fact("kernel", ())) != 2 or any(d != 1 for d in p.fact("dilation", ())):
        return None
    columns, out_channels, positions = conv_gemm_depth(p), conv_out_channels(p), conv_gemm_rows(p)
    strided = any(s != 1 for s in p.fact("stride", ()))
    core = cpu_core(t.cpu)
    if strided:
        if any(int(d) != 1 for d in p.fact("kernel", ())) or core not in CPU_CONV_WGRAD_DATA_TILING_STRIDED_1X1_CORES:
            return None
        if positions < CPU_CONV_WGRAD_DATA_TILING_STRIDED_MIN_POSITIONS:
            return None
    if min(columns, out_channels) < CPU_CONV_WGRAD_DATA_TILING_MIN_SIDE:
        return None
    if positions < CPU_CONV_WGRAD_DATA_TILING_MIN_POSITIONS:
        return None
    spatial = any(int(d) != 1 for d in p.fact("kernel", ()))
    if spatial and p.flops < CPU_CONV_WGRAD_DATA_TILING_MIN_SPATIAL_FLOPS:
        return None
    if _wgrad_gemm_chunk(p, t) is not None:
        return None  # the chunks of many positions won
    minimum = CPU_CONV_WGRAD_DATA_TILING_STRIDED_MIN_POSITIONS if strided else CPU_CONV_WGRAD_DATA_TILING_MIN_POSITIONS
    return (
        f"one GEMM DW[{out_channels}, {columns}] over {positions} output positions, "
        f"data-tiled for {isa}, AMD (K and R*S*C >= {CPU_CONV_WGRAD_DATA_TILING_MIN_SIDE}, "
        + (f"strided 1x1 on {core}, " if strided else "")
        + f"positions >= {minimum}"
        + (f", {_mflop(p.flops)} >= {_mflop(CPU_CONV_WGRAD_DATA_TILING_MIN_SPATIAL_FLOPS)})" if spatial else ")")
    )


@rule(
    "cpu-conv-wgrad-gemm",
    Backend.CPU,
    ("conv_wgrad",),
    "algorithm",
    evidence=(
        "Zen 4 VM (znver4), the same graphs compiled with IREE's default tiles and with the conv GEMM tile, "
        "in one process, interleaved, ratio to PyTorch. x86-64-v3 code, PyTorch held to AVX2: 3x3 "
        "1x256x14x14 2.23 -> 2.83, 1x512x7x7 5.95 -> 8.00, 8x512x7x7 1.52 -> 2.24, 1x1 1x256x56x56->64 0.60 -> "
        "1.01, 1x1 8x1024x14x14->256 0.53 -> 0.84, 3x3 s2 1x128x56x56 0.90 -> 1.11, 7x7 s2 stem 0.32 -> 0.45, "
        "3x3 1x64x14x14 0.57 -> 0.63. AVX-512, two runs: 1x1 8x1024x14x14->256 0.62-0.63 -> 1.08-1.15, 1x1 "
        "8x512x28x28->128 0.51 -> 0.98, 1x1 1x256x56x56->64 0.93-0.95 -> 0.98-1.01, 3x3 s2 1x128x56x56 "
        "0.84-0.93 -> 0.89-0.93, 3x3 8x512x7x7 1.95-2.40 -> 2.03-2.66, 7x7 s2 stem 0.33 -> 0.30 and 3x3 "
        "1x64x14x14 0.93 -> 0.89 within noise. Intel AVX-512 not measured. Filter columns R*S*C that "
        "do not fill the register tile (the C = 3 stem's 147) as DW^T[R*S*C, K] "
        "(gemm_config.wgrad_gemm_transposed), two runs, batch 1 / 8: AVX-512 0.28-0.33 / 0.25 -> "
        "0.57-0.75 / 0.55-0.66, x86-64-v3 0.45-0.48 / 0.38-0.40 -> 0.81-0.84 / 0.75-0.83. AVX2 code also "
        "takes DW^T where K <= 128 < R*S*C (1x1 1x256x56x56->64 0.59-0.67 -> 0.84-0.85, 8x256x56x56->64 "
        "0.57-0.84 -> 0.66-1.04; gemm_config.WGRAD_TRANSPOSED_MAX_OUT_CHANNELS). 1x1 ones over >= 4096 output "
        "positions with >= 128 output channels sum chunks of ~256 positions (gemm_config.wgrad_chunk_positions): "
        "AVX-512 8x512x28x28->128 0.74-0.88 -> 0.98-1.08, 8x128x28x28->512 0.90-0.97 -> 1.19-1.24, x86-64-v3 "
        "8x128x28x28->512 0.59-0.67 -> 0.75-0.91; AVX2's DW^T at any output channels: 8x512x28x28->128 0.64-0.67 "
        "-> 0.91-0.92, 8x256x56x56->64 0.63-0.79 -> 0.89-1.06, and of any filter (3x3 s2 8x64x56x56->128 "
        "0.78-0.84 -> 1.12-1.26, the stem 8x3x224x224 0.79-0.82 -> 0.95-1.03)"
    ),
)
def CPU_CONV_WGRAD_GEMM(p: Problem, t: Target) -> str | None:
    if not p.fact("channels_last") or p.fact("groups") != 1 or p.element not in (DataType.FLOAT, *_LOW_PRECISION):
        return None
    if len(p.fact("kernel", ())) != 2:
        return None  # fusilli's GEMM lowering (conv_layout) is for 2-D weight gradients (3-D: depth_folded)
    isa, vendor = vector_isa(t), cpu_vendor(t.cpu)
    if isa not in CPU_CONV_WGRAD_GEMM_VENDORS:
        return None
    vendors = CPU_CONV_WGRAD_GEMM_VENDORS[isa]
    if vendors is not None and vendor not in vendors:
        return None
    on = _isa_of(isa, vendor)
    from fusilli.passes import gemm_config  # the tile table (it imports this module)

    columns, core = conv_gemm_depth(p), cpu_core(t.cpu)
    out_channels, positions = conv_out_channels(p), conv_gemm_rows(p)
    transposed = gemm_config.wgrad_gemm_transposed(isa, out_channels, columns, vendor, core, positions)
    chunk = _wgrad_gemm_chunk(p, t)
    shape = f" as DW^T[R*S*C = {columns}, K]" if transposed else ""
    rows = columns if transposed else out_channels
    cols = out_channels if transposed else columns
    # The GEMM's tile with and without the core's K per vector step (gemm_config.wgrad_step).
    if chunk is not None:
        tiles = [gemm_config.chunked_wgrad_tile(isa, rows, cols, vendor, c) for c in (core, None)]
    elif transposed:
        tiles = [gemm_config.wgrad_transposed_tile(isa, rows, cols, positions, vendor, c) for c in (core, None)]
    else:
        tiles = [gemm_config.wgrad_tile(isa, cols, positions, vendor, c, rows) for c in (core, None)]
    stepped = ""
    if tiles[0] is not None and tiles[1] is not None and tiles[0].reduction != tiles[1].reduction:
        step = tiles[0].reduction
        stepped = f" ({core}: K {'one position' if step == 1 else f'{step} positions'} per vector step)"
    if chunk is not None:
        tile = tiles[1]
        plain = gemm_config.conv_gemm_tile(isa, cols, vendor)
        which = (
            f"a {tile.vector[0]}x{tile.vector[1]} register tile over its {rows} rows for {on}"
            if tile is not None and plain is not None and tile.vector != plain.vector
            else f"conv GEMM tile for {on}"
        )
        return (
            f"one batched GEMM over {positions // chunk} chunks of {chunk} output positions, summed{shape}, "
            f"{which}{stepped}"
        )
    tile = None if transposed else tiles[1]
    if tile is not None and tile != gemm_config.conv_gemm_tile(isa, columns, vendor):
        (rows, cols), (vector_rows, vector_cols) = tile.distribution, tile.vector
        return (
            f"one GEMM over {positions} output positions, a {vector_rows}x{vector_cols} register tile "
            f"in {rows}x{cols} workgroups for {on}{stepped}"
        )
    return f"one GEMM over {positions} output positions{shape}, conv GEMM tile for {on}{stepped}"


# cpu-conv-dgrad-winograd-strided: 3x3 stride-2 data gradients as Winograd F(2, 2) per DX phase
# (winograd.polyphase_dgrad_matrices: 1.56 multiplies per DX position and channel pair instead of
# 2.25, and no col2im) where measured faster than the col2im GEMM: from this many 4x4 DX tiles
# (batch x ceil(H/4) x ceil(W/4)) ...
CPU_CONV_DGRAD_POLYPHASE_MIN_TILES = 128
# ... while the transformed filter (25*K*C f32, every call) is at most this large: 8x256x28x28 (6.5 MB,
# 392 tiles) won, 8x512x14x14 (26 MB, 128 tiles) ran even, 1x256x28x28 (49 tiles) and 1x512x14x14 (16)
# lost to it. The transformed DY and GEMM products are held to the forward's
# CPU_CONV_POLYPHASE_MAX_TRANSFORMED_BYTES (8x128x56x56, the largest measured, sits at it).
CPU_CONV_DGRAD_POLYPHASE_MAX_FILTER_BYTES = 8 << 20
# F(4x4, 2x2) (8x8 DX tiles, 81 products each: 1.27 multiplies per DX position and channel pair
# instead of 1.56) from this many 8x8 DX tiles: 8x128x56x56 (392) 15.5 -> 14.7 ms (AVX-512), 17.2 ->
# 16.4 (x86-64-v3), with two-stage output transforms 16.1 -> 13.8; with fewer it lost (1x128x56x56,
# 49: 1.68 -> 1.72 / 1.77 -> 2.01; 8x256x28x28, 128: 13.0 -> 14.7 / 15.0 -> 20.2).
CPU_CONV_DGRAD_POLYPHASE_F4_MIN_TILES = 392
# Zen 1 (as the forward, CPU_CONV_POLYPHASE_CORE_LIMITS) takes F(2x2, 2x2) from 49 4x4 DX tiles
# and of any filter. EPYC Zen 1 VM, python benchmarks/conv_lowerings.py SUITE --lowering auto (the
# col2im GEMM) --lowering polyphase2, ratio to PyTorch in one process, three runs: 3x3 s2 dgrad
# 1x256x28x28->256 (49 tiles, 6.5 MB transformed filter) 0.95, 0.77, 0.81 -> 1.05, 0.90, 0.98;
# 2x256x28x28->256 (98) 1.00, 0.82, 1.04 -> 1.23, 1.01, 1.23; 8x512x14x14->512 (128, 26 MB) 0.67,
# 0.79, 0.83 -> 0.74, 0.86, 0.85; 1x128x28x28->256 (49) 0.89, 0.91, 0.86 -> 0.89, 0.93, 0.91. 16 tiles
# lost (--lowering gemm against polyphase2): 1x512x14x14->512 1.21 -> 0.57, 1x256x14x14->256 1.17 -> 0.68.
# Measured from 128 DX channels, hence the core's limits only from there.
CPU_CONV_DGRAD_POLYPHASE_CORE_LIMITS = {"znver1": PolyphaseCoreLimits(min_tiles=49, min_channels=128, any_filter=True)}


def polyphase_dgrad_min_tiles(t: Target, dx_channels: int) -> int:
    """The fewest 4x4 DX tiles cpu-conv-dgrad-winograd-strided takes F(2x2, 2x2) from on ``t``."""
    limits = _core_polyphase_limits(CPU_CONV_DGRAD_POLYPHASE_CORE_LIMITS, t, dx_channels)
    return CPU_CONV_DGRAD_POLYPHASE_MIN_TILES if limits is None else limits.min_tiles


def strided_dgrad_out_channels(p: Problem) -> int:
    """A strided dgrad's DX channels (C) from its FLOP count, 2 * N * DY positions * R*S * K * C, with
    DY's positions taken as DX's divided by the stride (exact for ResNet's "same" padding)."""
    stride = p.fact("stride", ())
    dy_positions = int(p.fact("batch", 0)) * math.prod(
        -(-int(d) // int(s)) for d, s in zip(p.fact("out_spatial", ()), stride)
    )
    taps = math.prod(int(d) for d in p.fact("kernel", ()))
    per = 2 * dy_positions * taps * int(p.fact("channels", 0))
    return round(p.flops / per) if per else 0


def polyphase_dgrad_output_tile(p: Problem, t: Target) -> int | None:
    """m of the polyphase Winograd F(m, 2) cpu-conv-dgrad-winograd-strided computes this dgrad with
    (tiles of 2m x 2m DX positions), or None. One transform serves rows and columns, so the
    padding's parity must agree along them (it picks which DX rows are the two-tap phase)."""
    if p.kind != "conv_dgrad" or not _polyphase_applies(p, t):
        return None
    padding = p.fact("padding", ())
    if len(padding) != 2 or padding[0] % 2 != padding[1] % 2:
        return None
    k, c = int(p.fact("channels", 0)), strided_dgrad_out_channels(p)
    if k <= 0 or c <= 0:
        return None
    limits = _core_polyphase_limits(CPU_CONV_DGRAD_POLYPHASE_CORE_LIMITS, t, c)
    any_filter = limits is not None and limits.any_filter
    for m, min_tiles in ((4, CPU_CONV_DGRAD_POLYPHASE_F4_MIN_TILES), (2, polyphase_dgrad_min_tiles(t, c))):
        tiles, t_squared = winograd_tiles(p, 2 * m), (2 * m + 1) ** 2
        filter_fits = (m == 2 and any_filter) or t_squared * k * c * 4 <= CPU_CONV_DGRAD_POLYPHASE_MAX_FILTER_BYTES
        if tiles < min_tiles or not filter_fits:
            continue
        if t_squared * tiles * (k + c) * 4 <= CPU_CONV_POLYPHASE_MAX_TRANSFORMED_BYTES:
            return m
    return None


@rule(
    "cpu-conv-dgrad-winograd-strided",
    Backend.CPU,
    ("conv_dgrad",),
    "algorithm",
    evidence=(
        "3x3 stride-2 dgrad, Winograd F(2x2, 2x2) per DX phase against the col2im GEMM, Zen 4 VM (znver4), "
        "python benchmarks/conv_lowerings.py --lowering gemm --lowering polyphase2 (in one process, "
        "interleaved), ms, AVX-512 / x86-64-v3 code: 1x128x56x56 1.87 -> 1.68 / 2.01 -> 1.77, 8x128x56x56 "
        "17.0 -> 15.5 / 20.0 -> 17.2, 8x256x28x28 14.8 -> 13.0 / 16.9 -> 15.0, 4x64x56x56->128 4.03 -> 4.27 / "
        "3.72 -> 2.97, 8x512x14x14 16.5 -> 16.8 / 20.5 -> 19.9; fewer tiles lost: 1x256x28x28 2.11 -> 3.00, "
        "1x512x14x14 2.35 -> 6.20. F(4x4, 2x2) won only at 8x128x56x56 (14.7 / 16.4 ms) and lost elsewhere. "
        "A second run, this rule (--lowering auto) against --lowering gemm: 1x128x56x56 1.55 -> 1.49 / 2.26 -> "
        "1.77, 8x128x56x56 15.9 -> 13.1 / 17.3 -> 13.1, 8x256x28x28 14.1 -> 10.9 / 14.1 -> 11.6, 4x64x56x56->128 "
        "2.74 -> 2.88 / 5.12 -> 5.05 (even: DX's 64 channels make a narrow GEMM). F(4x4, 2x2) from 392 8x8 DX "
        "tiles: 8x128x56x56 F(2x2) -> F(4x4) 12.7 -> 11.3 / 13.7 -> 12.2. EPYC Zen 1 (znver1), from 49 4x4 DX tiles "
        "and of any filter, ratio to PyTorch, three runs: 1x256x28x28 0.77-0.95 -> 0.90-1.05, 2x256x28x28 "
        "0.82-1.04 -> 1.01-1.23, 8x512x14x14 0.67-0.83 -> 0.74-0.86"
    ),
)
def CPU_CONV_DGRAD_WINOGRAD_STRIDED(p: Problem, t: Target) -> str | None:
    m = polyphase_dgrad_output_tile(p, t)
    if m is None:
        return None
    tiles, isa, vendor = winograd_tiles(p, 2 * m), vector_isa(t), cpu_vendor(t.cpu)
    on, dx_channels = (f"{isa}, AMD" if vendor == "amd" else isa), strided_dgrad_out_channels(p)
    limit = CPU_CONV_DGRAD_POLYPHASE_F4_MIN_TILES if m == 4 else polyphase_dgrad_min_tiles(t, dx_channels)
    return (
        f"F({m}x{m}, 2x2) per DX phase, 3x3 stride 2, {tiles} {2 * m}x{2 * m} DX tiles >= {limit}, "
        f"no col2im, GEMM tuned for {on}" + _winograd_panel_text(t, dx_channels, tiles, int(p.fact("channels", 0)))
    )


@rule(
    "cpu-conv-dgrad-col2im-gemm",
    Backend.CPU,
    ("conv_dgrad",),
    "algorithm",
    evidence=(
        "Zen 4 VM (znver4), python benchmarks/conv_lowerings.py --lowering linalg (the transposed conv) "
        "--lowering auto, ms and ratio to PyTorch in one process, AVX-512: 3x3 s2 dgrad 1x128x56x56 5.96 -> "
        "1.25 ms (0.19 -> 0.92), 8x128x56x56 45.8 -> 12.2 (0.22 -> 0.82), 1x1 s2 1x256x56x56->512 5.22 -> 1.04 "
        "(0.47 -> 2.37), 7x7 s2 stem 1x3x224x224 14.6 -> 3.44 (0.40 -> 1.68); x86-64-v3 code, PyTorch held to "
        "AVX2: 17.2 -> 1.51 (0.09 -> 1.07), 142 -> 15.8 (0.09 -> 0.79), 9.46 -> 1.39 (0.35 -> 2.37), 46.2 -> "
        "3.41 (0.09 -> 1.19). One thread, 3x3 s2 1x128x56x56: GEMM 2.08 ms (111 GFLOP/s), col2im 0.20 ms. "
        "Intel not measured: the transposed conv does stride^2 the FLOPs on any CPU"
    ),
)
def CPU_CONV_DGRAD_COL2IM_GEMM(p: Problem, t: Target) -> str | None:
    if not p.fact("channels_last") or p.fact("groups") != 1 or p.element not in (DataType.FLOAT, *_LOW_PRECISION):
        return None
    stride = p.fact("stride")
    if len(stride) != 2 or stride == (1, 1) or vector_isa(t) == "generic":
        # Stride 1 is a forward conv of DY (Winograd, the GEMM rules, or IREE's); the rewrite
        # (conv_layout._rewrite_strided_dgrad) is of 2-D convs (a 3-D one stays IREE's transposed conv).
        return None
    kernel = p.fact("kernel")
    # The GEMM: DY's positions x W[K, R*S*C] as it is (padding its rows a copy).
    from fusilli.ops.conv import infer_conv_output_dims

    dx_dims, filter_dims = [0, 0, *p.fact("out_spatial", ())], [0, 0, *kernel]
    dy_spatial = infer_conv_output_dims(dx_dims, filter_dims, p.fact("padding", ()), stride, p.fact("dilation"))[2:]
    dy_positions = int(p.fact("batch", 0)) * math.prod(dy_spatial)
    taps = math.prod(int(r) for r in kernel)
    depth = int(p.fact("channels", 0))
    columns = int(p.flops) // (2 * dy_positions * depth) if dy_positions and depth else 0
    padded = _padded_filter_text(t, columns, dy_positions, copied=True)
    rows = (
        _core_conv_gemm_tile_text(t, columns, dy_positions, depth, copied=True)
        + _gemm_rows_text(t, columns, dy_positions, depth)
        if columns
        else ""
    )
    return (
        f"{kernel[0]}x{kernel[1]} stride {stride[0]}x{stride[1]}: one GEMM DY x W into {taps} "
        f"taps' columns and a col2im gather, not the transposed conv of zero-inserted DY{rows}{padded}"
    )


@rule(
    "cpu-conv-channels-last-linalg",
    Backend.CPU,
    CPU_CONV_KINDS,
    "algorithm",
    evidence=(
        "fusilli-conv-layout: a channels-last 2-D conv as linalg.conv_2d_nhwc_hwcf over an HWCF filter "
        "(a matmul for 1x1) leaves no activation transpose; IREE's NCHW conv with transposes around it "
        "is several dispatches, and its FHWC conv runs at 0.02-0.07x PyTorch"
    ),
)
def CPU_CONV_CHANNELS_LAST_LINALG(p: Problem, t: Target) -> str | None:
    return "channels-last 2-D convs; others stay torch.aten.convolution"


# Decompose SDPA (matmul, softmax, matmul in f32) from this much arithmetic
# (4*B*Hq*Sq*Skv*D) while the f32 scores fit in CPU_SDPA_MAX_SCORES_BYTES.
CPU_SDPA_DECOMPOSE_MIN_FLOPS = 1 << 20
CPU_SDPA_MAX_SCORES_BYTES = 1 << 30
# Causal decomposed SDPA with this many query rows is split into query blocks.
CPU_SDPA_CAUSAL_BLOCK_MIN_ROWS = 256


def sdpa_gemm_config(t: Target) -> bool:
    """Whether a decomposed attention's two products are GEMMs with the CPU's lowering config
    (``cpu-matmul-gemm-config``'s targets) where a call of them (a causal query block) has as many
    query rows as a transposed B needs there (Q K^T copies K^T row-major first). Zen 1, alternating
    processes against IREE's config, ratio to PyTorch, two rounds: 1x8x512x64 0.61-0.63 ->
    0.80-0.86, causal (4 query blocks of 128 rows) 0.93 -> 1.08-1.10, 2x8x1024x64 causal 0.69-0.70
    -> 0.90, 1x12x197x64 0.44-0.45 -> 0.54-0.69, 4x8x256x64 15.2-15.6 -> 13.5 ms."""
    return (vector_isa(t), cpu_vendor(t.cpu)) in CPU_MATMUL_GEMM_CONFIG_TARGETS


def sdpa_gemm_min_rows(t: Target) -> int:
    """The query rows from which a call of a decomposed attention's products on ``t`` (an
    ``sdpa_gemm_config`` target) is the configured GEMMs (see CPU_SDPA_GEMM_CONFIG_MIN_ROWS)."""
    key = (vector_isa(t), cpu_vendor(t.cpu) or "")
    return CPU_SDPA_GEMM_CONFIG_MIN_ROWS.get(key, CPU_MATMUL_GEMM_CONFIG_TRANSPOSED_B_MIN_ROWS)


def _sdpa_gemms(t: Target) -> str:
    """What explain adds to a decomposed attention's fact on ``sdpa_gemm_config`` targets."""
    if not sdpa_gemm_config(t):
        return ""
    return (
        f"; Q K^T and P V as GEMMs with a {_user_matmul_tile_text(t, True)} from "
        f"{sdpa_gemm_min_rows(t)} query rows (K^T copied row-major first)"
    )


def _user_matmul_tile_text(t: Target, batched: bool) -> str:
    """``cpu-matmul-gemm-config``'s tile on ``t`` in words: "8x32 register tile, K in blocks of 256
    for avx512, AMD"."""
    from fusilli.passes import gemm_config  # the tile table (it imports this module)

    isa, vendor = vector_isa(t), cpu_vendor(t.cpu)
    tile = gemm_config.user_matmul_tile(isa, vendor, batched)
    assert tile is not None, (isa, vendor)  # CPU_MATMUL_GEMM_CONFIG_TARGETS all have one
    blocks = f", K in blocks of {tile.cache_reduction}" if tile.cache_reduction else ""
    return f"{tile.vector[0]}x{tile.vector[1]} register tile{blocks} for {isa}, {'AMD' if vendor == 'amd' else 'Intel'}"


def _sdpa_decomposes(p: Problem) -> bool:
    return (
        not p.fact("dynamic")
        and p.flops >= CPU_SDPA_DECOMPOSE_MIN_FLOPS
        and p.fact("scores_bytes", 0) <= CPU_SDPA_MAX_SCORES_BYTES
    )


@rule(
    "cpu-sdpa-causal-query-blocks",
    Backend.CPU,
    ("sdpa",),
    "algorithm",
    evidence="1x8x512x64 causal f32: 4 query blocks attending to their key prefix, ratio 0.53 -> 0.96",
)
def CPU_SDPA_CAUSAL_QUERY_BLOCKS(p: Problem, t: Target) -> str | None:
    if not (_sdpa_decomposes(p) and p.fact("causal") and not p.fact("mask") and p.fact("folded_heads") == 1):
        return None
    if p.fact("rows", 0) < CPU_SDPA_CAUSAL_BLOCK_MIN_ROWS:
        return None
    return f"causal, {p.fact('rows')} query rows >= {CPU_SDPA_CAUSAL_BLOCK_MIN_ROWS}, {_mflop(p.flops)}{_sdpa_gemms(t)}"


@rule(
    "cpu-sdpa-decomposed",
    Backend.CPU,
    ("sdpa",),
    "algorithm",
    evidence=(
        "IREE's iree_linalg_ext.attention CPU kernel runs at 1-4 GFLOP/s; matmul/softmax/matmul is ~15x "
        "faster on 1x8x512x64 f32 (ratio 1.2 for f16)"
    ),
)
def CPU_SDPA_DECOMPOSED(p: Problem, t: Target) -> str | None:
    if not _sdpa_decomposes(p):
        return None
    return (
        f"{_mflop(p.flops)} >= {_mflop(CPU_SDPA_DECOMPOSE_MIN_FLOPS)}, scores {p.fact('scores_bytes')} bytes"
        f"{_sdpa_gemms(t)}"
    )


@rule(
    "cpu-sdpa-fused",
    Backend.CPU,
    ("sdpa",),
    "algorithm",
    evidence="tiny problems run equally fast fused and stay 1 dispatch (1x2x8x4: 0.03 ms either way)",
)
def CPU_SDPA_FUSED(p: Problem, t: Target) -> str | None:
    if p.fact("dynamic"):
        return "dynamic dims"
    if p.flops < CPU_SDPA_DECOMPOSE_MIN_FLOPS:
        return f"{_mflop(p.flops)} < {_mflop(CPU_SDPA_DECOMPOSE_MIN_FLOPS)}"
    return f"scores {p.fact('scores_bytes')} bytes > {CPU_SDPA_MAX_SCORES_BYTES}"


# ---------------------------------------------------------------- CPU: flags

# Data tiling packs operands in dispatches of their own: it pays off on large
# problems and loses on small ones, and it keeps small fused graphs at one dispatch.
CPU_MATMUL_MIN_FLOPS = 1 << 28
CPU_MATMUL_FLAGS = CPU_DATA_TILING_FLAGS


@rule(
    "cpu-matmul-data-tiling",
    Backend.CPU,
    CPU_MATMUL_KINDS,
    "flags",
    flags=CPU_MATMUL_FLAGS,
    evidence=(
        "AVX-512: matmul 1024^3 f32 ratio 1.16 -> 1.56 with data tiling + ukernels; batched matmul "
        "8x256x64x256 (67 MFLOP) 0.94 -> 0.16, hence the 2^28 FLOP threshold"
    ),
)
def CPU_MATMUL_DATA_TILING(p: Problem, t: Target) -> str | None:
    if CPU_MATMUL_GEMM_CONFIG.applies(p, t) is not None:
        return None  # a batched GEMM with its own config (see CPU_MATMUL_GEMM_CONFIG)
    return f"{_mflop(p.flops)} >= {_mflop(CPU_MATMUL_MIN_FLOPS)}" if p.flops >= CPU_MATMUL_MIN_FLOPS else None


# An f32 matmul on AMD's AVX2 cores takes an explicit lowering config
# (gemm_config.user_matmul_compilation_info has the one-thread measurements) below the
# data-tiling threshold, where IREE's own 8x8 register tile ran 0.47-0.80 of PyTorch and the
# 4x16 tile 0.66-0.99, from CPU_MATMUL_GEMM_CONFIG_MIN_FLOPS (64x128x128 and 4x64x64x64, inline:
# 0.69-0.82 -> 0.78-1.05); 2-D or one batch dim both operands have, row-major (a transposed
# operand is not measured). A batched one takes it above the threshold too where its B is at
# most CPU_MATMUL_GEMM_CONFIG_WIDE_MAX_COLUMNS wide (one workgroup's columns) or
# CPU_MATMUL_GEMM_CONFIG_WIDE_MAX_DEPTH deep: Zen 1, old and new code in alternating processes,
# ratio to PyTorch, data tiling -> this, two rounds: 8x512x64x512 0.70-0.71 -> 1.12-1.13,
# 8x256x256x256 0.68-0.80 -> 1.06-1.09, 4x256x512x256 0.75-0.78 -> 1.02-1.11, 8x512x128x256
# 0.67-0.70 -> 1.13-1.18, 4x1024x256x128 0.67-0.71 -> 1.10-1.13, 8x128x1024x128 0.70-0.72 -> 1.08;
# wider and deeper it lost (4x512x512x512 0.80-0.81 -> 0.64, 2x1024x1024x1024 0.85-0.86 ->
# 0.49-0.61), as did 2-D ones above it (1024^3 0.85-0.86 -> 0.71-0.80, 512x512x2048 + bias +
# gelu 0.85-0.93 -> 0.72-0.75, 1024x512x1024 0.85-0.90 -> 0.81-0.88): those stay data-tiled.
# AMD's AVX-512 cores take it too, with an 8x32 tile in 64x64 workgroups, K in blocks of 256
# (batched: 64 x min(N, 256), whole K), where IREE's config ran 0.07-1.17 of PyTorch and data
# tiling 0.94-1.05 on batched rows above the threshold: EPYC Zen 5 VM, two threads, in one process,
# 128x768x768 1.11 -> 1.52, 64x1024x1024 0.76 -> 1.42, 256x1024x256 1.02 -> 1.73, batched
# 12x197x64x197 0.07 -> 1.48-1.53, 8x512x64x512 0.94 -> 2.06, 8x512x128x256 1.05 -> 2.31
# (gemm_config.USER_MATMUL_TILES has the rest). 2-D matmuls above the threshold and batched ones
# both wider and deeper stay data-tiled there as well (not compared with the config on Zen 5).
# Intel's AVX-512 cores take AMD's AVX-512 tiles: Intel Xeon VM (sapphirerapids as named), python
# benchmarks/table_ab.py (in one process, run interleaved with PyTorch), ratio to PyTorch, IREE's
# config -> the 8x32 tile: 256^3 0.41 -> 0.53, 128x768x768 0.41 -> 0.60, 512x256x512 0.65 -> 0.81,
# 64x1024x1024 0.28 -> 0.73, batched 8x256x64x256 0.59 -> 0.71, 12x197x64x197 0.03 -> 0.67,
# 8x512x64x512 (data tiling) 0.44 -> 1.00; sdpa 1x8x512x64 0.58 -> 0.72, causal 0.80 -> 0.98 (its
# products are these GEMMs). Intel's own conv GEMM tile (6x64 in 60x64, K blocks of 256; batched
# 60x256) ran 0.47-0.53 -> 0.51, 0.61 -> 0.66, 0.89 -> 0.67, 0.72 -> 0.63, 0.70 -> 0.57, even elsewhere.
CPU_MATMUL_GEMM_CONFIG_TARGETS = {("avx2", "amd"), ("avx512", "amd"), ("avx512", "intel")}
CPU_MATMUL_GEMM_CONFIG_MIN_FLOPS = 1 << 21
CPU_MATMUL_GEMM_CONFIG_WIDE_MAX_COLUMNS = 256
CPU_MATMUL_GEMM_CONFIG_WIDE_MAX_DEPTH = 64
# B as laid out: row-major, or transposed (a linear layer's W^T, attention's K^T), copied row-major
# in a dispatch of its own first, where A has at least CPU_MATMUL_GEMM_CONFIG_TRANSPOSED_B_MIN_ROWS
# rows (per batch) over which to repay the copy. Zen 1, alternating processes, ratio to PyTorch,
# IREE's config (B read transposed) -> this, two rounds: 512x256x512 0.56-0.57 -> 0.90-0.97 (+ bias
# + relu 0.59-0.63 -> 0.94-1.00), 128x768x768 0.45-0.47 -> 0.71-0.94, 256x1024x256 0.44-0.55 ->
# 0.83-0.90, batched 8x256x64x256 0.58-0.68 -> 1.06-1.07, 12x197x64x197 0.51-0.53 -> 0.77-0.87,
# 8x128x64x128 0.55-0.56 -> 0.82-0.97, 8x512x128x256 (data tiling before) 0.67-0.80 -> 1.07-1.16;
# with 64 rows it lost (64x1024x1024, its 4 MB B copied for 134 MFLOP: 0.69-0.73 -> 0.63-0.66).
CPU_MATMUL_GEMM_CONFIG_B_LAYOUTS = ("row_major", "transposed")
CPU_MATMUL_GEMM_CONFIG_TRANSPOSED_B_MIN_ROWS = 128
# Decomposed attention copies K^T per call of its products: on AMD's AVX-512 cores it repays the
# copy from 64 query rows, where a user's transposed B (a weight, wide and deep) needs 128. Zen 5,
# in one process, interleaved with PyTorch, ratio to PyTorch, from 128 -> 64 -> 32 rows: sdpa
# 1x16x77x64 0.67 -> 1.36 / 1.34, 4x16x77x64 1.06 -> 2.22 / 2.27, 1x32x100x128 1.02 -> 1.64 / 1.68,
# causal 1x8x256x64 (blocks of 64 rows) 1.79 -> 2.08 / 2.04, 1x12x64x64 0.93 -> 0.94 / 0.91; 32
# query rows over 512 keys 1.21 / 1.22 -> 1.00. User matmuls with B transposed, 128 -> 64:
# 64x1024x1024 1.48 -> 1.09, 96x1024x1024 1.54 -> 1.18, 64x768x768 1.37 -> 1.48, 8x64x64x256 0.77 ->
# 0.87. AMD's AVX2 cores keep 128 (Zen 1: measured from 128 rows).
CPU_SDPA_GEMM_CONFIG_MIN_ROWS = {("avx512", "amd"): 64}


@rule(
    "cpu-matmul-gemm-config",
    Backend.CPU,
    CPU_MATMUL_KINDS,
    "algorithm",
    evidence=(
        "EPYC Zen 1 VM (znver1), one thread, ratio to PyTorch, IREE's config -> 4x16: 2-D (32x64 "
        "workgroups, K blocks of 64) 256^3 0.77 -> 0.92, 512x256x512 0.61 -> 0.96, 128x768x768 0.52 -> "
        "0.88, 64x1024x1024 0.47 -> 0.66; batched (64 x <= 256 workgroups) 8x256x64x256 0.80 -> 0.99, "
        "12x197x64x197 0.70 -> 0.84, 4x512x512x64 0.70 -> 0.89; batched above data tiling's threshold, two "
        "threads, data tiling -> this: 8x512x64x512 0.70 -> 1.12, 8x512x128x256 0.67-0.70 -> 1.13-1.18; "
        "EPYC Zen 5 VM (znver5), two threads, 8x32 tiles: 128x768x768 1.11 -> 1.52, batched 12x197x64x197 "
        "0.07 -> 1.48, 8x512x64x512 (data tiling) 0.94 -> 2.06 (rules.py, BENCHMARKS.md)"
    ),
)
def CPU_MATMUL_GEMM_CONFIG(p: Problem, t: Target) -> str | None:
    if (vector_isa(t), cpu_vendor(t.cpu)) not in CPU_MATMUL_GEMM_CONFIG_TARGETS:
        return None
    if not p.fact("all_f32") or p.fact("dynamic") or not p.fact("row_major"):
        return None
    if p.fact("b_layout") not in CPU_MATMUL_GEMM_CONFIG_B_LAYOUTS:
        return None
    if p.fact("b_layout") == "transposed" and p.fact("m") < CPU_MATMUL_GEMM_CONFIG_TRANSPOSED_B_MIN_ROWS:
        return None
    rank = p.fact("rank")
    copy = ", B copied row-major first" if p.fact("b_layout") == "transposed" else ""
    if not (rank == 2 or (rank == 3 and p.fact("same_batch"))):
        return None
    if p.flops < CPU_MATMUL_GEMM_CONFIG_MIN_FLOPS:
        return None
    below = f"{_mflop(CPU_MATMUL_GEMM_CONFIG_MIN_FLOPS)} <= {_mflop(p.flops)} < {_mflop(CPU_MATMUL_MIN_FLOPS)}"
    if rank == 2:
        if p.flops >= CPU_MATMUL_MIN_FLOPS:
            return None  # data tiling's
        return f"{below}: linalg.matmul with a {_user_matmul_tile_text(t, False)}{copy}"
    if p.flops < CPU_MATMUL_MIN_FLOPS:
        size = below
    elif p.fact("n") <= CPU_MATMUL_GEMM_CONFIG_WIDE_MAX_COLUMNS:
        size = f"{_mflop(p.flops)}, B {p.fact('n')} <= {CPU_MATMUL_GEMM_CONFIG_WIDE_MAX_COLUMNS} columns wide"
    elif p.fact("k") <= CPU_MATMUL_GEMM_CONFIG_WIDE_MAX_DEPTH:
        size = f"{_mflop(p.flops)}, B {p.fact('k')} <= {CPU_MATMUL_GEMM_CONFIG_WIDE_MAX_DEPTH} deep"
    else:
        return None  # data tiling's
    return f"{size}: linalg.batch_matmul with a {_user_matmul_tile_text(t, True)} (no data tiling){copy}"


# LayerNorm (memory bound) at O3: the training form's stats reduction and Y fuse
# into one dispatch (x read once). From 1 MFLOP (~128K elements).
CPU_LAYERNORM_MIN_FLOPS = 1 << 20


@rule(
    "cpu-layernorm-o3",
    Backend.CPU,
    ("layernorm",),
    "flags",
    flags=("--iree-opt-level=O3",),
    evidence="4096x768 affine training forward: f32 ratio ~0.4 -> ~0.9-1.1, bf16 ~0.3 -> ~1.1-1.3",
)
def CPU_LAYERNORM_O3(p: Problem, t: Target) -> str | None:
    if p.flops < CPU_LAYERNORM_MIN_FLOPS:
        return None
    return f"{_mflop(p.flops)} >= {_mflop(CPU_LAYERNORM_MIN_FLOPS)}"


@rule(
    "cpu-layernorm-fused-two-pass",
    Backend.CPU,
    ("layernorm",),
    "flags",
    flags=("--iree-dispatch-creation-enable-aggressive-fusion",),
    evidence=(
        "the statistics are two row reductions (the leading quarter's sum, then sums about its mean, "
        "fusilli/lowering/norm.py): with "
        "aggressive fusion both and Y are one dispatch at every size (2 without, 3 in training)"
    ),
)
def CPU_LAYERNORM_FUSED_TWO_PASS(p: Problem, t: Target) -> str | None:
    return "two row reductions and Y in one dispatch"


@rule(
    "cpu-conv-im2col-data-tiling",
    Backend.CPU,
    ("conv_fprop",),
    "flags",
    flags=("--iree-global-opt-use-im2col-for-convs",) + CPU_MATMUL_FLAGS,
    evidence=(
        "3x3 NHWC conv + bias + relu, min ms direct -> im2col: 1x32x28x28->32 2.09 -> 0.18, "
        "1x64x56x56->64 33 -> 1.8; IREE's direct conv was 2-18x slower at every measured size"
    ),
)
def CPU_CONV_IM2COL_DATA_TILING(p: Problem, t: Target) -> str | None:
    if CPU_CONV_DEPTHWISE.applies(p, t) is not None:
        return None  # IREE's im2col fails on a depthwise conv (see compile_flags)
    if any(
        r.applies(p, t) is not None
        for r in (CPU_CONV_GEMM_FEW_POSITIONS, CPU_CONV_IM2COL_GEMM, CPU_CONV_WINOGRAD_STRIDED)
    ):
        return None  # its GEMM carries its own lowering config: data tiling would add dispatches
    if CPU_CONV_DIRECT_FEW_CHANNELS.applies(p, t) is not None:
        return None  # IREE's im2col would turn the direct conv back into a GEMM
    if CPU_CONV_GROUPED_DIRECT.applies(p, t) is not None:
        return None  # the grouped conv's generic carries its own lowering config
    if p.element not in (DataType.FLOAT, *_LOW_PRECISION) or p.flops < CPU_CONV_IM2COL_MIN_FLOPS:
        return None
    return f"{_mflop(p.flops)} >= {_mflop(CPU_CONV_IM2COL_MIN_FLOPS)}"


# ---------------------------------------------------------------- AMD GPU


def _matrix_unit_fact(p: Problem, t: Target) -> str:
    gpu = t.gpu
    if gpu is not None and gpu.matrix_unit and p.element.mlir_name in gpu.matrix_types:
        return f"{p.element.mlir_name} on {gpu.matrix_unit} ({t.arch})"
    return f"{p.element.mlir_name} ({t.arch})"


AMDGPU_OWN_TYPE: Rule = rule(
    "amdgpu-own-type",
    Backend.AMDGPU,
    CPU_MATMUL_KINDS + CPU_CONV_KINDS + ("sdpa",),
    "compute",
    evidence=(
        "upstream Fusilli: f16/bf16 convs, matmuls and attention stay in their own type so IREE's GPU "
        "codegen maps them onto MFMA/WMMA (test_targets.py finds v_mfma in the gfx942 code)"
    ),
)(lambda p, t: _matrix_unit_fact(p, t))


@rule(
    "amdgpu-conv-upstream",
    Backend.AMDGPU,
    CPU_CONV_KINDS,
    "algorithm",
    evidence=(
        "upstream Fusilli: torch.aten.convolution as emitted; IREE's ROCm pipeline propagates the layout "
        "transposes through the conv and picks an MFMA/WMMA implicit GEMM"
    ),
)
def AMDGPU_CONV_UPSTREAM(p: Problem, t: Target) -> str | None:
    return f"torch.aten.convolution for IREE's {t.arch} conv codegen"


@rule(
    "amdgpu-sdpa-fused-attention",
    Backend.AMDGPU,
    ("sdpa",),
    "algorithm",
    evidence=(
        "upstream Fusilli: iree_linalg_ext.attention is IREE's flash-attention kernel on AMD GPUs; "
        "decomposing materializes the score matrix"
    ),
)
def AMDGPU_SDPA_FUSED_ATTENTION(p: Problem, t: Target) -> str | None:
    return f"{_mflop(p.flops)}, fused kernel on {t.arch}"
