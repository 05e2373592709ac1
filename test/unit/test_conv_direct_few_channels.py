"""cpu-conv-direct-few-channels: a conv with few input channels (the 7x7 stem) as a direct
``linalg.conv_2d_nhwc_hwcf`` with an explicit register tile instead of an im2col GEMM."""

from __future__ import annotations

import functools

import pytest
from conftest import channels_last_conv_graph, random_array, run_and_check

import fusilli as fs
from fusilli.backend import rules, targets
from fusilli.backend.targets import Target
from fusilli.ir import fusilli_context
from fusilli.passes import gemm_config

build = functools.partial(channels_last_conv_graph, name="direct")
STEM = ((7, 7), (2, 2), (3, 3))


def _problem(n, c, h, w, k, kernel=(7, 7), stride=(2, 2), padding=(3, 3)):
    out = [(d + 2 * p - r) // s + 1 for d, p, r, s in zip((h, w), padding, kernel, stride)]
    facts = rules.conv_facts(kernel, stride, (1, 1), 1, True, n, out, c)
    return rules.Problem(
        "conv_fprop", fs.DataType.FLOAT, 2 * n * out[0] * out[1] * k * c * kernel[0] * kernel[1], facts
    )


def _direct(problem, arch) -> bool:
    choice = rules.choose(problem, Target.resolve("cpu", arch), "algorithm")
    return choice is not None and choice.rule is rules.CPU_CONV_DIRECT_FEW_CHANNELS


@pytest.mark.parametrize(
    "arch, expected",
    [
        ("sapphirerapids", True),
        ("haswell", True),
        ("znver4", True),
        ("znver3", True),
        ("x86-64-v3", True),
        ("x86-64-v4", False),
    ],
)
def test_the_stem_is_direct_on_the_measured_cpus(arch, expected):
    # Measured on Intel and AMD (AVX-512 and AVX2 tiles) and as x86-64-v3 code; the vendor-free
    # AVX-512 level keeps the im2col GEMM.
    assert _direct(_problem(8, 3, 224, 224, 64), arch) is expected


@pytest.mark.parametrize(
    "problem",
    [
        _problem(1, 16, 224, 224, 64),  # 16 input channels: the GEMM is deep enough
        _problem(1, 3, 220, 220, 64),  # 110 output columns: the 8-column register tile does not divide them
        _problem(1, 3, 224, 224, 48),  # 48 output channels: nor does the 32-channel one
        _problem(1, 3, 224, 224, 64, (1, 1), (1, 1), (0, 0)),  # a 1x1 filter
        _problem(1, 3, 16, 16, 32),  # below the im2col size
    ],
)
def test_not_direct(problem):
    assert not _direct(problem, "sapphirerapids")


def test_compilation_info_divides_the_output():
    with fusilli_context():
        stem = str(gemm_config.direct_conv_compilation_info("avx512", (8, 112, 112, 64), 3, "intel"))
        assert "distribution = [1, 8, 56, 64, 0, 0, 0]" in stem
        assert "vector_common_parallel = [1, 1, 8, 32, 0, 0, 0]" in stem
        assert "vector_reduction = [0, 0, 0, 0, 1, 1, 3]" in stem and "ConvTileAndDecomposeExpert" in stem
        # Workgroups shrink to divisors of the output that are multiples of the register tile.
        odd = str(gemm_config.direct_conv_compilation_info("avx512", (1, 30, 24, 96), 4, "intel"))
        assert "distribution = [1, 6, 24, 32, 0, 0, 0]" in odd
        assert gemm_config.direct_conv_compilation_info("avx512", (1, 30, 20, 96), 3, "intel") is None
        # AVX-512 of no named vendor has no measured tile; AVX2 of none (x86-64-v3) takes the
        # tile Intel's and AMD's AVX2 cores measured.
        assert gemm_config.direct_conv_compilation_info("avx512", (1, 112, 112, 64), 3, None) is None
        generic_avx2 = str(gemm_config.direct_conv_compilation_info("avx2", (1, 112, 112, 64), 3, None))
        assert "vector_common_parallel = [1, 1, 8, 8, 0, 0, 0]" in generic_avx2


def test_pool_share():
    # IREE's pool takes a dispatch's workgroups one at a time below 8 per worker, then 8 at a
    # time: 28 as 8 + 8 + 8 + 4 on two workers is 16 against 12.
    assert gemm_config.pool_share(28) == pytest.approx(16 / 14)
    assert gemm_config.pool_share(56) == pytest.approx(32 / 28)
    assert gemm_config.pool_share(13) == pytest.approx(7 / 6.5)
    assert all(gemm_config.pool_share(w) == 1.0 for w in (2, 16, 32, 112))
    assert gemm_config.pool_share(28, workers=4) == 1.0  # below 8 per worker: one at a time
    assert gemm_config.pool_share(40, workers=4) == pytest.approx(16 / 10)


def test_workgroup_rows_split_evenly_over_the_pool():
    with fusilli_context():
        # The stem at batch 1 as two bands of 56 rows: 8-row workgroups would be 28 (2 x 7 x 2), 7-row 32.
        stem = str(gemm_config.direct_conv_compilation_info("avx2", (2, 56, 112, 64), 3, "amd"))
        assert "distribution = [1, 7, 56, 64, 0, 0, 0]" in stem
        # Batch 8 keeps the table's 8 rows (224 workgroups).
        assert "distribution = [1, 8, 56, 64, 0, 0, 0]" in str(
            gemm_config.direct_conv_compilation_info("avx2", (8, 112, 112, 64), 3, "amd")
        )


@pytest.mark.parametrize("arch", ["znver1", "sapphirerapids", "x86-64-v3"])
def test_a_batch_of_one_keeps_its_tiles(arch):
    """IREE folds a conv's unit batch away and drops its compilation_info with it: a batch of one
    runs as two images, bands of rows, and its dispatch keeps the table's tiles."""
    g = build([1, 3, 224, 224], 64, *STEM, epilogue=True, name=f"direct_bands_{arch}")
    assert "cpu-conv-direct-few-channels" in g.explain(fs.Backend.CPU, arch=arch)
    optimized = g.mlir("optimized", fs.Backend.CPU, arch)
    assert "tensor<2x117x230x3xf32>" in optimized and "tensor<2x56x112x64xf32>" in optimized
    flow = g.mlir("flow", fs.Backend.CPU, arch)
    # IREE's dispatch region holds the conv as a generic (its epilogue fused), the config on it.
    conv = [line for line in flow.splitlines() if "ConvTileAndDecomposeExpert" in line]
    assert len(conv) == 1 and "tensor<2x56x112x64xf32>" in conv[0]
    # An odd number of output rows stays one image.
    odd = build([1, 3, 62, 64], 32, *STEM, name=f"direct_odd_{arch}").mlir("optimized", fs.Backend.CPU, arch)
    assert "tensor<1x68x70x3xf32>, tensor<7x7x3x32xf32>) outs(" in odd  # the padded input, whole


def _host_has_a_tile() -> bool:
    target = Target.resolve("cpu", None)
    return gemm_config.direct_conv_vector_tile(rules.vector_isa(target), targets.cpu_vendor(target.cpu)) is not None


@pytest.mark.skipif(not _host_has_a_tile(), reason="the direct-conv tiles are measured for Intel and AMD CPUs only")
@pytest.mark.parametrize(
    "x_dim, k",
    [
        ([1, 3, 64, 64], 64),  # a batch of one: two bands of rows
        ([2, 3, 60, 48], 96),
        ([1, 2, 64, 64], 32),
        ([1, 4, 48, 48], 64),
        ([1, 3, 62, 64], 32),  # 31 output rows: one band
    ],
)
def test_numerics_and_no_epilogue_dispatch(cpu, rng, x_dim, k):
    tag = "x".join(map(str, x_dim))
    plain = build(x_dim, k, *STEM, name=f"direct_plain_{tag}")
    fused = build(x_dim, k, *STEM, epilogue=True, name=f"direct_epi_{tag}")
    assert "cpu-conv-direct-few-channels" in fused.explain(fs.Backend.CPU)
    assert "ConvTileAndDecomposeExpert" in fused.mlir("optimized")
    run_and_check(fused, cpu, {t: random_array(t, rng) for t in fused.input_tensors()}, rtol=1e-4, atol=1e-4)
    # The filter's HWCF copy, the padded input, the conv with bias + relu.
    assert fused.compile_stats.dispatch_count == plain.compile(cpu).compile_stats.dispatch_count == 3


def test_numerics_avx2_tile(rng):
    """The Intel AVX2 tile (8 columns x 8 channels) run as haswell code."""
    try:
        Target.resolve("cpu", "haswell").check_runs_here("haswell code")
    except fs.FusilliError:
        pytest.skip("this CPU cannot run haswell code")
    handle = fs.Handle(fs.Backend.CPU, arch="haswell")
    g = build([1, 3, 40, 32], 24, *STEM, epilogue=True, name="direct_avx2")
    optimized = g.mlir("optimized", fs.Backend.CPU, "haswell")
    assert "vector_common_parallel = [1, 1, 8, 8, 0, 0, 0]" in optimized
    run_and_check(g, handle, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("arch", ["sapphirerapids", "haswell", "znver4", "znver3", "x86-64-v3"])
def test_direct_conv_before_winograd_and_without_im2col_flags(arch):
    """A 3x3 stride-1 conv on 3 channels (a first layer) is a direct conv, not Winograd (whose GEMM
    would be 3 deep: 1x3x224x224->64 0.23 -> 0.70 of PyTorch on AVX-512, 0.35 -> 0.84 on AVX2), and
    no direct conv gets IREE's im2col + data-tiling flags, which would turn it back into a GEMM
    (5x5 1x3x112x112->32: 5 dispatches, 0.25 -> 3 dispatches, 0.81)."""
    target = Target.resolve("cpu", arch)
    for problem in (
        _problem(1, 3, 224, 224, 64, (3, 3), (1, 1), (1, 1)),
        _problem(1, 3, 112, 112, 32, (5, 5), (1, 1), (2, 2)),
    ):
        assert _direct(problem, arch)
        flags = rules.choose(problem, target, "flags")
        assert flags is None or flags.rule is not rules.CPU_CONV_IM2COL_DATA_TILING
    # Without a measured tile (the vendor-free AVX-512 level) Winograd keeps it.
    first_layer = _problem(1, 3, 224, 224, 64, (3, 3), (1, 1), (1, 1))
    assert rules.choose(first_layer, Target.resolve("cpu", "x86-64-v4"), "algorithm").rule is rules.CPU_CONV_WINOGRAD


def test_one_channel_is_not_channels_last():
    """With one channel NHWC and NCHW strides name the same memory and emission keeps the conv
    NCHW, so no channels-last rule may take it (the direct rule dropped IREE's im2col flags
    for a conv it never rewrote: 7x7 s2 4x1x224x224->64 0.20 -> 0.93 of PyTorch)."""
    g = fs.Graph(name="direct_one_channel")
    x = g.tensor(name="x", dim=[4, 1, 224, 224], stride=fs.strides([4, 1, 224, 224], "NHWC"))
    w = g.tensor(name="w", dim=[64, 1, 7, 7], stride=fs.strides([64, 1, 7, 7], "NHWC"))
    g.conv_fprop(x, w, padding=[3, 3], stride=[2, 2], dilation=[1, 1], name="conv").set_output(True).set_name("y")
    explained = g.explain(fs.Backend.CPU, arch="sapphirerapids")
    assert "cpu-conv-direct-few-channels" not in explained and "cpu-conv-im2col-gemm" not in explained
    assert "cpu-conv-im2col-data-tiling" in explained
