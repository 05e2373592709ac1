"""fusilli: a cuDNN-style graph API compiled in process by IREE.

import fusilli as fs
g = fs.Graph(name="conv_bias_relu", io_data_type=fs.DataType.HALF)
...

``import fusilli`` is light: the graph builder, the ops (which import the MLIR
bindings, ``iree.compiler``) and the runtime (``iree.runtime``) are imported on
first use of the names that need them (PEP 562 module ``__getattr__``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusilli.errors import ErrorCode, FusilliError
from fusilli.lazy import lazy_attributes
from fusilli.log import configure_from_environment as _configure_logging
from fusilli.types import DataType

if TYPE_CHECKING:
    from fusilli.backend.compiler import CompileStats
    from fusilli.backend.runtime import Handle
    from fusilli.backend.targets import Backend
    from fusilli.graph import Graph
    from fusilli.ops.norm import NormPhase
    from fusilli.ops.pointwise import PointwiseMode
    from fusilli.ops.reduction import ReductionMode
    from fusilli.tensor import TensorAttr, strides
    from fusilli.utils import empty

__version__ = "0.1.0"

# Public name -> module that defines it, imported on first access.
_LAZY = {
    "Backend": "fusilli.backend.targets",
    "CompileStats": "fusilli.backend.compiler",
    "Handle": "fusilli.backend.runtime",
    "Graph": "fusilli.graph",
    "NormPhase": "fusilli.ops.norm",
    "PointwiseMode": "fusilli.ops.pointwise",
    "ReductionMode": "fusilli.ops.reduction",
    "TensorAttr": "fusilli.tensor",
    "strides": "fusilli.tensor",
    "empty": "fusilli.utils",
}


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)


_configure_logging()

__all__ = [
    "Backend",
    "CompileStats",
    "DataType",
    "ErrorCode",
    "FusilliError",
    "Graph",
    "Handle",
    "NormPhase",
    "PointwiseMode",
    "ReductionMode",
    "TensorAttr",
    "__version__",
    "empty",
    "strides",
]
