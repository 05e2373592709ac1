"""Epilogue fusion after every anchor: an anchor followed by a short pointwise
epilogue (bias add / scale / relu) computes the reference's numbers, the
optimized IR holds exactly one more ``linalg.generic`` than the anchor alone (the
fused epilogue), and the CPU dispatch count equals the anchor's own."""

import pytest
from conftest import random_array, run_and_check

import fusilli as fs

P = fs.NormPhase


def _t(g, name, dims, layout="contiguous"):
    return g.tensor(name=name, dim=dims, stride=fs.strides(dims, layout))


def _anchor(g, kind, nhwc):
    """Builds the anchor; returns (its main output, inputs, extra outputs, channel dims for a bias)."""
    lay = "NHWC" if nhwc else "NCHW"
    if kind == "matmul":
        a, b = _t(g, "a", [8, 16]), _t(g, "b", [16, 12])
        return g.matmul(a, b, name="mm"), [a, b], [], [1, 12]
    if kind == "conv_fprop":
        x, w = _t(g, "x", [1, 4, 6, 6], lay), _t(g, "w", [8, 4, 3, 3], lay)
        y = g.conv_fprop(x, w, padding=[0, 0], stride=[1, 1], dilation=[1, 1], name="conv")
        return y, [x, w], [], [1, 8, 1, 1]
    if kind == "conv_dgrad":
        dy, w = _t(g, "dy", [1, 8, 4, 4], lay), _t(g, "w", [8, 4, 3, 3], lay)
        dx = g.conv_dgrad(dy, w, padding=[0, 0], stride=[1, 1], dilation=[1, 1], name="dgrad")
        dx.set_dim([1, 4, 6, 6])
        return dx, [dy, w], [], [1, 4, 1, 1]
    if kind == "conv_wgrad":
        dy, x = _t(g, "dy", [1, 8, 4, 4], lay), _t(g, "x", [1, 4, 6, 6], lay)
        dw = g.conv_wgrad(dy, x, padding=[0, 0], stride=[1, 1], dilation=[1, 1], name="wgrad")
        dw.set_dim([8, 4, 3, 3])
        return dw, [dy, x], [], [8, 1, 1, 1]
    if kind == "batchnorm":
        x = _t(g, "x", [2, 4, 3, 3], lay)
        y, m, v = g.batchnorm(x, epsilon=1e-5, momentum=0.1, phase=P.TRAINING, name="bn")
        return y, [x], [m, v], [1, 4, 1, 1]
    if kind in ("layernorm", "layernorm_train"):
        x = _t(g, "x", [2, 4, 3, 3], lay)
        phase = P.TRAINING if kind == "layernorm_train" else P.INFERENCE
        y, m, v = g.layernorm(x, epsilon=1e-5, phase=phase, name="ln")
        return y, [x], [t for t in (m, v) if t is not None], [1, 4, 1, 1]
    if kind == "rmsnorm":
        x = _t(g, "x", [2, 4, 3, 3], lay)
        y, _ = g.rmsnorm(x, epsilon=1e-5, phase=P.INFERENCE, name="rms")
        return y, [x], [], [1, 4, 1, 1]
    if kind == "sdpa":
        q, k, v = (_t(g, n, [1, 2, 8, 16]) for n in ("q", "k", "v"))
        return g.sdpa(q, k, v, name="sdpa"), [q, k, v], [], [1, 1, 1, 16]
    if kind == "reduction":
        x = _t(g, "x", [2, 4, 3, 3], lay)
        return g.reduction(x, mode="ADD", axes=[2, 3], name="sum"), [x], [], [1, 4, 1, 1]
    raise AssertionError(kind)


def _graph(kind, nhwc, epilogue):
    g = fs.Graph(name=f"anchor_{kind}_{'nhwc' if nhwc else 'nchw'}_{int(epilogue)}")
    y, ins, extra, bias_dims = _anchor(g, kind, nhwc)
    if epilogue:
        bias = _t(g, "bias", bias_dims)
        ins.append(bias)
        y = g.relu(g.mul(g.add(y, bias, name="bias_add"), g.scalar(0.5), name="scale"), name="relu")
    y.set_output(True)
    for t in extra:
        t.set_output(True)
    g.validate()
    return g, ins


ENDS_IN_ELEMENTWISE = {"batchnorm", "layernorm", "layernorm_train"}

CASES = [
    ("matmul", False),
    ("conv_fprop", False),
    ("conv_fprop", True),
    ("conv_dgrad", True),
    ("conv_wgrad", False),
    ("batchnorm", True),
    ("layernorm", False),
    ("layernorm_train", True),
    ("rmsnorm", True),
    ("sdpa", False),
    ("reduction", True),
]


@pytest.mark.parametrize(("kind", "nhwc"), CASES, ids=[f"{k}-{'nhwc' if n else 'nchw'}" for k, n in CASES])
def test_epilogue_adds_no_dispatch(cpu, rng, kind, nhwc):
    alone, _ = _graph(kind, nhwc, False)
    alone.compile(cpu)
    g, ins = _graph(kind, nhwc, True)
    run_and_check(g, cpu, {t: random_array(t, rng) for t in ins}, rtol=1e-4, atol=1e-4)
    generics = g.mlir("optimized").count("linalg.generic")
    # Norms emitted as a composite already end in an elementwise region: the epilogue joins it.
    added = 0 if kind in ENDS_IN_ELEMENTWISE else 1
    assert generics == alone.mlir("optimized").count("linalg.generic") + added
    assert g.compile_stats.dispatch_count == alone.compile_stats.dispatch_count
