"""Winograd F(m, 3) convolution (fusilli/passes/winograd.py): the transform matrices,
numerics of every tile size against the NumPy reference (f32, C >= 256 included,
padding, ragged tiles, f16/bf16 through f32), the lowering choice, and that the
epilogue costs no dispatch."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import arch_running_here, channels_last_conv_graph, random_array, run_and_check, run_checked

import fusilli as fs
from fusilli import pipeline, reference
from fusilli.backend import rules
from fusilli.backend.targets import Target
from fusilli.ir import fusilli_context
from fusilli.passes import conv_layout, gemm_config, winograd

F32, F16, BF16 = fs.DataType.FLOAT, fs.DataType.HALF, fs.DataType.BFLOAT16


@pytest.mark.parametrize("m", [2, 4, 6])
def test_transform_matrices_compute_a_2d_correlation(m):
    at, g, bt = winograd.transform_matrices(m)
    rng = np.random.default_rng(m)
    d = rng.uniform(-1, 1, (m + 2, m + 2))
    f = rng.uniform(-1, 1, (3, 3))
    y = at @ ((g @ f @ g.T) * (bt @ d @ bt.T)) @ at.T
    direct = np.array([[np.sum(d[i : i + 3, j : j + 3] * f) for j in range(m)] for i in range(m)])
    np.testing.assert_allclose(y, direct, rtol=1e-12, atol=1e-12)


def build(x_dim, k, padding, dtype=F32, epilogue=False, name="wino"):
    """A 3x3 stride-1 NHWC conv (+ bias + relu): the shape class Winograd takes."""
    return channels_last_conv_graph(x_dim, k, (3, 3), (1, 1), padding, dtype=dtype, epilogue=epilogue, name=name)


@pytest.fixture
def lowering(monkeypatch):
    def use(value: str) -> None:
        monkeypatch.setattr(pipeline, "CONV_LOWERING", value)

    return use


# name: x dims (NCHW), K, padding. Ragged tiles (H, W not multiples of m), every
# padding the transform folds, and channel counts where the error grows.
CASES = {
    "pad1": ([2, 8, 12, 12], 16, [1, 1]),
    "nopad_ragged": ([1, 5, 9, 7], 6, [0, 0]),
    "pad2_ragged": ([1, 4, 7, 10], 8, [2, 2]),
    "pad_rect": ([1, 3, 11, 6], 5, [2, 0]),
    "c256": ([1, 256, 10, 10], 32, [1, 1]),
    "c512_k512": ([1, 512, 7, 7], 512, [1, 1]),
}
# f32 tolerance, relative to the output's magnitude: Winograd's rounding error grows
# with C (longer GEMM sums of transformed values) and with m (larger transform
# coefficients). Measured over these cases: at most 2.7e-5 of max|y| (C = 512),
# L2-relative error below 1e-5 everywhere.
SCALED_ATOL = {2: 1e-5, 4: 1e-4, 6: 4e-4}


@pytest.mark.parametrize("m", [2, 4, 6])
@pytest.mark.parametrize("case", sorted(CASES))
def test_numerics_f32(cpu, rng, lowering, m, case):
    lowering(f"winograd{m}")
    x_dim, k, padding = CASES[case]
    g = build(x_dim, k, padding, epilogue=case == "pad1", name=f"wino_{case}_m{m}")
    # The GEMM: a batch_matmul, or on AVX2 with 512 columns the contraction over 64-column panels
    # (16-column ones on Zen 3, from 128 columns).
    ir_text = g.mlir("optimized")
    panelled = [f"tensor<{(m + 2) ** 2}x{k // p}x{x_dim[1]}x{p}xf32>" for p in (16, 64)]
    assert "linalg.batch_matmul" in ir_text or any(u in ir_text for u in panelled)
    inputs = {t: random_array(t, rng) for t in g.input_tensors()}
    want = np.asarray(reference.run(g, inputs)["y"], np.float64)
    scale = float(np.abs(want).max())
    got = np.asarray(run_and_check(g, cpu, inputs, rtol=0, atol=SCALED_ATOL[m] * scale)["y"], np.float64)
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-5


@pytest.mark.parametrize("dtype", [F16, BF16])
def test_numerics_low_precision_through_f32(cpu, rng, lowering, dtype):
    lowering("winograd4")
    g = build([1, 16, 9, 9], 8, [1, 1], dtype=dtype, epilogue=True, name="wino_lp")
    ir_text = g.mlir("optimized")
    assert "linalg.batch_matmul" in ir_text and "tensor<36x9x16xf32>" in ir_text
    tol = dict(rtol=2e-2, atol=2e-2) if dtype == F16 else dict(rtol=5e-2, atol=5e-2)
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, **tol)


@pytest.mark.parametrize("hw", [16, 14])
def test_epilogue_adds_no_dispatch(cpu, lowering, hw):
    """Six dispatches with bias + relu or without, also where the 4x4 tiles overrun the
    output (14x14: the columns stage writes the cropped result, no copy after it)."""
    lowering("winograd4")
    plain = build([1, 16, hw, hw], 16, [1, 1], name=f"wino_plain_{hw}").compile(cpu)
    fused = build([1, 16, hw, hw], 16, [1, 1], epilogue=True, name=f"wino_epi_{hw}").compile(cpu)
    assert plain.compile_stats.dispatch_count == fused.compile_stats.dispatch_count == 6


def _problem(shape, stride, dilation, kernel, channels_last=True, element=F32):
    n, c, h, w, k = shape
    out = [(d + 2 - kernel[0]) // s + 1 for d, s in zip((h, w), stride)]  # padding 1
    facts = rules.conv_facts(kernel, stride, dilation, 1, channels_last, n, out, c)
    return rules.Problem("conv_fprop", element, 2 * n * out[0] * out[1] * k * c * kernel[0] * kernel[1], facts)


@pytest.mark.parametrize(
    "shape, stride, dilation, kernel, expected",
    [
        ((4, 64, 56, 56, 64), [1, 1], [1, 1], (3, 3), 4),
        ((1, 8, 8, 8, 16), [1, 1], [1, 1], (3, 3), None),  # too small to pay
        ((8, 128, 14, 14, 128), [1, 1], [1, 1], (3, 3), 4),  # 128 tiles
        ((1, 512, 7, 7, 512), [1, 1], [1, 1], (3, 3), None),  # heavy, but 4 tiles
        ((8, 512, 7, 7, 512), [1, 1], [1, 1], (3, 3), 4),  # 32 tiles: one-pass filter transform
        ((2, 512, 7, 7, 512), [1, 1], [1, 1], (3, 3), None),  # 8 tiles
        ((1, 256, 14, 14, 256), [1, 1], [1, 1], (3, 3), 4),  # 16 tiles
        ((4, 128, 28, 28, 256), [2, 2], [1, 1], (3, 3), None),
        ((4, 64, 56, 56, 64), [1, 1], [2, 2], (3, 3), None),
        ((4, 256, 28, 28, 128), [1, 1], [1, 1], (1, 1), None),
    ],
)
@pytest.mark.parametrize("arch", ["x86-64-v3", "znver4", "znver1", "sapphirerapids", "haswell"])
def test_auto_choice(shape, stride, dilation, kernel, expected, arch):
    target = Target.resolve("cpu", arch)
    if arch in ("znver1", "sapphirerapids") and shape == (1, 256, 14, 14, 256):
        # AMD AVX2: F(2x2) for few 4x4 tiles, its filter 4 MiB (CPU_CONV_WINOGRAD_F2_FEW_TILES); Intel
        # AVX-512: F(4x4)'s one-pass filter only from 32 tiles, F(2x2) from 48 2x2 ones below that (Intel's
        # AVX2 code, haswell, takes F(4x4) from 16 as the others do)
        expected = 2
    assert conv_layout.winograd_tile("auto", _problem(shape, stride, dilation, kernel), target) == expected


def test_no_winograd_without_a_tuned_isa_or_channels_last():
    heavy = ((4, 64, 56, 56, 64), [1, 1], [1, 1], (3, 3))
    assert conv_layout.winograd_tile("auto", _problem(*heavy), Target.resolve("cpu", "x86-64")) is None
    nchw = _problem(*heavy, channels_last=False)
    assert conv_layout.winograd_tile("auto", nchw, Target.resolve("cpu", "x86-64-v3")) is None


def test_explain_names_the_winograd_rule():
    g = build([4, 64, 56, 56], 64, [1, 1], name="wino_explain")
    assert "cpu-conv-winograd (F(4x4, 3x3), 3x3 stride 1" in g.explain(fs.Backend.CPU, arch="x86-64-v3")
    assert "cpu-conv-winograd" not in g.explain(fs.Backend.CPU, arch="x86-64")


def test_explain_names_winograd_for_dgrad_and_wgrad():
    n, c, h, w, k = 4, 64, 28, 28, 64
    g = fs.Graph(name="wino_grads_explain")
    dy = g.tensor(name="dy", dim=[n, k, h, w], stride=fs.strides([n, k, h, w], "NHWC"))
    x = g.tensor(name="x", dim=[n, c, h, w], stride=fs.strides([n, c, h, w], "NHWC"))
    wt = g.tensor(name="w", dim=[k, c, 3, 3], stride=fs.strides([k, c, 3, 3], "NHWC"))
    attrs = dict(padding=[1, 1], stride=[1, 1], dilation=[1, 1])
    g.conv_dgrad(dy, wt, name="dgrad", **attrs).set_dim([n, c, h, w]).set_output(True).set_name("dx")
    g.conv_wgrad(dy, x, name="wgrad", **attrs).set_dim([k, c, 3, 3]).set_output(True).set_name("dw")
    g.validate()
    lines = g.explain(fs.Backend.CPU, arch="znver4").splitlines()
    assert all("cpu-conv-winograd" in next(li for li in lines if li.startswith(op)) for op in ("dgrad", "wgrad"))


def test_gemm_config_per_isa():
    with fusilli_context():
        _check_gemm_configs()


def _check_gemm_configs():
    avx2 = str(gemm_config.batch_matmul_compilation_info("avx2", 36, 784, 64, 64))
    avx512 = str(gemm_config.batch_matmul_compilation_info("avx512", 36, 784, 64, 64))
    assert "vector_common_parallel = [1, 6, 16, 0]" in avx2 and "distribution = [1, 48, 64, 0]" in avx2
    assert "vector_common_parallel = [1, 8, 32, 0]" in avx512 and "distribution = [1, 64, 64, 0]" in avx512
    assert gemm_config.batch_matmul_compilation_info("generic", 36, 784, 64, 64) is None
    # Intel AVX-512 cores take the 6x64 register tile in 60x64 workgroups from 512 rows, Zen 5 from 384;
    # fewer rows, and Zen 4 (and AMD's AVX-512 cores by vendor alone), take the ISA's 8x32 in 64x64.
    isa_tile = str(gemm_config.batch_matmul_compilation_info("avx512", 36, 1568, 64, 64))
    for vendor, core, rows in (("intel", None, 512), ("amd", "znver5", 384)):
        many = str(gemm_config.batch_matmul_compilation_info("avx512", 36, rows, 64, 128, vendor, core))
        assert "distribution = [1, 60, 64, 0]" in many and "vector_common_parallel = [1, 6, 64, 0]" in many
        fewer = str(gemm_config.batch_matmul_compilation_info("avx512", 36, rows - 1, 64, 128, vendor, core))
        assert fewer == str(gemm_config.batch_matmul_compilation_info("avx512", 36, rows - 1, 64, 128))
    for core in ("znver4", None):
        assert str(gemm_config.batch_matmul_compilation_info("avx512", 36, 1568, 64, 64, "amd", core)) == isa_tile
    # Zen 5's from 128 deep only (the GEMM's k: the conv's input channels).
    deep = str(gemm_config.batch_matmul_compilation_info("avx512", 25, 1568, 128, 128, "amd", "znver5"))
    assert "vector_common_parallel = [1, 6, 64, 0]" in deep
    shallow = str(gemm_config.batch_matmul_compilation_info("avx512", 25, 1568, 128, 64, "amd", "znver5"))
    assert shallow == str(gemm_config.batch_matmul_compilation_info("avx512", 25, 1568, 128, 64))
    # The core's entry is for its ISA only (a znver5 compiled without AVX-512 takes AVX2's tile).
    avx2_zen5 = str(gemm_config.batch_matmul_compilation_info("avx2", 36, 1568, 64, 64, "amd", "znver5"))
    assert "vector_common_parallel = [1, 4, 16, 0]" in avx2_zen5
    # AMD's AVX2 cores take 4x16 in 64x64 from any rows (Zen 1: 8 accumulators are enough).
    for rows in (49, 196, 784):
        zen = str(gemm_config.batch_matmul_compilation_info("avx2", 25, rows, 128, 128, "amd"))
        assert f"distribution = [1, {min(rows, 64)}, 64, 0]" in zen and "vector_common_parallel = [1, 4, 16, 0]" in zen
    # Below 512 rows (and for the weight gradient's GEMM) Intel takes the ISA's 8x32 in 64x64.
    fewer = str(gemm_config.batch_matmul_compilation_info("avx512", 36, 392, 64, 64, "intel"))
    assert "distribution = [1, 64, 64, 0]" in fewer and "vector_common_parallel = [1, 8, 32, 0]" in fewer
    # The weight gradient's GEMM (a row per output channel) keeps 4x16 in 64x64 on AVX2.
    wgrad_avx2 = str(gemm_config.wgrad_batch_matmul_compilation_info("avx2", 36, 64, 64, 784))
    assert "vector_common_parallel = [1, 4, 16, 0]" in wgrad_avx2 and "distribution = [1, 64, 64, 0]" in wgrad_avx2


@pytest.mark.parametrize("arch, isa", [("x86-64-v3", "avx2"), ("znver4", "avx512"), ("x86-64", "generic")])
def test_vector_isa_of_arch(arch, isa):
    assert rules.vector_isa(Target.resolve("cpu", arch)) == isa


# ----------------------------------------------------------------------------- stride 2 (polyphase)


@pytest.mark.parametrize("m", [2, 4])
def test_polyphase_matrices_compute_a_2d_stride2_correlation(m):
    at, g, bt = winograd.polyphase_matrices(m)
    t = 2 * m + 1
    assert at.shape == (m, t) and g.shape == (t, 3) and bt.shape == (t, t)
    rng = np.random.default_rng(m)
    d = rng.uniform(-1, 1, (t, t))
    f = rng.uniform(-1, 1, (3, 3))
    y = at @ ((g @ f @ g.T) * (bt @ d @ bt.T)) @ at.T
    direct = np.array([[np.sum(d[2 * i : 2 * i + 3, 2 * j : 2 * j + 3] * f) for j in range(m)] for i in range(m)])
    np.testing.assert_allclose(y, direct, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("m", [2, 4])
def test_polyphase_transform_rows_distinct(m):
    # G's tap-1 rows, each [0, 1, 0], scaled by 1, -1, 2, -2, and a dgrad's B^T row that picks what
    # F(2, 2)'s B^T row 1 picks negated (A^T's columns scaled back): equal rows would be equal
    # results of a transform's generic, which IREE writes once and copies (copy_count, checked by
    # test_polyphase_epilogue_adds_no_dispatch and test_strided_dgrad_polyphase_winograd).
    # Powers of two, so the products are exactly the unscaled ones; no -0.0 among the constants.
    plans = [winograd.polyphase_matrices(m)] + [winograd.polyphase_dgrad_matrices(m, pad) for pad in (0, 1, 2)]
    for at, g, bt in plans:
        assert len({tuple(row) for row in g}) == len(g)
        assert len({tuple(row) for row in bt}) == len(bt)
        np.testing.assert_array_equal(g[m + 1 :, 1], [1.0, -1.0, 2.0, -2.0][:m])
        for matrix in (at, g, bt):
            assert not np.any(np.signbit(matrix[matrix == 0.0]))


def test_polyphase_multiplies_fewer_than_direct():
    # (2m + 1)^2 products per m x m outputs: 6.25 per output for m = 2, 5.06 for m = 4 (direct: 9).
    assert [(2 * m + 1) ** 2 / m**2 for m in (2, 4)] == [6.25, 5.0625]


# name: x dims (NCHW), K, padding. Odd and even sizes (ragged tiles), every padding the
# transform folds, and channel counts where the error grows.
STRIDED_CASES = {
    "pad1": ([2, 8, 12, 12], 16, [1, 1]),
    "nopad_odd": ([1, 5, 9, 7], 6, [0, 0]),
    "pad2_ragged": ([1, 4, 7, 10], 8, [2, 2]),
    "pad_rect": ([1, 3, 11, 6], 5, [2, 0]),
    "c256": ([1, 256, 14, 14], 32, [1, 1]),
    "c512": ([1, 512, 14, 14], 64, [1, 1]),
}
# Measured over these cases: at most 1e-6 of max|y| for m = 2, 5.4e-6 for m = 4 (C = 512).
STRIDED_SCALED_ATOL = {2: 1e-5, 4: 5e-5}


@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("case", sorted(STRIDED_CASES))
def test_polyphase_numerics_f32(cpu, rng, lowering, m, case):
    lowering(f"polyphase{m}")
    x_dim, k, padding = STRIDED_CASES[case]
    g = channels_last_conv_graph(
        x_dim, k, (3, 3), (2, 2), padding, epilogue=case == "pad1", name=f"polyphase_{case}_m{m}"
    )
    t = 2 * m + 1
    assert "linalg.batch_matmul" in g.mlir("optimized") and f"tensor<{t * t}x" in g.mlir("optimized")
    inputs = {tensor: random_array(tensor, rng) for tensor in g.input_tensors()}
    want = np.asarray(reference.run(g, inputs)["y"], np.float64)
    scale = float(np.abs(want).max())
    got = np.asarray(run_and_check(g, cpu, inputs, rtol=0, atol=STRIDED_SCALED_ATOL[m] * scale)["y"], np.float64)
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-5


def test_polyphase_zen1_from_49_tiles_numerics(rng):
    # ResNet-50's 3x3 s2 1x256x28x28->256 as the rules lower it for Zen 1 (C = 256, where the
    # transforms' error grows), run here as znver1 code.
    handle = fs.Handle(fs.Backend.CPU, arch=arch_running_here("znver1"))
    g = channels_last_conv_graph([1, 256, 28, 28], 256, (3, 3), (2, 2), (1, 1), epilogue=True, name="pp_zen1_49")
    assert "cpu-conv-winograd-strided (F(2x2, 2x2) over the input's 4 phases, 3x3 stride 2, 49 2x2 tiles >= 49" in (
        g.explain(fs.Backend.CPU, arch="znver1")
    )
    inputs = {tensor: random_array(tensor, rng) for tensor in g.input_tensors()}
    want = np.asarray(reference.run(g, inputs)["y"], np.float64)
    scale = float(np.abs(want).max())
    got = np.asarray(run_and_check(g, handle, inputs, rtol=0, atol=STRIDED_SCALED_ATOL[2] * scale)["y"], np.float64)
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-5
    # The filter's transpose, the filter, input and output transforms (bias + relu fused), the
    # GEMM: the im2col GEMM it replaces is 3 (patches, filter, GEMM).
    assert g.compile_stats.dispatch_count == 5


def test_winograd_b_panel_choice():
    # 64-column panels where the transformed filter's rows are a multiple of 2 KiB apart, on AVX2
    # only (measured on Zen 1; AVX-512 keeps the plain layout, not measured).
    for columns in (512, 1024, 2048):
        assert gemm_config.winograd_b_panel("avx2", columns, 128, 512, "amd", "znver1") == 64
        assert gemm_config.winograd_b_panel("avx2", columns, 128, 512) == 64
        assert gemm_config.winograd_b_panel("avx512", columns, 128, 512, "amd", "znver4") is None
    for columns in (64, 128, 256, 384, 640):
        assert gemm_config.winograd_b_panel("avx2", columns, 128, 512, "amd", "znver1") is None
    assert gemm_config.winograd_b_panel("generic", 512, 128, 512) is None


def test_winograd_b_panel_choice_zen3():
    # Zen 3: panels of the 4x16 register tile's 16 columns from rows 512 bytes apart (128 columns),
    # where a strip of B rows falls into too few of L1's sets; Zen 1 keeps 64-column panels from 2 KiB.
    for columns in (128, 256, 384, 512, 1024, 2048):
        assert gemm_config.winograd_b_panel("avx2", columns, 196, 128, "amd", "znver3") == 16
    for columns in (64, 96, 120):  # rows under 512 bytes apart
        assert gemm_config.winograd_b_panel("avx2", columns, 196, 128, "amd", "znver3") is None
    assert gemm_config.winograd_b_panel("avx2", 136, 196, 128, "amd", "znver3") is None  # no whole 16-wide panels
    assert gemm_config.winograd_b_panel("avx2", 256, 196, 128, "amd", "znver1") is None
    assert gemm_config.winograd_b_panel("avx2", 512, 196, 128, "amd", "znver1") == 64
    assert gemm_config.winograd_b_panel("avx512", 256, 196, 128, "amd", "znver4") is None
    with fusilli_context():
        info = str(gemm_config.batch_matmul_compilation_info("avx2", 25, 196, 256, 128, "amd", "znver3", panel=16))
    # The same 64x64 workgroups and 4x16 tile, N as 4 panels of 16 columns per workgroup.
    assert "distribution = [1, 64, 4, 16, 0]" in info and "vector_common_parallel = [1, 4, 1, 16, 0]" in info
    line = channels_last_conv_graph([4, 128, 28, 28], 256, (3, 3), (2, 2), (1, 1), name="pp_zen3_explain").explain(
        fs.Backend.CPU, arch="znver3"
    )
    assert "the transformed filter in 16-column panels (rows of 256 would alias in L1)" in line


def _strided_dgrad_graph(n, k, c, hw, name):
    g = fs.Graph(name=name)
    dy = g.tensor(name="dy", dim=[n, k, hw // 2, hw // 2], stride=fs.strides([n, k, hw // 2, hw // 2], "NHWC"))
    w = g.tensor(name="w", dim=[k, c, 3, 3], stride=fs.strides([k, c, 3, 3], "NHWC"))
    dx = g.conv_dgrad(dy, w, padding=[1, 1], stride=[2, 2], dilation=[1, 1], name="dgrad")
    dx.set_dim([n, c, hw, hw]).set_stride(fs.strides([n, c, hw, hw], "NHWC")).set_output(True).set_name("y")
    return g.validate()


@pytest.mark.parametrize(
    "lowering_name, build_graph, panelled",
    [
        ("winograd4", lambda: build([1, 32, 10, 10], 512, [1, 1], epilogue=True, name="panels_f4"), "36x8x32x64"),
        ("winograd2", lambda: build([2, 16, 6, 6], 1024, [1, 1], name="panels_f2"), "16x16x16x64"),
        (
            "polyphase2",
            lambda: channels_last_conv_graph(
                [1, 64, 14, 14], 512, (3, 3), (2, 2), (1, 1), epilogue=True, name="pp_panels"
            ),
            "25x8x64x64",
        ),
        ("polyphase2", lambda: _strided_dgrad_graph(1, 32, 512, 12, "dgrad_panels"), "25x8x32x64"),
    ],
)
def test_winograd_b_panels_numerics(rng, lowering, lowering_name, build_graph, panelled):
    # AVX2 code (x86-64-v3, as any AVX2 core takes it): the transformed filter written as 64-column
    # panels and the GEMM over them, against the reference; the dispatches of the plain layout.
    lowering(lowering_name)
    g = build_graph()
    _check_panelled_numerics(g, arch_running_here("x86-64-v3"), panelled, rng)
    plain = {"winograd4": 6, "winograd2": 6, "polyphase2": 5 if "pp_" in g.name else 4}[lowering_name]
    assert g.compile_stats.dispatch_count == plain


@pytest.mark.parametrize(
    "lowering_name, build_graph, panelled",
    [
        ("winograd4", lambda: build([1, 32, 10, 10], 128, [1, 1], epilogue=True, name="z3_panels_f4"), "36x9x8x16"),
        (
            "polyphase2",
            lambda: channels_last_conv_graph(
                [1, 16, 14, 14], 256, (3, 3), (2, 2), (1, 1), epilogue=True, name="z3_pp_panels"
            ),
            "25x16x16x16",
        ),
        ("polyphase2", lambda: _strided_dgrad_graph(1, 32, 128, 12, "z3_dgrad_panels"), "25x8x32x16"),
    ],
)
def test_winograd_zen3_16_column_panels_numerics(rng, lowering, lowering_name, build_graph, panelled):
    # Zen 3 code: the transformed filter of 128 or 256 columns written as 16-column panels, the
    # GEMM's 4x16 tile reading each panel's rows as one block, against the reference.
    lowering(lowering_name)
    optimized = _check_panelled_numerics(build_graph(), arch_running_here("znver3"), panelled, rng)
    assert "vector_common_parallel = [1, 4, 1, 16, 0]" in optimized


def _check_panelled_numerics(g, arch, panelled, rng):
    """``g``'s optimized IR for ``arch`` has the panelled GEMM operand ``panelled`` and no batch_matmul,
    and its compiled result matches the reference (f32 Winograd tolerance); returns that IR."""
    optimized = g.mlir("optimized", fs.Backend.CPU, arch)
    assert f"tensor<{panelled}xf32>" in optimized and "linalg.batch_matmul" not in optimized
    inputs = {t: random_array(t, rng) for t in g.input_tensors()}
    want = np.asarray(reference.run(g, inputs)["y"], np.float64)
    scale = float(np.abs(want).max())
    handle = fs.Handle(fs.Backend.CPU, arch=arch)
    got = np.asarray(run_and_check(g, handle, inputs, rtol=0, atol=SCALED_ATOL[4] * scale)["y"], np.float64)
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-5
    return optimized


def test_polyphase_epilogue_adds_no_dispatch(cpu, lowering):
    lowering("polyphase2")
    plain = channels_last_conv_graph([1, 16, 16, 16], 16, (3, 3), (2, 2), (1, 1), name="pp_plain").compile(cpu)
    fused = channels_last_conv_graph([1, 16, 16, 16], 16, (3, 3), (2, 2), (1, 1), epilogue=True, name="pp_epi").compile(
        cpu
    )
    # The filter's transpose to HWCF, the filter, input and output transforms (one stage:
    # sparse_output_transform, the epilogue fused into it), the GEMM.
    assert fused.compile_stats.dispatch_count == plain.compile_stats.dispatch_count == 5
    # Each of the filter transform's results written in place into U, none copied there.
    assert fused.compile_stats.copy_count == plain.compile_stats.copy_count == 0


def test_polyphase_forcing_leaves_other_convs_to_the_rules(cpu, lowering):
    # FUSILLI_CONV_LOWERING=polyphase<m> applies to 3x3 stride-2 convs only.
    lowering("polyphase2")
    g = channels_last_conv_graph([1, 8, 12, 12], 8, (3, 3), (1, 1), (1, 1), name="pp_not_strided")
    assert "tensor<25x" not in g.mlir("optimized")
    run_checked(g, cpu, np.random.default_rng(0))


@pytest.mark.parametrize(
    "shape, arch, expected",
    [
        ((4, 128, 28, 28, 256), "znver4", 2),  # the suite's row: 196 2x2 tiles, 7.5 MB transformed
        ((4, 128, 28, 28, 256), "x86-64-v3", 2),
        ((1, 128, 56, 56, 128), "znver5", 2),
        # Intel's cores from 392 tiles of >= 128 channels (rules.CPU_CONV_POLYPHASE_CORE_LIMITS["intel"])
        ((4, 128, 28, 28, 256), "sapphirerapids", None),  # 196 tiles
        ((8, 128, 56, 56, 128), "sapphirerapids", 2),  # 1568 tiles
        ((8, 256, 28, 28, 256), "icelake-server", 2),  # 392 tiles
        ((8, 64, 56, 56, 128), "sapphirerapids", None),  # 784 tiles, 64 channels
        ((8, 512, 14, 14, 512), "sapphirerapids", None),  # 128 tiles
        ((16, 128, 56, 56, 128), "sapphirerapids", None),  # 76.6 MiB transformed, as on AMD
        ((4, 128, 28, 28, 256), "haswell", None),
        ((4, 128, 28, 28, 256), "x86-64-v4", 2),
        ((4, 128, 28, 28, 256), "x86-64", None),  # no tuned ISA
        ((2, 128, 28, 28, 256), "znver4", None),  # 98 tiles: the filter transform's share
        ((8, 128, 28, 28, 256), "znver4", 2),  # 15 MB transformed
        ((8, 128, 56, 56, 128), "znver4", 2),  # 38.3 MiB
        ((16, 128, 56, 56, 128), "znver4", None),  # 76.6 MiB: more than measured
        ((1, 512, 14, 14, 512), "znver4", None),  # 26 MB transformed filter
        ((8, 256, 28, 28, 256), "znver4", 2),  # 6.5 MB filter, 392 tiles: <= 40 KiB each
        ((8, 256, 28, 28, 256), "x86-64-v3", 2),
        ((4, 256, 28, 28, 256), "znver4", 2),  # 196 tiles: 33 KB each
        ((2, 256, 28, 28, 256), "znver4", None),  # 98 tiles
        ((8, 512, 14, 14, 512), "znver4", None),  # 26 MB filter, 128 tiles: 205 KB each
        # Zen 1 from 49 tiles, of any filter (rules.CPU_CONV_POLYPHASE_CORE_LIMITS)
        ((1, 256, 28, 28, 256), "znver1", 2),  # 49 tiles, 6.5 MB filter
        ((1, 256, 28, 28, 256), "znver3", None),
        ((1, 256, 28, 28, 256), "x86-64-v3", None),
        ((8, 512, 14, 14, 512), "znver1", 2),  # 26 MB filter
        ((1, 256, 14, 14, 256), "znver1", None),  # 16 tiles
        ((1, 512, 14, 14, 512), "znver1", None),  # 16 tiles (the few-positions GEMM's)
        ((2, 32, 28, 28, 64), "znver1", None),  # 98 tiles, but below the 64 channels measured
        ((2, 64, 28, 28, 64), "znver1", 2),
    ],
)
def test_polyphase_auto_choice(shape, arch, expected):
    problem = _problem(shape, [2, 2], [1, 1], (3, 3))
    assert conv_layout.polyphase_tile("auto", problem, Target.resolve("cpu", arch)) == expected
    # Never for stride 1, dilation, other kernels or NCHW.
    for stride, dilation, kernel in (([1, 1], [1, 1], (3, 3)), ([2, 2], [2, 2], (3, 3)), ([2, 2], [1, 1], (5, 5))):
        other = _problem(shape, stride, dilation, kernel)
        assert conv_layout.polyphase_tile("auto", other, Target.resolve("cpu", arch)) is None
    nchw = _problem(shape, [2, 2], [1, 1], (3, 3), channels_last=False)
    assert conv_layout.polyphase_tile("auto", nchw, Target.resolve("cpu", arch)) is None


def test_explain_and_summary_name_the_strided_rule():
    g = channels_last_conv_graph([4, 128, 28, 28], 256, (3, 3), (2, 2), (1, 1), epilogue=True, name="pp_explain")
    text = g.explain(fs.Backend.CPU, arch="znver4")
    assert "cpu-conv-winograd-strided (F(2x2, 2x2) over the input's 4 phases, 3x3 stride 2, 196 2x2 tiles" in text
    target = Target.resolve("cpu", "znver4")
    assert "cpu-conv-winograd-strided F(2x2, 2x2)" in rules.lowering_summary(g.nodes, target)
