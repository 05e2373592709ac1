"""Reference of custom ops: the NumPy callable the user passed as ``reference=``."""

from __future__ import annotations

import numpy as np

from fusilli.errors import ErrorCode
from fusilli.reference import register_kernel


@register_kernel("custom_op")
def custom_op(node, args):
    fn = node.reference
    if fn is None:
        raise node.error(
            ErrorCode.NOT_IMPLEMENTED,
            "no reference implementation: pass reference=<numpy callable> to Graph.custom_op",
        )
    results = fn(*(args[slot] for slot in node.input_slots))
    if isinstance(results, np.ndarray) or not isinstance(results, (list, tuple)):
        results = [results]
    if len(results) != len(node.output_slots):
        raise node.error(
            ErrorCode.INVALID_ARGUMENT,
            f"reference returned {len(results)} arrays for {len(node.output_slots)} outputs",
        )
    out = {}
    for slot, r in zip(node.output_slots, results):
        r = np.asarray(r)
        t = node.tensor(slot)
        if list(r.shape) != t.dim:
            raise node.error(
                ErrorCode.INVALID_ARGUMENT,
                f"reference result for {slot} '{t.name}' has shape {list(r.shape)}, expected {t.dim}",
            )
        out[slot] = r
    return out
