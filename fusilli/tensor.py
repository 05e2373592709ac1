"""TensorAttr and the stride/layout helpers (logical order <-> physical order).

A tensor's ``dim`` is its logical shape (PyTorch order); its ``stride`` says how
that logical shape lies in memory, exactly like ``torch.Tensor.stride()``. The
*physical* order is the logical dims sorted from the slowest to the fastest
varying, which is the shape the compiled function sees.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from fusilli.errors import ErrorCode, fail
from fusilli.types import DataType

# Layout names -> the logical dims listed from slowest to fastest in memory.
_LAYOUT_ORDERS: dict[str, tuple[int, ...]] = {
    "N": (0,),
    "NC": (0, 1),
    "NCH": (0, 1, 2),
    "NHC": (0, 2, 1),
    "NCHW": (0, 1, 2, 3),
    "NHWC": (0, 2, 3, 1),
    "NCDHW": (0, 1, 2, 3, 4),
    "NDHWC": (0, 2, 3, 4, 1),
}
LAYOUT_NAMES = tuple(_LAYOUT_ORDERS) + ("contiguous",)


def contiguous_strides(dim: Sequence[int]) -> list[int]:
    out = [1] * len(dim)
    for i in range(len(dim) - 2, -1, -1):
        out[i] = out[i + 1] * max(int(dim[i + 1]), 1)
    return out


def strides_for_order(dim: Sequence[int], order: Sequence[int]) -> list[int]:
    """Strides that lay ``dim`` out with ``order`` (slowest first) in memory."""
    out = [0] * len(dim)
    running = 1
    for d in reversed(order):
        out[d] = running
        running *= max(int(dim[d]), 1)
    return out


def strides(dim: Sequence[int], layout: str = "contiguous") -> list[int]:
    """Strides (in elements) for logical ``dim`` stored in ``layout``.

    ``layout`` is one of ``"N"``, ``"NC"``, ``"NCH"``, ``"NHC"``, ``"NCHW"``,
    ``"NHWC"``, ``"NCDHW"``, ``"NDHWC"`` or ``"contiguous"``.
    """
    dim = [int(d) for d in dim]
    if layout == "contiguous":
        return contiguous_strides(dim)
    order = _LAYOUT_ORDERS.get(layout.upper() if isinstance(layout, str) else layout)
    if order is None:
        raise fail(
            ErrorCode.INVALID_ARGUMENT,
            f"unknown layout {layout!r}; expected one of {', '.join(LAYOUT_NAMES)}",
        )
    if len(order) != len(dim):
        raise fail(
            ErrorCode.INVALID_ARGUMENT,
            f"layout {layout!r} has {len(order)} dims but dim {dim} has {len(dim)}",
        )
    return strides_for_order(dim, order)


def channels_last_order(rank: int) -> tuple[int, ...]:
    return (0,) + tuple(range(2, rank)) + (1,) if rank >= 2 else tuple(range(rank))


def physical_order(dim: Sequence[int], stride: Sequence[int]) -> tuple[int, ...]:
    """Logical dim indices listed slowest-first in memory.

    Dims of extent 1 and broadcast dims (stride 0) keep their logical position;
    the other dims are sorted by decreasing stride into the remaining slots (a
    stable sort, so equal strides keep logical order).
    """
    rank = len(dim)
    movable = [i for i in range(rank) if dim[i] != 1 and stride[i] != 0]
    ordered = sorted(movable, key=lambda i: -stride[i])
    out = list(range(rank))
    for slot, src in zip(movable, ordered):
        out[slot] = src
    return tuple(out)


def is_valid_layout(dim: Sequence[int], stride: Sequence[int]) -> bool:
    """True when the strides are a dense permutation of the dims (no gaps or overlap)."""
    if any(s < 0 for s in stride):
        return False
    order = physical_order(dim, stride)
    expected = 1
    for i in reversed(order):
        if dim[i] == 1 or stride[i] == 0:
            continue
        if stride[i] != expected:
            return False
        expected *= dim[i]
    return True


def is_identity(perm: Sequence[int]) -> bool:
    return all(i == p for i, p in enumerate(perm))


def inverse_permutation(perm: Sequence[int]) -> tuple[int, ...]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def checked_ints(values: Iterable[Any], what: str) -> list[int]:
    """``values`` as a list of ints; INVALID_ARGUMENT for anything that is not an integer
    (``3.7`` would otherwise be truncated, ``"2"`` parsed, ``True`` taken as 1)."""
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise fail(ErrorCode.INVALID_ARGUMENT, f"{what} must be a sequence of integers, got {values!r}")
    out = []
    for v in values:
        if isinstance(v, bool | np.bool_) or not isinstance(v, numbers.Integral):
            raise fail(
                ErrorCode.INVALID_ARGUMENT,
                f"{what} must hold integers, got {v!r} ({type(v).__name__}) in {list(values)!r}"[:300],
            )
        out.append(int(v))
    return out


class TensorAttr:
    """A graph tensor: name, logical dims, strides, data type and role.

    Setters return the tensor so they chain: ``t.set_dim([2, 3]).set_output(True)``.
    """

    __slots__ = (
        "_name",
        "_dim",
        "_stride",
        "_data_type",
        "_is_virtual",
        "_scalar_value",
        "_dynamic_dims",
        "producer",
    )

    def __init__(
        self,
        name: str | None = None,
        dim: Sequence[int] | None = None,
        stride: Sequence[int] | None = None,
        data_type: Any = None,
        *,
        is_virtual: bool = False,
        scalar_value: float | int | bool | None = None,
        dynamic_dims: Iterable[int] = (),
    ):
        self._name = name
        self._dim = None if dim is None else checked_ints(dim, f"tensor '{name}' dim")
        self._stride = None if stride is None else checked_ints(stride, f"tensor '{name}' stride")
        self._data_type = None if data_type is None else DataType.coerce(data_type)
        self._is_virtual = is_virtual
        self._scalar_value = scalar_value
        self._dynamic_dims = sorted(set(checked_ints(dynamic_dims, f"tensor '{name}' dynamic_dims")))
        # The node that computes this tensor, if any (a fusilli.ops Node: the floor above
        # this module, so only its presence is used here).
        self.producer: object | None = None

    # ---- properties -------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name or ""

    @property
    def dim(self) -> list[int]:
        return list(self._dim) if self._dim is not None else []

    @property
    def stride(self) -> list[int]:
        return list(self._stride) if self._stride is not None else []

    @property
    def data_type(self) -> DataType | None:
        return self._data_type

    @property
    def is_virtual(self) -> bool:
        return self._is_virtual

    @property
    def is_output(self) -> bool:
        return self.producer is not None and not self._is_virtual

    @property
    def is_scalar(self) -> bool:
        return self._scalar_value is not None

    @property
    def scalar_value(self) -> float | int | bool | None:
        return self._scalar_value

    @property
    def dynamic_dims(self) -> list[int]:
        return list(self._dynamic_dims)

    @property
    def has_dim(self) -> bool:
        return self._dim is not None

    @property
    def has_stride(self) -> bool:
        return self._stride is not None

    @property
    def rank(self) -> int:
        return len(self._dim or ())

    # ---- fluent setters ---------------------------------------------------
    def set_name(self, name: str) -> TensorAttr:
        self._name = name
        return self

    def set_dim(self, dim: Sequence[int]) -> TensorAttr:
        self._dim = checked_ints(dim, f"tensor '{self.name}' dim")
        return self

    def set_stride(self, stride: Sequence[int]) -> TensorAttr:
        self._stride = checked_ints(stride, f"tensor '{self.name}' stride")
        return self

    def set_data_type(self, data_type: Any) -> TensorAttr:
        self._data_type = DataType.coerce(data_type)
        return self

    def set_output(self, is_output: bool = True) -> TensorAttr:
        self._is_virtual = not is_output
        return self

    def set_is_virtual(self, is_virtual: bool = True) -> TensorAttr:
        self._is_virtual = is_virtual
        return self

    def set_dynamic_dims(self, dims: Iterable[int]) -> TensorAttr:
        self._dynamic_dims = sorted(set(checked_ints(dims, f"tensor '{self.name}' dynamic_dims")))
        return self

    # ---- layout -----------------------------------------------------------
    @property
    def physical_order(self) -> tuple[int, ...]:
        return physical_order(self.dim, self.stride)

    @property
    def physical_dim(self) -> list[int]:
        """Dims in memory order; broadcast (stride 0) dims show as 1."""
        return [1 if self.stride[i] == 0 else self.dim[i] for i in self.physical_order]

    @property
    def broadcast_dims(self) -> list[int]:
        return [i for i, (d, s) in enumerate(zip(self.dim, self.stride)) if s == 0 and d != 1]

    @property
    def is_contiguous(self) -> bool:
        return is_identity(self.physical_order)

    @property
    def is_channels_last(self) -> bool:
        order = self.physical_order
        return self.rank >= 3 and (
            order == channels_last_order(self.rank)
            or self.stride == strides_for_order(self.dim, channels_last_order(self.rank))
        )

    @property
    def num_elements(self) -> int:
        return math.prod(self.dim)

    def describe(self) -> str:
        dt = self._data_type.short_name if self._data_type else "?"
        return f"{self.name}[{'x'.join(map(str, self.dim))}]{dt}"

    def __repr__(self) -> str:
        role = "scalar" if self.is_scalar else "virtual" if self._is_virtual else "io"
        return (
            f"TensorAttr(name={self.name!r}, dim={self.dim}, stride={self.stride}, data_type={self._data_type}, {role})"
        )


def data_type_of(t: TensorAttr) -> DataType:
    """``t``'s data type where validation guarantees one (``Graph.validate`` sets every
    tensor's); INTERNAL_ERROR if it is unset all the same."""
    dt = t.data_type
    if dt is None:
        raise fail(ErrorCode.INTERNAL_ERROR, f"tensor '{t.name}' has no data type (is the graph validated?)")
    return dt


def scalar_value_of(t: TensorAttr) -> float | int | bool:
    """The value of a scalar constant tensor (``t.is_scalar``); INTERNAL_ERROR otherwise."""
    value = t.scalar_value
    if value is None:
        raise fail(ErrorCode.INTERNAL_ERROR, f"tensor '{t.name}' is not a scalar constant")
    return value


def as_numpy(array: Any) -> np.ndarray:
    """A numpy view of a numpy array, a DLPack tensor or a buffer-protocol object."""
    if isinstance(array, np.ndarray):
        return array
    if hasattr(array, "__dlpack__"):
        try:
            return np.from_dlpack(array)
        except (TypeError, BufferError, RuntimeError) as e:
            raise fail(ErrorCode.INVALID_ARGUMENT, f"cannot read {type(array).__name__} through DLPack: {e}") from None
    try:
        return np.asarray(memoryview(array))
    except TypeError:
        raise fail(
            ErrorCode.INVALID_ARGUMENT,
            f"{type(array).__name__} is not an array (numpy, DLPack or buffer protocol)",
        ) from None
