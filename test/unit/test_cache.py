"""The content-addressed disk cache: hits across graphs and processes, corrupt entries rebuilt."""

from __future__ import annotations

import functools
import glob
import logging
import os

import pytest
from conftest import matmul_relu_graph, run_checked, run_python

from fusilli.backend import Artifact

CHILD = """
import numpy as np, fusilli as fs
from fusilli import reference
g = fs.Graph(name="cross_process")
x = g.tensor(name="x", dim=[1, 4, 6, 6], stride=fs.strides([1, 4, 6, 6], "NHWC"))
w = g.tensor(name="w", dim=[8, 4, 3, 3], stride=fs.strides([8, 4, 3, 3], "NHWC"))
y = g.relu(g.conv_fprop(x, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv"), name="relu")
y.set_output(True)
g.compile(fs.Handle(fs.Backend.CPU))
rng = np.random.default_rng(0)
ins = {t: rng.uniform(-1, 1, t.dim).astype(np.float32) for t in (x, w)}
ins[x] = np.ascontiguousarray(ins[x].transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
ins[w] = np.ascontiguousarray(ins[w].transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
out = fs.empty(y)
g.execute({**ins, y: out})
np.testing.assert_allclose(out, reference.run(g, ins)[y.name], rtol=1e-4, atol=1e-4)
print("KEY", g.key())
print("COMPILE_SECONDS", g.compile_stats.compile_seconds)
"""


def entries(root) -> list[str]:
    return sorted(glob.glob(os.path.join(str(root), "*", "*.fsa")))


def test_new_process_reuses_disk_cache(tmp_path):
    env = {
        "FUSILLI_CACHE_DIR": str(tmp_path),
        "FUSILLI_LOG_INFO": "1",
        "FUSILLI_LOG_FILE": "stderr",
        "FUSILLI_DISABLE_CACHE": None,
    }
    first = run_python(CHILD, env)
    assert "cache miss" in first.stderr and "IREE compile took" in first.stderr
    assert len(entries(tmp_path)) == 1
    stamp = os.stat(entries(tmp_path)[0]).st_mtime_ns
    second = run_python(CHILD, env)
    assert "cache hit" in second.stderr
    assert "cache miss" not in second.stderr and "IREE compile" not in second.stderr
    assert os.stat(entries(tmp_path)[0]).st_mtime_ns == stamp  # not rewritten
    key = [line for line in first.stdout.splitlines() if line.startswith("KEY")]
    assert key and key == [line for line in second.stdout.splitlines() if line.startswith("KEY")]


graph = functools.partial(matmul_relu_graph, name="cache_graph")


@pytest.fixture
def private_cache(monkeypatch, tmp_path, caplog):
    monkeypatch.setenv("FUSILLI_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("FUSILLI_DISABLE_CACHE", raising=False)
    caplog.set_level(logging.INFO, logger="fusilli")
    return tmp_path


def test_second_graph_in_process_hits(private_cache, caplog, cpu, rng):
    run_checked(graph(), cpu, rng)
    assert "cache miss" in caplog.text and len(entries(private_cache)) == 1
    caplog.clear()
    run_checked(graph(), cpu, rng)
    assert "cache hit" in caplog.text and "cache miss" not in caplog.text
    caplog.clear()
    run_checked(graph(k=6), cpu, rng)  # a different graph is a different entry
    assert "cache miss" in caplog.text and len(entries(private_cache)) == 2


@pytest.mark.parametrize("damage", ["flip_byte", "truncate", "empty", "garbage"])
def test_corrupt_entry_is_rebuilt_not_loaded(private_cache, caplog, cpu, rng, damage):
    run_checked(graph(), cpu, rng)
    (path,) = entries(private_cache)
    good = open(path, "rb").read()
    bad = bytearray(good)
    if damage == "flip_byte":
        bad[len(bad) - 64] ^= 0x5A
    elif damage == "truncate":
        bad = bad[: len(bad) // 3]
    elif damage == "empty":
        bad = bytearray()
    else:
        bad = bytearray(os.urandom(len(good)))
    with open(path, "wb") as f:
        f.write(bad)
    caplog.clear()
    run_checked(graph(), cpu, rng)  # correct results: nothing corrupt was loaded
    assert "corrupt" in caplog.text and "cache hit" not in caplog.text and "cache miss" in caplog.text
    rewritten = Artifact.from_bytes(open(path, "rb").read())  # rewritten with a good artifact
    assert rewritten.graph_key == Artifact.from_bytes(good).graph_key == os.path.basename(path)[:-4]


def test_entry_of_another_key_is_not_loaded(private_cache, caplog, cpu, rng):
    run_checked(graph(k=6), cpu, rng)
    run_checked(graph(), cpu, rng)
    small, big = entries(private_cache)
    with open(small, "rb") as f:
        other = f.read()
    with open(big, "wb") as f:  # a valid artifact stored under the wrong key
        f.write(other)
    caplog.clear()
    run_checked(graph(), cpu, rng)
    run_checked(graph(k=6), cpu, rng)
    assert "corrupt" in caplog.text


def test_disable_cache_writes_nothing(private_cache, monkeypatch, caplog, cpu, rng):
    monkeypatch.setenv("FUSILLI_DISABLE_CACHE", "1")
    run_checked(graph(name="uncached"), cpu, rng)
    run_checked(graph(name="uncached"), cpu, rng)
    assert entries(private_cache) == []
    assert caplog.text.count("cache miss") == 2
