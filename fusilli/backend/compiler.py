"""In-process IREE compilation through ``iree.compiler.api`` (never a subprocess).

One long-lived ``Session`` per (flag set, thread): sessions are not thread-safe,
and thrown-away sessions leak their context. Modules are handed to the session
as MLIR bytecode built in fusilli's own context, never imported across contexts
(which crashes the process).

The compiler's global state (its thread pool among it) is set up once per process.
A forked child of a process that compiled has that state but not its threads: a
compile there waited forever (IREE 3.13), and so did the child's exit, in the pool's
destructor (``ireeCompilerGlobalShutdown``). Such a child gets a FusilliError instead
of a compile (``_check_not_forked``; graphs found in the cache still load, and a child
whose parent never compiled compiles as usual), and keeps the global state and its
sessions for good (``_after_fork_in_child``), so that it exits.
"""

from __future__ import annotations

import ctypes
import io
import json
import os
import shutil
import tempfile
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

from fusilli import ir
from fusilli.errors import ErrorCode, fail
from fusilli.log import logger, timed

PHASES = (
    "input",
    "abi",
    "preprocessing",
    "global-optimization",
    "dispatch-creation",
    "flow",
    "stream",
    "executable-sources",
    "executable-configurations",
    "executable-targets",
    "hal",
    "vm",
)

_local = threading.local()
# The process whose first session set up the compiler's global state (None: not yet).
_compiler_process: int | None = None
_DIAG_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p)
_SEVERITY = {0: "note", 1: "warning", 2: "error", 3: "remark"}


@dataclass
class CompileStats:
    """What the compiled graph costs to run, from IREE's scheduling statistics."""

    dispatch_count: int
    transient_memory_bytes: int
    executable_count: int = 0
    compile_seconds: float = 0.0
    # Buffer-to-buffer copies per call (IREE's stream copies: a value written once and copied
    # where each use needs it; 0 for the graphs fusilli's passes lay out in place).
    copy_count: int = 0
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def to_json(self) -> dict[str, Any]:
        return {
            "dispatch_count": self.dispatch_count,
            "transient_memory_bytes": self.transient_memory_bytes,
            "executable_count": self.executable_count,
            "compile_seconds": self.compile_seconds,
            "copy_count": self.copy_count,
        }

    @staticmethod
    def from_json(d: dict[str, Any]) -> CompileStats:
        return CompileStats(
            d["dispatch_count"],
            d["transient_memory_bytes"],
            d.get("executable_count", 0),
            d.get("compile_seconds", 0),
            d.get("copy_count", 0),
        )


def _api():
    from iree.compiler import api
    from iree.compiler.api import ctypes_dl

    lib = ctypes_dl._dylib
    if not getattr(lib, "_fusilli_sigs", False):
        lib.ireeCompilerInvocationSetCompileToPhase.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.ireeCompilerInvocationSetCompileToPhase.restype = None
        lib.ireeCompilerInvocationEnableCallbackDiagnostics.argtypes = [
            ctypes.c_void_p,
            ctypes.c_int,
            _DIAG_CALLBACK,
            ctypes.c_void_p,
        ]
        lib.ireeCompilerInvocationEnableCallbackDiagnostics.restype = None
        lib._fusilli_sigs = True
    return api, lib


class CompilerSession:
    """A compiler Session with a fixed flag set, owned by one thread."""

    def __init__(self, flags: tuple[str, ...]):
        global _compiler_process
        _check_not_forked()
        api, _ = _api()
        if _compiler_process is None:
            _compiler_process = os.getpid()
        self.flags = flags
        self._stats_dir = tempfile.mkdtemp(prefix="fusilli-stats-")
        # Sessions live as long as their thread; the directory goes with the session or at exit.
        weakref.finalize(self, shutil.rmtree, self._stats_dir, ignore_errors=True)
        self.stats_path = os.path.join(self._stats_dir, "statistics.json")
        self.session = api.Session()
        all_flags = list(flags) + [
            "--iree-scheduling-dump-statistics-format=json",
            f"--iree-scheduling-dump-statistics-file={self.stats_path}",
        ]
        for flag in all_flags:
            try:
                self.session.set_flags(flag)
            except ValueError as e:
                raise fail(
                    ErrorCode.COMPILE_FAILURE,
                    f"IREE does not accept compiler flag {flag!r} ({str(e).strip()}); check "
                    "FUSILLI_EXTRA_COMPILER_FLAGS",
                ) from None

    @staticmethod
    def get(flags: tuple[str, ...]) -> CompilerSession:
        sessions = getattr(_local, "sessions", None)
        if sessions is None:
            sessions = _local.sessions = {}
        s = sessions.get(flags)
        if s is None:
            s = sessions[flags] = CompilerSession(flags)
        return s

    def run(self, module: ir.Module, phase: str | None = None) -> tuple[Any, list[str]]:
        """Compiles ``module`` (to ``phase`` if given); returns (invocation, diagnostics)."""
        _check_not_forked()
        api, lib = _api()
        buf = io.BytesIO()
        module.operation.write_bytecode(buf)
        data = buf.getvalue()
        diagnostics: list[str] = []

        def on_diag(severity: int, message: bytes, size: int, user: Any) -> None:
            diagnostics.append(f"{_SEVERITY.get(severity, 'diag')}: {message[:size].decode(errors='replace')}")

        callback = _DIAG_CALLBACK(on_diag)
        inv = self.session.invocation()
        inv._fusilli_callback = callback  # keep alive as long as the invocation
        lib.ireeCompilerInvocationEnableCallbackDiagnostics(inv._inv_p, 0, callback, None)
        if phase is not None:
            lib.ireeCompilerInvocationSetCompileToPhase(inv._inv_p, phase.encode())
        source = api.Source.wrap_buffer(self.session, data)
        if not inv.parse_source(source):
            raise fail(ErrorCode.COMPILE_FAILURE, "IREE could not parse the module:\n" + "\n".join(diagnostics))
        if os.path.exists(self.stats_path):
            os.remove(self.stats_path)
        if not inv.execute():
            raise fail(ErrorCode.COMPILE_FAILURE, "IREE compilation failed:\n" + "\n".join(diagnostics))
        return inv, diagnostics

    def read_stats(self) -> dict[str, Any]:
        try:
            with open(self.stats_path, encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError) as e:
            raise fail(ErrorCode.COMPILE_FAILURE, f"IREE wrote no compile statistics: {e}") from None


def _after_fork_in_child() -> None:
    """In a forked child of a process that compiled: the compiler's global state and the
    forking thread's sessions are never destroyed (see the module's docstring)."""
    if _compiler_process is None:
        return
    from iree.compiler.api import ctypes_dl

    kept = [getattr(ctypes_dl, "_global_init", None), *getattr(_local, "sessions", {}).values()]
    for obj in kept:
        if obj is not None:
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _check_not_forked() -> None:
    """Raises in a forked child of a process that compiled (see the module's docstring)."""
    if _compiler_process is not None and _compiler_process != os.getpid():
        raise fail(
            ErrorCode.COMPILE_FAILURE,
            f"this process ({os.getpid()}) was forked from process {_compiler_process} after that one compiled, "
            "and the in-process IREE compiler's threads do not survive fork: compile the graphs before forking "
            "(the child then loads them from the cache), or start worker processes with the 'spawn' or "
            "'forkserver' method (multiprocessing.set_start_method, DataLoader(multiprocessing_context=...))",
        )


def compile_module(module: ir.Module, flags: tuple[str, ...]) -> tuple[bytes, CompileStats]:
    """Compiles to a VM flatbuffer; returns it with its statistics."""
    import time

    api, _ = _api()
    session = CompilerSession.get(flags)
    logger.info("compiling with flags: %s", " ".join(flags))
    start = time.perf_counter()
    with timed("IREE compile"):
        inv, _ = session.run(module)
        out = api.Output.open_membuffer()
        inv.output_vm_bytecode(out)
        vmfb = bytes(out.map_memory())
    raw = session.read_stats()
    execution = raw.get("stream-aggregate", {}).get("execution", {})
    stats = CompileStats(
        dispatch_count=int(execution.get("dispatch-count", 0)),
        # With --iree-torch-externalize-transients IREE's statistic counts 0:
        # the scratch moves to the caller's workspace, whose size the module
        # records in its reflection. Report what a run really needs.
        transient_memory_bytes=max(int(execution.get("transient-memory-size", 0)), workspace_bytes(vmfb)),
        executable_count=int(raw.get("stream-aggregate", {}).get("executable", {}).get("executable-count", 0)),
        compile_seconds=time.perf_counter() - start,
        copy_count=int(execution.get("copy-count", 0)),
        raw=raw,
    )
    return vmfb, stats


def workspace_bytes(vmfb: bytes) -> int:
    """The constant workspace size a compiled module declares (0 if none or dynamic)."""
    import iree.runtime as rt

    module = rt.VmModule.copy_buffer(_reflection_instance(), vmfb)
    fn = module.lookup_function("main$async") or module.lookup_function("main")
    return int(fn.reflection.get("iree.abi.transients.size.constant", 0)) if fn else 0


_reflection_vm_instance = None


def _reflection_instance():
    global _reflection_vm_instance
    if _reflection_vm_instance is None:
        import iree.runtime as rt

        _reflection_vm_instance = rt.VmInstance()
    return _reflection_vm_instance


def compile_module_to_phase(module: ir.Module, flags: tuple[str, ...], phase: str) -> str:
    """The module's IR after IREE's ``phase`` (input, global-optimization, ...)."""
    if phase not in PHASES:
        raise fail(ErrorCode.INVALID_ARGUMENT, f"unknown IREE phase {phase!r}; expected one of {PHASES}")
    api, _ = _api()
    inv, _ = CompilerSession.get(flags).run(module, phase)
    out = api.Output.open_membuffer()
    inv.output_ir(out)
    return bytes(out.map_memory()).decode()
