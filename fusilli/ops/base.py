"""The node model shared by every op family, and the registry of node types.

An op family module (conv.py, matmul.py, ...) defines a ``Node`` subclass with
its attributes, shape/stride/dtype inference, checks and workload, and registers
it with ``@register_node``. Nodes know nothing of MLIR: their IR is built by the
lowering registered for their class and target (fusilli/lowering). The graph,
JSON (de)serialization and the reference interpreter look node types up by
``kind``; nothing dispatches on op kinds with if-chains.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from fusilli.errors import ErrorCode, FusilliError, fail
from fusilli.tensor import TensorAttr, contiguous_strides, data_type_of, is_valid_layout, strides_for_order
from fusilli.types import DataType

NODE_TYPES: dict[str, type[Node]] = {}

NodeT = TypeVar("NodeT", bound="Node")


def register_node(cls: type[NodeT]) -> type[NodeT]:
    if cls.kind in NODE_TYPES:
        raise RuntimeError(f"op kind {cls.kind!r} registered twice")
    NODE_TYPES[cls.kind] = cls
    return cls


@dataclasses.dataclass
class Attrs:
    """Base of per-op attribute dataclasses; enum fields (de)serialize by name."""

    def to_json(self) -> dict[str, Any]:
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = v.name if isinstance(v, enum.Enum) else v
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Attrs:
        kwargs = {}
        enum_types = getattr(cls, "ENUM_FIELDS", {})
        for f in dataclasses.fields(cls):
            if f.name not in data:
                continue
            v = data[f.name]
            if f.name in enum_types and v is not None:
                v = enum_types[f.name][v]
            kwargs[f.name] = v
        return cls(**kwargs)


@dataclasses.dataclass(frozen=True)
class Workload:
    """How much arithmetic a node does, for per-target compile choices."""

    kind: str
    element: DataType  # element type of the node's main operand
    flops: int


class Node:
    """One op of a graph: named input/output tensor slots plus attributes."""

    kind: ClassVar[str]
    # Class-level for every op family but custom_op, which sets them per instance.
    input_slots: tuple[str, ...]
    output_slots: tuple[str, ...]
    optional_inputs: ClassVar[frozenset[str]] = frozenset()
    attrs_type: ClassVar[type[Attrs]]
    # True when an attribute holds IR text that only the lowering can check (a custom
    # op's template): Graph.validate then runs the lowering's check for the node.
    checked_by_lowering: ClassVar[bool] = False

    def __init__(
        self,
        name: str,
        inputs: Mapping[str, TensorAttr | None],
        outputs: Mapping[str, TensorAttr | None],
        attrs: Attrs,
        compute_data_type: DataType | None = None,
    ):
        self.name = name
        self.inputs: dict[str, TensorAttr | None] = dict(inputs)
        self.outputs: dict[str, TensorAttr | None] = dict(outputs)
        self.attrs = attrs
        self.compute_data_type = compute_data_type

    # ---- errors ------------------------------------------------------------------
    def error(self, code: ErrorCode, message: str) -> FusilliError:
        """A FusilliError whose message names this node."""
        return fail(code, f"{self.kind} '{self.name}': {message}")

    def check(self, condition: object, code: ErrorCode, message: str) -> None:
        if not condition:
            raise self.error(code, message)

    # ---- tensors -----------------------------------------------------------------
    def input_tensors(self) -> list[TensorAttr]:
        return [t for t in self.inputs.values() if t is not None]

    def output_tensors(self) -> list[TensorAttr]:
        return [t for t in self.outputs.values() if t is not None]

    def tensor(self, slot: str) -> TensorAttr:
        t = self.inputs.get(slot) if slot in self.inputs else self.outputs.get(slot)
        if t is None:
            raise self.error(ErrorCode.ATTRIBUTE_NOT_SET, f"tensor {slot} not set")
        return t

    def data_type(self, slot: str) -> DataType:
        """The data type of the tensor in ``slot``, once validate has set it."""
        return data_type_of(self.tensor(slot))

    # ---- validation lifecycle (called by Graph.validate in this order) ---------
    def pre_validate(self) -> None:
        """Required attributes and tensors are present (ATTRIBUTE_NOT_SET)."""
        for slot in self.input_slots:
            if slot not in self.optional_inputs and self.inputs.get(slot) is None:
                raise self.error(ErrorCode.ATTRIBUTE_NOT_SET, f"input tensor {slot} not set")
        for slot, t in self.inputs.items():
            if t is not None and not t.has_dim:
                raise self.error(ErrorCode.ATTRIBUTE_NOT_SET, f"input {slot} '{t.name}' dims not set")

    def infer(self) -> None:
        """Fills in output dims, strides and data types the user left unset."""

    def post_validate(self) -> None:
        """Checks that the (inferred or user-set) shapes fit together."""

    def workload(self) -> Workload | None:
        """The node's arithmetic (after validate); None for memory-bound ops."""
        return None

    def batch_split_slots(self) -> frozenset[str] | None:
        """For running the graph as two half-batch calls (fusilli/batch_split.py): the slots
        whose tensors are cut in half along dim 0, every other tensor being read whole (or, for
        its ``summed_split_slots``, computed as a partial sum by each half); or None when rows of
        the result depend on other rows of dim 0 in another way (a max over the batch, batch
        statistics), so the node cannot run on half batches. After validate."""
        return None

    def summed_split_slots(self, axis: int) -> frozenset[str]:
        """For a split along ``axis`` (0: the batch, 2: a batch-1 graph's rows H; see
        ``batch_split_slots`` and ``row_split_slots``, which then name the node's inputs cut):
        the output slots whose tensors sum over that axis, so that each half computes a partial
        sum and the halves' are added after both ran (a weight gradient, a sum over the batch).
        Empty: every output is cut or read whole like any other tensor. After validate."""
        return frozenset()

    def row_split_slots(self) -> frozenset[str] | None:
        """For running a batch-1 graph as two calls over half its rows (fusilli/batch_split.py,
        ``plan_row_split``): the slots whose rank-4 tensors are cut in half along dim 2 (H of
        NCHW dims), every other tensor being read whole; or None when a row of the result
        reads other rows (any spatial window). After validate."""
        return None

    # ---- helpers for subclasses ----------------------------------------------------
    def infer_output_stride(self, out: TensorAttr, like: TensorAttr | None = None) -> None:
        """Unset output strides follow ``like``'s dim order, else contiguous."""
        if out.has_stride:
            return
        if like is not None and like.rank == out.rank and like.has_stride:
            out.set_stride(strides_for_order(out.dim, like.physical_order))
        else:
            out.set_stride(contiguous_strides(out.dim))

    def check_layout(self, slot: str, t: TensorAttr) -> None:
        self.check(
            is_valid_layout(t.dim, t.stride),
            ErrorCode.INVALID_ATTRIBUTE,
            f"tensor {slot} '{t.name}' has invalid physical representation (dim {t.dim}, stride "
            f"{t.stride}); it must be a valid permutation of the logical dimensions",
        )

    def check_contiguous_or_channels_last(self, slot: str, t: TensorAttr) -> None:
        self.check(
            t.is_contiguous or t.is_channels_last,
            ErrorCode.NOT_IMPLEMENTED,
            f"tensor {slot} '{t.name}' is neither contiguous nor channels-last as defined by its stride {t.stride}",
        )

    # ---- serialization -------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "compute_data_type": self.compute_data_type.name if self.compute_data_type else None,
            "inputs": {k: (t.name if t is not None else None) for k, t in self.inputs.items()},
            "outputs": {k: (t.name if t is not None else None) for k, t in self.outputs.items()},
            "attrs": self.attrs.to_json(),
        }
