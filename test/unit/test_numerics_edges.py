"""Edge values through every pointwise mode, the norms and attention: ±0, denormals,
±inf, NaN, the largest finite values and huge trig arguments.

Each case is checked against fusilli's NumPy reference (what CI runs) and, where
PyTorch is installed, against PyTorch itself. The CPU backend computes with
denormals flushed to zero (IREE's runtime sets FTZ/DAZ for every dispatch; see
README "Numerics"), so the reference runs with ``denormals_are_zero=True`` and
the policy itself is pinned by exact expected values.
"""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest
from conftest import run_and_check

import fusilli as fs
from fusilli import reference
from fusilli.ops.pointwise import MODES

M = fs.PointwiseMode
HAVE_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="PyTorch is not installed (the bench extra)")

F32_MAX = float(np.finfo(np.float32).max)
F32_TINY = float(np.finfo(np.float32).smallest_normal)
DENORMALS = [1e-40, -1e-40, 1.4e-45]
# The f32 edge values every mode sees (as x, and as each operand of binary modes).
EDGES = [0.0, -0.0, *DENORMALS, F32_TINY, -F32_TINY, 1e-30, 0.5, -1.0, 1.0, 2.5, -3.5, 88.0, -104.0, 1e9, -1e30]
EDGES += [F32_MAX, -F32_MAX, math.inf, -math.inf, math.nan]


def _edge_inputs(dtype: np.dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x [N] (unary operand), a [N, 1] and b [1, N] (every pair of edges for binary modes)."""
    with np.errstate(over="ignore"):
        x = np.array(EDGES, dtype=np.float64).astype(dtype)
    return x, x.reshape(-1, 1).copy(), x.reshape(1, -1).copy()


def _matches(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """Elementwise: equal NaN-ness, equal infinities, finite values within tolerance."""
    got64, want64 = np.broadcast_arrays(np.asarray(got, np.float64), np.asarray(want, np.float64))
    with np.errstate(invalid="ignore"):
        close = np.abs(got64 - want64) <= atol + rtol * np.abs(want64)
    same_special = (np.isnan(got64) & np.isnan(want64)) | (np.isinf(want64) & (got64 == want64))
    return np.where(np.isfinite(want64), close & np.isfinite(got64), same_special)


def _compare(got: np.ndarray, wants: list[np.ndarray], name: str, rtol: float, atol: float) -> None:
    """Every element of ``got`` matches the same element of one of ``wants``."""
    ok = np.logical_or.reduce([_matches(got, w, rtol, atol) for w in wants])
    bad = np.argwhere(~ok)
    assert bad.size == 0, (
        f"{name}: {len(bad)} mismatches, first at {bad[:3].tolist()}: got "
        f"{[float(np.asarray(got, np.float64)[tuple(i)]) for i in bad[:3]]}, want "
        f"{[[float(np.broadcast_to(np.asarray(w, np.float64), np.shape(got))[tuple(i)]) for w in wants] for i in bad[:3]]}"
    )


def _all_modes_graph(dtype: fs.DataType) -> tuple[fs.Graph, dict[str, fs.TensorAttr]]:
    g = fs.Graph(name=f"edges_{dtype.name.lower()}", io_data_type=dtype, intermediate_data_type=dtype)
    t = {"x": g.tensor(name="x", dim=[len(EDGES)]), "a": g.tensor(name="a", dim=[len(EDGES), 1])}
    t["b"] = g.tensor(name="b", dim=[1, len(EDGES)])
    cond = g.cmp_gt(t["a"], t["b"], name="cond")
    for m, spec in MODES.items():
        operands = [t["x"]] if spec.arity == 1 else [t["a"], t["b"]] if spec.arity == 2 else [cond, t["a"], t["b"]]
        g.pointwise(*operands, mode=m, name=f"op_{m.value}").set_output(True).set_name(f"out_{m.value}")
    return g.validate(), t


# (rtol, atol) per storage type: the reference is exact (float64), fusilli rounds in
# f32 and once to the output type.
EDGE_TOLERANCE = {fs.DataType.FLOAT: (2e-6, 1e-6), fs.DataType.HALF: (2e-3, 1e-3), fs.DataType.BFLOAT16: (1e-2, 1e-2)}
# Backward formulas that cancel in f32 as PyTorch writes them (1 - tanh(x)^2 near |tanh| = 1,
# 1 + erf(x/sqrt 2) for x << 0): one f32 ulp of tanh/erf becomes ~1e-5 relative in the result.
CANCELLING_MODES = {M.GELU_BWD: 5e-5, M.GELU_APPROX_TANH_BWD: 5e-5, M.TANH_BWD: 5e-5}


@pytest.mark.parametrize("dtype", list(EDGE_TOLERANCE), ids=lambda d: d.name.lower())
def test_every_mode_at_edge_values(cpu, dtype):
    """All 43 modes on ±0, denormals, ±inf, NaN, ±max, huge values, against the reference."""
    g, t = _all_modes_graph(dtype)
    x, a, b = _edge_inputs(dtype.numpy_dtype)
    inputs = {t["x"]: x, t["a"]: a, t["b"]: b}
    g.compile(cpu)
    outputs = {o: fs.empty(o) for o in g.output_tensors()}
    g.execute({**inputs, **outputs})
    # Denormals may be read or written as zero (README, "Numerics"): each result matches
    # the reference computed with denormals flushed, or the one computed without.
    flushed = reference.run(g, inputs, denormals_are_zero=True)
    kept = reference.run(g, inputs)
    rtol, atol = EDGE_TOLERANCE[dtype]
    for o, got in outputs.items():
        mode = o.producer.attrs.mode
        _compare(got, [flushed[o.name], kept[o.name]], o.name, max(rtol, CANCELLING_MODES.get(mode, 0.0)), atol)


def _torch_modes():
    """Each mode as PyTorch computes it, on f32 tensors (operands in fusilli's slot order)."""
    import torch
    import torch.nn.functional as F

    aten = torch.ops.aten
    return {
        M.ABS: torch.abs,
        M.ADD: torch.add,
        M.ADD_SQUARE: lambda a, b: a + b * b,
        M.BINARY_SELECT: torch.where,
        M.CEIL: torch.ceil,
        M.CMP_EQ: torch.eq,
        M.CMP_NEQ: torch.ne,
        M.CMP_LT: torch.lt,
        M.CMP_LE: torch.le,
        M.CMP_GT: torch.gt,
        M.CMP_GE: torch.ge,
        M.DIV: torch.div,
        M.ELU_FWD: F.elu,
        M.ERF: torch.erf,
        M.EXP: torch.exp,
        M.FLOOR: torch.floor,
        M.GELU_FWD: F.gelu,
        M.GELU_APPROX_TANH_FWD: lambda x: F.gelu(x, approximate="tanh"),
        M.GELU_BWD: lambda dy, x: aten.gelu_backward(dy, x),
        M.GELU_APPROX_TANH_BWD: lambda dy, x: aten.gelu_backward(dy, x, approximate="tanh"),
        M.IDENTITY: lambda x: x.clone(),
        M.LOG: torch.log,
        M.LOGICAL_AND: torch.logical_and,
        M.LOGICAL_OR: torch.logical_or,
        M.LOGICAL_NOT: torch.logical_not,
        M.MAX_OP: torch.maximum,
        M.MIN_OP: torch.minimum,
        M.MUL: torch.mul,
        M.NEG: torch.neg,
        M.RECIPROCAL: torch.reciprocal,
        M.RELU_FWD: torch.relu,
        M.RELU_BWD: lambda dy, x: aten.threshold_backward(dy, x, 0),
        M.RSQRT: torch.rsqrt,
        M.SIGMOID_FWD: torch.sigmoid,
        M.SIN: torch.sin,
        M.SOFTPLUS_FWD: F.softplus,
        M.SQRT: torch.sqrt,
        M.SUB: torch.sub,
        M.SWISH_FWD: F.silu,
        M.SWISH_BWD: lambda dy, x: aten.silu_backward(dy, x),
        M.TAN: torch.tan,
        M.TANH_FWD: torch.tanh,
        M.TANH_BWD: lambda dy, x: aten.tanh_backward(dy, torch.tanh(x)),
    }


@needs_torch
def test_every_mode_at_edge_values_matches_torch(cpu):
    """The f32 edge sweep against PyTorch itself: each result is PyTorch's, or (denormal
    policy) the reference's with denormals flushed."""
    import torch

    g, t = _all_modes_graph(fs.DataType.FLOAT)
    x, a, b = _edge_inputs(np.float32)
    inputs = {t["x"]: x, t["a"]: a, t["b"]: b}
    g.compile(cpu)
    outputs = {o: fs.empty(o) for o in g.output_tensors()}
    g.execute({**inputs, **outputs})
    flushed = reference.run(g, inputs, denormals_are_zero=True)
    tx = torch.from_numpy(x)
    # The backward ops want same-shape operands (oneDNN refuses broadcasting ones).
    ta, tb = (torch.from_numpy(v).expand(len(EDGES), len(EDGES)).contiguous() for v in (a, b))
    modes = _torch_modes()
    assert set(modes) == set(M)
    rtol, atol = EDGE_TOLERANCE[fs.DataType.FLOAT]
    for o, got in outputs.items():
        mode = o.producer.attrs.mode
        arity = MODES[mode].arity
        operands = [tx] if arity == 1 else [ta, tb] if arity == 2 else [ta > tb, ta, tb]
        want = modes[mode](*operands).numpy()
        _compare(got, [want, flushed[o.name]], o.name, max(rtol, CANCELLING_MODES.get(mode, 0.0)), atol)


def test_denormal_policy_is_flush_to_zero(cpu):
    """The exact CPU policy: denormal inputs read as zero, denormal results written as zero."""
    x = np.array([1e-40, -1e-40, 1.4e-45, 0.0], np.float32)
    g = fs.Graph(name="denormal_policy")
    xt = g.tensor(name="x", dim=[4])
    zero = g.tensor(name="zero", dim=[4])
    tiny = g.tensor(name="tiny", dim=[4])
    outs = {
        "ceil": g.ceil(xt),
        "log": g.log(xt),
        "add0": g.add(xt, zero),
        "identity_mul": g.mul(tiny, tiny),
    }
    for name, o in outs.items():
        o.set_name(name).set_output(True)
    g.validate().compile(cpu)
    arrays = {o: fs.empty(o) for o in outs.values()}
    g.execute({xt: x, zero: np.zeros(4, np.float32), tiny: np.full(4, 1e-20, np.float32), **arrays})
    got = {name: arrays[o] for name, o in outs.items()}
    np.testing.assert_array_equal(got["ceil"], [0.0, -0.0, 0.0, 0.0])
    assert np.all(np.signbit(got["ceil"]) == [False, True, False, False])
    np.testing.assert_array_equal(got["log"], [-np.inf] * 4)
    np.testing.assert_array_equal(got["add0"], [0.0] * 4)
    np.testing.assert_array_equal(got["identity_mul"], [0.0] * 4)  # 1e-40 is denormal


@needs_torch
def test_denormal_policy_matches_torch_flush_denormal(cpu):
    """What torch.set_flush_denormal(True) gives for the arithmetic modes (torch's log keeps
    denormals through integer bit tricks, so it is not among them)."""
    import torch

    x = np.array([1e-40, -1e-40, 1.4e-45, 2.0, -0.0], np.float32)
    y = np.array([0.0, 1e-40, -3.0, 1e-39, 0.0], np.float32)
    cases = {M.CEIL: (x,), M.FLOOR: (x,), M.ADD: (x, y), M.SUB: (x, y), M.MUL: (x, y), M.IDENTITY: (x,)}
    g = fs.Graph(name="denormal_vs_torch")
    xt, yt = g.tensor(name="x", dim=[5]), g.tensor(name="y", dim=[5])
    tensors = {id(x): xt, id(y): yt}
    outs = {m: g.pointwise(*[tensors[id(a)] for a in args], mode=m, name=f"op_{m.value}") for m, args in cases.items()}
    for o in outs.values():
        o.set_output(True)
    g.validate().compile(cpu)
    arrays = {o: fs.empty(o) for o in outs.values()}
    g.execute({xt: x, yt: y, **arrays})
    torch_fns = {
        M.CEIL: torch.ceil,
        M.FLOOR: torch.floor,
        M.ADD: torch.add,
        M.SUB: torch.sub,
        M.MUL: torch.mul,
        M.IDENTITY: lambda v: v + 0.0,
    }
    previous = torch.set_flush_denormal(True)
    try:
        for m, args in cases.items():
            want = torch_fns[m](*[torch.from_numpy(a) for a in args]).numpy()
            np.testing.assert_array_equal(arrays[outs[m]], want, err_msg=m.name)
    finally:
        torch.set_flush_denormal(False)
    assert previous


# --------------------------------------------------------------------------- sin / tan
def _huge_trig_arguments() -> np.ndarray:
    rng = np.random.default_rng(7)
    special = [0.0, -0.0, 1e-30, 1e-7, math.pi / 4, math.pi / 2, math.pi, 100.0, 1e4, 1e6, 1e9, -1e9, 1e20]
    special += [1e30, -1e30, 3e38, -F32_MAX, F32_MAX, 16777216.0, 6.2831855, math.inf, -math.inf, math.nan]
    magnitudes = 10.0 ** rng.uniform(-6, 38.5, 4000) * rng.choice([-1.0, 1.0], 4000)
    return np.concatenate([special, magnitudes]).astype(np.float32)


@pytest.mark.parametrize("mode", [M.SIN, M.TAN], ids=lambda m: m.value)
def test_trig_over_the_whole_f32_range(cpu, mode):
    """sin/tan of every f32 magnitude up to 3.4e38 agree with float64 math (was: sin(1e9) = 1.37e9)."""
    x = _huge_trig_arguments()
    g = fs.Graph(name=f"trig_range_{mode.value}")
    xt = g.tensor(name="x", dim=[x.size])
    g.pointwise(xt, mode=mode, name="f").set_output(True)
    with np.errstate(invalid="ignore"):
        want = (np.sin if mode == M.SIN else np.tan)(x.astype(np.float64))
    got = run_and_check(g, cpu, {xt: x}, rtol=1e-6, atol=1e-7)["f_OUT_0"]
    _compare(got, [want.astype(np.float32)], mode.value, rtol=1e-6, atol=1e-7)
    assert np.signbit(got[1])  # -0 -> -0


@needs_torch
@pytest.mark.parametrize("mode", [M.SIN, M.TAN], ids=lambda m: m.value)
def test_trig_matches_torch(cpu, mode):
    import torch

    x = _huge_trig_arguments()
    g = fs.Graph(name=f"trig_torch_{mode.value}")
    xt = g.tensor(name="x", dim=[x.size])
    y = g.pointwise(xt, mode=mode, name="f").set_output(True)
    g.validate().compile(cpu)
    got = fs.empty(y)
    g.execute({xt: x, y: got})
    want = (torch.sin if mode == M.SIN else torch.tan)(torch.from_numpy(x)).numpy()
    # Two correctly rounded-ish f32 results: within a few f32 ulps (relative) or 1e-7 (absolute).
    _compare(got, [want], mode.value, rtol=2e-6, atol=1e-7)


def test_two_over_pi_chunks_are_the_bits_of_two_over_pi():
    """The reduction's table, recomputed from Machin's formula in integer arithmetic."""
    from fusilli.ir.trig import TWO_OVER_PI_CHUNKS

    bits = 24 * len(TWO_OVER_PI_CHUNKS) + 64
    one = 1 << bits

    def arctan_inverse(n: int) -> int:  # arctan(1/n) * 2^bits
        total = term = one // n
        k, sign = 1, -1
        while term:
            term //= n * n
            k += 2
            total += sign * (term // k)
            sign = -sign
        return total

    pi = 4 * (4 * arctan_inverse(5) - arctan_inverse(239))
    two_over_pi = (2 << (2 * bits)) // pi  # 2/pi * 2^bits
    expected = [(two_over_pi >> (bits - 24 * (i + 1))) & 0xFFFFFF for i in range(len(TWO_OVER_PI_CHUNKS))]
    assert list(TWO_OVER_PI_CHUNKS) == expected


# --------------------------------------------------------------------------- add_square
def test_add_square_overflowing_square(cpu):
    """The square is rounded before the add (no FMA): -inf + 3e38^2 is NaN, as in PyTorch."""
    a = np.array([-np.inf, np.inf, 1.0, np.nan, -1e38, -0.0, 2.0, -F32_MAX], np.float32)
    b = np.array([3e38, 3e38, 2.0, 1.0, 1e19, 0.0, np.nan, 2e19], np.float32)
    g = fs.Graph(name="add_square_edges")
    at, bt = g.tensor(name="a", dim=[8]), g.tensor(name="b", dim=[8])
    y = g.add_square(at, bt, name="sq").set_output(True)
    g.validate().compile(cpu)
    got = fs.empty(y)
    g.execute({at: a, bt: b, y: got})
    expected = np.array([np.nan, np.inf, 5.0, np.nan, 0.0, 0.0, np.nan, np.inf], np.float32)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(reference.run(g, {at: a, bt: b})["sq_OUT_0"], expected)
    if HAVE_TORCH:
        import torch

        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        np.testing.assert_array_equal((ta + tb * tb).numpy(), expected)


# --------------------------------------------------------------------------- norms
def _outlier_rows(rng: np.random.Generator) -> np.ndarray:
    """[6, 256] rows whose statistics break naive or shifted one-pass formulas."""
    n = 256
    rows = [
        np.concatenate([[0.0], 1000.0 + rng.uniform(-0.01, 0.01, n - 1)]),  # outlier first element
        1000.0 + rng.uniform(-0.01, 0.01, n),  # large mean, tiny spread
        np.concatenate([[1e4], rng.uniform(-1, 1, n - 1)]),  # one huge value
        np.full(n, 3.5),  # zero variance
        rng.uniform(-1, 1, n) * 1e-3,
        np.concatenate([rng.uniform(-1, 1, n - 1), [-2e4]]),
    ]
    return np.array(rows, np.float32)


# Largest |y - exact| per phase on _outlier_rows: f32 rounding of the inputs and of the
# mean (training's Y reads the mean rounded to f32, which a spread of 0.01 around 1000
# magnifies; PyTorch's own error there is 7e-3).
LAYERNORM_ATOL = {fs.NormPhase.INFERENCE: 2e-5, fs.NormPhase.TRAINING: 5e-3}


@pytest.mark.parametrize("phase", [fs.NormPhase.INFERENCE, fs.NormPhase.TRAINING], ids=lambda p: p.name.lower())
def test_layernorm_statistics_are_stable(cpu, phase):
    """Rows of 0 followed by 1000 +- 0.01 were 4.6 off with the shifted one-pass sums."""
    x = _outlier_rows(np.random.default_rng(3))
    g = fs.Graph(name=f"layernorm_outliers_{phase.name.lower()}")
    xt = g.tensor(name="x", dim=list(x.shape))
    y, mean, inv_var = g.layernorm(xt, epsilon=1e-5, phase=phase, name="ln")
    y.set_output(True).set_name("y")
    for t in (mean, inv_var):
        if t is not None:
            t.set_output(True)
    got = run_and_check(g, cpu, {xt: x}, rtol=1e-5, atol=LAYERNORM_ATOL[phase])
    if HAVE_TORCH:
        import torch

        exact = torch.nn.functional.layer_norm(torch.from_numpy(x).double(), [x.shape[1]], eps=1e-5).numpy()
        torch_y = torch.nn.functional.layer_norm(torch.from_numpy(x), [x.shape[1]], eps=1e-5).numpy()
        ours, theirs = np.abs(got["y"] - exact).max(axis=1), np.abs(torch_y - exact).max(axis=1)
        assert np.all(ours <= np.maximum(3 * theirs, 1e-5)), (ours, theirs)  # row by row, no worse than PyTorch
        if phase == fs.NormPhase.TRAINING:
            # The statistics against PyTorch's float64 ones (its f32 inv-variance is 0.1% off on row 1).
            x64 = torch.from_numpy(x).double()
            _, t_mean, t_rstd = torch.ops.aten.native_layer_norm(x64, [x.shape[1]], None, None, 1e-5)
            np.testing.assert_allclose(got["ln_MEAN"].ravel(), t_mean.numpy().ravel(), rtol=1e-6, atol=1e-9)
            np.testing.assert_allclose(got["ln_INV_VARIANCE"].ravel(), t_rstd.numpy().ravel(), rtol=1e-5)


@pytest.mark.parametrize("phase", [fs.NormPhase.INFERENCE, fs.NormPhase.TRAINING], ids=lambda p: p.name.lower())
def test_rmsnorm_statistics_at_large_magnitudes(cpu, phase):
    x = _outlier_rows(np.random.default_rng(4))
    g = fs.Graph(name=f"rmsnorm_outliers_{phase.name.lower()}")
    xt = g.tensor(name="x", dim=list(x.shape))
    y, inv_rms = g.rmsnorm(xt, epsilon=1e-5, phase=phase, name="rms")
    y.set_output(True).set_name("y")
    if inv_rms is not None:
        inv_rms.set_output(True)
    got = run_and_check(g, cpu, {xt: x}, rtol=1e-4, atol=1e-5)
    if HAVE_TORCH:
        import torch

        want = torch.nn.functional.rms_norm(torch.from_numpy(x), [x.shape[1]], eps=1e-5).numpy()
        np.testing.assert_allclose(got["y"], want, rtol=1e-4, atol=1e-5)


def test_batchnorm_training_statistics_are_stable(cpu):
    """Channels with mean 1000 and spread 0.01 (one outlier first): two-pass moments."""
    x = _outlier_rows(np.random.default_rng(5)).reshape(2, 3, 16, 16)
    g = fs.Graph(name="batchnorm_outliers")
    xt = g.tensor(name="x", dim=list(x.shape))
    y, mean, inv_var = g.batchnorm(xt, epsilon=1e-5, momentum=0.1, phase=fs.NormPhase.TRAINING, name="bn")
    y.set_output(True).set_name("y")
    mean.set_output(True)
    inv_var.set_output(True)
    got = run_and_check(g, cpu, {xt: x}, rtol=2e-3, atol=2e-3)
    if HAVE_TORCH:
        import torch

        want = torch.nn.functional.batch_norm(torch.from_numpy(x), None, None, training=True, eps=1e-5).numpy()
        np.testing.assert_allclose(got["y"], want, rtol=2e-3, atol=2e-3)


# --------------------------------------------------------------------------- attention
def _masked_rows_graph(mask_dt: fs.DataType, s: int, d: int) -> tuple[fs.Graph, dict[str, fs.TensorAttr]]:
    g = fs.Graph(name=f"sdpa_masked_rows_{mask_dt.name.lower()}_{s}")
    t = {n: g.tensor(name=n, dim=[1, 2, s, d]) for n in ("q", "k", "v")}
    t["m"] = g.tensor(name="m", dim=[1, 1, s, s], data_type=mask_dt)
    g.sdpa(t["q"], t["k"], t["v"], mask=t["m"], name="attn").set_output(True).set_name("o")
    return g.validate(), t


@pytest.mark.parametrize("mask_dt", [fs.DataType.FLOAT, fs.DataType.BOOLEAN], ids=["float_-inf", "bool_all_false"])
@pytest.mark.parametrize("size", [(8, 4), (64, 64)], ids=["fused", "decomposed"])
def test_sdpa_fully_masked_rows_are_zero(cpu, mask_dt, size):
    """A query row whose keys are all masked out gives 0, as PyTorch 2.5+ returns (was NaN),
    on the fused attention path and the decomposed matmul/softmax/matmul one."""
    from fusilli.backend import rules
    from fusilli.backend.targets import Target

    s, d = size
    g, t = _masked_rows_graph(mask_dt, s, d)
    choice = rules.choose(rules.problem_of(g.nodes[0]), Target.resolve("cpu"), "algorithm")
    assert (choice is not None and choice.rule is rules.CPU_SDPA_DECOMPOSED) == (s == 64)
    rng = np.random.default_rng(11)
    q, k, v = (rng.uniform(-1, 1, (1, 2, s, d)).astype(np.float32) for _ in range(3))
    keep = rng.random((1, 1, s, s)) > 0.3
    keep[..., 0, :] = False  # row 0: every key masked
    keep[..., s - 1, :] = False
    keep[..., 1, :] = True
    mask = keep if mask_dt == fs.DataType.BOOLEAN else np.where(keep, 0.0, -np.inf).astype(np.float32)
    got = run_and_check(g, cpu, {t["q"]: q, t["k"]: k, t["v"]: v, t["m"]: mask}, rtol=1e-4, atol=1e-4)["o"]
    np.testing.assert_array_equal(got[..., [0, s - 1], :], 0.0)
    assert np.isfinite(got).all()
    if HAVE_TORCH:
        import torch

        want = torch.nn.functional.scaled_dot_product_attention(
            *(torch.from_numpy(a) for a in (q, k, v)), attn_mask=torch.from_numpy(mask)
        ).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
