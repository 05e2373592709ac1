"""The MLIR context fusilli builds and transforms IR in.

One ``ir.Context`` per thread, created on first use and kept for the life of the
thread. Compilation never imports these modules into a compiler Session's own
context (that crashes the process): the backend hands IREE the module as MLIR
bytecode instead (see fusilli/backend/compiler.py).
"""

from __future__ import annotations

import threading

from fusilli.ir.bindings import Context, Module, ModuleOp, Operation, OpView, WalkResult

_local = threading.local()


def fusilli_context() -> Context:
    ctx = getattr(_local, "context", None)
    if ctx is None:
        ctx = Context()
        ctx.load_all_available_dialects()
        _local.context = ctx
    return ctx


def parse_module(text: str) -> Module:
    """Parses MLIR text in fusilli's context (raises the binding's error on bad IR)."""
    return Module.parse(text, fusilli_context())


def parse_named_source(text: str, source_name: str) -> ModuleOp:
    """Parses MLIR text whose locations (and so every diagnostic, at parse time or in a
    later compile) read ``"<source_name>":<line>:<col>`` with the text's own line numbers.

    Text without a top-level ``module`` is wrapped in one opened on its first line,
    so line numbers stay those of ``text``.
    """
    wrapped = text if text.lstrip().startswith("module") else "module {" + text + "\n}"
    op = Operation.parse(wrapped, source_name=source_name, context=fusilli_context())
    if not isinstance(op, ModuleOp):
        raise ValueError(f"{source_name} holds a {op.operation.name}, not functions")
    return op


def ops_named(root: Operation | OpView, name: str) -> list[Operation]:
    """Every operation called ``name`` nested in ``root``, in walk order."""
    found: list[Operation] = []

    def visit(op: Operation) -> WalkResult:
        if op.name == name:
            found.append(op)
        return WalkResult.ADVANCE

    root.operation.walk(visit)
    return found
