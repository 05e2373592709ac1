"""Graph inputs can be allocated right after they are declared (cuDNN-frontend habit):
an input without a data type takes the graph's io_data_type when created, and
validate() keeps re-inferring it correctly when the user sets a type later."""

from __future__ import annotations

import numpy as np
from conftest import run_and_check

import fusilli as fs


def test_input_allocatable_before_validate(cpu, rng):
    g = fs.Graph(name="early_alloc", io_data_type=fs.DataType.HALF)
    x = g.tensor(name="x", dim=[2, 3, 4], stride=fs.strides([2, 3, 4], "NHC"))
    arr = fs.empty(x)  # before any validate()
    assert arr.dtype == np.float16 and arr.shape == (2, 3, 4) and x.data_type == fs.DataType.HALF
    arr[...] = rng.uniform(-1, 1, arr.shape)
    g.relu(x, name="relu").set_output(True)
    run_and_check(g, cpu, {x: arr}, rtol=1e-3, atol=1e-3)


def test_user_set_data_type_wins_over_the_default(cpu, rng):
    g = fs.Graph(name="early_alloc_override", io_data_type=fs.DataType.HALF)
    x = g.tensor(name="x", dim=[4, 4])
    g.relu(x, name="relu").set_output(True).set_data_type(fs.DataType.FLOAT)
    x.set_data_type(fs.DataType.FLOAT)  # after creation: the user's choice
    g.validate()
    assert x.data_type == fs.DataType.FLOAT
    g.validate()  # re-inference keeps it
    assert x.data_type == fs.DataType.FLOAT
    arr = fs.empty(x)
    assert arr.dtype == np.float32
    arr[...] = rng.uniform(-1, 1, arr.shape)
    run_and_check(g, cpu, {x: arr})


def test_reinference_follows_io_data_type_until_the_user_sets_one():
    g = fs.Graph(name="early_alloc_reinfer", io_data_type=fs.DataType.HALF)
    x = g.tensor(name="x", dim=[4])
    y = g.relu(x, name="relu").set_output(True)
    g.validate()
    assert x.data_type == y.data_type == fs.DataType.HALF
    g.io_data_type = fs.DataType.BFLOAT16  # the default changes: the default-typed input follows
    g.validate()
    assert x.data_type == y.data_type == fs.DataType.BFLOAT16
    x.set_data_type(fs.DataType.FLOAT)  # now the user decides
    g.io_data_type = fs.DataType.HALF
    g.validate()
    assert x.data_type == fs.DataType.FLOAT and y.data_type == fs.DataType.HALF


def test_explicit_data_type_at_creation_is_kept():
    g = fs.Graph(name="explicit", io_data_type=fs.DataType.HALF)
    x = g.tensor(name="x", dim=[4], data_type=fs.DataType.FLOAT)
    g.relu(x, name="relu").set_output(True)
    g.io_data_type = fs.DataType.BFLOAT16
    g.validate()
    assert x.data_type == fs.DataType.FLOAT
