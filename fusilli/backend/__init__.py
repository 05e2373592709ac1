"""Targets and flags, in-process compile, statistics, disk cache and runtime.

Names are imported from their modules on first access, so that importing
``fusilli.backend`` (or the cache and runtime alone) does not import the
compiler module and with it ``iree.compiler``.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "PHASES": "fusilli.backend.compiler",
    "CompileStats": "fusilli.backend.compiler",
    "compile_module": "fusilli.backend.compiler",
    "compile_module_to_phase": "fusilli.backend.compiler",
    "Artifact": "fusilli.backend.cache",
    "compute_key": "fusilli.backend.cache",
    "lookup": "fusilli.backend.cache",
    "store": "fusilli.backend.cache",
    "toolchain_versions": "fusilli.backend.cache",
    "CompiledGraph": "fusilli.backend.runtime",
    "Handle": "fusilli.backend.runtime",
    "Backend": "fusilli.backend.targets",
    "Target": "fusilli.backend.targets",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fusilli.backend' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = sorted(_LAZY)
