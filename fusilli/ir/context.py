"""The MLIR context fusilli builds and transforms IR in.

One ``ir.Context`` per thread, created on first use and kept for the life of the
thread. Compilation never imports these modules into a compiler Session's own
context (that crashes the process): the backend hands IREE the module as MLIR
bytecode instead (see fusilli/backend/compiler.py).
"""

from __future__ import annotations

import threading

from fusilli.ir.bindings import Context, Module

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
