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
    PointwiseMode.ADD_SQUARE: lambda attrs, a, b: a + b * b,
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
    PointwiseMode.GELU_APPROX_TANH_BWD: lambda attrs, dy, x: _gelu_tanh_bwd(_f(dy), _f(x)),
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
    PointwiseMode.SWISH_BWD: lambda attrs, dy, x: _swish_bwd(attrs, _f(dy), _f(x)),
    PointwiseMode.TAN: lambda attrs, x: np.tan(_f(x)),
    PointwiseMode.TANH_FWD: lambda attrs, x: np.tanh(_f(x)),
    PointwiseMode.TANH_BWD: lambda attrs, dy, x: _f(dy) * (1.0 - np.tanh(_f(x)) ** 2),
}


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
        out = MODE_KERNELS[mode](node.attrs, *operands)
    # The broadcast of the actual operands (dynamic dims may differ from dim), widened
    # to a user-set OUT_0 larger than that broadcast.
    out_t = node.tensor("OUT_0")
    static_out = [1 if d in out_t.dynamic_dims else n for d, n in enumerate(out_t.dim)]
    return {"OUT_0": np.broadcast_to(out, np.broadcast_shapes(*(np.shape(o) for o in operands), static_out))}
