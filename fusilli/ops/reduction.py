"""Reduction ``Y = reduce(X)`` over some dims, kept with extent 1 (keepdim).

The reduced dims are the ``axes`` attribute when given, else (as upstream
Fusilli) the dims where the user-set ``Y`` dim is 1 and the ``X`` dim is not.
Float inputs reduce in the node's ``compute_data_type``; integer and boolean
sums and products accumulate in int64 as torch's do (lowered in
fusilli/lowering/reduction.py).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from fusilli.errors import ErrorCode
from fusilli.ops.base import Attrs, Node, register_node
from fusilli.types import DataType


class ReductionMode(enum.Enum):
    ADD = "add"
    MUL = "mul"
    MIN = "min"
    MAX = "max"
    AMAX = "amax"  # max of |x|
    AVG = "avg"
    NORM1 = "norm1"  # sum of |x|
    NORM2 = "norm2"  # sqrt of the sum of squares
    MUL_NO_ZEROS = "mul_no_zeros"  # product of the non-zero elements


@dataclass
class ReductionAttrs(Attrs):
    ENUM_FIELDS = {"mode": ReductionMode}
    mode: ReductionMode | None = None
    axes: list[int] | None = None


# Modes whose integer/boolean inputs accumulate in int64 (torch.sum / torch.prod of ints).
_INT64_ACCUMULATING = {ReductionMode.ADD, ReductionMode.MUL, ReductionMode.MUL_NO_ZEROS, ReductionMode.NORM1}


@register_node
class ReductionNode(Node):
    kind = "reduction"
    input_slots = ("X",)
    output_slots = ("Y",)
    attrs_type = ReductionAttrs
    attrs: ReductionAttrs

    def pre_validate(self) -> None:
        if self.attrs.mode is None:
            raise self.error(ErrorCode.ATTRIBUTE_NOT_SET, "reduction mode not set")
        super().pre_validate()
        x = self.tensor("X")
        if self.attrs.axes is not None:
            axes = self.attrs.axes
            self.check(
                all(-x.rank <= a < x.rank for a in axes),
                ErrorCode.INVALID_ATTRIBUTE,
                f"axes {axes} out of range for input X '{x.name}' of rank {x.rank}",
            )
            self.check(
                len({a % x.rank for a in axes}) == len(axes),
                ErrorCode.INVALID_ATTRIBUTE,
                f"axes {axes} name a dim of input X '{x.name}' twice",
            )

    def _axes(self, rank: int) -> list[int] | None:
        return None if self.attrs.axes is None else sorted(a % rank for a in self.attrs.axes)

    def reduced_dims(self) -> list[int]:
        x, y = self.tensor("X"), self.tensor("Y")
        axes = self._axes(x.rank)
        if axes is not None:
            return axes
        return [i for i, (xd, yd) in enumerate(zip(x.dim, y.dim)) if yd == 1 and xd > 1]

    def batch_split_slots(self) -> frozenset[str] | None:
        x, y = self.tensor("X"), self.tensor("Y")
        if self.summed_split_slots(0):
            return frozenset({"X"})  # a sum over dim 0: each half's Y is a partial sum
        if y.rank != x.rank or y.dim[0] != x.dim[0] or 0 in self.reduced_dims():
            return None  # reduces over dim 0
        return frozenset({"X", "Y"})

    def row_split_slots(self) -> frozenset[str] | None:
        return frozenset({"X"}) if self.summed_split_slots(2) else None  # a sum over H: as over dim 0

    def summed_split_slots(self, axis: int) -> frozenset[str]:
        """A sum (``ADD``) over ``axis`` among others: the halves' partial sums add up to it."""
        x, y = self.tensor("X"), self.tensor("Y")
        summed = self.attrs.mode == ReductionMode.ADD and y.rank == x.rank > axis and axis in self.reduced_dims()
        return frozenset({"Y"}) if summed else frozenset()

    def infer(self) -> None:
        x, y = self.tensor("X"), self.tensor("Y")
        axes = self._axes(x.rank)
        if not y.has_dim:
            # Without axes, Y defaults to X's dims: a reduction of nothing, rejected below.
            y.set_dim([1 if axes is not None and i in axes else d for i, d in enumerate(x.dim)])
        if y.rank == x.rank:
            reduced = set(self.reduced_dims())
            y.set_dynamic_dims([d for d in x.dynamic_dims if d not in reduced])
        self.infer_output_stride(y)

    def post_validate(self) -> None:
        x, y = self.tensor("X"), self.tensor("Y")
        mode = self.attrs.mode
        self.check(
            y.rank == x.rank,
            ErrorCode.INVALID_ATTRIBUTE,
            f"output Y '{y.name}' rank {y.rank} must equal input X '{x.name}' rank {x.rank} (reduced dims are kept)",
        )
        self.check(
            all(yd in (1, xd) for xd, yd in zip(x.dim, y.dim)),
            ErrorCode.INVALID_ATTRIBUTE,
            f"output Y '{y.name}' dims {y.dim} must be 1 or equal to input X '{x.name}' dims {x.dim}",
        )
        axes = self._axes(x.rank)
        if axes is not None:
            self.check(
                all(y.dim[a] == 1 for a in axes),
                ErrorCode.INVALID_ATTRIBUTE,
                f"output Y '{y.name}' dims {y.dim} must be 1 along the reduced axes {axes}",
            )
        self.check(
            len(self.reduced_dims()) > 0,
            ErrorCode.INVALID_ATTRIBUTE,
            f"no dim of input X '{x.name}' {x.dim} is reduced: set axes= or dims of output Y '{y.name}' to 1 "
            "where X is reduced",
        )
        self.check_layout("Y", y)
        if mode == ReductionMode.AVG:
            x_dt = self.data_type("X")
            self.check(
                x_dt.is_float,
                ErrorCode.INVALID_ATTRIBUTE,
                f"AVG reduction needs a floating-point input but X '{x.name}' is {x_dt.name}",
            )

    def compute_element(self) -> DataType:
        x = self.data_type("X")
        cdt = self.compute_data_type
        float_compute = cdt if cdt is not None and cdt.is_float else DataType.FLOAT
        if x.is_float:
            return cdt if cdt is not None and cdt.is_float else x
        if self.attrs.mode in _INT64_ACCUMULATING:
            return DataType.INT64
        if self.attrs.mode == ReductionMode.NORM2:
            return float_compute
        return x  # MIN / MAX / AMAX keep the integer type


__all__ = ["ReductionAttrs", "ReductionMode", "ReductionNode"]
