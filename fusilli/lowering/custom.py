"""Custom op lowering: the user's template filled in, parsed, checked, cloned to
module scope (the one place fusilli takes MLIR text from a user) and called
with ``func.call``.

The template is checked at ``validate()`` (``register_lowering_check``): a bad
template is an ``INVALID_ATTRIBUTE`` carrying the parser's diagnostic, not a
crash or an opaque compiler failure.
"""

from __future__ import annotations

import re

from fusilli import ir
from fusilli.errors import ErrorCode
from fusilli.ir.torch import DYNAMIC
from fusilli.lowering.emit import EmitContext, logical_type
from fusilli.lowering.registry import register_lowering, register_lowering_check
from fusilli.ops.custom import CustomOpNode
from fusilli.tensor import data_type_of

_PLACEHOLDER = re.compile(r"\{(FUNC_NAME|(IN|OUT)(\d+)_(TYPE|DTYPE|DIM(\d+)))\}")


def instantiate(node: CustomOpNode) -> str:
    """The template with every placeholder replaced."""

    def replace(m: re.Match) -> str:
        if m.group(1) == "FUNC_NAME":
            return node.func_name
        role, index, what = m.group(2), int(m.group(3)), m.group(4)
        tensors = node.role_tensors(role)
        node.check(
            index < len(tensors),
            ErrorCode.INVALID_ATTRIBUTE,
            f"MLIR template uses {m.group(0)} but the op has {len(tensors)} {'inputs' if role == 'IN' else 'outputs'}",
        )
        t = tensors[index]
        tt = logical_type(t)
        if what == "TYPE":
            return str(tt.to_type())
        if what == "DTYPE":
            return data_type_of(t).mlir_name
        dim = int(m.group(5))
        node.check(
            dim < t.rank,
            ErrorCode.INVALID_ATTRIBUTE,
            f"MLIR template uses {m.group(0)} but {role}{index} '{t.name}' has rank {t.rank}",
        )
        return "?" if tt.dims[dim] == DYNAMIC else str(tt.dims[dim])

    template = node.attrs.mlir
    if template is None:
        raise node.error(ErrorCode.ATTRIBUTE_NOT_SET, "MLIR not set (pass mlir=<function template>)")
    with ir.fusilli_context():
        return _PLACEHOLDER.sub(replace, template)


def template_source_name(node: CustomOpNode) -> str:
    """How locations and diagnostics name the template: ``"custom_op 'n' template":<line>:<col>``."""
    return f"custom_op '{node.name}' template"


def parse_template(node: CustomOpNode, text: str) -> ir.ModuleOp:
    """Parses the instantiated template; checks it defines @FUNC_NAME with the node's signature
    and uses only ops the compiler knows. Its locations name the node and template line, so
    later compiler diagnostics do too."""
    try:
        module = ir.parse_named_source(text, template_source_name(node))
    except Exception as e:  # the bindings raise MLIRError with the parser's diagnostics
        raise node.error(ErrorCode.INVALID_ATTRIBUTE, f"MLIR template does not parse: {_one_line(str(e))}") from None
    # torch-mlir parses an op it does not know into `torch.operator "<name>"`, which
    # no IREE pipeline lowers: refuse it here, at its template line.
    for op in ir.ops_named(module, "torch.operator"):
        raise node.error(
            ErrorCode.INVALID_ATTRIBUTE,
            f"MLIR template line {op.location.start_line}: unknown op "
            f"{ir.StringAttr(op.attributes['name']).value!r} (torch.operator: no torch-mlir lowering exists for it)",
        )
    funcs = [op for op in module.body.operations if op.operation.name == "func.func"]
    names = [ir.StringAttr(f.operation.attributes["sym_name"]).value for f in funcs]
    node.check(
        node.func_name in names,
        ErrorCode.INVALID_ATTRIBUTE,
        f"MLIR template must define func.func @{{FUNC_NAME}} (= @{node.func_name}); it defines "
        f"{['@' + n for n in names]}",
    )
    with ir.fusilli_context():
        return check_signature(node, module, funcs[names.index(node.func_name)])


def check_signature(node: CustomOpNode, module: ir.ModuleOp, fn: ir.Operation) -> ir.ModuleOp:
    ftype = ir.FunctionType(ir.TypeAttr(fn.operation.attributes["function_type"]).value)
    for role, types in (("IN", ftype.inputs), ("OUT", ftype.results)):
        tensors = node.role_tensors(role)
        what = "arguments" if role == "IN" else "results"
        node.check(
            len(types) == len(tensors),
            ErrorCode.INVALID_ATTRIBUTE,
            f"function @{node.func_name} has {len(types)} {what} but the op has {len(tensors)}",
        )
        for i, (ty, t) in enumerate(zip(types, tensors)):
            want = str(logical_type(t).to_type())
            node.check(
                str(ty) == want,
                ErrorCode.INVALID_ATTRIBUTE,
                f"function @{node.func_name} {what[:-1]} {i} has type {ty}, but {role}{i} '{t.name}' is {want}",
            )
    return module


def _one_line(text: str) -> str:
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


@register_lowering_check(CustomOpNode)
def check_custom_op(node: CustomOpNode) -> None:
    parse_template(node, instantiate(node))


@register_lowering(CustomOpNode)
def emit_custom_op(node: CustomOpNode, ctx: EmitContext) -> None:
    # Parsed afresh in the emitting thread's context: a module from another
    # context must never be cloned into the one being emitted.
    for op in parse_template(node, instantiate(node)).body.operations:
        ctx.add_module_function(op.operation)
    operands = [ctx.input(slot) for slot in node.input_slots]
    result_types = [ctx.result_type(slot) for slot in node.output_slots]
    call = ir.func.CallOp(result_types, node.func_name, operands)
    for slot, value in zip(node.output_slots, call.results):
        ctx.define(slot, value)
