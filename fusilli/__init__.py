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


def _map_checkout_tools() -> None:
    """Makes ``fusilli.tools`` importable from a source checkout.

    The command-line tools' sources live in ``<repo>/tools``; an install maps
    them into the package as ``fusilli.tools`` (setuptools ``package-dir``), so
    an installed ``fusilli`` has a ``tools`` subpackage. Run from a checkout
    (``PYTHONPATH=<repo>``, lit, an editable install) ``fusilli/`` has none, and
    this binds ``fusilli.tools`` to the ``tools/`` beside it: always the tools of
    the same tree as the ``fusilli`` that was imported, whatever else is installed.
    Only the package module is created (it is a docstring); the tools themselves
    are imported when used.
    """
    import importlib.util
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    # An install has fusilli/tools/__init__.py (a leftover fusilli/tools/__pycache__ is not one).
    if "fusilli.tools" in sys.modules or os.path.isfile(os.path.join(here, "tools", "__init__.py")):
        return
    checkout = os.path.dirname(here)
    init = os.path.join(checkout, "tools", "__init__.py")
    if not (os.path.isfile(init) and os.path.isfile(os.path.join(checkout, "pyproject.toml"))):
        return
    spec = importlib.util.spec_from_file_location(
        "fusilli.tools", init, submodule_search_locations=[os.path.dirname(init)]
    )
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["fusilli.tools"] = module
    spec.loader.exec_module(module)


_map_checkout_tools()


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
