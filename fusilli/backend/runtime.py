"""Running compiled graphs with ``iree.runtime``: Handle, variant-pack checks, execute.

Arrays are imported as HAL buffers without copying
(``HalAllocator.import_host_allocation``), so outputs are written straight
into the caller's memory. Every check of a variant pack happens before
anything runs, so a rejected call leaves the outputs untouched. The checks:
each key is a graph input/output given once (as object or by name; twice only
with the same array); each array has the tensor's shape, dtype and element
strides; outputs are writeable; no output shares memory with any other bound
array or the workspace (byte extents compared, then ``np.shares_memory``
where extents overlap); and no tensor's dim, stride, data type or dynamic
dims changed since ``compile`` (NOT_COMPILED otherwise: compile again).
Read-only inputs are imported through a writable alias of the same memory
(the compiled code never writes an input); misaligned arrays go through one
aligned staging copy, logged once when bound.

Repeated calls with the same pack take a fast path that re-derives, on every
call, everything the checks above depend on and compares it with the bound
pack: the ids of the keys and arrays (the binding holds references, so ids
cannot be reused), each NumPy array's shape, byte strides and dtype (a NumPy
array's data address cannot change in place), each torch tensor's data
address, shape, strides and dtype, the address, shape, strides, dtype and
writeable flag of any other array-like, the writeable flag of every NumPy
output, and ``fusilli.tensor.layout_epoch`` (bumped by every tensor setter;
when it moved, the layouts are compared with the compiled ones again).
Anything that differs sends the call through the full checks, which work per
tensor: an array whose signature (as above) equals the last one checked and
imported for that tensor reuses that check and its HAL buffer view, so a pack
with some new arrays (fresh torch outputs on every call, say) checks and
imports only those; a new array of exactly its tensor's shape, dtype and
byte strides, 64-byte aligned (what ``fs.empty`` and a fresh torch output
give), is checked by one comparison (``_ExactLayout``), anything else by the
general checks; the overlap check always runs over the whole pack. The
last array bound to each tensor stays referenced while the graph is compiled.

On CPU a compiled graph runs either inline in the calling thread (IREE's
``local-sync`` device) or on IREE's worker pool (``local-task``), chosen per
graph from its size (``choose_cpu_executor``): waking the pool costs tens of
microseconds, which only work large enough to be split across cores repays.

Threads: several threads may execute one compiled graph at once, each with its
own arrays. With ``workspace=None`` each thread gets a workspace of its own
(allocated on its first call, kept while the thread and the compiled graph
live), so such calls share no scratch and run side by side; the split
executor's calls, which share the graph's worker semaphore, scratch sums and
workspaces, take turns (``_invoke_split`` holds the graph's split lock). When
every call shared one workspace, concurrent calls wrote each other's
transients: wrong outputs inline, failed fences ("semaphore already signaled
past N") and NaNs in a split's summed outputs.

Fork: IREE's worker pools (the handle's ``local-task`` device, the split
executor's worker) are threads, which a forked child does not have: a call
queued on them waited forever. In a forked child (``os.register_at_fork``) CPU
graphs run inline on the ``local-sync`` device, which has no threads: graphs
compiled before the fork are rebound to it on their first call there (a split
graph's two halves then run one after the other), and graphs compiled in the
child are given it (``cpu_execution``), as PyTorch's DataLoader workers run on
one thread. The compiler cannot follow (``fusilli.backend.compiler``).
"""

from __future__ import annotations

import atexit
import ctypes
import dataclasses
import operator
import os
import queue
import sys
import threading
import time
import weakref
from collections.abc import Mapping
from typing import Any

import numpy as np

from fusilli import tensor as _tensor_module
from fusilli.arrays import torch_tensor_type
from fusilli.backend.cache import Artifact
from fusilli.backend.targets import (
    Backend,
    Target,
    cpu_core,
    cpu_vendor,
    default_cpu_arch,
    named_cpu,
    resolve_amdgpu_arch,
)
from fusilli.batch_split import BatchSplitPlan, plan_batch_split, plan_row_split, tensor_bytes
from fusilli.errors import ErrorCode, FusilliError, fail
from fusilli.log import logger
from fusilli.tensor import TensorAttr, as_numpy, data_type_of, physical_order

_instance_lock = threading.Lock()
_cpu_config = None
_cpu_sync_device = None

# Graphs whose compute-bound nodes do at most this many FLOPs and whose inputs and
# outputs together hold at most this many bytes run inline (local-sync); larger
# ones on the worker pool (local-task). Measured with benchmarks/cpu_executor.py
# on a 2-core VM: the pool's wake-up (10-40 us) costs more than splitting the work
# saves up to ~14 MFLOP matmuls and ~3 MB pointwise adds.
INLINE_MAX_FLOPS = 1 << 23
INLINE_MAX_BYTES = 1 << 21
_EXECUTORS = ("auto", "local-sync", "local-task", "split")


_runtime_module: Any = None


def _rt():
    global _runtime_module
    if _runtime_module is None:
        import iree.runtime as rt

        _runtime_module = rt
    return _runtime_module


class Handle:
    """A device to run compiled graphs on: ``Handle(Backend.CPU)`` or
    ``Handle(Backend.AMDGPU, device=0, arch="gfx942")``. On CPU, ``arch`` is the LLVM CPU
    name graphs are compiled for (default ``FUSILLI_CPU_ARCH`` or ``"host"``)."""

    def __init__(self, backend: Any = Backend.CPU, device: int = 0, arch: str | None = None):
        global _cpu_config
        self.backend = Backend.coerce(backend)
        self.device_index = int(device)
        rt = _rt()
        if self.backend == Backend.CPU:
            if device != 0:
                raise fail(ErrorCode.INVALID_ARGUMENT, f"the CPU backend has one device (0), not {device}")
            # The CPU code is compiled for: checked now, kept as spelled ("host" stays "host").
            self.arch = arch or default_cpu_arch()
            named_cpu(self.arch)
            with _instance_lock:
                if _cpu_config is None:
                    _cpu_config = rt.Config("local-task")
            self.instance = _cpu_config.vm_instance
            self.device = _cpu_config.device
        else:
            self.arch = resolve_amdgpu_arch(arch)
            try:
                driver = rt.get_driver("hip")
                infos = driver.query_available_devices()
                if self.device_index >= len(infos):
                    raise RuntimeError(f"{len(infos)} HIP device(s) visible")
                self.device = driver.create_device(infos[self.device_index]["device_id"])
            except FusilliError:
                raise
            except Exception as e:
                raise fail(ErrorCode.RUNTIME_FAILURE, f"cannot open AMD GPU device {self.device_index}: {e}") from None
            self.instance = rt.VmInstance()

    @property
    def sync_device(self):
        """The CPU's ``local-sync`` device: runs a graph in the calling thread (CPU only)."""
        global _cpu_sync_device
        if self.backend != Backend.CPU:
            raise fail(ErrorCode.INTERNAL_ERROR, "only the CPU backend has a synchronous device")
        with _instance_lock:
            if _cpu_sync_device is None:
                _cpu_sync_device = _rt().get_driver("local-sync").create_default_device()
        return _cpu_sync_device

    def __repr__(self) -> str:
        arch = f", arch={self.arch!r}" if self.arch else ""
        return f"Handle({self.backend}, device={self.device_index}{arch})"


@atexit.register
def _release_sync_device() -> None:
    """Drops the module's reference before the bindings are torn down (no leak report)."""
    global _cpu_sync_device
    _cpu_sync_device = None
    SplitWorker._instance = None


# How a local-task graph's calling thread waits for the worker pool:
# ``FUSILLI_CPU_WAIT`` = ``helper`` (the default on Linux) or ``inline``.
_WAIT_MODES = ("helper", "inline")


def cpu_wait_mode() -> str:
    """``"helper"`` or ``"inline"``: who makes a local-task graph's call (``FUSILLI_CPU_WAIT``).

    IREE's synchronous call spins (a ``pause`` loop) in the calling thread while
    the pool's workers run, and the pool has a worker per core, so on a machine
    with as many cores as workers the spinning caller takes a core from one of
    them until the scheduler preempts it: the call then takes a scheduling
    quantum longer. ``helper`` makes the call from a helper thread at the lowest
    CPU priority (nice 19), which the workers preempt at once, while the caller
    sleeps on a lock. Measured on the 2-core VM, 240 calls each, interleaved
    (benchmarks/cpu_wait.py): 1x1 conv 4x256x28x28->128 p90 3.5 -> 1.4 ms, 3x3 s2
    conv p90 8.0 -> 4.6 ms, matmul 1024^3 median 13.7 -> 11.8 ms; the hand-off
    costs tens of microseconds, which graphs on the pool (>= 2^23 FLOP) repay.
    Per-thread priorities are a Linux feature: elsewhere the default is inline.
    """
    default = "helper" if sys.platform == "linux" else "inline"
    choice = os.environ.get("FUSILLI_CPU_WAIT", default)
    if choice not in _WAIT_MODES:
        raise fail(ErrorCode.INVALID_ARGUMENT, f"FUSILLI_CPU_WAIT={choice!r}: expected one of {', '.join(_WAIT_MODES)}")
    return choice


# How often an idle helper checks that its calling thread still exists.
_WAITER_IDLE_CHECK_S = 1.0


class _Waiter:
    """The low-priority helper thread of one calling thread (``cpu_wait_mode``).

    Calls are made one at a time, in order. An interrupt (KeyboardInterrupt)
    while the call runs is raised once the call has finished, as it would be
    after an inline call: the outputs are never written behind the caller's back.
    """

    _local = threading.local()
    _running: list[_Waiter] = []  # stopped at exit, before the bindings are torn down

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.owner = threading.current_thread()  # the helper ends soon after its owner does
        self.requests: queue.SimpleQueue = queue.SimpleQueue()
        self.replies: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, name="fusilli-cpu-wait", daemon=True)
        self.thread.start()
        with _instance_lock:
            _Waiter._running = [w for w in _Waiter._running if w.pid == self.pid and w.thread.is_alive()]
            _Waiter._running.append(self)

    _stopped = False  # set at exit: later calls are made inline

    @classmethod
    def of_this_thread(cls) -> _Waiter | None:
        if cls._stopped:
            return None
        waiter = getattr(cls._local, "waiter", None)
        if waiter is None or waiter.pid != os.getpid():  # a forked child has no helper thread
            waiter = cls._local.waiter = _Waiter()
        return waiter

    def _serve(self) -> None:
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        except (OSError, AttributeError):
            pass  # still correct, only without the priority
        while True:
            try:
                request = self.requests.get(timeout=_WAITER_IDLE_CHECK_S)
            except queue.Empty:
                if self.owner.is_alive():
                    continue
                return
            if request is None:
                return
            invoke, fn, args, results = request
            del request
            try:
                invoke(fn, args, results)
                reply = None
            except BaseException as e:  # handed to the caller
                reply = e
            # Hold no runtime object between calls (the bindings report leaks at exit).
            del invoke, fn, args, results
            self.replies.put(reply)
            del reply

    def call(self, invoke: Any, fn: Any, args: Any, results: Any) -> None:
        self.requests.put((invoke, fn, args, results))
        interrupted: BaseException | None = None
        while True:
            try:
                reply = self.replies.get()
                break
            except BaseException as e:  # the call is still writing the outputs: wait for it
                interrupted = e
        if reply is not None:
            raise reply
        if interrupted is not None:
            raise interrupted


@atexit.register
def _stop_waiters() -> None:
    """Ends the helper threads: a helper still alive at shutdown keeps the runtime's objects
    from being torn down in order (the bindings then report them as leaked)."""
    _Waiter._stopped = True
    for waiter in _Waiter._running:
        if waiter.pid == os.getpid():
            waiter.requests.put(None)
            waiter.thread.join(timeout=5)
    _Waiter._running = []


# A signal's Python handler (KeyboardInterrupt for SIGINT) runs when the main thread's interpreter
# next looks at the flag that the C-level handler sets. In-process compiles put LLVM's handler in
# front of Python's, and the kernel may hand a process's signal to any of its threads (IREE's
# workers, LLVM's, OpenBLAS's). `fusilli-benchmark`, sent SIGINT a second into a row of 3,000,000
# calls (test_benchmark_cli.py::test_interrupted_suite_keeps_its_rows), ran the row to the end and
# exited 0 in 1 of 3 and 1 of 7 runs under pytest on the 2-vCPU Zen 1 VM (CPython 3.11): the signal
# had been handled (neither pending nor blocked in any thread, /proc/PID/task/*/status) but the
# interpreter never looked; which thread took it and what reset the interpreter's check was not
# pinned down. With this check after every graph call and compile, 24 of 24 runs stopped at once.
# PyErr_CheckSignals runs the Python handlers of any signal that arrived (in the main thread;
# elsewhere it does nothing) and ctypes.pythonapi raises what they raised: 0.28 us a call,
# beside the 12-14 us of the smallest graph's call.
_check_signals = getattr(getattr(ctypes, "pythonapi", None), "PyErr_CheckSignals", None)


def raise_pending_signals() -> None:
    """Runs the Python handlers of signals that arrived and were not acted on yet (see above): a
    Ctrl-C during a graph call or a compile raises KeyboardInterrupt once it returns."""
    if _check_signals is not None:
        _check_signals()


def _invoke_through_waiter(invoke: Any) -> Any:
    """``invoke`` (``VmContext.invoke``) made by the calling thread's low-priority helper."""

    def call(fn: Any, args: Any, results: Any) -> None:
        waiter = _Waiter.of_this_thread()
        if waiter is None:
            invoke(fn, args, results)
        else:
            waiter.call(invoke, fn, args, results)

    return call


def choose_cpu_executor(graph: Any, arch: str | None = None) -> str:
    """``"local-sync"`` (inline), ``"local-task"`` (worker pool) or ``"split"`` (two
    half-batch calls at once, fusilli/batch_split.py) for a CPU graph compiled for ``arch``
    (``cpu_execution`` says why)."""
    return cpu_execution(graph, arch).executor


# Set in a forked child (_after_fork_in_child): IREE's pool threads did not come along.
_in_forked_child = False
# Every loaded CompiledGraph of this process, so that a forked child can rebind them inline.
_loaded_graphs: weakref.WeakSet[CompiledGraph] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """Runs in a forked child: the pool devices' threads are gone, and a lock that another
    thread of the parent held at the fork stays held in the child forever. Destroying a device
    made before the fork (even the local-sync one) waits for threads the child does not have,
    forever (at the latest when the interpreter tears down the module that holds it): the
    child keeps them for good."""
    global _in_forked_child, _instance_lock
    _in_forked_child = True
    _instance_lock = threading.Lock()
    kept = [
        kept
        for owner in (_cpu_config, SplitWorker._instance, _cpu_sync_device)
        for kept in (owner, getattr(owner, "device", None))
        if kept is not None
    ]
    for obj in kept:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))
    if kept:
        from iree.runtime import _binding

        _binding.disable_leak_checker()  # kept on purpose: no leak report at the child's exit
    SplitWorker._lock = threading.Lock()
    SplitWorker._instance = None
    for graph in list(_loaded_graphs):
        graph._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


@dataclasses.dataclass(frozen=True)
class CpuExecution:
    """Where a CPU graph runs, the fact that chose it, and for ``split`` the plan and the
    half-batch graph that ``compile`` builds (made once, here)."""

    executor: str
    why: str
    plan: BatchSplitPlan | None = None
    half: Any = None  # the half-batch Graph


def cpu_execution(graph: Any, arch: str | None = None) -> CpuExecution:
    """The executor of a CPU graph compiled for ``arch`` and the fact that chose it
    (``_cpu_execution``), inline in a forked child (``_inline_if_forked``)."""
    return _inline_if_forked(_cpu_execution(graph, arch))


def _inline_if_forked(execution: CpuExecution) -> CpuExecution:
    """``execution``, but inline for the pool in a forked child, which has none of its threads;
    a split keeps its half-batch artifact (the one the parent cached) and runs both halves in
    the calling thread, one after the other."""
    if not _in_forked_child:
        return execution
    if execution.executor == "local-task":
        return CpuExecution("local-sync", f"{execution.why}; inline in a forked child (no worker threads)")
    if execution.executor == "split":
        return dataclasses.replace(execution, why=f"{execution.why}; both halves inline in a forked child")
    return execution


def _cpu_execution(graph: Any, arch: str | None = None) -> CpuExecution:
    """The executor of a CPU graph compiled for ``arch`` and the fact that chose it.

    ``FUSILLI_CPU_EXECUTOR`` (``auto``, ``local-sync``, ``local-task``, ``split``) overrides
    the rule; ``auto`` runs a graph inline when its compute-bound nodes do at most
    ``INLINE_MAX_FLOPS`` and its inputs and outputs hold at most ``INLINE_MAX_BYTES``; else
    it splits a graph that can be split where the process runs on ``SPLIT_CPUS`` CPUs, the
    tensors both halves read whole hold at most ``SPLIT_MAX_WHOLE_FRACTION`` of the bytes
    of the split ones, and the half graph gets the same lowering rules as the whole one (a
    row split's half is lowered as its whole on ``rules.LOWERED_AS_WHOLE_TARGETS``); else the
    pool, which Zen 1 always takes (``SPLIT_EXCLUDED_CORES``). A batch-1 graph whose rows split
    (``plan_row_split``) splits them without the byte limits, unless it writes more than it
    reads (``ROW_SPLIT_MAX_WRITE_RATIO``) or, on Zen 3, its halves read whole more than half the
    bytes they split (``ROW_SPLIT_MAX_WHOLE_FRACTION_BY_CORE``):
    measured on the 2-core Zen 5 VM, ResNet-50's batch-1 1x1 convs, row split against the
    pool, three in-process runs (benchmarks/conv_lowerings.py, ``auto`` against
    ``auto@local-task``), ms: 1x64x56x56->64 0.082-0.099 / 0.109-0.121, 1x256x56x56->64
    0.243-0.283 / 0.275-0.302 (both ahead in each run), 1x1024x14x14->256 (its 1 MB filter
    read by both halves) 0.310-0.635 / 0.353-0.629 (ahead in two runs, even in the third),
    1x64x56x56->256 0.265-0.328 / 0.287-0.338 (even; on AVX2, behind). A split Winograd conv
    of enough bytes runs each half as ``SPLIT_ROUNDS`` calls (``_split_rounds``). A graph whose
    outputs sum over the cut dim (a weight gradient: ``BatchSplitPlan.summed``) splits the same
    way on the cores measured (``SPLIT_SUMMED_CORES``), but not where such an output comes from a
    data-tiled GEMM (``SPLIT_SUMMED_EXCLUDED_RULES``).
    ``split`` for a graph that cannot be split runs it on the pool (logged).
    """
    choice = os.environ.get("FUSILLI_CPU_EXECUTOR", "auto")
    if choice not in _EXECUTORS:
        raise fail(
            ErrorCode.INVALID_ARGUMENT, f"FUSILLI_CPU_EXECUTOR={choice!r}: expected one of {', '.join(_EXECUTORS)}"
        )
    if choice in ("local-sync", "local-task"):
        return CpuExecution(choice, f"FUSILLI_CPU_EXECUTOR={choice}")
    if choice == "auto":
        from fusilli.backend.rules import problem_of

        # The rules' count, which covers attention too (its node has no workload: sdpa f16
        # 1x8x512x64, 1 MiB of I/O, ran inline at 9.0-9.5 ms against 5.2 on the pool).
        flops = sum(problem_of(node).flops for node in graph.nodes)
        io_bytes = sum(tensor_bytes(t) for t in (*graph.input_tensors(), *graph.output_tensors()) if not t.is_scalar)
        if flops <= INLINE_MAX_FLOPS and io_bytes <= INLINE_MAX_BYTES:
            return CpuExecution("local-sync", f"{flops} FLOP <= 2^23, {io_bytes} bytes of inputs and outputs <= 2 MiB")
        cpus = usable_cpus()
        if cpus != SPLIT_CPUS:
            return CpuExecution("local-task", f"{cpus} CPUs (the split executor is for {SPLIT_CPUS})")
        core = cpu_core(graph.target(Backend.CPU, arch).cpu)
        if core in SPLIT_EXCLUDED_CORES:
            return CpuExecution("local-task", f"{core}: the split executor measured no faster than the pool there")
    plan, why = plan_batch_split(graph)
    if plan is None and _rows_may_split(graph):
        row_plan, row_why = plan_row_split(graph)
        plan, why = (row_plan, row_why) if row_plan is not None else (None, f"{why}; rows: {row_why}")
    if plan is None:
        if choice == "split":
            logger.info("graph '%s': FUSILLI_CPU_EXECUTOR=split, but it runs on the pool: %s", graph.name, why)
        return CpuExecution("local-task", f"not split: {why}")
    half = plan.half_graph(graph)
    if choice == "auto":
        why_not = _split_does_not_pay(graph, plan, half, arch)
        if why_not is not None:
            return CpuExecution("local-task", f"not split: {why_not}")
        rounds = _split_rounds(graph, plan, arch)
        if rounds is not None:
            plan, half = rounds
            why = f"{plan.describe()}: {_SPLIT_ROUNDS_WHY}"
    return CpuExecution("split", why, plan, half)


def _rows_may_split(graph: Any) -> bool:
    """Whether a graph that cannot split its batch is worth asking whether its rows split: every
    output is a rank-4 batch-1 tensor, or a sum its node makes over the rows of such tensors (a
    batch-1 weight gradient's DW)."""
    summed = {t.name for node in graph.nodes for slot, t in node.outputs.items() if slot in node.summed_split_slots(2)}
    return all(t.rank == 4 and (t.dim[0] == 1 or t.name in summed) for t in graph.output_tensors())


# A batch split's halves run as SPLIT_ROUNDS calls each, one after another, where its graph holds a
# Winograd conv (cpu-conv-winograd: forward and stride-1 data gradients; cpu-conv-winograd-strided)
# and at least SPLIT_ROUNDS_MIN_BYTES are split: each call's transformed input and GEMM result (36
# or 25 values per tile and channel) then stay in cache. The tensors every call reads whole (the
# filter, transformed again by each call) must hold at most SPLIT_ROUNDS_MAX_WHOLE_FRACTION of the
# split bytes. 2-core Zen 5 VM (znver5), the graph at batch 8 (two halves at once) against its batch-4
# copy called twice (each call two halves of 2 at once) and its batch-2 copy called four times, in
# one process, interleaved with PyTorch (ratio): 3x3 8x64x56x56->64 (12.8 MB split) 2.13 / 1.69 /
# 1.72 ms (1.80 / 2.27 / 2.23), its dgrad 2.06 / 1.58 / 1.59 (1.94 / 2.55 / 2.52), 3x3 s2
# 8x128x56x56->128 (16 MB) 4.67 / 4.06 / 4.10 (0.87 / 1.00 / 0.99); below the bytes 3x3
# 8x128x28x28->128 (6.4 MB) 1.69 / 1.59 / 1.86; with a heavy filter 3x3 s2 8x256x28x28->256 (its
# 2.4 MB filter 0.29 of the split bytes, not split) 3.78 / 4.05 / 5.73; 1x1 convs even (8x256x56x56->128
# 3.29 / 3.35 / 3.34, 8x512x28x28->256 3.51 / 3.38 / 3.51); the strided dgrad (cpu-conv-dgrad-winograd-
# strided) mixed (8x128x56x56 4.59 / 4.90 / 4.16), left out. The shipped rule, old and new code in
# alternating processes (fusilli-benchmark), fusilli's median ms, AVX-512, four rounds: 3x3 8x64x56x56
# 2.10-2.88 -> 1.78-2.12 (one round 3.10, PyTorch's own median doubled), dgrad 1.93-2.87 -> 1.67-2.03,
# s2 8x128x56x56 4.65-5.64 -> 4.23-5.03; x86-64-v3 code (PyTorch held to AVX2), two rounds: 3.23, 3.26
# -> 2.74, 3.48; 3.43, 3.20 -> 3.19, 2.72; 8.20, 8.27 -> 7.13, 7.60.
SPLIT_ROUNDS = 2
SPLIT_ROUNDS_MIN_BYTES = 12 << 20
SPLIT_ROUNDS_MAX_WHOLE_FRACTION = 0.05
SPLIT_ROUNDS_RULES = ("cpu-conv-winograd", "cpu-conv-winograd-strided")
_SPLIT_ROUNDS_WHY = "a Winograd conv's transformed data in cache"


def _split_rounds(graph: Any, plan: BatchSplitPlan, arch: str | None) -> tuple[BatchSplitPlan, Any] | None:
    """``(plan, part graph)`` with SPLIT_ROUNDS calls a side where they pay (see above), else None."""
    from fusilli.backend import rules

    if plan.axis or plan.summed or plan.split_bytes < SPLIT_ROUNDS_MIN_BYTES:
        return None  # (a side's calls would each write the whole of a summed output)
    if plan.whole_bytes > SPLIT_ROUNDS_MAX_WHOLE_FRACTION * plan.split_bytes:
        return None
    target = graph.target(Backend.CPU, arch)
    chosen = (rules.choose(rules.problem_of(node), target, "algorithm") for node in graph.nodes)
    if not any(c is not None and c.rule.name in SPLIT_ROUNDS_RULES for c in chosen):
        return None
    rounds = dataclasses.replace(plan, rounds=SPLIT_ROUNDS)
    if not rounds.parts_line_up(graph):
        return None
    part = rounds.half_graph(graph)
    whole_lowering, part_lowering = split_lowerings(graph, part, arch)
    return (rounds, part) if part_lowering == whole_lowering else None


# Zen 1 (znver1) runs graphs on the pool: there the split executor measured no faster anywhere and
# slower where a deep GEMM's filter is read by both halves. 2-core EPYC Zen 1 VM, ResNet-50's rows
# that ``auto`` split, each compiled for both executors in one process and run interleaved with
# PyTorch, ratio to PyTorch, three runs, pool / split: 1x1 1x1024x14x14->512 (row split) 0.89, 0.77,
# 0.62 / 0.59, 0.73, 0.49; s2 1x512x28x28->1024 0.96, 0.84, 1.09 / 0.56, 0.66, 0.53; 1x1024x14x14->256
# 0.94, 0.74, 0.82 / 0.84, 0.81, 0.75; 1x256x56x56->128 1.27, 1.05, 1.30 / 1.06, 1.06, 1.07; batch
# 8: 1x1 8x1024x14x14->512 0.85, 1.02, 0.71 / 0.76, 0.80, 0.67; 8x256x14x14->1024 1.10, 1.07, 0.92 /
# 0.93, 0.80, 0.91; stem 7x7 s2 1.27, 1.30, 1.07 / 0.93, 1.23, 1.07; even (within 0.05) on 1x1
# 8x512x28x28->128/256, 8x256x56x56->128, 3x3 8x128x28x28->128, 3x3 s2 8x128x56x56->128; the split
# ahead only on 3x3 8x64x56x56->64 (1.70, 1.71, 1.65 / 1.78, 1.79, 1.75). benchmarks/cpu_split.py
# over benchmarks/cpu.txt, pool / split ms: the pool at most 3% slower on the rows auto split there,
# faster on layernorm 4096x768 (3.14 / 3.67) and the bf16 pointwise row (2.77 / 3.00).
# In alternating fusilli-benchmark processes (auto against FUSILLI_CPU_EXECUTOR=local-task, three
# rounds) the pool ran as fast or faster on those rows. The Zen 4 and Zen 5 VMs measured the split
# ahead (above and cpu_execution); Zen 2 and 3 were not measured and keep it.
SPLIT_EXCLUDED_CORES = frozenset({"znver1"})


# ``auto`` splits a graph only while the tensors both halves read whole (a conv's filter,
# a matmul's B) hold at most this fraction of the bytes of the split ones: what is done
# to them (a filter transform, data-tiling's packing) is done twice. Same-process A/B of
# the split executor against the pool, medians (benchmarks/cpu_split.py), 2-core Zen 5
# VM; whole/split bytes in brackets: wins at 3x3 4x64x56x56->64 (0.02) 1.43 vs 2.51 ms,
# 1x1 4x256x28x28->128 (0.03) 0.55 vs 0.72, 3x3 8x128x28x28->128 (0.09) 3.69 vs 4.08,
# 1x1 8x1024x14x14->256 (0.13) 3.21 vs 3.33; losses at 3x3 8x256x14x14->256 (0.74) 4.58
# vs 3.76, 3x3 8x512x7x7->512 (5.9) 11.4 vs 8.2; even at matmul 1024^3 (0.5) 8.1 vs 8.4.
SPLIT_MAX_WHOLE_FRACTION = 0.25


# ... and only graphs whose split tensors hold this many bytes: below it the split's fixed
# cost (the worker's call, its fence) is more than it saves (conv dgrad 4x64x28x28, 1.6 MB:
# 0.35 vs 0.30-0.33 ms on the pool; the suite's 1x1 conv, 4.8 MB: 0.55 vs 0.57-0.72).
SPLIT_MIN_BYTES = 4 << 20


# A row split (a batch-1 graph's rows in two halves) is kept off graphs whose split outputs
# outweigh their split inputs: 1x1 1x64x56x56->256 (writes 3.2 MB, reads 0.8 MB) as x86-64-v3
# code ran 0.71-0.72 ms split against 0.54 on the pool in two of three runs (even on AVX-512:
# 0.27-0.33 against 0.29-0.34), while those that write at most what they read gained (see
# cpu_execution).
ROW_SPLIT_MAX_WRITE_RATIO = 1.0
# AMD's AVX-512 cores split rows that write up to 4x what they read (ResNet-50's 1x1 expansions):
# 2-core Zen 5 VM (znver5), in one process, row split against the pool, two runs, ms
# (benchmarks/conv_lowerings.py, ``auto@split`` against ``auto``): 1x1 1x64x56x56->256 0.296 ->
# 0.263, 0.266 -> 0.232 (+ bias + relu 0.277 -> 0.255, 0.270 -> 0.235), 1x128x28x28->512 0.288 ->
# 0.258, 0.286 -> 0.257, 1x256x14x14->1024 0.352 -> 0.298, 0.378 -> 0.354. x86-64-v3 code there
# gained in 5 of 6 (1x128x28x28->512 0.650 -> 0.708 in one), after losing on the Zen 4 VM above.
# Intel's AVX-512 cores gain as well: Intel Xeon VM (sapphirerapids as named), python
# benchmarks/table_ab.py (this table with and without the Intel entry, in one process, run interleaved
# with PyTorch), ratio to PyTorch: 1x1 1x64x56x56->256 0.95 -> 1.07 (0.87 -> 1.06 in a run of AMD's
# rules on that host); 1x128x28x28->512 (once its 392-row halves keep the GEMM:
# rules.CPU_CONV_GEMM_1X1_FEW_ROWS_MAX_OUT_CHANNELS) 0.86 -> 0.97.
ROW_SPLIT_MAX_WRITE_RATIO_BY_TARGET = {("avx512", "amd"): 4.0, ("avx512", "intel"): 4.0}
# Per core: a row split only while the tensors both halves read whole (the filter, transposed by each
# half) hold at most this fraction of the bytes split. 2-core EPYC Zen 3 VM (znver3), ResNet-50's
# batch-1 rows that auto split by rows, in one process, ratio to PyTorch, three runs, split / pool
# (python benchmarks/conv_lowerings.py SUITE --lowering auto --lowering auto@local-task), whole/split
# bytes in brackets: 1x1 s2 1x512x28x28->1024 (2 MiB filter, 0.87) 0.74, 0.80, 0.75 / 0.93, 0.88, 0.92;
# 1x1024x14x14->512 (1.67) 0.80, 0.74, 0.71 / 0.88, 0.69, 0.72 and 1x1024x14x14->256 (1.0) 0.77, 0.73,
# 0.73 / 0.74, 0.69, 0.85, even; the split ahead below it: 1x512x28x28->256 (0.21) 1.40, 1.06, 0.99 /
# 1.21, 0.96, 0.93, 1x64x56x56->64 (0.02) 1.13, 1.16, 1.17 / 0.93, 0.78, 0.97, 1x256x56x56->64 (0.02)
# 1.36, 1.16, 1.09 / 1.16, 1.00, 1.03, s2 1x256x56x56->512 (0.14) 0.96, 1.10, 1.01 / 0.95, 0.94, 0.90.
# The rule against the split (auto against auto@split), four more runs: s2 1x512x28x28->1024 0.85,
# 0.87, 1.03, 0.96 / 0.81, 0.78, 0.93, 0.80; 1x1024x14x14->512 0.84, 0.80, 0.78, 0.90 / 0.75, 0.73,
# 0.78, 0.76; 1x1024x14x14->256 0.74, 0.86, 0.83 / 0.75, 0.76, 0.78 (and once 0.47 / 0.76, a stall).
# Other cores were not measured against it and split rows whatever the filter's bytes.
ROW_SPLIT_MAX_WHOLE_FRACTION_BY_CORE = {"znver3": 0.5}


# A split whose halves each compute a partial sum of an output (a weight gradient: DW sums over the
# images and positions) is refused where that output comes from a data-tiled GEMM: each half packs
# its operands and unpacks a whole DW, and the halves' DWs are added, so the work that does not
# halve grows while the GEMM's halves. 2-core EPYC Zen 3 VM (znver3), ResNet-50's weight gradients,
# in one process, interleaved with PyTorch, pool / split, ms (python benchmarks/conv_lowerings.py
# SUITE --lowering auto@local-task --lowering auto), two runs of 6 blocks: data-tiled (Zen 3's
# cpu-conv-wgrad-data-tiling) 1x1 1x128x28x28->512 1.16 / 1.37, 1.10 / 1.29; 1x256x14x14->1024 1.42 /
# 1.57, 1.29 / 1.38; 8x1024x14x14->256 7.64 / 9.22, 7.58 / 8.95; even: 1x1024x14x14->256 0.84 / 0.83,
# 1.17 / 1.12; 1x512x28x28->128 1.19 / 1.20, 1.29 / 1.17. The split ahead on the other lowerings':
# 3x3 8x64x56x56 (Winograd) 9.26 / 8.00, 9.89 / 8.60; 3x3 8x128x28x28 6.40 / 5.73, 7.06 / 6.81; the 7x7
# s2 stem 8x3x224x224 (row blocks) 19.7 / 18.1, 16.6 / 14.8; two more runs of 10 blocks beside the
# first two: 1x1 s2 1x256x56x56->512 (one GEMM) 3.26 / 2.96, 2.47 / 2.45, 2.12 / 1.94, 2.47 / 2.41;
# 1x64x56x56->256 0.94 / 0.94, 1.02 / 0.95, 1.04 / 0.96, 1.12 / 1.01; 1x256x56x56->64 1.02 / 0.99, 0.98 /
# 0.97, 0.92 / 0.84, 1.18 / 1.07; 8x256x56x56->64 (chunks in both halves) 8.13 / 8.50, 7.59 / 7.74, 7.20
# / 7.13, 7.03 / 6.72. Halves that fall below the whole's chunks of positions (gemm_config's 4096: a
# half of s2 8x256x56x56->512, 3136 positions, is one GEMM) are lowered otherwise
# (rules.lowering_summary's "in chunks") and refused as such: 16.8 / 21.7, 15.6 / 20.5.
SPLIT_SUMMED_EXCLUDED_RULES = ("cpu-conv-wgrad-data-tiling",)
# ... and ``auto`` splits partial sums only on the cores where that was measured (above); elsewhere
# such graphs run on the pool, as before (FUSILLI_CPU_EXECUTOR=split still splits them).
SPLIT_SUMMED_CORES = frozenset({"znver3"})


def _split_does_not_pay(graph: Any, plan: BatchSplitPlan, half: Any, arch: str | None) -> str | None:
    from fusilli.backend import rules

    if plan.axis == 0 and plan.split_bytes < SPLIT_MIN_BYTES:
        return f"{plan.split_bytes} bytes split < {SPLIT_MIN_BYTES}"
    if plan.axis == 0 and plan.whole_bytes > SPLIT_MAX_WHOLE_FRACTION * plan.split_bytes:
        return (
            f"both halves would read {plan.whole_bytes} bytes whole, > {SPLIT_MAX_WHOLE_FRACTION} of the "
            f"{plan.split_bytes} bytes split"
        )
    target = graph.target(Backend.CPU, arch)
    core = cpu_core(target.cpu)
    if plan.summed and core not in SPLIT_SUMMED_CORES:
        names = ", ".join(repr(name) for name in sorted(plan.summed))
        return (
            f"the halves' partial sums ({names}) are split only on {', '.join(sorted(SPLIT_SUMMED_CORES))} (measured)"
        )
    if plan.axis:
        # Every output is cut or summed; a summed one is not among the bytes split.
        written = sum(tensor_bytes(t) for t in graph.output_tensors() if t.name not in plan.summed)
        read = plan.split_bytes - written
        key = (rules.vector_isa(target), cpu_vendor(target.cpu) or "")
        ratio = ROW_SPLIT_MAX_WRITE_RATIO_BY_TARGET.get(key, ROW_SPLIT_MAX_WRITE_RATIO)
        if written > ratio * read:
            return f"its rows' halves would write {written} bytes, > {ratio} x the {read} they read"
        whole_fraction = ROW_SPLIT_MAX_WHOLE_FRACTION_BY_CORE.get(core or "")
        if whole_fraction is not None and plan.whole_bytes > whole_fraction * plan.split_bytes:
            return (
                f"both row halves would read {plan.whole_bytes} bytes whole, > {whole_fraction} of the "
                f"{plan.split_bytes} bytes split ({core})"
            )
    # An im2col GEMM over a spatial filter gathers a patch matrix R*S/stride^2 times its
    # input: two halves streaming theirs at once lose to the pool (7x7 s2 stem
    # 8x3x224x224->64: 13.4-13.7 vs 10.5-11.0 ms).
    for node in graph.nodes:
        problem = rules.as_lowered(rules.problem_of(node), target)
        choice = rules.choose(problem, target, "algorithm")
        if choice is not None and choice.rule in rules.CPU_CONV_GEMM_RULES and problem.fact("kernel") != (1, 1):
            return f"{node.kind} '{node.name}' is an im2col GEMM over a {problem.fact('kernel')} filter"
        if choice is not None and choice.rule.name in SPLIT_SUMMED_EXCLUDED_RULES and plan.summed:
            return f"{node.kind} '{node.name}' is {choice.rule.name}: each half would unpack a whole {node.kind} result"
    # The lowering rules choose by size: a half that falls below a threshold gets another
    # (3x3 s2 8x128x56x56->128: the explicit GEMM from 4096 rows; its halves' 3136 rows
    # went to data tiling, 22.4 ms against 7.9 on the pool).
    whole_lowering, half_lowering = split_lowerings(graph, half, arch)
    if half_lowering != whole_lowering:
        return (
            f"the half-batch graph would be lowered otherwise ({half_lowering or 'no rule'} instead of "
            f"{whole_lowering or 'no rule'})"
        )
    return None


def split_lowerings(graph: Any, half: Any, arch: str | None) -> tuple[str, str]:
    """The lowering rules (``rules.lowering_summary``) of the whole graph and of its ``half``."""
    from fusilli.backend.rules import lowered_as_parts, lowering_summary

    whole = lowering_summary(graph.nodes, graph.target(Backend.CPU, arch))
    with lowered_as_parts(half._lowered_as_parts):
        return whole, lowering_summary(half.nodes, half.target(Backend.CPU, arch))


# ``auto`` splits graphs in two where the process may run on exactly this many CPUs: the
# measurements behind the split executor (BENCHMARKS.md) are of 2-core machines, where
# one worker plus the calling thread use every core; on more cores IREE's pool, one
# worker per core, has more to give.
SPLIT_CPUS = 2
# The split executor's worker spins this long after its work before it sleeps, so that
# back-to-back calls find it awake (as PyTorch's OpenMP threads spin between ops). 1x1
# conv 4x256x28x28->128, median ms on the 2-core Zen 5 VM: spin 0 0.61-0.66, 100 0.50-0.56,
# 300 0.54, 1000 0.53-0.54 (the pool: 0.62-0.70).
SPLIT_WORKER_SPIN_US = 300


def usable_cpus() -> int:
    """The number of CPUs this process may run on (its affinity mask, where the OS has one)."""
    return len(_allowed_cpus()) or os.cpu_count() or 1


class SplitWorker:
    """The split executor's worker: a ``local-task`` device of its own with one worker
    thread, pinned to one CPU, that spins ``SPLIT_WORKER_SPIN_US`` after its work.

    IREE reads a pool's shape from its global flags when a driver is created, so they are
    set for this one driver only and put back to IREE's defaults after. While a split call
    runs, the calling thread is kept off the worker's CPU (``calling_thread_elsewhere``):
    left alone, Linux often runs both on one CPU (a thread woken by the worker is placed
    on the worker's CPU, where it then spins), and the other CPU idles for milliseconds.
    Measured with the 1x1 conv's halves on the 2-core VM: blocks of calls at 1.7-5.9 ms
    instead of 0.55, both threads seen on one CPU; re-pinning the worker off the caller's
    CPU on each call instead made the two chase each other from CPU to CPU (3.3-4.4 ms).
    """

    _lock = threading.Lock()
    _instance: SplitWorker | None = None

    def __init__(self) -> None:
        rt = _rt()
        from iree.runtime import _binding

        before = _thread_names()
        rt.flags.parse_flags("--task_topology_group_count=1", f"--task_worker_spin_us={SPLIT_WORKER_SPIN_US}")
        try:
            self.device = _binding.create_hal_driver("local-task").create_default_device()
        finally:
            rt.flags.parse_flags("--task_topology_group_count=0", "--task_worker_spin_us=0")
        # The CPUs the calling thread may use during a split call (None: no pinning).
        self.caller_cpus: set[int] | None = None
        cpus = _allowed_cpus()
        self.worker_tid = worker_tid = self._find_worker(before)
        if worker_tid is not None and len(cpus) >= 2:
            worker_cpu = max(cpus)
            try:
                os.sched_setaffinity(worker_tid, {worker_cpu})
                self.caller_cpus = cpus - {worker_cpu}
            except OSError as e:
                logger.info("split executor: cannot pin its worker thread: %s", e)
        else:
            logger.info("split executor: worker thread not found or one CPU only; threads run where Linux puts them")

    @staticmethod
    def _find_worker(before: dict[int, str]) -> int | None:
        """The worker thread the driver started (it names itself shortly after)."""
        deadline = time.monotonic() + 1.0
        while True:
            new = [tid for tid, name in _thread_names().items() if tid not in before and name.startswith("iree-worker")]
            if len(new) == 1:
                return new[0]
            if len(new) > 1 or time.monotonic() > deadline:
                return None
            time.sleep(0.001)

    @classmethod
    def get(cls) -> SplitWorker:
        with cls._lock:
            if cls._instance is None:
                cls._instance = SplitWorker()
            return cls._instance

    def calling_thread_elsewhere(self) -> set[int] | None:
        """Keeps the calling thread off the worker's CPU; returns the affinity to restore
        after the call (None: nothing changed)."""
        if self.caller_cpus is None:
            return None
        mine = os.sched_getaffinity(0)
        allowed = mine & self.caller_cpus
        if allowed == mine or not allowed:
            return None
        os.sched_setaffinity(0, allowed)
        return mine


def _thread_names() -> dict[int, str]:
    names = {}
    for tid in os.listdir("/proc/self/task") if os.path.isdir("/proc/self/task") else ():
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                names[int(tid)] = f.read().strip()
        except OSError:
            pass
    return names


def _allowed_cpus() -> set[int]:
    """The CPUs this process may run on; empty where the OS has no affinity masks."""
    try:
        return set(os.sched_getaffinity(0))
    except AttributeError:
        return set()


_UNKNOWN: Any = object()  # _slot's value signature, not computed yet


class CompiledGraph:
    """A loaded artifact bound to one graph's input/output signature."""

    def __init__(self, handle: Handle, artifact: Artifact, graph: Any, execution: CpuExecution | None = None):
        """``execution``: how a CPU graph runs (``cpu_execution``; computed here when not
        given). For ``split``, ``artifact`` is the graph's half-batch copy, run as two calls at
        once; the variant pack is still ``graph``'s, checked whole."""
        rt = _rt()
        if artifact.backend != handle.backend:
            raise fail(
                ErrorCode.INVALID_ARGUMENT,
                f"graph '{graph.name}': handle is for backend {handle.backend.name} but the artifact was "
                f"compiled for {artifact.backend.name}",
            )
        Target.from_record(artifact.target).check_runs_here(f"graph '{graph.name}': the compiled artifact")
        self.handle = handle
        self.artifact = artifact
        self.key = artifact.graph_key
        self.graph_name = graph.name
        if handle.backend == Backend.CPU and execution is None:
            execution = cpu_execution(graph, handle.arch)
            if execution.executor == "split":  # an artifact of the whole graph (load_artifact)
                execution = _inline_if_forked(CpuExecution("local-task", "a whole-batch artifact"))
        self.executor = execution.executor if execution is not None else "hip"
        self.split = split = execution.plan if execution is not None and self.executor == "split" else None
        self.device = handle.sync_device if self.executor in ("local-sync", "split") else handle.device
        try:
            self._vm_module = _load_vm_module(rt, handle.instance, artifact.vmfb)
            hal = rt.create_hal_module(handle.instance, self.device)
            self._context = rt.VmContext(handle.instance, modules=[hal, self._vm_module])
            if split is not None:
                # In a forked child both halves run in the calling thread (_inline_if_forked).
                self._use_worker(None if _in_forked_child else SplitWorker.get())
        except Exception as e:
            raise fail(ErrorCode.RUNTIME_FAILURE, f"graph '{graph.name}': cannot load artifact: {e}") from None
        self._main = self._vm_module.lookup_function("main")
        async_main = self._vm_module.lookup_function("main$async")
        reflection = (async_main or self._main).reflection
        size = reflection.get("iree.abi.transients.size.constant")
        self.dynamic_workspace = size is None and "iree.abi.transients.size" in reflection
        self._size_fn = self._vm_module.lookup_function(reflection.get("iree.abi.transients.size", ""))
        self.workspace_size = int(size or 0)
        if split is not None:
            if async_main is None or self.dynamic_workspace:
                raise fail(ErrorCode.INTERNAL_ERROR, f"graph '{graph.name}': the half-batch artifact has no main$async")
            self._worker_main = async_main
            # One split call at a time: they share the semaphore's timeline, the worker half's
            # scratch sums and the two halves' workspaces.
            self._split_lock = threading.Lock()
            # Each half gets its own aligned part of the workspace.
            self._half_workspace_size = self.workspace_size
            self.workspace_size = 2 * _round_up(self._half_workspace_size, _ALIGNMENT)
            self._own_split_workspaces: tuple[Any, Any] | None = None
        # Argument order of @main: outputs then non-scalar inputs, each sorted by name.
        self.outputs = sorted(graph.output_tensors(), key=lambda t: t.name)
        self.inputs = sorted((t for t in graph.input_tensors() if not t.is_scalar), key=lambda t: t.name)
        self._by_name: dict[str, TensorAttr] = {t.name: t for t in graph.all_tensors()}
        self._io_ids = frozenset(id(t) for t in (*self.outputs, *self.inputs))  # held in outputs/inputs
        # What the artifact was compiled for; a tensor changed since is refused.
        self._compiled_layouts = {t.name: _layout_of(t) for t in (*self.outputs, *self.inputs)}
        # Per tensor, the last aligned array bound to it, checked and imported
        # (_Slot). A rebind (a pack with some new arrays, e.g. fresh torch outputs
        # each call) reuses the slots whose value signature is unchanged and
        # checks and imports only the new arrays; the overlap check always runs.
        self._slots: dict[str, _Slot] = {}
        self._layouts_checked_at = -1
        self._roles = [(t, True) for t in self.outputs] + [(t, False) for t in self.inputs]
        self._hal_types = {t.name: _hal_element_type(t) for t in (*self.outputs, *self.inputs)}
        # Per tensor with static dims, the array layout a new value usually has (_ExactLayout):
        # one comparison stands for the layout checks, so binding a fresh array (a new torch
        # output each call) costs its import, not the general checks.
        self._exact_layouts = {
            t.name: exact
            for t in (*self.outputs, *self.inputs)
            if (exact := _ExactLayout.of(t, self.split is not None)) is not None
        }
        self._memory_type = rt.MemoryType.DEVICE_LOCAL | rt.MemoryType.HOST_VISIBLE
        # Per calling thread, the workspace its calls with workspace=None run in (threads
        # calling at once must not share transients).
        self._own_workspaces = threading.local()
        self._empty_workspace = None  # the 1-byte buffer of graphs that need none
        self._binding: _Binding | None = None
        self._invoke_fn = self._context.invoke  # pre-bound for the fast path
        if self.executor == "local-task" and cpu_wait_mode() == "helper":
            self._invoke_fn = _invoke_through_waiter(self._context.invoke)
        elif split is not None:
            self._invoke_fn = self._invoke_split
        logger.info("graph '%s': runs on %s", graph.name, self.executor)
        self._no_results = rt.VmVariantList(0)  # @main returns nothing; reused by every call
        self._rebind_inline = False  # set in a forked child: rebind before the next call
        if handle.backend == Backend.CPU:
            _loaded_graphs.add(self)

    def _use_worker(self, worker: SplitWorker | None) -> None:
        """Where a split's worker half runs: on ``worker``'s one-thread pool, or with None on the
        synchronous device, in the calling thread (a forked child)."""
        rt = _rt()
        self._worker = worker
        self._worker_device = self.handle.sync_device if worker is None else worker.device
        hal = rt.create_hal_module(self.handle.instance, self._worker_device)
        self._worker_context = rt.VmContext(self.handle.instance, modules=[hal, self._vm_module])
        self._worker_semaphore, self._worker_timepoint = self._worker_device.create_semaphore(0), 0

    def _forked(self) -> None:
        """In a forked child, right after the fork: a pool or split graph's next call rebinds it
        (``_inline_in_child``); a local-sync one runs as it is."""
        if self.executor in ("local-task", "split"):
            self._binding = None
            self._rebind_inline = True
        if self.split is not None:
            self._split_lock = threading.Lock()  # another thread may have held it at the fork

    def _inline_in_child(self) -> None:
        """Moves a pool or split graph loaded before a fork onto the child's ``local-sync``
        device: the pool's own context, or the split's worker half, now run in the calling
        thread (the worker half first, as ``main$async`` on the synchronous device). The
        arrays and workspaces imported on the pool devices are imported again."""
        rt = _rt()
        if self.split is None:
            sync = self.handle.sync_device
            hal = rt.create_hal_module(self.handle.instance, sync)
            context = rt.VmContext(self.handle.instance, modules=[hal, self._vm_module])
            self.device, self._context, self._invoke_fn = sync, context, context.invoke
            self.executor = "local-sync"
        else:
            self._use_worker(None)
            self._own_split_workspaces = None
        logger.info(
            "graph '%s': in a forked child, runs inline (IREE's worker threads do not survive fork)", self.graph_name
        )
        self._slots = {}
        self._own_workspaces = threading.local()
        self._empty_workspace = None
        self._rebind_inline = False

    # ------------------------------------------------------------------ checks
    def _resolve(self, variant_pack: Mapping[Any, Any]) -> dict[int, tuple[TensorAttr, Any, int]]:
        """Per graph tensor's id: the tensor, its array and the array's place in the pack."""
        resolved: dict[int, tuple[TensorAttr, Any, int]] = {}
        io_ids = self._io_ids
        for index, (key, array) in enumerate(variant_pack.items()):
            t = key if isinstance(key, TensorAttr) else self._by_name.get(key) if isinstance(key, str) else None
            if t is None or (id(t) not in io_ids and self._by_name.get(t.name) is not t):
                raise fail(
                    ErrorCode.VARIANT_PACK_ERROR,
                    f"graph '{self.graph_name}': variant pack key {getattr(key, 'name', key)!r} is not a tensor "
                    "of this graph",
                )
            if t.is_scalar:
                raise fail(
                    ErrorCode.VARIANT_PACK_ERROR,
                    f"graph '{self.graph_name}': scalar constant tensor '{t.name}' found in variant pack",
                )
            if t.is_virtual:
                raise fail(
                    ErrorCode.VARIANT_PACK_ERROR,
                    f"graph '{self.graph_name}': virtual tensor '{t.name}' found in variant pack "
                    "(only graph inputs and outputs are passed)",
                )
            previous = resolved.get(id(t))
            if previous is not None and previous[1] is not array:
                raise fail(
                    ErrorCode.VARIANT_PACK_ERROR,
                    f"graph '{self.graph_name}': tensor '{t.name}' is given twice (as the tensor and by name) "
                    "with different arrays",
                )
            resolved[id(t)] = (t, array, index)
        for role, tensors in (("output", self.outputs), ("input", self.inputs)):
            for needed in tensors:
                if id(needed) not in resolved:
                    raise fail(
                        ErrorCode.VARIANT_PACK_ERROR,
                        f"graph '{self.graph_name}': {role} tensor '{needed.name}' missing from variant pack",
                    )
        return resolved

    def _check_array(self, t: TensorAttr, array: Any, is_output: bool) -> np.ndarray:
        try:
            arr = as_numpy(array)
        except FusilliError as e:
            raise fail(
                ErrorCode.VARIANT_PACK_ERROR, f"graph '{self.graph_name}': tensor '{t.name}': {e.message}"
            ) from None
        self._check_layout(t, arr)
        if is_output and not arr.flags.writeable:
            raise fail(
                ErrorCode.VARIANT_PACK_ERROR, f"graph '{self.graph_name}': tensor '{t.name}': output array is read-only"
            )
        return arr

    def _check_layout(self, t: TensorAttr, arr: np.ndarray) -> None:
        where = f"graph '{self.graph_name}': tensor '{t.name}'"
        if arr.ndim != t.rank or any(
            a != d for i, (a, d) in enumerate(zip(arr.shape, t.dim)) if i not in t.dynamic_dims
        ):
            raise fail(ErrorCode.VARIANT_PACK_ERROR, f"{where}: array shape {list(arr.shape)} != dim {t.dim}")
        dt = data_type_of(t)
        if arr.dtype != dt.numpy_dtype:
            raise fail(
                ErrorCode.VARIANT_PACK_ERROR,
                f"{where}: array dtype {arr.dtype} != {dt.name} ({dt.numpy_dtype})",
            )
        if arr.size == 0:
            return  # no element to lay out: any strides (NumPy 2 gives empty arrays 0s)
        itemsize = arr.dtype.itemsize
        if any(s % itemsize for s in arr.strides):
            raise fail(ErrorCode.VARIANT_PACK_ERROR, f"{where}: array strides {arr.strides} are not whole elements")
        elem_strides = [s // itemsize for s in arr.strides]
        if t.dynamic_dims:
            ok = physical_order(arr.shape, elem_strides) == t.physical_order and _dense(arr.shape, elem_strides)
        else:
            ok = all(a == s for a, s, d in zip(elem_strides, t.stride, t.dim) if d != 1)
        if not ok:
            raise fail(
                ErrorCode.VARIANT_PACK_ERROR,
                f"{where}: array element strides {elem_strides} do not match the tensor's stride {t.stride}",
            )

    def _check_layouts_unchanged(self) -> None:
        """Dims, strides, data types and dynamic dims are compiled in: a change since is refused.
        Nothing can have changed while ``layout_epoch`` stays where the last pass saw it."""
        epoch = _tensor_module.layout_epoch
        if epoch == self._layouts_checked_at:
            return
        for t in (*self.outputs, *self.inputs):
            then, now = self._compiled_layouts[t.name], _layout_of(t)
            if then != now:
                what = ", ".join(
                    f"{field} {a} -> {b}"
                    for field, a, b in zip(("dim", "stride", "data type", "dynamic dims"), then, now)
                    if a != b
                )
                raise fail(
                    ErrorCode.NOT_COMPILED,
                    f"graph '{self.graph_name}': tensor '{t.name}' changed since compile ({what}); call compile() "
                    "again",
                )
        self._layouts_checked_at = epoch

    def _check_no_overlap(self, slots: list[_Slot], workspace: Any) -> None:
        """No output may share memory with another bound array (or the workspace): the
        compiled code would read what it has already overwritten, or one result would
        overwrite another."""
        extents = [(slot.what, slot.arr, slot.extent, slot.is_output) for slot in slots]
        if workspace is not None:
            ws = as_numpy(workspace)
            extents.append(("the workspace", ws, _byte_extent(ws), True))  # written like an output
        for i, (what, arr, extent, written) in enumerate(extents):
            if not written or extent is None:
                continue
            for j, (other, other_arr, other_extent, other_written) in enumerate(extents):
                if j == i or (other_written and j < i) or other_extent is None:
                    continue  # a pair of written arrays is checked once
                if extent[0] < other_extent[1] and other_extent[0] < extent[1] and _shares_memory(arr, other_arr):
                    raise fail(
                        ErrorCode.VARIANT_PACK_ERROR,
                        f"graph '{self.graph_name}': {what} shares memory with {other}; an output may not overlap "
                        "any other bound array",
                    )

    # ------------------------------------------------------------------ execute
    def execute(self, variant_pack: Mapping[Any, Any], workspace: Any = None) -> None:
        binding = self._binding
        sig = None
        if binding is not None:
            sig = binding.signature_of(variant_pack, workspace)
            if sig is not None and sig == binding.sig and binding.outputs_writeable():
                if binding.epoch != _tensor_module.layout_epoch:
                    self._check_layouts_unchanged()
                    binding.epoch = self._layouts_checked_at
                if binding.direct:
                    try:
                        self._invoke_fn(self._main, binding.args, self._no_results)
                    except Exception as e:
                        raise fail(
                            ErrorCode.RUNTIME_FAILURE, f"graph '{self.graph_name}': execution failed: {e}"
                        ) from None
                else:
                    binding.run(self)
                return
        if not isinstance(variant_pack, Mapping):
            raise fail(ErrorCode.VARIANT_PACK_ERROR, f"variant pack must be a mapping, not {type(variant_pack)}")
        binding = self._bind(variant_pack, workspace, (sig, binding.fast) if binding is not None else None)
        self._binding = binding
        binding.run(self)

    def _bind(
        self, variant_pack: Mapping[Any, Any], workspace: Any, previous_sig: tuple[list | None, bool] | None = None
    ) -> _Binding:
        """Checks the whole variant pack, then builds the argument list (nothing runs yet)."""
        if self._rebind_inline:
            self._inline_in_child()
        epoch = _tensor_module.layout_epoch
        self._check_layouts_unchanged()
        resolved = self._resolve(variant_pack)
        # The values' signatures execute just computed, where it computed them.
        sig, fast = previous_sig if previous_sig is not None else (None, True)
        value_sigs = _Binding.value_signatures(sig, fast, len(variant_pack))
        slots = []
        for t, is_output in self._roles:
            _, value, index = resolved[id(t)]
            slots.append(self._slot(t, value, is_output, value_sigs[index] if value_sigs is not None else _UNKNOWN))
        self._check_no_overlap(slots, workspace)
        args = _rt().VmVariantList(len(slots) + 1)
        if self.split is not None:
            # (the inline half's lists, the worker half's references), per round, and the summed
            # outputs' (inline half's array, worker half's) pairs to add once both are done.
            rounds = self.split.rounds
            sums = [slot.summed for slot in slots if slot.summed is not None]
            args = ([_rt().VmVariantList(len(slots) + 1) for _ in range(rounds)], [[] for _ in range(rounds)], sums)
        binding = _Binding(args, variant_pack, workspace, epoch, previous_sig)
        binding.numpy_outputs = [a for t in self.outputs if type(a := resolved[id(t)][1]) is np.ndarray]
        for slot in slots:
            if slot.staging is not None:
                (binding.copy_out if slot.is_output else binding.copy_in).append(slot.staging)
            if slot.int4 is not None:
                binding.int4_in.append(slot.int4)
            binding.keep_alive.append(slot.view)
            if self.split is None:
                binding.args.push_ref(slot.view.ref)
            else:
                for inline, view in zip(binding.args[0], slot.view[0]):
                    inline.push_ref(view.ref)
                for worker, view in zip(binding.args[1], slot.view[1]):
                    worker.append(view.ref)
        if self.split is None:
            ws = self._workspace_buffer(workspace, binding.keep_alive)
            binding.args.push_ref(ws.ref if ws is not None else self._null_workspace())
        else:
            # A side's calls run one after another: they share that side's scratch.
            ws = self._split_workspaces(workspace)
            for inline in binding.args[0]:
                inline.push_ref(ws[0].ref)
            for worker in binding.args[1]:
                worker.append(ws[1].ref)
        binding.keep_alive.append(ws)
        binding.direct = not (binding.copy_in or binding.copy_out or binding.int4_in)
        return binding

    def _slot(self, t: TensorAttr, value: Any, is_output: bool, sig: Any = _UNKNOWN) -> _Slot:
        """``value`` checked and imported for ``t``: the cached slot when the value's
        signature (NumPy: the same object, shape, strides and dtype; torch: address,
        shape, strides and dtype; others: address, shape, strides, dtype and
        writeability; ``sig`` when the caller computed it) matches the last one checked,
        else checked and imported anew."""
        if sig is _UNKNOWN:
            try:
                sig = _value_signature(value)
            except (FusilliError, AttributeError, TypeError):
                sig = None  # not an array: _check_array reports it
        cached = self._slots.get(t.name)
        if (
            sig is not None
            and cached is not None
            and cached.sig == sig
            and (type(value) is not np.ndarray or cached.value is value)
        ):
            if is_output and not cached.arr.flags.writeable:
                self._check_array(t, value, is_output)  # raises: read-only
            return cached
        exact = self._exact_layouts.get(t.name)
        if exact is not None:
            slot = self._exact_slot(t, exact, sig, value, is_output)
            if slot is not None:
                self._slots[t.name] = slot
                return slot
        arr = self._check_array(t, value, is_output)
        if arr.size == 0:
            # An extent of 0 in a dynamic dim (an empty batch): no element to read or write, so an
            # array in the tensor's own layout stands in. NumPy 2 gives empty arrays strides of 0,
            # which the physical view would collapse like a broadcast dim (IREE then refused the
            # call: "expected shape 0x8, actual shape 0x1").
            phys = aligned_empty([arr.shape[i] for i in t.physical_order], arr.dtype)
        else:
            phys = self._physical_view(t, arr)
        staging = int4 = None
        if phys.__array_interface__["data"][0] % _ALIGNMENT:
            # IREE's CPU kernels assume 64-byte aligned buffers (misaligned
            # ones crash); such arrays go through an aligned staging copy.
            logger.info(
                "graph '%s': tensor '%s' is not 64-byte aligned: copied through an aligned buffer on each execute",
                self.graph_name,
                t.name,
            )
            buffer = aligned_empty(phys.shape, phys.dtype)
            staging = (buffer, phys) if is_output else (phys, buffer)
            phys = buffer
        summed = None
        if data_type_of(t).name == "INT4":
            view, int4 = self._import_int4(t, phys, is_output)
        elif self.split is not None and t.name in self.split.summed:
            view, summed = self._import_summed(t, phys)
        else:
            view = self._import(t, phys)
        what = f"{'output' if is_output else 'input'} tensor '{t.name}'"
        slot = _Slot(sig, value, arr, _byte_extent(arr), view, is_output, what, staging, int4, summed)
        if staging is None and int4 is None:
            self._slots[t.name] = slot
        return slot

    def _exact_slot(self, t: TensorAttr, exact: _ExactLayout, sig: Any, value: Any, is_output: bool) -> _Slot | None:
        """``value`` bound for ``t`` when it is a NumPy array (or a plain CPU torch tensor) of
        exactly the tensor's shape, dtype and byte strides, aligned (and writeable for an
        output); None sends it through the general checks, which also word any error."""
        arr = value if type(value) is np.ndarray else _plain_torch_as_numpy(value)
        if arr is None or arr.shape != exact.shape or arr.dtype != exact.dtype or arr.strides != exact.strides:
            return None
        if is_output and not arr.flags.writeable:
            return None
        base = arr.__array_interface__["data"][0]
        if base % _ALIGNMENT:
            return None
        phys = arr.transpose(exact.order)
        if exact.broadcast_index is not None:
            phys = phys[exact.broadcast_index]
        if not phys.flags.c_contiguous:
            raise fail(ErrorCode.INTERNAL_ERROR, f"tensor '{t.name}': physical view is not dense")
        view = self._import(t, phys)
        extent = (base + exact.extent[0], base + exact.extent[1])
        what = f"{'output' if is_output else 'input'} tensor '{t.name}'"
        return _Slot(sig, value, arr, extent, view, is_output, what, None, None)

    def _invoke(self, args) -> None:
        try:
            self._invoke_fn(self._main, args, self._no_results)
        except Exception as e:
            raise fail(ErrorCode.RUNTIME_FAILURE, f"graph '{self.graph_name}': execution failed: {e}") from None

    def _invoke_split(self, fn: Any, args: Any, results: Any) -> None:
        """Both halves at once: the worker's through ``main$async`` (it returns once the work
        is queued), the other inline; returns when both are done, even when one failed. With
        rounds, each side makes its calls one after another: the worker's each wait on the one
        before (they share its scratch), the inline ones return in turn. A summed output's two
        partial sums are added once both halves succeeded. Calls from several threads take
        turns (the graph's split lock)."""
        with self._split_lock:
            self._invoke_split_locked(fn, args, results)

    def _invoke_split_locked(self, fn: Any, args: Any, results: Any) -> None:
        rt = _rt()
        inline_lists, worker_lists, sums = args
        restore = self._worker.calling_thread_elsewhere() if self._worker is not None else None
        last = None  # the fence the worker's last queued call signals
        try:
            before = rt.HalFence(1)  # waits on nothing
            try:
                for worker_refs in worker_lists:
                    self._worker_timepoint += 1
                    done = rt.HalFence.create_at(self._worker_semaphore, self._worker_timepoint)
                    worker_args = rt.VmVariantList(len(worker_refs) + 2)
                    for ref in worker_refs:
                        worker_args.push_ref(ref)
                    worker_args.push_ref(before.ref)
                    worker_args.push_ref(done.ref)
                    self._worker_context.invoke(self._worker_main, worker_args, results)
                    before = last = done
                for inline_args in inline_lists:
                    self._context.invoke(fn, inline_args, results)
            finally:
                try:
                    if last is not None:
                        last.wait()
                except Exception:
                    # A failed semaphore stays failed: the next call gets a new one.
                    self._worker_semaphore = self._worker_device.create_semaphore(0)
                    self._worker_timepoint = 0
                    raise
            for total, part in sums:  # both halves done: the worker's partial sums into the caller's
                np.add(total, part, out=total)
        finally:
            if restore is not None:
                os.sched_setaffinity(0, restore)

    def _physical_view(self, t: TensorAttr, arr: np.ndarray) -> np.ndarray:
        """``arr`` viewed in the tensor's memory order (C-contiguous, broadcasts collapsed)."""
        order = (
            physical_order(arr.shape, [s // arr.itemsize for s in arr.strides]) if t.dynamic_dims else t.physical_order
        )
        phys = arr.transpose(order)
        index = tuple(slice(0, 1) if s == 0 and d != 1 else slice(None) for s, d in zip(phys.strides, phys.shape))
        phys = phys[index]
        if not phys.flags.c_contiguous:
            raise fail(ErrorCode.INTERNAL_ERROR, f"tensor '{t.name}': physical view is not dense")
        return phys

    def _import(self, t: TensorAttr, phys: np.ndarray):
        if self.split is None:
            return self._import_flat(t, phys.reshape(-1).view(np.uint8), phys.shape)
        # Split: (inline half's view, worker half's view), each imported on its device. The
        # cut dim is outermost in memory but for dims of extent 1 (the plan checked), so each
        # half is one dense block of the physical view.
        # With rounds, each side's half is cut again into that many parts, one per call; a tensor
        # read whole is imported once per side, its view shared by that side's calls.
        rounds = self.split.rounds
        devices = (self.device, self._worker_device)
        if t.name not in self.split.split:
            return tuple(
                (self._import_flat(t, phys.reshape(-1).view(np.uint8), phys.shape, d),) * rounds for d in devices
            )
        h = self.split.half_of(t)
        lead = (slice(None),) * self.split.physical_axis(t)
        parts = [phys[(*lead, slice(i * h, (i + 1) * h))] for i in range(2 * rounds)]
        if not all(part.flags.c_contiguous for part in parts):
            raise fail(ErrorCode.INTERNAL_ERROR, f"tensor '{t.name}': a split half is not dense")
        return tuple(
            tuple(
                self._import_flat(t, part.reshape(-1).view(np.uint8), part.shape, d)
                for part in parts[i * rounds :][:rounds]
            )
            for i, d in enumerate(devices)
        )

    def _import_summed(self, t: TensorAttr, phys: np.ndarray):
        """A split's output that each half computes a partial sum of (``BatchSplitPlan.summed``):
        the inline half writes the caller's array, the worker's half a scratch array of the same
        shape (fusilli's, one per bound array), added into the first once both are done."""
        scratch = aligned_empty(phys.shape, phys.dtype)
        views = (
            (self._import_flat(t, phys.reshape(-1).view(np.uint8), phys.shape),),
            (self._import_flat(t, scratch.reshape(-1).view(np.uint8), phys.shape, self._worker_device),),
        )
        return views, (phys, scratch)

    def _import_int4(self, t: TensorAttr, phys: np.ndarray, is_output: bool):
        """int4 inputs are packed two to a byte into a buffer of fusilli's, refilled on
        every execute (the caller may change the array's contents between calls)."""
        if is_output:
            raise fail(ErrorCode.NOT_IMPLEMENTED, f"tensor '{t.name}': int4 graph outputs are not supported")
        flat = phys.reshape(-1).view(np.uint8)
        packed = aligned_empty(((flat.size + 1) // 2,), np.uint8)  # IREE's CPU kernels need 64-byte alignment
        return self._import_flat(t, packed, phys.shape), (flat, packed)

    def _import_flat(self, t: TensorAttr, flat: np.ndarray, shape: tuple, device: Any = None):
        rt = _rt()
        if not flat.flags.writeable:
            # A read-only input (np.broadcast_to views are read-only too): IREE imports
            # only writable buffers, and the compiled code never writes an input, so it
            # gets a writable alias of the same memory (kept alive by the binding's
            # reference to the caller's array).
            flat = np.ctypeslib.as_array((ctypes.c_uint8 * flat.size).from_address(flat.ctypes.data))
        device = device or self.device
        buf = device.allocator.import_host_allocation(flat, self._memory_type, rt.BufferUsage.DEFAULT)
        return rt.HalBufferView(buf, list(shape), self._hal_types[t.name])

    def _workspace_buffer(self, workspace: Any, views: list[Any]):
        rt = _rt()
        size = self.workspace_size
        if self.dynamic_workspace:
            size = self._query_dynamic_workspace(views)
        raw = self._callers_workspace(workspace, size)
        if raw is not None:
            return self.device.allocator.import_host_allocation(raw, self._memory_type, rt.BufferUsage.DEFAULT)
        if size == 0:
            return None
        own = getattr(self._own_workspaces, "buffer", None)
        if own is None or own.byte_length() < size:
            logger.info(
                "graph '%s': allocating a %d-byte workspace for thread '%s'",
                self.graph_name,
                size,
                threading.current_thread().name,
            )
            own = self._own_workspaces.buffer = self.device.allocator.allocate_buffer(
                rt.MemoryType.DEVICE_LOCAL, rt.BufferUsage.DEFAULT, size
            )
        return own

    def _split_workspaces(self, workspace: Any) -> tuple[Any, Any]:
        """The two halves' scratch buffers (inline's, worker's): consecutive aligned parts of
        the caller's workspace (``workspace_size`` covers both), else fusilli's own."""
        rt = _rt()
        half = _round_up(self._half_workspace_size, _ALIGNMENT)
        raw = self._callers_workspace(workspace, self.workspace_size) if half else None
        if raw is not None:
            first, second = raw[:half], raw[half : 2 * half]
            return (
                self.device.allocator.import_host_allocation(first, self._memory_type, rt.BufferUsage.DEFAULT),
                self._worker_device.allocator.import_host_allocation(second, self._memory_type, rt.BufferUsage.DEFAULT),
            )
        if self._own_split_workspaces is None:
            size = max(half, 1)  # the externalized-transients ABI always takes a buffer
            self._own_split_workspaces = (
                self.device.allocator.allocate_buffer(rt.MemoryType.DEVICE_LOCAL, rt.BufferUsage.DEFAULT, size),
                self._worker_device.allocator.allocate_buffer(rt.MemoryType.DEVICE_LOCAL, rt.BufferUsage.DEFAULT, size),
            )
        return self._own_split_workspaces

    def _callers_workspace(self, workspace: Any, size: int) -> np.ndarray | None:
        """The 64-byte aligned bytes of the caller's ``workspace`` (IREE's CPU kernels need
        aligned scratch), or None: none given, or too little room once aligned (fusilli's
        own is used). A buffer smaller than ``size`` or not writeable and contiguous is refused."""
        if workspace is None:
            return None
        ws = as_numpy(workspace)
        if ws.nbytes < size:
            raise fail(
                ErrorCode.INVALID_ARGUMENT,
                f"graph '{self.graph_name}': workspace buffer too small ({ws.nbytes} < {size} bytes)",
            )
        if not ws.flags.c_contiguous or not ws.flags.writeable:
            raise fail(ErrorCode.INVALID_ARGUMENT, "workspace must be a writeable contiguous buffer")
        raw = ws.reshape(-1).view(np.uint8)
        skip = (-raw.ctypes.data) % _ALIGNMENT
        if raw.nbytes - skip >= size:
            return raw[skip:]
        logger.info(
            "graph '%s': caller's workspace is not 64-byte aligned with room to spare; using fusilli's own",
            self.graph_name,
        )
        return None

    def _query_dynamic_workspace(self, views: list[Any]) -> int:
        """Asks the module how much scratch these extents need (dynamic dims).

        The size function takes main$async's arguments: the buffer views, a
        workspace buffer and two fences, which it does not use.
        """
        rt = _rt()
        args = rt.VmVariantList(len(views) + 3)
        for v in views:
            args.push_ref(v.ref)
        args.push_ref(self._null_workspace())
        args.push_ref(rt.HalFence(1).ref)
        args.push_ref(rt.HalFence(1).ref)
        out = rt.VmVariantList(1)
        try:
            self._context.invoke(self._size_fn, args, out)
        except Exception as e:
            raise fail(
                ErrorCode.RUNTIME_FAILURE, f"graph '{self.graph_name}': workspace size query failed: {e}"
            ) from None
        size = int(out.get_variant(0))
        self.workspace_size = max(self.workspace_size, size)
        return size

    def _null_workspace(self):
        # The externalized-transients ABI always takes a buffer argument; a
        # zero-sized graph is given a 1-byte one.
        rt = _rt()
        if self._empty_workspace is None:
            self._empty_workspace = self.device.allocator.allocate_buffer(
                rt.MemoryType.DEVICE_LOCAL, rt.BufferUsage.DEFAULT, 1
            )
        return self._empty_workspace.ref


_ALIGNMENT = 64


def _round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def aligned_empty(shape, dtype) -> np.ndarray:
    """An uninitialized C-contiguous array whose data is 64-byte aligned."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + _ALIGNMENT, dtype=np.uint8)
    offset = (-raw.ctypes.data) % _ALIGNMENT
    return raw[offset : offset + nbytes].view(dtype).reshape(shape)


_NUMPY_SIGNATURE = operator.attrgetter("shape", "strides", "dtype")


@dataclasses.dataclass(frozen=True)
class _ExactLayout:
    """The array a static tensor is usually bound to, precomputed: its shape, dtype and byte
    strides (the tensor's own stride, also in dims of extent 1, which the general check lets
    differ), the transposition to memory order, the slice collapsing broadcast dims, and the
    bytes it spans relative to its data pointer (for the overlap check)."""

    shape: tuple[int, ...]
    dtype: np.dtype
    strides: tuple[int, ...]
    order: tuple[int, ...]
    broadcast_index: tuple[slice, ...] | None
    extent: tuple[int, int]

    @classmethod
    def of(cls, t: TensorAttr, split: bool) -> _ExactLayout | None:
        """None for what only the general path binds: dynamic dims, no elements, int4
        (packed) and a split graph's tensors (cut into halves)."""
        dt = data_type_of(t)
        if t.dynamic_dims or split or dt.name == "INT4" or 0 in t.dim:
            return None
        itemsize = dt.numpy_dtype.itemsize
        strides = tuple(s * itemsize for s in t.stride)
        order = t.physical_order
        broadcast = [s == 0 and d != 1 for s, d in zip(t.stride, t.dim)]
        index = tuple(slice(0, 1) if broadcast[i] else slice(None) for i in order) if any(broadcast) else None
        span = sum(s * (d - 1) for s, d in zip(strides, t.dim))  # static strides are never negative
        return cls(tuple(t.dim), dt.numpy_dtype, strides, order, index, (0, span + itemsize))


def _plain_torch_as_numpy(value: Any) -> np.ndarray | None:
    """A NumPy view of a plain CPU torch tensor (``Tensor.numpy``, of its detached alias where it
    requires grad: no copy; the view's base keeps the memory alive); None for anything else, or
    a tensor NumPy cannot view as it is (bfloat16, lazy conj/neg bits, another device), which the
    general path (``torch_as_numpy``) reads or refuses with a FusilliError."""
    tensor_type = torch_tensor_type()
    if tensor_type is None or type(value) is not tensor_type:
        return None
    tensor: Any = value
    if tensor.requires_grad:
        tensor = tensor.detach()
    try:
        return tensor.numpy()
    except (RuntimeError, TypeError):
        return None


class _Slot:
    """One tensor's bound array: its signature, the caller's value and its NumPy view,
    byte extent, HAL buffer view, and any staging copy or int4 packing it needs."""

    __slots__ = ("sig", "value", "arr", "extent", "view", "is_output", "what", "staging", "int4", "summed")

    def __init__(self, sig, value, arr, extent, view, is_output, what, staging, int4, summed=None):
        self.sig = sig
        self.value = value  # keeps the caller's memory alive while the view is cached
        self.arr = arr
        self.extent = extent
        self.view = view
        self.is_output = is_output
        self.what = what
        self.staging = staging  # (src, dst) for np.copyto around the call, or None
        self.int4 = int4  # (caller's bytes, packed nibbles), or None
        self.summed = summed  # a split's summed output: (the inline half's array, the worker's), or None


class _Binding:
    """A checked, bound call: argument list plus staging copies for misaligned arrays.

    ``sig`` identifies the pack it was bound for; ``signature_of`` computes the
    same for a new call (None when the pack cannot match). With only NumPy
    arrays (``fast``) it is the ids of keys and arrays plus (shape, strides,
    dtype) of each array; otherwise each value's signature (``_value_signature``)
    adds the data address, since such an object may swap its storage. Output
    writeability is checked apart (``outputs_writeable``); ``epoch`` is the
    tensor layout epoch the bound layouts were checked at.
    """

    __slots__ = (
        "args",
        "items",
        "workspace",
        "keep_alive",
        "copy_in",
        "copy_out",
        "direct",
        "fast",
        "sig",
        "epoch",
        "numpy_outputs",
        "int4_in",
    )

    def __init__(
        self,
        args,
        pack: Mapping[Any, Any],
        workspace: Any,
        epoch: int,
        previous_sig: tuple[list | None, bool] | None = None,
    ):
        self.args = args
        # References to every key and array: keeps the caller's arrays alive
        # while bound, and their ids unique.
        self.items = tuple(pack.items())
        self.workspace = workspace
        self.keep_alive: list[Any] = []
        self.copy_in: list[tuple[np.ndarray, np.ndarray]] = []  # (caller's, staging)
        self.copy_out: list[tuple[np.ndarray, np.ndarray]] = []  # (staging, caller's)
        self.int4_in: list[tuple[np.ndarray, np.ndarray]] = []  # (caller's bytes, packed nibbles)
        self.direct = False  # no staging copies: execute invokes args directly
        self.epoch = epoch
        self.numpy_outputs: list[np.ndarray] = []  # their writeable flag is rechecked per call
        self.fast = _all_numpy(pack, workspace)
        # The previous binding's signature_of this pack (sig, its kind), reused when of this kind.
        sig, kind = previous_sig if previous_sig is not None else (None, None)
        self.sig = sig if sig is not None and kind == self.fast else self.signature_of(pack, workspace)

    def signature_of(self, pack: Any, workspace: Any) -> list | None:
        try:
            values = pack.values()
            if self.fast:
                return [*map(id, pack), *map(id, values), *map(_NUMPY_SIGNATURE, values), id(workspace)]
            return [
                *map(id, pack),
                *map(id, values),
                *map(_value_signature, values),
                id(workspace),
                _value_signature(workspace),
            ]
        except (AttributeError, TypeError, FusilliError):
            return None  # not a mapping of arrays: the slow path reports it

    @staticmethod
    def value_signatures(sig: list | None, fast: bool, count: int) -> list | None:
        """The ``count`` values' ``_value_signature``s, in pack order, inside a ``signature_of``
        result of its general kind; None for its NumPy kind (``fast``), which leaves out the
        address of ndarray subclasses, or no signature."""
        return None if sig is None or fast else sig[2 * count : 3 * count]

    def outputs_writeable(self) -> bool:
        for a in self.numpy_outputs:
            if not a.flags.writeable:
                return False
        return True

    def run(self, compiled: CompiledGraph) -> None:
        for src, dst in self.copy_in:
            np.copyto(dst, src)
        for src, packed in self.int4_in:
            _pack_int4_into(src, packed)
        compiled._invoke(self.args)
        for src, dst in self.copy_out:
            np.copyto(dst, src)


def _all_numpy(pack: Mapping[Any, Any], workspace: Any) -> bool:
    nd = np.ndarray
    return all(type(v) is nd for v in pack.values()) and (workspace is None or type(workspace) is nd)


def _value_signature(v: Any) -> tuple:
    """What a bound value's checks depend on, re-derived on every call."""
    if type(v) is np.ndarray:
        return (v.shape, v.strides, v.dtype)
    if v is None:
        return ()
    tensor_type: Any = torch_tensor_type()
    if tensor_type is not None and isinstance(v, tensor_type):
        return (v.data_ptr(), v.shape, v.stride(), v.dtype)
    a = as_numpy(v)  # DLPack / buffer protocol objects
    return (a.__array_interface__["data"][0], a.shape, a.strides, a.dtype, a.flags.writeable)


def _layout_of(t: TensorAttr) -> tuple:
    return (t.dim, t.stride, t.data_type, t.dynamic_dims)


def _byte_extent(a: np.ndarray) -> tuple[int, int] | None:
    """[first byte, one past the last byte) that a strided array can touch; None if empty."""
    if a.size == 0:
        return None
    lo = hi = a.__array_interface__["data"][0]
    for n, s in zip(a.shape, a.strides):
        if s < 0:
            lo += s * (n - 1)
        else:
            hi += s * (n - 1)
    return lo, hi + a.itemsize


def _shares_memory(a: np.ndarray, b: np.ndarray) -> bool:
    """Exact for interleaved views whose extents overlap (x[::2], x[1::2]); an
    undecidably hard case (bounded work) counts as sharing."""
    try:
        return bool(np.shares_memory(a, b, max_work=1 << 16))  # type: ignore[arg-type]
    except np.exceptions.TooHardError:
        return True


def _load_vm_module(rt, instance, vmfb):
    """The VM module over ``vmfb`` itself when 64-byte aligned (a cache hit: no
    copy), else over an aligned copy."""
    view = memoryview(vmfb)
    if view.contiguous and np.frombuffer(view, np.uint8).ctypes.data % _ALIGNMENT == 0:
        return rt.VmModule.wrap_buffer(instance, view)
    return rt.VmModule.copy_buffer(instance, vmfb)


def _dense(shape, strides) -> bool:
    from fusilli.tensor import is_valid_layout

    return is_valid_layout(list(shape), list(strides))


def _hal_element_type(t: TensorAttr):
    rt = _rt()
    return getattr(rt.HalElementType, data_type_of(t).hal_name)


def _pack_int4_into(flat: np.ndarray, packed: np.ndarray) -> None:
    """IREE's i4 buffers hold two elements per byte (low nibble first); ml_dtypes.int4
    arrays hold one per byte."""
    nibbles = flat & 0xF
    half = nibbles.size // 2
    packed[:half] = nibbles[0 : 2 * half : 2] | (nibbles[1 : 2 * half : 2] << 4)
    if nibbles.size % 2:
        packed[half] = nibbles[-1]
