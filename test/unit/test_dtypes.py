"""Every data type through pointwise ADD/MUL and matmul, against the reference."""

from __future__ import annotations

import pytest
from conftest import random_array, run_and_check

import fusilli as fs

TOL = {"f16": 2e-3, "bf16": 2e-2, "f8e5m2": 0.25}


@pytest.mark.parametrize(
    "dt",
    [
        "f16",
        "bf16",
        "f64",
        "i8",
        "i16",
        "i32",
        "i64",
        "ui8",
        "f8e5m2",
    ],
)
def test_pointwise_add_mul(dt, cpu, rng):
    g = fs.Graph(name=f"dtype_{dt}", io_data_type=dt, intermediate_data_type=dt)
    a = g.tensor(name="a", dim=[2, 8])
    b = g.tensor(name="b", dim=[2, 8])
    s = g.add(a, b, name="add")
    s.set_output(True).set_name("s")
    g.mul(a, b, name="mul").set_output(True).set_name("p")
    low = 0 if dt == "ui8" else -1
    tol = TOL.get(dt, 1e-6)
    run_and_check(g.validate(), cpu, {a: random_array(a, rng, low), b: random_array(b, rng, low)}, rtol=tol, atol=tol)


def test_bool_logical(cpu, rng):
    g = fs.Graph(name="dtype_bool", io_data_type="bool")
    a = g.tensor(name="a", dim=[2, 8])
    b = g.tensor(name="b", dim=[2, 8])
    g.logical_and(a, b, name="and").set_output(True).set_name("c")
    run_and_check(g.validate(), cpu, {a: random_array(a, rng), b: random_array(b, rng)})


def test_matmul_fp8(cpu, rng):
    g = fs.Graph(name="matmul_fp8")
    a = g.tensor(name="a", dim=[4, 8], data_type="f8e5m2")
    b = g.tensor(name="b", dim=[8, 3], data_type="f8e5m2")
    g.matmul(a, b, name="mm").set_output(True).set_name("c").set_data_type("f32")
    run_and_check(g.validate(), cpu, {a: random_array(a, rng), b: random_array(b, rng)}, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dt", ["f16", "bf16", "f32", "f64", "i8", "i16", "i32", "i64", "ui8", "f8e5m2"])
def test_scalar_operand_of_every_type(dt, cpu, rng):
    """``x * scalar(2)`` with the scalar in the tensors' own type (its literal is encoded
    from the DataType table; FP8_E5M2 scalars used to fail with a plain ValueError)."""
    g = fs.Graph(name=f"scalar_{dt}", io_data_type=dt, intermediate_data_type=dt)
    a = g.tensor(name="a", dim=[2, 8])
    two = g.scalar(2.0 if fs.DataType.coerce(dt).is_float else 2, dt, name="two")
    g.mul(a, two, name="mul").set_output(True).set_name("p")
    assert f") : !torch.vtensor<[1],{two.data_type.mlir_name}>" in g.emit_mlir()  # the torch.vtensor.literal
    low = 0 if dt == "ui8" else -1
    tol = TOL.get(dt, 1e-6)
    run_and_check(g.validate(), cpu, {a: random_array(a, rng, low)}, rtol=tol, atol=tol)
