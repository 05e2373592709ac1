"""Reference pointwise kernels: one NumPy function per PointwiseMode."""

from __future__ import annotations

from typing import Callable

import numpy as np

from fusilli.ops.pointwise import INPUT_SLOTS, PointwiseMode
from fusilli.reference import register_kernel

MODE_KERNELS: dict[PointwiseMode, Callable[..., np.ndarray]] = {
    PointwiseMode.ADD: lambda attrs, a, b: a + b,
    PointwiseMode.SUB: lambda attrs, a, b: a - b,
    PointwiseMode.MUL: lambda attrs, a, b: a * b,
    PointwiseMode.DIV: lambda attrs, a, b: np.asarray(a, np.float64) / np.asarray(b, np.float64),
    PointwiseMode.RELU_FWD: lambda attrs, x: np.maximum(x, 0),
}


@register_kernel("pointwise")
def pointwise(node, args):
    mode = node.attrs.mode
    fn = MODE_KERNELS[mode]
    operands = [args[s] for s in INPUT_SLOTS if s in args]
    out = fn(node.attrs, *operands)
    # The broadcast of the actual operands (dynamic dims may differ from dim).
    return {"OUT_0": np.broadcast_to(out, np.broadcast_shapes(*(np.shape(o) for o in operands)))}
