"""conv_dgrad / conv_wgrad: numerics against the NumPy reference, the reference
against closed forms, and one test per validation rule."""

import numpy as np
import pytest
from conftest import arch_running_here, random_array, run_and_check

import fusilli as fs
from fusilli import reference
from fusilli.ir import fusilli_context
from fusilli.reference.conv import conv_data_grad, conv_forward, conv_weight_grad

# (layout of all tensors, dims of DY, forward operand dims (X for wgrad, W for dgrad),
#  result dims, padding, stride, dilation)
CASES_2D = dict(padding=[1, 0], stride=[2, 1], dilation=[1, 2])  # grouped (4 / 2), strided, padded, dilated


def _layout(rank: int, channels_last: bool) -> str:
    return {4: "NHWC", 5: "NDHWC"}[rank] if channels_last else "contiguous"


def _dgrad_graph(name, dy_dim, w_dim, dx_dim, attrs, channels_last, io=fs.DataType.FLOAT):
    g = fs.Graph(name=name, io_data_type=io)
    lay = _layout(len(dy_dim), channels_last)
    dy = g.tensor(name="dy", dim=dy_dim, stride=fs.strides(dy_dim, lay))
    w = g.tensor(name="w", dim=w_dim, stride=fs.strides(w_dim, lay))
    dx = g.conv_dgrad(dy, w, name="dgrad", **attrs)
    dx.set_dim(dx_dim).set_output(True).set_name("dx")
    return g, (dy, w), dx


def _wgrad_graph(name, dy_dim, x_dim, dw_dim, attrs, channels_last, io=fs.DataType.FLOAT):
    g = fs.Graph(name=name, io_data_type=io)
    lay = _layout(len(dy_dim), channels_last)
    dy = g.tensor(name="dy", dim=dy_dim, stride=fs.strides(dy_dim, lay))
    x = g.tensor(name="x", dim=x_dim, stride=fs.strides(x_dim, lay))
    dw = g.conv_wgrad(dy, x, name="wgrad", **attrs)
    dw.set_dim(dw_dim).set_output(True).set_name("dw")
    return g, (dy, x), dw


# x [2, 4, 5, 6], w [6, 2, 3, 2] (groups 2), padding [1, 0], stride [2, 1], dilation [1, 2] -> y [2, 6, 3, 4]
X2, W2, Y2 = [2, 4, 5, 6], [6, 2, 3, 2], [2, 6, 3, 4]
# 3-D: x [1, 2, 4, 4, 3], w [4, 2, 2, 3, 2], padding [0, 1, 1], stride [1, 2, 1] -> y [1, 4, 3, 2, 4]
ATTRS_3D = dict(padding=[0, 1, 1], stride=[1, 2, 1], dilation=[1, 1, 1])
X3, W3, Y3 = [1, 2, 4, 4, 3], [4, 2, 2, 3, 2], [1, 4, 3, 2, 4]


def test_shapes_are_consistent():
    x, w = np.zeros(X2), np.zeros(W2)
    assert conv_forward(x, w, groups=2, **CASES_2D).shape == tuple(Y2)
    assert conv_forward(np.zeros(X3), np.zeros(W3), groups=1, **ATTRS_3D).shape == tuple(Y3)


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
def test_dgrad_2d(cpu, rng, channels_last):
    g, ins, dx = _dgrad_graph(f"dgrad_2d_{channels_last}", Y2, W2, X2, CASES_2D, channels_last)
    g.validate()
    assert dx.stride == fs.strides(X2, "NHWC" if channels_last else "contiguous")
    run_and_check(g, cpu, {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)


# Stride 1: the flipped-filter forward-conv path (grouped, padded, dilated).
STRIDE1_2D = dict(padding=[1, 2], stride=[1, 1], dilation=[1, 2])  # y [2, 6, 5, 8]


@pytest.mark.parametrize("io", [fs.DataType.FLOAT, fs.DataType.HALF], ids=["f32", "f16"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
def test_dgrad_2d_stride1(cpu, rng, channels_last, io):
    g, ins, _ = _dgrad_graph(
        f"dgrad_s1_{channels_last}_{io.name}", [2, 6, 5, 8], W2, X2, STRIDE1_2D, channels_last, io=io
    )
    g.validate()
    tol = 2e-2 if io == fs.DataType.HALF else 1e-4
    run_and_check(g, cpu, {t: random_array(t, rng) for t in ins}, rtol=tol, atol=tol)


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
def test_wgrad_2d(cpu, rng, channels_last):
    g, ins, dw = _wgrad_graph(f"wgrad_2d_{channels_last}", Y2, X2, W2, CASES_2D, channels_last)
    g.validate()
    assert dw.stride == fs.strides(W2, "NHWC" if channels_last else "contiguous")
    run_and_check(g, cpu, {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)


def test_dgrad_3d_ncdhw(cpu, rng):
    g, ins, _ = _dgrad_graph("dgrad_3d", Y3, W3, X3, ATTRS_3D, False)
    g.validate()
    run_and_check(g, cpu, {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)


def test_wgrad_3d_ndhwc(cpu, rng):
    g, ins, _ = _wgrad_graph("wgrad_3d", Y3, X3, W3, ATTRS_3D, True)
    g.validate()
    run_and_check(g, cpu, {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)


def test_dgrad_f16(cpu, rng):
    g, ins, _ = _dgrad_graph("dgrad_f16", Y2, W2, X2, CASES_2D, True, io=fs.DataType.HALF)
    g.validate()
    run_and_check(g, cpu, {t: random_array(t, rng) for t in ins}, rtol=2e-2, atol=2e-2)


def test_wgrad_f16(cpu, rng):
    g, ins, _ = _wgrad_graph("wgrad_f16", Y2, X2, W2, CASES_2D, False, io=fs.DataType.HALF)
    g.validate()
    run_and_check(g, cpu, {t: random_array(t, rng) for t in ins}, rtol=2e-2, atol=2e-2)


# ---- the reference gradients ------------------------------------------------------------
def test_reference_closed_form_1d():
    # y0 = a w0 + b w1, y1 = b w0 + c w1
    a, b, c, w0, w1, d0, d1 = 2.0, -1.0, 3.0, 0.5, 4.0, 1.5, -2.0
    x = np.array([[[a, b, c]]])
    w = np.array([[[w0, w1]]])
    dy = np.array([[[d0, d1]]])
    one = dict(padding=[0], stride=[1], dilation=[1], groups=1)
    np.testing.assert_allclose(conv_forward(x, w, **one), [[[a * w0 + b * w1, b * w0 + c * w1]]])
    np.testing.assert_allclose(conv_data_grad(dy, w, x.shape, **one), [[[d0 * w0, d0 * w1 + d1 * w0, d1 * w1]]])
    np.testing.assert_allclose(conv_weight_grad(dy, x, w.shape, **one), [[[d0 * a + d1 * b, d0 * b + d1 * c]]])


@pytest.mark.parametrize(
    "x_dim, w_dim, attrs, groups",
    [
        (X2, W2, CASES_2D, 2),
        (X3, W3, ATTRS_3D, 1),
        ([1, 3, 7], [3, 1, 3], dict(padding=[2], stride=[3], dilation=[2]), 3),  # depthwise, stride leftover
    ],
)
def test_reference_gradients_are_adjoints(rng, x_dim, w_dim, attrs, groups):
    """conv is bilinear: <dy, conv(x, w)> == <dgrad(dy, w), x> == <wgrad(dy, x), w>."""
    x, w = rng.standard_normal(x_dim), rng.standard_normal(w_dim)
    y = conv_forward(x, w, groups=groups, **attrs)
    dy = rng.standard_normal(y.shape)
    loss = np.vdot(dy, y)
    np.testing.assert_allclose(np.vdot(conv_data_grad(dy, w, x.shape, groups=groups, **attrs), x), loss, rtol=1e-10)
    np.testing.assert_allclose(np.vdot(conv_weight_grad(dy, x, w.shape, groups=groups, **attrs), w), loss, rtol=1e-10)


def test_reference_matches_finite_differences(rng):
    x, w = rng.standard_normal([1, 2, 4]), rng.standard_normal([2, 1, 2])
    attrs = dict(padding=[1], stride=[2], dilation=[1], groups=2)
    dy = rng.standard_normal(conv_forward(x, w, **attrs).shape)
    loss = lambda x_, w_: np.vdot(dy, conv_forward(x_, w_, **attrs))  # noqa: E731
    dx, dw = conv_data_grad(dy, w, x.shape, **attrs), conv_weight_grad(dy, x, w.shape, **attrs)
    h = 1e-6
    for idx in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[idx] = h
        assert abs((loss(x + e, w) - loss(x - e, w)) / (2 * h) - dx[idx]) < 1e-6
    for idx in np.ndindex(*w.shape):
        e = np.zeros_like(w)
        e[idx] = h
        assert abs((loss(x, w + e) - loss(x, w - e)) / (2 * h) - dw[idx]) < 1e-6


# ---- validation ---------------------------------------------------------------------------
def _expect(g, code, *fragments):
    with pytest.raises(fs.FusilliError) as info:
        g.validate()
    assert info.value.code == code
    for f in fragments:
        assert f in str(info.value), str(info.value)


def test_dgrad_requires_dx_dims():
    g = fs.Graph(name="g")
    dy = g.tensor(name="dy", dim=Y2)
    w = g.tensor(name="w", dim=W2)
    g.conv_dgrad(dy, w, name="dgrad", **CASES_2D).set_output(True).set_name("dx")
    _expect(g, fs.ErrorCode.ATTRIBUTE_NOT_SET, "conv_dgrad 'dgrad'", "DX 'dx'", "dims not set")


def test_wgrad_requires_padding():
    g = fs.Graph(name="g")
    dy, x = g.tensor(name="dy", dim=Y2), g.tensor(name="x", dim=X2)
    g.conv_wgrad(dy, x, stride=[1, 1], dilation=[1, 1], name="wgrad").set_dim(W2).set_output(True)
    _expect(g, fs.ErrorCode.ATTRIBUTE_NOT_SET, "conv_wgrad 'wgrad'", "padding not set")


def test_dgrad_dy_must_match_conv_shape():
    g, _, _ = _dgrad_graph("g", [2, 6, 3, 5], W2, X2, CASES_2D, False)
    _expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "conv_dgrad 'dgrad'", "DY 'dy'", "[2, 6, 3, 4]")


def test_wgrad_dy_must_match_conv_shape():
    g, _, _ = _wgrad_graph("g", [2, 6, 4, 4], X2, W2, CASES_2D, False)
    _expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "conv_wgrad 'wgrad'", "DY 'dy'", "[2, 6, 3, 4]")


def test_wgrad_groups_must_divide_channels():
    g, _, _ = _wgrad_graph("g", Y2, X2, [6, 3, 3, 2], CASES_2D, False)
    _expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "conv_wgrad 'wgrad'", "X 'x'", "DW 'dw'", "divisible")


def test_dgrad_out_channels_must_divide_by_groups():
    g, _, _ = _dgrad_graph("g", [2, 5, 3, 4], [5, 2, 3, 2], X2, CASES_2D, False)
    _expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "conv_dgrad 'dgrad'", "W 'w'", "group count")


def test_grad_ranks_must_match():
    g = fs.Graph(name="g")
    dy, w = g.tensor(name="dy", dim=Y2), g.tensor(name="w", dim=[6, 2, 3, 2, 1])
    g.conv_dgrad(dy, w, name="dgrad", **CASES_2D).set_dim(X2).set_output(True).set_name("dx")
    _expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "conv_dgrad 'dgrad'", "same rank", "W rank 5")


def test_grad_layout_must_be_contiguous_or_channels_last():
    g = fs.Graph(name="g")
    dy = g.tensor(name="dy", dim=Y2, stride=fs.strides(Y2, "NHWC"))
    x = g.tensor(name="x", dim=X2, stride=[120, 1, 4, 20])  # N, W, H, C order
    g.conv_wgrad(dy, x, name="wgrad", **CASES_2D).set_dim(W2).set_output(True)
    _expect(g, fs.ErrorCode.NOT_IMPLEMENTED, "conv_wgrad 'wgrad'", "X 'x'", "neither contiguous nor channels-last")


def test_grad_result_rank_must_match_dy():
    g = fs.Graph(name="g")
    dy, w = g.tensor(name="dy", dim=Y2), g.tensor(name="w", dim=W2)
    g.conv_dgrad(dy, w, name="dgrad", **CASES_2D).set_dim([2, 4, 30]).set_output(True).set_name("dx")
    _expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "conv_dgrad 'dgrad'", "DX 'dx'", "rank")


# Channels-last stride-1 dgrad reads its forward filter unflipped (fusilli/passes/conv_layout.py,
# _flipped_taps): Winograd slices its taps in flipped order, the im2col GEMM gathers its
# patches in flipped order. A 3x5 filter and uneven padding catch a swapped or unflipped tap.
@pytest.mark.parametrize(
    "lowering, kernel, padding",
    [
        ("gemm", [3, 5], [1, 2]),
        ("gemm", [3, 3], [0, 1]),
        ("winograd4", [3, 3], [1, 1]),
        ("winograd2", [3, 3], [0, 2]),
        ("linalg", [3, 5], [1, 2]),
    ],
)
def test_dgrad_flipped_filter_paths(cpu, rng, monkeypatch, lowering, kernel, padding):
    from fusilli import pipeline

    monkeypatch.setattr(pipeline, "CONV_LOWERING", lowering)
    n, k, c, h, w = 2, 12, 10, 9, 11
    attrs = dict(padding=padding, stride=[1, 1], dilation=[1, 1])
    x_dim, w_dim = [n, c, h, w], [k, c, *kernel]
    y_dim = list(conv_forward(np.zeros(x_dim), np.zeros(w_dim), groups=1, **attrs).shape)
    g, ins, _ = _dgrad_graph(f"dgrad_flip_{lowering}_{kernel[1]}_{padding[0]}", y_dim, w_dim, x_dim, attrs, True)
    g.validate()
    ir = g.mlir("optimized")
    # The Winograd and GEMM paths leave no flip (a scalar gather over the filter in IREE).
    assert ("torch.aten.flip" in ir) == (lowering == "linalg")
    run_and_check(g, cpu, {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kernel", [3, 5])
def test_dgrad_takes_the_flipped_patch_gemm_on_avx2(rng, kernel):
    """cpu-conv-dgrad-flipped-gemm: as x86-64-v3 code a stride-1 dgrad Winograd does not take
    (4 tiles here; a 5x5 filter) is the im2col GEMM over flipped patches, no torch.aten.flip;
    numerics against the reference. On AVX-512 the rule does not apply."""
    from fusilli.backend.targets import Target

    try:
        Target.resolve("cpu", "x86-64-v3").check_runs_here("x86-64-v3 code")
    except fs.FusilliError:
        pytest.skip("this CPU cannot run x86-64-v3 code")
    n, k, c, hw = 1, 96, 80, 8
    attrs = dict(padding=[kernel // 2] * 2, stride=[1, 1], dilation=[1, 1])
    g, ins, _ = _dgrad_graph(
        f"dgrad_avx2_gemm_{kernel}", [n, k, hw, hw], [k, c, kernel, kernel], [n, c, hw, hw], attrs, True
    )
    g.validate()
    assert "cpu-conv-dgrad-flipped-gemm" in g.explain(arch="x86-64-v3")
    assert "cpu-conv-dgrad-flipped-gemm" not in g.explain(arch="znver4")
    optimized = g.mlir("optimized", fs.Backend.CPU, "x86-64-v3")
    assert "linalg.matmul" in optimized and "torch.aten.flip" not in optimized
    run_and_check(
        g, fs.Handle(fs.Backend.CPU, arch="x86-64-v3"), {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4
    )


@pytest.mark.parametrize("hw, block", [((7, 7), 49), ((10, 12), 60)])
def test_dgrad_avx2_deep_gemm_rows(rng, hw, block):
    """A deep dgrad's flipped-patch GEMM as x86-64-v3 code takes its rows in equal workgroup
    blocks (gemm_config.deep_gemm_rows): 49 rows in one block, not 48 + 1; 120 in two of 60,
    the most AVX2 codegen takes with 64 columns. 256 DY channels: 2304 deep, in K blocks of 256,
    with the filter read as the KRSC matrix it is. Numerics against the reference."""
    from fusilli.backend.targets import Target

    try:
        Target.resolve("cpu", "x86-64-v3").check_runs_here("x86-64-v3 code")
    except fs.FusilliError:
        pytest.skip("this CPU cannot run x86-64-v3 code")
    n, k, c = 1, 256, 72
    attrs = dict(padding=[1, 1], stride=[1, 1], dilation=[1, 1])
    g, ins, _ = _dgrad_graph(f"dgrad_avx2_deep_{hw[0]}", [n, k, *hw], [k, c, 3, 3], [n, c, *hw], attrs, True)
    g.validate()
    assert "cpu-conv-dgrad-flipped-gemm" in g.explain(arch="x86-64-v3")
    optimized = g.mlir("optimized", fs.Backend.CPU, "x86-64-v3")
    assert f"distribution = [{block}, 64, 0]" in optimized and "cache_reduction = [0, 0, 256]" in optimized
    handle = fs.Handle(fs.Backend.CPU, arch="x86-64-v3")
    run_and_check(g, handle, {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)
    assert g.compile_stats.dispatch_count == 2  # the patch gather, the GEMM


@pytest.mark.parametrize(
    "arch, kernel, stride, tuned",
    [
        ("x86-64-v3", 1, 1, True),
        ("x86-64-v3", 3, 2, True),
        ("host", 1, 1, None),
        ("host", 3, 2, None),
    ],
)
def test_wgrad_gemm_tile(rng, arch, kernel, stride, tuned):
    """cpu-conv-wgrad-gemm: a weight gradient Winograd leaves is one GEMM over the output positions
    with the conv GEMM's lowering config on AVX2 code and AVX-512 of AMD and Intel (not the
    vendor-free AVX-512 level, where it was not measured). 2x72x20x20 -> 40: 800 output positions (K blocks of 256 and a
    remainder of 32), 40 output channels (a partial workgroup and register tile); numerics of
    the tuned GEMM against the reference as x86-64-v3 code and as this host's own."""
    arch = arch_running_here(arch)
    n, c, hw, k = 2, 72, 20 * stride, 40
    oh = (hw + 2 * (kernel // 2) - kernel) // stride + 1
    attrs = dict(padding=[kernel // 2] * 2, stride=[stride] * 2, dilation=[1, 1])
    g, ins, _ = _wgrad_graph(
        f"wgrad_gemm_tile_{arch}_{kernel}", [n, k, oh, oh], [n, c, hw, hw], [k, c, kernel, kernel], attrs, True
    )
    g.validate()
    if tuned is None:  # the host's rules decide
        tuned = "cpu-conv-wgrad-gemm" in g.explain()
    assert ("cpu-conv-wgrad-gemm" in g.explain(arch=arch)) is tuned
    optimized = g.mlir("optimized", fs.Backend.CPU, arch)
    assert "linalg.matmul" in optimized and "convolution_backward" not in optimized
    assert ("compilation_info" in optimized) is tuned
    if tuned:  # 800 positions deep: K blocks of 256 (AMD AVX2's narrow 64 for the 648-column 3x3 one)
        from fusilli.backend import rules
        from fusilli.backend.targets import Target, cpu_vendor
        from fusilli.passes import gemm_config

        target = Target.resolve("cpu", arch)
        isa, vendor, columns = rules.vector_isa(target), cpu_vendor(target.cpu), kernel * kernel * c
        positions = n * oh * oh
        transposed = gemm_config.wgrad_gemm_transposed(isa, k, columns, vendor)
        tile = (
            gemm_config.conv_gemm_tile(isa, columns, vendor)
            if transposed
            else gemm_config.wgrad_tile(isa, columns, positions, vendor)  # AMD AVX2: its own from 784 positions
        )
        block = gemm_config.k_block(tile, k, positions, columns)
        assert block in (64, 256) and f"cache_reduction = [0, 0, {block}]" in optimized
    handle = fs.Handle(fs.Backend.CPU, arch=arch)
    run_and_check(g, handle, {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "arch, kernel, io, rows",
    [
        ("x86-64-v3", 5, fs.DataType.FLOAT, 48),
        ("x86-64-v3", 3, fs.DataType.BFLOAT16, 27),
        ("znver4", 5, fs.DataType.FLOAT, 40),
        ("znver4", 3, fs.DataType.FLOAT, 16),
    ],
)
def test_wgrad_gemm_transposed(rng, arch, kernel, io, rows):
    """A weight gradient with 3 input channels (R*S*C = 75 or 27 filter columns, no multiple of the
    register tile's) is the GEMM DW^T[R*S*C, K] = patches^T x DY with the conv GEMM's tile, its
    rows in workgroups of 48 (AVX2's table) or in two equal blocks rounded up to the 8-row
    register tile (AVX-512: 75 -> 40); the transposition to DW fuses into the GEMM's dispatch.
    Numerics against the reference, stride 2, batch 2. (7x7 filters take the row-block GEMMs:
    test_conv_wgrad_row_blocks.py.)"""
    arch = arch_running_here(arch)
    n, c, hw, k = 2, 3, 32, 64
    oh = (hw + 2 * (kernel // 2) - kernel) // 2 + 1
    attrs = dict(padding=[kernel // 2] * 2, stride=[2, 2], dilation=[1, 1])
    g, ins, _ = _wgrad_graph(
        f"wgrad_gemm_transposed_{arch}_{kernel}_{io.name}",
        [n, k, oh, oh],
        [n, c, hw, hw],
        [k, c, kernel, kernel],
        attrs,
        True,
        io=io,
    )
    g.validate()
    columns = kernel * kernel * c
    assert f"as DW^T[R*S*C = {columns}, K]" in g.explain(arch=arch)
    optimized = g.mlir("optimized", fs.Backend.CPU, arch)
    assert f"-> tensor<{columns}x{k}xf32>" in optimized  # the GEMM's result, rows R*S*C
    assert f"distribution = [{rows}, 64, 0]" in optimized
    handle = fs.Handle(fs.Backend.CPU, arch=arch)
    tol = 2e-2 if io == fs.DataType.BFLOAT16 else 1e-4
    run_and_check(g, handle, {t: random_array(t, rng) for t in ins}, rtol=tol, atol=tol)
    if io == fs.DataType.FLOAT:  # the patch gather (through the padding), the GEMM and its transposition
        assert g.compile_stats.dispatch_count == 2


@pytest.mark.parametrize(
    "kernel, stride, c, hw, k",
    [(1, 1, 256, 16, 64), (3, 2, 64, 17, 128)],
    ids=["1x1-256-to-64", "3x3-s2-64-to-128"],
)
def test_wgrad_gemm_transposed_for_few_output_channels_on_avx2(rng, kernel, stride, c, hw, k):
    """AVX2 code computes a weight gradient with at most 128 output channels and more filter
    columns as DW^T[R*S*C, K] (gemm_config.WGRAD_TRANSPOSED_MAX_OUT_CHANNELS); AVX-512 code keeps
    DW[K, R*S*C]. Numerics against the reference, batch 2."""
    from fusilli.passes import gemm_config

    n, pad = 2, kernel // 2
    oh = (hw + 2 * pad - kernel) // stride + 1
    attrs = dict(padding=[pad] * 2, stride=[stride] * 2, dilation=[1, 1])
    name = f"wgrad_gemm_few_out_{kernel}_{c}_{k}"
    g, ins, _ = _wgrad_graph(name, [n, k, oh, oh], [n, c, hw, hw], [k, c, kernel, kernel], attrs, True)
    g.validate()
    columns = kernel * kernel * c
    assert f"as DW^T[R*S*C = {columns}, K]" in g.explain(arch="x86-64-v3")
    assert "DW^T" not in g.explain(arch="znver4")
    assert gemm_config.wgrad_gemm_transposed("avx2", k, columns)
    assert not gemm_config.wgrad_gemm_transposed("avx2", 256, columns)  # 256 output channels: even, DW[K, ...]
    assert not gemm_config.wgrad_gemm_transposed("avx2", k, k // 2)  # fewer filter columns than K
    arch = arch_running_here("x86-64-v3")
    optimized = g.mlir("optimized", fs.Backend.CPU, arch)
    assert f"-> tensor<{columns}x{k}xf32>" in optimized  # the GEMM's result, rows R*S*C
    run_and_check(g, fs.Handle(fs.Backend.CPU, arch=arch), {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("arch", ["x86-64-v3", "znver4"])
@pytest.mark.parametrize("stride", [1, 2])
def test_wgrad_gemm_in_chunks_of_output_positions(rng, arch, stride):
    """A 1x1 weight gradient over at least 4096 output positions with at least 128 output channels
    sums its positions in chunks of about 256 (gemm_config.wgrad_chunk_positions): a batched GEMM of
    partials, then their sum: 2 dispatches (3 with stride 2, X's rows gathered first). Numerics
    against the reference."""
    n, c, k = 4, 32, 128
    hw = 32 * stride
    attrs = dict(padding=[0, 0], stride=[stride] * 2, dilation=[1, 1])
    g, ins, _ = _wgrad_graph(f"wgrad_chunks_{arch}_{stride}", [n, k, 32, 32], [n, c, hw, hw], [k, c, 1, 1], attrs, True)
    g.validate()
    assert "one batched GEMM over 16 chunks of 256 output positions, summed" in g.explain(arch=arch)
    arch = arch_running_here(arch)
    optimized = g.mlir("optimized", fs.Backend.CPU, arch)
    assert "linalg.batch_matmul" in optimized and "-> tensor<16x128x32xf32>" in optimized
    run_and_check(g, fs.Handle(fs.Backend.CPU, arch=arch), {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)
    assert g.compile_stats.dispatch_count == 2 + (stride > 1)  # a strided X is gathered first


def test_wgrad_chunks_only_where_measured():
    from fusilli.passes import gemm_config

    assert gemm_config.wgrad_chunk_positions((1, 1), 6272, 128) == 224  # ResNet-50's 8x28x28
    assert gemm_config.wgrad_chunk_positions((1, 1), 25088, 256) == 256
    assert gemm_config.wgrad_chunk_positions((1, 1), 3136, 128) is None  # too few positions
    assert gemm_config.wgrad_chunk_positions((1, 1), 25088, 64) is None  # 64 output channels
    assert gemm_config.wgrad_chunk_positions((3, 3), 25088, 128) is None  # a patch gather before
    assert gemm_config.wgrad_chunk_positions((1, 1), 4099, 128) is None  # prime: no chunk near 256
    assert gemm_config.wgrad_chunk_positions((1, 1), 25088, 64, transposed=True) == 256  # DW^T: any K
    assert gemm_config.wgrad_chunk_positions((7, 7), 100352, 64, True, "avx2") == 256  # AVX2's DW^T: any filter
    assert gemm_config.wgrad_chunk_positions((7, 7), 100352, 64, True, "avx512") is None  # not AVX-512's stem
    # AMD's AVX2 cores (512 KB L2) halve a chunk whose DY and X rows would outgrow it.
    assert gemm_config.wgrad_chunk_positions((1, 1), 6272, 512, False, "avx2", "amd", 128) == 128  # 640 KB at 256
    assert gemm_config.wgrad_chunk_positions((1, 1), 25088, 64, True, "avx2", "amd", 256) == 256  # 320 KB
    assert gemm_config.wgrad_chunk_positions((1, 1), 6272, 512, False, "avx2", None, 128) == 224  # x86-64-v3: kept
    # Zen 3 keeps the chunk whole (gemm_config.WGRAD_CHUNK_WHOLE_CORES); Zen 1 and 2 halve it.
    assert gemm_config.wgrad_chunk_positions((1, 1), 6272, 512, False, "avx2", "amd", 128, "znver3") == 224
    assert gemm_config.wgrad_chunk_positions((1, 1), 6272, 512, False, "avx2", "amd", 128, "znver2") == 128


def test_wgrad_chunks_halved_for_amd_avx2_l2(rng):
    """On AMD's AVX2 cores a chunk of 256 positions of 1x1 4x128x32x32->512 would hold 640 KB of DY and
    X rows, more than their 512 KB L2 (gemm_config.WGRAD_CHUNK_L2_BYTES): 32 chunks of 128. Numerics
    against the reference where this CPU runs znver1 code."""
    attrs = dict(padding=[0, 0], stride=[1, 1], dilation=[1, 1])
    g, ins, _ = _wgrad_graph("wgrad_chunks_zen", [4, 512, 32, 32], [4, 128, 32, 32], [512, 128, 1, 1], attrs, True)
    g.validate()
    assert "one batched GEMM over 32 chunks of 128 output positions, summed" in g.explain(arch="znver1")
    assert "one batched GEMM over 16 chunks of 256 output positions, summed" in g.explain(arch="x86-64-v3")
    arch = arch_running_here("znver1")
    assert "-> tensor<32x512x128xf32>" in g.mlir("optimized", fs.Backend.CPU, arch)
    run_and_check(g, fs.Handle(fs.Backend.CPU, arch=arch), {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "kernel, n, c, hw, k",
    [(1, 1, 128, 10, 192), (3, 2, 512, 7, 512)],
    ids=["1x1-100-positions", "3x3-462-MFLOP"],
)
def test_wgrad_data_tiled_on_amd_avx2(rng, kernel, n, c, hw, k):
    """AMD's AVX2 cores compute a weight gradient's one GEMM with IREE's data tiling
    (rules.CPU_CONV_WGRAD_DATA_TILING): a plain linalg.matmul without compilation_info, and the
    data-tiling flags; x86-64-v3 and AMD AVX-512 code keep the conv GEMM's tile. Numerics against
    the reference where this CPU runs znver1 code, and the dispatches: the packs of DY and of X (for
    a 3x3 filter fused into the patch gather), the GEMM with DW's unpack."""
    pad = kernel // 2
    attrs = dict(padding=[pad] * 2, stride=[1, 1], dilation=[1, 1])
    g, ins, _ = _wgrad_graph(
        f"wgrad_data_tiled_{kernel}", [n, k, hw, hw], [n, c, hw, hw], [k, c, kernel, kernel], attrs, True
    )
    g.validate()
    columns, positions = kernel * kernel * c, n * hw * hw
    want = f"cpu-conv-wgrad-data-tiling (one GEMM DW[{k}, {columns}] over {positions} output positions"
    assert want in g.explain(arch="znver1")
    for other in ("x86-64-v3", "znver4"):
        assert "cpu-conv-wgrad-gemm (one GEMM" in g.explain(arch=other)
        assert "--iree-opt-data-tiling=true" not in g.target("cpu", other).flags
    assert "--iree-opt-data-tiling=true" in g.target("cpu", "znver1").flags
    arch = arch_running_here("znver1")
    optimized = g.mlir("optimized", fs.Backend.CPU, arch)
    assert f"-> tensor<{k}x{columns}xf32>" in optimized  # DW[K, R*S*C], not DW^T
    assert "linalg.matmul" in optimized and "compilation_info" not in optimized
    run_and_check(g, fs.Handle(fs.Backend.CPU, arch=arch), {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)
    assert g.compile_stats.dispatch_count == 3


@pytest.mark.parametrize(
    "kernel, stride, n, c, hw, k, why",
    [
        (1, 1, 1, 512, 7, 256, "49 output positions"),
        (1, 1, 1, 256, 16, 64, "64 output channels"),
        (1, 1, 1, 64, 16, 256, "64 filter columns"),
        (1, 2, 1, 256, 32, 512, "stride 2"),
        (3, 1, 1, 256, 14, 256, "a 3x3 filter below 268 MFLOP"),
        (1, 1, 4, 128, 32, 512, "4096 output positions, in chunks"),
    ],
)
def test_wgrad_data_tiling_only_where_measured(kernel, stride, n, c, hw, k, why):
    """Where data tiling lost or ran even on the Zen 1 VM, AMD's AVX2 cores keep the conv GEMM's tile
    (the limits: rules.py, CPU_CONV_WGRAD_DATA_TILING)."""
    pad = kernel // 2
    oh = (hw + 2 * pad - kernel) // stride + 1
    attrs = dict(padding=[pad] * 2, stride=[stride] * 2, dilation=[1, 1])
    g, _, _ = _wgrad_graph("wgrad_kept_tile", [n, k, oh, oh], [n, c, hw, hw], [k, c, kernel, kernel], attrs, True)
    g.validate()
    explained = g.explain(arch="znver1")
    assert "cpu-conv-wgrad-gemm" in explained and "data-tiling" not in explained, why


@pytest.mark.parametrize(
    "n, c, hw, k, stride, padding, data_tiled",
    [
        (2, 128, 28, 128, (2, 2), 0, True),  # 392 output positions: data tiling from there
        (1, 128, 57, 128, (2, 2), 0, True),  # odd extents: 29 x 29 = 841 positions
        (1, 128, 28, 128, (1, 2), 0, True),  # one dim strided: 28 x 14
        (1, 128, 54, 128, (2, 2), 1, True),  # padded: 28 x 28, the border's positions read zeros
        (1, 128, 28, 256, (2, 2), 0, False),  # 196 output positions: the tile stayed ahead
    ],
    ids=["392-positions", "odd", "one-dim-strided", "padded", "196-positions"],
)
def test_strided_1x1_wgrad_data_tiled_on_zen3(rng, n, c, hw, k, stride, padding, data_tiled):
    """Zen 3 computes a strided 1x1 weight gradient of >= 392 output positions data-tiled
    (rules.CPU_CONV_WGRAD_DATA_TILING_STRIDED_1X1_CORES): X's strided rows gathered by a dispatch
    into which its pack fuses, DY's pack, the GEMM with DW's unpack. Zen 1 (even there) and fewer
    positions keep the conv GEMM's tile. Numerics against the reference where this CPU runs znver3
    code."""
    attrs = dict(padding=[padding] * 2, stride=list(stride), dilation=[1, 1])
    oh, ow = ((hw + 2 * padding - 1) // s + 1 for s in stride)
    g, ins, _ = _wgrad_graph(f"wgrad_s2_zen3_{n}", [n, k, oh, ow], [n, c, hw, hw], [k, c, 1, 1], attrs, True)
    g.validate()
    positions = n * oh * ow
    explained = g.explain(arch="znver3")
    assert "cpu-conv-wgrad-gemm" in g.explain(arch="znver1")
    if not data_tiled:
        assert "cpu-conv-wgrad-gemm" in explained and "data-tiling" not in explained
        return
    want = f"cpu-conv-wgrad-data-tiling (one GEMM DW[{k}, {c}] over {positions} output positions"
    assert want in explained and "strided 1x1 on znver3, positions >= 392" in explained
    arch = arch_running_here("znver3")
    optimized = g.mlir("optimized", fs.Backend.CPU, arch)
    assert "linalg.matmul" in optimized and "compilation_info" not in optimized
    run_and_check(g, fs.Handle(fs.Backend.CPU, arch=arch), {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)
    assert g.compile_stats.dispatch_count == 3


def test_wgrad_data_tiling_keeps_low_precision_on_the_tile():
    """bf16 weight gradients (widened to f32 on Zen 1) were not measured data-tiled: the tile."""
    attrs = dict(padding=[0, 0], stride=[1, 1], dilation=[1, 1])
    g, _, _ = _wgrad_graph(
        "wgrad_bf16_tile", [1, 192, 10, 10], [1, 128, 10, 10], [192, 128, 1, 1], attrs, True, fs.DataType.BFLOAT16
    )
    g.validate()
    assert "cpu-conv-wgrad-data-tiling" not in g.explain(arch="znver1")


@pytest.mark.parametrize("kernel, c, k", [(3, 512, 512), (1, 2048, 512)], ids=["3x3", "1x1"])
def test_dgrad_of_few_positions_keeps_its_gemm_on_zen1(rng, kernel, c, k):
    """cpu-conv-gemm-few-positions is for forward convs: a data gradient of 49 positions with a large
    filter (ResNet-50's 7x7 stage at batch 1), which reads its filter flipped, keeps its own GEMM on
    Zen 1. Numerics against the reference where this CPU runs znver1 code."""
    pad = kernel // 2
    attrs = dict(padding=[pad] * 2, stride=[1, 1], dilation=[1, 1])
    g, ins, _ = _dgrad_graph(
        f"dgrad_few_positions_{kernel}", [1, k, 7, 7], [k, c, kernel, kernel], [1, c, 7, 7], attrs, True
    )
    g.validate()
    assert "few-positions" not in g.explain(arch="znver1")
    arch = arch_running_here("znver1")
    assert "linalg.transpose" not in g.mlir("optimized", fs.Backend.CPU, arch)
    run_and_check(g, fs.Handle(fs.Backend.CPU, arch=arch), {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)


def test_transposed_3x3_wgrad_gemm_in_chunks_on_avx2(rng):
    """AVX2's DW^T of a 3x3 stride-2 weight gradient (128 output channels, 576 filter columns) over
    4096 output positions takes chunks as well (after its patch gather); AVX-512 keeps one GEMM."""
    attrs = dict(padding=[1, 1], stride=[2, 2], dilation=[1, 1])
    g, ins, _ = _wgrad_graph("wgrad_chunks_3x3_s2", [4, 128, 32, 32], [4, 64, 64, 64], [128, 64, 3, 3], attrs, True)
    g.validate()
    assert "16 chunks of 256 output positions, summed as DW^T[R*S*C = 576, K]" in g.explain(arch="x86-64-v3")
    assert "one GEMM over 4096 output positions, conv GEMM tile" in g.explain(arch="znver4")
    arch = arch_running_here("x86-64-v3")
    run_and_check(g, fs.Handle(fs.Backend.CPU, arch=arch), {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)
    assert g.compile_stats.dispatch_count == 4  # the patch gather, the partials, their sum, its permute


def test_transposed_wgrad_gemm_in_chunks_on_avx2(rng):
    """AVX2's DW^T of a 1x1 weight gradient with 64 output channels takes chunks too; AVX-512's
    DW[64, C] stays one GEMM (64 output channels). Numerics against the reference."""
    n, c, k = 4, 256, 64
    attrs = dict(padding=[0, 0], stride=[1, 1], dilation=[1, 1])
    g, ins, _ = _wgrad_graph("wgrad_chunks_transposed", [n, k, 32, 32], [n, c, 32, 32], [k, c, 1, 1], attrs, True)
    g.validate()
    assert "one batched GEMM over 16 chunks of 256 output positions, summed as DW^T[R*S*C = 256, K]" in g.explain(
        arch="x86-64-v3"
    )
    assert "one GEMM over 4096 output positions, conv GEMM tile" in g.explain(arch="znver4")
    arch = arch_running_here("x86-64-v3")
    optimized = g.mlir("optimized", fs.Backend.CPU, arch)
    assert "-> tensor<16x256x64xf32>" in optimized  # the partials of DW^T
    run_and_check(g, fs.Handle(fs.Backend.CPU, arch=arch), {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)


def test_transposed_wgrad_gemm_in_chunks_on_zen5(rng):
    """Zen 5's AVX-512 code takes DW^T for <= 128 output channels from as many output positions as
    the chunks (gemm_config.WGRAD_TRANSPOSED_FEW_OUT_CHANNELS_CORES: 4096), so its chunks too; Zen 4
    and fewer positions keep DW[K, C]. Numerics against the reference where this CPU runs znver5 code."""
    from fusilli.passes import gemm_config

    n, c, k = 4, 256, 64
    attrs = dict(padding=[0, 0], stride=[1, 1], dilation=[1, 1])
    g, ins, _ = _wgrad_graph("wgrad_chunks_zen5", [n, k, 32, 32], [n, c, 32, 32], [k, c, 1, 1], attrs, True)
    g.validate()
    chunks = "one batched GEMM over 16 chunks of 256 output positions, summed as DW^T[R*S*C = 256, K]"
    assert chunks in g.explain(arch="znver5")
    assert "one GEMM over 4096 output positions, conv GEMM tile" in g.explain(arch="znver4")
    one, _, _ = _wgrad_graph("wgrad_one_zen5", [1, k, 32, 32], [1, c, 32, 32], [k, c, 1, 1], attrs, True)
    assert "DW^T" not in one.validate().explain(arch="znver5")  # 1024 positions
    assert gemm_config.wgrad_gemm_transposed("avx512", 128, 512, "amd", "znver5", 6272)
    assert not gemm_config.wgrad_gemm_transposed("avx512", 128, 512, "amd", "znver5", 784)
    assert not gemm_config.wgrad_gemm_transposed("avx512", 256, 512, "amd", "znver5", 6272)  # 256 output channels
    assert not gemm_config.wgrad_gemm_transposed("avx512", 128, 512, "amd", "znver4", 6272)
    arch = arch_running_here("znver5")
    assert "-> tensor<16x256x64xf32>" in g.mlir("optimized", fs.Backend.CPU, arch)  # the partials of DW^T
    run_and_check(g, fs.Handle(fs.Backend.CPU, arch=arch), {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)


# (The 7x7 stem's 147 rows take the row-block GEMMs there: test_conv_wgrad_row_blocks.py.)
@pytest.mark.parametrize("kernel, stride, padding, rows", [(3, 1, 1, 27), (5, 2, 2, 75)])
def test_chunked_wgrad_of_three_channels_takes_three_row_tiles_on_amd_avx2(rng, kernel, stride, padding, rows):
    """DW^T of a C = 3 input over >= 4096 positions has R*S*C rows, 3 past a multiple of the 6-row
    register tile: on AMD's AVX2 cores its batched GEMM takes 3x16 over every row in one workgroup
    (gemm_config.CHUNKED_ODD_ROWS_VECTOR_ROWS), x86-64-v3 the table's 6x16 in 48-row workgroups.
    Numerics against the reference where this CPU runs znver1 code."""
    oh = 64
    hw = oh * stride
    attrs = dict(padding=[padding] * 2, stride=[stride] * 2, dilation=[1, 1])
    name = f"wgrad_three_channels_{kernel}"
    g, ins, _ = _wgrad_graph(name, [1, 64, oh, oh], [1, 3, hw, hw], [64, 3, kernel, kernel], attrs, True)
    g.validate()
    assert f"a 3x16 register tile over its {rows} rows for avx2, AMD" in g.explain(arch="znver1")
    assert "3x16" not in g.explain(arch="x86-64-v3")
    assert f"distribution = [1, {rows}, 64, 0], vector_common_parallel = [1, 3, 16, 0]" in g.mlir(
        "optimized", fs.Backend.CPU, "znver1"
    )
    assert f"distribution = [1, {min(rows, 48)}, 64, 0], vector_common_parallel = [1, 6, 16, 0]" in g.mlir(
        "optimized", fs.Backend.CPU, "x86-64-v3"
    )
    arch = arch_running_here("znver1")
    run_and_check(g, fs.Handle(fs.Backend.CPU, arch=arch), {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)
    assert g.compile_stats.dispatch_count == 4  # the patch gather, the partials, their sum, its permute


def test_chunked_wgrad_three_row_tiles_only_where_measured():
    from fusilli.passes import gemm_config

    def tile(m, isa="avx2", vendor="amd"):
        t = gemm_config.chunked_wgrad_tile(isa, m, 64, vendor)
        return t.distribution, t.vector

    assert tile(147) == ((147, 64), (3, 16))
    assert gemm_config.chunked_wgrad_tile("avx2", 147, 64, "amd").cache_reduction is None  # whole K
    assert tile(144) == ((48, 64), (6, 16))  # rows the 6-row tile divides
    assert tile(128) == ((48, 64), (6, 16))  # no multiple of 3 either
    assert tile(153) == ((48, 64), (6, 16))  # more rows than measured
    assert tile(147, vendor=None) == ((48, 64), (6, 16))  # x86-64-v3 code
    assert tile(147, isa="avx512") == ((64, 64), (8, 32))


@pytest.mark.parametrize("c, hw, k, stride", [(64, 56, 128, 2), (64, 28, 256, 1)])
def test_wgrad_gemm_of_many_positions_on_amd_avx2(rng, c, hw, k, stride):
    """A weight gradient's one GEMM DW[K, C] over >= 784 output positions takes 4x16 in 32x64
    workgroups, K blocks of 64, on AMD's AVX2 cores (gemm_config.WGRAD_MANY_POSITIONS_TILES);
    x86-64-v3 code the conv GEMM's 6x16. Numerics against the reference where this CPU runs
    znver1 code."""
    attrs = dict(padding=[0, 0], stride=[stride] * 2, dilation=[1, 1])
    oh = hw // stride
    g, ins, _ = _wgrad_graph(f"wgrad_many_positions_{k}", [1, k, oh, oh], [1, c, hw, hw], [k, c, 1, 1], attrs, True)
    g.validate()
    assert "one GEMM over 784 output positions, a 4x16 register tile in 32x64 workgroups for avx2, AMD" in g.explain(
        arch="znver1"
    )
    assert "one GEMM over 784 output positions, conv GEMM tile for avx2" in g.explain(arch="x86-64-v3")
    zen = g.mlir("optimized", fs.Backend.CPU, "znver1")
    assert "cache_reduction = [0, 0, 64], distribution = [32, 64, 0], vector_common_parallel = [4, 16, 0]" in zen
    arch = arch_running_here("znver1")
    run_and_check(g, fs.Handle(fs.Backend.CPU, arch=arch), {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)


def test_wgrad_gemm_tile_of_many_positions_only_where_measured():
    from fusilli.passes import gemm_config

    def tile(k, isa="avx2", vendor="amd"):
        t = gemm_config.wgrad_tile(isa, 256, k, vendor)
        return t.distribution, t.vector, t.cache_reduction

    assert tile(784) == ((32, 64), (4, 16), 64)
    assert tile(3136) == ((32, 64), (4, 16), 64)
    assert tile(196) == ((48, 64), (6, 16), 256)  # few positions: the conv GEMM's
    assert tile(784, vendor=None) == ((48, 64), (6, 16), 256)  # x86-64-v3 code
    assert tile(784, isa="avx512") == ((64, 64), (8, 32), 256)


def test_zen3_wgrad_gemms_step_k_one_position_at_a_time():
    """Zen 3's weight-gradient GEMMs of >= 128 columns take K one position per vector step
    (gemm_config.WGRAD_VECTOR_REDUCTION_BY_CORE): the one GEMM over many positions (Zen 1's tile) or
    few (the conv GEMM's), the chunks' batched GEMM, DW^T; 64 columns, GEMMs in narrow K blocks, other
    cores and AVX2 code for no named CPU keep the tile's 8. A depth that is no multiple of 8 takes no
    narrow K blocks."""
    from fusilli.passes import gemm_config

    assert gemm_config.wgrad_tile("avx2", 256, 784, "amd", "znver3").reduction == 1
    assert gemm_config.wgrad_tile("avx2", 256, 784, "amd", "znver3").distribution == (32, 64)  # the table's
    assert gemm_config.wgrad_tile("avx2", 2304, 196, "amd", "znver3").reduction == 1
    assert gemm_config.wgrad_tile("avx2", 64, 3136, "amd", "znver3").reduction == 8  # 64 columns
    for core in ("znver1", "znver2", None):
        assert gemm_config.wgrad_tile("avx2", 256, 784, "amd", core).reduction == 8
    assert gemm_config.wgrad_tile("avx512", 256, 784, "amd", "znver4").reduction == 8
    assert gemm_config.chunked_wgrad_tile("avx2", 512, 128, "amd", "znver3").reduction == 1
    assert gemm_config.chunked_wgrad_tile("avx2", 256, 64, "amd", "znver3").reduction == 8
    assert gemm_config.chunked_wgrad_tile("avx2", 147, 128, "amd", "znver3").vector == (3, 16)  # odd rows kept
    with fusilli_context():
        chunked = str(gemm_config.wgrad_chunked_compilation_info("avx2", 49, 512, 128, 128, "amd", "znver3"))
        transposed = {
            (k, core): str(gemm_config.wgrad_transposed_matmul_compilation_info("avx2", 512, k, 225, "amd", core))
            for k in (64, 128)
            for core in ("znver3", "znver1")
        }
    assert "vector_reduction = [0, 0, 0, 1]" in chunked
    assert "vector_reduction = [0, 0, 1]" in transposed[128, "znver3"]
    assert "vector_reduction = [0, 0, 8]" in transposed[64, "znver3"]
    assert "vector_reduction = [0, 0, 8]" in transposed[128, "znver1"]
    # 196 positions: blocks of 64 would leave 4, no whole step of 8; whole K (as in steps of 8).
    deep = gemm_config.wgrad_tile("avx2", 2304, 196, "amd", "znver3")
    assert deep.narrow_k_block == 64 and gemm_config.k_block(deep, 256, 196, 2304) is None
    assert gemm_config.k_block(deep, 256, 256, 2304) == 64  # 256 positions: the narrow blocks ...
    # K blocks over B rows 4 KB or more apart keep steps of 8 (8x1024x14x14->256's DW[256, 1024] over
    # 1568 in the many-positions tile's blocks; narrow blocks), K blocks over 1 KB rows take 1.
    assert gemm_config.wgrad_tile("avx2", 1024, 1568, "amd", "znver3", 256).reduction == 8
    assert gemm_config.wgrad_tile("avx2", 2304, 256, "amd", "znver3", 256).reduction == 8
    assert gemm_config.wgrad_tile("avx2", 256, 784, "amd", "znver3", 512).reduction == 1
    with fusilli_context():
        narrow_t = str(gemm_config.wgrad_transposed_matmul_compilation_info("avx2", 512, 128, 3136, "amd", "znver3"))
    assert "cache_reduction = [0, 0, 64]" in narrow_t and "vector_reduction = [0, 0, 1]" in narrow_t  # 512 B rows


def test_explain_and_numerics_zen3_wgrad_k_steps(rng):
    """As znver3 code against the reference: the one GEMM DW[128, 128] over 225 output positions (1x1
    stride 2, no multiple of 8), the chunks of a 1x1 over 4096 positions (whole chunks of 256,
    gemm_config.WGRAD_CHUNK_WHOLE_CORES) and DW^T[256, 128] (K = 128 <
    R*S*C, stride 2), each in K steps of one position, and g.explain names the step; for znver1 it does not."""
    arch = arch_running_here("znver3")
    handle = fs.Handle(fs.Backend.CPU, arch=arch)
    one = dict(padding=[0, 0], stride=[1, 1], dilation=[1, 1])
    two = dict(padding=[0, 0], stride=[2, 2], dilation=[1, 1])
    cases = [
        (_wgrad_graph("wgrad_zen3_one", [1, 128, 15, 15], [1, 128, 29, 29], [128, 128, 1, 1], two, True), "one GEMM"),
        (_wgrad_graph("wgrad_zen3_chunks", [1, 256, 64, 64], [1, 384, 64, 64], [256, 384, 1, 1], one, True), "chunks"),
        (_wgrad_graph("wgrad_zen3_t", [1, 128, 15, 15], [1, 256, 29, 29], [128, 256, 1, 1], two, True), "DW^T"),
    ]
    for (g, ins, _), form in cases:
        g.validate()
        explained = g.explain(fs.Backend.CPU, "znver3")
        assert form in explained and "(znver3: K one position per vector step)" in explained, explained
        assert "znver1: K" not in g.explain(fs.Backend.CPU, "znver1")
        if form == "chunks":  # 640 KB of DY and X rows a chunk of 256: whole on Zen 3, halved on Zen 1
            assert "16 chunks of 256" in explained and "32 chunks of 128" in g.explain(fs.Backend.CPU, "znver1")
        optimized = g.mlir("optimized", fs.Backend.CPU, "znver3")
        assert "vector_reduction = [0, 0, 1]" in optimized or "vector_reduction = [0, 0, 0, 1]" in optimized
        run_and_check(g, handle, {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("arch", ["x86-64-v3", "znver4"])
def test_wgrad_of_three_channels_leaves_winograd(arch):
    """A 3x3 weight gradient of an RGB input (C = 3) is the transposed GEMM, not Winograd, whose
    transforms of DY's 64 channels outweigh a GEMM of 3 columns; from 4 channels Winograd."""
    attrs = dict(padding=[1, 1], stride=[1, 1], dilation=[1, 1])
    for c, winograd in ((3, False), (4, True)):
        g, _, _ = _wgrad_graph(f"wgrad_rgb_{c}", [1, 64, 112, 112], [1, c, 112, 112], [64, c, 3, 3], attrs, True)
        g.validate()
        explained = g.explain(arch=arch)
        assert ("cpu-conv-winograd" in explained) is winograd, explained
        assert ("cpu-conv-wgrad-gemm" in explained) is not winograd, explained


def test_wgrad_gemm_rule_targets():
    """cpu-conv-wgrad-gemm holds on AVX2 code of any vendor and on AMD's and Intel's AVX-512 cores,
    not on the vendor-free AVX-512 level or a CPU without AVX2, and AMD's AVX2 cores take cpu-conv-wgrad-data-tiling before it
    where it holds; Winograd's weight gradients keep Winograd."""
    attrs = dict(padding=[0, 0], stride=[1, 1], dilation=[1, 1])
    g, _, _ = _wgrad_graph("wgrad_rule_targets", [8, 256, 14, 14], [8, 1024, 14, 14], [256, 1024, 1, 1], attrs, True)
    g.validate()
    for arch, rule in (
        ("x86-64-v3", "cpu-conv-wgrad-gemm"),
        ("znver3", "cpu-conv-wgrad-data-tiling"),
        ("znver1", "cpu-conv-wgrad-data-tiling"),
        ("haswell", "cpu-conv-wgrad-gemm"),
        ("znver4", "cpu-conv-wgrad-gemm"),
        ("sapphirerapids", "cpu-conv-wgrad-gemm"),
        ("icelake-server", "cpu-conv-wgrad-gemm"),
        ("x86-64-v4", None),
        ("x86-64", None),
    ):
        explained = g.explain(arch=arch)
        for name in ("cpu-conv-wgrad-gemm", "cpu-conv-wgrad-data-tiling"):
            assert (name in explained) is (name == rule), (arch, explained)
    attrs = dict(padding=[1, 1], stride=[1, 1], dilation=[1, 1])
    wino, _, _ = _wgrad_graph("wgrad_rule_wino", [4, 64, 28, 28], [4, 64, 28, 28], [64, 64, 3, 3], attrs, True)
    wino.validate()
    explained = wino.explain(arch="x86-64-v3")
    assert "cpu-conv-winograd" in explained and "cpu-conv-wgrad-gemm" not in explained


def test_dgrad_explain_follows_the_pass():
    """g.explain() names the lowering fusilli-conv-layout gives a dgrad: the pass asks the rules
    with the dgrad's own problem, whose input channels are DY's. On znver4 (AMD AVX-512) a 3x3
    stride-1 dgrad with 512 DY channels has a 4608-deep GEMM (>= CPU_CONV_GEMM_MIN_DEPTH_AVX512)
    and 4 Winograd tiles: cpu-conv-im2col-gemm, the GEMM over flipped patches; with 64 DY channels
    (576 deep) neither rule applies and it stays the linalg conv of the flipped filter."""
    attrs = dict(padding=[1, 1], stride=[1, 1], dilation=[1, 1])
    deep, _, _ = _dgrad_graph("dgrad_explain_deep", [1, 512, 7, 7], [512, 64, 3, 3], [1, 64, 7, 7], attrs, True)
    deep.validate()
    assert "cpu-conv-im2col-gemm" in deep.explain(arch="znver4")
    optimized = deep.mlir("optimized", fs.Backend.CPU, "znver4")
    assert "linalg.matmul" in optimized and "torch.aten.flip" not in optimized
    shallow, _, _ = _dgrad_graph("dgrad_explain_shallow", [1, 64, 7, 7], [64, 512, 3, 3], [1, 512, 7, 7], attrs, True)
    shallow.validate()
    assert "cpu-conv-im2col-gemm" not in shallow.explain(arch="znver4")
    optimized = shallow.mlir("optimized", fs.Backend.CPU, "znver4")
    assert "linalg.matmul" not in optimized and "torch.aten.flip" in optimized


def test_forced_winograd_leaves_other_dgrads_to_auto(monkeypatch):
    """FUSILLI_CONV_LOWERING=winograd4 forces Winograd on 3x3 stride-1 convs only; a 5x5 dgrad
    takes what auto takes, as x86-64-v3 code the GEMM over flipped patches (no filter flip)."""
    from fusilli import pipeline

    attrs = dict(padding=[2, 2], stride=[1, 1], dilation=[1, 1])
    g, _, _ = _dgrad_graph("dgrad_forced_winograd_5x5", [1, 96, 8, 8], [96, 80, 5, 5], [1, 80, 8, 8], attrs, True)
    g.validate()
    monkeypatch.setattr(pipeline, "CONV_LOWERING", "winograd4")
    optimized = g.mlir("optimized", fs.Backend.CPU, "x86-64-v3")
    assert "linalg.matmul" in optimized and "torch.aten.flip" not in optimized


# Strided dgrads through cpu-conv-dgrad-col2im-gemm: (kernel, stride, padding, dilation, DX
# spatial dims). DX's dims choose the transposed conv's output padding: 9x11 from 5x6 at stride
# 2 has none along H and one along W; 8x8 at 1x1 stride 2 one on each.
STRIDED_DGRADS = [
    ((3, 3), (2, 2), (1, 1), (1, 1), (9, 11)),
    ((1, 1), (2, 2), (0, 0), (1, 1), (8, 8)),
    ((7, 7), (2, 2), (3, 3), (1, 1), (16, 16)),
    ((3, 2), (2, 3), (2, 0), (2, 1), (10, 13)),
]


@pytest.mark.parametrize("arch", ["x86-64-v3", "host"])
@pytest.mark.parametrize(
    "kernel, stride, padding, dilation, hw", STRIDED_DGRADS, ids=["3x3s2", "1x1s2", "7x7s2", "3x2s23"]
)
def test_strided_dgrad_col2im_gemm(rng, arch, kernel, stride, padding, dilation, hw):
    """cpu-conv-dgrad-col2im-gemm: a channels-last strided dgrad is one GEMM DY x W (the forward
    filter as KRSC, B as it is) into every tap's columns and one col2im gather over DX: 2
    dispatches, no transposed torch.aten.convolution (whose zero-inserted DY costs stride^2 the
    FLOPs). 3 input channels for the 7x7 stem's shape; numerics against the reference as
    x86-64-v3 code and as this host's own."""
    arch = arch_running_here(arch)
    n, k, c = 2, 24, 3 if kernel == (7, 7) else 20
    attrs = dict(padding=list(padding), stride=list(stride), dilation=list(dilation))
    x_dim, w_dim = [n, c, *hw], [k, c, *kernel]
    y_dim = list(conv_forward(np.zeros(x_dim), np.zeros(w_dim), groups=1, **attrs).shape)
    g, ins, _ = _dgrad_graph(f"dgrad_col2im_{arch}_{kernel[0]}{kernel[1]}", y_dim, w_dim, x_dim, attrs, True)
    g.validate()
    assert "cpu-conv-dgrad-col2im-gemm" in g.explain(arch=arch)
    optimized = g.mlir("optimized", fs.Backend.CPU, arch)
    assert "linalg.matmul" in optimized and "torch.aten.convolution" not in optimized
    assert "compilation_info" in optimized  # the conv GEMM's tile
    handle = fs.Handle(fs.Backend.CPU, arch=arch)
    run_and_check(g, handle, {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)
    assert g.compile_stats.dispatch_count == 2  # the GEMM, the col2im gather


# 3x3 stride-2 dgrads as polyphase Winograd (winograd.polyphase_dgrad_matrices): (padding, DX
# spatial dims, m). Even and odd padding put the two-tap phase on odd and even DX rows; odd DX
# dims crop the last tile; padding 0 and 2 start a tile's DY read one row before or at its own.
POLYPHASE_DGRADS = [
    ((1, 1), (12, 12), 2),
    ((1, 1), (9, 11), 2),
    ((0, 0), (11, 10), 2),
    ((2, 2), (10, 9), 2),
    ((1, 1), (16, 13), 4),
    ((0, 2), (9, 12), 4),
]


@pytest.mark.parametrize("arch", ["x86-64-v3", "host"])
@pytest.mark.parametrize("padding, hw, m", POLYPHASE_DGRADS, ids=["p1", "p1odd", "p0", "p2", "p1m4", "p02m4"])
def test_strided_dgrad_polyphase_winograd(monkeypatch, rng, arch, padding, hw, m):
    """A 3x3 stride-2 dgrad as Winograd F(m, 2) per DX phase (FUSILLI_CONV_LOWERING=polyphase<m>):
    filter, input (DY) and output transforms around one batched GEMM, no col2im and no transposed
    torch.aten.convolution; numerics against the reference as x86-64-v3 code and this host's own.
    48 DY channels and 40 DX channels, so the GEMM's tiles have remainders."""
    from fusilli import pipeline

    arch = arch_running_here(arch)
    monkeypatch.setattr(pipeline, "CONV_LOWERING", f"polyphase{m}")
    n, k, c = 2, 48, 40
    attrs = dict(padding=list(padding), stride=[2, 2], dilation=[1, 1])
    x_dim, w_dim = [n, c, *hw], [k, c, 3, 3]
    y_dim = list(conv_forward(np.zeros(x_dim), np.zeros(w_dim), groups=1, **attrs).shape)
    g, ins, _ = _dgrad_graph(f"dgrad_polyphase_{arch}_{padding[0]}{padding[1]}_{m}", y_dim, w_dim, x_dim, attrs, True)
    g.validate()
    optimized = g.mlir("optimized", fs.Backend.CPU, arch)
    assert "linalg.batch_matmul" in optimized and "torch.aten.convolution" not in optimized
    assert "linalg.matmul" not in optimized  # not the col2im GEMM
    handle = fs.Handle(fs.Backend.CPU, arch=arch)
    # Winograd's f32 error scales with max|dx| (test_winograd.py).
    run_and_check(g, handle, {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)
    # The filter, DY and output transforms, the GEMM; U's rows each written in place (with G's tap-1
    # rows equal, IREE copied one result into each: winograd._distinct_tap1_rows).
    assert g.compile_stats.dispatch_count == 4
    assert g.compile_stats.copy_count == 0


@pytest.mark.parametrize("io", [fs.DataType.FLOAT, fs.DataType.BFLOAT16], ids=["f32", "bf16"])
def test_strided_dgrad_col2im_gemm_filter_layouts(cpu, rng, io):
    """The strided dgrad's GEMM with a KCRS (not channels-last) filter: the permute to KRSC is a
    dispatch of its own (the optimization barrier keeps IREE from reading B transposed); bf16
    computes in f32 and rounds once. Numerics against the reference."""
    dy_dim, w_dim, dx_dim = [2, 16, 6, 6], [16, 12, 3, 3], [2, 12, 12, 12]
    g = fs.Graph(name=f"dgrad_col2im_kcrs_{io.name}", io_data_type=io)
    dy = g.tensor(name="dy", dim=dy_dim, stride=fs.strides(dy_dim, "NHWC"))
    w = g.tensor(name="w", dim=w_dim, stride=fs.strides(w_dim, "contiguous"))
    dx = g.conv_dgrad(dy, w, padding=[1, 1], stride=[2, 2], dilation=[1, 1], name="dgrad")
    dx.set_dim(dx_dim).set_stride(fs.strides(dx_dim, "NHWC")).set_output(True).set_name("dx")
    g.validate()
    if "cpu-conv-dgrad-col2im-gemm" not in g.explain():
        pytest.skip("this host's rules keep the transposed conv (no AVX2)")
    optimized = g.mlir("optimized")
    assert "linalg.matmul" in optimized and "torch.aten.convolution" not in optimized
    tol = 2e-2 if io == fs.DataType.BFLOAT16 else 1e-4
    run_and_check(g, cpu, {t: random_array(t, rng) for t in (dy, w)}, rtol=tol, atol=tol)


def test_strided_dgrad_col2im_rule_targets():
    """cpu-conv-dgrad-col2im-gemm holds for channels-last, ungrouped strided dgrads on AVX2 and
    AVX-512 code of any vendor; not at stride 1 (a forward conv of DY), for grouped convs, or on a
    CPU without AVX2 (IREE's transposed conv)."""
    attrs = dict(padding=[1, 1], stride=[2, 2], dilation=[1, 1])
    # 49 4x4 DX tiles: too few for cpu-conv-dgrad-winograd-strided.
    g, _, _ = _dgrad_graph("dgrad_col2im_rule", [1, 256, 14, 14], [256, 256, 3, 3], [1, 256, 28, 28], attrs, True)
    g.validate()
    for arch, holds in (("x86-64-v3", True), ("znver4", True), ("sapphirerapids", True), ("x86-64", False)):
        assert ("cpu-conv-dgrad-col2im-gemm" in g.explain(arch=arch)) is holds, arch
    s1 = dict(padding=[1, 1], stride=[1, 1], dilation=[1, 1])
    g1, _, _ = _dgrad_graph("dgrad_col2im_rule_s1", [1, 64, 28, 28], [64, 64, 3, 3], [1, 64, 28, 28], s1, True)
    g1.validate()
    assert "cpu-conv-dgrad-col2im-gemm" not in g1.explain(arch="znver4")
    grouped, _, _ = _dgrad_graph("dgrad_col2im_rule_grouped", Y2, W2, X2, CASES_2D, True)
    grouped.validate()
    assert "cpu-conv-dgrad-col2im-gemm" not in grouped.explain(arch="znver4")


# 3x3 stride-2 weight gradients as polyphase Winograd (winograd.polyphase_wgrad): (padding, X spatial
# dims, m): odd X dims and DY dims no multiple of m leave ragged last tiles on both operands.
POLYPHASE_WGRADS = [
    ((1, 1), (12, 12), 2),
    ((1, 1), (9, 11), 2),
    ((0, 2), (11, 10), 2),
    ((1, 1), (16, 13), 4),
]


@pytest.mark.parametrize("arch", ["x86-64-v3", "host"])
@pytest.mark.parametrize("padding, hw, m", POLYPHASE_WGRADS, ids=["p1", "p1odd", "p02", "p1m4"])
def test_strided_wgrad_polyphase_winograd(monkeypatch, rng, arch, padding, hw, m):
    """A 3x3 stride-2 weight gradient as Winograd over X's phases (FUSILLI_CONV_LOWERING=polyphase<m>):
    X transformed as the forward conv's input, DY's m x m tiles by A, one batched GEMM summing over
    tiles, G^T along both filter dims; numerics against the reference, as x86-64-v3 code and this
    host's own."""
    from fusilli import pipeline

    arch = arch_running_here(arch)
    monkeypatch.setattr(pipeline, "CONV_LOWERING", f"polyphase{m}")
    n, k, c = 2, 40, 24
    attrs = dict(padding=list(padding), stride=[2, 2], dilation=[1, 1])
    x_dim, w_dim = [n, c, *hw], [k, c, 3, 3]
    y_dim = list(conv_forward(np.zeros(x_dim), np.zeros(w_dim), groups=1, **attrs).shape)
    g, ins, _ = _wgrad_graph(f"wgrad_polyphase_{arch}_{padding[0]}{padding[1]}_{m}", y_dim, x_dim, w_dim, attrs, True)
    g.validate()
    optimized = g.mlir("optimized", fs.Backend.CPU, arch)
    assert "linalg.batch_matmul" in optimized and "linalg.matmul" not in optimized
    assert "convolution_backward" not in optimized
    handle = fs.Handle(fs.Backend.CPU, arch=arch)
    run_and_check(g, handle, {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)
    # X rows and columns, DY rows and columns, the GEMM, G^T along rows and along columns.
    assert g.compile_stats.dispatch_count == 7


def test_strided_polyphase_grads_of_256_channels(monkeypatch, cpu, rng):
    """The polyphase F(4, 2) data and weight gradients with 256 channels on the summed side (DY's for
    dgrad, X's for wgrad), where Winograd's f32 error grows: it scales with the result's magnitude,
    so the bound is on the largest error over the largest |reference| (measured 5e-6 and 1e-6)."""
    from fusilli import pipeline, reference

    monkeypatch.setattr(pipeline, "CONV_LOWERING", "polyphase4")
    attrs = dict(padding=[1, 1], stride=[2, 2], dilation=[1, 1])
    dgrad, dgrad_ins, _ = _dgrad_graph("dgrad_poly_256", [2, 256, 8, 8], [256, 32, 3, 3], [2, 32, 16, 16], attrs, True)
    wgrad, wgrad_ins, _ = _wgrad_graph("wgrad_poly_256", [2, 32, 8, 8], [2, 256, 16, 16], [32, 256, 3, 3], attrs, True)
    for g, ins in ((dgrad, dgrad_ins), (wgrad, wgrad_ins)):
        g.validate()
        assert "linalg.batch_matmul" in g.mlir("optimized")
        inputs = {t: random_array(t, rng) for t in ins}
        got = run_and_check(g, cpu, inputs, rtol=1e-3, atol=1e-3)
        for name, want in reference.run(g, inputs).items():
            want = np.asarray(want, np.float64)
            error = np.abs(np.asarray(got[name], np.float64) - want).max() / np.abs(want).max()
            assert error < 1e-5, (g.name, error)


def test_strided_wgrad_polyphase_rule_targets():
    """cpu-conv-wgrad-winograd-strided takes 3x3 stride-2 f32 weight gradients of >= 128 input channels
    on AVX2 code and AMD's and Intel's AVX-512: F(4x4) from 392 4x4 DY tiles, else F(2x2) from 128 2x2 ones, while
    the GEMM's products (t*t*K*C f32) stay within 8 MiB; others keep the wgrad GEMM."""
    attrs = dict(padding=[1, 1], stride=[2, 2], dilation=[1, 1])

    def explained(name, n, c, h, k, arch):
        g, _, _ = _wgrad_graph(name, [n, k, h // 2, h // 2], [n, c, h, h], [k, c, 3, 3], attrs, True)
        g.validate()
        return [line for line in g.explain(arch=arch).splitlines() if "[conv_wgrad]" in line][0]

    for arch in ("x86-64-v3", "znver4", "sapphirerapids"):
        assert "cpu-conv-wgrad-winograd-strided (F(2x2, 2x2)" in explained("pw_b1", 1, 128, 56, 128, arch)
        assert "cpu-conv-wgrad-winograd-strided (F(4x4, 2x2)" in explained("pw_b8", 8, 128, 56, 128, arch)
        # 8x256x28x28: 128 4x4 tiles (F(2x2) then, 392 2x2 ones).
        assert "cpu-conv-wgrad-winograd-strided (F(2x2, 2x2)" in explained("pw_256", 8, 256, 28, 256, arch)
        for name, n, c, h, k in (("pw_few", 1, 256, 28, 256), ("pw_big", 8, 512, 14, 512), ("pw_c64", 4, 64, 56, 128)):
            line = explained(name, n, c, h, k, arch)
            assert "cpu-conv-wgrad-gemm" in line and "winograd" not in line, (name, arch, line)
    assert "winograd" not in explained("pw_generic", 1, 128, 56, 128, "x86-64")  # no tuned vector ISA


def test_strided_wgrad_polyphase_auto(cpu, rng):
    """Where cpu-conv-wgrad-winograd-strided holds (128 input channels, 2 x 8 x 8 2x2 DY tiles), auto
    computes the weight gradient over X's phases: numerics against the reference, 7 dispatches."""
    attrs = dict(padding=[1, 1], stride=[2, 2], dilation=[1, 1])
    g, ins, _ = _wgrad_graph("wgrad_poly_auto", [2, 16, 16, 16], [2, 128, 32, 32], [16, 128, 3, 3], attrs, True)
    g.validate()
    if "cpu-conv-wgrad-winograd-strided" not in g.explain():
        pytest.skip("this host's rules keep the wgrad GEMM (Intel, or no AVX2)")
    optimized = g.mlir("optimized")
    assert "linalg.batch_matmul" in optimized and "linalg.matmul" not in optimized
    run_and_check(g, cpu, {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)
    assert g.compile_stats.dispatch_count == 7


def test_strided_dgrad_polyphase_rule_targets():
    """cpu-conv-dgrad-winograd-strided takes 3x3 stride-2 f32 dgrads from 128 4x4 DX tiles (F(2x2)), from
    392 8x8 ones F(4x4), on AVX2 code and AMD's and Intel's AVX-512, while the
    transformed filter stays within 8 MiB and the padding's parity agrees along H and W; the others
    keep cpu-conv-dgrad-col2im-gemm."""
    attrs = dict(padding=[1, 1], stride=[2, 2], dilation=[1, 1])
    # ResNet-50's 3x3 s2 dgrad at batch 1: 196 tiles, a 1.6 MB transformed filter.
    g, _, _ = _dgrad_graph("dgrad_poly_rule", [1, 128, 28, 28], [128, 128, 3, 3], [1, 128, 56, 56], attrs, True)
    g.validate()
    for arch, holds in (("x86-64-v3", True), ("znver4", True), ("sapphirerapids", True), ("x86-64", False)):
        explained = g.explain(arch=arch)
        assert ("cpu-conv-dgrad-winograd-strided" in explained) is holds, (arch, explained)
    assert "F(2x2, 2x2) per DX phase" in g.explain(arch="znver4")
    # At batch 8, 392 8x8 DX tiles: F(4x4, 2x2).
    b8, _, _ = _dgrad_graph("dgrad_poly_rule_b8", [8, 128, 28, 28], [128, 128, 3, 3], [8, 128, 56, 56], attrs, True)
    b8.validate()
    for arch in ("x86-64-v3", "znver4"):
        assert "cpu-conv-dgrad-winograd-strided (F(4x4, 2x2) per DX phase" in b8.explain(arch=arch), arch
    optimized = g.mlir("optimized", fs.Backend.CPU, "znver4")
    assert "linalg.batch_matmul" in optimized and "linalg.matmul" not in optimized
    # 8x512x14x14: 128 tiles but a 26 MB transformed filter; 1x256x28x28: 49 tiles.
    big, _, _ = _dgrad_graph("dgrad_poly_big", [8, 512, 7, 7], [512, 512, 3, 3], [8, 512, 14, 14], attrs, True)
    few, _, _ = _dgrad_graph("dgrad_poly_few", [1, 256, 14, 14], [256, 256, 3, 3], [1, 256, 28, 28], attrs, True)
    # Padding 1 along H, 0 along W: DX 56x55 from DY 28x27.
    odd = dict(padding=[1, 0], stride=[2, 2], dilation=[1, 1])
    mixed, _, _ = _dgrad_graph("dgrad_poly_mixed", [1, 128, 28, 27], [128, 128, 3, 3], [1, 128, 56, 55], odd, True)
    bf16, _, _ = _dgrad_graph(
        "dgrad_poly_bf16", [1, 128, 28, 28], [128, 128, 3, 3], [1, 128, 56, 56], attrs, True, fs.DataType.BFLOAT16
    )
    for other in (big, few, mixed, bf16):
        other.validate()
        explained = other.explain(arch="znver4")
        assert "cpu-conv-dgrad-winograd-strided" not in explained, (other.name, explained)
        assert "cpu-conv-dgrad-col2im-gemm" in explained, (other.name, explained)


def test_strided_dgrad_polyphase_zen1_from_49_tiles(rng):
    """Zen 1 takes F(2x2, 2x2) per DX phase from 49 4x4 DX tiles and of any filter
    (rules.CPU_CONV_DGRAD_POLYPHASE_CORE_LIMITS) from 128 DX channels: ResNet-50's 1x256x28x28
    (49 tiles) and 8x512x14x14 (a 26 MB transformed filter); 16 tiles or 64 DX channels keep the
    col2im GEMM, as do the other cores.
    Numerics of the 49-tile dgrad (C = K = 256) against the reference, run here as znver1 code."""
    attrs = dict(padding=[1, 1], stride=[2, 2], dilation=[1, 1])
    few, ins, _ = _dgrad_graph("dgrad_zen1_49", [1, 256, 14, 14], [256, 256, 3, 3], [1, 256, 28, 28], attrs, True)
    big, _, _ = _dgrad_graph("dgrad_zen1_big", [8, 512, 7, 7], [512, 512, 3, 3], [8, 512, 14, 14], attrs, True)
    small, _, _ = _dgrad_graph("dgrad_zen1_16", [1, 256, 7, 7], [256, 256, 3, 3], [1, 256, 14, 14], attrs, True)
    # 98 tiles, but 64 DX channels: below the 128 measured.
    narrow, _, _ = _dgrad_graph("dgrad_zen1_narrow", [2, 128, 14, 14], [128, 64, 3, 3], [2, 64, 28, 28], attrs, True)
    for g, tiles in ((few, 49), (big, 128), (small, None), (narrow, None)):
        g.validate()
        explained = g.explain(arch="znver1")
        if tiles is None:
            assert "cpu-conv-dgrad-col2im-gemm" in explained, explained
        else:
            assert f"F(2x2, 2x2) per DX phase, 3x3 stride 2, {tiles} 4x4 DX tiles >= 49," in explained, explained
        for other in ("znver3", "x86-64-v3"):
            assert "cpu-conv-dgrad-col2im-gemm" in g.explain(arch=other), other
    handle = fs.Handle(fs.Backend.CPU, arch=arch_running_here("znver1"))
    inputs = {t: random_array(t, rng) for t in ins}
    scale = float(np.abs(np.asarray(reference.run(few, inputs)["dx"])).max())
    run_and_check(few, handle, inputs, rtol=0, atol=1e-5 * scale)
    assert few.compile_stats.dispatch_count == 4


def test_strided_dgrad_polyphase_auto(cpu, rng):
    """Where cpu-conv-dgrad-winograd-strided holds (128 tiles of 4x4 DX positions: 2 x 32 x 32), auto
    lowers the dgrad as the polyphase Winograd: 4 dispatches (filter, DY and output transforms, the
    GEMM), no col2im GEMM; numerics against the reference."""
    attrs = dict(padding=[1, 1], stride=[2, 2], dilation=[1, 1])
    g, ins, _ = _dgrad_graph("dgrad_poly_auto", [2, 24, 16, 16], [24, 16, 3, 3], [2, 16, 32, 32], attrs, True)
    g.validate()
    if "cpu-conv-dgrad-winograd-strided" not in g.explain():
        pytest.skip("this host's rules keep the col2im GEMM (Intel, or no AVX2)")
    optimized = g.mlir("optimized")
    assert "linalg.batch_matmul" in optimized and "linalg.matmul" not in optimized
    run_and_check(g, cpu, {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)
    assert g.compile_stats.dispatch_count == 4


@pytest.mark.parametrize("arch", ["x86-64-v3", "host"])
def test_1x1_dgrad_gemm_of_the_forward_filter(rng, arch):
    """A 1x1 stride-1 dgrad is DY x the forward filter, KRSC [K, 1, 1, C] read as the [K, C]
    matrix it is (no torch.aten.flip): with the conv GEMM's config at any rows where
    cpu-conv-im2col-gemm holds (AVX2 and AVX-512 code; on Intel's AVX-512 cores but for GEMMs at most
    256 deep and 1024 wide), else the plain matmul. 2x5x7 = 70 rows (not a multiple of any tile), 192 DY channels; numerics."""
    arch = arch_running_here(arch)
    n, k, c, hw = 2, 192, 80, (5, 7)
    attrs = dict(padding=[0, 0], stride=[1, 1], dilation=[1, 1])
    g, ins, _ = _dgrad_graph(f"dgrad_1x1_gemm_{arch}", [n, k, *hw], [k, c, 1, 1], [n, c, *hw], attrs, True)
    g.validate()
    for named, holds in (
        ("x86-64-v3", True),
        ("znver4", True),
        ("sapphirerapids", True),
        ("x86-64-v4", True),
        ("x86-64", False),
    ):
        assert ("1x1 dgrad" in g.explain(arch=named)) is holds, named
    optimized = g.mlir("optimized", fs.Backend.CPU, arch)
    assert "torch.aten.flip" not in optimized
    assert ("compilation_info" in optimized) is ("1x1 dgrad" in g.explain(arch=arch))
    handle = fs.Handle(fs.Backend.CPU, arch=arch)
    run_and_check(g, handle, {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)


def test_avx2_gemm_one_row_block_for_a_short_remainder(rng):
    """AVX2's 48-row workgroups leave 49 rows (a 1x1 dgrad on a 7x7 map) one block of 49, not
    48 + 1 (gemm_config.ONE_BLOCK_SHORT_REMAINDER_ISAS); 54 rows stay 48 + 6. Numerics of the
    49-row GEMM as x86-64-v3 code."""
    from fusilli.backend.targets import Target

    try:
        Target.resolve("cpu", "x86-64-v3").check_runs_here("x86-64-v3 code")
    except fs.FusilliError:
        pytest.skip("this CPU cannot run x86-64-v3 code")
    attrs = dict(padding=[0, 0], stride=[1, 1], dilation=[1, 1])
    for hw, rows in (((7, 7), 49), ((6, 9), 48)):
        g, ins, _ = _dgrad_graph(f"dgrad_1x1_rows_{rows}", [1, 256, *hw], [256, 96, 1, 1], [1, 96, *hw], attrs, True)
        g.validate()
        optimized = g.mlir("optimized", fs.Backend.CPU, "x86-64-v3")
        assert f"distribution = [{rows}, 64, 0]" in optimized
    handle = fs.Handle(fs.Backend.CPU, arch="x86-64-v3")
    g, ins, _ = _dgrad_graph("dgrad_1x1_rows_49_run", [1, 256, 7, 7], [256, 96, 1, 1], [1, 96, 7, 7], attrs, True)
    g.validate()
    run_and_check(g, handle, {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)
