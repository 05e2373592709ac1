"""Adversarial caches: whatever is found on disk, a compile warns, rebuilds (or runs
uncached) and returns correct results; only regular files are ever opened; entries
say what they are; FUSILLI_CACHE_MAX_BYTES evicts the least recently used; a lock
per entry makes concurrent processes compile once."""

from __future__ import annotations

import errno
import functools
import logging
import os
import subprocess
import sys
import threading
import time

import pytest
from conftest import matmul_relu_graph, run_checked

from fusilli.backend import cache

graph = functools.partial(matmul_relu_graph, name="heal")


@pytest.fixture
def private_cache(monkeypatch, tmp_path, caplog):
    root = tmp_path / "cache"
    monkeypatch.setenv("FUSILLI_CACHE_DIR", str(root))
    monkeypatch.delenv("FUSILLI_DISABLE_CACHE", raising=False)
    monkeypatch.delenv("FUSILLI_CACHE_MAX_BYTES", raising=False)
    monkeypatch.setattr(cache, "_warned", set())
    caplog.set_level(logging.INFO, logger="fusilli")
    return root


def entry_of(root, g) -> str:
    return cache.entry_path(str(root), g.key())


def warnings_of(caplog) -> str:
    return "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)


def test_entry_replaced_by_a_directory_is_healed(private_cache, caplog, cpu, rng):
    g = run_checked(graph(), cpu, rng)
    path = entry_of(private_cache, g)
    os.remove(path)
    os.makedirs(os.path.join(path, "inner"))
    caplog.clear()
    run_checked(graph(), cpu, rng)
    assert "not a regular file" in warnings_of(caplog) and "cache miss" in caplog.text
    assert os.path.isfile(path)  # rebuilt in place
    caplog.clear()
    run_checked(graph(), cpu, rng)
    assert "cache hit" in caplog.text


def test_shard_directory_replaced_by_a_file_is_healed(private_cache, caplog, cpu, rng):
    g = run_checked(graph(), cpu, rng)
    shard = os.path.dirname(entry_of(private_cache, g))
    import shutil

    shutil.rmtree(shard)
    with open(shard, "w") as f:
        f.write("not a directory")
    caplog.clear()
    run_checked(graph(), cpu, rng)
    assert "is not a directory; replacing it" in warnings_of(caplog)
    assert os.path.isfile(entry_of(private_cache, g))


@pytest.mark.parametrize("kind", ["fifo", "symlink", "dangling_symlink"])
def test_non_regular_entry_is_never_opened(private_cache, caplog, cpu, rng, tmp_path, kind):
    g = run_checked(graph(), cpu, rng)
    path = entry_of(private_cache, g)
    good = tmp_path / "elsewhere.fsa"
    os.replace(path, good)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        os.symlink(good, path)  # even a link to a valid entry is not followed
    else:
        os.symlink(tmp_path / "nothing", path)
    caplog.clear()
    done = threading.Event()
    failure: list[BaseException] = []

    def compile_again():
        try:
            run_checked(graph(), cpu, rng)
        except BaseException as e:  # reported below
            failure.append(e)
        done.set()

    worker = threading.Thread(target=compile_again, daemon=True)
    worker.start()
    if not done.wait(120):
        if kind == "fifo":  # unblock the thread so the test process can end
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        pytest.fail("compile blocked on a non-regular cache entry")
    assert not failure, failure
    assert "not a regular file" in warnings_of(caplog) and "cache hit" not in caplog.text
    assert os.path.isfile(path) and not os.path.islink(path)
    assert good.exists()  # the link's target was not touched


def test_lock_file_that_is_a_fifo_does_not_block(private_cache, caplog, cpu, rng):
    g = graph()
    path = entry_of(private_cache, g) + cache.LOCK_SUFFIX
    os.makedirs(os.path.dirname(path))
    os.mkfifo(path)
    run_checked(g, cpu, rng)  # would block opening the FIFO
    assert os.path.isfile(path)


def test_valid_checksum_but_invalid_payload_is_rebuilt(private_cache, caplog, cpu, rng):
    g = run_checked(graph(), cpu, rng)
    path = entry_of(private_cache, g)
    good = cache.Artifact.from_bytes(open(path, "rb").read())
    bogus = cache.Artifact(good.graph_key, good.backend, good.arch, b"\x00" * 4096, good._stats_json())
    with open(path, "wb") as f:
        f.write(bogus.to_bytes())  # passes the checksum, refused by the runtime
    caplog.clear()
    run_checked(graph(), cpu, rng)
    assert "cannot be loaded" in warnings_of(caplog) and "cache miss" in caplog.text
    healed = cache.Artifact.from_bytes(open(path, "rb").read())
    assert bytes(healed.vmfb) == bytes(good.vmfb)
    caplog.clear()
    run_checked(graph(), cpu, rng)
    assert "cache hit" in caplog.text and not warnings_of(caplog)


def test_cache_dir_that_is_a_file_runs_uncached(monkeypatch, tmp_path, caplog, cpu, rng):
    blocker = tmp_path / "cache-file"
    blocker.write_text("a file, not a directory")
    monkeypatch.setenv("FUSILLI_CACHE_DIR", str(blocker))
    monkeypatch.setattr(cache, "_warned", set())
    caplog.set_level(logging.INFO, logger="fusilli")
    run_checked(graph(name="uncached_file"), cpu, rng)
    run_checked(graph(name="uncached_file"), cpu, rng)
    assert "cannot be written" in warnings_of(caplog) and "running uncached" in warnings_of(caplog)
    assert warnings_of(caplog).count("cannot be written") == 1  # once per process, not per compile
    assert blocker.read_text() == "a file, not a directory"


def test_unwritable_cache_dir_runs_uncached(private_cache, monkeypatch, caplog, cpu, rng):
    os.makedirs(private_cache)
    os.chmod(private_cache, 0o555)
    try:
        if os.access(private_cache, os.W_OK):  # root ignores permissions: fail the writes as EROFS would

            def read_only(*args, **kwargs):
                raise OSError(errno.EROFS, "Read-only file system")

            monkeypatch.setattr(cache, "_prepare_shard", read_only)
        run_checked(graph(name="read_only"), cpu, rng)
    finally:
        os.chmod(private_cache, 0o755)
    assert "cannot be written" in warnings_of(caplog)
    assert cache.entries(str(private_cache)) == []


def test_full_disk_leaves_no_partial_entry(private_cache, monkeypatch, caplog, cpu, rng):
    real_fdopen = os.fdopen

    class FullDisk:
        def __init__(self, fd, mode):
            self.f = real_fdopen(fd, mode)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, data):
            self.f.write(data[:100])
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cache.os, "fdopen", FullDisk)
    run_checked(graph(name="full_disk"), cpu, rng)
    assert "No space left on device" in warnings_of(caplog)
    leftovers = [name for _, _, names in os.walk(private_cache) for name in names if not name.endswith(".lock")]
    assert leftovers == []  # the temporary file was removed


def test_entry_records_what_it_is(private_cache, cpu, rng):
    before = time.time()
    g = run_checked(graph(name="described"), cpu, rng)
    (entry,) = cache.entries(str(private_cache))
    assert entry.key == g.key() and entry.problem is None
    meta = entry.metadata
    assert meta["graph_name"] == "described"
    assert meta["target"]["backend"] == "cpu" and "--iree-llvmcpu-target-cpu=host" in meta["target"]["flags"]
    assert meta["target"]["device"].startswith("cpu:")
    assert meta["versions"] == cache.versions() and meta["versions"]["iree-base-compiler"] == "3.13.0"
    assert before - 1 <= meta["created"] <= time.time()


def test_max_bytes_evicts_least_recently_used(private_cache, monkeypatch, cpu, rng):
    graphs = {k: run_checked(graph(name=f"lru{k}", k=k), cpu, rng) for k in (4, 5, 6)}
    sizes = {e.key: e.size for e in cache.entries(str(private_cache))}
    assert len(sizes) == 3
    # Last uses, oldest first: k=5, k=4 (used again below), k=6.
    now = time.time()
    for age, k in ((300, 5), (200, 4), (100, 6)):
        path = entry_of(private_cache, graphs[k])
        os.utime(path, (now - age, os.stat(path).st_mtime))
    run_checked(graph(name="lru4", k=4), cpu, rng)  # a hit refreshes k=4's last use
    limit = sum(sizes.values()) + 1024  # room for three entries (they differ by a few bytes), not four
    monkeypatch.setenv("FUSILLI_CACHE_MAX_BYTES", str(limit))
    run_checked(graph(name="lru7", k=7), cpu, rng)
    left = {e.key for e in cache.entries(str(private_cache))}
    assert graphs[5].key() not in left  # least recently used: evicted
    assert {graphs[4].key(), graphs[6].key(), graph(name="lru7", k=7).key()} <= left
    assert sum(e.size for e in cache.entries(str(private_cache))) <= limit


def test_bad_max_bytes_is_a_warning(private_cache, monkeypatch, caplog, cpu, rng):
    monkeypatch.setenv("FUSILLI_CACHE_MAX_BYTES", "lots")
    run_checked(graph(name="bad_limit"), cpu, rng)
    assert "FUSILLI_CACHE_MAX_BYTES ignored" in warnings_of(caplog)
    assert len(cache.entries(str(private_cache))) == 1


def test_parse_size():
    assert cache.parse_size("1048576") == 1 << 20
    assert cache.parse_size("500M") == 500 << 20 and cache.parse_size("2GiB") == 2 << 30
    assert cache.parse_size("1.5k") == 1536
    for bad in ("", "-1", "lots", "nanM", "infG"):
        with pytest.raises(ValueError):
            cache.parse_size(bad)


CHILD = """
import sys, fusilli as fs
g = fs.Graph(name="locked")
a = g.tensor(name="a", dim=[64, 48])
b = g.tensor(name="b", dim=[48, 32])
g.relu(g.matmul(a, b, name="mm"), name="relu").set_output(True)
print("KEY", g.key(), flush=True)
g.compile(fs.Handle(fs.Backend.CPU))
print("FROM_CACHE", g._compiled.artifact.from_cache)
"""


def _child(env):
    return subprocess.Popen(
        [sys.executable, "-c", CHILD],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_processes_compiling_the_same_graph_compile_once(tmp_path):
    env = dict(os.environ, FUSILLI_CACHE_DIR=str(tmp_path), FUSILLI_LOG_INFO="1", FUSILLI_LOG_FILE="stderr")
    env.pop("FUSILLI_DISABLE_CACHE", None)
    # Hold the entry's lock as a compiling process would: every child must wait, then hit.
    probe = subprocess.run([sys.executable, "-c", CHILD.split("g.compile")[0]], env=env, capture_output=True, text=True)
    key = probe.stdout.split("KEY ")[1].split()[0]
    from filelock import FileLock

    lock_path = cache.entry_path(str(tmp_path), key) + cache.LOCK_SUFFIX
    os.makedirs(os.path.dirname(lock_path))
    lock = FileLock(lock_path)
    lock.acquire()
    children = [_child(env) for _ in range(2)]
    try:
        time.sleep(3)  # the children reach the lock and wait
        assert all(c.poll() is None for c in children), "a child did not wait for the lock"
        assert not os.path.exists(cache.entry_path(str(tmp_path), key))
    finally:
        lock.release()
    results = [c.communicate(timeout=300) for c in children]
    assert all(c.returncode == 0 for c in children), results
    compiles = sum(err.count("IREE compile took") for _, err in results)
    assert compiles == 1, results  # one child compiled, the other waited and hit
    assert sorted(out.split("FROM_CACHE ")[1].strip() for out, _ in results) == ["False", "True"]
    assert any("waiting for another process" in err for _, err in results)
