"""The graph JSON format (``Graph.to_json`` / ``Graph.from_json``), checked field by field.

Every field of a document is checked before any of it is used, and every
malformed field is reported with its path (``$.nodes[1].attrs.padding[0]``) in
one ``INVALID_ARGUMENT`` error, instead of surfacing later as a ``KeyError``,
a silently truncated ``3.7`` or a ``RecursionError``.

Why a checked-structure layer and not the ``jsonschema`` library: fusilli keeps
its run-time dependencies to IREE, NumPy and ml_dtypes (``jsonschema`` brings
four more packages, one of them a compiled Rust extension), and the per-op
attribute schemas are derived here from the ``Attrs`` dataclasses' own type
hints, so they cannot drift from the code that reads them. Cross-references
(an input naming a tensor no one defines) are checked here too, which a JSON
Schema cannot express.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from fusilli.errors import ErrorCode, fail
from fusilli.ops import NODE_TYPES
from fusilli.ops.base import Attrs
from fusilli.types import DataType

JSON_FORMAT_VERSION = 1

# Tensor extents and strides are 64-bit signed integers in the compiled code.
INT64_MAX = 2**63 - 1

# Reported problems per document: enough to fix a file in one go, bounded for huge inputs.
_MAX_REPORTED = 20

# A field check appends "<path>: <problem>" lines to the list it is given.
Check = Callable[[Any, str, list[str]], None]


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return f"the number {value!r}" if math.isfinite(value) else f"the non-finite number {value!r}"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__


def is_int(value: Any) -> bool:
    """A JSON integer (``true`` and ``3.0`` are not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def int_check(lo: int = -INT64_MAX - 1, hi: int = INT64_MAX) -> Check:
    def check(value: Any, path: str, errors: list[str]) -> None:
        if not is_int(value):
            errors.append(f"{path}: expected an integer, got {_type_name(value)}")
        elif not lo <= value <= hi:
            errors.append(f"{path}: {value} is out of range [{lo}, {hi}]")

    return check


def _float(value: Any, path: str, errors: list[str]) -> None:
    # Attribute floats (epsilon, scale, elu alpha ...) are finite; NaN/Infinity are
    # JSON extensions Python accepts but no attribute means anything with.
    if not (isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)):
        errors.append(f"{path}: expected a finite number, got {_type_name(value)}")


def _scalar_value(value: Any, path: str, errors: list[str]) -> None:
    # A scalar constant may be any number (a -inf mask fill is legitimate) or a boolean.
    if not isinstance(value, int | float | bool):
        errors.append(f"{path}: expected a number or boolean, got {_type_name(value)}")


def _bool(value: Any, path: str, errors: list[str]) -> None:
    if not isinstance(value, bool):
        errors.append(f"{path}: expected true or false, got {_type_name(value)}")


def _str(value: Any, path: str, errors: list[str]) -> None:
    if not isinstance(value, str):
        errors.append(f"{path}: expected a string, got {_type_name(value)}")


def _name(value: Any, path: str, errors: list[str]) -> None:
    if not isinstance(value, str) or not value:
        errors.append(f"{path}: expected a non-empty name, got {_type_name(value)}")


def enum_check(enum_type: type[enum.Enum]) -> Check:
    def check(value: Any, path: str, errors: list[str]) -> None:
        if not isinstance(value, str) or value not in enum_type.__members__:
            names = ", ".join(enum_type.__members__)
            errors.append(f"{path}: expected one of {names}; got {_type_name(value)}")

    return check


def nullable(inner: Check) -> Check:
    def check(value: Any, path: str, errors: list[str]) -> None:
        if value is not None:
            inner(value, path, errors)

    return check


def list_check(item: Check) -> Check:
    def check(value: Any, path: str, errors: list[str]) -> None:
        if not isinstance(value, list):
            errors.append(f"{path}: expected an array, got {_type_name(value)}")
            return
        for i, v in enumerate(value):
            item(v, f"{path}[{i}]", errors)

    return check


def object_check(required: Mapping[str, Check], optional: Mapping[str, Check] = {}) -> Check:  # noqa: B006
    """An object with exactly these keys (unknown keys are errors: they are typos)."""

    def check(value: Any, path: str, errors: list[str]) -> None:
        if not isinstance(value, dict):
            errors.append(f"{path}: expected an object, got {_type_name(value)}")
            return
        for key, field_check in required.items():
            if key not in value:
                errors.append(f"{path}: missing field '{key}'")
            else:
                field_check(value[key], f"{path}.{key}", errors)
        for key, field_check in optional.items():
            if key in value:
                field_check(value[key], f"{path}.{key}", errors)
        for key in value:
            if key not in required and key not in optional:
                errors.append(f"{path}: unknown field {key!r}")

    return check


_DATA_TYPE = enum_check(DataType)
_DIMS = list_check(int_check(1, INT64_MAX))
_STRIDES = list_check(int_check(0, INT64_MAX))

TENSOR = object_check(
    {"name": _name, "dim": nullable(_DIMS), "stride": nullable(_STRIDES), "data_type": nullable(_DATA_TYPE)},
    {"is_virtual": _bool, "scalar_value": _scalar_value, "dynamic_dims": list_check(int_check(0, 64))},
)


def _annotation_check(annotation: Any) -> Check:
    """The check for one ``Attrs`` field type hint (int, float, bool, str, enums, lists, optionals)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(members) != len(typing.get_args(annotation)) - 1 or len(members) != 1:
            raise TypeError(f"unsupported attribute type {annotation!r}")
        return nullable(_annotation_check(members[0]))
    if origin is list:
        (item,) = typing.get_args(annotation)
        return list_check(_annotation_check(item))
    if annotation is bool:
        return _bool
    if annotation is int:
        return int_check()
    if annotation is float:
        return _float
    if annotation is str:
        return _str
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return enum_check(annotation)
    raise TypeError(f"unsupported attribute type {annotation!r}")


_ATTRS_CHECKS: dict[type[Attrs], Check] = {}


def attrs_check(attrs_type: type[Attrs]) -> Check:
    """The object check for an ``Attrs`` dataclass: every field optional (defaults apply)."""
    check = _ATTRS_CHECKS.get(attrs_type)
    if check is None:
        hints = typing.get_type_hints(attrs_type)
        fields = {f.name: _annotation_check(hints[f.name]) for f in dataclasses.fields(attrs_type)}
        check = _ATTRS_CHECKS[attrs_type] = object_check({}, fields)
    return check


def _slot_map(value: Any, path: str, errors: list[str], slots: tuple[str, ...] | None, prefix: str) -> None:
    """``{"SLOT": "tensor name" | null}``; ``slots`` None means numbered slots (custom ops)."""
    if not isinstance(value, dict):
        errors.append(f"{path}: expected an object, got {_type_name(value)}")
        return
    for slot, name in value.items():
        known = slot in slots if slots is not None else slot.startswith(prefix) and slot[len(prefix) :].isdigit()
        if not known:
            expected = ", ".join(slots) if slots is not None else f"{prefix}0, {prefix}1, ..."
            errors.append(f"{path}: unknown slot {slot!r} (expected {expected})")
        nullable(_name)(name, f"{path}.{slot}", errors)


_NODE_COMMON = {"kind": _str, "name": _name, "compute_data_type": nullable(_DATA_TYPE)}


def _node(value: Any, path: str, errors: list[str]) -> None:
    if not isinstance(value, dict):
        errors.append(f"{path}: expected an object, got {_type_name(value)}")
        return
    kind = value.get("kind")
    node_type = NODE_TYPES.get(kind) if isinstance(kind, str) else None
    if node_type is None:
        errors.append(f"{path}.kind: unknown op kind {_type_name(kind)}; expected one of {', '.join(NODE_TYPES)}")
        return
    numbered = node_type.kind == "custom_op"  # slots IN0.., OUT0.. set per instance

    def inputs(v: Any, p: str, e: list[str]) -> None:
        _slot_map(v, p, e, None if numbered else node_type.input_slots, "IN")

    def outputs(v: Any, p: str, e: list[str]) -> None:
        _slot_map(v, p, e, None if numbered else node_type.output_slots, "OUT")

    object_check(
        {
            **_NODE_COMMON,
            "inputs": inputs,
            "outputs": outputs,
            "attrs": attrs_check(node_type.attrs_type),
            "output_tensors": list_check(TENSOR),
        }
    )(value, path, errors)


DOCUMENT = object_check(
    {
        "format": int_check(JSON_FORMAT_VERSION, JSON_FORMAT_VERSION),
        "name": _name,
        "io_data_type": _DATA_TYPE,
        "intermediate_data_type": _DATA_TYPE,
        "compute_data_type": _DATA_TYPE,
        "inputs": list_check(TENSOR),
        "nodes": list_check(_node),
    },
    # A row-split half (fusilli/batch_split.py) is lowered as the whole it is this many parts of.
    {"lowered_as_parts": int_check(1, 1 << 20)},
)


def _check_references(doc: dict[str, Any], errors: list[str]) -> None:
    """Every tensor name is defined once, and every slot names a defined tensor."""
    defined: dict[str, str] = {}

    def define(t: dict[str, Any], path: str) -> None:
        name = t["name"]
        if name in defined:
            errors.append(f"{path}.name: tensor name {name!r} already defined at {defined[name]}")
        else:
            defined[name] = path

    for i, t in enumerate(doc["inputs"]):
        define(t, f"$.inputs[{i}]")
    for i, node in enumerate(doc["nodes"]):
        for j, t in enumerate(node["output_tensors"]):
            define(t, f"$.nodes[{i}].output_tensors[{j}]")
    for i, node in enumerate(doc["nodes"]):
        own = {t["name"] for t in node["output_tensors"]}
        for slot, name in node["inputs"].items():
            if name is not None and name not in defined:
                errors.append(f"$.nodes[{i}].inputs.{slot}: names tensor {name!r}, which no input or node defines")
        for slot, name in node["outputs"].items():
            if name is not None and name not in own:
                errors.append(
                    f"$.nodes[{i}].outputs.{slot}: names tensor {name!r}, which is not in this node's output_tensors"
                )


def load_graph_document(source: str | bytes | bytearray | Mapping[str, Any]) -> dict[str, Any]:
    """Parses (when given text) and checks a graph document; INVALID_ARGUMENT naming every bad field."""
    if isinstance(source, Mapping):
        # Round-trip through text: the checks below then see exactly what a file would hold.
        try:
            source = json.dumps(source)
        except RecursionError:
            raise fail(ErrorCode.INVALID_ARGUMENT, "graph document is nested too deeply to serialize") from None
        except (TypeError, ValueError) as e:
            raise fail(ErrorCode.INVALID_ARGUMENT, f"graph document is not JSON-serializable: {e}") from None
    if not isinstance(source, str | bytes | bytearray):
        raise fail(
            ErrorCode.INVALID_ARGUMENT,
            f"Graph.from_json takes JSON text or the dict Graph.to_dict returns, not {type(source).__name__}",
        )
    try:
        doc = json.loads(source)
    except json.JSONDecodeError as e:
        raise fail(ErrorCode.INVALID_ARGUMENT, f"graph JSON does not parse: {e}") from None
    except RecursionError:
        raise fail(
            ErrorCode.INVALID_ARGUMENT, "graph JSON is nested too deeply to parse (a graph document nests 6 levels)"
        ) from None
    except (UnicodeDecodeError, ValueError) as e:
        raise fail(ErrorCode.INVALID_ARGUMENT, f"graph JSON does not parse: {e}") from None
    errors: list[str] = []
    DOCUMENT(doc, "$", errors)
    if not errors:
        _check_references(doc, errors)
    if errors:
        shown = errors[:_MAX_REPORTED]
        more = f"\n  ... and {len(errors) - len(shown)} more" if len(errors) > len(shown) else ""
        raise fail(
            ErrorCode.INVALID_ARGUMENT,
            f"graph JSON is malformed ({len(errors)} problem{'s' if len(errors) > 1 else ''}):\n  "
            + "\n  ".join(shown)
            + more,
        )
    return doc
