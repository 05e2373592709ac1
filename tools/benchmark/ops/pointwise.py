"""fusilli extension: a pointwise chain, relu(x*a+b)*0.5+x, to time fusion of elementwise ops."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

import fusilli as fs

from ..problem import TYPES, Problem, data_type, fill, graph, to_torch

NAME = "pointwise"
ALIASES: tuple[str, ...] = ()
HELP = "fusilli extension: the chain relu(x*a+b)*0.5+x"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--elements", "-N", type=int, required=True, help="element count of x, a and b")
    p.add_argument("--type", "-t", default="f32", choices=TYPES)


def build(args: argparse.Namespace) -> Problem:
    N = args.elements
    name = f"benchmark_pointwise_chain_n{N}_{args.type}"
    g = graph(name, args.type)
    x, a, b = (g.tensor(t, [N], [1]) for t in ("x", "a", "b"))
    half = g.scalar(0.5, data_type(args.type), name="half")
    t = g.add(g.mul(x, a, name="mul_a"), b, name="add_b")
    t = g.mul(g.relu(t, name="relu"), half, name="mul_half")
    y = g.add(t, x, name="add_x").set_output(True).set_name("y")
    g.validate()
    rng = np.random.default_rng(0)
    arrs = {t_: fill(fs.empty(t_), rng) for t_ in (x, a, b)}
    ya = fs.empty(y)

    def torch_builder(torch: Any):
        tx, ta, tb = (to_torch(torch, arrs[t_]) for t_ in (x, a, b))

        def run():
            return torch.relu(tx * ta + tb) * 0.5 + tx

        return run

    return Problem(name, g, {**arrs, y: ya}, ya, 5.0 * N, torch_builder)
