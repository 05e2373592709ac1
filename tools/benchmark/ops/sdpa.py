"""Scaled dot-product attention, optional mask, causal, grouped-query heads."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

import fusilli as fs

from ..problem import TYPES, BenchmarkError, Problem, fill, graph, to_torch

NAME = "sdpa"
ALIASES: tuple[str, ...] = ()
HELP = "scaled dot-product attention"


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--batch", "-B", type=int, required=True)
    s.add_argument("--heads_q", type=int, required=True)
    s.add_argument("--heads_kv", type=int, required=True)
    s.add_argument("--seq_q", type=int, required=True)
    s.add_argument("--seq_kv", type=int, required=True)
    s.add_argument("--head_dim", "-d", type=int, required=True)
    s.add_argument("--type", "-t", required=True, choices=TYPES)
    s.add_argument("--scale", "-s", type=float, default=None)
    s.add_argument("--dropout", "-p", type=float, default=0.0)
    s.add_argument("--mask", action="store_true")
    s.add_argument("--causal", action="store_true")
    s.add_argument("--gqa", action="store_true")


def build(args: argparse.Namespace) -> Problem:
    if args.causal and args.mask:
        raise BenchmarkError("sdpa: --causal excludes --mask")
    if args.heads_q != args.heads_kv and not args.gqa:
        raise BenchmarkError("sdpa: --heads_q != --heads_kv needs --gqa")
    if args.dropout:
        raise BenchmarkError("sdpa: dropout is not supported by this benchmark (results would be random)")
    B, Hq, Hkv, Sq, Skv, D = args.batch, args.heads_q, args.heads_kv, args.seq_q, args.seq_kv, args.head_dim
    name = (
        f"benchmark_sdpa_b{B}_hq{Hq}_hkv{Hkv}_sq{Sq}_skv{Skv}_d{D}_causal{int(args.causal)}_mask{int(args.mask)}_"
        f"scale{args.scale}_{args.type}"
    )
    g = graph(name, args.type)
    q = g.tensor("q", [B, Hq, Sq, D], fs.strides([B, Hq, Sq, D]))
    k = g.tensor("k", [B, Hkv, Skv, D], fs.strides([B, Hkv, Skv, D]))
    v = g.tensor("v", [B, Hkv, Skv, D], fs.strides([B, Hkv, Skv, D]))
    mask = g.tensor("mask", [B, 1, Sq, Skv], fs.strides([B, 1, Sq, Skv])) if args.mask else None
    try:
        o = g.sdpa(q, k, v, mask=mask, is_causal=args.causal, scale=args.scale, enable_gqa=Hq != Hkv, name="sdpa")
        o.set_output(True).set_name("o")
        g.validate()
    except fs.FusilliError as e:  # e.g. heads_q not a multiple of heads_kv: fusilli's own check
        raise BenchmarkError(f"sdpa: {e}") from None
    rng = np.random.default_rng(0)
    qa, ka, va = (fill(fs.empty(t), rng) for t in (q, k, v))
    oa = fs.empty(o)
    pack = {q: qa, k: ka, v: va, o: oa}
    ma = None
    if mask is not None:
        ma = fill(fs.empty(mask), rng)
        pack[mask] = ma
    flops = 4.0 * B * Hq * Sq * Skv * D * (0.5 if args.causal else 1.0)

    def torch_builder(torch: Any):
        F = torch.nn.functional
        tq, tk, tv = (to_torch(torch, a) for a in (qa, ka, va))
        tm = to_torch(torch, ma) if ma is not None else None
        extra = {"enable_gqa": True} if Hq != Hkv else {}

        def run():
            return F.scaled_dot_product_attention(
                tq, tk, tv, attn_mask=tm, is_causal=args.causal, scale=args.scale, **extra
            )

        return run

    return Problem(name, g, pack, oa, flops, torch_builder)
