"""Targets and flags, in-process compile, statistics, disk cache and runtime.

Names are imported from their modules on first access, so that importing
``fusilli.backend`` (or the cache and runtime alone) does not import the
compiler module and with it ``iree.compiler``.
"""

from __future__ import annotations

from fusilli.lazy import lazy_attributes

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


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)


__all__ = sorted(_LAZY)
