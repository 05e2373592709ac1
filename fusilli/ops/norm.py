"""Normalizations: ``batchnorm``, ``layernorm`` and ``rmsnorm`` (forward, inference
and training) — attributes, inference, checks, workload (lowered in
fusilli/lowering/norm.py).

Logical layouts follow PyTorch: the channel dim is logical dim 1, batchnorm's
scale/bias/running stats and its saved stats are 1-D ``[C]``; layer/rms norms
normalize over every dim but the batch dim 0, their scale/bias have X's dims
with the batch set to 1 and their saved stats are ``[B, 1, ..., 1]``
(contiguous). Epsilon and momentum are scalar constants (``Graph.scalar``),
given as the EPSILON/MOMENTUM input slots as in upstream Fusilli; the graph
methods make them from floats. Float inputs are computed in the node's
``compute_data_type`` and rounded once to each output's data type.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from fusilli.errors import ErrorCode
from fusilli.ops.base import Attrs, Node, Workload, register_node
from fusilli.tensor import TensorAttr, contiguous_strides, data_type_of, scalar_value_of
from fusilli.types import DataType


class NormPhase(enum.Enum):
    INFERENCE = "inference"
    TRAINING = "training"


@dataclass
class NormAttrs(Attrs):
    ENUM_FIELDS = {"phase": NormPhase}
    phase: NormPhase | None = None


class NormNodeBase(Node):
    """Checks shared by the norms: phase, scalar constants, X's layout, stats outputs."""

    attrs_type = NormAttrs
    attrs: NormAttrs
    label: str  # how messages name the op family ("BatchNorm", ...)
    scalar_slots: tuple[str, ...] = ("EPSILON",)
    stat_slots: tuple[str, ...] = ()  # outputs computed in training only

    @property
    def training(self) -> bool:
        return self.attrs.phase is NormPhase.TRAINING

    def prune_outputs(self) -> None:
        """Drops the outputs the phase does not compute (the stats, in inference)."""
        if self.attrs.phase is NormPhase.INFERENCE:
            for slot in self.stat_slots:
                self.outputs[slot] = None

    def pre_validate(self) -> None:
        if self.attrs.phase is None:
            raise self.error(ErrorCode.ATTRIBUTE_NOT_SET, f"{self.label} forward phase not set")
        for slot in self.scalar_slots:
            if self.inputs.get(slot) is None:
                raise self.error(ErrorCode.ATTRIBUTE_NOT_SET, f"{self.label} {slot.lower()} ({slot}) not set")
        super().pre_validate()
        for slot in self.scalar_slots:
            t = self.tensor(slot)
            self.check(
                t.is_scalar and data_type_of(t).is_float,
                ErrorCode.INVALID_ATTRIBUTE,
                f"{slot} '{t.name}' must be a floating-point scalar constant (made by Graph.scalar)",
            )
        x = self.tensor("X")
        self.check(
            x.rank >= 2, ErrorCode.INVALID_ATTRIBUTE, f"input tensor X '{x.name}' must have rank >= 2 (got {x.rank})"
        )
        for slot in self.stat_slots:
            stat = self.outputs.get(slot)
            if self.training:
                self.check(stat is not None, ErrorCode.ATTRIBUTE_NOT_SET, f"{self.label} output tensor {slot} not set")
            else:
                self.check(
                    stat is None,
                    ErrorCode.INVALID_ATTRIBUTE,
                    f"{self.label} output tensor {slot} '{stat.name if stat else ''}' must not be set in inference",
                )

    def scalar(self, slot: str) -> float:
        return float(scalar_value_of(self.tensor(slot)))

    def infer_y(self) -> None:
        x, y = self.tensor("X"), self.tensor("Y")
        if not y.has_dim:
            y.set_dim(x.dim)
            y.set_dynamic_dims(x.dynamic_dims)
        if not y.has_stride:
            self.infer_output_stride(y, like=x)

    def check_x_y(self) -> None:
        x, y = self.tensor("X"), self.tensor("Y")
        for slot, t in (("X", x), ("Y", y)):
            self.check_layout(slot, t)
            self.check_contiguous_or_channels_last(slot, t)
        self.check(
            y.dim == x.dim,
            ErrorCode.INVALID_ATTRIBUTE,
            f"output tensor Y '{y.name}' dims {y.dim} do not match input X '{x.name}' dims {x.dim}",
        )

    def check_dims(self, slot: str, expected: list[int], *, contiguous: bool = False) -> None:
        t = self.inputs.get(slot) if slot in self.inputs else self.outputs.get(slot)
        if t is None:
            return
        self.check(
            t.dim == expected,
            ErrorCode.INVALID_ATTRIBUTE,
            f"tensor {slot} '{t.name}' dims {t.dim} do not match the expected dims {expected}",
        )
        self.check_layout(slot, t)
        if contiguous:
            self.check(
                t.stride == contiguous_strides(t.dim) or t.is_contiguous,
                ErrorCode.INVALID_ATTRIBUTE,
                f"tensor {slot} '{t.name}' stride {t.stride} must be contiguous {contiguous_strides(t.dim)}",
            )

    def compute_element(self) -> DataType:
        x = self.data_type("X")
        cdt = self.compute_data_type
        return cdt if x.is_float and cdt is not None and cdt.is_float else x


def _set_stat(t: TensorAttr | None, dims: list[int], dynamic: list[int]) -> None:
    if t is None:
        return
    if not t.has_dim:
        t.set_dim(dims)
        t.set_dynamic_dims(dynamic)
    if not t.has_stride:
        t.set_stride(contiguous_strides(t.dim))


# ---------------------------------------------------------------------------------
# BatchNorm
# ---------------------------------------------------------------------------------
@register_node
class BatchNormNode(NormNodeBase):
    kind = "batchnorm"
    label = "BatchNorm"
    input_slots = ("X", "SCALE", "BIAS", "MEAN", "VAR", "EPSILON", "MOMENTUM")
    optional_inputs = frozenset({"SCALE", "BIAS", "MEAN", "VAR", "EPSILON", "MOMENTUM"})
    output_slots = ("Y", "SAVED_MEAN", "SAVED_INV_VARIANCE")
    scalar_slots = ("EPSILON", "MOMENTUM")
    stat_slots = ("SAVED_MEAN", "SAVED_INV_VARIANCE")

    def pre_validate(self) -> None:
        super().pre_validate()
        if not self.training:
            for slot in ("MEAN", "VAR"):
                self.check(
                    self.inputs.get(slot) is not None,
                    ErrorCode.ATTRIBUTE_NOT_SET,
                    f"BatchNorm input tensor {slot} (running statistics) not set; inference requires it",
                )

    def infer(self) -> None:
        self.infer_y()
        c = self.tensor("X").dim[1]
        for slot in self.stat_slots:
            _set_stat(self.outputs.get(slot), [c], [])

    def batch_split_slots(self) -> frozenset[str] | None:
        # Inference normalizes each image with the running statistics; training computes
        # statistics over the batch.
        return None if self.training else frozenset({"X", "Y"})

    def post_validate(self) -> None:
        self.check_x_y()
        c = self.tensor("X").dim[1]
        for slot in ("SCALE", "BIAS", "MEAN", "VAR", *self.stat_slots):
            self.check_dims(slot, [c], contiguous=True)


# ---------------------------------------------------------------------------------
# LayerNorm and RMSNorm: normalize over every dim but the batch dim 0.
# ---------------------------------------------------------------------------------
class FeatureNormNodeBase(NormNodeBase):
    affine_slots: tuple[str, ...]

    def batch_split_slots(self) -> frozenset[str]:
        # Each row normalizes over its own features; the affine tensors ([1, ...]) are read whole.
        return frozenset({"X", "Y", *self.stat_slots})

    def infer(self) -> None:
        self.infer_y()
        x = self.tensor("X")
        for slot in self.stat_slots:
            _set_stat(self.outputs.get(slot), [x.dim[0]] + [1] * (x.rank - 1), [0] if 0 in x.dynamic_dims else [])

    def post_validate(self) -> None:
        self.check_x_y()
        x = self.tensor("X")
        for slot in self.affine_slots:
            self.check_dims(slot, [1, *x.dim[1:]])
        for slot in self.stat_slots:
            self.check_dims(slot, [x.dim[0]] + [1] * (x.rank - 1), contiguous=True)


@register_node
class LayerNormNode(FeatureNormNodeBase):
    kind = "layernorm"
    label = "LayerNorm"
    input_slots = ("X", "SCALE", "BIAS", "EPSILON")
    optional_inputs = frozenset({"SCALE", "BIAS", "EPSILON"})
    output_slots = ("Y", "MEAN", "INV_VARIANCE")
    stat_slots = ("MEAN", "INV_VARIANCE")
    affine_slots = ("SCALE", "BIAS")

    def workload(self) -> Workload | None:
        """~8 flops per element for the static one-pass form (it selects the CPU layernorm flag rule)."""
        x = self.tensor("X")
        if x.dynamic_dims or not self.compute_element().is_float:
            return None
        n = 1
        for d in x.dim:
            n *= d
        return Workload(self.kind, data_type_of(x), 8 * n)


@register_node
class RmsNormNode(FeatureNormNodeBase):
    kind = "rmsnorm"
    label = "RmsNorm"
    input_slots = ("X", "SCALE", "EPSILON")
    optional_inputs = frozenset({"SCALE", "EPSILON"})
    output_slots = ("Y", "INV_RMS")
    stat_slots = ("INV_RMS",)
    affine_slots = ("SCALE",)
