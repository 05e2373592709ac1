"""``replace_modules``: nn.Conv2d / nn.Linear / nn.LayerNorm swapped for fusilli-backed modules.

The new modules hold the very same ``nn.Parameter`` objects as the ones they
replace (an optimizer built before or after the swap updates them). In an
``nn.Sequential`` an activation module (ReLU, GELU without tanh approximation,
SiLU, Sigmoid, Tanh) right after a Conv2d or Linear is folded into it and its
slot becomes ``nn.Identity``: a Sequential runs its children in order, so that
is the only place where "directly following" is known from the structure.
Modules fusilli cannot run (padding modes other than zeros, string padding
other than "valid", non-CPU parameters) are left as they are, and logged.
"""

from __future__ import annotations

import torch
from torch import nn

from fusilli.log import logger
from fusilli.torch.ops import conv2d, layer_norm, linear


class FusilliConv2d(nn.Module):
    """``activation(conv(x))`` through ``fusilli.torch.conv2d``, sharing ``conv``'s parameters."""

    def __init__(self, conv: nn.Conv2d, activation: str | None = None):
        super().__init__()
        self.weight = conv.weight
        self.bias = conv.bias
        self.stride = list(conv.stride)
        self.padding: list[int] = [0, 0] if isinstance(conv.padding, str) else [int(p) for p in conv.padding]
        self.dilation = list(conv.dilation)
        self.groups = conv.groups
        self.activation = activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups, self.activation)

    def extra_repr(self) -> str:
        return (
            f"{self.weight.shape[1] * self.groups}, {self.weight.shape[0]}, kernel_size={tuple(self.weight.shape[2:])}, "
            f"stride={self.stride}, padding={self.padding}, activation={self.activation}"
        )


class FusilliLinear(nn.Module):
    """``activation(linear(x))`` through ``fusilli.torch.linear``, sharing ``lin``'s parameters."""

    def __init__(self, lin: nn.Linear, activation: str | None = None):
        super().__init__()
        self.weight = lin.weight
        self.bias = lin.bias
        self.activation = activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias, self.activation)

    def extra_repr(self) -> str:
        return f"{self.weight.shape[1]}, {self.weight.shape[0]}, activation={self.activation}"


class FusilliLayerNorm(nn.Module):
    """``fusilli.torch.layer_norm`` sharing ``norm``'s parameters."""

    def __init__(self, norm: nn.LayerNorm):
        super().__init__()
        self.weight = norm.weight
        self.bias = norm.bias
        self.normalized_shape = list(norm.normalized_shape)
        self.eps = norm.eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{tuple(self.normalized_shape)}, eps={self.eps}"


def activation_of(module: nn.Module) -> str | None:
    """The fusilli activation name of an activation module, or None if it has none."""
    if isinstance(module, nn.GELU):
        return "gelu" if module.approximate == "none" else None
    return _ACTIVATION_MODULES.get(type(module))


_ACTIVATION_MODULES: dict[type, str] = {
    nn.ReLU: "relu",
    nn.SiLU: "silu",
    nn.Sigmoid: "sigmoid",
    nn.Tanh: "tanh",
}


def _on_cpu(module: nn.Module) -> bool:
    return all(p.device.type == "cpu" for p in module.parameters(recurse=False))


def _why_not(module: nn.Module) -> str | None:
    """Why ``module`` cannot be swapped (None when it can)."""
    if not _on_cpu(module):
        return "parameters are not on the CPU"
    if isinstance(module, nn.Conv2d):
        if module.padding_mode != "zeros":
            return f"padding_mode={module.padding_mode!r}"
        if isinstance(module.padding, str) and module.padding != "valid":
            return f"padding={module.padding!r}"
    if isinstance(module, nn.LayerNorm) and not module.elementwise_affine and module.bias is not None:
        return "bias without weight"
    return None


def _swap(module: nn.Module, activation: str | None) -> nn.Module:
    if isinstance(module, nn.Conv2d):
        return FusilliConv2d(module, activation)
    if isinstance(module, nn.Linear):
        return FusilliLinear(module, activation)
    assert isinstance(module, nn.LayerNorm)
    return FusilliLayerNorm(module)


def replace_modules(model: nn.Module) -> nn.Module:
    """Swaps, in place, every nn.Conv2d, nn.Linear and nn.LayerNorm of ``model`` (and an
    activation right after a Conv2d/Linear in an nn.Sequential) for fusilli-backed
    modules sharing the same parameters; returns ``model``."""
    for name, child in list(model.named_children()):
        if type(child) in (nn.Conv2d, nn.Linear, nn.LayerNorm):
            reason = _why_not(child)
            if reason is not None:
                logger.info("replace_modules: kept %s '%s' (%s)", type(child).__name__, name, reason)
                continue
            activation = None
            if isinstance(model, nn.Sequential) and type(child) is not nn.LayerNorm:
                following = _next_sibling(model, name)
                activation = activation_of(following) if following is not None else None
                if activation is not None:
                    model._modules[_next_name(model, name)] = nn.Identity()
            model._modules[name] = _swap(child, activation)
        else:
            replace_modules(child)
    return model


def _next_name(seq: nn.Sequential, name: str) -> str:
    names = list(seq._modules)
    return names[names.index(name) + 1]


def _next_sibling(seq: nn.Sequential, name: str) -> nn.Module | None:
    names = list(seq._modules)
    index = names.index(name)
    return seq._modules[names[index + 1]] if index + 1 < len(names) else None
