"""Targets and flags, in-process compile, statistics, disk cache and runtime."""

from fusilli.backend.cache import Artifact, compute_key, lookup, store, toolchain_versions
from fusilli.backend.compiler import PHASES, CompileStats, compile_module, compile_module_to_phase
from fusilli.backend.runtime import CompiledGraph, Handle
from fusilli.backend.targets import Backend, Target

__all__ = [
    "PHASES",
    "Artifact",
    "Backend",
    "CompileStats",
    "CompiledGraph",
    "Handle",
    "Target",
    "compile_module",
    "compile_module_to_phase",
    "compute_key",
    "lookup",
    "store",
    "toolchain_versions",
]
