"""fusilli-conv-layout: channels-last convs as linalg.conv_2d_nhwc_hwcf / a 1x1 matmul,
f16/bf16 convs computed in f32. Numerics against the NumPy reference for every
case the pass rewrites, and the IR it leaves (no activation transposes)."""

from __future__ import annotations

import pytest
from conftest import random_array, run_and_check

import fusilli as fs
from fusilli import pipeline
from fusilli.backend import rules

F32, F16, BF16 = fs.DataType.FLOAT, fs.DataType.HALF, fs.DataType.BFLOAT16
TOL = {
    F32: dict(rtol=1e-4, atol=1e-4),
    F16: dict(rtol=2e-2, atol=2e-2),
    BF16: dict(rtol=5e-2, atol=5e-2),
}

# name: x dims, w dims, padding, stride, dilation, x layout, w layout
CASES = {
    "3x3_pad1": ([2, 8, 7, 6], [16, 8, 3, 3], [1, 1], [1, 1], [1, 1], "NHWC", "NHWC"),
    "3x3_nopad": ([1, 4, 6, 6], [8, 4, 3, 3], [0, 0], [1, 1], [1, 1], "NHWC", "NHWC"),
    "strided_dilated": ([1, 4, 11, 10], [8, 4, 3, 3], [1, 0], [2, 3], [2, 1], "NHWC", "NHWC"),
    "rect_5x2_pad21": ([2, 3, 9, 8], [5, 3, 5, 2], [2, 1], [1, 2], [1, 1], "NHWC", "NHWC"),
    "1x1": ([2, 16, 5, 4], [8, 16, 1, 1], [0, 0], [1, 1], [1, 1], "NHWC", "NHWC"),
    "1x1_strided": ([1, 8, 7, 7], [4, 8, 1, 1], [0, 0], [2, 2], [1, 1], "NHWC", "NHWC"),
    "1x1_padded": ([1, 8, 4, 4], [4, 8, 1, 1], [1, 1], [1, 1], [1, 1], "NHWC", "NHWC"),
    "filter_kcrs": ([1, 4, 6, 6], [8, 4, 3, 3], [1, 1], [1, 1], [1, 1], "NHWC", "NCHW"),
}
# Cases left to torch.aten.convolution (the pass must not change their results).
FALLBACK = {
    "nchw": ([1, 4, 6, 6], [8, 4, 3, 3], [1, 1], [1, 1], [1, 1], "NCHW", "NCHW"),
    # Grouped, 49 taps: over cpu-conv-grouped-direct's 25 (test_conv_grouped.py has the others).
    "grouped_nhwc_7x7": ([1, 8, 9, 9], [8, 4, 7, 7], [3, 3], [1, 1], [1, 1], "NHWC", "NHWC"),
    "conv1d_nwc": ([2, 4, 9], [6, 4, 3], [1], [1], [1], "NHWC", "NHWC"),
    "conv3d_ncdhw": ([1, 4, 5, 5, 5], [6, 4, 3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1], "NCHW", "NCHW"),
}
# Channels-last 3-D convs are folded into 2-D ones (rules.depth_folded; test_conv_depth_fold.py).
FOLDED_3D = ([1, 4, 5, 5, 5], [6, 4, 3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1], "NHWC", "NHWC")


def _layout(name, rank):
    """'NHWC' means channels-last at any rank, 'NCHW' contiguous."""
    if name == "NCHW":
        return "contiguous"
    return {3: "NHC", 4: "NHWC", 5: "NDHWC"}[rank]


def build(name, spec, dtype, epilogue=False):
    x_dim, w_dim, padding, stride, dilation, x_layout, w_layout = spec
    x_layout, w_layout = _layout(x_layout, len(x_dim)), _layout(w_layout, len(w_dim))
    g = fs.Graph(name=f"cl_{name}_{dtype.short_name}_{int(epilogue)}", io_data_type=dtype, compute_data_type=F32)
    x = g.tensor(name="x", dim=x_dim, stride=fs.strides(x_dim, x_layout))
    w = g.tensor(name="w", dim=w_dim, stride=fs.strides(w_dim, w_layout))
    y = g.conv_fprop(x, w, padding=padding, stride=stride, dilation=dilation, name="conv")
    if epilogue:
        k = w_dim[0]
        b_dim = [1, k] + [1] * (len(x_dim) - 2)
        b = g.tensor(name="b", dim=b_dim, stride=fs.strides(b_dim, x_layout))
        y = g.relu(g.add(y, b, name="bias"), name="relu")
    y.set_output(True).set_name("y")
    g.validate()
    return g


def inputs_for(g, rng):
    return {t: random_array(t, rng) for t in g.input_tensors()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rewritten_f32(cpu, rng, name):
    g = build(name, CASES[name], F32)
    ir_text = g.mlir("optimized")
    assert "torch.aten.convolution" not in ir_text
    if name == "1x1":
        assert "torch.aten.mm" in ir_text and "linalg.conv_2d" not in ir_text
    elif any(CASES[name][2]):
        # Small padded convs read through the padding (fusilli/passes/conv_direct.py).
        assert "tensor.pad" not in ir_text and '"reduction", "reduction", "reduction"' in ir_text
    else:
        assert "linalg.conv_2d_nhwc_hwcf" in ir_text
    run_and_check(g, cpu, inputs_for(g, rng), **TOL[F32])


def test_no_activation_transposes(cpu):
    """Only the filter is transposed (to HWCF); X and Y stay NHWC."""
    g = build("3x3_pad1", CASES["3x3_pad1"], F32)
    ir_text = g.mlir("optimized")
    permutes = [line for line in ir_text.splitlines() if "torch.aten.permute" in line]
    assert len(permutes) == 1 and "-> !torch.vtensor<[3,3,8,16],f32>" in permutes[0]


@pytest.mark.parametrize("name", ["3x3_pad1", "1x1", "strided_dilated"])
def test_rewritten_bias_relu_fused(cpu, rng, name):
    g = build(name, CASES[name], F32, epilogue=True)
    ir_text = g.mlir("optimized")
    assert "torch.aten.convolution" not in ir_text
    # bias + relu in one epilogue region (a small padded conv is a generic itself)
    assert ir_text.count("linalg.generic") == 1 + any(CASES[name][2])
    assert "torch.aten.relu" not in ir_text and "torch.aten.add" not in ir_text
    run_and_check(g, cpu, inputs_for(g, rng), **TOL[F32])


@pytest.mark.parametrize("dtype", [F16, BF16], ids=lambda d: d.short_name)
@pytest.mark.parametrize("name", ["3x3_pad1", "1x1", "strided_dilated"])
def test_rewritten_half(cpu, rng, name, dtype):
    """f16/bf16 convs compute in f32 and round once."""
    g = build(name, CASES[name], dtype, epilogue=True)
    ir_text = g.mlir("optimized")
    assert "torch.aten.convolution" not in ir_text
    assert "f32" in ir_text
    run_and_check(g, cpu, inputs_for(g, rng), **TOL[dtype])


@pytest.mark.parametrize("name", sorted(FALLBACK))
def test_fallback_f32(cpu, rng, name):
    g = build(name, FALLBACK[name], F32)
    assert "torch.aten.convolution" in g.mlir("optimized")
    run_and_check(g, cpu, inputs_for(g, rng), **TOL[F32])


def test_channels_last_3d_is_folded(cpu, rng):
    """A channels-last 3-D conv leaves no torch.aten.convolution: it is a 2-D conv of its gathered
    depth taps, rewritten like any other."""
    g = build("conv3d_ndhwc", FOLDED_3D, F32)
    assert "torch.aten.convolution" not in g.mlir("optimized")
    run_and_check(g, cpu, inputs_for(g, rng), **TOL[F32])


@pytest.mark.parametrize("dtype", [F16, BF16], ids=lambda d: d.short_name)
@pytest.mark.parametrize("name", ["nchw", "grouped_nhwc_7x7", "conv1d_nwc"])
def test_fallback_half_in_f32(cpu, rng, name, dtype):
    """f16/bf16 convs the rewrite leaves alone still run as an f32 torch convolution."""
    g = build(name, FALLBACK[name], dtype)
    ir_text = g.mlir("optimized")
    conv_lines = [line for line in ir_text.splitlines() if "torch.aten.convolution" in line]
    assert len(conv_lines) == 1 and conv_lines[0].rstrip().endswith("f32>")
    run_and_check(g, cpu, inputs_for(g, rng), **TOL[dtype])


@pytest.mark.parametrize("dtype", [F32, F16, BF16], ids=lambda d: d.short_name)
def test_heavy_conv_flags(dtype):
    """Heavy fprop convs of every float type get im2col + data tiling (f16/bf16 compute in f32)."""
    g = build("big", ([4, 64, 56, 56], [64, 64, 3, 3], [1, 1], [1, 1], [1, 1], "NHWC", "NHWC"), dtype)
    assert "--iree-global-opt-use-im2col-for-convs" in g.target("cpu").flags


@pytest.mark.parametrize("dtype", [F16, BF16], ids=lambda d: d.short_name)
@pytest.mark.parametrize("name", ["3x3_pad1", "nchw"])
def test_half_conv_with_im2col(cpu, rng, monkeypatch, name, dtype):
    """im2col on an f16/bf16 conv fails to compile in IREE 3.13; through the f32 path it works."""
    monkeypatch.setenv("FUSILLI_EXTRA_COMPILER_FLAGS", "--iree-global-opt-use-im2col-for-convs")
    spec = CASES.get(name) or FALLBACK[name]
    g = build(f"im2col_{name}", spec, dtype)
    run_and_check(g, cpu, inputs_for(g, rng), **TOL[dtype])


# --- explicit im2col + matmul (heavy convs; forced on small ones here) -------------


def _im2col_graph(monkeypatch, name, spec, dtype, epilogue=False):
    """The graph built with pipeline.CONV_LOWERING forced to 'im2col' (distinct
    graph names keep the compile cache from mixing the two lowerings)."""

    monkeypatch.setattr(pipeline, "CONV_LOWERING", "im2col")
    return build(f"im2col_{name}", spec, dtype, epilogue=epilogue)


@pytest.mark.parametrize("dtype", [F32, F16, BF16], ids=lambda d: d.short_name)
@pytest.mark.parametrize("name", sorted(CASES))
def test_im2col_numerics(cpu, rng, monkeypatch, name, dtype):
    """Every rewritten case (padded, strided, dilated, 1x1, KCRS filter) through im2col + matmul."""
    g = _im2col_graph(monkeypatch, name, CASES[name], dtype)
    ir_text = g.mlir("optimized")
    assert "torch.aten.convolution" not in ir_text and "linalg.conv_2d" not in ir_text
    assert "linalg.matmul" in ir_text
    if name == "1x1":  # the patch matrix is a reshape, no gather
        assert "d1 + d3" not in ir_text and "tensor.collapse_shape" in ir_text
    run_and_check(g, cpu, inputs_for(g, rng), **TOL[dtype])


@pytest.mark.parametrize("dtype", [F32, BF16], ids=lambda d: d.short_name)
@pytest.mark.parametrize("name", ["3x3_pad1", "1x1", "strided_dilated"])
def test_im2col_bias_relu(cpu, rng, monkeypatch, name, dtype):
    g = _im2col_graph(monkeypatch, name, CASES[name], dtype, epilogue=True)
    ir_text = g.mlir("optimized")
    assert "torch.aten.relu" not in ir_text and "torch.aten.add" not in ir_text
    run_and_check(g, cpu, inputs_for(g, rng), **TOL[dtype])


@pytest.mark.parametrize("arch, bf16_operand", [("znver4", "bf16"), ("x86-64-v3", "f32")])
def test_im2col_operand_types(monkeypatch, arch, bf16_operand):
    """bf16 operands stay bf16 (f32 accumulator) where the CPU has bf16 dot products (znver4's
    avx512bf16), else they are widened to f32 as f16 operands are."""
    import re

    for dtype, operand in ((BF16, bf16_operand), (F16, "f32"), (F32, "f32")):
        g = _im2col_graph(monkeypatch, "3x3_pad1", CASES["3x3_pad1"], dtype)
        ir_text = g.mlir("optimized", fs.Backend.CPU, arch)
        mm = [line for line in ir_text.splitlines() if "linalg.matmul" in line]
        assert len(mm) == 1
        assert re.search(rf"ins\(.*tensor<\d+x\d+x{operand}>, tensor<\d+x\d+x{operand}>\) outs\(.*xf32>\)", mm[0])


def test_im2col_no_transposes(monkeypatch):
    """A channels-last filter is read as [K, R*S*C]: no permute at all; a KCRS one keeps one."""
    ir_text = _im2col_graph(monkeypatch, "3x3_pad1", CASES["3x3_pad1"], F32).mlir("optimized")
    assert "torch.aten.permute" not in ir_text
    ir_text = _im2col_graph(monkeypatch, "filter_kcrs", CASES["filter_kcrs"], F32).mlir("optimized")
    assert ir_text.count("torch.aten.permute ") == 1


HEAVY = ([4, 64, 32, 32], [64, 64, 3, 3], [1, 1], [1, 1], [1, 1], "NHWC", "NHWC")  # 302 MFLOP


@pytest.mark.parametrize("dtype", [F32, F16, BF16], ids=lambda d: d.short_name)
def test_heavy_conv_auto(cpu, rng, dtype):
    """By default a heavy 3x3 stride-1 conv is a Winograd conv in f32 on an AVX2/AVX-512 CPU
    (cpu-conv-winograd); elsewhere bf16 takes im2col + a bf16 matmul, f32/f16 the linalg conv.
    All get the conv_fprop rule's flags."""
    g = build("heavy", HEAVY, dtype, epilogue=True)
    ir_text = g.mlir("optimized")
    if rules.vector_isa(g.target("cpu")) != "generic":
        assert "linalg.batch_matmul" in ir_text and "linalg.conv_2d" not in ir_text
    elif dtype == BF16:
        assert "linalg.matmul" in ir_text and "linalg.conv_2d" not in ir_text
    else:
        assert "linalg.conv_2d_nhwc_hwcf" in ir_text and "linalg.matmul" not in ir_text
    assert "--iree-opt-data-tiling=true" in g.target("cpu").flags
    # Winograd's f32 error scales with max|y| (~1e-5 of it here; test_winograd.py).
    tol = dict(rtol=1e-4, atol=1e-3) if dtype == F32 and "linalg.batch_matmul" in ir_text else TOL[dtype]
    run_and_check(g, cpu, inputs_for(g, rng), **tol)


def test_im2col_threshold_matches_conv_rule():
    """The bf16 im2col matmul and the im2col flags start at one threshold."""
    from fusilli.backend import rules

    heavy = build("heavy_bf16", HEAVY, BF16)
    target = heavy.target("cpu")
    problem = rules.problem_of(heavy.nodes[0])
    assert problem.flops >= rules.CPU_CONV_IM2COL_MIN_FLOPS
    assert rules.choose(problem, target, "flags").rule is rules.CPU_CONV_IM2COL_DATA_TILING
    small = build("small_bf16", CASES["3x3_pad1"], BF16)
    assert rules.problem_of(small.nodes[0]).flops < rules.CPU_CONV_IM2COL_MIN_FLOPS
    # below it: one padded direct conv (no im2col, no pad dispatch)
    assert "linalg.conv_2d_nhwc_hwcf" not in small.mlir("optimized")


def test_conv_lowering_choice_is_part_of_the_cache_key(monkeypatch):
    # FUSILLI_CONV_LOWERING changes the IR fusilli hands IREE, so it must change
    # the artifact's key (a stale artifact would otherwise be reused).
    g = fs.Graph(name="key_lowering")
    x = g.tensor(name="x", dim=[1, 4, 6, 6], stride=fs.strides([1, 4, 6, 6], "NHWC"))
    w = g.tensor(name="w", dim=[4, 4, 3, 3], stride=fs.strides([4, 4, 3, 3], "NHWC"))
    g.conv_fprop(x, w, padding=[0, 0], stride=[1, 1], dilation=[1, 1]).set_output(True)
    g.validate()
    keys = set()
    for mode in ("auto", "im2col", "linalg"):
        monkeypatch.setattr(pipeline, "CONV_LOWERING", mode)
        keys.add(g.key())
    assert len(keys) == 3
