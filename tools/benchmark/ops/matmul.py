"""(Batched) matmul with upstream's flags, optional bias and activation epilogue."""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np

import fusilli as fs

from ..problem import TYPES, Problem, data_type, fill, graph, to_torch

NAME = "matmul"
ALIASES: tuple[str, ...] = ()
HELP = "(batched) matmul, optional bias and activation"
ACTIVATIONS = ("none", "relu", "gelu", "gelu_approx_tanh")


def add_arguments(m: argparse.ArgumentParser) -> None:
    m.add_argument("--m", "-M", type=int, required=True)
    m.add_argument("--n", "-N", type=int, required=True)
    m.add_argument("--k", "-K", type=int, required=True)
    m.add_argument("--b", "-B", type=int, default=1, help="batch (> 1 makes the operands rank 3)")
    m.add_argument("--a_type", default="f32", choices=TYPES)
    m.add_argument("--b_type", default="f32", choices=TYPES)
    m.add_argument("--out_type", default="f32", choices=TYPES)
    m.add_argument("--bias_type", default=None, choices=TYPES)
    m.add_argument("--transA", action="store_true")
    m.add_argument("--transB", action="store_true")
    m.add_argument("--bias", action="store_true", help="add a [1,N] bias (pointwise ADD)")
    m.add_argument(
        "--activation", default="none", choices=ACTIVATIONS, help="fusilli extension: activation after the matmul"
    )


def build(args: argparse.Namespace) -> Problem:
    bias_type = args.bias_type or args.out_type
    B, M, N, K = args.b, args.m, args.n, args.k
    batch = [B] if B > 1 else []

    def dims_strides(rows: int, cols: int, trans: bool) -> tuple[list[int], list[int]]:
        dim = batch + [rows, cols]
        if not trans:
            return dim, fs.strides(dim)
        return dim, ([rows * cols] if batch else []) + [1, rows]

    a_dim, a_st = dims_strides(M, K, args.transA)
    b_dim, b_st = dims_strides(K, N, args.transB)
    name = (
        f"benchmark_matmul_b{B}_m{M}_n{N}_k{K}_transA{int(args.transA)}_transB{int(args.transB)}_"
        f"bias{int(args.bias)}_act{args.activation}_atype{args.a_type}_btype{args.b_type}_outtype{args.out_type}"
    )
    g = graph(name, args.out_type)
    a = g.tensor("a", a_dim, a_st, data_type(args.a_type))
    bt = g.tensor("b", b_dim, b_st, data_type(args.b_type))
    c = g.matmul(a, bt, name="matmul")
    bias = None
    if args.bias:
        c.set_data_type(data_type(bias_type))
        bias_dim = [1] * len(batch) + [1, N]
        bias = g.tensor("bias", bias_dim, fs.strides(bias_dim), data_type(bias_type))
        c = g.add(c, bias, name="bias_add")
    if args.activation != "none":
        c = getattr(g, args.activation)(c, name="act")
    c.set_output(True).set_name("c").set_data_type(data_type(args.out_type))
    g.validate()
    rng = np.random.default_rng(0)
    aa, ba = fill(fs.empty(a), rng), fill(fs.empty(bt), rng, 1.0 / math.sqrt(K))
    ca = fs.empty(c)
    pack = {a: aa, bt: ba, c: ca}
    biasa = None
    if bias is not None:
        biasa = fill(fs.empty(bias), rng)
        pack[bias] = biasa

    def torch_builder(torch: Any):
        F = torch.nn.functional
        ta, tb = to_torch(torch, aa), to_torch(torch, ba)
        tbias = to_torch(torch, biasa) if biasa is not None else None
        # Mixed operand types (f32 x bf16): torch.matmul wants one type, so both operands are
        # promoted to the wider one in the timed call, as fusilli converts inside its kernel.
        common = torch.promote_types(ta.dtype, tb.dtype)
        out_dtype = to_torch(torch, ca[:0]).dtype
        act = {
            "none": None,
            "relu": torch.relu,
            "gelu": F.gelu,
            "gelu_approx_tanh": lambda t: F.gelu(t, approximate="tanh"),
        }[args.activation]

        def run():
            x, y = ta.to(common), tb.to(common)
            out = torch.matmul(x, y) if tbias is None or batch else torch.addmm(tbias.to(common), x, y)
            if tbias is not None and batch:
                out = out + tbias
            out = act(out) if act else out
            return out.to(out_dtype)

        return run

    return Problem(name, g, pack, ca, 2.0 * B * M * N * K, torch_builder)
