"""Weight gradients of grouped convs of several channels per group (ResNeXt's 3x3 g32) on CPU
(cpu-conv-grouped-wgrad, conv_direct.grouped_wgrad, fusilli-conv-layout): one contraction per filter
tap over chunks of output rows laid out flat, then the chunks' sum. Numerics against the NumPy
reference (padding, strides over the input's phases, dilation, rectangular kernels and images,
several chunks, one channel per group with several filters, f16/bf16 computed in f32, AVX2 code),
the rule's reach and explanation, the IR and the register tile per ISA."""

from __future__ import annotations

import pytest
from conftest import arch_running_here, random_array, run_and_check

import fusilli as fs
from fusilli import ir
from fusilli.backend import rules
from fusilli.backend.targets import Target
from fusilli.passes import gemm_config

# name: (x dims NCHW, K, groups, kernel, padding, stride, dilation)
CASES = {
    "3x3_g8": ([2, 32, 9, 11], 64, 8, (3, 3), (1, 1), (1, 1), (1, 1)),
    "3x3_g4_s2": ([1, 32, 15, 13], 32, 4, (3, 3), (1, 1), (2, 2), (1, 1)),
    "5x3_dilated": ([1, 16, 16, 14], 32, 2, (5, 3), (4, 2), (1, 1), (2, 2)),
    "3x3_unpadded": ([3, 24, 9, 10], 48, 3, (3, 3), (0, 0), (1, 1), (1, 1)),
    "3x2_s2x3_rect": ([2, 16, 12, 17], 16, 4, (3, 2), (0, 1), (2, 3), (1, 1)),
    "1x1_g4": ([2, 64, 7, 7], 128, 4, (1, 1), (0, 0), (1, 1), (1, 1)),
    "channel_multiplier": ([1, 16, 10, 10], 32, 16, (3, 3), (1, 1), (1, 1), (1, 1)),
    "wide_groups": ([1, 128, 6, 6], 128, 2, (3, 3), (1, 1), (1, 1), (1, 1)),
    "two_chunks": ([1, 256, 40, 12], 256, 32, (3, 3), (1, 1), (1, 1), (1, 1)),  # 2 chunks of 20 rows
    "aliasing_channels": ([1, 1024, 5, 4], 1024, 64, (3, 3), (1, 1), (1, 1), (1, 1)),  # C*4 = 4 KiB
}


def _out(size, k, p, s, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def build(name, x_dim, k, groups, kernel, padding, stride, dilation, dtype=fs.DataType.FLOAT):
    n, c = x_dim[:2]
    dy_dim = [n, k] + [_out(x_dim[2 + i], kernel[i], padding[i], stride[i], dilation[i]) for i in range(2)]
    w_dim = [k, c // groups, *kernel]
    g = fs.Graph(
        name=f"grouped_wgrad_{name}_{dtype.short_name}", io_data_type=dtype, compute_data_type=fs.DataType.FLOAT
    )
    dy = g.tensor(name="dy", dim=dy_dim, stride=fs.strides(dy_dim, "NHWC"))
    x = g.tensor(name="x", dim=x_dim, stride=fs.strides(x_dim, "NHWC"))
    dw = g.conv_wgrad(dy, x, padding=list(padding), stride=list(stride), dilation=list(dilation), name="wgrad")
    dw.set_dim(w_dim).set_stride(fs.strides(w_dim, "NHWC")).set_output(True).set_name("dw")
    g.validate()
    return g


@pytest.mark.parametrize("name", sorted(CASES))
def test_grouped_wgrad_numerics(cpu, rng, name):
    g = build(name, *CASES[name])
    text = g.mlir("optimized")
    assert "convolution_backward" not in text and "compilation_info" in text
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)


def test_grouped_wgrad_ir_chunks_and_padded_channels():
    """two_chunks: Cg = 8 shares cache lines between groups, so 40 rows come in 2 chunks of 20
    (each gathering 22 rows of pitch 14: 308 positions); each of the 9 taps contracts a chunk's
    19 * 14 + 12 = 278 positions. aliasing_channels: C = 1024 gathered as 1024 + 16 channels."""
    text = build("ir_chunks", *CASES["two_chunks"]).mlir("optimized")
    assert "tensor<1x2x1x308x256xf32>" in text  # X gathered: N, chunks, phases, positions, C
    assert text.count("tensor<2x278x32x8xf32>") >= 9  # each tap's view of X, unit dims dropped
    assert "tensor<3x3x2x32x8x8xf32>" in text  # the partial sums: R, S, chunks, G, Cg, Kg
    text = build("ir_aliasing", *CASES["aliasing_channels"]).mlir("optimized")
    assert "x1040xf32>" in text and "65x16xf32>" in text


@pytest.mark.parametrize(
    "rows, pitch, reach, x_channels, k, group, partial, expected",
    [
        (28, 30, 2, 256, 256, 8, 4 * 9 * 2048, 14),  # 8x256x28x28: 14 rows fit 1 MiB
        (56, 58, 2, 128, 128, 4, 4 * 9 * 512, 14),  # 8x128x56x56
        (14, 15, 1, 4 * 512, 512, 16, 4 * 9 * 8192, 14),  # Cg 16 fills a line: whole images
        (7, 8, 1, 4 * 1024, 1024, 32, 4 * 9 * 32768, 7),
        (12, 14, 2, 2048, 2048, 8, 2_000_000, 12),  # 1 MiB allows 3 rows, 2 MB of partial sums want 12
    ],
)
def test_grouped_wgrad_chunk_rows(rows, pitch, reach, x_channels, k, group, partial, expected):
    assert gemm_config.grouped_wgrad_chunk_rows(rows, pitch, reach, x_channels, k, group, partial) == expected


@pytest.mark.parametrize(
    "x_dim, k, groups, kernel, arch, applies",
    [
        ([8, 256, 28, 28], 256, 32, (3, 3), "znver5", True),
        ([8, 256, 28, 28], 256, 32, (3, 3), "x86-64-v3", True),
        ([8, 256, 28, 28], 256, 32, (3, 3), "x86-64", False),  # no vector ISA with a tile
        ([8, 256, 28, 28], 256, 32, (7, 7), "znver5", False),  # 49 taps
        ([1, 64, 14, 14], 64, 64, (3, 3), "znver5", False),  # depthwise (cpu-conv-depthwise-wgrad)
        ([1, 64, 14, 14], 64, 1, (3, 3), "znver5", False),  # ungrouped
    ],
)
def test_grouped_wgrad_rule_reach(x_dim, k, groups, kernel, arch, applies):
    pad = tuple(d // 2 for d in kernel)
    g = build(f"reach_{groups}_{kernel[0]}_{arch}".replace("-", "_"), x_dim, k, groups, kernel, pad, (1, 1), (1, 1))
    node = g.nodes[0]
    choice = rules.choose(rules.problem_of(node), Target.resolve("cpu", arch), "algorithm")
    assert (choice is not None and choice.rule is rules.CPU_CONV_GROUPED_WGRAD) == applies
    if 1 < groups < x_dim[1]:  # ungrouped and depthwise weight gradients have paths of their own
        assert ("convolution_backward" not in g.mlir("optimized", None, arch)) == applies


def test_grouped_wgrad_explain():
    g = build("explain", [8, 256, 28, 28], 256, 32, (3, 3), (1, 1), (1, 1), (1, 1))
    assert "cpu-conv-grouped-wgrad (32 groups of 8 -> 8 channels" in g.explain(None, "znver5")


def _dims(**extent):
    return {name: extent[name] for name in ("n", "chunk", "g", "cg", "kg", "p") if name in extent}


@pytest.mark.parametrize(
    "isa, dims, taps, vector, distribution",
    [
        # nine taps, Kg 8 (half an AVX-512 register, counted as one): 4 input channels
        ("avx512", _dims(n=8, chunk=2, g=32, cg=8, kg=8, p=418), 9, "[1, 1, 1, 4, 8, 0]", "[1, 1, 32, 8, 8, 0]"),
        # Kg 16: one AVX-512 register, 4 input channels; 4 taps (a stride-2 phase): 4 * 9 / 4 -> 8
        ("avx512", _dims(n=8, g=32, cg=16, kg=16, p=222), 9, "[1, 1, 4, 16, 0]", "[1, 32, 16, 16, 0]"),
        ("avx512", _dims(n=8, g=32, cg=16, kg=16, p=209), 4, "[1, 1, 8, 16, 0]", "[1, 32, 16, 16, 0]"),
        # Kg 32: two AVX-512 registers, one input channel
        ("avx512", _dims(n=8, g=32, cg=32, kg=32, p=61), 9, "[1, 1, 1, 32, 0]", "[1, 32, 32, 32, 0]"),
        # AVX2: Kg 32 is 4 registers of 8 -> only 16 wide (2 registers), two input channels
        ("avx2", _dims(n=8, g=32, cg=32, kg=32, p=61), 9, "[1, 1, 2, 16, 0]", "[1, 32, 32, 32, 0]"),
        # one tap (a 1x1 filter): all 8 input channels
        ("avx512", _dims(n=8, g=32, cg=8, kg=8, p=49), 1, "[1, 1, 8, 8, 0]", "[1, 32, 8, 8, 0]"),
        # one chunk: the groups split over the pool
        ("avx512", _dims(g=32, cg=32, kg=32, p=61), 9, "[1, 1, 32, 0]", "[16, 32, 32, 0]"),
    ],
)
def test_grouped_wgrad_register_tile(isa, dims, taps, vector, distribution):
    with ir.Context():
        info = str(gemm_config.grouped_wgrad_compilation_info(isa, dims, taps))
    assert f"vector_common_parallel = {vector}" in info and f"distribution = {distribution}" in info
    reduction = ["0"] * (len(dims) - 1) + [str(gemm_config.GROUPED_WGRAD_POSITIONS)]
    assert f"vector_reduction = [{', '.join(reduction)}]" in info


def test_grouped_wgrad_generic_isa_has_no_tile():
    assert gemm_config.grouped_wgrad_compilation_info("generic", _dims(g=2, cg=4, kg=4, p=9)) is None


@pytest.mark.parametrize("dtype", [fs.DataType.HALF, fs.DataType.BFLOAT16])
def test_grouped_wgrad_low_precision_computes_in_f32(cpu, rng, dtype):
    g = build(f"lp_{dtype.short_name}", [1, 32, 8, 8], 32, 8, (3, 3), (1, 1), (1, 1), (1, 1), dtype=dtype)
    text = g.mlir("optimized")
    assert "convolution_backward" not in text and "compilation_info" in text
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=3e-2, atol=3e-2)


def test_grouped_wgrad_avx2_code(cpu, rng):
    """x86-64-v3 code (the AVX2 register tile) matches the reference where this CPU runs it."""
    arch = arch_running_here("x86-64-v3")
    g = build("avx2", [2, 64, 10, 9], 64, 8, (3, 3), (1, 1), (1, 1), (1, 1))
    assert "convolution_backward" not in g.mlir("optimized", None, arch)
    handle = fs.Handle(fs.Backend.CPU, arch=arch)
    run_and_check(g, handle, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)
