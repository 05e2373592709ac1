"""Random graphs against the NumPy reference (hypothesis): a pointwise chain over
broadcast operands in random layouts, after a matmul, conv, layernorm or rmsnorm
anchor (or none), in f32, f16 and bf16.

Reproducible in CI: derandomized, a fixed number of examples, no deadline (a
compile takes a variable time on a loaded machine).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from conftest import random_array, run_and_check

import fusilli as fs
from fusilli.tensor import strides_for_order

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis is not installed (the test extra)")
st = hypothesis.strategies

M = fs.PointwiseMode
# Modes that stay finite and well conditioned on inputs in [-2, 2] after any prefix of the
# chain (the edge-value sweep covers the ill-conditioned inputs mode by mode).
UNARY = [M.RELU_FWD, M.SIGMOID_FWD, M.TANH_FWD, M.GELU_FWD, M.SWISH_FWD, M.ABS, M.NEG, M.ELU_FWD, M.SIN, M.ERF]
BINARY = [M.ADD, M.SUB, M.MUL, M.MAX_OP, M.MIN_OP]
ANCHORS = ["none", "matmul", "conv", "layernorm", "rmsnorm"]
DTYPES = [fs.DataType.FLOAT, fs.DataType.HALF, fs.DataType.BFLOAT16]
# (rtol, atol) per io type: f16/bf16 outputs round once, plus the anchor's accumulation.
TOLERANCE = {fs.DataType.FLOAT: (1e-4, 1e-4), fs.DataType.HALF: (1e-2, 1e-2), fs.DataType.BFLOAT16: (4e-2, 4e-2)}


@dataclass(frozen=True)
class Step:
    mode: fs.PointwiseMode
    keep: tuple[bool, ...]  # per dim of the running shape: keep it in the operand (else broadcast 1)
    drop_leading: int  # leading dims the operand leaves out (right-aligned broadcasting)
    order_seed: int  # which physical order the operand's strides give


@st.composite
def _steps(draw, rank: int) -> list[Step]:
    steps = []
    for _ in range(draw(st.integers(1, 4))):
        mode = draw(st.sampled_from(UNARY + BINARY))
        keep = tuple(draw(st.lists(st.booleans(), min_size=rank, max_size=rank)))
        steps.append(Step(mode, keep, draw(st.integers(0, rank - 1)), draw(st.integers(0, 1000))))
    return steps


def _layout(dims: list[int], seed: int) -> list[int]:
    order = list(np.random.default_rng(seed).permutation(len(dims)))
    return strides_for_order(dims, order)


def _anchor(g: fs.Graph, anchor: str, seed: int) -> tuple[fs.TensorAttr, list[int]]:
    """The anchor's output and its dims; operands in random layouts."""
    if anchor == "none":
        dims = [2, 3, 4, 5]
        return g.tensor(name="x", dim=dims, stride=_layout(dims, seed)), dims
    if anchor == "matmul":
        # Batch dims stay outermost (matmul's layout rule); the matrix may be transposed.
        a = g.tensor(name="a", dim=[2, 6, 8], stride=strides_for_order([2, 6, 8], [0, 2, 1] if seed % 2 else [0, 1, 2]))
        b = g.tensor(name="b", dim=[8, 5])
        return g.matmul(a, b, name="anchor"), [2, 6, 5]
    if anchor == "conv":
        layout = "NHWC" if seed % 2 else "NCHW"
        x = g.tensor(name="x", dim=[1, 4, 6, 6], stride=fs.strides([1, 4, 6, 6], layout))
        w = g.tensor(name="w", dim=[3, 4, 3, 3], stride=fs.strides([3, 4, 3, 3], layout))
        return g.conv_fprop(x, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="anchor"), [1, 3, 6, 6]
    dims = [3, 4, 2, 5]
    x = g.tensor(name="x", dim=dims, stride=fs.strides(dims, "NHWC" if seed % 2 else "NCHW"))
    if anchor == "layernorm":
        y, _, _ = g.layernorm(x, epsilon=1e-5, phase=fs.NormPhase.INFERENCE, name="anchor")
    else:
        y, _ = g.rmsnorm(x, epsilon=1e-5, phase=fs.NormPhase.INFERENCE, name="anchor")
    return y, dims


def _build(dtype: fs.DataType, anchor: str, seed: int, steps: list[Step]) -> fs.Graph:
    g = fs.Graph(name="fuzz", io_data_type=dtype)
    h, dims = _anchor(g, anchor, seed)
    for i, step in enumerate(steps):
        if step.mode in BINARY:
            shape = [d if k else 1 for d, k in zip(dims, step.keep)][step.drop_leading :]
            other = g.tensor(name=f"in{i}", dim=shape, stride=_layout(shape, step.order_seed))
            h = g.pointwise(h, other, mode=step.mode, name=f"op{i}")
        else:
            h = g.pointwise(h, mode=step.mode, name=f"op{i}")
    h.set_output(True).set_name("out")
    return g


@hypothesis.settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(hypothesis.HealthCheck),
)
@hypothesis.given(
    dtype=st.sampled_from(DTYPES), anchor=st.sampled_from(ANCHORS), seed=st.integers(0, 1000), data=st.data()
)
def test_random_graphs_match_the_reference(cpu, dtype, anchor, seed, data):
    steps = data.draw(_steps(4 if anchor != "matmul" else 3))
    g = _build(dtype, anchor, seed, steps).validate()
    rng = np.random.default_rng(seed)
    inputs = {t: random_array(t, rng, -2.0, 2.0) for t in g.input_tensors() if not t.is_scalar}
    rtol, atol = TOLERANCE[dtype]
    run_and_check(g, cpu, inputs, rtol=rtol, atol=atol)
