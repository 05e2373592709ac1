"""Convolution: fprop (-F 1), dgrad (-F 2), wgrad (-F 4), with MIOpen's / iree-boo-driver's
flags, so their command lines run verbatim (``convbfp16 -n 16 ... -m conv -t 1``)."""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np

import fusilli as fs

from ..problem import BenchmarkError, Problem, fill, graph, to_torch

NAME = "conv"
# MIOpen's data-type spellings of the command (its driver's first argument).
ALIASES = ("convfp16", "convbfp16")
HELP = "convolution: fprop, dgrad, wgrad (MIOpenDriver / iree-boo-driver flags)"


def add_arguments(c: argparse.ArgumentParser) -> None:
    c.add_argument(
        "--forw", "-F", dest="mode", type=int, required=True, choices=(1, 2, 4), help="1 fprop, 2 dgrad, 4 wgrad"
    )
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
    c.add_argument("--spatial_dim", "-_", type=int, default=2, choices=(2, 3))
    types = c.add_mutually_exclusive_group()
    types.add_argument("--fp16", action="store_true", help="f16 (also the convfp16 command)")
    types.add_argument("--bf16", action="store_true", help="bf16 (also the convbfp16 command)")
    c.add_argument("--bias", "-b", action="store_true", help="add a [1,K,1,1] bias (pointwise ADD)")
    c.add_argument("--relu", action="store_true", help="fusilli extension: relu after the conv (and bias)")
    # Accepted so MIOpen / iree-boo-driver command lines run verbatim.
    c.add_argument(
        "--mode",
        "-m",
        dest="conv_mode",
        default="conv",
        choices=("conv", "trans"),
        help="MIOpen: conv (trans unsupported)",
    )
    c.add_argument("--time", "-t", type=int, default=1, help="MIOpen: print timings (always on here)")
    c.add_argument("--verify", "-V", type=int, default=0, help="MIOpen: verify (use --compare torch here)")
    c.add_argument("--iter", "-i", type=int, default=argparse.SUPPRESS, help="timed iterations (as the global --iter)")


def _io_type(args: argparse.Namespace) -> str:
    if args.fp16 or args.subcommand == "convfp16":
        return "f16"
    if args.bf16 or args.subcommand == "convbfp16":
        return "bf16"
    return "f32"


def build(args: argparse.Namespace) -> Problem:
    if args.conv_mode != "conv":
        raise BenchmarkError("conv: -m trans (transposed convolution) is not supported")
    if args.mode != 1 and args.relu:
        raise BenchmarkError("conv: --relu applies to -F 1 (fprop) only")
    sd = args.spatial_dim
    for flag in ("in_layout", "fil_layout", "out_layout"):
        if len(getattr(args, flag)) != sd + 2:
            raise BenchmarkError(f"conv: --{flag} {getattr(args, flag)} does not have {sd + 2} letters")
    if sd == 3:
        missing = [f for f in ("in_d", "fil_d", "conv_stride_d", "pad_d", "dilation_d") if getattr(args, f) is None]
        if missing:
            raise BenchmarkError("conv: --spatial_dim 3 needs " + ", ".join("--" + m for m in missing))
    groups = args.group_count
    if args.in_channels % groups or args.out_channels % groups:
        raise BenchmarkError("conv: -c and -k must be divisible by -g")

    def spatial(d: str, h: str, w: str) -> list[int]:
        return ([getattr(args, d)] if sd == 3 else []) + [getattr(args, h), getattr(args, w)]

    spatial_in = spatial("in_d", "in_h", "in_w")
    spatial_fil = spatial("fil_d", "fil_h", "fil_w")
    stride = spatial("conv_stride_d", "conv_stride_h", "conv_stride_w")
    pad = spatial("pad_d", "pad_h", "pad_w")
    dil = spatial("dilation_d", "dilation_h", "dilation_w")
    n, c, k = args.batchsize, args.in_channels, args.out_channels
    dt = _io_type(args)
    x_dim = [n, c] + spatial_in
    w_dim = [k, c // groups] + spatial_fil
    kind = {1: "fprop", 2: "dgrad", 4: "wgrad"}[args.mode]
    name = (
        f"benchmark_conv_{kind}_n{n}_c{c}_{f'd{args.in_d}_' if sd == 3 else ''}h{args.in_h}_w{args.in_w}_k{k}_"
        f"y{args.fil_h}_x{args.fil_w}_u{stride[-2]}_v{stride[-1]}_p{pad[-2]}_q{pad[-1]}_l{dil[-2]}_j{dil[-1]}_"
        f"g{groups}_S{sd}_I{args.in_layout}_O{args.out_layout}_F{args.fil_layout}_bias{int(args.bias)}_"
        f"relu{int(args.relu)}_{dt}"
    )
    g = graph(name, dt)
    conv_attrs = {"padding": pad, "stride": stride, "dilation": dil}
    rng = np.random.default_rng(0)
    w_scale = 1.0 / math.sqrt(c * math.prod(spatial_fil))
    if args.mode == 1:
        return _fprop(args, g, name, x_dim, w_dim, conv_attrs, groups, w_scale, rng)

    # dgrad (-F 2) and wgrad (-F 4): the gradient of the forward conv; with --bias also
    # the bias gradient, DY summed to [1, K, 1, ...], as upstream's driver. DY's shape is
    # the forward conv's output: fusilli's own inference gives it.
    y_dim = _forward_output_dim(x_dim, w_dim, conv_attrs)
    dy = g.tensor("dy", y_dim, fs.strides(y_dim, args.out_layout.upper()))
    if args.mode == 2:
        w = g.tensor("w", w_dim, fs.strides(w_dim, args.fil_layout.upper()))
        grad = g.conv_dgrad(dy, w, **conv_attrs, name="dgrad").set_dim(x_dim).set_name("dx")
        grad.set_stride(fs.strides(x_dim, args.in_layout.upper()))
        other, other_scale = w, w_scale
    else:
        x = g.tensor("x", x_dim, fs.strides(x_dim, args.in_layout.upper()))
        grad = g.conv_wgrad(dy, x, **conv_attrs, name="wgrad").set_dim(w_dim).set_name("dw")
        grad.set_stride(fs.strides(w_dim, args.fil_layout.upper()))
        other, other_scale = x, 1.0
    grad.set_output(True)
    db = None
    if args.bias:
        db_dim = [1, k] + [1] * sd
        db = g.reduction(dy, mode=fs.ReductionMode.ADD, name="bias_grad")
        db.set_dim(db_dim).set_stride(fs.strides(db_dim, args.out_layout.upper())).set_name("db").set_output(True)
    g.validate()
    dya, oa = fill(fs.empty(dy), rng), fill(fs.empty(other), rng, other_scale)
    out = fs.empty(grad)
    pack = {dy: dya, other: oa, grad: out}
    if db is not None:
        pack[db] = fs.empty(db)
    flops = 2.0 * math.prod(y_dim) * (c // groups) * math.prod(spatial_fil)

    def torch_grad_builder(torch: Any):
        grad_fns = torch.nn.grad
        tdy, to = to_torch(torch, dya), to_torch(torch, oa)

        def run():
            if args.mode == 2:
                fn = grad_fns.conv2d_input if sd == 2 else grad_fns.conv3d_input
                result = fn(x_dim, to, tdy, stride, pad, dil, groups)
            else:
                fn = grad_fns.conv2d_weight if sd == 2 else grad_fns.conv3d_weight
                result = fn(to, w_dim, tdy, stride, pad, dil, groups)
            if args.bias:
                tdy.sum(dim=[0, *range(2, 2 + sd)], keepdim=True)
            return result

        return run

    return Problem(name, g, pack, out, flops, torch_grad_builder)


def _forward_output_dim(x_dim: list[int], w_dim: list[int], conv_attrs: dict) -> list[int]:
    """The forward conv's output dims, as fusilli infers them (an error for a filter larger than the input)."""
    probe = fs.Graph(name="conv_output_shape")
    y = probe.conv_fprop(probe.tensor("x", x_dim), probe.tensor("w", w_dim), **conv_attrs, name="conv")
    y.set_output(True)
    try:
        probe.validate()
    except fs.FusilliError as e:
        raise BenchmarkError(f"conv: {e}") from None
    return list(y.dim)


def _fprop(args, g, name, x_dim, w_dim, conv_attrs, groups, w_scale, rng) -> Problem:
    sd = args.spatial_dim
    k = args.out_channels
    x = g.tensor("x", x_dim, fs.strides(x_dim, args.in_layout.upper()))
    w = g.tensor("w", w_dim, fs.strides(w_dim, args.fil_layout.upper()))
    y = g.conv_fprop(x, w, **conv_attrs, name="conv")
    b = None
    if args.bias:
        b_dim = [1, k] + [1] * sd
        b = g.tensor("b", b_dim, fs.strides(b_dim, args.out_layout.upper()))
        y = g.add(y, b, name="bias")
    if args.relu:
        y = g.relu(y, name="relu")
    y.set_output(True).set_name("y")
    y_dim = _forward_output_dim(x_dim, w_dim, conv_attrs)
    y.set_dim(y_dim).set_stride(fs.strides(y_dim, args.out_layout.upper()))
    g.validate()
    xa, wa = fill(fs.empty(x), rng), fill(fs.empty(w), rng, w_scale)
    out = fs.empty(y)
    pack = {x: xa, w: wa, y: out}
    ba = None
    if b is not None:
        ba = fill(fs.empty(b), rng)
        pack[b] = ba
    flops = 2.0 * math.prod(y_dim) * (args.in_channels // groups) * math.prod(w_dim[2:])
    stride, pad, dil = conv_attrs["stride"], conv_attrs["padding"], conv_attrs["dilation"]

    def torch_builder(torch: Any):
        F = torch.nn.functional
        conv = F.conv2d if sd == 2 else F.conv3d
        tx, tw = to_torch(torch, xa), to_torch(torch, wa)
        tb = to_torch(torch, ba).reshape(k).contiguous() if ba is not None else None

        def run():
            result = conv(tx, tw, tb, stride, pad, dil, groups)
            return torch.relu(result) if args.relu else result

        return run

    return Problem(name, g, pack, out, flops, torch_builder)
