"""Pointwise lowering: upstream Fusilli's torch ops for every ``PointwiseMode``.

``MODE_EMITTERS`` maps a mode to the function emitting its torch ops on logical
operands already cast to the compute element; ``emit_pointwise`` rounds the
result once to the output's data type.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from fusilli import ir
from fusilli.lowering.emit import EmitContext
from fusilli.lowering.registry import register_lowering
from fusilli.ops.pointwise import PointwiseMode, PointwiseNode, broadcast_shapes
from fusilli.types import DataType

# Emits a mode's torch ops: (ctx, node, logical operands, compute element) -> logical result.
ModeEmitter = Callable[[EmitContext, PointwiseNode, list[ir.Value], DataType], ir.Value]
MODE_EMITTERS: dict[PointwiseMode, ModeEmitter] = {}


def mode_emitter(m: PointwiseMode) -> Callable[[ModeEmitter], ModeEmitter]:
    def wrap(fn: ModeEmitter) -> ModeEmitter:
        MODE_EMITTERS[m] = fn
        return fn

    return wrap


@register_lowering(PointwiseNode)
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
    ctx.define("OUT_0", MODE_EMITTERS[node.checked_mode](ctx, node, operands, compute))


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


for _m, _name in [
    (PointwiseMode.ABS, "torch.aten.abs"),
    (PointwiseMode.CEIL, "torch.aten.ceil"),
    (PointwiseMode.ERF, "torch.aten.erf"),
    (PointwiseMode.EXP, "torch.aten.exp"),
    (PointwiseMode.FLOOR, "torch.aten.floor"),
    (PointwiseMode.LOG, "torch.aten.log"),
    (PointwiseMode.NEG, "torch.aten.neg"),
    (PointwiseMode.RECIPROCAL, "torch.aten.reciprocal"),
    (PointwiseMode.RELU_FWD, "torch.aten.relu"),
    (PointwiseMode.RSQRT, "torch.aten.rsqrt"),
    (PointwiseMode.SIGMOID_FWD, "torch.aten.sigmoid"),
    (PointwiseMode.SIN, "torch.aten.sin"),
    (PointwiseMode.SQRT, "torch.aten.sqrt"),
    (PointwiseMode.TAN, "torch.aten.tan"),
    (PointwiseMode.TANH_FWD, "torch.aten.tanh"),
    (PointwiseMode.MUL, "torch.aten.mul.Tensor"),
    (PointwiseMode.DIV, "torch.aten.div.Tensor"),  # true division, as torch
    (PointwiseMode.MAX_OP, "torch.aten.maximum"),
    (PointwiseMode.MIN_OP, "torch.aten.minimum"),
]:
    mode_emitter(_m)(_simple(_name))

mode_emitter(PointwiseMode.ADD)(_simple("torch.aten.add.Tensor", alpha=True))
mode_emitter(PointwiseMode.SUB)(_simple("torch.aten.sub.Tensor", alpha=True))

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
    mode_emitter(_m)(_simple(_name, boolean=True))

mode_emitter(PointwiseMode.LOGICAL_NOT)(_simple("torch.aten.logical_not", boolean=True))
mode_emitter(PointwiseMode.BINARY_SELECT)(_simple("torch.aten.where.self"))


@mode_emitter(PointwiseMode.IDENTITY)
def _emit_identity(ctx: EmitContext, node: PointwiseNode, ops: list[ir.Value], compute: DataType) -> ir.Value:
    return ctx.b.op("torch.aten.clone", [ops[0], ctx.b.const_none()], _result(ctx, compute))


@mode_emitter(PointwiseMode.ADD_SQUARE)
def _emit_add_square(ctx: EmitContext, node: PointwiseNode, ops: list[ir.Value], compute: DataType) -> ir.Value:
    """``a + b*b`` with ``b*b`` rounded before the add, as PyTorch computes it.

    IREE's CPU code contracts a multiply feeding an add into one FMA, whose exact
    product never overflows: ``-inf + 3e38**2`` came out -inf, not NaN. The square
    is therefore split by a comparison into its overflowed part (inf or 0) and the
    rest, added separately: equal to ``a + b*b`` for every input, and the square's
    other users keep LLVM from forming the FMA.
    """
    a, b = ops
    tb = ctx.b
    square_type = _like(b, compute)
    square = tb.op("torch.aten.mul.Tensor", [b, b], square_type)
    flag_type = _like(b, DataType.BOOLEAN)
    inf = tb.const_float(math.inf)
    overflowed = tb.op("torch.aten.eq.Scalar", [square, inf], flag_type)
    in_range = tb.op("torch.aten.ne.Scalar", [square, inf], flag_type)
    zero = tb.const_float(0.0)
    finite_part = tb.op("torch.aten.where.ScalarOther", [in_range, square, zero], square_type)
    infinite_part = tb.op("torch.aten.where.ScalarOther", [overflowed, square, zero], square_type)
    total = tb.op("torch.aten.add.Tensor", [a, finite_part, tb.const_int(1)], _result(ctx, compute))
    return tb.op("torch.aten.add.Tensor", [total, infinite_part, tb.const_int(1)], _result(ctx, compute))


@mode_emitter(PointwiseMode.ELU_FWD)
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


mode_emitter(PointwiseMode.GELU_FWD)(_gelu("none"))
mode_emitter(PointwiseMode.GELU_APPROX_TANH_FWD)(_gelu("tanh"))
mode_emitter(PointwiseMode.GELU_BWD)(_gelu_backward("none"))
mode_emitter(PointwiseMode.GELU_APPROX_TANH_BWD)(_gelu_backward("tanh"))


@mode_emitter(PointwiseMode.RELU_BWD)
def _emit_relu_bwd(ctx: EmitContext, node: PointwiseNode, ops: list[ir.Value], compute: DataType) -> ir.Value:
    return ctx.b.op("torch.aten.threshold_backward", [ops[0], ops[1], ctx.b.const_int(0)], _result(ctx, compute))


@mode_emitter(PointwiseMode.SOFTPLUS_FWD)
def _emit_softplus(ctx: EmitContext, node: PointwiseNode, ops: list[ir.Value], compute: DataType) -> ir.Value:
    b = ctx.b
    args = [ops[0], b.const_float(node.attrs.softplus_beta), b.const_float(node.attrs.softplus_threshold)]
    return b.op("torch.aten.softplus", args, _result(ctx, compute))


@mode_emitter(PointwiseMode.SWISH_FWD)
def _emit_swish(ctx: EmitContext, node: PointwiseNode, ops: list[ir.Value], compute: DataType) -> ir.Value:
    """x * sigmoid(beta * x)."""
    b, (x,) = ctx.b, ops
    scaled = b.op("torch.aten.mul.Scalar", [x, b.const_float(node.attrs.swish_beta)], _like(x, compute))
    sig = b.op("torch.aten.sigmoid", [scaled], _like(x, compute))
    return b.op("torch.aten.mul.Tensor", [x, sig], _result(ctx, compute))


@mode_emitter(PointwiseMode.SWISH_BWD)
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


@mode_emitter(PointwiseMode.TANH_BWD)
def _emit_tanh_bwd(ctx: EmitContext, node: PointwiseNode, ops: list[ir.Value], compute: DataType) -> ir.Value:
    """tanh_backward(dy, tanh(x)) = dy * (1 - tanh(x)^2)."""
    dy, x = ops
    y = ctx.b.op("torch.aten.tanh", [x], _like(x, compute))
    return ctx.b.op("torch.aten.tanh_backward", [dy, y], _result(ctx, compute))
