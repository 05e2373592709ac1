"""fusilli: a cuDNN-style graph API compiled in process by IREE.

import fusilli as fs
g = fs.Graph(name="conv_bias_relu", io_data_type=fs.DataType.HALF)
...
"""

from fusilli.backend import Backend, CompileStats, Handle
from fusilli.errors import ErrorCode, FusilliError
from fusilli.graph import Graph
from fusilli.log import configure_from_environment as _configure_logging
from fusilli.ops.norm import NormPhase
from fusilli.ops.pointwise import PointwiseMode
from fusilli.ops.reduction import ReductionMode
from fusilli.tensor import TensorAttr, strides
from fusilli.types import DataType
from fusilli.utils import empty

__version__ = "0.1.0"

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
