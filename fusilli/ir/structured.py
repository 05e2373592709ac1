"""Attribute helpers for structured (linalg / iree_linalg_ext) ops built by passes and emitters."""

from __future__ import annotations

from fusilli.ir.bindings import AffineMap, AffineMapAttr, ArrayAttr, Attribute, Operation, Value


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


def optimization_barrier(value: Value) -> Value:
    """``util.optimization_barrier``: IREE keeps ``value`` materialized (no folding or fusion across it)."""
    return Operation.create("util.optimization_barrier", results=[value.type], operands=[value]).result
