"""Attribute helpers for structured (linalg / iree_linalg_ext) ops built by passes and emitters."""

from __future__ import annotations

from fusilli.ir.bindings import AffineMap, AffineMapAttr, ArrayAttr, Attribute


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
