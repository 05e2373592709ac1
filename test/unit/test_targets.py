"""Targets: CPU names and ISA features (host and named), AMD GPU archs, validation of
CPU names/features before LLVM sees them, the target in the cache key and in
artifacts, refusing artifacts whose CPU features this machine lacks, and
``Graph.explain`` naming every node's rule per target."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import random_array, run_and_check

import fusilli as fs
from fusilli.backend import targets
from fusilli.backend.cpu_table import CPU_FEATURES
from fusilli.backend.targets import Target, checked_features, host_cpu, named_cpu
from fusilli.lowering import rules

BF16, F16, F32 = fs.DataType.BFLOAT16, fs.DataType.HALF, fs.DataType.FLOAT


def matmul_graph(name: str, n: int = 64, dtype: fs.DataType = F32) -> fs.Graph:
    g = fs.Graph(name, io_data_type=dtype, compute_data_type=F32)
    g.matmul(g.tensor("a", [n, n]), g.tensor("b", [n, n]), name="mm").set_output(True).set_name("c")
    g.validate()
    return g


# ------------------------------------------------------------------------------ the CPU model
def test_named_cpus_imply_their_isa_features():
    v3 = named_cpu("x86-64-v3")
    assert {"avx2", "fma", "f16c"} <= v3.features and "avx512f" not in v3.features
    spr = named_cpu("sapphirerapids")
    assert {"avx512f", "avx512bf16", "avx512fp16", "amx-bf16", "amx-tile"} <= spr.features
    assert "avx512bf16" in named_cpu("znver4").features and "avx512bf16" not in named_cpu("znver3").features
    arm = named_cpu("neoverse-v2")
    assert arm.machine == "aarch64" and {"neon", "sve", "bf16", "i8mm"} <= arm.features


def test_host_resolves_to_a_concrete_cpu_and_features():
    host = host_cpu()
    assert host.llvm_cpu == "host"
    assert host.name != "host" and host.name in CPU_FEATURES[host.machine]
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        flags = next(line for line in f if line.startswith(("flags", "Features"))).split(":", 1)[1].split()
    if "avx2" in flags:
        assert "avx2" in host.features
    assert ("avx512_bf16" in flags) == ("avx512bf16" in host.features)
    t = Target.resolve("cpu")
    assert t.arch == host.name and t.features == host.features
    assert "--iree-llvmcpu-target-cpu=host" in t.flags


def test_cpu_arch_from_argument_and_environment(monkeypatch):
    assert Target.resolve("cpu", "znver3").arch == "znver3"
    assert "--iree-llvmcpu-target-cpu=znver3" in Target.resolve("cpu", "znver3").flags
    monkeypatch.setenv("FUSILLI_CPU_ARCH", "x86-64-v3")
    t = Target.resolve("cpu")
    assert t.arch == "x86-64-v3" and "avx512f" not in t.features
    assert fs.Handle(fs.Backend.CPU).arch == "x86-64-v3"


@pytest.mark.parametrize(
    "call",
    [
        lambda: Target.resolve("cpu", "no-such-cpu"),
        lambda: fs.Handle(fs.Backend.CPU, arch="no-such-cpu"),
        lambda: matmul_graph("bad_arch").compile_to_artifact(fs.Backend.CPU, arch="no-such-cpu"),
        lambda: matmul_graph("bad_arch").mlir("optimized", arch="no-such-cpu"),
        lambda: matmul_graph("bad_arch").explain(arch="no-such-cpu"),
    ],
    ids=["resolve", "handle", "compile_to_artifact", "mlir", "explain"],
)
def test_unknown_cpu_arch_is_invalid_argument(call):
    with pytest.raises(fs.FusilliError) as e:
        call()
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT and "'no-such-cpu'" in str(e.value)


def test_a_close_cpu_name_is_suggested():
    with pytest.raises(fs.FusilliError) as e:
        Target.resolve("cpu", "znver44")
    assert "znver4" in str(e.value)


@pytest.mark.parametrize(
    "flags, needle",
    [
        ("--iree-llvmcpu-target-cpu=no-such-cpu", "'no-such-cpu'"),
        ("-iree-llvmcpu-target-cpu=no-such-cpu", "'no-such-cpu'"),
        ("--iree-llvmcpu-target-cpu-features=+foo", "'+foo'"),
        ("-iree-llvmcpu-target-cpu-features=+avx2,avx512f", "'avx512f'"),
        ("--iree-llvmcpu-target-triple=riscv64-unknown-linux-gnu", "another CPU architecture"),
    ],
)
def test_bad_cpu_flags_are_rejected_before_llvm(monkeypatch, cpu, flags, needle):
    """LLVM ends the process on these ('LLVM ERROR'); fusilli refuses them up front."""
    g = matmul_graph(f"bad_flags_{abs(hash(flags))}")
    monkeypatch.setenv("FUSILLI_EXTRA_COMPILER_FLAGS", flags)
    with pytest.raises(fs.FusilliError) as e:
        g.compile(cpu)
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT and needle in str(e.value)
    monkeypatch.delenv("FUSILLI_EXTRA_COMPILER_FLAGS")
    assert g.compile(cpu) is g  # the process is alive and compiles without them


def test_cpu_flags_in_extra_flags_define_the_target(monkeypatch):
    monkeypatch.setenv(
        "FUSILLI_EXTRA_COMPILER_FLAGS", "-iree-llvmcpu-target-cpu=znver4 --iree-llvmcpu-target-cpu-features=-avx512bf16"
    )
    t = Target.resolve("cpu")
    assert t.arch == "znver4" and "avx512f" in t.features and "avx512bf16" not in t.features


def test_single_dash_spelling_of_a_refused_flag_is_refused(monkeypatch):
    monkeypatch.setenv("FUSILLI_EXTRA_COMPILER_FLAGS", "-" + targets.CPU_CRASHING_FLAGS[0][2:])
    with pytest.raises(fs.FusilliError) as e:
        Target.resolve("cpu")
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT


def test_cpu_table_matches_the_compilers_llvm():
    """cpu_table.py (scripts/gen_cpu_table.py) agrees with what IREE resolves in process."""
    for name in ("x86-64-v3", "sapphirerapids", "znver4", "neoverse-v2"):
        text = matmul_graph(f"table_{name.replace('-', '_')}", 8).mlir("global-optimization", arch=name)
        m = re.search(r'cpu = \\?"([^"\\]*)\\?", cpu_features = \\?"([^"\\]*)', text)
        assert m and m.group(1) == name
        resolved = {f[1:] for f in m.group(2).split(",") if f.startswith("+")}
        assert resolved == named_cpu(name).features


# ------------------------------------------------------------------------------ AMD GPU archs
def test_amdgpu_archs_know_their_matrix_units():
    gfx942 = Target.resolve("amdgpu", "gfx942")
    assert gfx942.gpu.matrix_unit == "mfma" and {"mfma", "mfma-bf16", "mfma-f16"} <= gfx942.features
    assert Target.resolve("amdgpu", "mi300x").gpu.gfx == "gfx942"
    assert Target.resolve("amdgpu", "gfx1100").gpu.matrix_unit == "wmma"
    assert "--iree-rocm-target=gfx942" in gfx942.flags and gfx942.device_id == "amdgpu:gfx942"


# ------------------------------------------------------------------------------ cache key, artifacts
def test_target_is_in_the_cache_key():
    g = matmul_graph("key_per_arch")
    keys = {g.key("cpu", a) for a in ("host", "x86-64-v3", "znver4", "sapphirerapids")}
    assert len(keys) == 4
    assert g.key("cpu", "znver4") == g.key("cpu", "znver4")


def test_artifact_for_a_subset_of_host_features_loads_and_runs(cpu, rng):
    g = matmul_graph("v3_artifact")
    data = g.compile_to_artifact(fs.Backend.CPU, arch="x86-64-v3")
    g2 = matmul_graph("v3_artifact")
    g2.load_artifact(cpu, data)
    a, b = (random_array(t, rng) for t in g2.input_tensors())
    c = fs.empty(g2.output_tensors()[0])
    g2.execute({"a": a, "b": b, "c": c})
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_artifact_needing_missing_features_is_refused(monkeypatch, cpu):
    """An AVX-512 artifact on an AVX2-only machine would die of SIGILL: refused, naming the features."""
    g = matmul_graph("znver4_artifact")
    data = g.compile_to_artifact(fs.Backend.CPU, arch="znver4")
    avx2_host = named_cpu("x86-64-v3")
    monkeypatch.setattr(
        targets,
        "host_cpu",
        lambda: targets.Cpu("x86_64", "x86-64-v3", avx2_host.features & checked_features("x86_64"), "host"),
    )
    with pytest.raises(fs.FusilliError) as e:
        matmul_graph("znver4_artifact").load_artifact(cpu, data)
    msg = str(e.value)
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT
    assert "'znver4'" in msg and "avx512f" in msg and "avx512bf16" in msg and "avx2," not in msg


def test_compile_for_a_cpu_this_machine_cannot_run_is_refused_at_load(cpu):
    """A Handle for such a CPU compiles (AOT use) but never loads the code here."""
    missing = named_cpu("sapphirerapids").features & checked_features("x86_64") - host_cpu().features
    if not missing:
        pytest.skip("this machine runs sapphirerapids code")
    handle = fs.Handle(fs.Backend.CPU, arch="sapphirerapids")
    with pytest.raises(fs.FusilliError) as e:
        matmul_graph("spr_here").compile(handle)
    assert all(f in str(e.value) for f in missing)


def test_artifact_records_its_target():
    from fusilli.backend import Artifact

    data = matmul_graph("record").compile_to_artifact(fs.Backend.CPU, arch="znver3")
    record = Artifact.from_bytes(data).target
    assert record["arch"] == "znver3" and "avx2" in record["features"] and record["machine"] == "x86_64"


# ------------------------------------------------------------------------------ rules per target
def test_bf16_matmul_computes_through_f32_without_native_bf16(cpu, rng):
    g = matmul_graph("bf16_v3", 64, BF16)
    v3 = g.mlir("optimized", arch="x86-64-v3")
    assert "torch.aten.matmul" in v3 and "vtensor<[64,64],f32>, !torch.vtensor<[64,64],f32> ->" in v3
    native = g.mlir("optimized", arch="znver4")
    assert "vtensor<[64,64],bf16>, !torch.vtensor<[64,64],bf16> ->" in native
    (choice,) = [c for c in rules.choices(rules.problem_of(g.nodes[0]), g.target("cpu", "x86-64-v3"))]
    assert choice.rule is rules.CPU_LOW_PRECISION_VIA_F32 and "avx512bf16" in choice.fact
    run_and_check(
        g,
        fs.Handle(fs.Backend.CPU, arch="x86-64-v3"),
        {t: random_array(t, rng) for t in g.input_tensors()},
        rtol=2e-2,
        atol=2e-2,
    )


def test_rule_registry_names_are_unique_and_every_rule_has_evidence():
    names = [r.name for r in rules.RULES]
    assert len(names) == len(set(names))
    assert all(r.evidence for r in rules.RULES)
    with pytest.raises(ValueError):
        rules.rule("cpu-own-type", fs.Backend.CPU, (), "compute")(lambda p, t: None)
