"""fusilli-benchmark: time fusilli graphs (and optionally PyTorch eager) on one problem or a suite.

Flags mirror upstream Fusilli's ``fusilli_benchmark_driver`` (MIOpen-style), e.g.::

    fusilli-benchmark --iter 10 conv -F 1 -n 16 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 \
        -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 --in_layout NHWC --out_layout NHWC --fil_layout NHWC --spatial_dim 2

Timing happens in this process: inputs are allocated once (64-byte aligned, so
``execute`` imports them without copying), each ``execute`` call is timed on its
own with ``time.perf_counter``. With ``--compare torch`` the same problem runs in
PyTorch eager on the same data, alternating fusilli and PyTorch in blocks (a call
right after the other library's call is slower: caches, thread wake-up), and the
ratio ``torch median / fusilli median`` is printed (above 1: fusilli is faster).

``--suite FILE`` reads one command per line (``#`` starts a comment, blank lines are
skipped, a ``[SKIP]`` prefix records a skipped row); options given on the command line
before ``--suite`` are defaults that a line's own options override.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

F32_FLOP_PER_CYCLE = 32  # two 256-bit FMA pipes per core (Zen 3/4, and AVX2/AVX-512 Intel cores alike)


def nominal_peak_gflops() -> float:
    """f32 peak at the nominal clock: cores x 32 FLOP/cycle x the clock /proc/cpuinfo
    reports. Turbo clocks run above it, so well-tuned kernels can exceed 100%."""
    mhz = []
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            mhz = [float(line.split(":", 1)[1]) for line in f if line.startswith("cpu MHz")]
    except (OSError, ValueError):
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    ghz = (max(mhz) / 1e3) if mhz else 2.45
    return round(cores * F32_FLOP_PER_CYCLE * ghz, 1)


PEAK_GFLOPS_DEFAULT = nominal_peak_gflops()
_TYPES = ("f32", "f16", "bf16")


class BenchmarkError(Exception):
    """A problem that cannot be benchmarked (bad flags, missing op, missing torch)."""


# --------------------------------------------------------------------------- argument parsing
def _add_global_options(p: argparse.ArgumentParser, *, defaults: bool) -> None:
    d = (lambda v: v) if defaults else (lambda v: argparse.SUPPRESS)
    p.add_argument("--iter", "-i", type=int, default=d(10), help="timed iterations (per library), >= 1")
    p.add_argument("--warmup", type=int, default=d(3), help="untimed iterations before timing (per library)")
    p.add_argument("--device", "-D", type=int, default=d(0), help="device index (ignored on CPU)")
    p.add_argument("--backend", default=d("cpu"), choices=("cpu", "amdgpu"), help="fusilli backend")
    p.add_argument("--arch", default=d(None), help="AMD GPU target (amdgpu backend only)")
    p.add_argument(
        "--dump",
        "-d",
        action="store_true",
        default=d(False),
        help="print the optimized IR, compiler flags and dispatch statistics",
    )
    p.add_argument(
        "--dump-stage",
        default=d(None),
        help="with --dump: also print the IR at this IREE phase (e.g. dispatch-creation, flow)",
    )
    p.add_argument("--output-format", default=d("text"), choices=("text", "csv", "json"))
    p.add_argument("--compare", default=d(None), choices=("torch",), help="also time PyTorch eager (CPU)")
    p.add_argument(
        "--Xiree-compile",
        dest="xiree",
        action="append",
        default=d([]),
        metavar="FLAG",
        help="extra IREE compiler flag (repeatable; appended to FUSILLI_EXTRA_COMPILER_FLAGS)",
    )
    p.add_argument(
        "--peak-gflops",
        type=float,
        default=d(PEAK_GFLOPS_DEFAULT),
        help="machine peak for the %%-of-peak column (default: f32 peak at the nominal clock, %(default)s)",
    )
    p.add_argument("--label", default=d(None), help="row label (default: the command line)")


def _dims(text: str) -> list[int]:
    try:
        dims = [int(v) for v in text.lower().split("x")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected dims like 4096x768, got {text!r}") from None
    if not dims or any(v <= 0 for v in dims):
        raise argparse.ArgumentTypeError(f"dims must be positive, got {text!r}")
    return dims


def build_parser(*, defaults: bool = True) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fusilli-benchmark",
        description="Benchmark fusilli graphs (MIOpen-style flags); optionally against PyTorch eager.",
    )
    _add_global_options(p, defaults=defaults)
    p.add_argument("--suite", default=None, help="file with one command per line ('#' comments)")
    p.add_argument(
        "--progress",
        dest="progress",
        action="store_true",
        default=None,
        help="print a progress line per row on stderr (default: on for suites)",
    )
    p.add_argument("--no-progress", dest="progress", action="store_false")
    sub = p.add_subparsers(dest="subcommand", metavar="SUBCOMMAND")

    c = sub.add_parser("conv", help="convolution (fprop)")
    c.add_argument("--mode", "-F", type=int, required=True, choices=(1, 2, 4), help="1 fprop, 2 dgrad, 4 wgrad")
    c.add_argument("--batchsize", "-n", type=int, required=True)
    c.add_argument("--in_channels", "-c", type=int, required=True)
    c.add_argument("--in_d", type=int)
    c.add_argument("--in_h", "-H", type=int, required=True)
    c.add_argument("--in_w", "-W", type=int, required=True)
    c.add_argument("--out_channels", "-k", type=int, required=True)
    c.add_argument("--group_count", "-g", type=int, default=1)
    c.add_argument("--fil_d", type=int)
    c.add_argument("--fil_h", "-y", type=int, required=True)
    c.add_argument("--fil_w", "-x", type=int, required=True)
    c.add_argument("--conv_stride_d", type=int)
    c.add_argument("--conv_stride_h", "-u", type=int, default=1)
    c.add_argument("--conv_stride_w", "-v", type=int, default=1)
    c.add_argument("--pad_d", type=int)
    c.add_argument("--pad_h", "-p", type=int, default=0)
    c.add_argument("--pad_w", "-q", type=int, default=0)
    c.add_argument("--dilation_d", type=int)
    c.add_argument("--dilation_h", "-l", type=int, default=1)
    c.add_argument("--dilation_w", "-j", type=int, default=1)
    c.add_argument("--in_layout", default="NCHW")
    c.add_argument("--fil_layout", default="NCHW")
    c.add_argument("--out_layout", default="NCHW")
    c.add_argument("--spatial_dim", type=int, default=2, choices=(2, 3))
    _add_type_flags(c)
    c.add_argument("--bias", "-b", action="store_true", help="add a [1,K,1,1] bias (pointwise ADD)")
    c.add_argument("--relu", action="store_true", help="fusilli extension: relu after the conv (and bias)")

    m = sub.add_parser("matmul", help="(batched) matmul")
    m.add_argument("--m", "-M", type=int, required=True)
    m.add_argument("--n", "-N", type=int, required=True)
    m.add_argument("--k", "-K", type=int, required=True)
    m.add_argument("--b", "-B", type=int, default=1, help="batch (> 1 makes the operands rank 3)")
    m.add_argument("--a_type", default="f32", choices=_TYPES)
    m.add_argument("--b_type", default="f32", choices=_TYPES)
    m.add_argument("--out_type", default="f32", choices=_TYPES)
    m.add_argument("--bias_type", default=None, choices=_TYPES)
    m.add_argument("--transA", action="store_true")
    m.add_argument("--transB", action="store_true")
    m.add_argument("--bias", action="store_true", help="add a [1,N] bias (pointwise ADD)")
    m.add_argument(
        "--activation",
        default="none",
        choices=("none", "relu", "gelu", "gelu_approx_tanh"),
        help="fusilli extension: activation after the matmul (and bias)",
    )

    ln = sub.add_parser("layernorm", help="layer normalization (training forward)")
    ln.add_argument("--input", "-X", type=_dims, required=True, help="dims, e.g. 4096x768")
    ln.add_argument("--type", "-t", default="f32", choices=_TYPES)
    ln.add_argument("--forw", "-F", type=int, default=1, choices=(1,))
    ln.add_argument("--layout", "-l", default=None)
    ln.add_argument("--eps", "-e", type=float, default=1e-5)
    ln.add_argument("--elementwise_affine", action="store_true")

    s = sub.add_parser("sdpa", help="scaled dot-product attention")
    s.add_argument("--batch", "-B", type=int, required=True)
    s.add_argument("--heads_q", type=int, required=True)
    s.add_argument("--heads_kv", type=int, required=True)
    s.add_argument("--seq_q", type=int, required=True)
    s.add_argument("--seq_kv", type=int, required=True)
    s.add_argument("--head_dim", "-d", type=int, required=True)
    s.add_argument("--type", "-t", required=True, choices=_TYPES)
    s.add_argument("--scale", "-s", type=float, default=None)
    s.add_argument("--dropout", "-p", type=float, default=0.0)
    s.add_argument("--mask", action="store_true")
    s.add_argument("--causal", action="store_true")
    s.add_argument("--gqa", action="store_true")

    pw = sub.add_parser("pointwise", help="fusilli extension: the chain relu(x*a+b)*0.5+x")
    pw.add_argument("--elements", "-N", type=int, required=True, help="element count of x, a and b")
    pw.add_argument("--type", "-t", default="f32", choices=_TYPES)
    return p


def _add_type_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--fp16", action="store_true")
    g.add_argument("--bf16", action="store_true")


def parse_command(argv: Sequence[str], defaults: Sequence[str] = ()) -> argparse.Namespace:
    """Parses one benchmark command (``defaults`` are global options placed before it)."""
    parser = build_parser()
    try:
        ns = parser.parse_args(list(defaults) + list(argv))
    except SystemExit as e:
        raise BenchmarkError(f"cannot parse {' '.join(argv)!r}") from e
    if ns.subcommand is None:
        raise BenchmarkError(f"no subcommand in {' '.join(argv)!r} (expected conv, matmul, layernorm, sdpa, pointwise)")
    if ns.iter < 1:
        raise BenchmarkError("--iter must be >= 1")
    if ns.warmup < 0:
        raise BenchmarkError("--warmup must be >= 0")
    return ns


def read_suite(path: str) -> list[tuple[str, list[str] | None]]:
    """(line, argv) per command of a suite file; argv is None for a [SKIP] line."""
    rows: list[tuple[str, list[str] | None]] = []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if line.startswith("[SKIP]"):
                rows.append((line[len("[SKIP]") :].strip(), None))
                continue
            rows.append((line, shlex.split(line)))
    return rows


# --------------------------------------------------------------------------- problems
@dataclass
class Problem:
    name: str
    graph: Any
    pack: dict
    output: np.ndarray
    flops: float
    torch_builder: Callable[[Any], Callable[[], Any]] | None = None  # torch module -> zero-arg runner
    notes: list[str] = field(default_factory=list)


def _dtype(name: str):
    import fusilli as fs

    return {"f32": fs.DataType.FLOAT, "f16": fs.DataType.HALF, "bf16": fs.DataType.BFLOAT16}[name]


def _fill(arr: np.ndarray, rng: np.random.Generator, scale: float = 1.0) -> np.ndarray:
    arr[...] = (rng.standard_normal(arr.shape, dtype=np.float32) * scale).astype(arr.dtype)
    return arr


def _to_torch(torch, arr: np.ndarray):
    import ml_dtypes

    if arr.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(arr.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(arr)


def _require_method(name: str, what: str) -> None:
    import fusilli as fs

    if not hasattr(fs.Graph, name):
        raise BenchmarkError(
            f"{what} needs Graph.{name}(), which this fusilli build does not have (the op is not implemented yet)"
        )


def _conv_problem(ns: argparse.Namespace) -> Problem:
    import fusilli as fs

    if ns.mode != 1 and ns.relu:
        raise BenchmarkError("conv: --relu applies to -F 1 (fprop) only")
    sd = ns.spatial_dim
    for flag in ("in_layout", "fil_layout", "out_layout"):
        if len(getattr(ns, flag)) != sd + 2:
            raise BenchmarkError(f"conv: --{flag} {getattr(ns, flag)} does not have {sd + 2} letters")
    if sd == 3:
        missing = [f for f in ("in_d", "fil_d", "conv_stride_d", "pad_d", "dilation_d") if getattr(ns, f) is None]
        if missing:
            raise BenchmarkError("conv: --spatial_dim 3 needs " + ", ".join("--" + m for m in missing))
    g_ = ns.group_count
    if ns.in_channels % g_ or ns.out_channels % g_:
        raise BenchmarkError("conv: -c and -k must be divisible by -g")
    dt = "f16" if ns.fp16 else "bf16" if ns.bf16 else "f32"
    spatial_in = ([ns.in_d] if sd == 3 else []) + [ns.in_h, ns.in_w]
    spatial_fil = ([ns.fil_d] if sd == 3 else []) + [ns.fil_h, ns.fil_w]
    stride = ([ns.conv_stride_d] if sd == 3 else []) + [ns.conv_stride_h, ns.conv_stride_w]
    pad = ([ns.pad_d] if sd == 3 else []) + [ns.pad_h, ns.pad_w]
    dil = ([ns.dilation_d] if sd == 3 else []) + [ns.dilation_h, ns.dilation_w]
    n, c, k = ns.batchsize, ns.in_channels, ns.out_channels
    x_dim = [n, c] + spatial_in
    w_dim = [k, c // g_] + spatial_fil
    out_sp = [
        (i + 2 * p - d * (f - 1) - 1) // s + 1 for i, p, d, f, s in zip(spatial_in, pad, dil, spatial_fil, stride)
    ]
    if any(o <= 0 for o in out_sp):
        raise BenchmarkError("conv: the filter is larger than the padded input")
    y_dim = [n, k] + out_sp
    kind = {1: "fprop", 2: "dgrad", 4: "wgrad"}[ns.mode]
    name = (
        f"benchmark_conv_{kind}_n{n}_c{c}_{f'd{ns.in_d}_' if sd == 3 else ''}h{ns.in_h}_w{ns.in_w}_k{k}_"
        f"y{ns.fil_h}_x{ns.fil_w}_u{stride[-2]}_v{stride[-1]}_p{pad[-2]}_q{pad[-1]}_l{dil[-2]}_j{dil[-1]}_g{g_}_"
        f"S{sd}_I{ns.in_layout}_O{ns.out_layout}_F{ns.fil_layout}_bias{int(ns.bias)}_relu{int(ns.relu)}_{dt}"
    )
    g = fs.Graph(
        name=name, io_data_type=_dtype(dt), intermediate_data_type=_dtype(dt), compute_data_type=fs.DataType.FLOAT
    )
    x_strides = fs.strides(x_dim, ns.in_layout.upper())
    w_strides = fs.strides(w_dim, ns.fil_layout.upper())
    y_strides = fs.strides(y_dim, ns.out_layout.upper())
    conv_attrs = {"padding": pad, "stride": stride, "dilation": dil}
    rng = np.random.default_rng(0)
    flops = 2.0 * n * k * math.prod(out_sp) * (c // g_) * math.prod(spatial_fil)
    if ns.mode == 1:
        x = g.tensor("x", x_dim, x_strides)
        w = g.tensor("w", w_dim, w_strides)
        y = g.conv_fprop(x, w, **conv_attrs, name="conv")
        b = None
        if ns.bias:
            b_dim = [1, k] + [1] * sd
            b = g.tensor("b", b_dim, fs.strides(b_dim, ns.out_layout.upper()))
            y = g.add(y, b, name="bias")
        if ns.relu:
            y = g.relu(y, name="relu")
        y.set_output(True).set_name("y").set_dim(y_dim).set_stride(y_strides)
        g.validate()
        xa, wa = _fill(fs.empty(x), rng), _fill(fs.empty(w), rng, 1.0 / math.sqrt(c * math.prod(spatial_fil)))
        out = fs.empty(y)
        pack = {x: xa, w: wa, y: out}
        ba = None
        if b is not None:
            ba = _fill(fs.empty(b), rng)
            pack[b] = ba

        def torch_builder(torch):
            F = torch.nn.functional
            conv = F.conv2d if sd == 2 else F.conv3d
            tx, tw = _to_torch(torch, xa), _to_torch(torch, wa)
            tb = _to_torch(torch, ba).reshape(k).contiguous() if ba is not None else None

            def run():
                result = conv(tx, tw, tb, stride, pad, dil, g_)
                return torch.relu(result) if ns.relu else result

            return run

        return Problem(name, g, pack, out, flops, torch_builder)

    # dgrad (-F 2) and wgrad (-F 4): the gradient of the forward conv above; with
    # --bias also the bias gradient, DY summed to [1, K, 1, ...], as upstream's driver.
    dy = g.tensor("dy", y_dim, y_strides)
    if ns.mode == 2:
        w = g.tensor("w", w_dim, w_strides)
        grad = g.conv_dgrad(dy, w, **conv_attrs, name="dgrad").set_dim(x_dim).set_stride(x_strides).set_name("dx")
        other, other_scale = w, 1.0 / math.sqrt(c * math.prod(spatial_fil))
    else:
        x = g.tensor("x", x_dim, x_strides)
        grad = g.conv_wgrad(dy, x, **conv_attrs, name="wgrad").set_dim(w_dim).set_stride(w_strides).set_name("dw")
        other, other_scale = x, 1.0
    grad.set_output(True)
    db = None
    if ns.bias:
        db_dim = [1, k] + [1] * sd
        db = g.reduction(dy, mode=fs.ReductionMode.ADD, name="bias_grad")
        db.set_dim(db_dim).set_stride(fs.strides(db_dim, ns.out_layout.upper())).set_name("db").set_output(True)
    g.validate()
    dya, oa = _fill(fs.empty(dy), rng), _fill(fs.empty(other), rng, other_scale)
    out = fs.empty(grad)
    pack = {dy: dya, other: oa, grad: out}
    if db is not None:
        pack[db] = fs.empty(db)

    def torch_grad_builder(torch):
        grad_fns = torch.nn.grad
        tdy, to = _to_torch(torch, dya), _to_torch(torch, oa)

        def run():
            if ns.mode == 2:
                fn = grad_fns.conv2d_input if sd == 2 else grad_fns.conv3d_input
                result = fn(x_dim, to, tdy, stride, pad, dil, g_)
            else:
                fn = grad_fns.conv2d_weight if sd == 2 else grad_fns.conv3d_weight
                result = fn(to, w_dim, tdy, stride, pad, dil, g_)
            if ns.bias:
                tdy.sum(dim=[0, *range(2, 2 + sd)], keepdim=True)
            return result

        return run

    return Problem(name, g, pack, out, flops, torch_grad_builder)


def _matmul_problem(ns: argparse.Namespace) -> Problem:
    import fusilli as fs

    if ns.bias and ns.bias_type is None:
        ns.bias_type = ns.out_type
    B, M, N, K = ns.b, ns.m, ns.n, ns.k
    batch = [B] if B > 1 else []

    def dims_strides(rows: int, cols: int, trans: bool) -> tuple[list[int], list[int]]:
        dim = batch + [rows, cols]
        if not trans:
            return dim, fs.strides(dim)
        st = [1, rows]
        return dim, ([rows * cols] if batch else []) + st

    a_dim, a_st = dims_strides(M, K, ns.transA)
    b_dim, b_st = dims_strides(K, N, ns.transB)
    name = (
        f"benchmark_matmul_b{B}_m{M}_n{N}_k{K}_transA{int(ns.transA)}_transB{int(ns.transB)}_bias{int(ns.bias)}_"
        f"act{ns.activation}_atype{ns.a_type}_btype{ns.b_type}_outtype{ns.out_type}"
    )
    g = fs.Graph(
        name=name,
        io_data_type=_dtype(ns.out_type),
        intermediate_data_type=_dtype(ns.out_type),
        compute_data_type=fs.DataType.FLOAT,
    )
    a = g.tensor("a", a_dim, a_st, _dtype(ns.a_type))
    bt = g.tensor("b", b_dim, b_st, _dtype(ns.b_type))
    c = g.matmul(a, bt, name="matmul")
    bias = None
    if ns.bias:
        c.set_data_type(_dtype(ns.bias_type))
        bias_dim = [1] * len(batch) + [1, N]
        bias = g.tensor("bias", bias_dim, fs.strides(bias_dim), _dtype(ns.bias_type))
        c = g.add(c, bias, name="bias_add")
    if ns.activation != "none":
        _require_method(ns.activation, f"matmul --activation {ns.activation}")
        c = getattr(g, ns.activation)(c, name="act")
    c.set_output(True).set_name("c").set_data_type(_dtype(ns.out_type))
    g.validate()
    rng = np.random.default_rng(0)
    aa, ba = _fill(fs.empty(a), rng), _fill(fs.empty(bt), rng, 1.0 / math.sqrt(K))
    ca = fs.empty(c)
    pack = {a: aa, bt: ba, c: ca}
    biasa = None
    if bias is not None:
        biasa = _fill(fs.empty(bias), rng)
        pack[bias] = biasa
    flops = 2.0 * B * M * N * K

    def torch_builder(torch):
        F = torch.nn.functional
        ta, tb = _to_torch(torch, aa), _to_torch(torch, ba)
        tbias = _to_torch(torch, biasa) if biasa is not None else None
        act = {
            "none": None,
            "relu": torch.relu,
            "gelu": F.gelu,
            "gelu_approx_tanh": lambda t: F.gelu(t, approximate="tanh"),
        }[ns.activation]

        def run():
            out = torch.addmm(tbias, ta, tb) if (tbias is not None and not batch) else torch.matmul(ta, tb)
            if tbias is not None and batch:
                out = out + tbias
            return act(out) if act else out

        return run

    return Problem(name, g, pack, ca, flops, torch_builder)


def _pointwise_problem(ns: argparse.Namespace) -> Problem:
    import fusilli as fs

    N = ns.elements
    name = f"benchmark_pointwise_chain_n{N}_{ns.type}"
    dt = _dtype(ns.type)
    g = fs.Graph(name=name, io_data_type=dt, intermediate_data_type=dt, compute_data_type=fs.DataType.FLOAT)
    x, a, b = (g.tensor(t, [N], [1]) for t in ("x", "a", "b"))
    half = g.scalar(0.5, dt, name="half")
    t = g.mul(x, a, name="mul_a")
    t = g.add(t, b, name="add_b")
    t = g.relu(t, name="relu")
    t = g.mul(t, half, name="mul_half")
    y = g.add(t, x, name="add_x").set_output(True).set_name("y")
    g.validate()
    rng = np.random.default_rng(0)
    arrs = {t_: _fill(fs.empty(t_), rng) for t_ in (x, a, b)}
    ya = fs.empty(y)
    pack = {**arrs, y: ya}

    def torch_builder(torch):
        tx, ta, tb = (_to_torch(torch, arrs[t_]) for t_ in (x, a, b))

        def run():
            return torch.relu(tx * ta + tb) * 0.5 + tx

        return run

    return Problem(name, g, pack, ya, 5.0 * N, torch_builder)


def _layernorm_problem(ns: argparse.Namespace) -> Problem:
    import fusilli as fs

    _require_method("layernorm", "the layernorm subcommand")
    dims = ns.input
    if not 2 <= len(dims) <= 5:
        raise BenchmarkError("layernorm: -X needs rank 2 to 5")
    layout = (ns.layout or ("NC", "NCH", "NCHW", "NCDHW")[len(dims) - 2]).upper()
    dt = _dtype(ns.type)
    name = f"benchmark_layernorm_{'x'.join(map(str, dims))}_{layout}_affine{int(ns.elementwise_affine)}_{ns.type}"
    g = fs.Graph(name=name, io_data_type=dt, intermediate_data_type=dt, compute_data_type=fs.DataType.FLOAT)
    x = g.tensor("x", dims, fs.strides(dims, layout))
    norm_dims = [1] + dims[1:]
    scale = bias = None
    if ns.elementwise_affine:
        scale = g.tensor("scale", norm_dims, fs.strides(norm_dims, layout))
        bias = g.tensor("bias", norm_dims, fs.strides(norm_dims, layout))
    y, stats = _call_layernorm(g, x, scale, bias, ns.eps)
    y.set_output(True).set_name("y")
    for i, t in enumerate(stats):  # training forward (-F 1): mean and inverse variance are outputs too
        t.set_output(True).set_name(("mean", "inv_variance")[i] if i < 2 else f"stat{i}")
    g.validate()
    rng = np.random.default_rng(0)
    xa = _fill(fs.empty(x), rng)
    ya = fs.empty(y)
    pack = {x: xa, y: ya}
    for t in stats:
        pack[t] = fs.empty(t)
    sa = ba = None
    if scale is not None and bias is not None:  # both or neither (elementwise affine)
        sa, ba = _fill(fs.empty(scale), rng), _fill(fs.empty(bias), rng)
        pack[scale], pack[bias] = sa, ba
    flops = 8.0 * math.prod(dims)

    def torch_builder(torch):
        tx = _to_torch(torch, xa)
        ts = _to_torch(torch, sa).reshape(dims[1:]) if sa is not None else None
        tb = _to_torch(torch, ba).reshape(dims[1:]) if ba is not None else None

        def run():  # training forward, like fusilli's: output, mean and reciprocal std
            return torch.native_layer_norm(tx, dims[1:], ts, tb, ns.eps)[0]

        return run

    return Problem(name, g, pack, ya, flops, torch_builder)


def _call_layernorm(g, x, scale, bias, eps):
    """Graph.layernorm in the training-forward phase (upstream's -F 1): (Y, [stat outputs])."""
    from fusilli.ops.norm import NormPhase

    out = g.layernorm(x, scale, bias, epsilon=eps, phase=NormPhase.TRAINING, name="layernorm")
    if isinstance(out, (tuple, list)):
        return out[0], [t for t in out[1:] if t is not None]
    return out, []


def _sdpa_problem(ns: argparse.Namespace) -> Problem:
    import fusilli as fs

    _require_method("sdpa", "the sdpa subcommand")
    if ns.causal and ns.mask:
        raise BenchmarkError("sdpa: --causal excludes --mask")
    if ns.heads_q != ns.heads_kv and not ns.gqa:
        raise BenchmarkError("sdpa: --heads_q != --heads_kv needs --gqa")
    if ns.heads_q % ns.heads_kv:
        raise BenchmarkError("sdpa: --heads_q must be a multiple of --heads_kv")
    if not 0.0 <= ns.dropout <= 1.0:
        raise BenchmarkError("sdpa: --dropout must be in [0, 1]")
    if ns.dropout:
        raise BenchmarkError("sdpa: dropout is not supported by this benchmark (results would be random)")
    B, Hq, Hkv, Sq, Skv, D = ns.batch, ns.heads_q, ns.heads_kv, ns.seq_q, ns.seq_kv, ns.head_dim
    dt = _dtype(ns.type)
    name = (
        f"benchmark_sdpa_b{B}_hq{Hq}_hkv{Hkv}_sq{Sq}_skv{Skv}_d{D}_causal{int(ns.causal)}_mask{int(ns.mask)}_"
        f"scale{ns.scale}_{ns.type}"
    )
    g = fs.Graph(name=name, io_data_type=dt, intermediate_data_type=dt, compute_data_type=fs.DataType.FLOAT)
    q = g.tensor("q", [B, Hq, Sq, D], fs.strides([B, Hq, Sq, D]))
    k = g.tensor("k", [B, Hkv, Skv, D], fs.strides([B, Hkv, Skv, D]))
    v = g.tensor("v", [B, Hkv, Skv, D], fs.strides([B, Hkv, Skv, D]))
    mask = g.tensor("mask", [B, 1, Sq, Skv], fs.strides([B, 1, Sq, Skv])) if ns.mask else None
    o = _call_sdpa(g, q, k, v, mask, ns)
    o.set_output(True).set_name("o")
    g.validate()
    rng = np.random.default_rng(0)
    qa, ka, va = (_fill(fs.empty(t), rng) for t in (q, k, v))
    oa = fs.empty(o)
    pack = {q: qa, k: ka, v: va, o: oa}
    ma = None
    if mask is not None:
        ma = _fill(fs.empty(mask), rng)
        pack[mask] = ma
    flops = 4.0 * B * Hq * Sq * Skv * D * (0.5 if ns.causal else 1.0)

    def torch_builder(torch):
        F = torch.nn.functional
        tq, tk, tv = (_to_torch(torch, a) for a in (qa, ka, va))
        tm = _to_torch(torch, ma) if ma is not None else None
        extra = {"enable_gqa": True} if Hq != Hkv else {}

        def run():
            return F.scaled_dot_product_attention(
                tq, tk, tv, attn_mask=tm, is_causal=ns.causal, scale=ns.scale, **extra
            )

        return run

    return Problem(name, g, pack, oa, flops, torch_builder)


def _call_sdpa(g, q, k, v, mask, ns):
    import inspect

    params = inspect.signature(g.sdpa).parameters
    kwargs: dict[str, Any] = {}
    options = {
        "causal": ns.causal,
        "is_causal": ns.causal,
        "use_causal_mask": ns.causal,
        "scale": ns.scale,
        "attn_scale": ns.scale,
        "mask": mask,
        "attn_mask": mask,
        "enable_gqa": ns.heads_q != ns.heads_kv,
        "name": "sdpa",
    }
    for key, value in options.items():
        if key in params and (value is not None or key == "name"):
            kwargs[key] = value
    if ns.causal and not any(k_ in kwargs for k_ in ("causal", "is_causal", "use_causal_mask")):
        raise BenchmarkError("sdpa: this fusilli build's Graph.sdpa has no causal option")
    if mask is not None and not any(k_ in kwargs for k_ in ("mask", "attn_mask")):
        raise BenchmarkError("sdpa: this fusilli build's Graph.sdpa has no mask option")
    out = g.sdpa(q, k, v, **kwargs)
    if isinstance(out, (tuple, list)):
        for extra in out[1:]:
            if extra is not None and hasattr(extra, "set_output"):
                extra.set_output(False)
        out = out[0]
    return out


PROBLEMS = {
    "conv": _conv_problem,
    "matmul": _matmul_problem,
    "layernorm": _layernorm_problem,
    "sdpa": _sdpa_problem,
    "pointwise": _pointwise_problem,
}


# --------------------------------------------------------------------------- timing
def _import_torch():
    try:
        import torch
    except ImportError:
        raise BenchmarkError(
            "--compare torch needs PyTorch, which is not installed; install the optional extra: pip install '.[bench]'"
        ) from None
    return torch


def _stats(times_s: list[float]) -> dict[str, float]:
    ms = [t * 1e3 for t in times_s]
    return {"min": min(ms), "median": statistics.median(ms), "max": max(ms)}


def _timed_block(fn: Callable[[], Any], n: int, out: list[float]) -> None:
    clock = time.perf_counter
    for _ in range(n):
        t0 = clock()
        fn()
        out.append(clock() - t0)


def run_problem(ns: argparse.Namespace, label: str) -> dict[str, Any]:
    import fusilli as fs

    row: dict[str, Any] = {"command": label, "subcommand": ns.subcommand, "status": "ok", "iter": ns.iter}
    # --Xiree-compile flags apply to this row only: restore the variable afterwards
    # so later rows of a suite do not inherit them.
    saved_extra = os.environ.get("FUSILLI_EXTRA_COMPILER_FLAGS")
    if ns.xiree:
        extra = saved_extra or ""
        os.environ["FUSILLI_EXTRA_COMPILER_FLAGS"] = (extra + " " + " ".join(shlex.quote(f) for f in ns.xiree)).strip()
    try:
        torch = _import_torch() if ns.compare == "torch" else None
        problem = PROBLEMS[ns.subcommand](ns)
        row["graph"] = problem.name
        handle = (
            fs.Handle(ns.backend, device=ns.device, arch=ns.arch) if ns.backend == "amdgpu" else fs.Handle(ns.backend)
        )
        t0 = time.perf_counter()
        problem.graph.compile(handle)
        row["compile_ms"] = (time.perf_counter() - t0) * 1e3
        stats = problem.graph.compile_stats
        row["dispatch_count"] = stats.dispatch_count
        if ns.dump:
            _dump(problem, ns, handle)
        g, pack = problem.graph, problem.pack

        def run_fusilli():
            g.execute(pack)

        runners = [("fusilli", run_fusilli)]
        if torch is not None:
            if ns.backend != "cpu":
                raise BenchmarkError("--compare torch times PyTorch on the CPU; use it with --backend cpu")
            if problem.torch_builder is None:
                raise BenchmarkError(f"--compare torch: {problem.name} has no PyTorch counterpart")
            with torch.inference_mode():
                torch_run = problem.torch_builder(torch)
                runners.append(("torch", torch_run))
        times: dict[str, list[float]] = {name: [] for name, _ in runners}
        ctx = torch.inference_mode() if torch is not None else _null()
        with ctx:
            for _, fn in runners:
                _timed_block(fn, ns.warmup, [])
            # Alternate in blocks (not call by call), swapping who goes first each round.
            rounds = min(ns.iter, 5) if len(runners) > 1 else 1
            per_round = [ns.iter // rounds + (1 if r < ns.iter % rounds else 0) for r in range(rounds)]
            for r, n in enumerate(per_round):
                order = runners if r % 2 == 0 else runners[::-1]
                for name, fn in order:
                    if len(runners) > 1:
                        fn()  # untimed: absorbs the switch from the other library
                    _timed_block(fn, n, times[name])
            if torch is not None:
                expected = torch_run()
                row["max_abs_err"] = _max_abs_err(torch, problem.output, expected)
        f = _stats(times["fusilli"])
        row.update({f"fusilli_{k}_ms": v for k, v in f.items()})
        row["gflops"] = problem.flops / (f["median"] * 1e-3) / 1e9
        row["pct_peak"] = 100.0 * row["gflops"] / ns.peak_gflops
        if torch is not None:
            t = _stats(times["torch"])
            row.update({f"torch_{k}_ms": v for k, v in t.items()})
            row["ratio"] = t["median"] / f["median"]
    except BenchmarkError as e:
        row.update(status="error", error=str(e))
    except fs.FusilliError as e:
        row.update(status="error", error=f"{type(e).__name__}: {e}")
    except Exception as e:  # keep a suite going past one broken row
        row.update(status="error", error=f"{type(e).__name__}: {e}")
    finally:
        if saved_extra is None:
            os.environ.pop("FUSILLI_EXTRA_COMPILER_FLAGS", None)
        else:
            os.environ["FUSILLI_EXTRA_COMPILER_FLAGS"] = saved_extra
    return row


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _max_abs_err(torch, fusilli_out: np.ndarray, expected) -> float:
    exp = expected.detach().to(torch.float32).contiguous().numpy()
    got = fusilli_out.astype(np.float32)
    if got.shape != exp.shape:
        return float("nan")
    return float(np.max(np.abs(got - exp))) if got.size else 0.0


def _dump(problem: Problem, ns: argparse.Namespace, handle) -> None:
    from fusilli.backend import Target

    g = problem.graph
    out = sys.stdout
    print(f"=== {problem.name}", file=out)
    target = Target.resolve(handle.backend, handle.arch, workloads=g.workloads())
    print("compiler flags: " + " ".join(target.flags), file=out)
    stats = g.compile_stats
    print(
        f"dispatches: {stats.dispatch_count}  executables: {stats.executable_count}  "
        f"transient bytes: {stats.transient_memory_bytes}  workspace: {g.workspace_size}",
        file=out,
    )
    print("--- optimized IR (after fusilli passes)", file=out)
    print(g.mlir("optimized"), file=out)
    if ns.dump_stage:
        print(f"--- IREE {ns.dump_stage} IR", file=out)
        print(g.mlir(ns.dump_stage, backend=handle.backend, arch=handle.arch), file=out)
    out.flush()


# --------------------------------------------------------------------------- output
COLUMNS = (
    "command",
    "status",
    "iter",
    "fusilli_min_ms",
    "fusilli_median_ms",
    "fusilli_max_ms",
    "torch_min_ms",
    "torch_median_ms",
    "torch_max_ms",
    "ratio",
    "gflops",
    "pct_peak",
    "dispatch_count",
    "compile_ms",
    "max_abs_err",
    "graph",
    "error",
)


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        return f"{v:.{digits}g}" if abs(v) < 1e-3 and v != 0 else f"{v:.{digits}f}"
    return str(v)


def format_rows(rows: list[dict[str, Any]], fmt: str, peak: float = PEAK_GFLOPS_DEFAULT) -> str:
    if fmt == "json":
        return json.dumps({"peak_gflops": peak, "rows": rows}, indent=2) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(COLUMNS), extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in COLUMNS})
        return buf.getvalue()
    has_torch = any("torch_median_ms" in r for r in rows)
    head = ["benchmark", "fusilli ms (min/med/max)"]
    if has_torch:
        head += ["PyTorch ms (med)", "ratio (torch/fusilli)"]
    head += ["GFLOP/s", f"% of {peak:g} GFLOP/s", "dispatches"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        label = r["command"]
        if r["status"] != "ok":
            cells = [label, r["status"] + (": " + r.get("error", "") if r.get("error") else "")]
            cells += [""] * (len(head) - len(cells))
        else:
            cells = [label, f"{r['fusilli_min_ms']:.3f} / {r['fusilli_median_ms']:.3f} / {r['fusilli_max_ms']:.3f}"]
            if has_torch:
                cells += [_fmt(r.get("torch_median_ms")), _fmt(r.get("ratio"), 2)]
            cells += [f"{r['gflops']:.1f}", f"{r['pct_peak']:.1f}", str(r["dispatch_count"])]
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- main
def _global_prefix(argv: Sequence[str]) -> tuple[list[str], str | None, bool | None]:
    """Splits a --suite invocation into (global option args, suite path, progress)."""
    ns = build_parser(defaults=False).parse_args(list(argv))
    if ns.subcommand is not None:
        raise BenchmarkError("--suite takes no subcommand on the command line (the file has one per line)")
    prefix: list[str] = []
    for key, value in vars(ns).items():
        if key in ("suite", "progress", "subcommand"):
            continue
        flag = (
            "--" + key.replace("_", "-")
            if key not in ("iter", "warmup", "device", "backend", "arch", "compare", "label")
            else "--" + key
        )
        if key == "xiree":
            for v in value:
                prefix.append(f"--Xiree-compile={v}")
        elif isinstance(value, bool):
            if value:
                prefix.append(flag)
        elif value is not None:
            prefix += [flag, str(value)]
    return prefix, ns.suite, ns.progress


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if "--suite" in argv or any(a.startswith("--suite=") for a in argv):
            prefix, suite, progress = _global_prefix(argv)
            if suite is None:
                raise BenchmarkError("--suite needs a suite file")
            commands = read_suite(suite)
            fmt = parse_command(["pointwise", "-N", "1"], prefix)
            progress = True if progress is None else progress
        else:
            ns = parse_command(argv)
            commands = [(ns.label or " ".join(argv), argv)]
            prefix, fmt, progress = [], ns, bool(ns.progress)
    except BenchmarkError as e:
        print(f"fusilli-benchmark: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"fusilli-benchmark: error: cannot read suite: {e}", file=sys.stderr)
        return 2
    rows = []
    start = time.perf_counter()
    for i, (line, args) in enumerate(commands):
        if progress:
            print(f"[{i + 1}/{len(commands)}] {time.perf_counter() - start:6.1f}s  {line}", file=sys.stderr, flush=True)
        if args is None:
            rows.append({"command": line, "status": "skipped"})
            continue
        try:
            ns = parse_command(args, prefix)
        except BenchmarkError as e:
            rows.append({"command": line, "status": "error", "error": str(e)})
            continue
        rows.append(run_problem(ns, ns.label or line))
        if progress and rows[-1]["status"] == "error":
            print(f"    error: {rows[-1]['error']}", file=sys.stderr, flush=True)
    if progress:
        print(f"done: {len(rows)} row(s) in {time.perf_counter() - start:.1f}s", file=sys.stderr, flush=True)
    sys.stdout.write(format_rows(rows, fmt.output_format, fmt.peak_gflops))
    sys.stdout.flush()
    return 1 if any(r["status"] == "error" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
