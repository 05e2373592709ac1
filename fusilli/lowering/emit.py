"""What a lowering sees: its node's inputs as logical torch values, a place to
put its results, and the target the IR is built for.

Emission is deliberately naive, like upstream Fusilli's: every tensor lives in
its *physical* order between ops, each op permutes its inputs to logical order
and its results back. The layout pass (fusilli/passes/layout.py) removes the
permute pairs this leaves between ops.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fusilli import ir
from fusilli.backend.targets import Target
from fusilli.errors import ErrorCode, fail
from fusilli.ops.base import Node
from fusilli.tensor import TensorAttr, data_type_of, inverse_permutation, is_identity
from fusilli.types import DataType, torch_code_of

if TYPE_CHECKING:
    from fusilli.backend.rules import Choice


def logical_type(t: TensorAttr, dims: Sequence[int] | None = None, element: DataType | None = None) -> ir.TensorType:
    """The logical vtensor type of ``t`` (dynamic dims print as '?')."""
    dims = list(t.dim if dims is None else dims)
    for d in t.dynamic_dims:
        dims[d] = -1
    dt = element or data_type_of(t)
    return ir.TensorType(tuple(dims), dt.mlir_name)


def physical_type(t: TensorAttr, *, value_semantics: bool = True) -> ir.TensorType:
    order = t.physical_order
    dims = t.physical_dim
    dims = [-1 if order[i] in t.dynamic_dims else d for i, d in enumerate(dims)]
    return ir.TensorType(tuple(dims), data_type_of(t).mlir_name, value_semantics)


@dataclass
class EmitContext:
    """State of one module emission, handed to every lowering."""

    b: ir.TorchBuilder
    target: Target  # what the module is built for: lowerings ask its rules (``choose``)
    main: ir.Operation  # @main, before which module-scope functions are placed
    physical: dict[int, ir.Value] = field(default_factory=dict)  # id(TensorAttr) -> value
    current_node: Node | None = None  # set by the emit driver before each lowering runs

    def choose(self, aspect: str) -> Choice | None:
        """The lowering rule the target's rules choose for ``aspect`` of the current node."""
        from fusilli.backend.rules import choose, problem_of

        return choose(problem_of(self.node), self.target, aspect)

    @property
    def node(self) -> Node:
        """The node being emitted."""
        if self.current_node is None:
            raise fail(ErrorCode.INTERNAL_ERROR, "no node is being emitted")
        return self.current_node

    # ---- inputs ----------------------------------------------------------------
    def value(self, t: TensorAttr) -> ir.Value:
        try:
            return self.physical[id(t)]
        except KeyError:
            raise self.node.error(ErrorCode.INTERNAL_ERROR, f"tensor '{t.name}' used before it is defined") from None

    def logical(self, t: TensorAttr) -> ir.Value:
        """``t`` in logical dim order (permuted from physical, broadcasts expanded)."""
        v = self.value(t)
        if t.is_scalar:
            return v
        perm = inverse_permutation(t.physical_order)
        if not is_identity(perm):
            v = self.b.permute(v, perm)
        if t.broadcast_dims:
            v = self.b.expand(v, logical_type(t).dims)
        return v

    def input(self, slot: str) -> ir.Value:
        return self.logical(self.node.tensor(slot))

    def optional_input(self, slot: str) -> ir.Value:
        t = self.node.inputs.get(slot)
        return self.b.const_none() if t is None else self.logical(t)

    def cast(self, value: ir.Value, dt: DataType) -> ir.Value:
        if ir.element_type(value) == dt.mlir_name:
            return value
        return self.b.to_dtype(value, dt.mlir_name, torch_code_of(dt))

    def add_module_function(self, function: ir.Operation) -> None:
        """Clones ``function`` (built in this context) to module scope, before @main."""
        with ir.InsertionPoint(self.main):
            function.clone()

    # ---- outputs ---------------------------------------------------------------
    def result_type(self, slot: str, element: DataType | None = None) -> ir.Type:
        """The logical vtensor type of an output slot (optionally another element type)."""
        return logical_type(self.node.tensor(slot), element=element).to_type()

    def define(self, slot: str, logical_value: ir.Value) -> None:
        """Stores an op result: cast to the tensor's data type, permuted to physical order."""
        t = self.node.tensor(slot)
        v = self.cast(logical_value, data_type_of(t))
        perm = t.physical_order
        if not is_identity(perm):
            v = self.b.permute(v, perm)
        self.physical[id(t)] = v
