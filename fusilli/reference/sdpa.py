"""Reference scaled dot-product attention (float64, torch semantics)."""

from __future__ import annotations

import math

import numpy as np

from fusilli.reference import register_kernel


@register_kernel("sdpa")
def sdpa(node, args):
    q, k, v = (args[s].astype(np.float64) for s in ("Q", "K", "V"))
    hq = q.shape[1]
    # GQA: query head h reads K/V head h // (Hq / Hkv) (torch's repeat_interleave).
    k = np.repeat(k, hq // k.shape[1], axis=1)
    v = np.repeat(v, hq // v.shape[1], axis=1)
    scale = node.attrs.scale if node.attrs.scale is not None else 1.0 / math.sqrt(q.shape[-1])
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    sq, skv = scores.shape[-2:]
    if node.attrs.is_causal:
        scores = np.where(np.tril(np.ones((sq, skv), dtype=bool)), scores, -np.inf)
    mask = args.get("MASK")
    if mask is not None:
        scores = np.where(mask, scores, -np.inf) if mask.dtype == np.bool_ else scores + mask.astype(np.float64)
    # A row whose every score is -inf (all keys masked) attends to nothing: its
    # output is 0, as torch 2.5+ computes it (its "safe softmax"), not NaN.
    row_max = scores.max(axis=-1, keepdims=True)
    fully_masked = row_max == -np.inf
    p = np.exp(scores - np.where(fully_masked, 0.0, row_max))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(fully_masked, 0.0, p / p.sum(axis=-1, keepdims=True))
    return {"O": np.matmul(p, v)}
