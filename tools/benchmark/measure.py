"""Running one benchmark row: build the family's problem, compile it, time fusilli (and
PyTorch, alternating blocks) and return the row's numbers; or, with --compile-only, just
fill the cache."""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from fusilli.backend.rules import lowering_summary

from .ops import SUBCOMMANDS
from .problem import BenchmarkError, Problem


def _import_torch():
    try:
        import torch
    except ImportError:
        raise BenchmarkError(
            "--compare torch needs PyTorch, which is not installed; install the optional extra: pip install '.[bench]'"
        ) from None
    return torch


def _stats(times_s: list[float]) -> dict[str, float]:
    ms = [t * 1e3 for t in times_s]
    return {
        "min": min(ms),
        "median": statistics.median(ms),
        "max": max(ms),
        "stdev": statistics.stdev(ms) if len(ms) > 1 else 0.0,
    }


# How a block of alternating runs starts (see _measure). The other library's threads may
# still be spinning: PyTorch's OpenMP threads use ~11 ms of CPU in the 10 ms after a conv
# and none after (2-core VM, /proc/self/task/*/schedstat), taking a core from the block.
# So first SWITCH_SETTLE_S of sleep; then, as the cores come back from idle slowly (a 1x1
# conv's calls after 30 ms idle, median of 6 blocks, ms: 1.19 0.88 0.83 0.77 ... 0.64 from
# the 10th call on the pool, the same shape on the split executor), untimed calls for at
# least SWITCH_WARM_S. Both libraries get the same, so each is timed in its steady state.
SWITCH_SETTLE_S = 0.03
SWITCH_WARM_S = 0.01


def _switch_to(fn: Callable[[], Any]) -> None:
    time.sleep(SWITCH_SETTLE_S)
    end = time.perf_counter() + SWITCH_WARM_S
    fn()
    while time.perf_counter() < end:
        fn()


def interleaved_ms(
    fns: dict[str, Callable[[], Any]], blocks: int, iters: int, switch: Callable[[Callable[[], Any]], Any] = _switch_to
) -> dict[str, list[float]]:
    """Each of ``fns`` timed in ``blocks`` alternating blocks of ``iters`` calls (the order
    reversed every other block, so no one always follows the same neighbour), each block
    started by ``switch(fn)``; per name, every call's time in ms. For the in-process A/B
    scripts of benchmarks/."""
    names = list(fns)
    times: dict[str, list[float]] = {name: [] for name in names}
    for block in range(blocks):
        for name in names if block % 2 == 0 else names[::-1]:
            switch(fns[name])
            for _ in range(iters):
                t0 = time.perf_counter()
                fns[name]()
                times[name].append((time.perf_counter() - t0) * 1e3)
    return times


def _timed_block(fn: Callable[[], Any], n: int, out: list[float]) -> None:
    clock = time.perf_counter
    for _ in range(n):
        t0 = clock()
        fn()
        out.append(clock() - t0)


class _RowFlags:
    """--Xiree-compile flags apply to one row only: the variable is restored afterwards,
    so later rows of a suite do not inherit them."""

    def __init__(self, flags: list[str]):
        self.flags = flags
        self.saved = os.environ.get("FUSILLI_EXTRA_COMPILER_FLAGS")

    def __enter__(self) -> None:
        if self.flags:
            extra = ((self.saved or "") + " " + " ".join(shlex.quote(f) for f in self.flags)).strip()
            os.environ["FUSILLI_EXTRA_COMPILER_FLAGS"] = extra

    def __exit__(self, *exc: Any) -> None:
        if self.saved is None:
            os.environ.pop("FUSILLI_EXTRA_COMPILER_FLAGS", None)
        else:
            os.environ["FUSILLI_EXTRA_COMPILER_FLAGS"] = self.saved


def _handle(ns: argparse.Namespace):
    import fusilli as fs

    return fs.Handle(ns.backend, device=ns.device, arch=ns.arch)


def compile_row(ns: argparse.Namespace, label: str) -> dict[str, Any]:
    """--compile-only: build the row's graph and store its artifact in the cache (no device needed)."""
    row: dict[str, Any] = {"command": label, "subcommand": ns.subcommand, "status": "compiled"}
    try:
        with _RowFlags(ns.xiree):
            problem = SUBCOMMANDS[ns.subcommand].build(ns)
            row["graph"] = problem.name
            row["lowering"] = lowering_summary(problem.graph.nodes, problem.graph.target(ns.backend, ns.arch))
            t0 = time.perf_counter()
            problem.graph.compile_to_artifact(ns.backend, ns.arch)
            row["compile_ms"] = (time.perf_counter() - t0) * 1e3
    except Exception as e:  # keep a suite going past one broken row
        row.update(status="error", error=_error_text(e))
    return row


def _error_text(e: Exception) -> str:
    return str(e) if isinstance(e, BenchmarkError) else f"{type(e).__name__}: {e}"


def run_problem(ns: argparse.Namespace, label: str) -> dict[str, Any]:
    row: dict[str, Any] = {"command": label, "subcommand": ns.subcommand, "status": "ok", "iter": ns.iter}
    try:
        with _RowFlags(ns.xiree):
            _measure(ns, row)
    except Exception as e:  # keep a suite going past one broken row
        row.update(status="error", error=_error_text(e))
    return row


def _measure(ns: argparse.Namespace, row: dict[str, Any]) -> None:
    torch = _import_torch() if ns.compare == "torch" else None
    if torch is not None and ns.backend != "cpu":
        raise BenchmarkError("--compare torch times PyTorch on the CPU; use it with --backend cpu")
    problem = SUBCOMMANDS[ns.subcommand].build(ns)
    row["graph"] = problem.name
    handle = _handle(ns)
    t0 = time.perf_counter()
    problem.graph.compile(handle)
    row["compile_ms"] = (time.perf_counter() - t0) * 1e3
    row["dispatch_count"] = problem.graph.compile_stats.dispatch_count
    row["lowering"] = lowering_summary(problem.graph.nodes, problem.graph.target(handle.backend, handle.arch))
    row["executor"] = problem.graph.executor
    if ns.dump:
        _dump(problem, ns, handle)
    g, pack = problem.graph, problem.pack

    def run_fusilli():
        g.execute(pack)

    runners = [("fusilli", run_fusilli)]
    if torch is not None:
        if problem.torch_builder is None:
            raise BenchmarkError(f"--compare torch: {problem.name} has no PyTorch counterpart")
        with torch.inference_mode():
            torch_run = problem.torch_builder(torch)
        runners.append(("torch", torch_run))
    times: dict[str, list[float]] = {name: [] for name, _ in runners}
    with torch.inference_mode() if torch is not None else contextlib.nullcontext():
        for _, fn in runners:
            _timed_block(fn, ns.warmup, [])
        # Alternate in blocks (not call by call), swapping who goes first each round.
        rounds = min(ns.iter, 5) if len(runners) > 1 else 1
        per_round = [ns.iter // rounds + (1 if r < ns.iter % rounds else 0) for r in range(rounds)]
        for r, n in enumerate(per_round):
            for name, fn in runners if r % 2 == 0 else runners[::-1]:
                if len(runners) > 1:
                    _switch_to(fn)
                _timed_block(fn, n, times[name])
        if torch is not None:
            row["max_abs_err"] = _max_abs_err(torch, problem.output, torch_run())
    f = _stats(times["fusilli"])
    row.update({f"fusilli_{k}_ms": v for k, v in f.items()})
    row["gflops"] = problem.flops / (f["median"] * 1e-3) / 1e9
    row["pct_peak"] = 100.0 * row["gflops"] / ns.peak_gflops
    if torch is not None:
        t = _stats(times["torch"])
        row.update({f"torch_{k}_ms": v for k, v in t.items()})
        row["ratio"] = t["median"] / f["median"]


def _max_abs_err(torch: Any, fusilli_out: Any, expected: Any) -> float:
    import numpy as np

    exp = expected.detach().to(torch.float32).contiguous().numpy()
    got = fusilli_out.astype(np.float32)
    if got.shape != exp.shape:
        return float("nan")
    return float(np.max(np.abs(got - exp))) if got.size else 0.0


def _dump(problem: Problem, ns: argparse.Namespace, handle: Any) -> None:
    g = problem.graph
    out = sys.stdout
    print(f"=== {problem.name}", file=out)
    target = g.target(handle.backend, handle.arch)
    print("compiler flags: " + " ".join(target.flags), file=out)
    stats = g.compile_stats
    print(
        f"dispatches: {stats.dispatch_count}  executables: {stats.executable_count}  "
        f"transient bytes: {stats.transient_memory_bytes}  workspace: {g.workspace_size}",
        file=out,
    )
    print("--- optimized IR (after fusilli passes)", file=out)
    print(g.mlir("optimized", backend=handle.backend, arch=handle.arch), file=out)
    if ns.dump_stage:
        print(f"--- IREE {ns.dump_stage} IR", file=out)
        print(g.mlir(ns.dump_stage, backend=handle.backend, arch=handle.arch), file=out)
    out.flush()
