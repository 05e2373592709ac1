"""Pointwise ops: every ``PointwiseMode`` — arity, inference, checks, torch emission,
and the scalar semantics of the torch elementwise ops they emit.

Two registries live here:

* ``MODES``: mode -> ``ModeSpec`` (input count, whether the result is boolean,
  and the function emitting its torch ops).
* ``ELEMENTWISE_BODIES``: torch op name -> scalar body builder. The epilogue
  fusion pass (fusilli/passes/fusion.py) uses it to rebuild a chain of torch
  elementwise ops as one ``linalg.generic``; an op with no body is not fused.

Semantics are PyTorch's, including broadcasting of every input. Float inputs are
computed in the node's ``compute_data_type``; the result is rounded once to the
output's data type. Modes of the "float" domain (exp, gelu, sigmoid, div, ...)
compute integer and boolean inputs in floating point too, as ``torch.exp(int)``
does; comparison and logical modes give BOOLEAN results; ``binary_select(cond, a,
b)`` is ``torch.where(cond, a, b)`` (a non-boolean ``cond`` means ``cond != 0``).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import reduce

from fusilli import ir
from fusilli.errors import ErrorCode
from fusilli.ir import scalar as sc
from fusilli.ir.rewrite import constant_value
from fusilli.ops.base import Attrs, Node, register_emitter, register_node
from fusilli.ops.emit import EmitContext
from fusilli.tensor import TensorAttr, data_type_of
from fusilli.types import DataType, promote


class PointwiseMode(enum.Enum):
    ABS = "abs"
    ADD = "add"
    ADD_SQUARE = "add_square"
    BINARY_SELECT = "binary_select"
    CEIL = "ceil"
    CMP_EQ = "cmp_eq"
    CMP_NEQ = "cmp_neq"
    CMP_LT = "cmp_lt"
    CMP_LE = "cmp_le"
    CMP_GT = "cmp_gt"
    CMP_GE = "cmp_ge"
    DIV = "div"
    ELU_FWD = "elu"
    ERF = "erf"
    EXP = "exp"
    FLOOR = "floor"
    GELU_FWD = "gelu"
    GELU_APPROX_TANH_FWD = "gelu_approx_tanh"
    GELU_BWD = "gelu_bwd"
    GELU_APPROX_TANH_BWD = "gelu_approx_tanh_bwd"
    IDENTITY = "identity"
    LOG = "log"
    LOGICAL_AND = "logical_and"
    LOGICAL_OR = "logical_or"
    LOGICAL_NOT = "logical_not"
    MAX_OP = "max"
    MIN_OP = "min"
    MUL = "mul"
    NEG = "neg"
    RECIPROCAL = "reciprocal"
    RELU_FWD = "relu"
    RELU_BWD = "relu_bwd"
    RSQRT = "rsqrt"
    SIGMOID_FWD = "sigmoid"
    SIN = "sin"
    SOFTPLUS_FWD = "softplus"
    SQRT = "sqrt"
    SUB = "sub"
    SWISH_FWD = "swish"
    SWISH_BWD = "swish_bwd"
    TAN = "tan"
    TANH_FWD = "tanh"
    TANH_BWD = "tanh_bwd"

    @property
    def method_name(self) -> str:
        """The lower-case ``Graph`` method for this mode (``relu``, ``max``, ``gelu_bwd``)."""
        return self.value


@dataclass
class PointwiseAttrs(Attrs):
    ENUM_FIELDS = {"mode": PointwiseMode}
    mode: PointwiseMode | None = None
    elu_alpha: float = 1.0
    softplus_beta: float = 1.0
    softplus_threshold: float = 20.0
    swish_beta: float = 1.0


# Emits a mode's torch ops: (ctx, node, logical operands, compute element) -> logical result.
ModeEmitter = Callable[[EmitContext, "PointwiseNode", list[ir.Value], DataType], ir.Value]

# Which input element types a mode computes on:
#   "float":   floating point; integer/boolean inputs are converted (torch.exp(int) is float)
#   "numeric": integers or floats; all-BOOLEAN inputs are rejected
#   "any":     booleans too (comparisons, logical ops, select, identity, max/min)
DOMAINS = ("float", "numeric", "any")


@dataclass(frozen=True)
class ModeSpec:
    arity: int
    emit: ModeEmitter
    domain: str = "numeric"
    boolean_result: bool = False
    select: bool = False  # IN_0 is a condition, not a value operand


MODES: dict[PointwiseMode, ModeSpec] = {}


def mode(m: PointwiseMode, arity: int, *, domain: str = "numeric", boolean_result: bool = False, select: bool = False):
    assert domain in DOMAINS, domain

    def wrap(fn: ModeEmitter) -> ModeEmitter:
        MODES[m] = ModeSpec(arity, fn, domain, boolean_result, select)
        return fn

    return wrap


INPUT_SLOTS = ("IN_0", "IN_1", "IN_2")


def broadcast_shapes(shapes: Sequence[Sequence[int]]) -> list[int] | None:
    """Right-aligned PyTorch broadcast of several shapes, or None if two clash."""
    rank = max(len(s) for s in shapes)
    out = [1] * rank
    for s in shapes:
        padded = [1] * (rank - len(s)) + list(s)
        for i, d in enumerate(padded):
            if d != 1:
                if out[i] not in (1, d):
                    return None
                out[i] = d
    return out


@register_node
class PointwiseNode(Node):
    kind = "pointwise"
    input_slots = INPUT_SLOTS
    output_slots = ("OUT_0",)
    optional_inputs = frozenset({"IN_1", "IN_2"})
    attrs_type = PointwiseAttrs
    attrs: PointwiseAttrs

    @property
    def checked_mode(self) -> PointwiseMode:
        """The mode attribute; ATTRIBUTE_NOT_SET while it is unset."""
        mode = self.attrs.mode
        if mode is None:
            raise self.error(ErrorCode.ATTRIBUTE_NOT_SET, "pointwise mode not set")
        return mode

    @property
    def spec(self) -> ModeSpec:
        mode = self.checked_mode
        spec = MODES.get(mode)
        if spec is None:
            raise self.error(ErrorCode.NOT_IMPLEMENTED, f"pointwise mode {mode.name} is not implemented")
        return spec

    def pre_validate(self) -> None:
        mode = self.checked_mode
        spec = self.spec
        for i, slot in enumerate(INPUT_SLOTS):
            t = self.inputs.get(slot)
            if i < spec.arity and t is None:
                raise self.error(ErrorCode.ATTRIBUTE_NOT_SET, f"{mode.name} mode requires {slot} input")
            if i >= spec.arity and t is not None:
                raise self.error(
                    ErrorCode.INVALID_ATTRIBUTE,
                    f"{mode.name} mode should not have {slot} input '{t.name}' set",
                )
        super().pre_validate()

    def operands(self) -> list[TensorAttr]:
        return [self.tensor(s) for s in INPUT_SLOTS[: self.spec.arity]]

    def infer(self) -> None:
        ins = self.operands()
        out = self.tensor("OUT_0")
        shape = broadcast_shapes([t.dim for t in ins])
        if shape is None:
            raise self.error(
                ErrorCode.INVALID_ATTRIBUTE,
                "cannot broadcast two non unit dimensions: "
                + ", ".join(f"{s} '{t.name}' {t.dim}" for s, t in zip(INPUT_SLOTS, ins)),
            )
        if not out.has_dim:
            out.set_dim(shape)
            dyn = set()
            for t in ins:
                dyn |= {d + len(shape) - t.rank for d in t.dynamic_dims}
            out.set_dynamic_dims(sorted(dyn))
        if self.spec.boolean_result:
            out.set_data_type(DataType.BOOLEAN)
        if not out.has_stride:
            same = next((t for t in ins if t.dim == out.dim and t.has_stride and not t.broadcast_dims), None)
            if same is not None:
                out.set_stride(list(same.stride))
            elif out.is_virtual or out.rank == ins[0].rank:
                self.infer_output_stride(out, like=ins[0] if ins[0].rank == out.rank else None)
            else:
                raise self.error(
                    ErrorCode.INVALID_ATTRIBUTE, f"output strides of OUT_0 '{out.name}' could not be computed"
                )

    def post_validate(self) -> None:
        ins = self.operands()
        out = self.tensor("OUT_0")
        self.check_layout("OUT_0", out)
        shape = broadcast_shapes([t.dim for t in ins])
        self.check(
            shape is not None and broadcast_shapes([shape, out.dim]) == out.dim,
            ErrorCode.INVALID_ATTRIBUTE,
            f"output tensor OUT_0 '{out.name}' dims {out.dim} do not match the broadcast input dims {shape}",
        )
        spec = self.spec
        values = list(zip(INPUT_SLOTS, ins))[1:] if spec.select else list(zip(INPUT_SLOTS, ins))
        if spec.domain == "numeric":
            self.check(
                any(t.data_type != DataType.BOOLEAN for _, t in values),
                ErrorCode.INVALID_ATTRIBUTE,
                f"{self.checked_mode.name} is not defined on BOOLEAN inputs ("
                + ", ".join(f"{s} '{t.name}'" for s, t in values)
                + ")",
            )

    def value_operands(self) -> list[TensorAttr]:
        """The operands whose type decides the computation (all but a select's condition)."""
        ins = self.operands()
        return ins[1:] if self.spec.select else ins

    def compute_element(self) -> DataType:
        """Float computations run in compute_data_type; otherwise the promoted input type."""
        promoted = reduce(promote, [data_type_of(t) for t in self.value_operands()])
        if not (promoted.is_float or self.spec.domain == "float"):
            return promoted
        cdt = self.compute_data_type
        if cdt is not None and cdt.is_float:
            return cdt
        return promoted if promoted.is_float else DataType.FLOAT


@register_emitter("pointwise")
def emit_pointwise(node: PointwiseNode, ctx: EmitContext) -> None:
    spec = node.spec
    compute = node.compute_element()
    out = node.tensor("OUT_0")
    operands = []
    for i, t in enumerate(node.operands()):
        v = ctx.logical(t)
        operands.append(ctx.cast(v, DataType.BOOLEAN if spec.select and i == 0 else compute))
    # A user-set OUT_0 may be larger than the inputs' broadcast; widen the first input to it.
    if broadcast_shapes([t.dim for t in node.operands()]) != out.dim:
        operands[0] = ctx.b.expand(operands[0], [-1 if d in out.dynamic_dims else n for d, n in enumerate(out.dim)])
    ctx.define("OUT_0", spec.emit(ctx, node, operands, compute))


# ---------------------------------------------------------------------------
# Mode emitters (upstream Fusilli's torch ops, one line per simple mode).
# ---------------------------------------------------------------------------
def _result(ctx: EmitContext, element: DataType) -> ir.Type:
    return ctx.result_type("OUT_0", element=element)


def _like(v: ir.Value, element: DataType) -> ir.Type:
    """The type of ``v`` with another element type (for composites' intermediate values)."""
    return ir.TensorType.of(v).with_element(element.mlir_name).to_type()


def _simple(torch_name: str, *, alpha: bool = False, boolean: bool = False) -> ModeEmitter:
    """One torch op over the operands (plus ``alpha = 1`` for add/sub)."""

    def emit(ctx: EmitContext, node: PointwiseNode, ops: list[ir.Value], compute: DataType) -> ir.Value:
        extra = [ctx.b.const_int(1)] if alpha else []
        return ctx.b.op(torch_name, ops + extra, _result(ctx, DataType.BOOLEAN if boolean else compute))

    return emit


for _m, _name, _domain in [
    (PointwiseMode.ABS, "torch.aten.abs", "numeric"),
    (PointwiseMode.CEIL, "torch.aten.ceil", "numeric"),
    (PointwiseMode.ERF, "torch.aten.erf", "float"),
    (PointwiseMode.EXP, "torch.aten.exp", "float"),
    (PointwiseMode.FLOOR, "torch.aten.floor", "numeric"),
    (PointwiseMode.LOG, "torch.aten.log", "float"),
    (PointwiseMode.NEG, "torch.aten.neg", "numeric"),
    (PointwiseMode.RECIPROCAL, "torch.aten.reciprocal", "float"),
    (PointwiseMode.RELU_FWD, "torch.aten.relu", "numeric"),
    (PointwiseMode.RSQRT, "torch.aten.rsqrt", "float"),
    (PointwiseMode.SIGMOID_FWD, "torch.aten.sigmoid", "float"),
    (PointwiseMode.SIN, "torch.aten.sin", "float"),
    (PointwiseMode.SQRT, "torch.aten.sqrt", "float"),
    (PointwiseMode.TAN, "torch.aten.tan", "float"),
    (PointwiseMode.TANH_FWD, "torch.aten.tanh", "float"),
]:
    mode(_m, 1, domain=_domain)(_simple(_name))

for _m, _name, _domain in [
    (PointwiseMode.MUL, "torch.aten.mul.Tensor", "numeric"),
    (PointwiseMode.DIV, "torch.aten.div.Tensor", "float"),  # true division, as torch
    (PointwiseMode.MAX_OP, "torch.aten.maximum", "any"),
    (PointwiseMode.MIN_OP, "torch.aten.minimum", "any"),
]:
    mode(_m, 2, domain=_domain)(_simple(_name))

mode(PointwiseMode.ADD, 2)(_simple("torch.aten.add.Tensor", alpha=True))
mode(PointwiseMode.SUB, 2)(_simple("torch.aten.sub.Tensor", alpha=True))

for _m, _name in [
    (PointwiseMode.CMP_EQ, "torch.aten.eq.Tensor"),
    (PointwiseMode.CMP_NEQ, "torch.aten.ne.Tensor"),
    (PointwiseMode.CMP_LT, "torch.aten.lt.Tensor"),
    (PointwiseMode.CMP_LE, "torch.aten.le.Tensor"),
    (PointwiseMode.CMP_GT, "torch.aten.gt.Tensor"),
    (PointwiseMode.CMP_GE, "torch.aten.ge.Tensor"),
    (PointwiseMode.LOGICAL_AND, "torch.aten.logical_and"),
    (PointwiseMode.LOGICAL_OR, "torch.aten.logical_or"),
]:
    mode(_m, 2, domain="any", boolean_result=True)(_simple(_name, boolean=True))

mode(PointwiseMode.LOGICAL_NOT, 1, domain="any", boolean_result=True)(_simple("torch.aten.logical_not", boolean=True))
mode(PointwiseMode.BINARY_SELECT, 3, domain="any", select=True)(_simple("torch.aten.where.self"))


@mode(PointwiseMode.IDENTITY, 1, domain="any")
def _emit_identity(ctx: EmitContext, node: PointwiseNode, ops: list[ir.Value], compute: DataType) -> ir.Value:
    return ctx.b.op("torch.aten.clone", [ops[0], ctx.b.const_none()], _result(ctx, compute))


@mode(PointwiseMode.ADD_SQUARE, 2)
def _emit_add_square(ctx: EmitContext, node: PointwiseNode, ops: list[ir.Value], compute: DataType) -> ir.Value:
    a, b = ops
    square = ctx.b.op("torch.aten.mul.Tensor", [b, b], _like(b, compute))
    return ctx.b.op("torch.aten.add.Tensor", [a, square, ctx.b.const_int(1)], _result(ctx, compute))


@mode(PointwiseMode.ELU_FWD, 1, domain="float")
def _emit_elu(ctx: EmitContext, node: PointwiseNode, ops: list[ir.Value], compute: DataType) -> ir.Value:
    b = ctx.b
    args = [ops[0], b.const_float(node.attrs.elu_alpha), b.const_float(1.0), b.const_float(1.0)]
    return b.op("torch.aten.elu", args, _result(ctx, compute))


def _gelu(approximate: str) -> ModeEmitter:
    def emit(ctx: EmitContext, node: PointwiseNode, ops: list[ir.Value], compute: DataType) -> ir.Value:
        return ctx.b.op("torch.aten.gelu", [ops[0], ctx.b.const_str(approximate)], _result(ctx, compute))

    return emit


def _gelu_backward(approximate: str) -> ModeEmitter:
    def emit(ctx: EmitContext, node: PointwiseNode, ops: list[ir.Value], compute: DataType) -> ir.Value:
        args = [ops[0], ops[1], ctx.b.const_str(approximate)]
        return ctx.b.op("torch.aten.gelu_backward", args, _result(ctx, compute))

    return emit


mode(PointwiseMode.GELU_FWD, 1, domain="float")(_gelu("none"))
mode(PointwiseMode.GELU_APPROX_TANH_FWD, 1, domain="float")(_gelu("tanh"))
mode(PointwiseMode.GELU_BWD, 2, domain="float")(_gelu_backward("none"))
mode(PointwiseMode.GELU_APPROX_TANH_BWD, 2, domain="float")(_gelu_backward("tanh"))


@mode(PointwiseMode.RELU_BWD, 2)
def _emit_relu_bwd(ctx: EmitContext, node: PointwiseNode, ops: list[ir.Value], compute: DataType) -> ir.Value:
    return ctx.b.op("torch.aten.threshold_backward", [ops[0], ops[1], ctx.b.const_int(0)], _result(ctx, compute))


@mode(PointwiseMode.SOFTPLUS_FWD, 1, domain="float")
def _emit_softplus(ctx: EmitContext, node: PointwiseNode, ops: list[ir.Value], compute: DataType) -> ir.Value:
    b = ctx.b
    args = [ops[0], b.const_float(node.attrs.softplus_beta), b.const_float(node.attrs.softplus_threshold)]
    return b.op("torch.aten.softplus", args, _result(ctx, compute))


@mode(PointwiseMode.SWISH_FWD, 1, domain="float")
def _emit_swish(ctx: EmitContext, node: PointwiseNode, ops: list[ir.Value], compute: DataType) -> ir.Value:
    """x * sigmoid(beta * x)."""
    b, (x,) = ctx.b, ops
    scaled = b.op("torch.aten.mul.Scalar", [x, b.const_float(node.attrs.swish_beta)], _like(x, compute))
    sig = b.op("torch.aten.sigmoid", [scaled], _like(x, compute))
    return b.op("torch.aten.mul.Tensor", [x, sig], _result(ctx, compute))


@mode(PointwiseMode.SWISH_BWD, 2, domain="float")
def _emit_swish_bwd(ctx: EmitContext, node: PointwiseNode, ops: list[ir.Value], compute: DataType) -> ir.Value:
    """dy * (s + beta*x * s * (1 - s)) with s = sigmoid(beta * x)."""
    b, (dy, x) = ctx.b, ops
    t = _like(x, compute)
    scaled = b.op("torch.aten.mul.Scalar", [x, b.const_float(node.attrs.swish_beta)], t)
    sig = b.op("torch.aten.sigmoid", [scaled], t)
    one_minus = b.op("torch.aten.rsub.Scalar", [sig, b.const_float(1.0), b.const_int(1)], t)
    prod = b.op("torch.aten.mul.Tensor", [scaled, sig], t)
    prod = b.op("torch.aten.mul.Tensor", [prod, one_minus], t)
    deriv = b.op("torch.aten.add.Tensor", [sig, prod, b.const_int(1)], t)
    return b.op("torch.aten.mul.Tensor", [dy, deriv], _result(ctx, compute))


@mode(PointwiseMode.TANH_BWD, 2, domain="float")
def _emit_tanh_bwd(ctx: EmitContext, node: PointwiseNode, ops: list[ir.Value], compute: DataType) -> ir.Value:
    """tanh_backward(dy, tanh(x)) = dy * (1 - tanh(x)^2)."""
    dy, x = ops
    y = ctx.b.op("torch.aten.tanh", [x], _like(x, compute))
    return ctx.b.op("torch.aten.tanh_backward", [dy, y], _result(ctx, compute))


# ---------------------------------------------------------------------------
# Scalar semantics of torch elementwise ops, for the epilogue-fusion pass.
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
        return max(floats, key=sc.float_bits)
    ints = [e for e in elems if e != "i1"]
    return max(ints, key=sc.int_bits) if ints else "i1"


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
    ("torch.aten.sin", ir.math.SinOp),
    ("torch.aten.tan", ir.math.TanOp),
    ("torch.aten.tanh", ir.math.TanhOp),
    ("torch.aten.sqrt", ir.math.SqrtOp),
    ("torch.aten.rsqrt", ir.math.RsqrtOp),
]:
    elementwise_body(_name)(_math_unary(_op))


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
