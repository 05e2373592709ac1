"""Reference matmul (numpy broadcasting of batch dims): int64 for integers, float64 otherwise."""

from __future__ import annotations

import numpy as np

from fusilli.reference import register_kernel


@register_kernel("matmul")
def matmul(node, args):
    a, b = args["A"], args["B"]
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        return {"C": np.matmul(a.astype(np.int64), b.astype(np.int64))}
    return {"C": np.matmul(a.astype(np.float64), b.astype(np.float64))}
