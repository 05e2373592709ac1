"""Compiled fusilli graphs run on torch tensors, memoized in process.

Each ``fusilli.torch`` op describes its graph with a builder function; ``run``
keys the compiled graph by the op, its attributes and each input's shape,
strides and dtype, so the graph is built and compiled (or found in the disk
cache) once per process and a repeated call costs one ``execute``: outputs are
allocated with ``torch.empty_strided`` (64-byte aligned, so IREE writes them in
place) and the tensors go into the variant pack as they are.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

import fusilli as fs
from fusilli.arrays import TORCH_TO_NUMPY
from fusilli.tensor import data_type_of as tensor_data_type

# The builder gets the graph and one graph input per torch input (None for an absent
# optional input) and returns the graph outputs, whose dims and strides it has set.
GraphBuilder = Callable[[fs.Graph, list[fs.TensorAttr | None]], Sequence[fs.TensorAttr]]

_NUMPY_TO_TORCH = {dtype: getattr(torch, name.removeprefix("torch.")) for name, dtype in TORCH_TO_NUMPY.items()}


def data_type_of(dtype: torch.dtype) -> fs.DataType:
    numpy_dtype = TORCH_TO_NUMPY.get(str(dtype))
    if numpy_dtype is None:
        raise fs.FusilliError(fs.ErrorCode.INVALID_ARGUMENT, f"torch dtype {dtype} has no fusilli data type")
    return fs.DataType.from_numpy(numpy_dtype)


def torch_dtype_of(data_type: fs.DataType) -> torch.dtype:
    return _NUMPY_TO_TORCH[data_type.numpy_dtype]


@dataclass
class CompiledOp:
    graph: fs.Graph
    inputs: list[fs.TensorAttr | None]
    outputs: list[fs.TensorAttr]
    # (dim, stride, torch dtype) of each output, read once.
    output_specs: list[tuple[list[int], list[int], torch.dtype]]


_memo: dict[tuple, CompiledOp] = {}
_memo_lock = threading.Lock()
_handle: fs.Handle | None = None


@atexit.register
def _release() -> None:
    """Compiled graphs hold IREE runtime objects; releasing them before the interpreter
    tears down the bindings avoids nanobind's leak report at exit."""
    global _handle
    _memo.clear()
    _handle = None


def handle() -> fs.Handle:
    global _handle
    if _handle is None:
        _handle = fs.Handle(fs.Backend.CPU)
    return _handle


def memo_size() -> int:
    """How many compiled graphs the process holds (tests read it)."""
    return len(_memo)


def _signature(t: torch.Tensor | None) -> tuple | None:
    return None if t is None else (t.shape, t.stride(), t.dtype)


def run(
    op: str,
    attrs: tuple,
    inputs: Sequence[torch.Tensor | None],
    build: GraphBuilder,
    *,
    dtype: torch.dtype,
    outputs: Sequence[torch.Tensor] | None = None,
) -> list[torch.Tensor]:
    """Runs the graph ``build`` describes for ``inputs``; one new tensor per graph output
    (or the caller's ``outputs``, views laid out as the builder set them).

    ``dtype`` sets the graph's I/O type; intermediates and arithmetic are f32
    (f64 for f64 graphs).
    """
    key = (op, attrs, dtype, *map(_signature, inputs))
    compiled = _memo.get(key)
    if compiled is None:
        compiled = _compile(op, key, inputs, build, dtype)
    if outputs is None:
        outputs = [
            torch.empty_strided(dim, stride, dtype=out_dtype) for dim, stride, out_dtype in compiled.output_specs
        ]
    pack: dict[fs.TensorAttr, Any] = {t: x for t, x in zip(compiled.inputs, inputs) if t is not None}
    pack.update(zip(compiled.outputs, outputs))
    compiled.graph.execute(pack)  # threads may call at once (each gets its own workspace)
    return list(outputs)


def _compile(
    op: str, key: tuple, inputs: Sequence[torch.Tensor | None], build: GraphBuilder, dtype: torch.dtype
) -> CompiledOp:
    io = data_type_of(dtype)
    inner = fs.DataType.DOUBLE if io == fs.DataType.DOUBLE else fs.DataType.FLOAT
    g = fs.Graph(name=f"torch_{op}", io_data_type=io, intermediate_data_type=inner, compute_data_type=inner)
    graph_inputs = [
        None
        if x is None
        else g.tensor(name=f"in{i}", dim=list(x.shape), stride=list(x.stride()), data_type=data_type_of(x.dtype))
        for i, x in enumerate(inputs)
    ]
    outputs = list(build(g, graph_inputs))
    for i, t in enumerate(outputs):
        t.set_output(True).set_name(f"out{i}")
    g.compile(handle())
    specs = [(t.dim, t.stride, torch_dtype_of(tensor_data_type(t))) for t in outputs]
    compiled = CompiledOp(g, graph_inputs, outputs, specs)
    with _memo_lock:
        return _memo.setdefault(key, compiled)
