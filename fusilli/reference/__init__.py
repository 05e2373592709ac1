"""A NumPy interpreter of fusilli graphs: the oracle of the numerics tests.

``run(graph, inputs)`` evaluates every node in float64 (integers stay integers)
on logical-order arrays and returns the graph outputs cast to their data types.
Each op family registers its kernel in ``KERNELS`` by op kind, in the module of
this package named after it (conv.py, matmul.py, pointwise.py, ...). It shares
no code with the emitters, so the two check each other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import ml_dtypes
import numpy as np

from fusilli.errors import ErrorCode, fail
from fusilli.tensor import TensorAttr, as_numpy, data_type_of, scalar_value_of

# kind -> kernel(node, {slot: array}) -> {slot: array}
KERNELS: dict[str, Callable[[Any, dict[str, np.ndarray]], dict[str, np.ndarray]]] = {}


def register_kernel(kind: str):
    def wrap(fn):
        KERNELS[kind] = fn
        return fn

    return wrap


def compute_array(a: np.ndarray) -> np.ndarray:
    """Floats (incl. f16/bf16/fp8) are computed in float64; ints and bools as they are."""
    if a.dtype.kind in "iub":
        return np.asarray(a)
    return np.asarray(a, dtype=np.float64)


def cast_to(t: TensorAttr, a: np.ndarray) -> np.ndarray:
    dt = data_type_of(t)
    a = np.asarray(a)
    if dt.is_integer and a.dtype.kind == "f":
        a = np.trunc(a)
    return a.astype(dt.numpy_dtype)


def flush_denormals(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``a`` with the values that are denormal in ``dtype`` replaced by zeros of their sign."""
    try:
        tiny = float(ml_dtypes.finfo(dtype).smallest_normal)  # ml_dtypes' types (bf16, fp8) included
    except ValueError:
        return a  # integers and booleans have no denormals
    return np.where(np.abs(a) < tiny, np.copysign(0.0, a), a)


def run(graph: Any, inputs: Mapping[Any, Any], *, denormals_are_zero: bool = False) -> dict[str, np.ndarray]:
    """Evaluates ``graph`` on ``inputs`` (keyed by TensorAttr or name); returns outputs by name.

    Intermediate tensors are rounded to their data types, as the compiled
    graph stores them; arithmetic inside an op is float64.
    ``denormals_are_zero`` models fusilli's CPU backend, whose runtime computes
    with denormals flushed to zero (README, "Numerics"): each op then reads
    denormal inputs as zero and writes denormal results as zero, at the data
    types of its tensors.
    """
    if not graph._validated:
        graph.validate()
    by_name = {t.name: t for t in graph.all_tensors()}
    env: dict[int, np.ndarray] = {}
    for key, value in inputs.items():
        t = key if isinstance(key, TensorAttr) else by_name.get(key)
        if t is None:
            raise fail(ErrorCode.VARIANT_PACK_ERROR, f"reference: unknown tensor {key!r}")
        if t.producer is None:
            env[id(t)] = compute_array(as_numpy(value))
    for t in graph.input_tensors():
        if t.is_scalar:
            env[id(t)] = compute_array(data_type_of(t).scalar_array(scalar_value_of(t), f"scalar '{t.name}'"))
        elif id(t) not in env:
            raise fail(ErrorCode.VARIANT_PACK_ERROR, f"reference: input '{t.name}' not given")
    for node in graph.nodes:
        kernel = KERNELS.get(node.kind)
        if kernel is None:
            raise fail(ErrorCode.NOT_IMPLEMENTED, f"reference: no kernel for op kind {node.kind!r}")
        args = {slot: env[id(t)] for slot, t in node.inputs.items() if t is not None}
        if denormals_are_zero:
            args = {slot: flush_denormals(a, data_type_of(node.inputs[slot]).numpy_dtype) for slot, a in args.items()}
        results = kernel(node, args)
        for slot, t in node.outputs.items():
            if t is not None:
                out = cast_to(t, results[slot])
                env[id(t)] = compute_array(flush_denormals(out, out.dtype) if denormals_are_zero else out)
    return {t.name: cast_to(t, env[id(t)]) for t in graph.output_tensors()}


from fusilli.reference import (  # noqa: E402,F401  (registration)  # noqa: E402,F401  (registration)
    conv,
    custom,
    matmul,
    norm,  # noqa: E402,F401  (registration)
    pointwise,
    reduction,  # noqa: E402,F401  (registration)
    sdpa,
)

__all__ = ["KERNELS", "compute_array", "flush_denormals", "register_kernel", "run"]
