"""JSON round trip of graphs and the ahead-of-time artifact round trip."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import random_array

import fusilli as fs
from fusilli import reference


def build(name: str = "ser_graph") -> fs.Graph:
    g = fs.Graph(name=name, io_data_type="f32", intermediate_data_type="f32", compute_data_type="f32")
    x = g.tensor(name="x", dim=[1, 4, 6, 6], stride=fs.strides([1, 4, 6, 6], "NHWC"))
    w = g.tensor(name="w", dim=[8, 4, 3, 3], stride=fs.strides([8, 4, 3, 3], "NHWC"))
    b = g.tensor(name="b", dim=[1, 8, 1, 1])
    y = g.conv_fprop(x, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv")
    y = g.add(y, b, name="bias")
    y = g.mul(y, g.scalar(0.5, name="half"), name="scale")
    g.relu(y, name="relu").set_output(True).set_name("y")
    a = g.tensor(name="a", dim=[3, 5], stride=[1, 3])
    m = g.tensor(name="m", dim=[5, 2])
    g.matmul(a, m, name="mm").set_output(True)
    return g


def test_json_round_trip_is_lossless():
    g = build()
    text = g.to_json()
    json.loads(text)  # valid JSON
    g2 = fs.Graph.from_json(text)
    assert g2.to_json() == text
    assert g2.name == g.name and g2.io_data_type == g.io_data_type
    assert [n.name for n in g2.nodes] == [n.name for n in g.nodes]
    assert [(t.name, t.dim, t.stride, t.data_type, t.is_virtual, t.scalar_value) for t in g2.all_tensors()] == [
        (t.name, t.dim, t.stride, t.data_type, t.is_virtual, t.scalar_value) for t in g.all_tensors()
    ]
    # After validation both sides infer the same, and emit the same IR with the same key.
    g.validate()
    g2.validate()
    assert g2.to_json() == g.to_json()
    assert g2.emit_mlir() == g.emit_mlir()
    assert g2.key() == g.key()


def test_validated_graph_round_trips():
    g = build().validate()
    g2 = fs.Graph.from_json(g.to_json())
    assert g2.to_json() == g.to_json()
    assert g2.validate().key() == g.key()


def test_round_trip_keeps_dynamic_dims_and_attrs():
    g = fs.Graph(name="dyn")
    x = g.tensor(name="x", dim=[4, 3], dynamic_dims=[0])
    g.pointwise(x, mode=fs.PointwiseMode.RELU_FWD, name="r").set_output(True)
    g2 = fs.Graph.from_json(g.to_json())
    assert g2.input_tensors()[0].dynamic_dims == [0]
    assert g2.nodes[0].attrs.mode is fs.PointwiseMode.RELU_FWD


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        json.dumps({"name": "g"}),
        json.dumps(
            {
                "name": "g",
                "io_data_type": "FLOAT",
                "intermediate_data_type": "FLOAT",
                "compute_data_type": "FLOAT",
                "inputs": [],
                "nodes": [{"kind": "no_such_op"}],
            }
        ),
    ],
    ids=["syntax", "missing_fields", "unknown_kind"],
)
def test_bad_json_is_invalid_argument(text):
    with pytest.raises(fs.FusilliError) as e:
        fs.Graph.from_json(text)
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT


def execute_and_check(g: fs.Graph, rng) -> None:
    inputs = {t: random_array(t, rng) for t in g.input_tensors() if not t.is_scalar}
    outputs = {t: fs.empty(t) for t in g.output_tensors()}
    g.execute({**inputs, **outputs})
    want = reference.run(g, inputs)
    for t, got in outputs.items():
        np.testing.assert_allclose(got, want[t.name], rtol=1e-4, atol=1e-4, err_msg=t.name)


def test_aot_artifact_round_trip(cpu, rng):
    g = build("aot_graph")
    data = g.compile_to_artifact(fs.Backend.CPU)
    assert isinstance(data, bytes) and len(data) > 1000
    # A rebuilt (here: deserialized), validated graph loads the artifact and runs it.
    g2 = fs.Graph.from_json(build("aot_graph").to_json()).validate()
    assert g2.load_artifact(cpu, data) is g2
    assert g2.compile_stats.dispatch_count >= 1
    execute_and_check(g2, rng)


def test_artifact_for_another_graph_is_refused(cpu):
    data = build("aot_graph").compile_to_artifact("cpu")
    other = build("aot_other").validate()
    with pytest.raises(fs.FusilliError) as e:
        other.load_artifact(cpu, data)
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT
    assert "'aot_other'" in str(e.value)


@pytest.mark.parametrize("mangle", ["truncate", "flip_payload", "garbage"])
def test_corrupt_artifact_is_refused(cpu, mangle):
    g = build("aot_graph")
    data = bytearray(g.compile_to_artifact(fs.Backend.CPU))
    if mangle == "truncate":
        data = data[: len(data) // 2]
    elif mangle == "flip_payload":
        data[-100] ^= 0xFF
    else:
        data = bytearray(b"\x00" * 64)
    with pytest.raises(fs.FusilliError) as e:
        g.load_artifact(cpu, bytes(data))
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT
    with pytest.raises(fs.FusilliError) as e:  # nothing was loaded
        g.execute({})
    assert e.value.code == fs.ErrorCode.NOT_COMPILED
