"""Matmul with mixed / low precision operands and broadcast batch dims."""

from __future__ import annotations

import pytest
from conftest import random_array, run_and_check

import fusilli as fs


@pytest.mark.parametrize(
    "a_dim, b_dim, a_dt, b_dt, c_dt, tol",
    [
        ([2, 4, 16], [2, 16, 3], "f16", "f16", "f32", 1e-4),  # f16 inputs, f32 accumulate
        ([4, 16], [16, 3], "bf16", "bf16", "bf16", 1e-2),
        ([2, 4, 16], [16, 3], "i8", "i8", "i32", 0),  # int8 x int8 -> int32, broadcast batch
        ([1, 4, 8], [1, 8, 3], "i4", "f16", "f16", 1e-2),  # int4 x f16 (upstream sample)
        ([2, 1, 4, 8], [1, 3, 8, 5], "f32", "f32", "f32", 1e-5),  # broadcast of two batch dims
    ],
)
def test_matmul_mixed(a_dim, b_dim, a_dt, b_dt, c_dt, tol, cpu, rng):
    g = fs.Graph(name="matmul_mixed", compute_data_type=fs.DataType.FLOAT)
    a = g.tensor(name="a", dim=a_dim, data_type=a_dt)
    b = g.tensor(name="b", dim=b_dim, data_type=b_dt)
    c = g.matmul(a, b, name="mm")
    c.set_output(True).set_name("c").set_data_type(c_dt)
    run_and_check(g.validate(), cpu, {a: random_array(a, rng), b: random_array(b, rng)}, rtol=tol, atol=tol)


def test_matmul_f16_accumulates_in_f32():
    g = fs.Graph(name="mm_acc")
    a = g.tensor(name="a", dim=[4, 8], data_type="f16")
    b = g.tensor(name="b", dim=[8, 3], data_type="f16")
    g.matmul(a, b, name="mm").set_output(True).set_data_type("f16")
    text = g.validate().emit_mlir()
    assert "torch.aten.matmul" in text
    assert "-> !torch.vtensor<[4,3],f32>" in text  # the product is f32, then cast to f16


def test_matmul_bool_rejected():
    g = fs.Graph(name="mm_bool")
    a = g.tensor(name="a", dim=[4, 8], data_type="bool")
    b = g.tensor(name="b", dim=[8, 3], data_type="bool")
    g.matmul(a, b, name="mm").set_output(True)
    with pytest.raises(fs.FusilliError) as e:
        g.validate()
    assert e.value.code == fs.ErrorCode.INVALID_ATTRIBUTE and "matmul 'mm'" in str(e.value) and "A 'a'" in str(e.value)


def test_int4_output_not_implemented():
    g = fs.Graph(name="mm_i4_out")
    a = g.tensor(name="a", dim=[2, 4], data_type="i8")
    b = g.tensor(name="b", dim=[4, 2], data_type="i8")
    c = g.matmul(a, b, name="mm")
    c.set_output(True).set_name("c").set_data_type("i4")
    with pytest.raises(fs.FusilliError) as e:
        g.validate()
    assert e.value.code == fs.ErrorCode.NOT_IMPLEMENTED and "matmul 'mm'" in str(e.value) and "C 'c'" in str(e.value)
