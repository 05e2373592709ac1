"""Lowerings: for each node class and target, the function that builds the node's
torch-dialect IR, registered with ``register_lowering`` (one module per op
family), and the driver that emits a validated graph's module for a target.

Importing this package registers every lowering (and imports the MLIR bindings).
"""

from fusilli.lowering import (  # noqa: F401  (registration)
    conv,
    custom,
    matmul,
    norm,
    pointwise,
    reduction,
    sdpa,
)
from fusilli.lowering.driver import emit_module
from fusilli.lowering.emit import EmitContext
from fusilli.lowering.registry import (
    LOWERING_CHECKS,
    LOWERINGS,
    check_node,
    lowering_for,
    register_lowering,
    register_lowering_check,
)

__all__ = [
    "LOWERINGS",
    "LOWERING_CHECKS",
    "EmitContext",
    "check_node",
    "emit_module",
    "lowering_for",
    "register_lowering",
    "register_lowering_check",
]
