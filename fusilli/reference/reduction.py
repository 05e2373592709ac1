"""Reference reduction kernels (keepdim): NumPy, float64 for floats, int64 sums of ints."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fusilli.ops.reduction import ReductionMode
from fusilli.reference import register_kernel


def _acc(x: np.ndarray) -> np.ndarray:
    """Integer and boolean sums/products accumulate in int64, as torch's."""
    return x if x.dtype.kind == "f" else x.astype(np.int64)


MODE_KERNELS: dict[ReductionMode, Callable[[np.ndarray, tuple[int, ...]], np.ndarray]] = {
    ReductionMode.ADD: lambda x, axes: np.sum(_acc(x), axis=axes, keepdims=True),
    ReductionMode.MUL: lambda x, axes: np.prod(_acc(x), axis=axes, keepdims=True),
    ReductionMode.MIN: lambda x, axes: np.min(x, axis=axes, keepdims=True),
    ReductionMode.MAX: lambda x, axes: np.max(x, axis=axes, keepdims=True),
    ReductionMode.AMAX: lambda x, axes: np.max(np.abs(x), axis=axes, keepdims=True),
    ReductionMode.AVG: lambda x, axes: np.mean(x, axis=axes, keepdims=True),
    ReductionMode.NORM1: lambda x, axes: np.sum(np.abs(_acc(x)), axis=axes, keepdims=True),
    ReductionMode.NORM2: lambda x, axes: np.sqrt(np.sum(np.square(x.astype(np.float64)), axis=axes, keepdims=True)),
    ReductionMode.MUL_NO_ZEROS: lambda x, axes: np.prod(np.where(x != 0, _acc(x), 1), axis=axes, keepdims=True),
}


@register_kernel("reduction")
def reduction(node, args):
    axes = tuple(node.reduced_dims())
    return {"Y": MODE_KERNELS[node.attrs.mode](args["X"], axes)}
