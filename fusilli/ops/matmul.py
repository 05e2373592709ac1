"""Matmul ``C = A @ B`` over ``[..., M, K] x [..., K, N]`` with broadcast batch dims.

Transposed operands are expressed by strides on the last two dims, as in
upstream Fusilli; batch dims must be outermost in memory. Emits
``torch.aten.matmul`` on logical operands.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from fusilli.errors import ErrorCode
from fusilli.ops.base import Attrs, Node, register_emitter, register_node
from fusilli.ops.emit import EmitContext
from fusilli.tensor import TensorAttr


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
        self.check(
            batch is not None,
            ErrorCode.INVALID_ATTRIBUTE,
            f"batch dims of A '{a.name}' {a.dim[:-2]} and B '{b.name}' {b.dim[:-2]} cannot be broadcast",
        )
        for slot, t in (("A", a), ("B", b), ("C", c)):
            self.check_batch_outermost(slot, t)
        expected = [*batch, a.dim[-2], b.dim[-1]]
        self.check(
            c.dim == expected,
            ErrorCode.INVALID_ATTRIBUTE,
            f"output tensor C '{c.name}' dims {c.dim} do not match the inferred dims {expected}",
        )

    def check_batch_outermost(self, slot: str, t: TensorAttr) -> None:
        batch_rank = t.rank - 2
        order = t.physical_order
        self.check(
            sorted(order[:batch_rank]) == list(range(batch_rank)) and list(order[:batch_rank]) == list(range(batch_rank)),
            ErrorCode.INVALID_ATTRIBUTE,
            f"tensor {slot} '{t.name}' has batch dimensions that are not outermost or are transposed "
            f"(stride {t.stride})",
        )


@register_emitter("matmul")
def emit_matmul(node: MatmulNode, ctx: EmitContext) -> None:
    a, b = ctx.input("A"), ctx.input("B")
    c = ctx.b.op("torch.aten.matmul", [a, b], ctx.result_type("C", element=node.tensor("A").data_type))
    ctx.define("C", c)
