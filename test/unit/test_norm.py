"""batchnorm / layernorm / rmsnorm: numerics against the NumPy reference (inference
and training, NCHW and NHWC, f32 and f16), the reference against closed forms, and
one test per validation rule."""

import numpy as np
import pytest
from conftest import random_array, run_and_check

import fusilli as fs
from fusilli.reference.norm import normalize

P = fs.NormPhase
DIMS = [2, 4, 3, 3]


def _x(g, dims, channels_last, name="x"):
    return g.tensor(name=name, dim=dims, stride=fs.strides(dims, "NHWC" if channels_last else "contiguous"))


def _check(g, cpu, rng, ins, tol=1e-4, positive=()):
    g.validate()
    arrays = {t: random_array(t, rng) for t in ins}
    for t in positive:  # variances
        arrays[t] = random_array(t, rng, 0.5, 1.5)
    run_and_check(g, cpu, arrays, rtol=tol, atol=tol)


@pytest.mark.parametrize("phase", [P.INFERENCE, P.TRAINING], ids=["infer", "train"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
def test_batchnorm(cpu, rng, phase, channels_last):
    g = fs.Graph(name=f"bn_{phase.name}_{channels_last}")
    x = _x(g, DIMS, channels_last)
    scale, bias, mean, var = (g.tensor(name=n, dim=[4]) for n in ("scale", "bias", "mean", "var"))
    y, saved_mean, saved_inv_var = g.batchnorm(
        x, scale, bias, mean, var, epsilon=1e-5, momentum=0.1, phase=phase, name="bn"
    )
    y.set_output(True)
    if phase is P.TRAINING:
        saved_mean.set_output(True)
        saved_inv_var.set_output(True)
    else:
        assert saved_mean is None and saved_inv_var is None
    _check(g, cpu, rng, [x, scale, bias, mean, var], positive=[var])
    assert y.stride == x.stride
    if phase is P.TRAINING:
        assert saved_mean.dim == [4] and saved_inv_var.stride == [1]


def test_batchnorm_train_f16_no_affine(cpu, rng):
    g = fs.Graph(name="bn_f16", io_data_type=fs.DataType.HALF)
    x = _x(g, DIMS, True)
    y, m, v = g.batchnorm(x, epsilon=1e-3, momentum=0.1, phase=P.TRAINING, name="bn")
    for t in (y, m, v):
        t.set_output(True)
    _check(g, cpu, rng, [x], tol=1e-2)


# DIMS shifts by the whole row (a quarter of C or H would be 1 long); [2, 8, 5, 7] by its
# leading quarter, cut along C (NCHW) or H (NHWC): both stay one dispatch.
@pytest.mark.parametrize("dims", [DIMS, [2, 8, 5, 7]], ids=["whole_row_shift", "quarter_row_shift"])
@pytest.mark.parametrize("phase", [P.INFERENCE, P.TRAINING], ids=["infer", "train"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
def test_layernorm(cpu, rng, phase, channels_last, dims):
    g = fs.Graph(name=f"ln_{phase.name}_{channels_last}_{len(dims)}")
    x = _x(g, dims, channels_last)
    scale, bias = _x(g, [1, *dims[1:]], channels_last, "scale"), _x(g, [1, *dims[1:]], channels_last, "bias")
    eps = g.scalar(1e-5) if channels_last else 1e-5  # a scalar tensor works as well as a float
    y, mean, inv_var = g.layernorm(x, scale, bias, epsilon=eps, phase=phase, name="ln")
    y.set_output(True)
    if phase is P.TRAINING:
        mean.set_output(True)
        inv_var.set_output(True)
    else:
        assert mean is None and inv_var is None
    _check(g, cpu, rng, [x, scale, bias])
    assert g.compile_stats.dispatch_count == 1
    if phase is P.TRAINING:
        assert mean.dim == [2, 1, 1, 1] and inv_var.stride == [1, 1, 1, 1]


def test_layernorm_train_f16_no_affine(cpu, rng):
    g = fs.Graph(name="ln_f16", io_data_type=fs.DataType.HALF)
    x = _x(g, [2, 3, 8], False)
    y, m, v = g.layernorm(x, epsilon=1e-5, phase=P.TRAINING, name="ln")
    for t in (y, m, v):
        t.set_output(True)
    _check(g, cpu, rng, [x], tol=1e-2)


@pytest.mark.parametrize("phase", [P.INFERENCE, P.TRAINING], ids=["infer", "train"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
def test_rmsnorm(cpu, rng, phase, channels_last):
    g = fs.Graph(name=f"rms_{phase.name}_{channels_last}")
    x = _x(g, DIMS, channels_last)
    scale = _x(g, [1, *DIMS[1:]], channels_last, "scale")
    y, inv_rms = g.rmsnorm(x, scale, epsilon=1e-5, phase=phase, name="rms")
    y.set_output(True)
    if phase is P.TRAINING:
        inv_rms.set_output(True)
    else:
        assert inv_rms is None
    _check(g, cpu, rng, [x, scale])


def test_rmsnorm_train_f16_rank3(cpu, rng):
    g = fs.Graph(name="rms_f16", io_data_type=fs.DataType.HALF)
    x = _x(g, [2, 3, 8], False)
    scale = _x(g, [1, 3, 8], False, "scale")
    y, r = g.rmsnorm(x, scale, epsilon=1e-5, phase=P.TRAINING, name="rms")
    y.set_output(True)
    r.set_output(True)
    _check(g, cpu, rng, [x, scale], tol=1e-2)


# ---- the reference against closed forms ------------------------------------------------
def _ref(g, inputs):
    from fusilli import reference

    return reference.run(g, inputs)


def test_reference_layernorm_closed_form():
    g = fs.Graph(name="g")
    x = g.tensor(name="x", dim=[1, 4])
    y, m, v = g.layernorm(x, epsilon=0.0, phase=P.TRAINING, name="ln")
    for t in (y, m, v):
        t.set_output(True)
    out = _ref(g, {x: np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)})
    # mean 2.5, biased variance 1.25
    np.testing.assert_allclose(out[m.name], [[2.5]])
    np.testing.assert_allclose(out[v.name], [[1 / np.sqrt(1.25)]], rtol=1e-6)
    np.testing.assert_allclose(out[y.name], [[-1.5, -0.5, 0.5, 1.5]] / np.sqrt(1.25), rtol=1e-6)


def test_reference_rmsnorm_closed_form():
    g = fs.Graph(name="g")
    x = g.tensor(name="x", dim=[1, 2])
    s = g.tensor(name="s", dim=[1, 2])
    y, r = g.rmsnorm(x, s, epsilon=0.5, phase=P.TRAINING, name="rms")
    y.set_output(True)
    r.set_output(True)
    out = _ref(g, {x: np.array([[3.0, 4.0]], np.float32), s: np.array([[1.0, 2.0]], np.float32)})
    inv = 1 / np.sqrt((9 + 16) / 2 + 0.5)  # mean of squares 12.5, + eps = 13
    np.testing.assert_allclose(out[r.name], [[inv]], rtol=1e-6)
    np.testing.assert_allclose(out[y.name], [[3 * inv, 8 * inv]], rtol=1e-6)


def test_reference_batchnorm_closed_form():
    g = fs.Graph(name="g")
    x = g.tensor(name="x", dim=[2, 2, 1])
    s, b = g.tensor(name="s", dim=[2]), g.tensor(name="b", dim=[2])
    y, m, v = g.batchnorm(x, s, b, epsilon=0.0, momentum=0.1, phase=P.TRAINING, name="bn")
    for t in (y, m, v):
        t.set_output(True)
    xs = np.array([[[1.0], [10.0]], [[3.0], [30.0]]], np.float32)  # channel 0: {1, 3}; channel 1: {10, 30}
    out = _ref(g, {x: xs, s: np.array([2.0, 1.0], np.float32), b: np.array([0.0, 5.0], np.float32)})
    np.testing.assert_allclose(out[m.name], [2.0, 20.0])
    np.testing.assert_allclose(out[v.name], [1.0, 0.1], rtol=1e-6)  # biased std 1 and 10
    np.testing.assert_allclose(out[y.name], [[[-2.0], [4.0]], [[2.0], [6.0]]], rtol=1e-6)


def test_reference_normalize_is_zero_mean_unit_variance(rng):
    x = rng.standard_normal([3, 5, 4]) * 7 + 2
    y, _, _ = normalize(x, (1, 2), 0.0)
    np.testing.assert_allclose(y.mean(axis=(1, 2)), 0, atol=1e-12)
    np.testing.assert_allclose(y.var(axis=(1, 2)), 1, rtol=1e-12)


# ---- validation ---------------------------------------------------------------------------
def _expect(g, code, *fragments):
    with pytest.raises(fs.FusilliError) as info:
        g.validate()
    assert info.value.code == code
    for f in fragments:
        assert f in str(info.value), str(info.value)


def _graph_ln(**kwargs):
    g = fs.Graph(name="g")
    x = g.tensor(name="x", dim=DIMS)
    outs = g.layernorm(x, name="ln", **kwargs)
    outs[0].set_output(True)
    return g, x, outs


def test_phase_not_set():
    g, _, _ = _graph_ln(epsilon=1e-5)
    _expect(g, fs.ErrorCode.ATTRIBUTE_NOT_SET, "layernorm 'ln'", "phase not set")


def test_epsilon_not_set():
    g, _, _ = _graph_ln(phase=P.INFERENCE)
    _expect(g, fs.ErrorCode.ATTRIBUTE_NOT_SET, "layernorm 'ln'", "EPSILON")


def test_batchnorm_momentum_not_set():
    g = fs.Graph(name="g")
    x = g.tensor(name="x", dim=DIMS)
    g.batchnorm(x, epsilon=1e-5, phase=P.TRAINING, name="bn")[0].set_output(True)
    _expect(g, fs.ErrorCode.ATTRIBUTE_NOT_SET, "batchnorm 'bn'", "MOMENTUM")


def test_epsilon_must_be_scalar_constant():
    g = fs.Graph(name="g")
    x, eps = g.tensor(name="x", dim=DIMS), g.tensor(name="eps", dim=[1])
    g.rmsnorm(x, epsilon=eps, phase=P.INFERENCE, name="rms")[0].set_output(True)
    _expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "rmsnorm 'rms'", "EPSILON 'eps'", "scalar constant")


def test_bad_epsilon_and_phase_arguments():
    g = fs.Graph(name="g")
    x = g.tensor(name="x", dim=DIMS)
    with pytest.raises(fs.FusilliError) as info:
        g.layernorm(x, epsilon="small", phase=P.INFERENCE)
    assert info.value.code == fs.ErrorCode.INVALID_ARGUMENT
    with pytest.raises(fs.FusilliError) as info:
        g.layernorm(x, epsilon=1e-5, phase="sometimes")
    assert info.value.code == fs.ErrorCode.INVALID_ARGUMENT


def test_batchnorm_inference_requires_running_stats():
    g = fs.Graph(name="g")
    x, var = g.tensor(name="x", dim=DIMS), g.tensor(name="var", dim=[4])
    g.batchnorm(x, None, None, None, var, epsilon=1e-5, momentum=0.1, phase=P.INFERENCE, name="bn")[0].set_output(True)
    _expect(g, fs.ErrorCode.ATTRIBUTE_NOT_SET, "batchnorm 'bn'", "MEAN")


def test_batchnorm_channel_tensor_dims():
    g = fs.Graph(name="g")
    x, scale = g.tensor(name="x", dim=DIMS), g.tensor(name="scale", dim=[1, 4, 1, 1])
    g.batchnorm(x, scale, epsilon=1e-5, momentum=0.1, phase=P.TRAINING, name="bn")[0].set_output(True)
    _expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "batchnorm 'bn'", "SCALE 'scale'", "[4]")


def test_layernorm_scale_dims():
    g = fs.Graph(name="g")
    x, scale = g.tensor(name="x", dim=DIMS), g.tensor(name="scale", dim=[4])
    g.layernorm(x, scale, epsilon=1e-5, phase=P.INFERENCE, name="ln")[0].set_output(True)
    _expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "layernorm 'ln'", "SCALE 'scale'", "[1, 4, 3, 3]")


def test_stats_must_be_dense():
    g = fs.Graph(name="g")
    x = g.tensor(name="x", dim=DIMS)
    y, saved_mean, _ = g.batchnorm(x, epsilon=1e-5, momentum=0.1, phase=P.TRAINING, name="bn")
    saved_mean.set_stride([2]).set_output(True)
    _expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "batchnorm 'bn'", "SAVED_MEAN 'bn_SAVED_MEAN'")


def test_stats_dims():
    g = fs.Graph(name="g")
    x = g.tensor(name="x", dim=DIMS)
    y, inv_rms = g.rmsnorm(x, epsilon=1e-5, phase=P.TRAINING, name="rms")
    inv_rms.set_dim([2, 4, 1, 1]).set_output(True)
    _expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "rmsnorm 'rms'", "INV_RMS", "[2, 1, 1, 1]")


def test_x_rank_at_least_2():
    g = fs.Graph(name="g")
    x = g.tensor(name="x", dim=[4])
    g.rmsnorm(x, epsilon=1e-5, phase=P.INFERENCE, name="rms")[0].set_output(True)
    _expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "rmsnorm 'rms'", "X 'x'", "rank >= 2")


def test_y_dims_must_match_x():
    g, _, (y, _, _) = _graph_ln(epsilon=1e-5, phase=P.INFERENCE)
    y.set_dim([2, 4, 3, 1])
    _expect(g, fs.ErrorCode.INVALID_ATTRIBUTE, "layernorm 'ln'", "Y 'ln_Y'", "do not match")


def test_x_layout_contiguous_or_channels_last():
    g = fs.Graph(name="g")
    x = g.tensor(name="x", dim=DIMS, stride=[36, 1, 4, 12])  # N, W, H, C order
    g.batchnorm(x, epsilon=1e-5, momentum=0.1, phase=P.TRAINING, name="bn")[0].set_output(True)
    _expect(g, fs.ErrorCode.NOT_IMPLEMENTED, "batchnorm 'bn'", "X 'x'", "neither contiguous nor channels-last")


def test_json_roundtrip_keeps_phase_and_pruned_outputs():
    g, _, (y, _, _) = _graph_ln(epsilon=1e-5, phase=P.INFERENCE)
    g.validate()
    g2 = fs.Graph.from_json(g.to_json())
    g2.validate()
    assert g2.nodes[0].attrs.phase is P.INFERENCE
    assert g2.emit_mlir() == g.emit_mlir()


def test_layernorm_large_mean_accuracy(cpu, rng):
    """The one-pass (shifted sums) form keeps f32 accuracy when |mean| >> std."""
    g = fs.Graph(name="ln_large_mean")
    x = g.tensor(name="x", dim=[4, 64])
    y, _, _ = g.layernorm(x, epsilon=1e-5, phase=P.INFERENCE, name="ln")
    y.set_output(True)
    g.validate()
    run_and_check(g, cpu, {x: random_array(x, rng, 999.0, 1001.0)}, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dtype", [fs.DataType.FLOAT, fs.DataType.BFLOAT16], ids=["f32", "bf16"])
def test_layernorm_train_large_one_dispatch(cpu, rng, dtype):
    """A layernorm of >= CPU_LAYERNORM_MIN_FLOPS takes the O3 CPU rule: training's two stats
    reductions and Y fuse into one dispatch, with the reference's numerics."""
    from fusilli.backend.rules import CPU_LAYERNORM_MIN_FLOPS, compile_flags

    g = fs.Graph(name=f"ln_train_large_{dtype.name}", io_data_type=dtype, compute_data_type=fs.DataType.FLOAT)
    x = g.tensor(name="x", dim=[256, 640])
    scale, bias = g.tensor(name="scale", dim=[1, 640]), g.tensor(name="bias", dim=[1, 640])
    y, mean, inv_var = g.layernorm(x, scale, bias, epsilon=1e-5, phase=P.TRAINING, name="ln")
    for t in (y, mean, inv_var):
        t.set_output(True)
    g.validate()
    (w,) = g.workloads()
    assert w.kind == "layernorm" and w.flops == 8 * 256 * 640 >= CPU_LAYERNORM_MIN_FLOPS
    assert compile_flags(g.nodes, g.target("cpu")) == ["--iree-opt-level=O3"]  # O3 fuses aggressively too
    tol = 1e-4 if dtype == fs.DataType.FLOAT else 2e-2
    _check(g, cpu, rng, [x, scale, bias], tol=tol)
    assert g.compile_stats.dispatch_count == 1


# What keeps a static layernorm's two row reductions and Y one CPU dispatch at any size.
AGGRESSIVE_FUSION = "--iree-dispatch-creation-enable-aggressive-fusion"


def test_layernorm_small_and_dynamic_keep_default_flags():
    from fusilli.backend.rules import compile_flags

    g = fs.Graph(name="ln_small")
    x = g.tensor(name="x", dim=DIMS)
    y, _, _ = g.layernorm(x, epsilon=1e-5, phase=P.TRAINING, name="ln")
    y.set_output(True)
    g.validate()
    assert compile_flags(g.nodes, g.target("cpu")) == [AGGRESSIVE_FUSION]  # no O3 below the threshold
