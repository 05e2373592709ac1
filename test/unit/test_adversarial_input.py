"""Bad input a careful user could write: each gets a FusilliError whose code and message
name what is wrong (node, tensor, JSON path, template line), the process stays up, and
arrays of a rejected call are left as they were.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

import fusilli as fs
from fusilli.backend.targets import Target, normalized_flag, parse_flag

E = fs.ErrorCode


def _relu_graph(name: str = "g") -> fs.Graph:
    g = fs.Graph(name=name)
    x = g.tensor(name="x", dim=[2, 3])
    g.relu(x, name="r").set_output(True).set_name("y")
    return g


def _raises(code: fs.ErrorCode, *fragments: str):
    """Context manager: a FusilliError with ``code`` whose message holds every fragment."""

    class _Check:
        def __enter__(self):
            self._ctx = pytest.raises(fs.FusilliError)
            self.info = self._ctx.__enter__()
            return self.info

        def __exit__(self, *exc):
            handled = self._ctx.__exit__(*exc)
            err = self.info.value
            assert err.code == code, str(err)
            for fragment in fragments:
                assert fragment in str(err), f"{fragment!r} not in {err}"
            return handled

    return _Check()


# --------------------------------------------------------------------------- dims
@pytest.mark.parametrize(
    "dim",
    [[2**64, 2], [2**63, 1], [2**40, 2**40], [2**31, 2**31, 4]],
    ids=["2^64", "2^63", "2^80-elements", "2^64-bytes"],
)
def test_dims_beyond_a_64_bit_index(dim):
    g = fs.Graph(name="huge")
    x = g.tensor(name="x", dim=dim)
    g.relu(x, name="r").set_output(True)
    with _raises(E.INVALID_ATTRIBUTE, "tensor 'x'", "64-bit"):
        g.validate()


@pytest.mark.parametrize("bad", [[2.7, 3], ["2", 3], [True, 3], [2, None]])
def test_dims_must_be_integers(bad):
    g = fs.Graph(name="g")
    with _raises(E.INVALID_ARGUMENT, "tensor 'x' dim", "integers"):
        g.tensor(name="x", dim=bad)
    t = g.tensor(name="y", dim=[2, 3])
    with _raises(E.INVALID_ARGUMENT, "tensor 'y' stride"):
        t.set_stride([3.0, 1])
    assert t.dim == [2, 3] and t.stride == [3, 1]  # a rejected setter changes nothing


def test_numpy_integers_are_integers():
    g = fs.Graph(name="g")
    t = g.tensor(name="x", dim=np.array([2, 3]), stride=(np.int64(3), np.int32(1)))
    assert t.dim == [2, 3] and t.stride == [3, 1]


# --------------------------------------------------------------------------- graph membership
def test_tensor_of_another_graph():
    other = fs.Graph(name="other")
    foreign = other.tensor(name="foreign", dim=[2, 3])
    g = fs.Graph(name="mine")
    x = g.tensor(name="x", dim=[2, 3])
    g.add(x, foreign, name="add").set_output(True)
    with _raises(E.INVALID_ATTRIBUTE, "pointwise 'add'", "IN_1 'foreign'", "not a tensor of graph 'mine'"):
        g.validate()


def test_unregistered_tensor():
    g = fs.Graph(name="g")
    x = g.tensor(name="x", dim=[2, 3])
    g.mul(x, fs.TensorAttr("loose", [2, 3], [3, 1], fs.DataType.FLOAT), name="m").set_output(True)
    with _raises(E.INVALID_ATTRIBUTE, "pointwise 'm'", "'loose'", "not a tensor of graph 'g'"):
        g.validate()


def _document(g: fs.Graph) -> dict:
    return json.loads(g.to_json())


def test_json_node_consuming_its_own_output():
    doc = _document(_relu_graph())
    doc["nodes"][0]["inputs"]["IN_0"] = "y"
    g = fs.Graph.from_json(json.dumps(doc))
    with _raises(E.INVALID_ATTRIBUTE, "pointwise 'r'", "IN_0 'y'", "own output"):
        g.validate()


def test_json_cycle_between_two_nodes():
    g = fs.Graph(name="g")
    x = g.tensor(name="x", dim=[2])
    a = g.relu(x, name="first")
    g.neg(a, name="second").set_output(True).set_name("out")
    doc = _document(g)
    doc["nodes"][0]["inputs"]["IN_0"] = "out"  # first reads second's output
    with _raises(E.INVALID_ATTRIBUTE, "pointwise 'first'", "'out'", "node 'second'", "later"):
        fs.Graph.from_json(json.dumps(doc)).validate()


# --------------------------------------------------------------------------- compile arguments
@pytest.mark.parametrize("handle", ["cpu", fs.Backend.CPU, None, 0])
def test_compile_needs_a_handle(handle):
    g = _relu_graph().validate()
    with _raises(E.INVALID_ARGUMENT, "Graph.compile takes a Handle"):
        g.compile(handle)


# --------------------------------------------------------------------------- graph JSON
def test_from_json_takes_the_to_dict_dict():
    g = _relu_graph()
    again = fs.Graph.from_json(g.to_dict())
    assert again.to_json() == g.to_json()


@pytest.mark.parametrize("value", [42, None, ["not", "a", "graph"], 3.5])
def test_from_json_refuses_other_types(value):
    with _raises(E.INVALID_ARGUMENT):
        fs.Graph.from_json(value)


@pytest.mark.parametrize("depth", [100_000, 3_000])
def test_deeply_nested_json(depth):
    with _raises(E.INVALID_ARGUMENT):
        fs.Graph.from_json("[" * depth + "]" * depth)


def _corrupt(path: list, value) -> str:
    doc = _document(_relu_graph())
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return json.dumps(doc)


@pytest.mark.parametrize(
    "path, value, message",
    [
        (["inputs", 0, "dim", 0], 2.7, "$.inputs[0].dim[0]: expected an integer, got the number 2.7"),
        (["inputs", 0, "dim", 0], 3.0, "$.inputs[0].dim[0]: expected an integer"),
        (["inputs", 0, "dim", 0], "2", "$.inputs[0].dim[0]: expected an integer, got the string '2'"),
        (["inputs", 0, "dim", 0], True, "$.inputs[0].dim[0]: expected an integer, got a boolean"),
        (["inputs", 0, "dim", 0], 0, "$.inputs[0].dim[0]: 0 is out of range"),
        (["inputs", 0, "dim", 0], 2**64, "$.inputs[0].dim[0]: 18446744073709551616 is out of range"),
        (["inputs", 0, "stride", 1], -1, "$.inputs[0].stride[1]: -1 is out of range"),
        (["inputs", 0, "data_type"], "FLOAT32", "$.inputs[0].data_type: expected one of"),
        (["inputs", 0, "is_virtual"], 1, "$.inputs[0].is_virtual: expected true or false"),
        (["nodes", 0, "kind"], "conv9d", "$.nodes[0].kind: unknown op kind"),
        (["nodes", 0, "attrs", "mode"], "RELU", "$.nodes[0].attrs.mode: expected one of"),
        (["nodes", 0, "attrs", "elu_alpha"], "1", "$.nodes[0].attrs.elu_alpha: expected a finite number"),
        (["nodes", 0, "attrs", "colour"], 1, "$.nodes[0].attrs: unknown field 'colour'"),
        (["nodes", 0, "inputs", "IN_9"], "x", "$.nodes[0].inputs: unknown slot 'IN_9'"),
        (["nodes", 0, "inputs", "IN_0"], "nobody", "$.nodes[0].inputs.IN_0: names tensor 'nobody'"),
        (["nodes", 0, "outputs", "OUT_0"], "x", "$.nodes[0].outputs.OUT_0: names tensor 'x'"),
        (["nodes", 0], 5, "$.nodes[0]: expected an object, got the integer 5"),
        (["format"], 2, "$.format: 2 is out of range [1, 1]"),
        (["name"], "", "$.name: expected a non-empty name"),
    ],
)
def test_malformed_json_fields_are_reported_with_their_path(path, value, message):
    with _raises(E.INVALID_ARGUMENT, message):
        fs.Graph.from_json(_corrupt(path, value))


def test_non_finite_json_numbers_where_ints_belong():
    text = _relu_graph().to_json().replace('"dim": [\n        2,', '"dim": [\n        Infinity,', 1)
    assert "Infinity" in text
    with _raises(E.INVALID_ARGUMENT, "$.inputs[0].dim[0]: expected an integer, got the non-finite number inf"):
        fs.Graph.from_json(text)


def test_every_malformed_field_is_reported_at_once():
    doc = _document(_relu_graph())
    doc["inputs"][0]["dim"] = [2.5, "3"]
    doc["nodes"][0]["attrs"]["softplus_beta"] = None
    del doc["io_data_type"]
    with _raises(E.INVALID_ARGUMENT, "4 problems") as info:
        fs.Graph.from_json(json.dumps(doc))
    for fragment in ("$.inputs[0].dim[0]", "$.inputs[0].dim[1]", "$.nodes[0].attrs.softplus_beta", "'io_data_type'"):
        assert fragment in str(info.value)


def test_duplicate_tensor_names_in_json():
    doc = _document(_relu_graph())
    doc["nodes"][0]["output_tensors"][0]["name"] = "x"
    doc["nodes"][0]["outputs"]["OUT_0"] = "x"
    with _raises(E.INVALID_ARGUMENT, "$.nodes[0].output_tensors[0].name: tensor name 'x' already defined"):
        fs.Graph.from_json(json.dumps(doc))


def test_conv_attrs_schema_comes_from_the_dataclass():
    g = fs.Graph(name="c")
    x = g.tensor(name="x", dim=[1, 2, 5, 5])
    w = g.tensor(name="w", dim=[2, 2, 3, 3])
    g.conv_fprop(x, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv").set_output(True)
    doc = _document(g)
    good = copy.deepcopy(doc)
    assert fs.Graph.from_json(json.dumps(good)).validate()
    doc["nodes"][0]["attrs"]["padding"] = [1.5, 1]
    with _raises(E.INVALID_ARGUMENT, "$.nodes[0].attrs.padding[0]: expected an integer"):
        fs.Graph.from_json(json.dumps(doc))


# --------------------------------------------------------------------------- custom-op templates
_UNKNOWN_OP = """func.func private @{FUNC_NAME}(%arg0: {IN0_TYPE}) -> {OUT0_TYPE} {
  %0 = torch.operator "torch.aten.no_such_op"(%arg0) : ({IN0_TYPE}) -> {OUT0_TYPE}
  return %0 : {OUT0_TYPE}
}"""

_MISSPELLED_OP = """func.func private @{FUNC_NAME}(%arg0: {IN0_TYPE}) -> {OUT0_TYPE} {
  %none = torch.constant.none

  %0 = torch.aten.relux %arg0 : {IN0_TYPE} -> {OUT0_TYPE}
  return %0 : {OUT0_TYPE}
}"""


@pytest.mark.parametrize(
    "template, fragments",
    [
        (_UNKNOWN_OP, ["custom_op 'mine'", "template line 2", "unknown op 'torch.aten.no_such_op'"]),
        (_MISSPELLED_OP, ["custom_op 'mine'", "\"custom_op 'mine' template\":4:", "torch.aten.relux"]),
    ],
    ids=["torch.operator", "misspelled"],
)
def test_custom_op_template_errors_name_node_and_line(template, fragments):
    g = fs.Graph(name="g")
    x = g.tensor(name="x", dim=[2, 2])
    (y,) = g.custom_op([x], mlir=template, name="mine")
    y.set_dim([2, 2]).set_output(True)
    with _raises(E.INVALID_ATTRIBUTE, *fragments):
        g.validate()


# --------------------------------------------------------------------------- compiler flags
@pytest.mark.parametrize(
    "flag",
    [
        "--iree-torch-externalize-transients=false",
        "-iree-torch-externalize-transients=0",
        "--iree-input-demote-f64-to-f32",
        "-iree-input-demote-f64-to-f32=true",
    ],
)
def test_flags_fusilli_relies_on_cannot_be_negated(flag, monkeypatch):
    monkeypatch.setenv("FUSILLI_EXTRA_COMPILER_FLAGS", flag)
    with _raises(E.INVALID_ARGUMENT, flag, "fusilli's runtime needs"):
        Target.resolve("cpu")


@pytest.mark.parametrize(
    "flag",
    [
        "-iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops",
        "--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops=1",
    ],
)
def test_refused_flags_in_any_spelling(flag, monkeypatch):
    monkeypatch.setenv("FUSILLI_EXTRA_COMPILER_FLAGS", flag)
    with _raises(E.INVALID_ARGUMENT, "crashes when run"):
        Target.resolve("cpu")


def test_flag_spellings():
    assert normalized_flag("-iree-opt-level=O3") == "--iree-opt-level=O3"
    assert normalized_flag("--iree-opt-level=O3") == "--iree-opt-level=O3"
    assert parse_flag("-x") == ("--x", "true")
    assert parse_flag("--x=0") == ("--x", "false")
    assert parse_flag("--x=FALSE") == ("--x", "false")
    assert parse_flag("--iree-opt-level=O3") == ("--iree-opt-level", "O3")


def test_negated_flag_at_compile_leaves_the_compiled_graph_working(cpu, monkeypatch):
    """A compile refused for its flags raises before touching the graph's compiled state."""
    g = _relu_graph().validate().compile(cpu)
    x = np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], np.float32)
    y = g.output_tensors()[0]
    monkeypatch.setenv("FUSILLI_EXTRA_COMPILER_FLAGS", "--iree-torch-externalize-transients=false")
    with _raises(E.INVALID_ARGUMENT, "externalize-transients"):
        g.compile(cpu)
    monkeypatch.delenv("FUSILLI_EXTRA_COMPILER_FLAGS")
    out = fs.empty(y)
    g.execute({g.input_tensors()[0]: x, y: out})
    np.testing.assert_array_equal(out, np.maximum(x, 0))


def test_rejected_execute_leaves_outputs_untouched(cpu):
    """After an edit makes the graph invalid (a dim of 2^64), execute refuses and writes nothing."""
    g = _relu_graph().validate().compile(cpu)
    x_t, y = g.input_tensors()[0], g.output_tensors()[0]
    x_t.set_dim([2**64, 3])
    sentinel = np.full((2, 3), 7.0, np.float32)
    with pytest.raises(fs.FusilliError):
        g.validate()
    with pytest.raises(fs.FusilliError):
        g.execute({x_t: np.ones((2, 3), np.float32), y: sentinel})
    np.testing.assert_array_equal(sentinel, 7.0)
