"""Reference convolution kernels (direct loops over the filter taps)."""

from __future__ import annotations

import numpy as np

from fusilli.reference import register_kernel


def conv_forward(x: np.ndarray, w: np.ndarray, padding, stride, dilation, groups: int) -> np.ndarray:
    """y[n, k, o...] = sum_{c, r...} x[n, g*C/g + c, o*s + r*d - p] * w[k, c, r...]."""
    spatial = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    n, cin = x.shape[:2]
    k, cg = w.shape[:2]
    out_sp = [
        (x.shape[2 + i] + 2 * padding[i] - dilation[i] * (w.shape[2 + i] - 1) - 1) // stride[i] + 1
        for i in range(spatial)
    ]
    y = np.zeros([n, k, *out_sp], dtype=np.result_type(x, w, np.float64))
    kg = k // groups
    for tap in np.ndindex(*w.shape[2:]):
        sl = tuple(
            slice(tap[i] * dilation[i], tap[i] * dilation[i] + (out_sp[i] - 1) * stride[i] + 1, stride[i])
            for i in range(spatial)
        )
        patch = xp[(slice(None), slice(None)) + sl]  # [n, cin, out...]
        for g in range(groups):
            xs = patch[:, g * cg : (g + 1) * cg]
            ws = w[g * kg : (g + 1) * kg, :, *tap]  # [kg, cg]
            y[:, g * kg : (g + 1) * kg] += np.einsum("nc...,kc->nk...", xs, ws)
    return y


@register_kernel("conv_fprop")
def conv_fprop(node, args):
    x, w = args["X"], args["W"]
    groups = x.shape[1] // w.shape[1]
    a = node.attrs
    return {"Y": conv_forward(x, w, a.padding, a.stride, a.dilation, groups)}
