"""Array helpers for users."""

from __future__ import annotations

import numpy as np

from fusilli.backend.runtime import aligned_empty
from fusilli.errors import ErrorCode, fail
from fusilli.tensor import TensorAttr


def empty(tensor: TensorAttr, dim: list[int] | None = None) -> np.ndarray:
    """An uninitialized numpy array with ``tensor``'s shape, strides and dtype,
    64-byte aligned so ``execute`` can use it without a copy.

    ``dim`` overrides the extents (for dynamic dims); the memory order stays the tensor's.
    """
    if not tensor.has_dim or not tensor.has_stride or tensor.data_type is None:
        raise fail(
            ErrorCode.NOT_VALIDATED,
            f"tensor '{tensor.name}' has no dims, strides or data type yet; call graph.validate() first",
        )
    shape = list(tensor.dim if dim is None else dim)
    order = tensor.physical_order
    dtype = tensor.data_type.numpy_dtype
    physical = aligned_empty([shape[i] for i in order], dtype)
    inverse = [order.index(i) for i in range(len(order))]
    return physical.transpose(inverse)
