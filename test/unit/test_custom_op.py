"""Custom ops: user torch-dialect templates called from the graph, and their errors."""

from __future__ import annotations

import pytest
from conftest import random_array, run_and_check

import fusilli as fs

ADD_MUL = """
func.func private @{FUNC_NAME}(%a: {IN0_TYPE}, %b: {IN1_TYPE}) -> ({OUT0_TYPE}, {OUT1_TYPE}) {
  %int1 = torch.constant.int 1
  %s = torch.aten.add.Tensor %a, %b, %int1 : {IN0_TYPE}, {IN1_TYPE}, !torch.int -> {OUT0_TYPE}
  %m = torch.aten.mul.Tensor %a, %b : {IN0_TYPE}, {IN1_TYPE} -> {OUT1_TYPE}
  return %s, %m : {OUT0_TYPE}, {OUT1_TYPE}
}
"""

# A matmul with a transposed RHS; uses the dim placeholders to build the permute.
MATMUL_T = """
func.func private @{FUNC_NAME}(%a: {IN0_TYPE}, %b: {IN1_TYPE}) -> {OUT0_TYPE} {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %p = torch.prim.ListConstruct %int1, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %bt = torch.aten.permute %b, %p : {IN1_TYPE}, !torch.list<int> -> !torch.vtensor<[{IN1_DIM1},{IN1_DIM0}],{IN1_DTYPE}>
  %c = torch.aten.mm %a, %bt : {IN0_TYPE}, !torch.vtensor<[{IN1_DIM1},{IN1_DIM0}],{IN1_DTYPE}> -> {OUT0_TYPE}
  return %c : {OUT0_TYPE}
}
"""


def test_custom_two_outputs_strided_input(cpu, rng):
    g = fs.Graph(name="custom_add_mul")
    x = g.tensor(name="x", dim=[2, 3], stride=[1, 2])
    y = g.tensor(name="y", dim=[2, 3])
    s, m = g.custom_op([x, y], mlir=ADD_MUL, num_outputs=2, name="addmul", reference=lambda a, b: (a + b, a * b))
    s.set_dim([2, 3]).set_output(True).set_name("s")
    m.set_dim([2, 3]).set_stride([1, 2]).set_output(True).set_name("m")
    g.validate()
    text = g.emit_mlir()
    assert text.index("func.func private @addmul") < text.index("func.func @main")
    assert "call @addmul" in text
    run_and_check(g, cpu, {x: random_array(x, rng), y: random_array(y, rng)})


def test_custom_same_input_twice_then_builtin(cpu, rng):
    g = fs.Graph(name="custom_same_input")
    x = g.tensor(name="x", dim=[4, 3])
    (c,) = g.custom_op([x, x], mlir=MATMUL_T, num_outputs=1, name="gram", reference=lambda a, b: a @ b.T)
    c.set_dim([4, 4])
    r = g.relu(c, name="relu")
    r.set_output(True).set_name("r")
    run_and_check(g.validate(), cpu, {x: random_array(x, rng)})


def test_custom_dynamic_dims_print_question_mark():
    g = fs.Graph(name="custom_dyn")
    x = g.tensor(name="x", dim=[4, 3], dynamic_dims=[0])
    tmpl = "func.func private @{FUNC_NAME}(%a: {IN0_TYPE}) -> {OUT0_TYPE} {\n  return %a : {OUT0_TYPE}\n}"
    (o,) = g.custom_op([x], mlir=tmpl, num_outputs=1, name="ident")
    o.set_dim([4, 3]).set_dynamic_dims([0]).set_output(True)
    text = g.validate().emit_mlir()
    assert "!torch.vtensor<[?,3],f32>" in text


def _bad(
    mlir="func.func private @{FUNC_NAME}(%a: {IN0_TYPE}) -> {OUT0_TYPE} {\n return %a : {OUT0_TYPE}\n}",
    inputs="x",
    num_outputs=1,
    set_dim=True,
):
    g = fs.Graph(name="custom_bad")
    x = g.tensor(name="x", dim=[2, 3])
    ins = {"x": [x], "none": [], "scalar": [g.scalar(1.0, name="s")]}[inputs]
    outs = g.custom_op(ins, mlir=mlir, num_outputs=num_outputs, name="cop")
    for o in outs:
        if set_dim:
            o.set_dim([2, 3])
        o.set_output(True)
    return g


@pytest.mark.parametrize(
    "kw, code, words",
    [
        (dict(mlir=None), "ATTRIBUTE_NOT_SET", ["MLIR not set"]),
        (dict(inputs="none"), "ATTRIBUTE_NOT_SET", ["no inputs"]),
        (dict(inputs="scalar"), "INVALID_ATTRIBUTE", ["IN0 's'", "scalar"]),
        (dict(set_dim=False), "ATTRIBUTE_NOT_SET", ["OUT0", "dims not set"]),
        (
            dict(mlir="func.func private @{FUNC_NAME}(%a: {IN0_TYPE}) -> {OUT0_TYPE} { return %a : junk }"),
            "INVALID_ATTRIBUTE",
            ["does not parse", "expected"],
        ),
        (dict(mlir="this is not MLIR {IN0_TYPE"), "INVALID_ATTRIBUTE", ["does not parse"]),
        (
            dict(mlir="func.func private @other(%a: {IN0_TYPE}) -> {OUT0_TYPE} {\n return %a : {OUT0_TYPE}\n}"),
            "INVALID_ATTRIBUTE",
            ["@cop"],
        ),
        (
            dict(mlir="func.func private @{FUNC_NAME}(%a: {IN3_TYPE}) -> {OUT0_TYPE}"),
            "INVALID_ATTRIBUTE",
            ["{IN3_TYPE}"],
        ),
        (
            dict(
                mlir="func.func private @{FUNC_NAME}(%a: !torch.vtensor<[3,2],f32>) -> {OUT0_TYPE} {\n"
                " %0 = torch.aten.t %a : !torch.vtensor<[3,2],f32> -> {OUT0_TYPE}\n return %0 : {OUT0_TYPE}\n}"
            ),
            "INVALID_ATTRIBUTE",
            ["argument 0", "IN0 'x'"],
        ),
    ],
)
def test_custom_errors(kw, code, words):
    with pytest.raises(fs.FusilliError) as e:
        _bad(**kw).validate()
    assert e.value.code == fs.ErrorCode[code]
    msg = str(e.value)
    assert "custom_op 'cop'" in msg
    for w in words:
        assert w in msg, msg


def test_custom_reference_required(rng):
    from fusilli import reference

    g = _bad().validate()
    x = g.input_tensors()[0]
    with pytest.raises(fs.FusilliError) as e:
        reference.run(g, {x: random_array(x, rng)})
    assert e.value.code == fs.ErrorCode.NOT_IMPLEMENTED and "reference=" in str(e.value)


def test_custom_json_round_trip():
    g = _bad().validate()
    g2 = fs.Graph.from_json(g.to_json())
    g2.nodes[0].outputs["OUT0"].set_output(True)
    assert "call @cop" in g2.validate().emit_mlir()
