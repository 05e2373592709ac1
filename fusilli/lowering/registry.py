"""Lowerings registered per node class and target backend, as JAX registers
lowerings per platform.

``@register_lowering(ConvFPropNode)`` registers the lowering every target uses;
``@register_lowering(SdpaNode, backend=Backend.AMDGPU)`` one for a single
backend, which ``lowering_for`` prefers over the generic one for that backend.
A lowering gets the node and the ``EmitContext`` (whose ``target`` says what the
IR is built for) and defines the node's outputs.

``@register_lowering_check(CustomOpNode)`` registers a validation step that
needs the MLIR bindings (parsing a custom op's template); ``Graph.validate``
runs it for node classes that set ``checked_by_lowering``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, cast

from fusilli.backend.targets import Backend
from fusilli.errors import ErrorCode, fail
from fusilli.ops.base import Node

if TYPE_CHECKING:
    from fusilli.lowering.emit import EmitContext

NodeT = TypeVar("NodeT", bound=Node)
Lowering = Callable[[Node, "EmitContext"], None]
LoweringCheck = Callable[[Node], None]

# (node class, backend or None for every backend) -> lowering
LOWERINGS: dict[tuple[type[Node], Backend | None], Lowering] = {}
LOWERING_CHECKS: dict[type[Node], LoweringCheck] = {}


def register_lowering(
    node_type: type[NodeT], *, backend: Backend | None = None
) -> Callable[[Callable[[NodeT, EmitContext], None]], Callable[[NodeT, EmitContext], None]]:
    """Registers the decorated function as ``node_type``'s lowering for ``backend`` (None: all)."""

    def wrap(fn: Callable[[NodeT, EmitContext], None]) -> Callable[[NodeT, EmitContext], None]:
        key = (node_type, backend)
        if key in LOWERINGS:
            raise RuntimeError(f"lowering of {node_type.__name__} for {backend or 'every backend'} registered twice")
        # lowering_for looks lowerings up by the node's exact class, so each one
        # only ever sees nodes of the class it is registered for.
        LOWERINGS[key] = cast("Lowering", fn)
        return fn

    return wrap


def lowering_for(node: Node, backend: Backend) -> Lowering:
    """The lowering of ``node`` on ``backend``: the backend's own, else the generic one."""
    node_type = type(node)
    fn = LOWERINGS.get((node_type, backend)) or LOWERINGS.get((node_type, None))
    if fn is None:
        raise node.error(
            ErrorCode.NOT_IMPLEMENTED, f"no lowering registered for {node_type.__name__} on {backend.value}"
        )
    return fn


def register_lowering_check(node_type: type[NodeT]) -> Callable[[Callable[[NodeT], None]], Callable[[NodeT], None]]:
    def wrap(fn: Callable[[NodeT], None]) -> Callable[[NodeT], None]:
        LOWERING_CHECKS[node_type] = cast("LoweringCheck", fn)
        return fn

    return wrap


def check_node(node: Node) -> None:
    """Runs the lowering's validation of ``node`` (its class sets ``checked_by_lowering``)."""
    check = LOWERING_CHECKS.get(type(node))
    if check is None:
        raise fail(ErrorCode.INTERNAL_ERROR, f"{node.kind} '{node.name}' asks for a lowering check; none is registered")
    check(node)
