"""The installed console scripts (fusilli-cache, fusilli-opt, fusilli-benchmark) and
``python -m fusilli``, run as a user runs them: in a subprocess, from the install."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest
from conftest import run_python

from fusilli.backend import cache

CHILD = """
import fusilli as fs
for k in (4, 6):
    g = fs.Graph(name=f"cli_graph_{k}")
    a = g.tensor(name="a", dim=[3, 5])
    b = g.tensor(name="b", dim=[5, k])
    g.relu(g.matmul(a, b, name="mm"), name="relu").set_output(True)
    g.compile(fs.Handle(fs.Backend.CPU))
    print(g.key())
"""


def console_script(name: str) -> str:
    """The installed script: next to this interpreter (a venv), else on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), name)
    found = here if os.path.exists(here) else shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed in this environment (pip install -e .)")
    return found


def run_tool(argv: list[str], env: dict | None = None, code: int = 0, stdin: str | None = None):
    proc = subprocess.run(
        argv, env=dict(os.environ, **(env or {})), capture_output=True, text=True, timeout=300, input=stdin
    )
    assert proc.returncode == code, f"{argv} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture
def filled_cache(tmp_path):
    root = tmp_path / "cache"
    keys = run_python(CHILD, {"FUSILLI_CACHE_DIR": str(root), "FUSILLI_DISABLE_CACHE": None}).stdout.split()
    assert len(keys) == 2
    return root, keys


def test_cache_list_info_clear(filled_cache):
    root, keys = filled_cache
    tool = console_script("fusilli-cache")
    env = {"FUSILLI_CACHE_DIR": str(root)}
    listed = run_tool([tool, "list"], env).stdout
    assert "cli_graph_4" in listed and "cli_graph_6" in listed and "2 entries" in listed
    assert keys[0][:16] in listed and "cpu" in listed
    rows = [json.loads(line) for line in run_tool([tool, "list", "--json"], env).stdout.splitlines()]
    assert {r["key"] for r in rows} == set(keys)
    assert {r["metadata"]["graph_name"] for r in rows} == {"cli_graph_4", "cli_graph_6"}
    assert all(r["metadata"]["versions"]["iree-base-compiler"] == "3.13.0" for r in rows)
    one = json.loads(run_tool([tool, "info", keys[0][:12]], env).stdout)
    assert one["key"] == keys[0] and one["metadata"]["target"]["backend"] == "cpu"
    summary = json.loads(run_tool([tool, "--cache-dir", str(root), "info", "--json"]).stdout)
    assert summary["entries"] == 2 and summary["bytes"] > 0 and summary["directory"] == str(root)
    assert "no entries match" in run_tool([tool, "info", "ffffffff"], env, code=1).stderr
    assert "removed 2 entries" in run_tool([tool, "clear"], env).stdout
    assert cache.entries(str(root)) == [] and os.listdir(root) == []  # no locks, no empty shards left


def test_cache_prune_by_size_and_age_and_broken(filled_cache):
    root, keys = filled_cache
    tool = console_script("fusilli-cache")
    env = {"FUSILLI_CACHE_DIR": str(root)}
    old, new = (cache.entry_path(str(root), k) for k in keys)
    os.utime(old, (time.time() - 10 * 86400, os.stat(old).st_mtime))  # unused for ten days
    out = run_tool([tool, "prune", "--older-than", "5"], env).stdout
    assert "removed 1 entries" in out and not os.path.exists(old) and os.path.exists(new)
    broken = cache.entry_path(str(root), "ab" + "0" * 62)
    os.makedirs(os.path.dirname(broken), exist_ok=True)
    with open(broken, "wb") as f:
        f.write(b"garbage")
    assert "<unreadable header" in run_tool([tool, "list"], env).stdout
    out = run_tool([tool, "prune", "--max-bytes", "1G"], env).stdout
    assert "removed 1 entries" in out and not os.path.exists(broken) and os.path.exists(new)
    run_tool([tool, "prune", "--max-bytes", "0"], env)
    assert cache.entries(str(root)) == []
    assert "not a size" in run_tool([tool, "prune", "--max-bytes", "lots"], env, code=1).stderr


def test_python_m_fusilli_cache_and_version(filled_cache):
    root, keys = filled_cache
    out = run_tool([sys.executable, "-m", "fusilli", "cache", "list"], {"FUSILLI_CACHE_DIR": str(root)}).stdout
    assert "2 entries" in out
    version = run_tool([sys.executable, "-m", "fusilli", "--version"]).stdout
    assert "fusilli: " in version and "iree-base-compiler: 3.13.0" in version
    assert "iree-base-runtime: 3.13.0" in version and "host cpu features: " in version
    assert "expected --version or one of" in run_tool([sys.executable, "-m", "fusilli", "nope"], code=2).stderr


@pytest.mark.parametrize("tool", ["fusilli-cache", "fusilli-opt", "fusilli-benchmark"])
def test_every_tool_has_version(tool):
    out = run_tool([console_script(tool), "--version"]).stdout
    assert out.startswith(f"{tool} (fusilli ") and "iree-base-compiler: 3.13.0" in out and "host cpu:" in out


def test_fusilli_opt_reads_stdin(tmp_path):
    mlir = "func.func @f(%x: !torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32> {\n  return %x : !torch.vtensor<[2],f32>\n}\n"
    out = run_tool([console_script("fusilli-opt"), "--pass-pipeline=canonicalize"], stdin=mlir).stdout
    assert "func.func @f" in out
