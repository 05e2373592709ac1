"""Op families: IR-free nodes. Importing this package registers every node type."""

from fusilli.ops import (  # noqa: F401  (registration)
    conv,
    custom,
    matmul,
    norm,
    pointwise,
    reduction,
    sdpa,
)
from fusilli.ops.base import NODE_TYPES, Attrs, Node, register_node
from fusilli.ops.pointwise import PointwiseMode
from fusilli.ops.reduction import ReductionMode

__all__ = [
    "NODE_TYPES",
    "Attrs",
    "Node",
    "PointwiseMode",
    "ReductionMode",
    "register_node",
]
