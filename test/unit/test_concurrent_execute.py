"""Several threads executing one compiled graph at once, each with its own arrays.

With ``workspace=None`` each calling thread runs in a workspace of its own; split calls, which
share the graph's worker semaphore, scratch sums and workspaces, take turns (its split lock).
When every call shared one workspace, concurrent calls wrote each other's transients (wrong
outputs inline) and a split's fences failed ("semaphore already signaled past N") with NaNs in
its summed outputs.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from conftest import channels_last_wgrad_graph, random_array, with_bias_gradient

import fusilli as fs
from fusilli import reference

THREADS = 3
CALLS = 8


def two_convs_graph(name: str, n: int = 4, c: int = 32, hw: int = 16) -> fs.Graph:
    """conv -> relu -> conv, NHWC: the relu's result is a transient between two dispatches on
    every target, so the compiled graph always has a workspace."""
    g = fs.Graph(name=name)

    def nhwc(tname: str, dims: list[int]) -> fs.TensorAttr:
        return g.tensor(name=tname, dim=dims, stride=fs.strides(dims, "NHWC"))

    x, w1, w2 = nhwc("x", [n, c, hw, hw]), nhwc("w1", [c, c, 3, 3]), nhwc("w2", [c, c, 3, 3])
    attrs = dict(padding=[1, 1], stride=[1, 1], dilation=[1, 1])
    h = g.relu(g.conv_fprop(x, w1, name="conv1", **attrs), name="relu")
    g.conv_fprop(h, w2, name="conv2", **attrs).set_output(True).set_name("y")
    return g.validate()


def run_from_threads(g: fs.Graph, workspaces: list | None = None) -> list:
    """Each thread executes ``g`` CALLS times on inputs of its own; returns what went wrong."""
    problems: list = []

    def work(index: int) -> None:
        rng = np.random.default_rng(index)
        inputs = {t: random_array(t, rng) for t in g.input_tensors()}
        want = reference.run(g, inputs)
        workspace = None if workspaces is None else workspaces[index]
        try:
            for call in range(CALLS):
                outputs = {t: fs.empty(t) for t in g.output_tensors()}
                g.execute({**inputs, **outputs}, workspace=workspace)
                for t, got in outputs.items():
                    # Two convs of 288 taps: values of tens, Winograd's rounding ~1e-4 absolute;
                    # another call's transients are off by far more.
                    if not np.allclose(got, want[t.name], rtol=1e-3, atol=1e-3):
                        problems.append((index, call, t.name, float(np.nanmax(np.abs(got - want[t.name])))))
        except Exception as e:  # a failed call is a finding too, not a crash of the thread
            problems.append((index, repr(e)))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not any(t.is_alive() for t in threads), "a thread's calls did not finish"
    return problems


@pytest.mark.parametrize("executor", ["local-sync", "local-task", "split"])
def test_concurrent_calls_without_a_workspace_each_get_their_result(cpu, monkeypatch, executor):
    monkeypatch.setenv("FUSILLI_CPU_EXECUTOR", executor)
    g = two_convs_graph(f"concurrent_two_convs_{executor.replace('-', '_')}")
    g.compile(cpu)
    assert g._compiled.executor == executor and g.workspace_size > 0
    assert run_from_threads(g) == []


def test_concurrent_split_calls_sum_their_own_halves(cpu, monkeypatch):
    """A weight gradient and bias gradient on the split executor: each call's worker half
    signals the graph's semaphore and writes a scratch partial sum, added after both halves."""
    monkeypatch.setenv("FUSILLI_CPU_EXECUTOR", "split")
    g = with_bias_gradient(channels_last_wgrad_graph("concurrent_split_wgrad", n=4, c=16, k=32, hw=8)).validate()
    g.compile(cpu)
    assert g._compiled.executor == "split" and g._compiled.split.summed == {"dw", "db"}
    assert run_from_threads(g) == []


def test_each_thread_gets_a_workspace_of_its_own(cpu, monkeypatch):
    """Calls with workspace=None from two threads run in two workspaces (and so side by side);
    a thread's later calls reuse its own."""
    monkeypatch.setenv("FUSILLI_CPU_EXECUTOR", "local-sync")
    g = two_convs_graph("concurrent_thread_workspaces")
    g.compile(cpu)
    rng = np.random.default_rng(7)
    inputs = {t: random_array(t, rng) for t in g.input_tensors()}
    want = reference.run(g, inputs)["y"]
    (yt,) = g.output_tensors()
    buffers: dict[str, list] = {}

    def calls(name: str) -> None:
        for _ in range(2):
            y = fs.empty(yt)
            g.execute({**inputs, yt: y})
            np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-3)
            buffers.setdefault(name, []).append(g._compiled._own_workspaces.buffer)

    for name in ("first", "second"):
        thread = threading.Thread(target=calls, args=(name,), name=name)
        thread.start()
        thread.join(60)
    (a, a_again), (b, b_again) = buffers["first"], buffers["second"]
    assert a is a_again and b is b_again and a is not b
    assert a.byte_length() >= g.workspace_size


def test_split_calls_from_two_threads_take_turns(cpu, monkeypatch):
    monkeypatch.setenv("FUSILLI_CPU_EXECUTOR", "split")
    g = two_convs_graph("concurrent_split_turns")
    g.compile(cpu)
    assert g._compiled.executor == "split"
    rng = np.random.default_rng(7)
    inputs = {t: random_array(t, rng) for t in g.input_tensors()}
    (yt,) = g.output_tensors()
    y = fs.empty(yt)
    waiting = threading.Thread(target=lambda: g.execute({**inputs, yt: y}))
    with g._compiled._split_lock:  # another thread's split call in progress
        waiting.start()
        waiting.join(0.5)
        assert waiting.is_alive(), "a split call ran while another held the graph's split lock"
    waiting.join(60)
    assert not waiting.is_alive()
    np.testing.assert_allclose(y, reference.run(g, inputs)["y"], rtol=1e-3, atol=1e-3)


def test_calls_with_workspaces_of_their_own(cpu, monkeypatch):
    monkeypatch.setenv("FUSILLI_CPU_EXECUTOR", "local-sync")
    g = two_convs_graph("concurrent_callers_workspaces")
    g.compile(cpu)
    workspaces = [np.empty(g.workspace_size + 64, np.uint8) for _ in range(THREADS)]
    assert run_from_threads(g, workspaces) == []
