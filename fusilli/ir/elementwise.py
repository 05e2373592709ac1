"""Scalar semantics of torch elementwise ops, for the epilogue-fusion pass.

``ELEMENTWISE_BODIES`` maps a torch op name to its scalar body builder. The
epilogue fusion pass (fusilli/passes/fusion.py) uses it to rebuild a chain of
torch elementwise ops as one ``linalg.generic``, and the layout pass to sink
permutes through elementwise chains; an op with no body is neither fused nor
crossed. Every elementwise torch op a lowering emits has a body here
(test/unit/test_lowering.py walks the emitted IR of every op family to check it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from fusilli import ir
from fusilli.ir import scalar as sc
from fusilli.ir.rewrite import constant_value
from fusilli.ir.trig import REDUCIBLE_ELEMENTS, reduced_sin, reduced_tan

# ---------------------------------------------------------------------------
# A body gets the op, its tensor operands as (scalar, torch element) pairs and
# the result's torch element, and returns the scalar result. Bodies follow the
# op's torch semantics for every element type they can meet (float, signed and
# unsigned integers, i1), so a fused region computes what the unfused ops do.
# ---------------------------------------------------------------------------
ScalarBody = Callable[[ir.Operation, list[tuple[ir.Value, str]], str], ir.Value]
ELEMENTWISE_BODIES: dict[str, ScalarBody] = {}


def elementwise_body(*torch_names: str):
    def wrap(fn: ScalarBody) -> ScalarBody:
        for n in torch_names:
            ELEMENTWISE_BODIES[n] = fn
        return fn

    return wrap


def constant_operand(op: ir.Operation, index: int) -> float | int | bool | str | None:
    """The value of a ``torch.constant.*`` operand (None for ``torch.constant.none``)."""
    return constant_value(op.operands[index])


def numeric_operand(op: ir.Operation, index: int) -> float | int | bool:
    """The value of a ``torch.constant.{int,float,bool}`` operand (TypeError for other constants)."""
    value = constant_operand(op, index)
    if not isinstance(value, (float, int, bool)):
        raise TypeError(f"operand {index} of {op.name} is not a numeric constant: {value!r}")
    return value


def _as(args: list[tuple[ir.Value, str]], elem: str) -> list[ir.Value]:
    return [sc.convert(v, e, elem) for v, e in args]


def _promoted(elems: Sequence[str]) -> str:
    """The common element of a comparison's operands (torch promotion of tensors)."""
    floats = [e for e in elems if sc.is_float(e)]
    if floats:
        return max(floats, key=sc.bits)
    ints = [e for e in elems if e != "i1"]
    return max(ints, key=sc.bits) if ints else "i1"


def _arith_binary(float_op, int_op) -> ScalarBody:
    def body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
        a, b = _as(args, out)
        return (float_op if sc.is_float(out) else int_op)(a, b).result

    return body


def _alpha_body(float_op, int_op) -> ScalarBody:
    def body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
        a, b = _as(args, out)
        alpha = numeric_operand(op, 2)
        if alpha != 1:
            mul = ir.arith.MulFOp if sc.is_float(out) else ir.arith.MulIOp
            b = mul(b, sc.constant(out, alpha)).result
        return (float_op if sc.is_float(out) else int_op)(a, b).result

    return body


elementwise_body("torch.aten.add.Tensor")(_alpha_body(ir.arith.AddFOp, ir.arith.AddIOp))
elementwise_body("torch.aten.sub.Tensor")(_alpha_body(ir.arith.SubFOp, ir.arith.SubIOp))
elementwise_body("torch.aten.mul.Tensor")(_arith_binary(ir.arith.MulFOp, ir.arith.MulIOp))


def _float_body(fn: Callable[[ir.Operation, list[ir.Value], str], ir.Value]) -> ScalarBody:
    """A body computing in floating point: the result's element if it is a float, else f32."""

    def body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
        elem = out if sc.is_float(out) else "f32"
        return sc.convert(fn(op, _as(args, elem), elem), elem, out)

    return body


def _math_unary(math_op) -> ScalarBody:
    return _float_body(lambda op, xs, elem: math_op(xs[0]).result)


for _name, _op in [
    ("torch.aten.erf", ir.math.ErfOp),
    ("torch.aten.exp", ir.math.ExpOp),
    ("torch.aten.log", ir.math.LogOp),
    ("torch.aten.tanh", ir.math.TanhOp),
    ("torch.aten.sqrt", ir.math.SqrtOp),
    ("torch.aten.rsqrt", ir.math.RsqrtOp),
]:
    elementwise_body(_name)(_math_unary(_op))


def _reduced_trig(reduced: Callable[[ir.Value, str], ir.Value], plain) -> ScalarBody:
    """sin/tan with exact range reduction (fusilli/ir/trig.py) where the element allows it."""

    def fn(op: ir.Operation, xs: list[ir.Value], elem: str) -> ir.Value:
        return reduced(xs[0], elem) if elem in REDUCIBLE_ELEMENTS else plain(xs[0]).result

    return _float_body(fn)


elementwise_body("torch.aten.sin")(_reduced_trig(reduced_sin, ir.math.SinOp))
elementwise_body("torch.aten.tan")(_reduced_trig(reduced_tan, ir.math.TanOp))


# Small helpers for writing float bodies as formulas.
def _c(elem: str, value: float) -> ir.Value:
    return sc.constant(elem, value)


def _mul(a: ir.Value, b: ir.Value) -> ir.Value:
    return ir.arith.MulFOp(a, b).result


def _add(a: ir.Value, b: ir.Value) -> ir.Value:
    return ir.arith.AddFOp(a, b).result


def _sub(a: ir.Value, b: ir.Value) -> ir.Value:
    return ir.arith.SubFOp(a, b).result


def _div(a: ir.Value, b: ir.Value) -> ir.Value:
    return ir.arith.DivFOp(a, b).result


def _sigmoid(x: ir.Value, elem: str) -> ir.Value:
    """1 / (1 + exp(-x)): exp overflows to inf for very negative x, giving exactly 0."""
    return _div(_c(elem, 1.0), _add(_c(elem, 1.0), ir.math.ExpOp(ir.arith.NegFOp(x).result).result))


elementwise_body("torch.aten.div.Tensor")(_float_body(lambda op, xs, elem: _div(xs[0], xs[1])))
elementwise_body("torch.aten.reciprocal")(_float_body(lambda op, xs, elem: _div(_c(elem, 1.0), xs[0])))
elementwise_body("torch.aten.sigmoid")(_float_body(lambda op, xs, elem: _sigmoid(xs[0], elem)))
# tanh_backward(dy, y) = dy * (1 - y^2)
elementwise_body("torch.aten.tanh_backward")(
    _float_body(lambda op, xs, elem: _mul(xs[0], _sub(_c(elem, 1.0), _mul(xs[1], xs[1]))))
)


@elementwise_body("torch.aten.mul.Scalar")
def _mul_scalar_body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
    (x,) = _as(args, out)
    other = sc.constant(out, numeric_operand(op, 1))
    return (ir.arith.MulFOp if sc.is_float(out) else ir.arith.MulIOp)(x, other).result


@elementwise_body("torch.aten.add.Scalar")
def _add_scalar_body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
    """self + alpha * other (the norms' ``var + eps``)."""
    (x,) = _as(args, out)
    other = sc.constant(out, numeric_operand(op, 1) * numeric_operand(op, 2))
    return (ir.arith.AddFOp if sc.is_float(out) else ir.arith.AddIOp)(x, other).result


@elementwise_body("torch.aten.remainder.Scalar")
def _remainder_scalar_body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
    """Python's modulo, as torch.remainder: the result takes the divisor's sign."""
    (x,) = _as(args, out)
    divisor = numeric_operand(op, 1)
    d = sc.constant(out, divisor)
    if sc.is_float(out):
        return _sub(x, _mul(ir.math.FloorOp(_div(x, d)).result, d))
    if sc.is_unsigned(out):
        return ir.arith.RemUIOp(x, d).result
    r = ir.arith.RemSIOp(x, d).result
    # A non-zero remainder whose sign differs from the divisor's moves by one divisor.
    zero = sc.constant(out, 0)
    wrong_sign = ir.arith.CmpIOp(ir.arith.CmpIPredicate.sgt if divisor < 0 else ir.arith.CmpIPredicate.slt, r, zero)
    return ir.arith.SelectOp(wrong_sign.result, ir.arith.AddIOp(r, d).result, r).result


@elementwise_body("torch.aten.rsub.Scalar")
def _rsub_scalar_body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
    """other - alpha * self."""
    (x,) = _as(args, out)
    other, alpha = numeric_operand(op, 1), numeric_operand(op, 2)
    fl = sc.is_float(out)
    if alpha != 1:
        x = (ir.arith.MulFOp if fl else ir.arith.MulIOp)(x, sc.constant(out, alpha)).result
    return (ir.arith.SubFOp if fl else ir.arith.SubIOp)(sc.constant(out, other), x).result


@elementwise_body("torch.aten.elu")
def _elu_body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
    """x > 0 ? scale * x : alpha * scale * expm1(x * input_scale)."""

    def formula(op: ir.Operation, xs: list[ir.Value], elem: str) -> ir.Value:
        (x,) = xs
        alpha, scale, input_scale = (float(numeric_operand(op, i)) for i in (1, 2, 3))
        neg = ir.math.ExpM1Op(_mul(x, _c(elem, input_scale))).result
        neg = _mul(neg, _c(elem, alpha * scale))
        pos = _mul(x, _c(elem, scale))
        positive = ir.arith.CmpFOp(ir.arith.CmpFPredicate.OGT, x, _c(elem, 0.0)).result
        return ir.arith.SelectOp(positive, pos, neg).result

    return _float_body(formula)(op, args, out)


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_KAPPA = 0.044715


def _gelu_tanh_inner(x: ir.Value, elem: str) -> ir.Value:
    """tanh(sqrt(2/pi) * (x + 0.044715 x^3))."""
    cube = _mul(_mul(x, x), x)
    inner = _mul(_c(elem, _SQRT_2_OVER_PI), _add(x, _mul(_c(elem, _GELU_KAPPA), cube)))
    return ir.math.TanhOp(inner).result


def _gelu_cdf(x: ir.Value, elem: str) -> ir.Value:
    """0.5 * (1 + erf(x / sqrt(2)))."""
    erf = ir.math.ErfOp(_mul(x, _c(elem, math.sqrt(0.5)))).result
    return _mul(_c(elem, 0.5), _add(_c(elem, 1.0), erf))


@elementwise_body("torch.aten.gelu")
def _gelu_body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
    def formula(op: ir.Operation, xs: list[ir.Value], elem: str) -> ir.Value:
        (x,) = xs
        if constant_operand(op, 1) == "tanh":
            half_x = _mul(_c(elem, 0.5), x)
            return _mul(half_x, _add(_c(elem, 1.0), _gelu_tanh_inner(x, elem)))
        return _mul(x, _gelu_cdf(x, elem))

    return _float_body(formula)(op, args, out)


@elementwise_body("torch.aten.gelu_backward")
def _gelu_backward_body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
    """PyTorch's GeluBackward formulas (exact and tanh approximation)."""

    def formula(op: ir.Operation, xs: list[ir.Value], elem: str) -> ir.Value:
        dy, x = xs
        if constant_operand(op, 2) == "tanh":
            t = _gelu_tanh_inner(x, elem)
            left_derivative = _mul(_c(elem, 0.5), _add(_c(elem, 1.0), t))
            inner_derivative = _mul(
                _c(elem, _SQRT_2_OVER_PI), _add(_c(elem, 1.0), _mul(_c(elem, 3 * _GELU_KAPPA), _mul(x, x)))
            )
            right_derivative = _mul(_mul(_c(elem, 0.5), x), _mul(_sub(_c(elem, 1.0), _mul(t, t)), inner_derivative))
            return _mul(dy, _add(left_derivative, right_derivative))
        # d/dx x*Phi(x) = Phi(x) + x * phi(x), phi(x) = exp(-x^2/2) / sqrt(2 pi)
        pdf = ir.math.ExpOp(_mul(_c(elem, -0.5), _mul(x, x))).result
        pdf = _mul(pdf, _c(elem, 1.0 / math.sqrt(2.0 * math.pi)))
        return _mul(dy, _add(_gelu_cdf(x, elem), _mul(x, pdf)))

    return _float_body(formula)(op, args, out)


@elementwise_body("torch.aten.softplus")
def _softplus_body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
    """x * beta > threshold ? x : log1p(exp(x * beta)) / beta."""

    def formula(op: ir.Operation, xs: list[ir.Value], elem: str) -> ir.Value:
        (x,) = xs
        beta, threshold = float(numeric_operand(op, 1)), float(numeric_operand(op, 2))
        scaled = _mul(x, _c(elem, beta))
        soft = _div(ir.math.Log1pOp(ir.math.ExpOp(scaled).result).result, _c(elem, beta))
        linear = ir.arith.CmpFOp(ir.arith.CmpFPredicate.OGT, scaled, _c(elem, threshold)).result
        return ir.arith.SelectOp(linear, x, soft).result

    return _float_body(formula)(op, args, out)


@elementwise_body("torch.aten.relu")
def _relu_body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
    (x,) = _as(args, out)
    zero = sc.constant(out, 0)
    if sc.is_float(out):
        return ir.arith.MaximumFOp(x, zero).result
    return (ir.arith.MaxUIOp if sc.is_unsigned(out) else ir.arith.MaxSIOp)(x, zero).result


@elementwise_body("torch.aten.abs")
def _abs_body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
    (x,) = _as(args, out)
    if sc.is_float(out):
        return ir.math.AbsFOp(x).result
    return x if sc.is_unsigned(out) else ir.math.AbsIOp(x).result


@elementwise_body("torch.aten.neg")
def _neg_body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
    (x,) = _as(args, out)
    if sc.is_float(out):
        return ir.arith.NegFOp(x).result
    return ir.arith.SubIOp(sc.constant(out, 0), x).result


def _rounding_body(math_op) -> ScalarBody:
    """ceil/floor: integers are already integral."""

    def body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
        (x,) = _as(args, out)
        return math_op(x).result if sc.is_float(out) else x

    return body


elementwise_body("torch.aten.ceil")(_rounding_body(ir.math.CeilOp))
elementwise_body("torch.aten.floor")(_rounding_body(ir.math.FloorOp))


@elementwise_body("torch.aten.clone")
def _clone_body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
    (x,) = _as(args, out)
    return x


def _min_max_body(float_op, signed_op, unsigned_op) -> ScalarBody:
    """maximum/minimum: NaN-propagating on floats, as torch."""

    def body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
        a, b = _as(args, out)
        if sc.is_float(out):
            return float_op(a, b).result
        return (unsigned_op if sc.is_unsigned(out) else signed_op)(a, b).result

    return body


elementwise_body("torch.aten.maximum")(_min_max_body(ir.arith.MaximumFOp, ir.arith.MaxSIOp, ir.arith.MaxUIOp))
elementwise_body("torch.aten.minimum")(_min_max_body(ir.arith.MinimumFOp, ir.arith.MinSIOp, ir.arith.MinUIOp))

# torch comparison -> (float predicate, signed int predicate, unsigned int predicate).
# ne is unordered (NaN != x is true); the others are ordered (false on NaN).
_F, _I = ir.arith.CmpFPredicate, ir.arith.CmpIPredicate
_COMPARISONS = {
    "eq": (_F.OEQ, _I.eq, _I.eq),
    "ne": (_F.UNE, _I.ne, _I.ne),
    "lt": (_F.OLT, _I.slt, _I.ult),
    "le": (_F.OLE, _I.sle, _I.ule),
    "gt": (_F.OGT, _I.sgt, _I.ugt),
    "ge": (_F.OGE, _I.sge, _I.uge),
}


def _compare(pred: str, a: ir.Value, b: ir.Value, elem: str) -> ir.Value:
    fp, sp, up = _COMPARISONS[pred]
    if sc.is_float(elem):
        return ir.arith.CmpFOp(fp, a, b).result
    return ir.arith.CmpIOp(up if sc.is_unsigned(elem) else sp, a, b).result


def _compare_tensor_body(pred: str) -> ScalarBody:
    def body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
        elem = _promoted([e for _, e in args])
        a, b = _as(args, elem)
        return sc.convert(_compare(pred, a, b, elem), "i1", out)

    return body


def _compare_scalar_body(pred: str) -> ScalarBody:
    def body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
        ((x, elem),) = args
        other = numeric_operand(op, 1)
        if isinstance(other, float) and not sc.is_float(elem):
            x, elem = sc.convert(x, elem, "f64"), "f64"
        return sc.convert(_compare(pred, x, sc.constant(elem, other), elem), "i1", out)

    return body


for _pred in _COMPARISONS:
    elementwise_body(f"torch.aten.{_pred}.Tensor")(_compare_tensor_body(_pred))
    elementwise_body(f"torch.aten.{_pred}.Scalar")(_compare_scalar_body(_pred))


def _logical_body(combine) -> ScalarBody:
    def body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
        bits = _as(args, "i1")
        return sc.convert(combine(*bits), "i1", out)

    return body


elementwise_body("torch.aten.logical_and")(_logical_body(lambda a, b: ir.arith.AndIOp(a, b).result))
elementwise_body("torch.aten.logical_or")(_logical_body(lambda a, b: ir.arith.OrIOp(a, b).result))
elementwise_body("torch.aten.logical_not")(_logical_body(lambda a: ir.arith.XOrIOp(a, sc.constant("i1", 1)).result))


@elementwise_body("torch.aten.where.self")
def _where_body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
    cond = sc.convert(*args[0], "i1")
    a, b = _as(args[1:], out)
    return ir.arith.SelectOp(cond, a, b).result


@elementwise_body("torch.aten.where.ScalarOther")
def _where_scalar_other_body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
    cond = sc.convert(*args[0], "i1")
    (a,) = _as(args[1:], out)
    return ir.arith.SelectOp(cond, a, sc.constant(out, numeric_operand(op, 2))).result


@elementwise_body("torch.aten.threshold_backward")
def _threshold_backward_body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
    """self <= threshold ? 0 : grad."""
    (dy, _), (x, x_elem) = args
    dy = sc.convert(dy, args[0][1], out)
    threshold = numeric_operand(op, 2)
    if isinstance(threshold, float) and not sc.is_float(x_elem):
        x, x_elem = sc.convert(x, x_elem, "f64"), "f64"
    below = _compare("le", x, sc.constant(x_elem, threshold), x_elem)
    return ir.arith.SelectOp(below, sc.constant(out, 0), dy).result


@elementwise_body("torch.aten.to.dtype")
def _to_dtype_body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
    (v, e) = args[0]
    return sc.convert(v, e, out)
