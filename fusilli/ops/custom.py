"""Custom op: a user-written torch-dialect function called from the graph.

The user gives a ``func.func private @{FUNC_NAME}(...)`` template written against
the *logical* dims of its operands, with upstream Fusilli's placeholders:
``{FUNC_NAME}``, ``{IN<i>_TYPE}`` / ``{OUT<i>_TYPE}`` (the full
``!torch.vtensor<[..],dt>``), ``{IN<i>_DTYPE}`` / ``{OUT<i>_DTYPE}`` (``f32``),
``{IN<i>_DIM<j>}`` / ``{OUT<i>_DIM<j>}`` (an extent, or ``?`` for a dynamic dim).
The caller sets every output's dim (and optionally stride and data type); nothing
is inferred but contiguous strides.

``validate()`` has the lowering (fusilli/lowering/custom.py) fill in the
template, parse it in fusilli's context and check the function's signature
against the node's tensors, so a bad template is an ``INVALID_ATTRIBUTE``
carrying the parser's diagnostic, not a crash or an opaque compiler failure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fusilli.errors import ErrorCode
from fusilli.ops.base import Attrs, Node, register_node
from fusilli.tensor import TensorAttr, contiguous_strides
from fusilli.types import DataType


@dataclass
class CustomOpAttrs(Attrs):
    mlir: str | None = None
    num_outputs: int = 1


def input_slot(i: int) -> str:
    return f"IN{i}"


def output_slot(i: int) -> str:
    return f"OUT{i}"


@register_node
class CustomOpNode(Node):
    """A node with ``IN0..INn-1`` inputs and ``OUT0..OUTm-1`` outputs (set per instance)."""

    kind = "custom_op"
    input_slots: tuple[str, ...] = ()
    output_slots: tuple[str, ...] = ()
    attrs_type = CustomOpAttrs
    attrs: CustomOpAttrs
    checked_by_lowering = True

    def __init__(
        self,
        name: str,
        inputs: Mapping[str, TensorAttr | None],
        outputs: Mapping[str, TensorAttr | None],
        attrs: CustomOpAttrs,
        compute_data_type: DataType | None = None,
    ):
        super().__init__(name, inputs, outputs, attrs, compute_data_type)
        self.input_slots = tuple(inputs)
        self.output_slots = tuple(outputs)
        # Optional NumPy implementation used by fusilli.reference (not serialized).
        self.reference: Callable[..., Any] | None = None

    @property
    def func_name(self) -> str:
        return re.sub(r"[^A-Za-z0-9_]", "", self.name)

    def pre_validate(self) -> None:
        self.check(self.attrs.mlir, ErrorCode.ATTRIBUTE_NOT_SET, "MLIR not set (pass mlir=<function template>)")
        self.check(self.input_slots, ErrorCode.ATTRIBUTE_NOT_SET, "custom op has no inputs")
        self.check(self.output_slots, ErrorCode.ATTRIBUTE_NOT_SET, "custom op has no outputs (num_outputs >= 1)")
        super().pre_validate()
        for slot, t in self.slot_tensors("IN"):
            self.check(
                not t.is_scalar,
                ErrorCode.INVALID_ATTRIBUTE,
                f"input {slot} '{t.name}' is a scalar, which custom ops do not support",
            )
        for slot, t in self.slot_tensors("OUT"):
            self.check(
                t.has_dim,
                ErrorCode.ATTRIBUTE_NOT_SET,
                f"output {slot} '{t.name}' dims not set (custom op outputs need set_dim)",
            )
        self.check(
            self.func_name and self.func_name != "main",
            ErrorCode.INVALID_ATTRIBUTE,
            f"node name gives the function name '{self.func_name}', which is empty or clashes with @main",
        )

    def infer(self) -> None:
        for t in self.role_tensors("OUT"):
            if not t.has_stride:
                t.set_stride(contiguous_strides(t.dim))

    def post_validate(self) -> None:
        for slot, t in self.slot_tensors("IN") + self.slot_tensors("OUT"):
            self.check_layout(slot, t)
        # The template itself is checked by the lowering (checked_by_lowering).

    # ---- tensors by role ------------------------------------------------------
    def slot_tensors(self, role: str) -> list[tuple[str, TensorAttr]]:
        """(slot, tensor) of the inputs (role "IN") or outputs ("OUT"), in slot order (set after pre_validate)."""
        return [(slot, self.tensor(slot)) for slot in (self.input_slots if role == "IN" else self.output_slots)]

    def role_tensors(self, role: str) -> list[TensorAttr]:
        return [t for _, t in self.slot_tensors(role)]
