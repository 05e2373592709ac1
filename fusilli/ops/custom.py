"""Custom op: a user-written torch-dialect function called from the graph.

The user gives a ``func.func private @{FUNC_NAME}(...)`` template written against
the *logical* dims of its operands, with upstream Fusilli's placeholders:
``{FUNC_NAME}``, ``{IN<i>_TYPE}`` / ``{OUT<i>_TYPE}`` (the full
``!torch.vtensor<[..],dt>``), ``{IN<i>_DTYPE}`` / ``{OUT<i>_DTYPE}`` (``f32``),
``{IN<i>_DIM<j>}`` / ``{OUT<i>_DIM<j>}`` (an extent, or ``?`` for a dynamic dim).
The caller sets every output's dim (and optionally stride and data type); nothing
is inferred but contiguous strides.

``validate()`` fills in the template, parses it in fusilli's context and checks
the function's signature against the node's tensors, so a bad template is an
``INVALID_ATTRIBUTE`` carrying the parser's diagnostic, not a crash or an opaque
compiler failure. The emitter clones the parsed function to module scope (the
one place fusilli takes MLIR text from a user) and emits a ``func.call``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fusilli import ir
from fusilli.errors import ErrorCode
from fusilli.ir.torch import DYNAMIC
from fusilli.ops.base import Attrs, Node, register_emitter, register_node
from fusilli.ops.emit import EmitContext, logical_type
from fusilli.tensor import TensorAttr, contiguous_strides, data_type_of
from fusilli.types import DataType

_PLACEHOLDER = re.compile(r"\{(FUNC_NAME|(IN|OUT)(\d+)_(TYPE|DTYPE|DIM(\d+)))\}")


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
        for slot, t in self._slot_tensors("IN"):
            self.check(
                not t.is_scalar,
                ErrorCode.INVALID_ATTRIBUTE,
                f"input {slot} '{t.name}' is a scalar, which custom ops do not support",
            )
        for slot, t in self._slot_tensors("OUT"):
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
        for t in self._tensors("OUT"):
            if not t.has_stride:
                t.set_stride(contiguous_strides(t.dim))

    def post_validate(self) -> None:
        for slot, t in self._slot_tensors("IN") + self._slot_tensors("OUT"):
            self.check_layout(slot, t)
        self._parse(self.instantiate())

    # ---- template ------------------------------------------------------------
    def _slot_tensors(self, role: str) -> list[tuple[str, TensorAttr]]:
        """(slot, tensor) of the inputs (role "IN") or outputs ("OUT"), in slot order (set after pre_validate)."""
        return [(slot, self.tensor(slot)) for slot in (self.input_slots if role == "IN" else self.output_slots)]

    def _tensors(self, role: str) -> list[TensorAttr]:
        return [t for _, t in self._slot_tensors(role)]

    def instantiate(self) -> str:
        """The template with every placeholder replaced."""

        def replace(m: re.Match) -> str:
            if m.group(1) == "FUNC_NAME":
                return self.func_name
            role, index, what = m.group(2), int(m.group(3)), m.group(4)
            tensors = self._tensors(role)
            self.check(
                index < len(tensors),
                ErrorCode.INVALID_ATTRIBUTE,
                f"MLIR template uses {m.group(0)} but the op has {len(tensors)} "
                f"{'inputs' if role == 'IN' else 'outputs'}",
            )
            t = tensors[index]
            tt = logical_type(t)
            if what == "TYPE":
                return str(tt.to_type())
            if what == "DTYPE":
                return data_type_of(t).mlir_name
            dim = int(m.group(5))
            self.check(
                dim < t.rank,
                ErrorCode.INVALID_ATTRIBUTE,
                f"MLIR template uses {m.group(0)} but {role}{index} '{t.name}' has rank {t.rank}",
            )
            return "?" if tt.dims[dim] == DYNAMIC else str(tt.dims[dim])

        template = self.attrs.mlir
        if template is None:
            raise self.error(ErrorCode.ATTRIBUTE_NOT_SET, "MLIR not set (pass mlir=<function template>)")
        with ir.fusilli_context():
            return _PLACEHOLDER.sub(replace, template)

    @property
    def template_source_name(self) -> str:
        """How locations and diagnostics name the template: ``"custom_op 'n' template":<line>:<col>``."""
        return f"custom_op '{self.name}' template"

    def _parse(self, text: str) -> ir.ModuleOp:
        """Parses the instantiated template; checks it defines @FUNC_NAME with the node's signature
        and uses only ops the compiler knows."""
        try:
            module = ir.parse_named_source(text, self.template_source_name)
        except Exception as e:  # the bindings raise MLIRError with the parser's diagnostics
            raise self.error(
                ErrorCode.INVALID_ATTRIBUTE, f"MLIR template does not parse: {_one_line(str(e))}"
            ) from None
        # torch-mlir parses an op it does not know into `torch.operator "<name>"`,
        # which no IREE pipeline lowers: refuse it here, at its template line.
        for op in ir.ops_named(module, "torch.operator"):
            raise self.error(
                ErrorCode.INVALID_ATTRIBUTE,
                f"MLIR template line {op.location.start_line}: unknown op "
                f"{ir.StringAttr(op.attributes['name']).value!r} (torch.operator: no torch-mlir "
                "lowering exists for it)",
            )
        funcs = [op for op in module.body.operations if op.operation.name == "func.func"]
        names = [ir.StringAttr(f.operation.attributes["sym_name"]).value for f in funcs]
        self.check(
            self.func_name in names,
            ErrorCode.INVALID_ATTRIBUTE,
            f"MLIR template must define func.func @{{FUNC_NAME}} (= @{self.func_name}); it defines "
            f"{['@' + n for n in names]}",
        )
        with ir.fusilli_context():
            return self._check_signature(module, funcs[names.index(self.func_name)])

    def _check_signature(self, module: ir.ModuleOp, fn: ir.Operation) -> ir.ModuleOp:
        ftype = ir.FunctionType(ir.TypeAttr(fn.operation.attributes["function_type"]).value)
        for role, types in (("IN", ftype.inputs), ("OUT", ftype.results)):
            tensors = self._tensors(role)
            what = "arguments" if role == "IN" else "results"
            self.check(
                len(types) == len(tensors),
                ErrorCode.INVALID_ATTRIBUTE,
                f"function @{self.func_name} has {len(types)} {what} but the op has {len(tensors)}",
            )
            for i, (ty, t) in enumerate(zip(types, tensors)):
                want = str(logical_type(t).to_type())
                self.check(
                    str(ty) == want,
                    ErrorCode.INVALID_ATTRIBUTE,
                    f"function @{self.func_name} {what[:-1]} {i} has type {ty}, but {role}{i} '{t.name}' is {want}",
                )
        return module

    def module_functions(self) -> ir.ModuleOp:
        """A module holding the functions to place at module scope.

        Parsed afresh in the calling thread's context: a module from another
        context must never be cloned into the one being emitted.
        """
        return self._parse(self.instantiate())


def _one_line(text: str) -> str:
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


@register_emitter("custom_op")
def emit_custom_op(node: CustomOpNode, ctx: EmitContext) -> None:
    operands = [ctx.input(slot) for slot in node.input_slots]
    result_types = [ctx.result_type(slot) for slot in node.output_slots]
    call = ir.func.CallOp(result_types, node.func_name, operands)
    for slot, value in zip(node.output_slots, call.results):
        ctx.define(slot, value)
