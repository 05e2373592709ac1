"""Convolution: forward (``conv_fprop``), data gradient (``conv_dgrad``) and weight
gradient (``conv_wgrad``) — attributes, inference, checks, workload (lowered in
fusilli/lowering/conv.py).

Logical layouts are channels-first (X ``[N, C, (D,) H, W]``, W ``[K, C/g, ...]``,
Y ``[N, K, ...]``) whatever the memory layout; the group count is implied by
``X.C / W.C`` as in upstream Fusilli. The gradient ops cannot infer the shape of their
result (stride and output padding make it ambiguous; groups are implied by it),
so the caller sets DX/DW dims; only their strides are inferred, from DY's layout.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fusilli.errors import ErrorCode
from fusilli.ops.base import Attrs, Node, Workload, register_node
from fusilli.tensor import TensorAttr, channels_last_order, contiguous_strides, data_type_of, strides_for_order


@dataclass
class ConvAttrs(Attrs):
    padding: list[int] | None = None
    stride: list[int] | None = None
    dilation: list[int] | None = None


def infer_conv_output_dims(
    x_dim: Sequence[int], w_dim: Sequence[int], padding: Sequence[int], stride: Sequence[int], dilation: Sequence[int]
) -> list[int]:
    """``out = 1 + (in + 2*pad - dil*(k-1) - 1) // stride`` per spatial dim."""
    spatial = [
        1 + (x_dim[i + 2] + 2 * padding[i] - dilation[i] * (w_dim[i + 2] - 1) - 1) // stride[i]
        for i in range(len(x_dim) - 2)
    ]
    return [x_dim[0], w_dim[0], *spatial]


def layout_like(dim: Sequence[int], reference: TensorAttr) -> list[int]:
    """Contiguous strides if ``reference`` is contiguous, else channels-last."""
    if reference.is_contiguous:
        return contiguous_strides(dim)
    return strides_for_order(dim, channels_last_order(len(dim)))


class ConvNodeBase(Node):
    """Checks shared by the convolution family (padding/stride/dilation, ranks)."""

    attrs_type = ConvAttrs
    attrs: ConvAttrs

    def pre_validate(self) -> None:
        super().pre_validate()
        for field in ("padding", "stride", "dilation"):
            if getattr(self.attrs, field) is None:
                raise self.error(ErrorCode.ATTRIBUTE_NOT_SET, f"conv {field} not set")
        first = self.tensor(self.input_slots[0])
        spatial = first.rank - 2
        self.check(
            first.rank >= 3,
            ErrorCode.INVALID_ATTRIBUTE,
            f"tensor {self.input_slots[0]} '{first.name}' must have rank >= 3 (got {first.rank})",
        )
        for field in ("padding", "stride", "dilation"):
            values = getattr(self.attrs, field)
            self.check(
                len(values) == spatial,
                ErrorCode.INVALID_ATTRIBUTE,
                f"conv {field} {list(values)} has {len(values)} entries but the conv has {spatial} spatial dims",
            )
        self.check(
            all(p >= 0 for p in self.padding),
            ErrorCode.INVALID_ATTRIBUTE,
            f"conv padding {self.padding} must be non-negative",
        )
        for field in ("stride", "dilation"):
            self.check(
                all(v >= 1 for v in getattr(self.attrs, field)),
                ErrorCode.INVALID_ATTRIBUTE,
                f"conv {field} {getattr(self.attrs, field)} must be positive",
            )

    def _param(self, field: str, values: list[int] | None) -> list[int]:
        if values is None:
            raise self.error(ErrorCode.ATTRIBUTE_NOT_SET, f"conv {field} not set")
        return values

    @property
    def padding(self) -> list[int]:
        """The padding attribute; ATTRIBUTE_NOT_SET while unset (pre_validate checks it)."""
        return self._param("padding", self.attrs.padding)

    @property
    def stride(self) -> list[int]:
        return self._param("stride", self.attrs.stride)

    @property
    def dilation(self) -> list[int]:
        return self._param("dilation", self.attrs.dilation)

    def check_groups(self, x_slot: str, x: TensorAttr, w: TensorAttr, out_channels: int, w_slot: str = "W") -> int:
        """Validates the implied group count and returns it."""
        in_c, filt_c = x.dim[1], w.dim[1]
        self.check(
            filt_c > 0 and in_c % filt_c == 0,
            ErrorCode.INVALID_ATTRIBUTE,
            f"input channels of {x_slot} '{x.name}' ({in_c}) must be divisible by filter channels of "
            f"{w_slot} '{w.name}' ({filt_c})",
        )
        groups = in_c // filt_c
        self.check(
            out_channels % groups == 0,
            ErrorCode.INVALID_ATTRIBUTE,
            f"output channels of {w_slot} '{w.name}' ({out_channels}) must be divisible by the group count ({groups})",
        )
        return groups

    def conv_operands(self) -> tuple[TensorAttr, TensorAttr, TensorAttr]:
        """The forward conv's (X, W, Y) in this node's tensors."""
        raise NotImplementedError

    def rows_split_apart(self) -> bool:
        """Whether the forward conv is 2-D, 1x1 and unpadded with halves of rows that line up
        (``row_split_slots``): output row ``i`` reads input row ``stride * i`` only, and with a row
        stride ``s`` the first ``H / 2`` input rows are exactly those the first half of the output
        rows read where X's ``H`` is a multiple of ``2 s`` (stride 1: the plan checks H even)."""
        x, w, _ = self.conv_operands()
        pointwise = w.rank == 4 and w.dim[2:] == [1, 1] and not any(self.padding)
        return pointwise and (self.stride[0] == 1 or x.dim[2] % (2 * self.stride[0]) == 0)

    @property
    def groups(self) -> int:
        """Implied by the channel counts: X.C / W.C (upstream has no groups attribute)."""
        x, w, _ = self.conv_operands()
        return x.dim[1] // w.dim[1]

    def workload(self) -> Workload:
        """2 * |Y| * C/groups * |filter| multiply-adds, for fprop, dgrad and wgrad alike."""
        x, w, y = self.conv_operands()
        taps = math.prod(w.dim[1:])  # C/groups * kernel extents
        return Workload(self.kind, data_type_of(x), 2 * math.prod(y.dim) * taps)

    def checked_output_dims(self, x_slot: str, x: TensorAttr, w_slot: str, w: TensorAttr) -> list[int]:
        """The forward conv's output dims, after checking the filter fits the padded input."""
        expected = infer_conv_output_dims(x.dim, w.dim, self.padding, self.stride, self.dilation)
        self.check(
            all(d > 0 for d in expected[2:]),
            ErrorCode.INVALID_ATTRIBUTE,
            f"filter {w_slot} '{w.name}' {w.dim[2:]} (dilation {self.attrs.dilation}) is larger than the padded "
            f"input {x_slot} '{x.name}' {x.dim[2:]}",
        )
        return expected

    def check_same_rank(self, *slots: str) -> None:
        ranks = {s: self.tensor(s).rank for s in slots}
        self.check(
            len(set(ranks.values())) == 1,
            ErrorCode.INVALID_ATTRIBUTE,
            "tensors must have the same rank: " + ", ".join(f"{s} rank {r}" for s, r in ranks.items()),
        )


@register_node
class ConvFPropNode(ConvNodeBase):
    kind = "conv_fprop"
    input_slots = ("X", "W")
    output_slots = ("Y",)

    def infer(self) -> None:
        x, w, y = self.tensor("X"), self.tensor("W"), self.tensor("Y")
        self.check_same_rank("X", "W")
        if not y.has_dim:
            y.set_dim(self.checked_output_dims("X", x, "W", w))
            y.set_dynamic_dims([d for d in x.dynamic_dims if d == 0])
        if not y.has_stride:
            y.set_stride(layout_like(y.dim, x))

    def post_validate(self) -> None:
        x, w, y = self.tensor("X"), self.tensor("W"), self.tensor("Y")
        for slot, t in (("X", x), ("W", w), ("Y", y)):
            self.check_layout(slot, t)
            self.check_contiguous_or_channels_last(slot, t)
        self.check_groups("X", x, w, w.dim[0])
        expected = self.checked_output_dims("X", x, "W", w)
        self.check(
            y.dim == expected,
            ErrorCode.INVALID_ATTRIBUTE,
            f"output tensor Y '{y.name}' dims {y.dim} do not match the inferred conv output dims {expected}",
        )

    def conv_operands(self) -> tuple[TensorAttr, TensorAttr, TensorAttr]:
        return self.tensor("X"), self.tensor("W"), self.tensor("Y")

    def batch_split_slots(self) -> frozenset[str]:
        return frozenset({"X", "Y"})  # each image's output reads that image only

    def row_split_slots(self) -> frozenset[str] | None:
        """A 2-D 1x1 unpadded conv whose halves of rows line up (``rows_split_apart``; a
        half-height conv then has half the output rows)."""
        return frozenset({"X", "Y"}) if self.rows_split_apart() else None


class ConvGradNodeBase(ConvNodeBase):
    """dgrad/wgrad: DY plus one forward operand in, the other forward operand's gradient out.

    ``FORWARD`` maps the forward conv's X and W slots to this node's tensors.
    """

    FORWARD: dict[str, str]

    @property
    def result_slot(self) -> str:
        return self.output_slots[0]

    def infer(self) -> None:
        dy, out = self.tensor("DY"), self.tensor(self.result_slot)
        self.check(
            out.has_dim,
            ErrorCode.ATTRIBUTE_NOT_SET,
            f"output tensor {self.result_slot} '{out.name}' dims not set ({self.kind} cannot infer them; "
            f"call set_dim on the result)",
        )
        if not out.has_stride:
            self.check(
                out.rank == dy.rank,
                ErrorCode.INVALID_ATTRIBUTE,
                f"output tensor {self.result_slot} '{out.name}' rank {out.rank} differs from DY '{dy.name}' "
                f"rank {dy.rank}",
            )
            out.set_stride(layout_like(out.dim, dy))

    def post_validate(self) -> None:
        slots = ("DY", *[s for s in self.input_slots if s != "DY"], self.result_slot)
        self.check_same_rank(*slots)
        for slot in slots:
            t = self.tensor(slot)
            self.check_layout(slot, t)
            self.check_contiguous_or_channels_last(slot, t)
        x_slot, w_slot = self.FORWARD["X"], self.FORWARD["W"]
        x, w, dy = self.tensor(x_slot), self.tensor(w_slot), self.tensor("DY")
        self.check_groups(x_slot, x, w, w.dim[0], w_slot)
        expected = self.checked_output_dims(x_slot, x, w_slot, w)
        self.check(
            dy.dim == expected,
            ErrorCode.INVALID_ATTRIBUTE,
            f"gradient tensor DY '{dy.name}' dims {dy.dim} do not match the conv output dims {expected} "
            f"of {x_slot} '{x.name}' {x.dim} and {w_slot} '{w.name}' {w.dim}",
        )

    def conv_operands(self) -> tuple[TensorAttr, TensorAttr, TensorAttr]:
        return self.tensor(self.FORWARD["X"]), self.tensor(self.FORWARD["W"]), self.tensor("DY")


@register_node
class ConvDGradNode(ConvGradNodeBase):
    kind = "conv_dgrad"
    input_slots = ("DY", "W")
    output_slots = ("DX",)
    FORWARD = {"X": "DX", "W": "W"}

    def batch_split_slots(self) -> frozenset[str]:
        return frozenset({"DY", "DX"})  # each image's gradient reads that image's DY only

    def row_split_slots(self) -> frozenset[str] | None:
        """A 2-D 1x1 unpadded stride-1 data gradient: DX row ``i`` reads DY row ``i`` only (a
        strided one writes zeros between the rows it reads; it is not split)."""
        stride_1 = all(s == 1 for s in self.stride)
        return frozenset({"DY", "DX"}) if stride_1 and self.rows_split_apart() else None


@register_node
class ConvWGradNode(ConvGradNodeBase):
    kind = "conv_wgrad"
    input_slots = ("DY", "X")
    output_slots = ("DW",)
    FORWARD = {"X": "X", "W": "DW"}

    def batch_split_slots(self) -> frozenset[str]:
        return frozenset({"DY", "X"})  # DW sums over the images: each half's is a partial sum

    def row_split_slots(self) -> frozenset[str] | None:
        """A 2-D 1x1 unpadded weight gradient: DY row ``i`` pairs with X row ``stride * i`` only,
        so each half of DY's rows sums with its half of X's (the halves line up as for the
        forward conv, ``rows_split_apart``) into a partial DW."""
        return frozenset({"DY", "X"}) if self.rows_split_apart() else None

    def summed_split_slots(self, axis: int) -> frozenset[str]:
        return frozenset({"DW"})  # a sum over the images and output positions
