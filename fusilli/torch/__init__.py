"""PyTorch integration: fusilli graphs behind torch ops, modules and a torch.compile backend.

Importing this module imports PyTorch (``import fusilli`` alone never does) and
registers ``torch.ops.fusilli.*`` and the ``"fusilli"`` torch.compile backend.
"""

from __future__ import annotations

from torch._dynamo import list_backends, register_backend

from fusilli.torch.compile_backend import fusilli_backend
from fusilli.torch.modules import FusilliConv2d, FusilliLayerNorm, FusilliLinear, replace_modules
from fusilli.torch.ops import conv2d, layer_norm, linear, scaled_dot_product_attention

if "fusilli" not in list_backends(exclude_tags=()):
    register_backend(fusilli_backend, name="fusilli")

__all__ = [
    "FusilliConv2d",
    "FusilliLayerNorm",
    "FusilliLinear",
    "conv2d",
    "fusilli_backend",
    "layer_norm",
    "linear",
    "replace_modules",
    "scaled_dot_product_attention",
]
