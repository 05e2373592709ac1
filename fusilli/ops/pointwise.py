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
output's data type.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable, Sequence

from fusilli import ir
from fusilli.errors import ErrorCode
from fusilli.ir import scalar as sc
from fusilli.ir.rewrite import constant_value
from fusilli.ops.base import Attrs, Node, register_emitter, register_node
from fusilli.ops.emit import EmitContext
from fusilli.tensor import TensorAttr
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


@dataclass(frozen=True)
class ModeSpec:
    arity: int
    emit: ModeEmitter
    boolean_result: bool = False
    float_only: bool = False


MODES: dict[PointwiseMode, ModeSpec] = {}


def mode(m: PointwiseMode, arity: int, *, boolean_result: bool = False, float_only: bool = False):
    def wrap(fn: ModeEmitter) -> ModeEmitter:
        MODES[m] = ModeSpec(arity, fn, boolean_result, float_only)
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
    def spec(self) -> ModeSpec:
        spec = MODES.get(self.attrs.mode)
        if spec is None:
            raise self.error(ErrorCode.NOT_IMPLEMENTED, f"pointwise mode {self.attrs.mode.name} is not implemented")
        return spec

    def pre_validate(self) -> None:
        if self.attrs.mode is None:
            raise self.error(ErrorCode.ATTRIBUTE_NOT_SET, "pointwise mode not set")
        spec = self.spec
        for i, slot in enumerate(INPUT_SLOTS):
            t = self.inputs.get(slot)
            if i < spec.arity and t is None:
                raise self.error(ErrorCode.ATTRIBUTE_NOT_SET, f"{self.attrs.mode.name} mode requires {slot} input")
            if i >= spec.arity and t is not None:
                raise self.error(
                    ErrorCode.INVALID_ATTRIBUTE, f"{self.attrs.mode.name} mode should not have {slot} input set"
                )
        super().pre_validate()

    def operands(self) -> list[TensorAttr]:
        return [self.inputs[s] for s in INPUT_SLOTS[: self.spec.arity]]

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
        if self.spec.float_only:
            for slot, t in zip(INPUT_SLOTS, ins):
                self.check(
                    t.data_type.is_float,
                    ErrorCode.INVALID_ATTRIBUTE,
                    f"{self.attrs.mode.name} needs floating-point inputs but {slot} '{t.name}' is "
                    f"{t.data_type.name}",
                )

    def compute_element(self) -> DataType:
        """Float inputs compute in compute_data_type; otherwise the promoted input type."""
        ins = self.operands()
        promoted = ins[0].data_type
        for t in ins[1:]:
            promoted = promote(promoted, t.data_type)
        cdt = self.compute_data_type
        if promoted.is_float and cdt is not None and cdt.is_float:
            return cdt
        return promoted


@register_emitter("pointwise")
def emit_pointwise(node: PointwiseNode, ctx: EmitContext) -> None:
    spec = node.spec
    compute = node.compute_element()
    operands = []
    for t in node.operands():
        v = ctx.logical(t)
        if t.data_type.is_float and compute.is_float:
            v = ctx.cast(v, compute)
        operands.append(v)
    ctx.define("OUT_0", spec.emit(ctx, node, operands, compute))


def _result(ctx: EmitContext, element: DataType) -> ir.Type:
    return ctx.result_type("OUT_0", element=element)


def _unary(torch_name: str) -> ModeEmitter:
    def emit(ctx: EmitContext, node: PointwiseNode, ops: list[ir.Value], compute: DataType) -> ir.Value:
        return ctx.b.op(torch_name, ops, _result(ctx, compute))

    return emit


def _binary_alpha(torch_name: str) -> ModeEmitter:
    def emit(ctx: EmitContext, node: PointwiseNode, ops: list[ir.Value], compute: DataType) -> ir.Value:
        return ctx.b.op(torch_name, [ops[0], ops[1], ctx.b.const_int(1)], _result(ctx, compute))

    return emit


def _binary(torch_name: str) -> ModeEmitter:
    def emit(ctx: EmitContext, node: PointwiseNode, ops: list[ir.Value], compute: DataType) -> ir.Value:
        return ctx.b.op(torch_name, ops, _result(ctx, compute))

    return emit


mode(PointwiseMode.ADD, 2)(_binary_alpha("torch.aten.add.Tensor"))
mode(PointwiseMode.SUB, 2)(_binary_alpha("torch.aten.sub.Tensor"))
mode(PointwiseMode.MUL, 2)(_binary("torch.aten.mul.Tensor"))
mode(PointwiseMode.RELU_FWD, 1)(_unary("torch.aten.relu"))


@mode(PointwiseMode.DIV, 2)
def _emit_div(ctx: EmitContext, node: PointwiseNode, ops: list[ir.Value], compute: DataType) -> ir.Value:
    # torch true division makes integer operands float; the output dtype decides the rest.
    element = compute if compute.is_float else node.tensor("OUT_0").data_type
    if not element.is_float:
        element = DataType.FLOAT
    return ctx.b.op("torch.aten.div.Tensor", ops, _result(ctx, element))


# ---------------------------------------------------------------------------
# Scalar semantics of torch elementwise ops, for the epilogue-fusion pass.
# A body gets the op, its tensor operands as (scalar, torch element) pairs and
# the result's torch element, and returns the scalar result.
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


def _as(args: list[tuple[ir.Value, str]], elem: str) -> list[ir.Value]:
    return [sc.convert(v, e, elem) for v, e in args]


def _arith_binary(float_op, int_op) -> ScalarBody:
    def body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
        a, b = _as(args, out)
        return (float_op if sc.is_float(out) else int_op)(a, b).result

    return body


def _alpha_body(float_op, int_op) -> ScalarBody:
    def body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
        a, b = _as(args, out)
        alpha = constant_operand(op, 2)
        if alpha != 1:
            mul = ir.arith.MulFOp if sc.is_float(out) else ir.arith.MulIOp
            b = mul(b, sc.constant(out, alpha)).result
        return (float_op if sc.is_float(out) else int_op)(a, b).result

    return body


elementwise_body("torch.aten.add.Tensor")(_alpha_body(ir.arith.AddFOp, ir.arith.AddIOp))
elementwise_body("torch.aten.sub.Tensor")(_alpha_body(ir.arith.SubFOp, ir.arith.SubIOp))
elementwise_body("torch.aten.mul.Tensor")(_arith_binary(ir.arith.MulFOp, ir.arith.MulIOp))


@elementwise_body("torch.aten.div.Tensor")
def _div_body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
    a, b = _as(args, out)
    return ir.arith.DivFOp(a, b).result


@elementwise_body("torch.aten.relu")
def _relu_body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
    (x,) = _as(args, out)
    zero = sc.constant(out, 0)
    if sc.is_float(out):
        return ir.arith.MaximumFOp(x, zero).result
    return ir.arith.MaxSIOp(x, zero).result


@elementwise_body("torch.aten.to.dtype")
def _to_dtype_body(op: ir.Operation, args: list[tuple[ir.Value, str]], out: str) -> ir.Value:
    (v, e) = args[0]
    return sc.convert(v, e, out)
