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
from fusilli.backend import rules, targets
from fusilli.backend.cpu_table import CPU_FEATURES
from fusilli.backend.targets import Target, checked_features, host_cpu, named_cpu

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
    # Materialized: IREE's data tiling would otherwise see through the widening to bf16.
    assert v3.count("util.optimization_barrier") == 2
    native = g.mlir("optimized", arch="znver4")
    assert "vtensor<[64,64],bf16>, !torch.vtensor<[64,64],bf16> ->" in native
    assert "util.optimization_barrier" not in native
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


# ------------------------------------------------------------------------------ AMD GPU lowering
def _sdpa_graph(name: str, dtype: fs.DataType, causal: bool = False) -> fs.Graph:
    g = fs.Graph(name, io_data_type=dtype, compute_data_type=F32)
    q, k, v = (g.tensor(n, [1, 4, 128, 64]) for n in "qkv")
    g.sdpa(q, k, v, is_causal=causal, name="attn").set_output(True).set_name("o")
    return g.validate()


def _conv_graph(name: str, dtype: fs.DataType) -> fs.Graph:
    g = fs.Graph(name, io_data_type=dtype, compute_data_type=F32)
    x = g.tensor("x", [2, 64, 16, 16], stride=fs.strides([2, 64, 16, 16], "NHWC"))
    w = g.tensor("w", [64, 64, 3, 3], stride=fs.strides([64, 64, 3, 3], "NHWC"))
    y = g.conv_fprop(x, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv")
    b = g.tensor("b", [1, 64, 1, 1], stride=fs.strides([1, 64, 1, 1], "NHWC"))
    g.relu(g.add(y, b, name="bias"), name="relu").set_output(True).set_name("y")
    return g.validate()


def test_amdgpu_sdpa_is_one_fused_attention_and_cpu_keeps_its_rules():
    g = _sdpa_graph("sdpa_f16_targets", F16)
    gpu = g.mlir("optimized", backend=fs.Backend.AMDGPU, arch="gfx942")
    assert "iree_linalg_ext.attention" in gpu and "math.exp" not in gpu
    assert "tensor<1x4x128x64xf16>, tensor<1x4x128x64xf16>, tensor<1x4x128x64xf16>" in gpu
    cpu_ir = g.mlir("optimized", backend=fs.Backend.CPU, arch="znver4")
    assert "math.exp" in cpu_ir and "iree_linalg_ext.attention" not in cpu_ir  # decomposed in f32
    causal = _sdpa_graph("sdpa_f16_causal_targets", F16, causal=True).mlir("optimized", "amdgpu", "gfx942")
    assert causal.count("iree_linalg_ext.attention") == 1 and "math.exp" not in causal


def test_amdgpu_conv_stays_in_its_own_type_and_cpu_keeps_its_rules():
    g = _conv_graph("conv_f16_targets", F16)
    gpu = g.mlir("optimized", backend=fs.Backend.AMDGPU, arch="gfx942")
    conv = next(line for line in gpu.splitlines() if "torch.aten.convolution" in line)
    assert "f16>" in conv and "f32>" not in conv and "linalg.conv" not in gpu
    cpu_ir = g.mlir("optimized", backend=fs.Backend.CPU, arch="znver4")
    # f32, channels-last: Winograd F(4x4)'s batched GEMM (32 tiles, cpu-conv-winograd).
    assert "linalg.batch_matmul" in cpu_ir and "tensor<36x32x64xf32>" in cpu_ir
    flags = g.target("amdgpu", "gfx942").flags
    assert "--iree-global-opt-use-im2col-for-convs" not in flags and "--iree-opt-data-tiling=true" not in flags


@pytest.mark.parametrize("dtype", [F16, BF16], ids=["f16", "bf16"])
@pytest.mark.parametrize("op", ["matmul", "conv", "sdpa"])
def test_gfx942_code_uses_mfma(op, dtype, tmp_path, monkeypatch):
    """f16/bf16 matmul, conv and attention compiled for gfx942 reach the matrix cores:
    the executable IREE produces holds v_mfma instructions (no GPU needed)."""
    g = {
        "matmul": lambda: matmul_graph(f"mfma_mm_{dtype.name}", 256, dtype),
        "conv": lambda: _conv_graph(f"mfma_conv_{dtype.name}", dtype),
        "sdpa": lambda: _sdpa_graph(f"mfma_sdpa_{dtype.name}", dtype),
    }[op]()
    monkeypatch.setenv("FUSILLI_DISABLE_CACHE", "1")
    monkeypatch.setenv("FUSILLI_EXTRA_COMPILER_FLAGS", f"--iree-hal-dump-executable-files-to={tmp_path}")
    g.compile_to_artifact(fs.Backend.AMDGPU, arch="gfx942")
    asm = "\n".join(p.read_text(errors="replace") for p in tmp_path.glob("*.rocmasm"))
    assert asm, "IREE dumped no ROCm assembly"
    kinds = set(re.findall(r"v_mfma_\w+", asm))
    # e.g. v_mfma_f32_16x16x16_bf16: f32 accumulation of the op's own element type.
    assert any(k.endswith("_" + dtype.mlir_name) for k in kinds), f"{op} {dtype.name} on gfx942: {kinds or 'no MFMA'}"


def test_explain_names_every_nodes_rule_per_target():
    g = fs.Graph("explain", io_data_type=BF16, compute_data_type=F32)
    x = g.tensor("x", [2, 64, 16, 16], stride=fs.strides([2, 64, 16, 16], "NHWC"))
    w = g.tensor("w", [64, 64, 3, 3], stride=fs.strides([64, 64, 3, 3], "NHWC"))
    y = g.relu(g.conv_fprop(x, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv"), name="relu")
    q, k, v = (g.tensor(n, [1, 4, 128, 64]) for n in "qkv")
    o = g.sdpa(q, k, v, name="attn")
    a, b = g.tensor("a", [1024, 1024]), g.tensor("b", [1024, 1024])
    c = g.matmul(a, b, name="mm")
    for t in (y, o, c):
        t.set_output(True)
    g.validate()
    expected = {
        (fs.Backend.CPU, None): {"conv": "cpu-", "attn": "cpu-sdpa-decomposed", "mm": "cpu-matmul-data-tiling"},
        (fs.Backend.CPU, "x86-64-v3"): {
            "conv": "cpu-low-precision-via-f32",
            "attn": "cpu-low-precision-via-f32",
            "mm": "cpu-low-precision-via-f32",
        },
        (fs.Backend.AMDGPU, "gfx942"): {
            "conv": "amdgpu-conv-upstream",
            "attn": "amdgpu-sdpa-fused-attention",
            "mm": "amdgpu-own-type",
        },
    }
    for (backend, arch), want in expected.items():
        text = g.explain(backend, arch)
        lines = text.splitlines()
        cpu = backend == fs.Backend.CPU
        assert lines[0].startswith("target: ") and len(lines) == 1 + len(g.nodes) + cpu
        if cpu:
            assert lines.pop().startswith("execution: ")
        by_node = {line.split(" ", 1)[0]: line for line in lines[1:]}
        assert set(by_node) == {n.name for n in g.nodes}
        for node, rule_name in want.items():
            assert rule_name in by_node[node], (backend, arch, by_node[node])
        assert "no target-specific rule" in by_node["relu"]
    host = g.explain()
    if "avx512bf16" in host_cpu().features and targets.cpu_vendor(host_cpu()) != "intel":
        # Winograd in f32 goes before the bf16 im2col matmul (cpu-conv-bf16-im2col-matmul).
        assert "cpu-conv-winograd (F(4x4, 3x3), 3x3 stride 1, 37.7 MFLOP >= 16.8 MFLOP, 32 4x4 tiles >= 16" in host
    assert "avx512bf16" in g.explain(arch="x86-64-v3")  # the fact: which feature it lacks
    # Where Winograd does not apply (4 4x4 tiles), a bf16 conv keeps bf16 operands for avx512bf16.
    small = fs.Graph("explain_bf16_im2col", io_data_type=BF16, compute_data_type=F32)
    xs = small.tensor("x", [1, 64, 8, 8], stride=fs.strides([1, 64, 8, 8], "NHWC"))
    ws = small.tensor("w", [64, 64, 3, 3], stride=fs.strides([64, 64, 3, 3], "NHWC"))
    small.conv_fprop(xs, ws, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv").set_output(True)
    small.validate()
    assert "cpu-conv-bf16-im2col-matmul (bf16, 4.72 MFLOP >= 1.05 MFLOP, avx512bf16)" in small.explain(arch="znver4")


def test_cpu_vendor_follows_the_named_cpu():
    assert targets.cpu_vendor(named_cpu("znver4")) == "amd"
    assert targets.cpu_vendor(named_cpu("sapphirerapids")) == "intel"
    assert targets.cpu_vendor(named_cpu("icelake-client")) == "intel"
    assert targets.cpu_vendor(named_cpu("x86-64-v3")) is None
    assert targets.cpu_vendor(None) is None


def test_cpu_core_names_only_named_x86_cpus():
    assert targets.cpu_core(named_cpu("znver5")) == "znver5"
    assert targets.cpu_core(named_cpu("sapphirerapids")) == "sapphirerapids"
    assert targets.cpu_core(named_cpu("x86-64-v4")) is None
    assert targets.cpu_core(None) is None


def test_strided_conv_gemm_threshold_is_per_vendor():
    """cpu-conv-im2col-gemm: the GEMM rows of a 3x3 stride-2 conv against the vendor-free AVX-512
    threshold (4096: data tiling below) and the others (explicit GEMM): 512 rows on Intel and,
    for GEMMs >= 512 deep, 16 on AVX2 (Intel's too) and on AMD AVX-512 cores (their tiles have K
    blocks); 192 on Intel AVX-512 for convs with >= 128 output channels (their GEMM's wide
    workgroups). Where cpu-conv-winograd-strided takes the conv (on Intel cores from 392 tiles) it
    goes first."""

    def conv(n):
        g = fs.Graph(f"strided_vendor_{n}", io_data_type=fs.DataType.FLOAT)
        x = g.tensor("x", [n, 128, 28, 28], stride=fs.strides([n, 128, 28, 28], "NHWC"))
        w = g.tensor("w", [256, 128, 3, 3], stride=fs.strides([256, 128, 3, 3], "NHWC"))
        g.conv_fprop(x, w, padding=[1, 1], stride=[2, 2], dilation=[1, 1], name="conv").set_output(True)
        return g.validate()

    g = conv(4)  # 784 GEMM rows, 196 2x2 tiles
    intel = g.explain("cpu", "sapphirerapids")
    assert "cpu-conv-im2col-gemm (3x3 stride 2, 784 GEMM rows >= 192" in intel and "Intel" in intel
    intel_avx2 = g.explain("cpu", "haswell")
    assert "cpu-conv-im2col-gemm (3x3 stride 2, 784 GEMM rows >= 16" in intel_avx2 and "Intel" in intel_avx2
    for arch in ("znver4", "x86-64-v3", "x86-64-v4"):
        assert "cpu-conv-winograd-strided (F(2x2, 2x2)" in g.explain("cpu", arch)
    g = conv(8)  # 1568 rows, 392 tiles, 15 MB transformed: the phases' Winograd takes it too
    for arch in ("znver4", "x86-64-v3", "x86-64-v4", "sapphirerapids", "haswell"):
        assert "cpu-conv-winograd-strided (F(2x2, 2x2)" in g.explain("cpu", arch)
    # 4704 rows (45 MB transformed: the phases' Winograd declines). K-blocked GEMM tiles take
    # GEMMs this deep (1152) from 16 rows on AMD AVX-512 and AVX2 (there up to 1152 deep, else
    # 512); a vendor-free AVX-512 level (no K blocks) from 4096.
    g = conv(24)
    assert "cpu-conv-im2col-gemm (3x3 stride 2, 4704 GEMM rows >= 16, GEMM tuned for avx512, AMD)" in g.explain(
        "cpu", "znver4"
    )
    assert "cpu-conv-im2col-gemm (3x3 stride 2, 4704 GEMM rows >= 16, GEMM tuned for avx2)" in g.explain(
        "cpu", "x86-64-v3"
    )
    assert "cpu-conv-im2col-gemm (3x3 stride 2, 4704 GEMM rows >= 4096, GEMM tuned for avx512)" in g.explain(
        "cpu", "x86-64-v4"
    )


@pytest.mark.parametrize(
    "n, c, hw, want, amd_want",
    [
        # 4 MiB transformed filter: F(2x2) on Intel (measured there only); AMD: 16 4x4 tiles are
        # enough for F(4x4) with the one-pass filter transform (Intel's cores take that from 32).
        (1, 256, 14, "cpu-conv-winograd (F(2x2, 3x3)", "cpu-conv-winograd (F(4x4, 3x3)"),
        (8, 512, 7, "32 4x4 tiles >= 32", "32 4x4 tiles >= 16"),  # 16 MiB filter: not F(2x2)
        # 16 2x2 tiles: the K-blocked GEMM on both
        (1, 512, 7, "cpu-conv-im2col-gemm (3x3, GEMM depth 4608 >= 2304", "cpu-conv-im2col-gemm (3x3, GEMM depth 4608"),
        (8, 256, 14, "cpu-conv-winograd (F(4x4, 3x3)", "cpu-conv-winograd (F(4x4, 3x3)"),  # 128 4x4 tiles
    ],
)
def test_avx512_small_image_3x3_choices(n, c, hw, want, amd_want):
    g = fs.Graph(f"intel_3x3_{n}_{c}_{hw}", io_data_type=fs.DataType.FLOAT)
    x = g.tensor("x", [n, c, hw, hw], stride=fs.strides([n, c, hw, hw], "NHWC"))
    w = g.tensor("w", [c, c, 3, 3], stride=fs.strides([c, c, 3, 3], "NHWC"))
    g.conv_fprop(x, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv").set_output(True)
    g.validate()
    assert want in g.explain("cpu", "sapphirerapids")
    amd = g.explain("cpu", "znver4")
    assert amd_want in amd and "F(2x2" not in amd
