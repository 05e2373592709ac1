"""What an op family hands the driver: a ``Problem`` (a validated graph, its variant
pack, its arithmetic and how to run the same thing in PyTorch), plus the helpers the
families share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import fusilli as fs

TYPES = ("f32", "f16", "bf16")
_DATA_TYPES = {"f32": fs.DataType.FLOAT, "f16": fs.DataType.HALF, "bf16": fs.DataType.BFLOAT16}


class BenchmarkError(Exception):
    """A problem that cannot be benchmarked (bad flags, missing torch)."""


@dataclass
class Problem:
    name: str
    graph: fs.Graph
    pack: dict
    output: np.ndarray
    flops: float
    torch_builder: Callable[[Any], Callable[[], Any]] | None = None  # torch module -> zero-arg runner


def data_type(name: str) -> fs.DataType:
    return _DATA_TYPES[name]


def graph(name: str, io_type: str) -> fs.Graph:
    """A benchmark graph: ``io_type`` in and out (and between ops), f32 compute."""
    dt = data_type(io_type)
    return fs.Graph(name=name, io_data_type=dt, intermediate_data_type=dt, compute_data_type=fs.DataType.FLOAT)


def fill(arr: np.ndarray, rng: np.random.Generator, scale: float = 1.0) -> np.ndarray:
    arr[...] = (rng.standard_normal(arr.shape, dtype=np.float32) * scale).astype(arr.dtype)
    return arr


def to_torch(torch: Any, arr: np.ndarray) -> Any:
    """A tensor sharing ``arr``'s memory (bf16 through an int16 view: NumPy has no bf16 torch knows)."""
    import ml_dtypes

    if arr.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(arr.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(arr)
