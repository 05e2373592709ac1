"""Pointwise ops: every ``PointwiseMode`` — arity, inference, checks.

``MODES`` maps a mode to its ``ModeSpec`` (input count, input domain, whether
the result is boolean); fusilli/lowering/pointwise.py emits each mode's torch
ops, and fusilli/ir/elementwise.py holds the scalar bodies epilogue fusion
builds from them.

Semantics are PyTorch's, including broadcasting of every input. Float inputs are
computed in the node's ``compute_data_type``; the result is rounded once to the
output's data type. Modes of the "float" domain (exp, gelu, sigmoid, div, ...)
compute integer and boolean inputs in floating point too, as ``torch.exp(int)``
does; comparison and logical modes give BOOLEAN results; ``binary_select(cond, a,
b)`` is ``torch.where(cond, a, b)`` (a non-boolean ``cond`` means ``cond != 0``).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce

from fusilli.errors import ErrorCode
from fusilli.ops.base import Attrs, Node, register_node
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


# Which input element types a mode computes on:
#   "float":   floating point; integer/boolean inputs are converted (torch.exp(int) is float)
#   "numeric": integers or floats; all-BOOLEAN inputs are rejected
#   "any":     booleans too (comparisons, logical ops, select, identity, max/min)
DOMAINS = ("float", "numeric", "any")


@dataclass(frozen=True)
class ModeSpec:
    arity: int
    domain: str = "numeric"
    boolean_result: bool = False
    select: bool = False  # IN_0 is a condition, not a value operand

    def __post_init__(self) -> None:
        assert self.domain in DOMAINS, self.domain


def _unary(domain: str = "numeric") -> ModeSpec:
    return ModeSpec(1, domain)


def _binary(domain: str = "numeric") -> ModeSpec:
    return ModeSpec(2, domain)


_M = PointwiseMode
_COMPARISON = ModeSpec(2, "any", boolean_result=True)
MODES: dict[PointwiseMode, ModeSpec] = {
    _M.ABS: _unary(),
    _M.CEIL: _unary(),
    _M.ERF: _unary("float"),
    _M.EXP: _unary("float"),
    _M.FLOOR: _unary(),
    _M.LOG: _unary("float"),
    _M.NEG: _unary(),
    _M.RECIPROCAL: _unary("float"),
    _M.RELU_FWD: _unary(),
    _M.RSQRT: _unary("float"),
    _M.SIGMOID_FWD: _unary("float"),
    _M.SIN: _unary("float"),
    _M.SQRT: _unary("float"),
    _M.TAN: _unary("float"),
    _M.TANH_FWD: _unary("float"),
    _M.MUL: _binary(),
    _M.DIV: _binary("float"),  # true division, as torch
    _M.MAX_OP: _binary("any"),
    _M.MIN_OP: _binary("any"),
    _M.ADD: _binary(),
    _M.SUB: _binary(),
    _M.CMP_EQ: _COMPARISON,
    _M.CMP_NEQ: _COMPARISON,
    _M.CMP_LT: _COMPARISON,
    _M.CMP_LE: _COMPARISON,
    _M.CMP_GT: _COMPARISON,
    _M.CMP_GE: _COMPARISON,
    _M.LOGICAL_AND: _COMPARISON,
    _M.LOGICAL_OR: _COMPARISON,
    _M.LOGICAL_NOT: ModeSpec(1, "any", boolean_result=True),
    _M.BINARY_SELECT: ModeSpec(3, "any", select=True),
    _M.IDENTITY: _unary("any"),
    _M.ADD_SQUARE: _binary(),
    _M.ELU_FWD: _unary("float"),
    _M.GELU_FWD: _unary("float"),
    _M.GELU_APPROX_TANH_FWD: _unary("float"),
    _M.GELU_BWD: _binary("float"),
    _M.GELU_APPROX_TANH_BWD: _binary("float"),
    _M.RELU_BWD: _binary(),
    _M.SOFTPLUS_FWD: _unary("float"),
    _M.SWISH_FWD: _unary("float"),
    _M.SWISH_BWD: _binary("float"),
    _M.TANH_BWD: _binary("float"),
}


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

    def batch_split_slots(self) -> frozenset[str]:
        """The output and the inputs that carry its dim 0; inputs broadcast along it (extent
        1 there, or of lower rank: right-aligned, they have no dim 0) are read whole."""
        out = self.tensor("OUT_0")
        carried = {
            s for s, t in zip(INPUT_SLOTS, self.operands()) if t.rank == out.rank and t.dim[0] == out.dim[0] != 1
        }
        return frozenset({"OUT_0", *carried})

    def row_split_slots(self) -> frozenset[str] | None:
        """A rank-4 output and the inputs that carry its dim 2 (H); inputs broadcast along it
        are read whole."""
        out = self.tensor("OUT_0")
        if out.rank != 4:
            return None
        carried = set()
        for slot, t in zip(INPUT_SLOTS, self.operands()):
            h = t.rank - 2  # the input's dim lined up with the output's H (broadcasting right-aligns)
            if h >= 0 and t.dim[h] == out.dim[2] != 1:
                if t.rank != 4:
                    return None  # it carries H but has no dim 2 to cut
                carried.add(slot)
        return frozenset({"OUT_0", *carried})

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
