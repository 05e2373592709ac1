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
    a = node.attrs
    return {"Y": conv_forward(x, w, a.padding, a.stride, a.dilation, node.groups)}


def _tap_windows(out_sp, tap, stride, dilation):
    """Slices of the padded input that tap ``tap`` reads for every output position."""
    return tuple(
        slice(tap[i] * dilation[i], tap[i] * dilation[i] + (out_sp[i] - 1) * stride[i] + 1, stride[i])
        for i in range(len(out_sp))
    )


def conv_data_grad(dy: np.ndarray, w: np.ndarray, x_shape, padding, stride, dilation, groups: int) -> np.ndarray:
    """dL/dx of ``conv_forward``: each dy[n, k, o] scatters dy * w[k, c, r] back to x[n, c, o*s + r*d - p]."""
    n, cin = x_shape[:2]
    k, cg = w.shape[:2]
    kg = k // groups
    out_sp = dy.shape[2:]
    dxp = np.zeros([n, cin, *[x_shape[2 + i] + 2 * p for i, p in enumerate(padding)]], dtype=np.float64)
    for tap in np.ndindex(*w.shape[2:]):
        sl = (slice(None), slice(None)) + _tap_windows(out_sp, tap, stride, dilation)
        for g in range(groups):
            contrib = np.einsum("nk...,kc->nc...", dy[:, g * kg : (g + 1) * kg], w[g * kg : (g + 1) * kg, :, *tap])
            dxp[sl][:, g * cg : (g + 1) * cg] += contrib
    crop = tuple(slice(p, p + x_shape[2 + i]) for i, p in enumerate(padding))
    return dxp[(slice(None), slice(None)) + crop]


def conv_weight_grad(dy: np.ndarray, x: np.ndarray, w_shape, padding, stride, dilation, groups: int) -> np.ndarray:
    """dL/dw of ``conv_forward``: dw[k, c, r] = sum_{n, o} dy[n, k, o] * x[n, g*C/g + c, o*s + r*d - p]."""
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    k, cg = w_shape[:2]
    kg = k // groups
    out_sp = dy.shape[2:]
    dw = np.zeros(w_shape, dtype=np.float64)
    for tap in np.ndindex(*w_shape[2:]):
        patch = xp[(slice(None), slice(None)) + _tap_windows(out_sp, tap, stride, dilation)]
        for g in range(groups):
            summed = [0, *range(2, dy.ndim)]  # batch and output positions
            dw[g * kg : (g + 1) * kg, :, *tap] = np.tensordot(
                dy[:, g * kg : (g + 1) * kg], patch[:, g * cg : (g + 1) * cg], axes=(summed, summed)
            )
    return dw


@register_kernel("conv_dgrad")
def conv_dgrad(node, args):
    dy, w = args["DY"], args["W"]
    a = node.attrs
    return {"DX": conv_data_grad(dy, w, node.tensor("DX").dim, a.padding, a.stride, a.dilation, node.groups)}


@register_kernel("conv_wgrad")
def conv_wgrad(node, args):
    dy, x = args["DY"], args["X"]
    a = node.attrs
    return {"DW": conv_weight_grad(dy, x, node.tensor("DW").dim, a.padding, a.stride, a.dilation, node.groups)}
