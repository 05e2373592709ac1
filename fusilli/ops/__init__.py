"""Op families. Importing this package registers every node type and emitter."""

from fusilli.ops import (  # noqa: F401  (registration)  # noqa: F401  (registration)
    conv,
    custom,
    matmul,
    norm,  # noqa: F401  (registration)
    pointwise,
    reduction,  # noqa: F401  (registration)
    sdpa,
)
from fusilli.ops.base import EMITTERS, NODE_TYPES, Attrs, Node, register_emitter, register_node
from fusilli.ops.pointwise import PointwiseMode
from fusilli.ops.reduction import ReductionMode

__all__ = [
    "EMITTERS",
    "NODE_TYPES",
    "Attrs",
    "Node",
    "PointwiseMode",
    "ReductionMode",
    "register_emitter",
    "register_node",
]
