"""Backend: targets and flags, AMDGPU artifacts without a GPU, in-process compile
(no child process), compile statistics, workspace, cache keys and IR stages."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from conftest import random_array, run_and_check

import fusilli as fs
from fusilli.backend import Artifact
from fusilli.backend.targets import CPU_CRASHING_FLAGS, Target


def conv_bias_relu(name: str, layout: str = "NHWC", padding: int = 0, k: int = 8, h: int = 6) -> fs.Graph:
    g = fs.Graph(name=name)
    x = g.tensor(name="x", dim=[1, 4, h, h], stride=fs.strides([1, 4, h, h], layout))
    w = g.tensor(name="w", dim=[k, 4, 3, 3], stride=fs.strides([k, 4, 3, 3], layout))
    b = g.tensor(name="b", dim=[1, k, 1, 1], stride=fs.strides([1, k, 1, 1], layout))
    y = g.conv_fprop(x, w, padding=[padding] * 2, stride=[1, 1], dilation=[1, 1], name="conv")
    g.relu(g.add(y, b, name="bias"), name="relu").set_output(True).set_name("y")
    return g


# ------------------------------------------------------------------------------ targets
def test_backend_coercion_and_bad_backend():
    assert fs.Backend.coerce("cpu") is fs.Backend.CPU
    assert fs.Backend.coerce("AMDGPU") is fs.Backend.AMDGPU
    with pytest.raises(fs.FusilliError) as e:
        fs.Handle("tpu")
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT and "'tpu'" in str(e.value)


def test_cpu_has_one_device():
    with pytest.raises(fs.FusilliError) as e:
        fs.Handle(fs.Backend.CPU, device=1)
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT


def test_amdgpu_without_known_arch_is_invalid_argument(monkeypatch, tmp_path):
    monkeypatch.delenv("FUSILLI_AMDGPU_ARCH", raising=False)
    monkeypatch.delenv("FUSILLI_EXTERNAL_AMD_SMI", raising=False)
    monkeypatch.delenv("FUSILLI_EXTERNAL_ROCM_AGENT_ENUMERATOR", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no amd-smi / rocm_agent_enumerator to probe
    g = conv_bias_relu("no_arch")
    for action in (
        lambda: g.compile_to_artifact(fs.Backend.AMDGPU),
        lambda: fs.Handle(fs.Backend.AMDGPU),
        lambda: g.key(fs.Backend.AMDGPU),
    ):
        with pytest.raises(fs.FusilliError) as e:
            action()
        assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT
        assert "arch" in str(e.value)


@pytest.mark.parametrize("arch", ["gfx9999", "nvidia", "sm_90"])
def test_unknown_amdgpu_arch_is_invalid_argument(arch):
    with pytest.raises(fs.FusilliError) as e:
        conv_bias_relu("bad_arch").compile_to_artifact(fs.Backend.AMDGPU, arch=arch)
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT and repr(arch) in str(e.value)


def test_refused_crashing_flag_is_invalid_argument(monkeypatch, cpu):
    monkeypatch.setenv("FUSILLI_EXTRA_COMPILER_FLAGS", CPU_CRASHING_FLAGS[0])
    g = conv_bias_relu("crashing_flag", padding=1)
    with pytest.raises(fs.FusilliError) as e:
        g.compile(cpu)
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT
    assert CPU_CRASHING_FLAGS[0] in str(e.value)


def test_unknown_extra_flag_is_compile_failure(monkeypatch, cpu):
    monkeypatch.setenv("FUSILLI_EXTRA_COMPILER_FLAGS", "--iree-this-flag-does-not-exist=1")
    g = conv_bias_relu("unknown_flag")
    with pytest.raises(fs.FusilliError) as e:
        g.compile(cpu)
    assert e.value.code == fs.ErrorCode.COMPILE_FAILURE
    assert "--iree-this-flag-does-not-exist" in str(e.value)
    monkeypatch.delenv("FUSILLI_EXTRA_COMPILER_FLAGS")
    assert g.compile(cpu) is g  # the process is fine and compiles without it


def test_extra_flags_reach_the_compiler(monkeypatch):
    monkeypatch.setenv("FUSILLI_EXTRA_COMPILER_FLAGS", '--iree-opt-level=O1 "--iree-llvmcpu-target-cpu=generic"')
    flags = Target.resolve(fs.Backend.CPU).flags
    assert flags[-2:] == ("--iree-opt-level=O1", "--iree-llvmcpu-target-cpu=generic")


# ------------------------------------------------------------------------------ AMDGPU artifact
@pytest.fixture(scope="module")
def amdgpu_artifact() -> bytes:
    return conv_bias_relu("amdgpu_aot").compile_to_artifact(fs.Backend.AMDGPU, arch="gfx942")


def test_amdgpu_artifact_builds_without_gpu(amdgpu_artifact):
    art = Artifact.from_bytes(amdgpu_artifact)
    assert art.backend is fs.Backend.AMDGPU and art.arch == "gfx942"
    assert len(art.vmfb) > 1000
    assert art.stats.dispatch_count >= 1
    assert art.graph_key == conv_bias_relu("amdgpu_aot").key(fs.Backend.AMDGPU, arch="gfx942")


def test_amdgpu_artifact_refused_by_cpu_handle(amdgpu_artifact, cpu):
    g = conv_bias_relu("amdgpu_aot").validate()
    with pytest.raises(fs.FusilliError) as e:
        g.load_artifact(cpu, amdgpu_artifact)
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT
    assert "CPU" in str(e.value) and "AMDGPU" in str(e.value)


# ------------------------------------------------------------------------------ no child process
_CHILD_EVENTS = (
    "subprocess.Popen",
    "os.posix_spawn",
    "os.fork",
    "os.forkpty",
    "os.system",
    "os.exec",
    "os.spawn",
    "pty.spawn",
)
_audit = {"active": False, "events": []}


def _audit_hook(event: str, args) -> None:
    if _audit["active"] and event.startswith(_CHILD_EVENTS):
        _audit["events"].append(event)


def test_compile_starts_no_child_process(monkeypatch, cpu):
    monkeypatch.setenv("FUSILLI_AMDGPU_ARCH", "gfx942")
    monkeypatch.setenv("FUSILLI_DISABLE_CACHE", "1")  # make sure both really compile
    if not _audit.get("installed"):
        sys.addaudithook(_audit_hook)  # hooks cannot be removed; it only records while active
        _audit["installed"] = True
    cpu_graph = conv_bias_relu("no_child_cpu", padding=1)
    gpu_graph = conv_bias_relu("no_child_gpu")
    _audit["events"] = []
    _audit["active"] = True
    try:
        cpu_graph.compile(cpu)
        gpu_bytes = gpu_graph.compile_to_artifact(fs.Backend.AMDGPU)
        os.system("true")  # the hook does see child processes
    finally:
        _audit["active"] = False
    assert _audit["events"] == ["os.system"], _audit["events"]
    assert cpu_graph.compile_stats.compile_seconds > 0
    assert Artifact.from_bytes(gpu_bytes).arch == "gfx942"


# ------------------------------------------------------------------------------ stats, workspace
def test_fused_conv_epilogue_is_one_dispatch(cpu, rng):
    g = conv_bias_relu("stats_conv")
    g.validate()
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)
    stats = g.compile_stats
    assert stats.dispatch_count == 1
    assert stats["dispatch_count"] == 1
    assert stats.transient_memory_bytes >= 0
    assert stats.copy_count == 0
    assert g.workspace_size >= 0
    # The artifact cache keeps the statistics as JSON: each field reads back.
    from fusilli.backend.compiler import CompileStats

    stored = CompileStats(2, 64, executable_count=2, compile_seconds=0.5, copy_count=3)
    assert CompileStats.from_json(stored.to_json()).to_json() == stored.to_json()


def test_pointwise_chain_is_one_dispatch(cpu):
    g = fs.Graph(name="stats_pw")
    x = g.tensor(name="x", dim=[4, 8])
    b = g.tensor(name="b", dim=[1, 8])
    g.relu(g.mul(g.add(x, b), g.scalar(2.0))).set_output(True)
    g.compile(cpu)
    assert g.compile_stats.dispatch_count == 1


@pytest.fixture(scope="module")
def padded(cpu):
    """A padded NCHW conv + epilogue: IREE pads into a transient buffer (workspace > 0)."""
    g = conv_bias_relu("ws_conv", layout="NCHW", padding=1, h=8, k=16)
    g.compile(cpu)
    return g


def test_workspace_supplied_by_caller(padded, rng):
    g = padded
    assert g.workspace_size > 0
    inputs = {t: random_array(t, rng) for t in g.input_tensors()}
    (y,) = g.output_tensors()
    out = fs.empty(y)
    ws = np.zeros(g.workspace_size, np.uint8)
    g.execute({**inputs, y: out}, workspace=ws)
    from fusilli import reference

    np.testing.assert_allclose(out, reference.run(g, inputs)["y"], rtol=1e-4, atol=1e-4)


def test_workspace_too_small(padded, rng):
    g = padded
    inputs = {t: random_array(t, rng) for t in g.input_tensors()}
    (y,) = g.output_tensors()
    out = fs.empty(y)
    out[...] = -7.0
    with pytest.raises(fs.FusilliError) as e:
        g.execute({**inputs, y: out}, workspace=np.zeros(g.workspace_size - 1, np.uint8))
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT
    assert "'ws_conv'" in str(e.value) and "too small" in str(e.value)
    assert (out == -7.0).all()


# ------------------------------------------------------------------------------ keys, IR
def test_key_stable_and_sensitive(monkeypatch):
    k1 = conv_bias_relu("key_graph").key()
    assert conv_bias_relu("key_graph").key() == k1  # identical graphs, built twice
    assert fs.Graph.from_json(conv_bias_relu("key_graph").to_json()).key() == k1
    assert conv_bias_relu("key_graph", h=7).key() != k1  # a dim
    assert conv_bias_relu("key_graph", padding=1).key() != k1  # an attribute
    assert conv_bias_relu("key_graph", layout="NCHW").key() != k1  # strides
    assert conv_bias_relu("key_graph").key(fs.Backend.AMDGPU, arch="gfx942") != k1  # target
    assert conv_bias_relu("key_graph").key(fs.Backend.AMDGPU, arch="gfx942") != conv_bias_relu("key_graph").key(
        fs.Backend.AMDGPU, arch="gfx90a"
    )
    monkeypatch.setenv("FUSILLI_EXTRA_COMPILER_FLAGS", "--iree-opt-level=O1")  # a flag
    assert conv_bias_relu("key_graph").key() != k1


def test_key_of_compiled_graph(cpu):
    g = conv_bias_relu("stats_conv").compile(cpu)
    assert g.key() == conv_bias_relu("stats_conv").key()


def test_mlir_stages():
    g = conv_bias_relu("stages")
    emitted = g.mlir("emitted")
    assert emitted == g.emit_mlir()
    assert "torch.aten.convolution" in emitted and "func.func @main" in emitted
    assert "func.func @main" in g.mlir("optimized")
    flow = g.mlir("flow")
    assert "flow.dispatch" in flow
    with pytest.raises(fs.FusilliError) as e:
        g.mlir("no-such-stage")
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT
