"""Layer normalization, training forward (upstream's -F 1): Y, mean and inverse variance."""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np

import fusilli as fs

from ..problem import TYPES, BenchmarkError, Problem, fill, graph, to_torch

NAME = "layernorm"
ALIASES: tuple[str, ...] = ()
HELP = "layer normalization (training forward)"


def _dims(text: str) -> list[int]:
    try:
        dims = [int(v) for v in text.lower().split("x")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected dims like 4096x768, got {text!r}") from None
    if not dims or any(v <= 0 for v in dims):
        raise argparse.ArgumentTypeError(f"dims must be positive, got {text!r}")
    return dims


def add_arguments(ln: argparse.ArgumentParser) -> None:
    ln.add_argument("--input", "-X", type=_dims, required=True, help="dims, e.g. 4096x768")
    ln.add_argument("--type", "-t", default="f32", choices=TYPES)
    ln.add_argument("--forw", "-F", type=int, default=1, choices=(1,))
    ln.add_argument("--layout", "-l", default=None)
    ln.add_argument("--eps", "-e", type=float, default=1e-5)
    ln.add_argument("--elementwise_affine", action="store_true")


def build(args: argparse.Namespace) -> Problem:
    dims = args.input
    if not 2 <= len(dims) <= 5:
        raise BenchmarkError("layernorm: -X needs rank 2 to 5")
    layout = (args.layout or ("NC", "NCH", "NCHW", "NCDHW")[len(dims) - 2]).upper()
    name = f"benchmark_layernorm_{'x'.join(map(str, dims))}_{layout}_affine{int(args.elementwise_affine)}_{args.type}"
    g = graph(name, args.type)
    x = g.tensor("x", dims, fs.strides(dims, layout))
    norm_dims = [1] + dims[1:]
    scale = bias = None
    if args.elementwise_affine:
        scale = g.tensor("scale", norm_dims, fs.strides(norm_dims, layout))
        bias = g.tensor("bias", norm_dims, fs.strides(norm_dims, layout))
    y, mean, inv_variance = g.layernorm(x, scale, bias, epsilon=args.eps, phase=fs.NormPhase.TRAINING, name="layernorm")
    y.set_output(True).set_name("y")
    stats = [t for t in (mean, inv_variance) if t is not None]
    for t, stat_name in zip(stats, ("mean", "inv_variance")):
        t.set_output(True).set_name(stat_name)
    g.validate()
    rng = np.random.default_rng(0)
    xa = fill(fs.empty(x), rng)
    ya = fs.empty(y)
    pack = {x: xa, y: ya, **{t: fs.empty(t) for t in stats}}
    sa = ba = None
    if scale is not None and bias is not None:
        sa, ba = fill(fs.empty(scale), rng), fill(fs.empty(bias), rng)
        pack[scale], pack[bias] = sa, ba

    def torch_builder(torch: Any):
        tx = to_torch(torch, xa)
        ts = to_torch(torch, sa).reshape(dims[1:]) if sa is not None else None
        tb = to_torch(torch, ba).reshape(dims[1:]) if ba is not None else None

        def run():  # training forward, like fusilli's: output, mean and reciprocal std
            return torch.native_layer_norm(tx, dims[1:], ts, tb, args.eps)[0]

        return run

    return Problem(name, g, pack, ya, 8.0 * math.prod(dims), torch_builder)
