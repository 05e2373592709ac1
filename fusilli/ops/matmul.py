"""Matmul ``C = A @ B`` over ``[..., M, K] x [..., K, N]`` with broadcast batch dims.

Transposed operands are expressed by strides on the last two dims, as in
upstream Fusilli; batch dims must be outermost in memory (lowered in
fusilli/lowering/matmul.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fusilli.errors import ErrorCode
from fusilli.ops.base import Attrs, Node, Workload, register_node
from fusilli.tensor import TensorAttr, data_type_of
from fusilli.types import DataType


@dataclass
class MatmulAttrs(Attrs):
    pass


def broadcast_batch_dims(a: Sequence[int], b: Sequence[int]) -> list[int] | None:
    """PyTorch broadcast of two batch shapes (right-aligned), or None if they clash."""
    rank = max(len(a), len(b))
    a = [1] * (rank - len(a)) + list(a)
    b = [1] * (rank - len(b)) + list(b)
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            return None
        out.append(max(x, y))
    return out


def infer_matmul_dynamic_dims(a: TensorAttr, b: TensorAttr, rank: int) -> list[int]:
    """C's dynamic dims: broadcast batch dims dynamic in A or B, M from A, N from B."""
    out = {d + rank - a.rank for d in a.dynamic_dims if d != a.rank - 1}
    out |= {d + rank - b.rank for d in b.dynamic_dims if d != b.rank - 2}
    return sorted(out)


@register_node
class MatmulNode(Node):
    kind = "matmul"
    input_slots = ("A", "B")
    output_slots = ("C",)
    attrs_type = MatmulAttrs

    def pre_validate(self) -> None:
        super().pre_validate()
        a, b = self.tensor("A"), self.tensor("B")
        for slot, t in (("A", a), ("B", b)):
            self.check(
                t.rank >= 2, ErrorCode.INVALID_ATTRIBUTE, f"tensor {slot} '{t.name}' must have rank >= 2 (got {t.rank})"
            )

    def infer(self) -> None:
        a, b, c = self.tensor("A"), self.tensor("B"), self.tensor("C")
        batch = broadcast_batch_dims(a.dim[:-2], b.dim[:-2])
        if not c.has_dim and batch is not None:
            c.set_dim([*batch, a.dim[-2], b.dim[-1]])
            c.set_dynamic_dims(infer_matmul_dynamic_dims(a, b, c.rank))
        self.infer_output_stride(c)

    def post_validate(self) -> None:
        a, b, c = self.tensor("A"), self.tensor("B"), self.tensor("C")
        for slot, t in (("A", a), ("B", b), ("C", c)):
            self.check_layout(slot, t)
        self.check(
            a.dim[-1] == b.dim[-2],
            ErrorCode.INVALID_ATTRIBUTE,
            f"input tensors A '{a.name}' and B '{b.name}' have incompatible inner dimensions (K): "
            f"A has K={a.dim[-1]}, B has K={b.dim[-2]}",
        )
        batch = broadcast_batch_dims(a.dim[:-2], b.dim[:-2])
        if batch is None:
            raise self.error(
                ErrorCode.INVALID_ATTRIBUTE,
                f"batch dims of A '{a.name}' {a.dim[:-2]} and B '{b.name}' {b.dim[:-2]} cannot be broadcast",
            )
        for slot, t in (("A", a), ("B", b), ("C", c)):
            self.check_batch_outermost(slot, t)
        for slot, t in (("A", a), ("B", b), ("C", c)):
            self.check(
                t.data_type != DataType.BOOLEAN,
                ErrorCode.INVALID_ATTRIBUTE,
                f"tensor {slot} '{t.name}' is boolean; matmul needs numeric tensors",
            )
        self.check(
            c.data_type != DataType.INT4,
            ErrorCode.NOT_IMPLEMENTED,
            f"output tensor C '{c.name}' is int4; int4 is supported for matmul inputs only",
        )
        expected = [*batch, a.dim[-2], b.dim[-1]]
        self.check(
            c.dim == expected,
            ErrorCode.INVALID_ATTRIBUTE,
            f"output tensor C '{c.name}' dims {c.dim} do not match the inferred dims {expected}",
        )

    def workload(self) -> Workload:
        a, c = self.tensor("A"), self.tensor("C")
        return Workload(self.kind, data_type_of(a), 2 * math.prod(c.dim) * a.dim[-1])

    def batch_split_slots(self) -> frozenset[str]:
        """Rank 2: the rows (M) of A and C. Batched: dim 0 of C and of each operand that has
        it unbroadcast (an operand of lower rank or extent 1 there is read whole)."""
        a, b, c = self.tensor("A"), self.tensor("B"), self.tensor("C")
        if c.rank == 2:
            return frozenset({"A", "C"})
        return frozenset({"C"} | {s for s, t in (("A", a), ("B", b)) if t.rank == c.rank and t.dim[0] == c.dim[0]})

    def check_batch_outermost(self, slot: str, t: TensorAttr) -> None:
        batch_rank = t.rank - 2
        order = t.physical_order
        self.check(
            sorted(order[:batch_rank]) == list(range(batch_rank))
            and list(order[:batch_rank]) == list(range(batch_rank)),
            ErrorCode.INVALID_ATTRIBUTE,
            f"tensor {slot} '{t.name}' has batch dimensions that are not outermost or are transposed "
            f"(stride {t.stride})",
        )


def accumulator_type(a: DataType, b: DataType, c: DataType, compute: DataType | None) -> DataType:
    """The element type the product is accumulated in.

    Integers accumulate in C's integer type (int8 x int8 -> int32), or int32 /
    int64 when C is not an integer; floats (and int x float, e.g. int4 x f16)
    in the compute type, widened to the widest float input (f64 stays f64).
    """
    if a.is_integer and b.is_integer:
        if c.is_integer and c.bits >= max(a.bits, b.bits):
            return c
        return DataType.INT64 if DataType.INT64 in (a, b) else DataType.INT32
    acc = compute if compute is not None and compute.is_float else DataType.FLOAT
    widest = max((t for t in (a, b) if t.is_float), key=lambda t: t.bits)
    return widest if widest.bits > acc.bits else acc
