"""Reference normalization kernels (float64, PyTorch's biased variance)."""

from __future__ import annotations

import numpy as np

from fusilli.reference import register_kernel


def normalize(x: np.ndarray, axes: tuple[int, ...], eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x - mean) / sqrt(var + eps) over ``axes``, with the mean and 1/sqrt(var + eps) (keepdims)."""
    mean = x.mean(axis=axes, keepdims=True)
    inv_std = 1.0 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)
    return (x - mean) * inv_std, mean, inv_std


def _channel(v: np.ndarray, rank: int) -> np.ndarray:
    """A [C] array shaped [1, C, 1, ...] to broadcast against channel dim 1."""
    return v.reshape([1, -1] + [1] * (rank - 2))


def _affine(y: np.ndarray, scale: np.ndarray | None, bias: np.ndarray | None) -> np.ndarray:
    if scale is not None:
        y = y * scale
    if bias is not None:
        y = y + bias
    return y


@register_kernel("batchnorm")
def batchnorm(node, args):
    x = args["X"]
    eps = float(args["EPSILON"][0])
    rank = x.ndim
    scale = _channel(args["SCALE"], rank) if "SCALE" in args else None
    bias = _channel(args["BIAS"], rank) if "BIAS" in args else None
    if node.training:
        y, mean, inv_std = normalize(x, (0, *range(2, rank)), eps)
        return {"Y": _affine(y, scale, bias), "SAVED_MEAN": mean.reshape(-1), "SAVED_INV_VARIANCE": inv_std.reshape(-1)}
    mean, var = _channel(args["MEAN"], rank), _channel(args["VAR"], rank)
    return {"Y": _affine((x - mean) / np.sqrt(var + eps), scale, bias)}


@register_kernel("layernorm")
def layernorm(node, args):
    x = args["X"]
    y, mean, inv_std = normalize(x, tuple(range(1, x.ndim)), float(args["EPSILON"][0]))
    return {"Y": _affine(y, args.get("SCALE"), args.get("BIAS")), "MEAN": mean, "INV_VARIANCE": inv_std}


@register_kernel("rmsnorm")
def rmsnorm(node, args):
    x = args["X"]
    inv_rms = 1.0 / np.sqrt((x * x).mean(axis=tuple(range(1, x.ndim)), keepdims=True) + float(args["EPSILON"][0]))
    return {"Y": _affine(x * inv_rms, args.get("SCALE"), None), "INV_RMS": inv_rms}
