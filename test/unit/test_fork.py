"""Forked children of a process that compiled and ran graphs (multiprocessing's and PyTorch
DataLoader's default on Linux).

IREE's worker pools are threads, which a forked child does not have: before, a pool or split
call in the child waited forever, so did a compile (the compiler's thread pool), and so did the
child's exit (destroying a device or the compiler's state made before the fork). Now graphs run
inline in the child, a compile there raises a FusilliError that says what to do, cached graphs
load, and the child exits. Each case runs in a fresh interpreter (``run_python``), so that a
regression hangs a subprocess with a timeout, not the test session.
"""

from __future__ import annotations

import os
import pickle
import textwrap

import pytest
from conftest import run_python

import fusilli as fs

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")

UNIT_DIR = os.path.dirname(__file__)


def parent_script(graph_name: str) -> str:
    """The parent's part of each case: compiles and runs a graph with a workspace (``y``, its
    output; ``want``, the reference's) on the executor FUSILLI_CPU_EXECUTOR names."""
    return f"""
import multiprocessing, os, sys, time
sys.path.insert(0, {UNIT_DIR!r})
import numpy as np
import fusilli as fs
from fusilli import reference
from conftest import random_array
from test_concurrent_execute import two_convs_graph

cpu = fs.Handle(fs.Backend.CPU)
g = two_convs_graph({graph_name!r})
g.compile(cpu)
rng = np.random.default_rng(0)
inputs = {{t: random_array(t, rng) for t in g.input_tensors()}}
(yt,) = g.output_tensors()
y = fs.empty(yt)
g.execute({{**inputs, yt: y}})
want = reference.run(g, inputs)["y"]
"""


# After the parent's part, it forks; the child runs the graph, compiles it again (a cache hit),
# is refused a new compile, and exits normally.
FORKED_CHILD = """
print("parent runs", g._compiled.executor, flush=True)

pid = os.fork()
if pid == 0:
    def same(got):
        return bool(np.allclose(got, want, rtol=1e-3, atol=1e-3))
    child_y = fs.empty(yt)
    g.execute({**inputs, yt: child_y})
    print("child ran the parent's graph on", g._compiled.executor, same(child_y), flush=True)
    again = two_convs_graph("fork_parent_graph")
    again.compile(cpu)
    again_y = fs.empty(again.output_tensors()[0])
    again.execute({**{a: inputs[b] for a, b in zip(again.input_tensors(), g.input_tensors())}, again.output_tensors()[0]: again_y})
    print("child loaded it from the cache", again._compiled.executor, same(again_y), flush=True)
    try:
        two_convs_graph("fork_child_graph", c=8).compile(cpu)
        print("child compiled a new graph", flush=True)
    except fs.FusilliError as e:
        print("child refused:", e.code.name, "forked" in e.message and "spawn" in e.message, flush=True)
    sys.exit(0)  # a normal exit: atexit handlers and module teardown

deadline = time.monotonic() + 60
while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    if time.monotonic() > deadline:
        os.kill(pid, 9)
        print("child hung", flush=True)
        sys.exit(1)
    time.sleep(0.05)
print("child status", status, flush=True)
g.execute({**inputs, yt: y})
print("parent still runs", g._compiled.executor, bool(np.allclose(y, want, rtol=1e-3, atol=1e-3)), flush=True)
"""


@pytest.mark.parametrize("executor", ["local-sync", "local-task", "split"])
def test_a_forked_child_runs_loads_and_exits(executor, tmp_path):
    proc = run_python(
        parent_script("fork_parent_graph") + FORKED_CHILD,
        env={"FUSILLI_CPU_EXECUTOR": executor, "FUSILLI_CACHE_DIR": str(tmp_path)},
        timeout=240,
    )
    lines = proc.stdout.splitlines()
    inline = "split" if executor == "split" else "local-sync"  # a split keeps its half artifact
    assert lines == [
        f"parent runs {executor}",
        f"child ran the parent's graph on {inline} True",
        f"child loaded it from the cache {inline} True",
        "child refused: COMPILE_FAILURE True",
        "child status 0",
        f"parent still runs {executor} True",
    ], proc.stdout + proc.stderr
    assert "leaked" not in proc.stderr  # the child keeps the parent's devices on purpose


def test_a_fork_pool_worker_runs_graphs_and_its_errors_reach_the_parent(tmp_path):
    """multiprocessing's fork pool (PyTorch DataLoader's workers fork the same way): results
    come back, and a worker's FusilliError reaches the parent with its code and message."""
    code = parent_script("fork_pool_graph") + textwrap.dedent(
        """
        def run(_):  # against the parent's own output
            got = fs.empty(yt)
            g.execute({**inputs, yt: got})
            return float(np.abs(got - y).max())

        def compile_new(_):
            two_convs_graph("fork_pool_new_graph", c=8).compile(cpu)

        if __name__ == "__main__":
            with multiprocessing.get_context("fork").Pool(2) as pool:
                print("max differences", pool.map(run, range(4)), flush=True)
                try:
                    pool.map(compile_new, range(1))
                except fs.FusilliError as e:
                    print("worker's error", e.code.name, "forked" in e.message, flush=True)
        """
    )
    proc = run_python(code, env={"FUSILLI_CACHE_DIR": str(tmp_path)}, timeout=240)
    assert proc.stdout.splitlines() == [
        "max differences [0.0, 0.0, 0.0, 0.0]",
        "worker's error COMPILE_FAILURE True",
    ], proc.stdout + proc.stderr


def test_fusilli_errors_pickle_with_code_and_message():
    err = fs.FusilliError(fs.ErrorCode.INVALID_ARGUMENT, "tensor 'x': wrong")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is fs.FusilliError and back.code is fs.ErrorCode.INVALID_ARGUMENT
    assert back.message == "tensor 'x': wrong" and str(back) == str(err)
