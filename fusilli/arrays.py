"""Zero-copy NumPy views of PyTorch tensors, without importing PyTorch.

A torch tensor reaches fusilli through a variant pack (or ``Graph.tensor_like``).
DLPack cannot carry it there: torch refuses to export tensors that require
grad, and NumPy refuses bf16 and fp8 DLPack tensors. The tensor itself says all
that is needed (data pointer with its storage offset applied, shape, element
strides, element size and dtype), so the view is built from those through the
array interface. The view holds a reference to the tensor, so the memory stays
alive while fusilli uses it; no gradient is tracked through it.
"""

from __future__ import annotations

import sys
from typing import Any

import ml_dtypes
import numpy as np

from fusilli.errors import ErrorCode, fail

# torch dtype (by its printed name, so PyTorch need not be imported) -> NumPy dtype.
TORCH_TO_NUMPY: dict[str, np.dtype] = {
    "torch.float32": np.dtype(np.float32),
    "torch.float16": np.dtype(np.float16),
    "torch.bfloat16": np.dtype(ml_dtypes.bfloat16),
    "torch.float64": np.dtype(np.float64),
    "torch.uint8": np.dtype(np.uint8),
    "torch.int8": np.dtype(np.int8),
    "torch.int16": np.dtype(np.int16),
    "torch.int32": np.dtype(np.int32),
    "torch.int64": np.dtype(np.int64),
    "torch.bool": np.dtype(np.bool_),
    "torch.float8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "torch.float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
}


def _array_interface_typestr(dtype: np.dtype) -> str:
    """NumPy's own type string, or raw bytes for ml_dtypes types (bf16, fp8) NumPy cannot parse."""
    try:
        if np.dtype(dtype.str) == dtype:
            return dtype.str
    except TypeError:
        pass
    return f"|V{dtype.itemsize}"


_TYPESTRS = {name: _array_interface_typestr(dtype) for name, dtype in TORCH_TO_NUMPY.items()}


_tensor_type: type | None = None


def torch_tensor_type() -> type | None:
    """``torch.Tensor`` if PyTorch is already imported (only then can a value be a tensor)."""
    global _tensor_type
    if _tensor_type is None:
        _tensor_type = getattr(sys.modules.get("torch"), "Tensor", None)
    return _tensor_type


def is_torch_tensor(value: Any) -> bool:
    tensor_type = torch_tensor_type()
    return tensor_type is not None and isinstance(value, tensor_type)


class _ArrayInterface:
    """What ``np.asarray`` reads; NumPy keeps it (and so the tensor) as the view's base."""

    __slots__ = ("__array_interface__", "tensor")

    def __init__(self, interface: dict[str, Any], tensor: Any):
        self.__array_interface__ = interface
        self.tensor = tensor


def torch_as_numpy(tensor: Any) -> np.ndarray:
    """A writable NumPy view of a CPU torch tensor's memory (its own strides and offset)."""
    if tensor.device.type != "cpu":
        raise fail(
            ErrorCode.INVALID_ARGUMENT,
            f"torch tensor on device '{tensor.device}': fusilli's CPU backend reads host memory (move it with .cpu())",
        )
    if str(tensor.layout) != "torch.strided" or tensor.is_quantized:
        raise fail(ErrorCode.INVALID_ARGUMENT, f"torch tensor of layout {tensor.layout} is not a dense strided tensor")
    if tensor.is_conj() or tensor.is_neg():
        raise fail(
            ErrorCode.INVALID_ARGUMENT, "torch tensor has a lazy conj/neg bit set (call .resolve_conj()/.resolve_neg())"
        )
    name = str(tensor.dtype)
    dtype = TORCH_TO_NUMPY.get(name)
    if dtype is None:
        raise fail(ErrorCode.INVALID_ARGUMENT, f"torch dtype {tensor.dtype} has no fusilli data type")
    itemsize = dtype.itemsize
    interface = {
        "data": (tensor.data_ptr(), False),
        "shape": tuple(tensor.shape),
        "strides": tuple(s * itemsize for s in tensor.stride()),
        "typestr": _TYPESTRS[name],
        "version": 3,
    }
    array = np.asarray(_ArrayInterface(interface, tensor))
    return array if array.dtype == dtype else array.view(dtype)
