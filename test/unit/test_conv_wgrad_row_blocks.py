"""conv_wgrad as GEMMs over blocks of filter rows (cpu-conv-wgrad-row-blocks, fusilli-conv-layout):
numerics against the NumPy reference for strides that do and do not divide the filter rows,
padding, batches and one input channel; the rule's reach; the IR (no im2col patches)."""

from __future__ import annotations

import pytest
from conftest import random_array, run_and_check

import fusilli as fs
from fusilli import pipeline
from fusilli.backend import Artifact, rules
from fusilli.backend.targets import Target
from fusilli.ir import fusilli_context
from fusilli.passes import gemm_config

# name: x dims (NCHW), K, kernel, padding, stride
CASES = {
    "stem_7x7_s2": ([1, 3, 20, 18], 16, [7, 7], [3, 3], [2, 2]),
    "batch2_5x5_s2": ([2, 3, 15, 17], 8, [5, 5], [2, 2], [2, 2]),
    "s1_3x3": ([1, 2, 9, 10], 8, [3, 3], [1, 1], [1, 1]),
    "s3_4x3_unpadded": ([2, 4, 16, 13], 8, [4, 3], [0, 0], [3, 2]),  # 2 blocks of 3 rows: 6 > 4
    "one_channel": ([3, 1, 16, 16], 24, [7, 7], [3, 3], [2, 2]),
    "rect_stride": ([1, 3, 12, 14], 16, [7, 5], [3, 1], [2, 1]),
    "1x1_s2": ([2, 8, 12, 10], 16, [1, 1], [0, 0], [2, 2]),  # one block, its one row of two phases
}


def _out(size, k, p, s):
    return (size + 2 * p - (k - 1) - 1) // s + 1


def build(name, spec, dtype=fs.DataType.FLOAT):
    x_dim, k, kernel, padding, stride = spec
    n, c = x_dim[:2]
    dy_dim = [n, k] + [_out(x_dim[2 + i], kernel[i], padding[i], stride[i]) for i in range(2)]
    g = fs.Graph(name=f"wgrad_rows_{name}_{dtype.short_name}", io_data_type=dtype, compute_data_type=fs.DataType.FLOAT)
    dy = g.tensor(name="dy", dim=dy_dim, stride=fs.strides(dy_dim, "NHWC"))
    x = g.tensor(name="x", dim=x_dim, stride=fs.strides(x_dim, "NHWC"))
    dw = g.conv_wgrad(dy, x, padding=padding, stride=stride, dilation=[1, 1], name="wgrad")
    dw.set_dim([k, c, *kernel]).set_stride(fs.strides([k, c, *kernel], "NHWC")).set_output(True).set_name("dw")
    g.validate()
    return g


@pytest.fixture
def row_blocks(monkeypatch):
    monkeypatch.setattr(pipeline, "CONV_LOWERING", "rowblocks")


@pytest.mark.parametrize("name", sorted(CASES))
def test_row_block_wgrad_numerics(cpu, rng, row_blocks, name):
    g = build(name, CASES[name])
    text = g.mlir("optimized")
    x_dim, _, (fy, fx), padding, (sy, sx) = CASES[name]
    n, c = x_dim[:2]
    oh, ow = (_out(x_dim[2 + i], (fy, fx)[i], padding[i], (sy, sx)[i]) for i in range(2))
    blocks = -(-fy // sy)
    patches = f"tensor<{n}x{sy}x{fx}x{c}x{oh + blocks - 1}x{ow}xf32>"  # X's row phases' taps along W
    assert "convolution_backward" not in text and patches in text
    assert text.count("linalg.matmul") == n * blocks
    # Sums over every output position: tolerance relative to the products' scale.
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)


def test_row_block_wgrad_bf16_through_f32(cpu, rng, row_blocks):
    g = build("bf16", CASES["stem_7x7_s2"], fs.DataType.BFLOAT16)
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=5e-2, atol=0.5)


def test_row_block_gemms_read_offsets_of_one_gather():
    """The stem: one gather of X's 2 row phases (7 taps along W), 4 GEMMs of 42 rows reading it at
    offsets of 0..3 output rows, accumulating into slices of one tensor; no im2col patch matrix."""
    g = build("ir", ([1, 3, 32, 32], 64, [7, 7], [3, 3], [2, 2]))
    text = g.mlir("optimized", fs.Backend.CPU, arch="znver4")
    assert "tensor<1x2x7x3x19x16xf32>" in text  # [N, phases, S, C, OH + blocks - 1, OW]
    assert text.count("linalg.matmul") == 4 and "tensor<42x256xf32>" in text
    assert "x147xf32>" not in text  # no [positions, R*S*C] patches
    stats = Artifact.from_bytes(g.compile_to_artifact(fs.Backend.CPU, "znver4")).stats
    assert stats.dispatch_count <= 6  # the gather, 4 GEMMs, the filter's transposition


@pytest.mark.parametrize(
    "arch, batch, channels, kernel, stride, applies",
    [
        ("znver5", 1, 3, 7, 2, True),
        ("znver5", 8, 3, 7, 2, True),
        ("znver4", 1, 1, 7, 2, True),
        ("x86-64-v3", 1, 3, 7, 2, True),
        ("znver3", 8, 3, 7, 2, True),
        ("znver5", 1, 8, 7, 2, False),  # more channels: the im2col patches are no larger than DY
        ("znver5", 1, 3, 5, 2, False),  # 3x3 and 5x5 ran even with the one GEMM
        ("sapphirerapids", 1, 3, 7, 2, True),
        ("x86-64-v4", 1, 3, 7, 2, False),  # the vendor-free AVX-512 level: not measured
    ],
)
def test_row_block_rule_reach(arch, batch, channels, kernel, stride, applies):
    facts = rules.conv_facts((kernel, kernel), (stride, stride), (1, 1), 1, True, batch, (112, 112), channels, (3, 3))
    flops = 2 * batch * 112 * 112 * 64 * channels * kernel * kernel
    problem = rules.Problem("conv_wgrad", fs.DataType.FLOAT, flops, facts)
    choice = rules.choose(problem, Target.resolve("cpu", arch), "algorithm")
    assert (choice is not None and choice.rule is rules.CPU_CONV_WGRAD_ROW_BLOCKS) == applies


def test_explain_names_row_blocks_for_one_channel():
    """A one-channel X (no permute: NHWC and NCHW are the same memory) is rewritten from DY's."""
    g = build("explain", CASES["one_channel"])
    note = g.explain(fs.Backend.CPU, arch="znver4")
    assert "cpu-conv-wgrad-row-blocks (4 GEMMs DW^T[2x7x1, K]" in note and "a 7x32 register tile" in note


@pytest.mark.parametrize(
    "isa, rows, vector, workgroup",
    [("avx512", 42, (7, 32), 21), ("avx2", 42, (6, 16), 42), ("avx512", 14, (7, 32), 7), ("avx512", 30, (6, 32), 30)],
)
def test_row_block_tile(isa, rows, vector, workgroup):
    assert gemm_config.row_block_wgrad_register_tile(isa, rows) == vector
    with fusilli_context():
        text = str(gemm_config.row_block_wgrad_compilation_info(isa, rows, 64, 12544))
    assert f"vector_common_parallel = [{vector[0]}, {vector[1]}, 0]" in text
    assert f"distribution = [{workgroup}, {vector[1]}, 0]" in text and "cache_reduction = [0, 0, 256]" in text
    assert gemm_config.row_block_wgrad_compilation_info("generic", rows, 64, 12544) is None
