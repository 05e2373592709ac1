"""Small generic helpers for IR rewrites (uses, constants, dead-op cleanup)."""

from __future__ import annotations

import ctypes
from collections.abc import Iterator

from fusilli.ir.bindings import BoolAttr, FloatAttr, IntegerAttr, Operation, OpResult, StringAttr, Value


def users(value: Value) -> list[Operation]:
    return [_as_operation(use.owner) for use in value.uses]


def _as_operation(op) -> Operation:
    return op if isinstance(op, Operation) else op.operation


def has_single_user(value: Value) -> bool:
    uses = list(value.uses)
    return len(uses) == 1


def constant_value(value: Value):
    """The Python value of a ``torch.constant.*`` (None for ``torch.constant.none``)."""
    owner = defining_op(value)
    if owner is None:
        raise ValueError("not a torch constant: a block argument")
    name = owner.name
    if name == "torch.constant.none":
        return None
    attr = owner.attributes["value"]
    if name == "torch.constant.int":
        return IntegerAttr(attr).value
    if name == "torch.constant.float":
        return FloatAttr(attr).value
    if name == "torch.constant.bool":
        return BoolAttr(attr).value
    if name == "torch.constant.str":
        return StringAttr(attr).value
    raise ValueError(f"not a torch constant: {name}")


def int_list_value(value: Value) -> list[int] | None:
    """The ints of a ``torch.prim.ListConstruct`` of int constants, else None."""
    owner = defining_op(value)
    if owner is None or owner.name != "torch.prim.ListConstruct":
        return None
    try:
        return [int(constant_value(v)) for v in owner.operands]
    except (ValueError, KeyError, TypeError):
        return None


def defining_op(value: Value) -> Operation | None:
    """The op producing ``value``; None for block arguments.

    (``Value.owner`` on a block argument aborts the process in these bindings,
    so the kind of value is checked first.)
    """
    value = value.maybe_downcast()
    if not isinstance(value, OpResult):
        return None
    return _as_operation(value.owner)


def permutation_of(op: Operation | None) -> list[int] | None:
    """The permutation of a ``torch.aten.permute`` op, else None."""
    if op is None or op.name != "torch.aten.permute":
        return None
    return int_list_value(op.operands[1])


def erase_dead(ops: list[Operation]) -> set[int]:
    """Erases the given ops once they have no uses, then any producer left dead.

    Only ops with results are erased: every value-producing op fusilli emits
    is side-effect free (the effects are ``torch.overwrite.tensor.contents``).
    Returns ``op_key`` of each erased op: an erased op must never be touched
    again (that can crash the process), so callers skip ops by key.
    """
    erased: set[int] = set()
    work = [op for op in ops if op is not None]
    while work:
        op = work.pop(0)
        key = op_key(op) if op_alive(op) else None
        if key is None or key in erased:
            continue
        if not len(op.results) or any(list(r.uses) for r in op.results):
            continue
        producers = [defining_op(v) for v in op.operands]
        op.erase()
        erased.add(key)
        work.extend(p for p in producers if p is not None)
    return erased


def op_key(op: Operation) -> int:
    """A stable identity of an op: its C pointer (Python wrappers and their
    hashes are not unique per op)."""
    capsule = op._CAPIPtr
    return _capsule_pointer(capsule, _capsule_name(capsule))


def op_alive(op: Operation) -> bool:
    try:
        op_key(op)
        return True
    except RuntimeError:  # "the operation has been invalidated"
        return False


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_pointer.restype = ctypes.c_void_p
_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.argtypes = [ctypes.py_object]
_capsule_name.restype = ctypes.c_char_p


def block_ops(block) -> Iterator[Operation]:
    for op in list(block.operations):
        yield op.operation if hasattr(op, "operation") else op


def func_blocks(module) -> Iterator:
    for op in module.body.operations:
        if op.operation.name == "func.func":
            for region in op.operation.regions:
                yield from region.blocks
