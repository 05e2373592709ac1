"""3-D convs folded into 2-D ones on CPUs (rules.depth_folded, fusilli-conv-layout's _fold_depth and
_fold_wgrad_depth, conv_direct.depth_taps): the depth taps gathered into the channels, then every
2-D lowering. Numerics against the reference interpreter, g.explain, and what stays unfolded."""

import numpy as np
import pytest
from conftest import arch_running_here, random_array, run_and_check

import fusilli as fs
from fusilli import reference
from fusilli.backend import rules
from fusilli.backend.targets import Target
from fusilli.reference.conv import conv_forward

LAYOUT = "NDHWC"


def _out_dims(x_dim, w_dim, padding, stride, dilation):
    return list(
        conv_forward(
            np.zeros(x_dim), np.zeros(w_dim), padding=padding, stride=stride, dilation=dilation, groups=1
        ).shape
    )


def _graph(kind, x_dim, w_dim, padding, stride, dilation, io=fs.DataType.FLOAT, layout=LAYOUT, epilogue=False):
    """A 3-D conv_fprop / conv_dgrad / conv_wgrad graph: (graph, its input tensors)."""
    g = fs.Graph(name=f"depth_fold_{kind}", io_data_type=io)
    attrs = dict(padding=padding, stride=stride, dilation=dilation)
    y_dim = _out_dims(x_dim, w_dim, padding, stride, dilation)
    if kind == "fprop":
        x = g.tensor(name="x", dim=x_dim, stride=fs.strides(x_dim, layout))
        w = g.tensor(name="w", dim=w_dim, stride=fs.strides(w_dim, layout))
        out = g.conv_fprop(x, w, name="conv", **attrs)
        ins = [x, w]
        if epilogue:
            bias = g.tensor(name="b", dim=[1, w_dim[0], 1, 1, 1], stride=[w_dim[0], 1, 1, 1, 1])
            out = g.relu(g.add(out, bias))
            ins.append(bias)
    elif kind == "dgrad":
        dy = g.tensor(name="dy", dim=y_dim, stride=fs.strides(y_dim, layout))
        w = g.tensor(name="w", dim=w_dim, stride=fs.strides(w_dim, layout))
        out = g.conv_dgrad(dy, w, name="conv", **attrs)
        out.set_dim(x_dim).set_stride(fs.strides(x_dim, layout))
        ins = [dy, w]
    else:
        dy = g.tensor(name="dy", dim=y_dim, stride=fs.strides(y_dim, layout))
        x = g.tensor(name="x", dim=x_dim, stride=fs.strides(x_dim, layout))
        out = g.conv_wgrad(dy, x, name="conv", **attrs)
        out.set_dim(w_dim).set_stride(fs.strides(w_dim, layout))
        ins = [dy, x]
    out.set_output(True)
    g.validate()
    return g, ins


CASES = [
    # kind, x [N, C, D, H, W], w [K, C, T, R, S], padding, stride, dilation
    ("fprop", [2, 16, 6, 12, 12], [24, 16, 3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1]),  # 2-D Winograd
    ("fprop", [1, 8, 7, 9, 10], [8, 8, 3, 2, 3], [1, 0, 2], [2, 1, 2], [1, 1, 2]),
    ("fprop", [2, 32, 4, 14, 14], [48, 32, 1, 1, 1], [0, 0, 0], [1, 1, 1], [1, 1, 1]),  # a reshape, no gather
    ("fprop", [1, 8, 9, 12, 12], [16, 8, 3, 3, 3], [2, 1, 1], [1, 1, 1], [2, 1, 1]),  # depth dilation
    ("fprop", [1, 3, 6, 30, 30], [16, 3, 3, 7, 7], [1, 3, 3], [1, 2, 2], [1, 1, 1]),  # a video stem
    ("dgrad", [2, 16, 6, 12, 12], [24, 16, 3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1]),
    ("dgrad", [1, 8, 9, 12, 12], [16, 8, 3, 3, 3], [2, 1, 1], [1, 1, 1], [2, 1, 1]),
    ("wgrad", [2, 16, 6, 12, 12], [24, 16, 3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1]),  # 2-D Winograd
    ("wgrad", [1, 16, 7, 9, 10], [8, 16, 3, 2, 3], [1, 0, 2], [2, 1, 2], [1, 1, 2]),
    ("wgrad", [2, 32, 4, 14, 14], [48, 32, 1, 1, 1], [0, 0, 0], [1, 1, 1], [1, 1, 1]),
    ("wgrad", [1, 1, 9, 12, 12], [16, 1, 3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1]),  # one input channel
]


@pytest.mark.parametrize("kind, x_dim, w_dim, padding, stride, dilation", CASES)
def test_depth_folded_numerics(cpu, rng, kind, x_dim, w_dim, padding, stride, dilation):
    """Each kind of 3-D conv, folded, against the reference; g.explain says how it was folded."""
    g, ins = _graph(kind, x_dim, w_dim, padding, stride, dilation)
    explained = g.explain()
    taps = w_dim[2]
    channels = taps * (w_dim[0] if kind == "dgrad" else w_dim[1])
    assert f"3-D as 2-D: {taps} depth tap{'s' * (taps != 1)} gathered into {channels} channels" in explained, explained
    assert rules.lowering_summary(g.nodes, Target.resolve("cpu", None)).startswith("cpu-conv-depth-fold")
    # Tolerance relative to the output's magnitude, as test_winograd.py's for F(4x4): the folded convs
    # of 3x3 taps are 2-D Winograd, of T*C channels.
    inputs = {t: random_array(t, rng) for t in ins}
    want = np.asarray(reference.run(g, inputs)[g.output_tensors()[0].name], np.float64)
    scale = float(np.abs(want).max())
    got = np.asarray(next(iter(run_and_check(g, cpu, inputs, rtol=0, atol=1e-4 * scale).values())), np.float64)
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-5


def test_depth_fold_takes_the_2d_lowerings():
    """The folded conv gets the 2-D rules at its folded size: a padded 3x3x3 stride-1 conv is 2-D
    Winograd over N*Do images of T*C channels, and the optimized IR holds no 3-D conv."""
    g, _ = _graph("fprop", [2, 64, 8, 28, 28], [64, 64, 3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1])
    explained = g.explain(arch="znver3")
    assert "3 depth taps gathered into 192 channels, batch 16 (cpu-conv-depth-fold)" in explained
    assert "cpu-conv-winograd (F(4x4, 3x3)" in explained
    optimized = g.mlir("optimized", fs.Backend.CPU, "znver3")
    assert "torch.aten.convolution" not in optimized
    assert "tensor<2x8x28x28x3x64xf32>" in optimized  # the depth taps' gather


def test_depth_fold_1x1x1_is_one_gemm(cpu, rng):
    """A 1x1x1 stride-1 conv folds into a 1x1 2-D conv with no gather (a reshape): 2 dispatches on
    AVX2 (the filter's transposition and the GEMM), bias + relu fused into the GEMM's."""
    g, ins = _graph("fprop", [2, 256, 4, 28, 28], [128, 256, 1, 1, 1], [0] * 3, [1] * 3, [1] * 3, epilogue=True)
    arch = arch_running_here("znver3")
    assert "linalg.generic" not in g.mlir("optimized", fs.Backend.CPU, arch).split("linalg.matmul")[0]
    run_and_check(g, fs.Handle(fs.Backend.CPU, arch=arch), {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)
    assert g.compile_stats.dispatch_count == 2


@pytest.mark.parametrize("io", [fs.DataType.HALF, fs.DataType.BFLOAT16], ids=["f16", "bf16"])
def test_depth_fold_low_precision(cpu, rng, io):
    """f16/bf16 3-D convs fold too (computed in f32 by the 2-D path, rounded once)."""
    g, ins = _graph("fprop", [1, 8, 5, 10, 10], [16, 8, 3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1], io=io)
    assert "cpu-conv-depth-fold" in g.explain()
    run_and_check(g, cpu, {t: random_array(t, rng) for t in ins}, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize(
    "kind, layout, stride, why",
    [
        ("fprop", "NCDHW", [1, 1, 1], "channels-first: no channels-last 2-D conv to fold into"),
        ("dgrad", LAYOUT, [2, 2, 2], "a strided data gradient is a transposed conv"),
    ],
)
def test_depth_fold_only_where_it_applies(cpu, rng, kind, layout, stride, why):
    """What is not folded says so (no fold in g.explain, no 2-D rule claims it) and stays correct."""
    g, ins = _graph(kind, [1, 8, 6, 10, 10], [16, 8, 3, 3, 3], [1, 1, 1], stride, [1, 1, 1], layout=layout)
    explained = g.explain()
    assert "depth-fold" not in explained, why
    for name in ("cpu-conv-winograd", "cpu-conv-im2col-gemm", "cpu-conv-dgrad-col2im-gemm", "cpu-conv-wgrad-gemm"):
        assert name not in explained, (why, explained)
    run_and_check(g, cpu, {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)


def test_depth_fold_not_on_amdgpu():
    """The fold is a CPU lowering: an AMD GPU target's explain keeps the 3-D conv."""
    g, _ = _graph("fprop", [1, 8, 6, 10, 10], [16, 8, 3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1])
    assert "depth-fold" not in g.explain(fs.Backend.AMDGPU, "gfx942")


def test_depth_fold_epilogue_adds_no_dispatch(cpu):
    """bias + relu after a folded 3x3x3 conv (2-D Winograd) fuse into its output transform, as after
    a 2-D conv: the same dispatch count with and without them."""
    shape = ([2, 16, 6, 12, 12], [24, 16, 3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1])
    counts = []
    for epilogue in (False, True):
        g, _ = _graph("fprop", *shape, epilogue=epilogue)
        g.compile(cpu)
        counts.append(g.compile_stats.dispatch_count)
    assert counts[0] == counts[1], counts


def test_depth_fold_not_with_dynamic_dims(cpu, rng):
    """A 3-D conv with a dynamic batch stays IREE's 3-D conv (fusilli-conv-layout rewrites static convs
    only), and g.explain does not claim the fold; it runs at two batch sizes."""
    g = fs.Graph(name="depth_fold_dynamic")
    x_dim, w_dim = [2, 16, 6, 12, 12], [24, 16, 3, 3, 3]
    x = g.tensor(name="x", dim=x_dim, stride=fs.strides(x_dim, LAYOUT), dynamic_dims=[0])
    w = g.tensor(name="w", dim=w_dim, stride=fs.strides(w_dim, LAYOUT))
    y = g.conv_fprop(x, w, padding=[1, 1, 1], stride=[1, 1, 1], dilation=[1, 1, 1], name="conv")
    y.set_output(True)
    g.validate()
    assert "depth-fold" not in g.explain()
    assert "torch.aten.convolution" in g.mlir("optimized")
    g.compile(cpu)
    filt = random_array(w, rng)
    for n in (2, 3):
        xs = rng.standard_normal([n, 6, 12, 12, 16]).astype(np.float32).transpose(0, 4, 1, 2, 3)
        out = np.empty([n, 6, 12, 12, 24], np.float32).transpose(0, 4, 1, 2, 3)
        g.execute({x: xs, w: filt, y: out})
        want = conv_forward(
            xs.astype(np.float64), filt.astype(np.float64), padding=[1] * 3, stride=[1] * 3, dilation=[1] * 3, groups=1
        )
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kind", ["fprop", "wgrad"])
def test_depth_fold_on_the_split_executor(monkeypatch, cpu, rng, kind):
    """A folded 3-D graph run as two half-batch calls (FUSILLI_CPU_EXECUTOR=split; a weight gradient's
    halves each a partial DW, added) matches the reference: each half folds its own N/2 * Do images."""
    monkeypatch.setenv("FUSILLI_CPU_EXECUTOR", "split")
    g, ins = _graph(kind, [4, 16, 4, 10, 10], [24, 16, 3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1])
    assert "depth-fold" in g.explain()
    # (Winograd F(4x4) over 48 channels: outputs of magnitude ~20, its error ~1e-4 of that.)
    run_and_check(g, cpu, {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=2e-3)
    assert g._compiled.executor == "split", g.explain()
