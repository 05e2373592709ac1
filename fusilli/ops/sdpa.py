"""Scaled dot-product attention (forward): ``o = softmax(q @ k^T * scale + mask) @ v``.

Semantics are ``torch.nn.functional.scaled_dot_product_attention``: Q/K/V are
``[B, H, S, D]``; ``mask`` is additive (float) or boolean (True = attend),
broadcastable to ``[B, Hq, Sq, Skv]``; ``is_causal`` masks with a top-left
aligned lower triangle; ``scale`` defaults to ``1/sqrt(D)``; with
``enable_gqa`` the query heads share K/V heads (``Hq`` a multiple of ``Hk`` and
of ``Hv``, independently).

Lowered in fusilli/lowering/sdpa.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fusilli.errors import ErrorCode
from fusilli.ops.base import Attrs, Node, register_node
from fusilli.tensor import data_type_of
from fusilli.types import DataType


@dataclass
class SdpaAttrs(Attrs):
    is_causal: bool = False
    scale: float | None = None
    dropout: float = 0.0
    enable_gqa: bool = False


def broadcastable_to(dims: list[int], target: list[int]) -> bool:
    """Right-aligned PyTorch broadcast of ``dims`` to exactly ``target``."""
    if len(dims) > len(target):
        return False
    return all(d == 1 or d == t for d, t in zip(reversed(dims), reversed(target)))


@register_node
class SdpaNode(Node):
    kind = "sdpa"
    input_slots = ("Q", "K", "V", "MASK")
    output_slots = ("O",)
    optional_inputs = frozenset({"MASK"})
    attrs_type = SdpaAttrs
    attrs: SdpaAttrs

    def pre_validate(self) -> None:
        super().pre_validate()
        a = self.attrs
        self.check(
            0.0 <= a.dropout < 1.0,
            ErrorCode.INVALID_ATTRIBUTE,
            f"dropout probability {a.dropout} must be in [0, 1)",
        )
        self.check(
            a.dropout == 0.0,
            ErrorCode.NOT_IMPLEMENTED,
            f"dropout {a.dropout} > 0 is not supported: torch-mlir/IREE do not lower SDPA dropout (fusilli#277)",
        )
        self.check(
            not (a.is_causal and self.inputs.get("MASK") is not None),
            ErrorCode.INVALID_ATTRIBUTE,
            f"attention mask MASK '{getattr(self.inputs.get('MASK'), 'name', '')}' and is_causal are mutually "
            "exclusive",
        )
        self.check(
            a.scale is None or (math.isfinite(a.scale) and a.scale > 0),
            ErrorCode.INVALID_ATTRIBUTE,
            f"scale {a.scale} must be a positive finite number",
        )
        for slot in ("Q", "K", "V"):
            t = self.tensor(slot)
            self.check(
                t.rank == 4,
                ErrorCode.INVALID_ATTRIBUTE,
                f"tensor {slot} '{t.name}' must have rank 4 [batch, heads, seq, head_dim] (got dims {t.dim})",
            )
            dt = t.data_type
            if dt is not None:
                self.check(
                    dt.is_float,
                    ErrorCode.INVALID_ATTRIBUTE,
                    f"tensor {slot} '{t.name}' must have a floating-point data type (got {dt.name})",
                )

    def infer(self) -> None:
        q, v, o = self.tensor("Q"), self.tensor("V"), self.tensor("O")
        if not o.has_dim:
            o.set_dim([q.dim[0], q.dim[1], q.dim[2], v.dim[3]])
            o.set_dynamic_dims([d for d in q.dynamic_dims if d in (0, 2)])
        self.infer_output_stride(o)

    def batch_split_slots(self) -> frozenset[str]:
        # Attention never mixes batch entries; a mask broadcast over the batch is read whole.
        mask = self.inputs.get("MASK")
        carried = {"MASK"} if mask is not None and mask.dim[0] == self.tensor("Q").dim[0] != 1 else set()
        return frozenset({"Q", "K", "V", "O", *carried})

    def post_validate(self) -> None:
        q, k, v, o = (self.tensor(s) for s in ("Q", "K", "V", "O"))
        for slot, t in (("Q", q), ("K", k), ("V", v), ("O", o)):
            self.check_layout(slot, t)
        self.check(
            q.data_type == k.data_type == v.data_type,
            ErrorCode.INVALID_ATTRIBUTE,
            f"Q '{q.name}', K '{k.name}' and V '{v.name}' must have the same data type (got "
            f"{data_type_of(q).name}, {data_type_of(k).name}, {data_type_of(v).name})",
        )
        self.check(
            q.dim[0] == k.dim[0] == v.dim[0],
            ErrorCode.INVALID_ATTRIBUTE,
            f"batch sizes of Q '{q.name}' ({q.dim[0]}), K '{k.name}' ({k.dim[0]}) and V '{v.name}' ({v.dim[0]}) "
            "must be equal",
        )
        self.check(
            q.dim[3] == k.dim[3],
            ErrorCode.INVALID_ATTRIBUTE,
            f"head dim of Q '{q.name}' ({q.dim[3]}) must equal head dim of K '{k.name}' ({k.dim[3]})",
        )
        self.check(
            k.dim[2] == v.dim[2],
            ErrorCode.INVALID_ATTRIBUTE,
            f"sequence length of K '{k.name}' ({k.dim[2]}) must equal sequence length of V '{v.name}' ({v.dim[2]})",
        )
        hq = q.dim[1]
        for slot, t in (("K", k), ("V", v)):
            if self.attrs.enable_gqa:
                self.check(
                    hq % t.dim[1] == 0,
                    ErrorCode.INVALID_ATTRIBUTE,
                    f"with enable_gqa, heads of Q '{q.name}' ({hq}) must be a multiple of heads of {slot} "
                    f"'{t.name}' ({t.dim[1]})",
                )
            else:
                self.check(
                    t.dim[1] == hq,
                    ErrorCode.INVALID_ATTRIBUTE,
                    f"heads of {slot} '{t.name}' ({t.dim[1]}) must equal heads of Q '{q.name}' ({hq}) "
                    "(set enable_gqa=True for grouped-query attention)",
                )
        mask = self.inputs.get("MASK")
        if mask is not None:
            self.check_layout("MASK", mask)
            target = [q.dim[0], hq, q.dim[2], k.dim[2]]
            self.check(
                mask.rank == 4 and broadcastable_to(mask.dim, target),
                ErrorCode.INVALID_ATTRIBUTE,
                f"attention mask MASK '{mask.name}' dims {mask.dim} must have rank 4 with each dim 1 or equal to "
                f"[B, Hq, Sq, Skv] = {target}",
            )
            mask_dt = data_type_of(mask)
            self.check(
                mask_dt.is_float or mask_dt == DataType.BOOLEAN,
                ErrorCode.INVALID_ATTRIBUTE,
                f"attention mask MASK '{mask.name}' must be boolean or floating point (got {mask_dt.name})",
            )
        expected = [q.dim[0], hq, q.dim[2], v.dim[3]]
        self.check(
            o.dim == expected,
            ErrorCode.INVALID_ATTRIBUTE,
            f"output tensor O '{o.name}' dims {o.dim} do not match the inferred dims {expected}",
        )

        dynamic = any(t.dynamic_dims for t in (q, k, v))
        self.check(
            not (dynamic and (self.attrs.is_causal or k.dim[1] != hq or v.dim[1] != hq)),
            ErrorCode.NOT_IMPLEMENTED,
            f"dynamic dims of Q '{q.name}', K '{k.name}' or V '{v.name}' are not supported with is_causal or "
            "grouped-query heads (the causal mask and the head regrouping need static extents)",
        )
