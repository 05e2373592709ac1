"""Walks a validated graph and emits its torch-dialect module for a target.

``@main`` takes the graph's outputs first (``!torch.tensor``, written in place
through ``torch.overwrite.tensor.contents``) then its non-scalar inputs
(``!torch.vtensor``), each sorted by name and in physical dim order, as
upstream Fusilli does. Each node is emitted by the lowering registered for its
class and the target's backend, under a ``Location.name`` of the node, so
compiler diagnostics point at nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from fusilli import ir
from fusilli.backend.targets import Target
from fusilli.lowering.emit import EmitContext, physical_type
from fusilli.lowering.registry import lowering_for
from fusilli.ops.base import Node
from fusilli.tensor import TensorAttr, data_type_of, scalar_value_of


class ValidatedGraph(Protocol):
    """What emission reads of a validated ``fusilli.graph.Graph``."""

    @property
    def nodes(self) -> Sequence[Node]: ...

    def input_tensors(self) -> Sequence[TensorAttr]: ...

    def output_tensors(self) -> Sequence[TensorAttr]: ...


def emit_module(graph: ValidatedGraph, target: Target) -> ir.Module:
    ctx = ir.fusilli_context()
    outputs = sorted(graph.output_tensors(), key=lambda t: t.name)
    inputs = sorted((t for t in graph.input_tensors() if not t.is_scalar), key=lambda t: t.name)
    scalars = [t for t in graph.input_tensors() if t.is_scalar]
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        module.operation.attributes["sym_name"] = ir.StringAttr.get("module")
        arg_types = [physical_type(t, value_semantics=False).to_type() for t in outputs]
        arg_types += [physical_type(t).to_type() for t in inputs]
        with ir.InsertionPoint(module.body):
            fn = ir.func.FuncOp("main", ir.FunctionType.get(arg_types, []))
            fn.attributes["torch.assume_strict_symbolic_shapes"] = ir.UnitAttr.get()
            block = fn.add_entry_block(arg_locs=[ir.Location.name(t.name) for t in outputs + inputs])
        b = ir.TorchBuilder()
        emit = EmitContext(b, target, fn.operation)
        args = list(block.arguments)
        for t, arg in zip(inputs, args[len(outputs) :]):
            emit.physical[id(t)] = arg
        with ir.InsertionPoint(block):
            for t in scalars:
                with ir.Location.name(t.name):
                    emit.physical[id(t)] = b.scalar_literal(scalar_value_of(t), data_type_of(t).mlir_name)
            for node in graph.nodes:
                lowering = lowering_for(node, target.backend)
                emit.current_node = node
                with ir.Location.name(node.name):
                    lowering(node, emit)
            for t, arg in zip(outputs, args[: len(outputs)]):
                with ir.Location.name(t.name):
                    b.overwrite(emit.physical[id(t)], arg)
            with ir.Location.unknown():
                ir.func.ReturnOp([])
    return module
