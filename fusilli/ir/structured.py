"""Attribute helpers for structured (linalg / iree_linalg_ext) ops built by passes and emitters, and
the reshape and barrier ops they put between them."""

from __future__ import annotations

from collections.abc import Sequence

from fusilli.ir.bindings import (
    AffineMap,
    AffineMapAttr,
    ArrayAttr,
    Attribute,
    InsertionPoint,
    IntegerAttr,
    IntegerType,
    Operation,
    RankedTensorType,
    Value,
    arith,
    linalg,
    tensor,
)


def indexing_maps(*maps: AffineMap) -> ArrayAttr:
    """The ``indexing_maps`` attribute of a structured op."""
    return ArrayAttr.get([AffineMapAttr.get(m) for m in maps])


def iterator_types(*kinds: str) -> ArrayAttr:
    """``iterator_types`` from ``"parallel"`` / ``"reduction"`` (the bindings have no
    Python builder for the linalg iterator-type attribute)."""
    for kind in kinds:
        if kind not in ("parallel", "reduction"):
            raise ValueError(f"unknown iterator type {kind!r}")
    return ArrayAttr.get([Attribute.parse(f"#linalg.iterator_type<{kind}>") for kind in kinds])


def reassociation(groups: Sequence[Sequence[int]]) -> ArrayAttr:
    """The ``reassociation`` of a ``tensor.collapse_shape`` / ``expand_shape``: which source dims
    (or result dims) each group of ``groups`` joins."""
    i64 = IntegerType.get_signless(64)
    return ArrayAttr.get([ArrayAttr.get([IntegerAttr.get(i64, d) for d in group]) for group in groups])


def expand_shape(value: Value, groups: Sequence[Sequence[int]], shape: Sequence[int]) -> Value:
    """``tensor.expand_shape`` of the static ``value`` to ``shape``, each of its dims split into the
    result dims of its group in ``groups``."""
    element = RankedTensorType(value.type).element_type
    return tensor.ExpandShapeOp(
        RankedTensorType.get(list(shape), element), value, reassociation(groups), [], list(shape)
    ).result


def collapse_shape(value: Value, groups: Sequence[Sequence[int]]) -> Value:
    """``tensor.collapse_shape`` of the static ``value``, the dims of each group in ``groups`` joined
    into one."""
    source = RankedTensorType(value.type)
    shape = [1] * len(groups)
    for i, group in enumerate(groups):
        for d in group:
            shape[i] *= source.get_dim_size(d)
    return tensor.CollapseShapeOp(RankedTensorType.get(shape, source.element_type), value, reassociation(groups)).result


def fusion_barrier(value: Value) -> Value:
    """``iree_tensor_ext.compute_barrier.start``: IREE computes ``value`` in a dispatch of its own
    (no folding or fusion of the ops that made it into its consumer).

    Not ``util.optimization_barrier``, which IREE's stream conversion keeps as a barrier on the
    resource: the call's work is split into two submissions with a host wait between them, and
    the resource crossing it is allocated per call instead of in the caller's workspace (the
    module's transients size reads 0). ResNet-50's 1x1 1x64x56x56->64 and 3x3 1x512x7x7->512 ran
    1.04-1.12 -> 1.15-1.16 and 1.05-1.07 -> 1.08-1.10 of PyTorch (EPYC Zen 1 VM, in one process);
    a weight gradient whose 74 MB of transients then went through mmap every call, 47 -> 65 ms."""
    return Operation.create("iree_tensor_ext.compute_barrier.start", results=[value.type], operands=[value]).result


def contraction(a: Value, b: Value, init: Value, maps: Sequence[AffineMap], iterators: Sequence[str]) -> Operation:
    """A ``linalg.generic`` accumulating ``a * b`` into ``init`` (zero-filled by the caller) through
    ``maps`` (a's, b's, init's) over dims of ``iterators``: a GEMM whose operands keep a layout
    ``linalg.matmul`` has no form for. Returns the op (for a lowering config)."""
    element = RankedTensorType(init.type).element_type
    gemm = linalg.GenericOp([init.type], [a, b], [init], indexing_maps(*maps), iterator_types(*iterators))
    block = gemm.regions[0].blocks.append(element, element, element)
    with InsertionPoint(block):
        product = arith.MulFOp(block.arguments[0], block.arguments[1]).result
        linalg.YieldOp([arith.AddFOp(block.arguments[2], product).result])
    return gemm.operation


def sum_into(
    value: Value, init: Value, value_map: AffineMap, init_map: AffineMap, iterators: Sequence[str]
) -> Operation:
    """A ``linalg.generic`` adding the elements of ``value`` (read through ``value_map``) into
    ``init`` (zero-filled by the caller; ``init_map``) over dims of ``iterators``: the sums of
    partial results that passes split a reduction into. Returns the op (for a lowering config)."""
    element = RankedTensorType(init.type).element_type
    total = linalg.GenericOp(
        [init.type], [value], [init], indexing_maps(value_map, init_map), iterator_types(*iterators)
    )
    block = total.regions[0].blocks.append(element, element)
    with InsertionPoint(block):
        linalg.YieldOp([arith.AddFOp(block.arguments[1], block.arguments[0]).result])
    return total.operation
