"""Grouped convs of several channels per group (ResNeXt's 3x3 g32) as a direct conv over the padded
NHWC input vectorized along each group's output channels on CPU (cpu-conv-grouped-direct,
conv_direct.grouped_conv, fusilli-conv-layout): numerics against the NumPy reference (padding,
stride, dilation, rectangular kernels and images, one channel per group with several filters,
f16/bf16 computed in f32, a bias + relu epilogue: no dispatch added after a 1x1 filter, one after a
3x3, AVX2 code), the rule's reach, the IR and the register tile per ISA, and stride-1 grouped data
gradients, which run as the same conv."""

from __future__ import annotations

import re

import pytest
from conftest import arch_running_here, channels_last_conv_graph, random_array, run_and_check

import fusilli as fs
from fusilli import ir
from fusilli.backend import Artifact, rules
from fusilli.backend.targets import Target
from fusilli.passes import gemm_config


def grouped(name, x_dim, k, groups, kernel=(3, 3), padding=(1, 1), stride=(1, 1), dilation=(1, 1), **kw):
    return channels_last_conv_graph(
        x_dim, k, kernel, stride, padding, dilation, name=f"grouped_{name}", groups=groups, **kw
    )


# name: (x_dim, k, groups, kernel, padding, stride, dilation)
CASES = {
    "3x3_g8": ([2, 32, 9, 11], 64, 8, (3, 3), (1, 1), (1, 1), (1, 1)),
    "3x3_g4_s2": ([1, 32, 15, 13], 32, 4, (3, 3), (1, 1), (2, 2), (1, 1)),
    "5x3_dilated": ([1, 16, 16, 14], 32, 2, (5, 3), (4, 2), (1, 1), (2, 2)),
    "3x3_unpadded": ([3, 24, 9, 10], 48, 3, (3, 3), (0, 0), (1, 1), (1, 1)),
    "1x1_g4": ([2, 64, 7, 7], 128, 4, (1, 1), (0, 0), (1, 1), (1, 1)),
    "channel_multiplier": ([1, 16, 10, 10], 32, 16, (3, 3), (1, 1), (1, 1), (1, 1)),
    "wide_groups": ([1, 128, 6, 6], 128, 2, (3, 3), (1, 1), (1, 1), (1, 1)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_grouped_numerics(cpu, rng, name):
    x_dim, k, groups, kernel, padding, stride, dilation = CASES[name]
    g = grouped(name, x_dim, k, groups, kernel, padding, stride, dilation)
    text = g.mlir("optimized")
    assert "torch.aten.convolution" not in text and "compilation_info" in text
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [fs.DataType.HALF, fs.DataType.BFLOAT16])
def test_grouped_low_precision_computes_in_f32(cpu, rng, dtype):
    g = grouped(f"lp_{dtype.short_name}", [1, 32, 8, 8], 32, 8, dtype=dtype)
    text = g.mlir("optimized")
    assert "torch.aten.convolution" not in text and "tensor<8x8x8x4xf32>" in text
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=2e-2, atol=2e-2)


def _dispatches(g):
    return Artifact.from_bytes(g.compile_to_artifact(fs.Backend.CPU, "znver4")).stats.dispatch_count


def test_grouped_1x1_epilogue_adds_no_dispatch(cpu, rng):
    plain = grouped("plain1x1", [2, 64, 14, 14], 64, 8, kernel=(1, 1), padding=(0, 0))
    fused = grouped("epilogue1x1", [2, 64, 14, 14], 64, 8, kernel=(1, 1), padding=(0, 0), epilogue=True)
    run_and_check(fused, cpu, {t: random_array(t, rng) for t in fused.input_tensors()}, rtol=1e-5, atol=1e-5)
    assert _dispatches(fused) == _dispatches(plain)


def test_grouped_3x3_epilogue_is_a_dispatch_of_its_own(cpu, rng):
    """A 3x3 filter's 19 operands are over the 16 IREE fuses into one dispatch (see
    conv_direct.grouped_conv): the bias + relu runs after the conv, one dispatch more."""
    plain = grouped("plain", [2, 64, 14, 14], 64, 8)
    fused = grouped("epilogue", [2, 64, 14, 14], 64, 8, epilogue=True)
    run_and_check(fused, cpu, {t: random_array(t, rng) for t in fused.input_tensors()}, rtol=1e-5, atol=1e-5)
    assert _dispatches(fused) == _dispatches(plain) + 1


def test_grouped_avx2_code(cpu, rng):
    """x86-64-v3 code (the AVX2 register tile) matches the reference where this CPU runs it."""
    arch = arch_running_here("x86-64-v3")
    g = grouped("avx2", [2, 64, 14, 14], 64, 8, epilogue=True)
    handle = fs.Handle(fs.Backend.CPU, arch=arch)
    run_and_check(g, handle, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-5, atol=1e-5)


def test_grouped_ir_taps_and_filter():
    """Nine taps: strided slices of the padded input [N, Ho, Wo, G, Cg] and [G, Cg, Kg] slices of the
    filter transposed to [R, S, G, Cg, Kg] behind a barrier; one reduction generic over
    (n, oh, ow, g, kg, cg) writing [N, Ho, Wo, G, Kg], its accumulator added once."""
    g = grouped("ir", [2, 32, 15, 13], 64, 8, stride=(2, 2))
    text = g.mlir("optimized", fs.Backend.CPU, "znver4")
    # The input padded by one generic reading it through clamped indices (not tensor.pad: a fill and a copy).
    assert "tensor.pad" not in text
    assert re.search(r"iree_tensor_ext\.compute_barrier\.start %\S+ : tensor<2x17x15x32xf32>", text)
    assert "iree_tensor_ext.compute_barrier.start" in text and "tensor<3x3x8x4x8xf32>" in text
    slices = re.findall(r"tensor\.extract_slice %\S+\[0, (\d), (\d), 0, 0\] \[2, 8, 7, 8, 4\] \[1, 2, 2, 1, 1\]", text)
    assert sorted(slices) == [(str(r), str(s)) for r in range(3) for s in range(3)]
    assert len(re.findall(r"tensor<8x4x8xf32>", text)) >= 9
    assert '"parallel", "parallel", "parallel", "parallel", "parallel", "reduction"' in text
    assert "-> tensor<2x8x7x8x8xf32>" in text and "torch.aten.convolution" not in text


@pytest.mark.parametrize(
    "x_dim, k, groups, kernel, arch, applies, why",
    [
        ([1, 128, 28, 28], 128, 32, (3, 3), "znver5", True, "ResNeXt's 3x3 g32"),
        ([1, 128, 28, 28], 128, 32, (3, 3), "x86-64-v3", True, "AVX2 code"),
        ([1, 128, 28, 28], 128, 32, (3, 3), "x86-64", False, "no vector ISA with a tile"),
        ([1, 32, 14, 14], 32, 32, (3, 3), "znver5", False, "depthwise: cpu-conv-depthwise"),
        ([1, 32, 14, 14], 64, 32, (3, 3), "znver5", True, "one channel, two filters per group"),
        ([1, 64, 14, 14], 64, 1, (3, 3), "znver5", False, "ungrouped"),
        ([1, 32, 28, 28], 64, 4, (7, 7), "znver5", False, "49 taps"),
        ([1, 32, 28, 28], 64, 4, (5, 5), "znver5", True, "25 taps"),
    ],
)
def test_grouped_rule_reach(x_dim, k, groups, kernel, arch, applies, why):
    g = grouped(f"reach{x_dim[1]}_{k}_{groups}_{kernel[0]}", x_dim, k, groups, kernel, (1, 1))
    (node,) = g.nodes
    choice = rules.choose(rules.problem_of(node), Target.resolve("cpu", arch), "algorithm")
    assert (choice is not None and choice.rule is rules.CPU_CONV_GROUPED_DIRECT) == applies, why


def test_grouped_explain_and_no_im2col_flag():
    g = grouped("explain", [1, 128, 28, 28], 128, 32)
    target = Target.resolve("cpu", "znver5")
    assert "cpu-conv-grouped-direct (32 groups of 4 -> 4 channels" in g.explain(fs.Backend.CPU, "znver5")
    assert not set(rules.IM2COL_FLAGS) & set(rules.compile_flags(g.nodes, target))


def _dims(n, oh, ow, g, kg, cg=4):
    extent = {"n": n, "oh": oh, "ow": ow, "g": g, "kg": kg, "cg": cg}
    return {name: size for name, size in extent.items() if size > 1}


@pytest.mark.parametrize(
    "isa, dims, vector, distribution",
    [
        # Kg 8: one register a column, 7 columns (the most dividing 28 within 8 accumulators).
        ("avx512", _dims(8, 28, 28, 32, 8), "[1, 1, 7, 1, 8, 0]", "[1, 1, 28, 32, 8, 0]"),
        # Kg 32: two AVX-512 registers a column, so 4 columns (7 has no divisor near: 4 and a peeled
        # 3); 56 rows of halves of the groups.
        ("avx512", _dims(8, 7, 7, 32, 32), "[1, 1, 4, 1, 32, 0]", "[1, 1, 7, 16, 32, 0]"),
        # Kg 64: four registers, 2 columns; one image: no n dim.
        ("avx512", _dims(1, 14, 14, 2, 64), "[1, 2, 1, 64, 0]", "[1, 14, 2, 64, 0]"),
        # AVX2 lanes are 8: 7 columns of Kg 8 ...
        ("avx2", _dims(8, 28, 28, 32, 8), "[1, 1, 7, 1, 8, 0]", "[1, 1, 28, 32, 8, 0]"),
        # ... 4 of Kg 16 (two registers); batch 1 of 7 rows: 7 workgroups of all 32 groups leave one
        # thread a fourth, halves of the groups split 14 evenly.
        ("avx2", _dims(1, 7, 7, 32, 16), "[1, 4, 1, 16, 0]", "[1, 7, 16, 16, 0]"),
        # One channel per group (two filters each): no cg dim, nothing reduced; 10 columns as 8 and
        # a peeled 2 (5 is too few).
        ("avx512", _dims(1, 10, 10, 16, 2, cg=1), "[1, 8, 1, 2]", "[1, 10, 16, 2]"),
    ],
)
def test_grouped_register_tile(isa, dims, vector, distribution):
    with ir.Context():
        text = str(gemm_config.grouped_conv_compilation_info(isa, dims))
    assert f"vector_common_parallel = {vector}" in text
    assert f"distribution = {distribution}" in text


def test_grouped_generic_isa_has_no_tile():
    with ir.Context():
        assert gemm_config.grouped_conv_compilation_info("generic", _dims(1, 8, 8, 4, 8)) is None


def test_grouped_one_image_leaves_unit_dims_out():
    """Batch 1: the generic iterates (oh, ow, g, kg, cg), its config five entries (IREE folds unit
    dims away, and a six-entry config with them: 0.14-0.35 of PyTorch at batch 1)."""
    g = grouped("unit", [1, 64, 14, 14], 64, 8)
    text = g.mlir("optimized", fs.Backend.CPU, "znver4")
    assert '["parallel", "parallel", "parallel", "parallel", "reduction"]' in text
    assert re.search(r"vector_common_parallel = \[\d+, \d+, 1, 8, 0\]", text)
    assert "-> tensor<14x14x8x8xf32>" in text


def _dgrad(name, dy_dim, w_dim, dx_dim, padding, stride=(1, 1), dilation=(1, 1)):
    g = fs.Graph(name=f"grouped_dgrad_{name}")
    dy = g.tensor(name="dy", dim=dy_dim, stride=fs.strides(dy_dim, "NHWC"))
    w = g.tensor(name="w", dim=w_dim, stride=fs.strides(w_dim, "NHWC"))
    dx = g.conv_dgrad(dy, w, padding=list(padding), stride=list(stride), dilation=list(dilation), name="dgrad")
    dx.set_dim(dx_dim).set_output(True).set_name("dx")
    g.validate()
    return g


# name: (dy_dim, w_dim [K, C/G, R, S], dx_dim, padding, dilation); groups = dx C / w C/G.
DGRAD_CASES = {
    "3x3_g8": ([2, 64, 9, 11], [64, 4, 3, 3], [2, 32, 9, 11], (1, 1), (1, 1)),
    "5x3_dilated_g2": ([1, 32, 16, 14], [32, 8, 5, 3], [1, 16, 16, 14], (4, 2), (2, 2)),
}


@pytest.mark.parametrize("name", sorted(DGRAD_CASES))
def test_grouped_dgrad_is_the_forward_conv_of_the_flipped_filter(cpu, rng, name):
    """A stride-1 grouped data gradient is emitted as the forward grouped conv of DY with the
    filter flipped and K/C swapped per group (fusilli/lowering/conv.py): it takes the same
    generic, and g.explain says so for the dgrad node."""
    dy_dim, w_dim, dx_dim, padding, dilation = DGRAD_CASES[name]
    g = _dgrad(name, dy_dim, w_dim, dx_dim, padding, dilation=dilation)
    assert "cpu-conv-grouped-direct" in g.explain(fs.Backend.CPU, "znver5")
    text = g.mlir("optimized", fs.Backend.CPU, "znver5")
    assert "torch.aten.convolution" not in text and "compilation_info" in text
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-5, atol=1e-5)


def test_grouped_strided_dgrad_stays_a_transposed_conv(cpu, rng):
    """A strided grouped dgrad is a transposed conv: the rule does not claim it, its IR keeps
    torch.aten.convolution, and it is right."""
    g = _dgrad("s2", [1, 32, 7, 7], [32, 4, 3, 3], [1, 32, 14, 14], (1, 1), stride=(2, 2))
    assert "cpu-conv-grouped-direct" not in g.explain(fs.Backend.CPU, "znver5")
    assert "torch.aten.convolution" in g.mlir("optimized", fs.Backend.CPU, "znver5")
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-5, atol=1e-5)
