"""Depthwise convs (groups = input channels = output channels) as
``linalg.depthwise_conv_2d_nhwc_hwc`` on CPU (cpu-conv-depthwise, fusilli-conv-layout): numerics
against the NumPy reference (padding, stride, dilation, batch, a bias + relu epilogue), the rule's
reach, the IR, and a graph that mixes one with a conv IREE's im2col would take (its flag dropped:
IREE 3.13 fails to verify its im2col of a depthwise conv). Their stride-1 data gradients take the
same conv (the rule names them), their weight gradients per-row sums of column pairs with a result
per filter tap (cpu-conv-depthwise-wgrad, conv_direct.depthwise_wgrad)."""

from __future__ import annotations

import pytest
from conftest import channels_last_conv_graph, random_array, run_and_check

import fusilli as fs
from fusilli import ir
from fusilli.backend import Artifact, rules
from fusilli.backend.targets import Target
from fusilli.passes import conv_direct, gemm_config


def depthwise(name, x_dim, kernel, padding, stride, dilation=(1, 1), k=None, epilogue=False):
    """One group per input channel: a filter ``[K, 1, R, S]`` (K = C unless given)."""
    c = x_dim[1]
    return channels_last_conv_graph(
        x_dim, k or c, kernel, stride, padding, dilation, epilogue=epilogue, name=f"dw_{name}", groups=c
    )


CASES = {
    "3x3_pad1": ([2, 16, 12, 12], (3, 3), (1, 1), (1, 1), (1, 1)),
    "3x3_s2": ([1, 32, 15, 13], (3, 3), (1, 1), (2, 2), (1, 1)),
    "5x5_dilated": ([1, 24, 16, 16], (5, 5), (4, 4), (1, 1), (2, 2)),
    "3x3_unpadded": ([3, 8, 9, 10], (3, 3), (0, 0), (1, 1), (1, 1)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_depthwise_numerics(cpu, rng, name):
    x_dim, kernel, padding, stride, dilation = CASES[name]
    g = depthwise(name, x_dim, kernel, padding, stride, dilation)
    text = g.mlir("optimized")
    assert "linalg.depthwise_conv_2d_nhwc_hwc" in text and "torch.aten.convolution" not in text
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-5, atol=1e-5)


def test_depthwise_epilogue_adds_no_dispatch(cpu, rng):
    plain = depthwise("plain", [2, 32, 14, 14], (3, 3), (1, 1), (1, 1))
    fused = depthwise("epilogue", [2, 32, 14, 14], (3, 3), (1, 1), (1, 1), epilogue=True)
    run_and_check(fused, cpu, {t: random_array(t, rng) for t in fused.input_tensors()}, rtol=1e-5, atol=1e-5)

    def dispatches(g):
        return Artifact.from_bytes(g.compile_to_artifact(fs.Backend.CPU, "znver4")).stats.dispatch_count

    assert dispatches(fused) == dispatches(plain)


def test_depthwise_ir_materializes_the_filter():
    """The [R, S, C] filter behind a barrier (folded into the conv it is read with a stride of R*S
    along the vectorized channels), the input padded, the conv over NHWC."""
    g = depthwise("ir", [1, 32, 14, 14], (3, 3), (1, 1), (1, 1))
    text = g.mlir("optimized", fs.Backend.CPU, "znver4")
    assert "iree_tensor_ext.compute_barrier.start %" in text and "tensor<3x3x32xf32>" in text
    assert "tensor.pad" in text and "tensor<1x16x16x32xf32>" in text
    assert "depthwise_conv_2d_nhwc_hwc" in text


@pytest.mark.parametrize(
    "x_dim, k, groups_note, applies",
    [
        ([1, 32, 14, 14], None, "depthwise", True),
        ([1, 32, 14, 14], 64, "two filters per channel", False),
        ([1, 1, 14, 14], None, "one channel: an ordinary conv", False),
    ],
)
def test_depthwise_rule_reach(x_dim, k, groups_note, applies):
    g = depthwise(f"reach{k}{x_dim[1]}", x_dim, (3, 3), (1, 1), (1, 1), k=k)
    (node,) = g.nodes
    choice = rules.choose(rules.problem_of(node), Target.resolve("cpu", "znver4"), "algorithm")
    assert (choice is not None and choice.rule is rules.CPU_CONV_DEPTHWISE) == applies, groups_note


def test_grouped_conv_of_several_channels_is_not_depthwise():
    g = fs.Graph(name="grouped_g4")
    x = g.tensor(name="x", dim=[1, 16, 10, 10], stride=fs.strides([1, 16, 10, 10], "NHWC"))
    w = g.tensor(name="w", dim=[16, 4, 3, 3], stride=fs.strides([16, 4, 3, 3], "NHWC"))
    g.conv_fprop(x, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv").set_output(True).set_name("y")
    g.validate()
    assert "depthwise" not in g.mlir("optimized") and "cpu-conv-depthwise" not in g.explain()


def test_graph_mixing_depthwise_and_im2col_convs_drops_im2col(cpu, rng):
    """A depthwise conv and a 3x3 stride-2 conv that takes IREE's im2col (cpu-conv-im2col-data-tiling):
    the module compiles without the im2col flag and both convs are right."""
    g = fs.Graph(name="dw_mixed")
    x = g.tensor(name="x", dim=[2, 32, 28, 28], stride=fs.strides([2, 32, 28, 28], "NHWC"))
    wd = g.tensor(name="wd", dim=[32, 1, 3, 3], stride=fs.strides([32, 1, 3, 3], "NHWC"))
    w3 = g.tensor(name="w3", dim=[64, 32, 3, 3], stride=fs.strides([64, 32, 3, 3], "NHWC"))
    y = g.conv_fprop(x, wd, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="dw")
    z = g.conv_fprop(y, w3, padding=[1, 1], stride=[2, 2], dilation=[1, 1], name="c3")
    z.set_output(True).set_name("z")
    g.validate()
    target = Target.resolve("cpu")
    c3 = next(n for n in g.nodes if n.name == "c3")
    assert rules.CPU_CONV_IM2COL_DATA_TILING.applies(rules.problem_of(c3), target) is not None
    assert not set(rules.IM2COL_FLAGS) & set(rules.compile_flags(g.nodes, target))
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)


def _depthwise_dgrad(name, dy_dim, padding, stride):
    c = dy_dim[1]
    dx_dim = [dy_dim[0], c] + [(dy_dim[2 + i] - 1) * stride[i] - 2 * padding[i] + 3 for i in range(2)]
    g = fs.Graph(name=f"dw_dgrad_{name}")
    dy = g.tensor(name="dy", dim=dy_dim, stride=fs.strides(dy_dim, "NHWC"))
    w = g.tensor(name="w", dim=[c, 1, 3, 3], stride=fs.strides([c, 1, 3, 3], "NHWC"))
    dx = g.conv_dgrad(dy, w, padding=list(padding), stride=list(stride), dilation=[1, 1], name="dgrad")
    dx.set_dim(dx_dim).set_stride(fs.strides(dx_dim, "NHWC")).set_output(True).set_name("dx")
    g.validate()
    return g


def test_depthwise_dgrad_is_the_depthwise_conv(cpu, rng):
    """A stride-1 depthwise data gradient runs as the forward depthwise conv of DY with the flipped
    filter (fusilli/lowering/conv.py), so fusilli-conv-layout makes it the depthwise conv, and the
    rule covers conv_dgrad: g.explain names it, and a graph holding one drops IREE's im2col flag."""
    g = _depthwise_dgrad("s1", [2, 16, 10, 9], (1, 1), (1, 1))
    assert "linalg.depthwise_conv_2d_nhwc_hwc" in g.mlir("optimized")
    assert "cpu-conv-depthwise (16 channels" in g.explain()
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-5, atol=1e-5)


# name: (DX dims NCHW, kernel, padding, stride, dilation, layout)
STRIDED_DGRAD_CASES = {
    "3x3_s2": ([2, 16, 12, 12], (3, 3), (1, 1), (2, 2), (1, 1), "NHWC"),
    "3x3_s2_rows_past_dy": ([1, 16, 13, 14], (3, 3), (1, 1), (2, 2), (1, 1), "NHWC"),
    "3x3_s2_nchw": ([2, 8, 10, 9], (3, 3), (1, 1), (2, 2), (1, 1), "NCHW"),
    "5x3_s3x2_dilated": ([1, 8, 17, 14], (5, 3), (4, 2), (3, 2), (2, 1), "NHWC"),
    "3x3_padding_beyond_reach": ([1, 8, 8, 7], (3, 3), (3, 2), (1, 1), (1, 1), "NHWC"),
}


def _strided_depthwise_dgrad(name, dx_dim, kernel, padding, stride, dilation, layout):
    n, c = dx_dim[:2]
    dy_dim = [n, c] + [
        (dx_dim[2 + i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(2)
    ]
    g = fs.Graph(name=f"dw_dgrad_{name}")
    dy = g.tensor(name="dy", dim=dy_dim, stride=fs.strides(dy_dim, layout))
    w = g.tensor(name="w", dim=[c, 1, *kernel], stride=fs.strides([c, 1, *kernel], layout))
    dx = g.conv_dgrad(dy, w, padding=list(padding), stride=list(stride), dilation=list(dilation), name="dgrad")
    dx.set_dim(dx_dim).set_stride(fs.strides(dx_dim, layout)).set_output(True).set_name("dx")
    g.validate()
    return g


@pytest.mark.parametrize("name", sorted(STRIDED_DGRAD_CASES))
def test_strided_depthwise_dgrad(cpu, rng, name):
    """A strided depthwise data gradient (or one padded beyond its filter's reach): torch-mlir's
    transposed conv of one channel per group failed to compile, so DY gets the transposed conv's
    zeros and padding (fusilli/lowering/conv.py) and the conv is the forward depthwise one of the
    flipped filter: numerics against the reference, DX rows past DY's reach included."""
    g = _strided_depthwise_dgrad(name, *STRIDED_DGRAD_CASES[name])
    text = g.mlir("optimized")
    assert "%true" not in text.split("torch.aten.convolution")[0][-400:]  # not transposed
    if STRIDED_DGRAD_CASES[name][-1] == "NHWC":
        assert "linalg.depthwise_conv_2d_nhwc_hwc" in text and "cpu-conv-depthwise (" in g.explain()
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-5, atol=1e-5)


def test_strided_depthwise_dgrad_ir():
    """3x3 s2 DY 1x16x6x7 -> DX 12x14, channels-last: DY viewed [1, 6, 1, 7, 1, 16], a zero after each
    row and column ([1, 6, 2, 7, 2, 16] -> [1, 12, 14, 16]), one more zero row and column before
    ((3 - 1) - 1 = 1) and the ones a 12x14 output needs after, in DY's own order."""
    g = _strided_depthwise_dgrad("ir", [1, 16, 12, 14], (3, 3), (1, 1), (2, 2), (1, 1), "NHWC")
    text = g.mlir("emitted")
    assert "!torch.vtensor<[1,6,7,16],f32>, !torch.list<int> -> !torch.vtensor<[1,6,1,7,1,16],f32>" in text
    assert "-> !torch.vtensor<[1,6,2,7,2,16],f32>" in text and "-> !torch.vtensor<[1,12,14,16],f32>" in text
    assert "-> !torch.vtensor<[1,14,16,16],f32>" in text  # 1 before, 1 after: 12 + 2 rows, 14 + 2 columns


def test_strided_depthwise_dgrad_compiles_for_amdgpu():
    """The same emission serves every target: the transposed depthwise conv failed on ROCm too."""
    g = _strided_depthwise_dgrad("gpu", *STRIDED_DGRAD_CASES["3x3_s2"])
    art = Artifact.from_bytes(g.compile_to_artifact(fs.Backend.AMDGPU, arch="gfx942"))
    assert art.backend is fs.Backend.AMDGPU and art.stats.dispatch_count >= 1


# name: (x dims NCHW, kernel, padding, stride, dilation)
WGRAD_CASES = {
    "3x3_pad1": ([2, 16, 12, 11], (3, 3), (1, 1), (1, 1), (1, 1)),
    "3x3_s2": ([3, 32, 15, 13], (3, 3), (1, 1), (2, 2), (1, 1)),
    "5x3_dilated": ([1, 24, 16, 14], (5, 3), (4, 2), (1, 1), (2, 2)),
    "3x3_unpadded_one_image": ([1, 8, 9, 10], (3, 3), (0, 0), (1, 1), (1, 1)),
    "3x3_unpadded_odd_columns": ([2, 16, 9, 9], (3, 3), (0, 0), (1, 1), (1, 1)),
    "5x5_two_generics_of_taps": ([2, 20, 10, 10], (5, 5), (2, 2), (1, 1), (1, 1)),
    "3x3_no_position_inside": ([1, 8, 3, 3], (3, 3), (1, 1), (1, 1), (1, 1)),
    # most positions inside: read in place, the strips around them gathered
    "3x3_inside_and_strips": ([2, 16, 44, 43], (3, 3), (1, 1), (1, 1), (1, 1)),
    "3x3_s2_inside_and_strips": ([1, 16, 81, 79], (3, 3), (1, 1), (2, 2), (1, 1)),
    "5x3_dilated_inside_and_strips": ([1, 8, 120, 110], (5, 3), (4, 2), (1, 1), (2, 2)),
}


def _depthwise_wgrad(name, x_dim, kernel, padding, stride, dilation, dtype=fs.DataType.FLOAT):
    n, c = x_dim[:2]
    dy_dim = [n, c] + [
        (x_dim[2 + i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(2)
    ]
    g = fs.Graph(name=f"dw_wgrad_{name}_{dtype.short_name}", io_data_type=dtype, compute_data_type=fs.DataType.FLOAT)
    dy = g.tensor(name="dy", dim=dy_dim, stride=fs.strides(dy_dim, "NHWC"))
    x = g.tensor(name="x", dim=x_dim, stride=fs.strides(x_dim, "NHWC"))
    dw = g.conv_wgrad(dy, x, padding=list(padding), stride=list(stride), dilation=list(dilation), name="wgrad")
    dw.set_dim([c, 1, *kernel]).set_stride(fs.strides([c, 1, *kernel], "NHWC")).set_output(True).set_name("dw")
    g.validate()
    return g


@pytest.mark.parametrize("name", sorted(WGRAD_CASES))
def test_depthwise_wgrad_sums_column_pairs(cpu, rng, name):
    """cpu-conv-depthwise-wgrad: row sums over column pairs with a result per tap, then their sum
    (conv_direct.depthwise_wgrad), numerics against the reference: odd DY widths (a zero column),
    unpadded inputs (read in place, or gathered where the pairs' last column reaches past them), one
    image (its dim left out), 25 taps in three generics."""
    g = _depthwise_wgrad(name, *WGRAD_CASES[name])
    text = g.mlir("optimized")
    assert "convolution_backward" not in text and "linalg.depthwise_conv_2d_nhwc_hwc" not in text
    assert "cpu-conv-depthwise-wgrad" in g.explain()
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)


def test_depthwise_wgrad_ir():
    """3x3 s2 3x32x15x13 (DY 8 x 7; 24 of 56 positions' taps inside X: one strip): DY gathered with
    a zero column (8 x 8), the padded rows and columns the taps read (2*7 + 2 + 1 = 17 and, for 4
    column pairs, 2*7 + 2 + 1 = 17), each tap's two views (rows a stride apart, columns two), one
    generic with nine results [3, 8, 32], their rows [9, 24, 32] summed into the filter [32, 9] ->
    [32, 3, 3, 1]."""
    text = _depthwise_wgrad("ir", *WGRAD_CASES["3x3_s2"]).mlir("optimized")
    assert "tensor<3x1x8x8x32xf32> into tensor<3x8x8x32xf32>" in text
    assert "tensor<3x1x17x17x32xf32> into tensor<3x17x17x32xf32>" in text
    assert "[0, 0, 1, 0] [3, 8, 4, 32] [1, 1, 2, 1] : tensor<3x8x8x32xf32> to tensor<3x8x4x32xf32>" in text
    assert "[0, 2, 4, 0] [3, 8, 4, 32] [1, 2, 4, 1] : tensor<3x17x17x32xf32> to tensor<3x8x4x32xf32>" in text
    assert text.count("linalg.generic") == 4  # the two gathers, the row sums, the rows' sum
    assert "-> (tensor<3x8x32xf32>, " in text and "tensor.empty() : tensor<9x24x32xf32>" in text
    assert "tensor<32x9xf32> into tensor<32x3x3x1xf32>" in text


def test_depthwise_wgrad_reads_inside_positions_in_place():
    """3x3 2x16x44x43 (DY 44 x 43): rows 1-42 and columns 1-40 (20 pairs; 89% of the positions) read
    X and DY where they lie; the rows above and below (one each, 22 pairs: 44 columns with a zero
    one) and the columns left (one) and right (two) are strips of two gathers each, the two strips
    of a kind as images (2 x 2 = 4); every region's rows (84 + 4 + 4*42 = 256) summed."""
    text = _depthwise_wgrad("split", *WGRAD_CASES["3x3_inside_and_strips"]).mlir("optimized")
    x, dy = "tensor<2x44x43x16xf32>", "tensor<2x42x20x16xf32>"
    assert f"%2[0, 0, 0, 0] [2, 42, 20, 16] [1, 1, 2, 1] : {x} to {dy}" in text  # X, tap (0, 0)
    assert f"%2[0, 2, 3, 0] [2, 42, 20, 16] [1, 1, 2, 1] : {x} to {dy}" in text  # X, tap (2, 2), odd columns
    assert f"%3[0, 1, 1, 0] [2, 42, 20, 16] [1, 1, 2, 1] : {x} to {dy}" in text  # DY from (1, 1)
    for strips in ("2x2x1x44x16", "2x2x3x46x16", "2x2x42x2x16", "2x2x44x4x16"):  # DY, X above/below; left/right
        assert f"tensor.empty() : tensor<{strips}xf32>" in text
    assert text.count("linalg.generic") == 8 and "tensor.empty() : tensor<9x256x16xf32>" in text


def test_depthwise_wgrad_taps_inside():
    """The output indices whose taps all read inside the input: 3x3 p1 over 44 -> 1..42, s2 over 81
    (41 outputs) -> 1..39, 5 taps dilated 2 padded 4 over 120 -> 4..115, none of 3 padded 1 over 1."""
    assert conv_direct._taps_inside(44, 44, 3, 1, 1, 1) == (1, 43)
    assert conv_direct._taps_inside(41, 81, 3, 2, 1, 1) == (1, 40)
    assert conv_direct._taps_inside(120, 120, 5, 1, 4, 2) == (4, 116)
    assert conv_direct._taps_inside(1, 1, 3, 1, 1, 1) == (1, 1)


def test_depthwise_wgrad_unpadded_reads_x_in_place():
    """An unpadded 3x3 whose DY has an even width reads X where it lies: no gather."""
    text = _depthwise_wgrad("in_place", *WGRAD_CASES["3x3_unpadded_one_image"]).mlir("optimized")
    assert "tensor.extract %" not in text and "compute_barrier" not in text
    assert "[0, 1, 2, 0] [1, 7, 4, 8] [1, 1, 2, 1] : tensor<1x9x10x8xf32> to tensor<7x4x8xf32>" in text


def test_depthwise_wgrad_tiles():
    """Workgroups of 4 rows and the most channels up to 48 in whole registers, two rows by one
    register of channels, one column pair a step; the rows' sum vectorized along 16 channels."""
    with ir.Context():
        avx512 = str(gemm_config.depthwise_wgrad_compilation_info("avx512", {"n": 8, "oh": 56, "c": 144, "j": 28}))
        avx2 = str(gemm_config.depthwise_wgrad_compilation_info("avx2", {"oh": 7, "c": 20, "j": 4}))
        summed = str(gemm_config.depthwise_wgrad_sum_compilation_info("avx2", 144))
        assert gemm_config.depthwise_wgrad_compilation_info("generic", {"oh": 7, "c": 20, "j": 4}) is None
    assert (
        "distribution = [1, 4, 48, 0], vector_common_parallel = [1, 2, 16, 0], vector_reduction = [0, 0, 0, 1]"
        in avx512
    )
    # 20 channels: no multiple of 8 divides them, so 20 with a peeled remainder
    assert "distribution = [4, 20, 0], vector_common_parallel = [2, 8, 0], vector_reduction = [0, 0, 1]" in avx2
    assert "distribution = [48, 1, 0], vector_common_parallel = [16, 1, 0], vector_reduction = [0, 0, 1]" in summed


@pytest.mark.parametrize("dtype", [fs.DataType.HALF, fs.DataType.BFLOAT16])
def test_depthwise_wgrad_low_precision_computes_in_f32(cpu, rng, dtype):
    g = _depthwise_wgrad("lp", [2, 16, 8, 8], (3, 3), (1, 1), (1, 1), (1, 1), dtype)
    assert "convolution_backward" not in g.mlir("optimized")
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=3e-2, atol=3e-2)


def test_depthwise_wgrad_rule_reach():
    g = _depthwise_wgrad("reach", [1, 16, 8, 8], (3, 3), (1, 1), (1, 1), (1, 1))
    (node,) = g.nodes
    for arch, applies in (("znver5", True), ("x86-64-v3", True), ("x86-64", False)):
        choice = rules.choose(rules.problem_of(node), Target.resolve("cpu", arch), "algorithm")
        assert (choice is not None and choice.rule is rules.CPU_CONV_DEPTHWISE_WGRAD) == applies, arch


# name: (x dims NCDHW, output channels, kernel, padding, stride, dilation, layout)
DEPTHWISE_3D_CASES = {
    "3x3x3": ([2, 8, 6, 7, 5], 8, (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1), "NCDHW"),
    "3x3x3_channels_last": ([1, 16, 5, 6, 6], 16, (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1), "NDHWC"),
    "strided_dilated_depth": ([1, 8, 9, 8, 8], 8, (3, 3, 3), (2, 1, 0), (2, 2, 1), (2, 1, 1), "NDHWC"),
    "two_filters_per_channel": ([1, 4, 5, 5, 5], 8, (2, 3, 3), (0, 1, 1), (1, 1, 1), (1, 1, 1), "NCDHW"),
}


def _conv_3d(name, x_dim, k, kernel, padding, stride, dilation, layout):
    g = fs.Graph(name=f"dw3d_{name}")
    x = g.tensor(name="x", dim=x_dim, stride=fs.strides(x_dim, layout))
    wdim = [k, 1, *kernel]
    w = g.tensor(name="w", dim=wdim, stride=fs.strides(wdim, layout))
    y = g.conv_fprop(x, w, padding=list(padding), stride=list(stride), dilation=list(dilation), name="conv")
    y.set_output(True).set_name("y")
    g.validate()
    return g


@pytest.mark.parametrize("name", sorted(DEPTHWISE_3D_CASES))
def test_depthwise_3d_conv(cpu, rng, name):
    """A 3-D conv of one input channel per group: torch-mlir failed to legalize it, so it is the
    sum over its depth taps of 2-D depthwise convs whose images are the output depths
    (fusilli/lowering/conv.py): numerics against the reference, channels-last ones as the 2-D
    depthwise conv of fusilli-conv-layout."""
    g = _conv_3d(name, *DEPTHWISE_3D_CASES[name])
    text = g.mlir("emitted")
    taps = DEPTHWISE_3D_CASES[name][2][0]
    assert text.count("torch.aten.convolution ") == taps and "torch.aten.select.int" in text
    if DEPTHWISE_3D_CASES[name][-1] == "NDHWC":
        assert "linalg.depthwise_conv_2d_nhwc_hwc" in g.mlir("optimized")
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_3d_dgrad(cpu, rng, stride):
    """Its data gradients (the forward conv of the flipped filter, over DY with the zeros of a
    strided one) take the same depth taps."""
    x_dim = [1, 8, 7, 6, 6]
    dy_dim = [1, 8] + [(d + 2 - 3) // stride + 1 for d in x_dim[2:]]
    g = fs.Graph(name=f"dw3d_dgrad_{stride}")
    dy = g.tensor(name="dy", dim=dy_dim, stride=fs.strides(dy_dim, "NDHWC"))
    w = g.tensor(name="w", dim=[8, 1, 3, 3, 3], stride=fs.strides([8, 1, 3, 3, 3], "NDHWC"))
    dx = g.conv_dgrad(dy, w, padding=[1, 1, 1], stride=[stride] * 3, dilation=[1, 1, 1], name="dgrad")
    dx.set_dim(x_dim).set_stride(fs.strides(x_dim, "NDHWC")).set_output(True).set_name("dx")
    g.validate()
    assert g.mlir("emitted").count("torch.aten.convolution ") == 3
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-5, atol=1e-5)


def test_depthwise_3d_conv_compiles_for_amdgpu():
    """The depth taps serve every target: torch-mlir's 3-D depthwise conv failed on ROCm too."""
    g = _conv_3d("gpu", *DEPTHWISE_3D_CASES["3x3x3"])
    art = Artifact.from_bytes(g.compile_to_artifact(fs.Backend.AMDGPU, arch="gfx942"))
    assert art.backend is fs.Backend.AMDGPU and art.stats.dispatch_count >= 1


def test_depthwise_3d_conv_takes_the_depthwise_rule():
    """Channels-last, its 2-D depth-tap convs are fusilli-conv-layout's depthwise ones: the rule names
    it, and a graph of one large enough for IREE's im2col (which fails to verify a channels-last
    depthwise conv) compiles without that flag."""
    g = _conv_3d("big", [1, 96, 8, 28, 28], 96, (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1), "NDHWC")
    target = Target.resolve("cpu", "znver5")
    assert "cpu-conv-depthwise (96 channels" in g.explain(fs.Backend.CPU, "znver5")
    assert "3-D as the sum over its depth taps" in g.explain(fs.Backend.CPU, "znver5")
    assert "--iree-global-opt-use-im2col-for-convs" not in rules.compile_flags(g.nodes, target)
