"""Reference pointwise kernels: one NumPy function per PointwiseMode.

Floats arrive as float64 and integers/booleans as they are (see
``reference.compute_array``); modes that torch computes in floating point
(exp, gelu, div, ...) convert integer inputs to float64 first. The formulas
are written from PyTorch's definitions independently of the emitters.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from fusilli.ops.pointwise import INPUT_SLOTS, MODES, PointwiseMode
from fusilli.reference import register_kernel

_erf = np.vectorize(math.erf, otypes=[np.float64])
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_KAPPA = 0.044715


def _f(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(_SQRT_2_OVER_PI * (x + _KAPPA * x**3)))


def _gelu_bwd(dy: np.ndarray, x: np.ndarray) -> np.ndarray:
    cdf = 0.5 * (1.0 + _erf(x / math.sqrt(2.0)))
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    return dy * (cdf + x * pdf)


def _gelu_tanh_bwd(dy: np.ndarray, x: np.ndarray) -> np.ndarray:
    t = np.tanh(_SQRT_2_OVER_PI * (x + _KAPPA * x**3))
    d_inner = _SQRT_2_OVER_PI * (1.0 + 3.0 * _KAPPA * x * x)
    return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * d_inner)


def _elu(attrs, x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.where(x > 0, x, attrs.elu_alpha * np.expm1(np.minimum(x, 0.0)))


def _softplus(attrs, x: np.ndarray) -> np.ndarray:
    beta, threshold = attrs.softplus_beta, attrs.softplus_threshold
    with np.errstate(over="ignore"):
        soft = np.log1p(np.exp(x * beta)) / beta
    return np.where(x * beta > threshold, x, soft)


def _swish(attrs, x: np.ndarray) -> np.ndarray:
    return x * _sigmoid(attrs.swish_beta * x)


def _swish_bwd(attrs, dy: np.ndarray, x: np.ndarray) -> np.ndarray:
    beta = attrs.swish_beta
    s = _sigmoid(beta * x)
    return dy * (s + beta * x * s * (1.0 - s))


def _ceil_floor(fn: Callable[[np.ndarray], np.ndarray]) -> Callable:
    return lambda attrs, x: fn(x) if x.dtype.kind == "f" else x


def _common(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Comparisons on a common type (torch promotion: any float makes both float)."""
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        return _f(a), _f(b)
    return a, b


def _select(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``c ? a : b`` (torch.where order; a non-boolean ``c`` means ``c != 0``)."""
    return np.where(c.astype(bool), a, b)


MODE_KERNELS: dict[PointwiseMode, Callable[..., np.ndarray]] = {
    PointwiseMode.ABS: lambda attrs, x: np.abs(x),
    PointwiseMode.ADD: lambda attrs, a, b: a + b,
    PointwiseMode.BINARY_SELECT: lambda attrs, c, a, b: _select(c, a, b),
    PointwiseMode.CEIL: _ceil_floor(np.ceil),
    PointwiseMode.CMP_EQ: lambda attrs, a, b: np.equal(*_common(a, b)),
    PointwiseMode.CMP_NEQ: lambda attrs, a, b: np.not_equal(*_common(a, b)),
    PointwiseMode.CMP_LT: lambda attrs, a, b: np.less(*_common(a, b)),
    PointwiseMode.CMP_LE: lambda attrs, a, b: np.less_equal(*_common(a, b)),
    PointwiseMode.CMP_GT: lambda attrs, a, b: np.greater(*_common(a, b)),
    PointwiseMode.CMP_GE: lambda attrs, a, b: np.greater_equal(*_common(a, b)),
    PointwiseMode.DIV: lambda attrs, a, b: _f(a) / _f(b),
    PointwiseMode.ELU_FWD: _elu,
    PointwiseMode.ERF: lambda attrs, x: _erf(_f(x)),
    PointwiseMode.EXP: lambda attrs, x: np.exp(_f(x)),
    PointwiseMode.FLOOR: _ceil_floor(np.floor),
    PointwiseMode.GELU_FWD: lambda attrs, x: _gelu(_f(x)),
    PointwiseMode.GELU_APPROX_TANH_FWD: lambda attrs, x: _gelu_tanh(_f(x)),
    PointwiseMode.GELU_BWD: lambda attrs, dy, x: _gelu_bwd(_f(dy), _f(x)),
    PointwiseMode.IDENTITY: lambda attrs, x: x,
    PointwiseMode.LOG: lambda attrs, x: np.log(_f(x)),
    PointwiseMode.LOGICAL_AND: lambda attrs, a, b: np.logical_and(a, b),
    PointwiseMode.LOGICAL_OR: lambda attrs, a, b: np.logical_or(a, b),
    PointwiseMode.LOGICAL_NOT: lambda attrs, x: np.logical_not(x),
    PointwiseMode.MAX_OP: lambda attrs, a, b: np.maximum(a, b),
    PointwiseMode.MIN_OP: lambda attrs, a, b: np.minimum(a, b),
    PointwiseMode.MUL: lambda attrs, a, b: a * b,
    PointwiseMode.NEG: lambda attrs, x: -x,
    PointwiseMode.RECIPROCAL: lambda attrs, x: 1.0 / _f(x),
    PointwiseMode.RELU_FWD: lambda attrs, x: np.maximum(x, 0),
    PointwiseMode.RELU_BWD: lambda attrs, dy, x: np.where(x <= 0, 0, dy),
    PointwiseMode.RSQRT: lambda attrs, x: 1.0 / np.sqrt(_f(x)),
    PointwiseMode.SIGMOID_FWD: lambda attrs, x: _sigmoid(_f(x)),
    PointwiseMode.SIN: lambda attrs, x: np.sin(_f(x)),
    PointwiseMode.SOFTPLUS_FWD: lambda attrs, x: _softplus(attrs, _f(x)),
    PointwiseMode.SQRT: lambda attrs, x: np.sqrt(_f(x)),
    PointwiseMode.SUB: lambda attrs, a, b: a - b,
    PointwiseMode.SWISH_FWD: lambda attrs, x: _swish(attrs, _f(x)),
    PointwiseMode.TAN: lambda attrs, x: np.tan(_f(x)),
    PointwiseMode.TANH_FWD: lambda attrs, x: np.tanh(_f(x)),
}


def _rounded_to(values: np.ndarray, compute: np.dtype) -> np.ndarray:
    """float64 ``values`` rounded to the float type ``compute`` (as a stored intermediate is)."""
    with np.errstate(over="ignore"):
        return values.astype(compute).astype(np.float64)


def _add_square(attrs, compute: np.dtype, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a + b*b`` with the square rounded to the compute type first, as PyTorch stores it:
    an f32 square of 3e38 is inf, so ``-inf + 3e38**2`` is NaN (f64 would give -inf)."""
    square = b * b
    return a + (_rounded_to(square, compute) if square.dtype.kind == "f" else square)


def _in_compute_type(formula: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """``formula(attrs, *operands)`` evaluated in the compute type (f32 unless it is f64), for
    backward formulas whose f32 intermediates overflow in PyTorch: gelu-tanh's x**3 is inf
    for |x| > 7e12 and makes the result NaN, sigmoid(-104) is 0 and makes inf * 0 NaN."""

    def kernel(attrs, compute: np.dtype, *operands: np.ndarray) -> np.ndarray:
        dtype = np.float64 if compute.itemsize >= 8 else np.float32
        with np.errstate(over="ignore", invalid="ignore"):
            return formula(attrs, *[np.asarray(o, dtype) for o in operands]).astype(np.float64)

    return kernel


def _tanh_bwd(attrs, compute: np.dtype, dy: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``dy * (1 - y*y)`` with ``y = tanh(x)`` rounded to the compute type, as the forward
    result PyTorch's tanh_backward receives (near |y| = 1 that rounding dominates the error)."""
    y = _rounded_to(np.tanh(_f(x)), compute)
    return _f(dy) * (1.0 - y * y)


# Modes whose result depends on how an intermediate is rounded: their kernels also take
# the node's compute type, (attrs, compute numpy dtype, *operands) -> array.
COMPUTE_TYPE_KERNELS: dict[PointwiseMode, Callable[..., np.ndarray]] = {
    PointwiseMode.ADD_SQUARE: _add_square,
    PointwiseMode.GELU_APPROX_TANH_BWD: _in_compute_type(lambda attrs, dy, x: _gelu_tanh_bwd(dy, x)),
    PointwiseMode.SWISH_BWD: _in_compute_type(_swish_bwd),
    PointwiseMode.TANH_BWD: _tanh_bwd,
}


def mode_kernel(mode: PointwiseMode, compute: np.dtype) -> Callable[..., np.ndarray]:
    """The reference of ``mode`` as ``(attrs, *operands) -> array`` for a node computing in ``compute``."""
    with_compute = COMPUTE_TYPE_KERNELS.get(mode)
    if with_compute is None:
        return MODE_KERNELS[mode]
    return lambda attrs, *operands: with_compute(attrs, compute, *operands)


def _promote_ints(operands: list[np.ndarray]) -> list[np.ndarray]:
    """Integer/boolean operands of one op on a common type, as torch promotes them."""
    if any(a.dtype.kind == "f" for a in operands) or len({a.dtype for a in operands}) < 2:
        return operands
    common = np.result_type(*operands)
    return [a.astype(common) for a in operands]


@register_kernel("pointwise")
def pointwise(node, args):
    mode = node.attrs.mode
    operands = [args[s] for s in INPUT_SLOTS if s in args]
    if MODES[mode].select:
        operands = operands[:1] + _promote_ints(operands[1:])
    else:
        operands = _promote_ints(operands)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = mode_kernel(mode, node.compute_element().numpy_dtype)(node.attrs, *operands)
    # The broadcast of the actual operands (dynamic dims may differ from dim), widened
    # to a user-set OUT_0 larger than that broadcast.
    out_t = node.tensor("OUT_0")
    static_out = [1 if d in out_t.dynamic_dims else n for d, n in enumerate(out_t.dim)]
    return {"OUT_0": np.broadcast_to(out, np.broadcast_shapes(*(np.shape(o) for o in operands), static_out))}
