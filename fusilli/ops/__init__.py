"""Op families. Importing this package registers every node type and emitter."""

from fusilli.ops.base import EMITTERS, NODE_TYPES, Attrs, Node, register_emitter, register_node
from fusilli.ops import conv, matmul, pointwise  # noqa: F401  (registration)
from fusilli.ops import norm  # noqa: F401  (registration)
from fusilli.ops import custom, sdpa  # noqa: F401  (registration)
from fusilli.ops import reduction  # noqa: F401  (registration)
from fusilli.ops.pointwise import PointwiseMode
from fusilli.ops.reduction import ReductionMode

__all__ = ["EMITTERS", "NODE_TYPES", "Attrs", "Node", "PointwiseMode", "ReductionMode", "register_emitter", "register_node"]
