"""How the caller of a worker-pool (local-task) graph waits: through a helper thread at
the lowest CPU priority (FUSILLI_CPU_WAIT=helper, the default on Linux) or inline
(IREE's spinning call). fusilli.backend.runtime.cpu_wait_mode says why; the timing is
benchmarks/cpu_wait.py's (no timing is asserted here)."""

from __future__ import annotations

import os
import sys
import textwrap
import threading

import numpy as np
import pytest
from conftest import run_python

import fusilli as fs
from fusilli.backend import runtime

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="per-thread priorities are a Linux feature")

# 2 * 256^3 = 2^25 FLOP: above runtime.INLINE_MAX_FLOPS, so the graph runs on the pool.
M = 256


def pool_matmul(name: str) -> tuple[fs.Graph, fs.TensorAttr, fs.TensorAttr, fs.TensorAttr]:
    g = fs.Graph(name=name, io_data_type=fs.DataType.FLOAT)
    a, b = g.tensor(name="a", dim=[M, M]), g.tensor(name="b", dim=[M, M])
    y = g.matmul(a, b, name="mm").set_output(True).set_name("y")
    return g, a, b, y


def run_once(cpu, g, a, b, y, rng) -> None:
    pack = {t: fs.empty(t) for t in (a, b, y)}
    pack[a][...] = rng.uniform(-1, 1, (M, M))
    pack[b][...] = rng.uniform(-1, 1, (M, M))
    for _ in range(3):
        g.execute(pack)
    np.testing.assert_allclose(pack[y], pack[a] @ pack[b], rtol=1e-4, atol=1e-4)


def helper_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "fusilli-cpu-wait" and t.is_alive()]


@linux_only
def test_pool_graph_is_called_from_a_nice_19_helper(cpu, rng, monkeypatch):
    monkeypatch.delenv("FUSILLI_CPU_WAIT", raising=False)
    monkeypatch.delenv("FUSILLI_CPU_EXECUTOR", raising=False)
    g, a, b, y = pool_matmul("cpu_wait_helper")
    g.compile(cpu)
    assert runtime.choose_cpu_executor(g) == "local-task"
    run_once(cpu, g, a, b, y, rng)
    helpers = helper_threads()
    assert helpers, "no fusilli-cpu-wait thread after a pool graph ran"
    assert all(os.getpriority(os.PRIO_PROCESS, t.native_id) == 19 for t in helpers)


@linux_only
def test_each_calling_thread_has_its_own_helper(cpu, monkeypatch):
    monkeypatch.delenv("FUSILLI_CPU_WAIT", raising=False)
    monkeypatch.delenv("FUSILLI_CPU_EXECUTOR", raising=False)
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            g, a, b, y = pool_matmul(f"cpu_wait_thread_{i}")
            g.compile(cpu)
            run_once(cpu, g, a, b, y, np.random.default_rng(i))
            errors.append(None)  # type: ignore[arg-type]
        except BaseException as e:  # reported below
            errors.append(e)

    before = len(helper_threads())
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert errors == [None, None]
    assert len(helper_threads()) >= before + 2


def test_helper_hands_the_call_and_its_error_back():
    waiter = runtime._Waiter()
    seen = []
    waiter.call(lambda *args: seen.append(args), "fn", "args", "results")
    assert seen == [("fn", "args", "results")]

    def fails(*args):
        raise RuntimeError("boom from the pool")

    with pytest.raises(RuntimeError, match="boom from the pool"):
        waiter.call(fails, None, None, None)
    waiter.call(lambda *args: seen.append(args), 1, 2, 3)  # still serving after an error
    assert seen[-1] == (1, 2, 3)
    waiter.requests.put(None)
    waiter.thread.join(timeout=10)
    assert not waiter.thread.is_alive()


def test_inline_mode_makes_no_helper():
    code = textwrap.dedent(
        """
        import threading
        import numpy as np
        import fusilli as fs
        g = fs.Graph(name="cpu_wait_inline", io_data_type=fs.DataType.FLOAT)
        a, b = g.tensor(name="a", dim=[256, 256]), g.tensor(name="b", dim=[256, 256])
        g.matmul(a, b, name="mm").set_output(True)
        g.compile(fs.Handle(fs.Backend.CPU))
        pack = {t: fs.empty(t) for t in (*g.input_tensors(), *g.output_tensors())}
        g.execute(pack)
        print(sorted(t.name for t in threading.enumerate()))
        """
    )
    proc = run_python(code, env={"FUSILLI_CPU_WAIT": "inline", "FUSILLI_CPU_EXECUTOR": "local-task"})
    assert "fusilli-cpu-wait" not in proc.stdout


@linux_only
def test_exit_after_helper_calls_is_clean():
    """The helper is stopped at exit, so the bindings tear down without leak reports."""
    code = textwrap.dedent(
        """
        import fusilli as fs
        g = fs.Graph(name="cpu_wait_exit", io_data_type=fs.DataType.FLOAT)
        a, b = g.tensor(name="a", dim=[256, 256]), g.tensor(name="b", dim=[256, 256])
        g.matmul(a, b, name="mm").set_output(True)
        g.compile(fs.Handle(fs.Backend.CPU))
        pack = {t: fs.empty(t) for t in (*g.input_tensors(), *g.output_tensors())}
        g.execute(pack)
        print("ran")
        """
    )
    proc = run_python(code, env={"FUSILLI_CPU_WAIT": None, "FUSILLI_CPU_EXECUTOR": "local-task"})
    assert "ran" in proc.stdout
    assert "leaked" not in proc.stderr, proc.stderr


def test_unknown_wait_mode_is_invalid_argument(monkeypatch):
    monkeypatch.setenv("FUSILLI_CPU_WAIT", "spin")
    with pytest.raises(fs.FusilliError) as e:
        runtime.cpu_wait_mode()
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT
    assert "FUSILLI_CPU_WAIT" in e.value.message and "helper" in e.value.message


@linux_only
def test_helper_ends_after_its_calling_thread(cpu, monkeypatch):
    monkeypatch.delenv("FUSILLI_CPU_WAIT", raising=False)
    monkeypatch.delenv("FUSILLI_CPU_EXECUTOR", raising=False)
    g, a, b, y = pool_matmul("cpu_wait_owner")
    g.compile(cpu)
    made: list[runtime._Waiter] = []

    def worker() -> None:
        run_once(cpu, g, a, b, y, np.random.default_rng(0))
        made.append(runtime._Waiter.of_this_thread())

    t = threading.Thread(target=worker)
    t.start()
    t.join(timeout=120)
    assert made and made[0] is not None and made[0].owner is t
    made[0].thread.join(timeout=10 * runtime._WAITER_IDLE_CHECK_S)
    assert not made[0].thread.is_alive(), "the helper outlived its calling thread"


@linux_only
def test_pool_scaling_script_reports_each_way_of_running():
    """benchmarks/cpu_pool_scaling.py (BENCHMARKS.md's pool analysis) runs end to end and
    reports inline, two threads inline, the pool with its per-thread CPU, a tiny graph."""
    script = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "cpu_pool_scaling.py")
    command = "conv -F 1 -n 1 -c 64 -H 16 -W 16 -k 64 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 --in_layout NHWC"
    code = f"import sys; sys.argv = [{script!r}, '--seconds', '0.05', *{command.split()!r}]; "
    code += f"import runpy; runpy.run_path({script!r}, run_name='__main__')"
    out = run_python(code).stdout
    for line in ("inline:", "two inline:", "ms per call (wait mode helper)", "pool, tiny:"):
        assert line in out, out
    assert ("wake-up:" in out) is (len(os.sched_getaffinity(0)) >= 2), out
