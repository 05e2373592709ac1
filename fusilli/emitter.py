"""Walks a validated graph and emits its torch-dialect module.

``@main`` takes the graph's outputs first (``!torch.tensor``, written in place
through ``torch.overwrite.tensor.contents``) then its non-scalar inputs
(``!torch.vtensor``), each sorted by name and in physical dim order, as
upstream Fusilli does. Each op is emitted by the emitter its module registered,
under a ``Location.name`` of its node, so compiler diagnostics point at nodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusilli import ir
from fusilli.errors import ErrorCode, fail
from fusilli.ops import EMITTERS
from fusilli.ops.emit import EmitContext, physical_type
from fusilli.tensor import data_type_of, scalar_value_of

if TYPE_CHECKING:
    from fusilli.backend.targets import Target
    from fusilli.graph import Graph


def emit_module(graph: Graph, target: Target) -> ir.Module:
    """``graph`` as a torch-dialect module, each op lowered by the rules chosen for ``target``."""
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
        _add_module_functions(graph, fn)
        b = ir.TorchBuilder()
        emit = EmitContext(b, target)
        args = list(block.arguments)
        for t, arg in zip(inputs, args[len(outputs) :]):
            emit.physical[id(t)] = arg
        with ir.InsertionPoint(block):
            for t in scalars:
                with ir.Location.name(t.name):
                    emit.physical[id(t)] = b.scalar_literal(scalar_value_of(t), data_type_of(t).mlir_name)
            for node in graph.nodes:
                emitter = EMITTERS.get(node.kind)
                if emitter is None:
                    raise fail(ErrorCode.NOT_IMPLEMENTED, f"no emitter registered for op kind {node.kind!r}")
                emit.current_node = node
                with ir.Location.name(node.name):
                    emitter(node, emit)
            for t, arg in zip(outputs, args[: len(outputs)]):
                with ir.Location.name(t.name):
                    b.overwrite(emit.physical[id(t)], arg)
            with ir.Location.unknown():
                ir.func.ReturnOp([])
    return module


def _add_module_functions(graph: Graph, main: ir.Operation) -> None:
    """Clones the functions ops call (custom ops' templates) to module scope, before @main."""
    for node in graph.nodes:
        provide = getattr(node, "module_functions", None)
        if provide is None:
            continue
        source = provide()  # an ir.Module parsed in this thread's fusilli context
        with ir.InsertionPoint(main), ir.Location.name(node.name):
            for op in source.body.operations:
                op.operation.clone()
