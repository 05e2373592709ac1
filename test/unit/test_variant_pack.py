"""Variant packs: what execute accepts, and rejections that leave every output untouched."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_array

import fusilli as fs
from fusilli import reference

DIM = [2, 3, 4, 5]
SENTINEL = 12345.0


@pytest.fixture(scope="module")
def compiled(cpu):
    """Two outputs: relu(x + b) and x * s, x NHWC, b a [1,C,1,1] bias, s a scalar."""
    g = fs.Graph(name="vp_graph")
    x = g.tensor(name="x", dim=DIM, stride=fs.strides(DIM, "NHWC"))
    b = g.tensor(name="b", dim=[1, 3, 1, 1])
    s = g.scalar(3.0, name="s")
    t = g.add(x, b, name="add")
    y = g.relu(t, name="relu").set_output(True).set_name("y")
    z = g.mul(x, s, name="mul").set_output(True).set_name("z")
    g.compile(cpu)
    return g, dict(x=x, b=b, s=s, t=t, y=y, z=z)


def fresh(g, ts, rng):
    inputs = {ts["x"]: random_array(ts["x"], rng), ts["b"]: random_array(ts["b"], rng)}
    outputs = {ts["y"]: fs.empty(ts["y"]), ts["z"]: fs.empty(ts["z"])}
    for a in outputs.values():
        a[...] = SENTINEL
    return inputs, outputs


def check_results(g, inputs, outputs):
    want = reference.run(g, inputs)
    for t, got in outputs.items():
        np.testing.assert_allclose(got, want[t.name], rtol=1e-6, atol=1e-6, err_msg=t.name)


def test_execute_by_tensor_and_by_name(compiled, rng):
    g, ts = compiled
    inputs, outputs = fresh(g, ts, rng)
    g.execute({**inputs, **outputs})
    check_results(g, inputs, outputs)
    inputs2, outputs2 = fresh(g, ts, rng)
    g.execute({t.name: a for t, a in {**inputs2, **outputs2}.items()})
    check_results(g, inputs2, outputs2)


def test_repeated_execute_sees_new_data(compiled, rng):
    g, ts = compiled
    inputs, outputs = fresh(g, ts, rng)
    pack = {**inputs, **outputs}
    g.execute(pack)
    first = outputs[ts["y"]].copy()
    inputs[ts["x"]][...] = random_array(ts["x"], rng)  # same arrays, new contents
    g.execute(pack)
    check_results(g, inputs, outputs)
    assert not np.array_equal(first, outputs[ts["y"]])


def test_unit_dims_may_have_any_stride(compiled, rng):
    g, ts = compiled
    inputs, outputs = fresh(g, ts, rng)
    # b is [1,3,1,1]: a view with odd strides on its unit dims is accepted.
    base = np.zeros(3, np.float32)
    odd_b = np.lib.stride_tricks.as_strided(base, shape=(1, 3, 1, 1), strides=(1024, 4, 512, 8))
    base[...] = inputs[ts["b"]].reshape(3)
    assert odd_b.strides != inputs[ts["b"]].strides
    inputs[ts["b"]] = odd_b
    g.execute({**inputs, **outputs})
    check_results(g, inputs, outputs)


def test_buffer_protocol_and_dlpack_objects(compiled, rng):
    g, ts = compiled
    inputs, outputs = fresh(g, ts, rng)

    class DLPackOnly:
        def __init__(self, arr):
            self._arr = arr

        def __dlpack__(self, **kwargs):
            return self._arr.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self._arr.__dlpack_device__()

    pack = {ts["x"]: DLPackOnly(inputs[ts["x"]]), ts["b"]: memoryview(inputs[ts["b"]])}
    pack.update({t: memoryview(a) for t, a in outputs.items()})
    g.execute(pack)
    check_results(g, inputs, outputs)


def rejection_cases(ts, inputs, outputs):
    x, b, y = ts["x"], ts["b"], ts["y"]
    xa = inputs[x]
    readonly = fs.empty(y)
    readonly[...] = SENTINEL
    readonly.flags.writeable = False
    other = fs.Graph(name="other").tensor(name="x", dim=DIM)
    return {
        "missing_input": ({b: inputs[b]}, "'x'", "missing"),
        "missing_output": ({x: xa, b: inputs[b], y: outputs[y]}, "'z'", "missing"),
        "unknown_name": ({"nope": xa}, "'nope'", "not a tensor"),
        "foreign_tensor": ({other: xa}, "'x'", "not a tensor"),
        "virtual_tensor": ({ts["t"]: fs.empty(ts["t"])}, "'add_OUT_0'", "virtual"),
        "scalar_tensor": ({ts["s"]: np.ones(1, np.float32)}, "'s'", "scalar"),
        "wrong_shape": ({x: np.zeros([2, 3, 4, 6], np.float32)}, "'x'", "shape"),
        "wrong_rank": ({x: np.zeros([2, 3, 20], np.float32)}, "'x'", "shape"),
        "wrong_dtype": ({x: xa.astype(np.float16)}, "'x'", "dtype"),
        "wrong_strides": ({x: np.ascontiguousarray(xa)}, "'x'", "stride"),
        "sliced_gaps": ({x: np.zeros([2, 3, 4, 10], np.float32)[..., ::2]}, "'x'", "stride"),
        "not_an_array": ({x: "not an array"}, "'x'", "str"),
        "readonly_output": ({y: readonly}, "'y'", "read-only"),
    }


CASES = [
    "missing_input",
    "missing_output",
    "unknown_name",
    "foreign_tensor",
    "virtual_tensor",
    "scalar_tensor",
    "wrong_shape",
    "wrong_rank",
    "wrong_dtype",
    "wrong_strides",
    "sliced_gaps",
    "not_an_array",
    "readonly_output",
]


@pytest.mark.parametrize("case", CASES)
def test_rejection_leaves_outputs_untouched(compiled, rng, case):
    g, ts = compiled
    inputs, outputs = fresh(g, ts, rng)
    override, tensor_fragment, what = rejection_cases(ts, inputs, outputs)[case]
    pack = {**inputs, **outputs}
    if case == "missing_input":
        del pack[ts["x"]]
    if case == "missing_output":
        del pack[ts["z"]]
    pack.update(override)
    with pytest.raises(fs.FusilliError) as e:
        g.execute(pack)
    assert e.value.code == fs.ErrorCode.VARIANT_PACK_ERROR, str(e.value)
    text = str(e.value)
    assert text.startswith("VARIANT_PACK_ERROR: ")
    assert "vp_graph" in text and tensor_fragment in text and what in text, text
    for t, a in outputs.items():
        assert (a == SENTINEL).all(), f"{t.name} was written by a rejected execute"
    if case == "readonly_output":
        assert (pack[ts["y"]] == SENTINEL).all()
    # The graph still works after a rejection.
    g.execute({**inputs, **outputs})
    check_results(g, inputs, outputs)


def test_variant_pack_must_be_a_mapping(compiled, rng):
    g, ts = compiled
    inputs, outputs = fresh(g, ts, rng)
    with pytest.raises(fs.FusilliError) as e:
        g.execute(list({**inputs, **outputs}.values()))
    assert e.value.code == fs.ErrorCode.VARIANT_PACK_ERROR
    assert all((a == SENTINEL).all() for a in outputs.values())


def test_misaligned_arrays_are_accepted(compiled, rng):
    """Arrays need not be aligned (numpy allocations often are not 64-byte aligned)."""
    g, ts = compiled
    inputs, outputs = fresh(g, ts, rng)
    x = ts["x"]
    n = int(np.prod(DIM))
    raw = np.zeros(n + 1, np.float32)[1:]  # 4-byte offset from an (at best) aligned base
    phys = raw.reshape([DIM[i] for i in x.physical_order])
    shifted = phys.transpose([x.physical_order.index(i) for i in range(4)])
    shifted[...] = inputs[x]
    inputs[x] = shifted
    g.execute({**inputs, **outputs})
    check_results(g, inputs, outputs)


def test_execute_before_compile_is_not_compiled():
    g = fs.Graph(name="uncompiled")
    x = g.tensor(name="x", dim=[2])
    y = g.relu(x, name="r").set_output(True)
    g.validate()
    out = np.full([2], SENTINEL, np.float32)
    for action in (
        lambda: g.execute({x: np.ones(2, np.float32), y: out}),
        lambda: g.workspace_size,
        lambda: g.compile_stats,
    ):
        with pytest.raises(fs.FusilliError) as e:
            action()
        assert e.value.code == fs.ErrorCode.NOT_COMPILED
        assert "'uncompiled'" in str(e.value)
    assert (out == SENTINEL).all()


def test_changing_the_graph_drops_the_compiled_state(cpu, rng):
    g = fs.Graph(name="vp_invalidate")
    x = g.tensor(name="x", dim=[4])
    y = g.relu(x, name="r").set_output(True)
    g.compile(cpu)
    g.neg(x, name="n").set_output(True)  # adding an op invalidates the compiled graph
    with pytest.raises(fs.FusilliError) as e:
        g.execute({x: np.ones(4, np.float32), y: np.zeros(4, np.float32)})
    assert e.value.code == fs.ErrorCode.NOT_COMPILED


# ---------------------------------------------------------------- packs that could lose data
# Each case is tried on a fresh binding and on the repeated-call fast path (the same
# pack executed once before it is spoiled): both must refuse it, leave every output
# untouched, and keep the graph usable.


def _spoil_alias_output_to_input(pack, ts):
    pack[ts["y"]] = pack[ts["x"]]  # y's layout is x's (NHWC)


def _spoil_one_array_two_outputs(pack, ts):
    pack[ts["z"]] = pack[ts["y"]]


def _spoil_partial_overlap(pack, ts):
    x = ts["x"]
    n = int(np.prod(DIM))
    raw = fs.empty(fs.Graph(name="raw").tensor(name="r", dim=[2 * n], data_type=fs.DataType.FLOAT))
    order = x.physical_order
    inverse = [order.index(i) for i in range(4)]
    view_of = lambda start: raw[start : start + n].reshape([DIM[i] for i in order]).transpose(inverse)  # noqa: E731
    view_of(0)[...] = pack[x]
    pack[x] = view_of(0)
    pack[ts["y"]] = view_of(48)  # 64-byte aligned, overlaps x's second half


def _spoil_same_tensor_twice(pack, ts):
    pack["x"] = pack[ts["x"]].copy()


def _spoil_readonly_output(pack, ts):
    pack[ts["y"]].flags.writeable = False


def _spoil_strides_in_place(pack, ts):
    import warnings

    x = pack[ts["x"]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # in-place strides are deprecated, not gone
        x.strides = tuple(s * x.itemsize for s in fs.strides(DIM, "NCHW"))


SPOILERS = {
    "alias_output_to_input": (_spoil_alias_output_to_input, "shares memory with input tensor 'x'"),
    "one_array_two_outputs": (_spoil_one_array_two_outputs, "shares memory with output tensor"),
    "partial_overlap": (_spoil_partial_overlap, "output tensor 'y' shares memory with input tensor 'x'"),
    "same_tensor_twice": (_spoil_same_tensor_twice, "tensor 'x' is given twice"),
    "readonly_output": (_spoil_readonly_output, "output array is read-only"),
    "strides_in_place": (_spoil_strides_in_place, "do not match the tensor's stride"),
}


@pytest.mark.parametrize("fast_path", [False, True], ids=["fresh", "fast_path"])
@pytest.mark.parametrize("case", list(SPOILERS))
def test_packs_that_would_lose_data_are_refused(compiled, rng, case, fast_path):
    g, ts = compiled
    inputs, outputs = fresh(g, ts, rng)
    pack = {**inputs, **outputs}
    if fast_path:
        g.execute(pack)
        for a in outputs.values():
            a[...] = SENTINEL
    spoil, message = SPOILERS[case]
    spoil(pack, ts)
    x_before = np.array(pack[ts["x"]])
    with pytest.raises(fs.FusilliError) as e:
        g.execute(pack)
    assert e.value.code == fs.ErrorCode.VARIANT_PACK_ERROR, str(e.value)
    assert message in str(e.value) and "vp_graph" in str(e.value), str(e.value)
    for t, a in outputs.items():
        assert (a == SENTINEL).all(), f"{t.name} was written by a rejected execute"
    np.testing.assert_array_equal(np.array(pack[ts["x"]]), x_before)
    inputs, outputs = fresh(g, ts, rng)
    g.execute({**inputs, **outputs})
    check_results(g, inputs, outputs)


def test_same_array_given_twice_for_one_tensor_is_accepted(compiled, rng):
    g, ts = compiled
    inputs, outputs = fresh(g, ts, rng)
    g.execute({**inputs, **outputs, "x": inputs[ts["x"]]})
    check_results(g, inputs, outputs)


def test_output_overlapping_the_workspace_is_refused(cpu, rng):
    g = fs.Graph(name="vp_ws", io_data_type=fs.DataType.FLOAT)
    x = g.tensor(name="x", dim=[16])
    y = g.relu(x, name="r").set_output(True)
    g.compile(cpu)
    out = fs.empty(y)
    out[...] = SENTINEL
    with pytest.raises(fs.FusilliError) as e:
        g.execute({x: rng.random(16, np.float32), y: out}, workspace=out)
    assert e.value.code == fs.ErrorCode.VARIANT_PACK_ERROR and "the workspace" in str(e.value)
    assert (out == SENTINEL).all()


@pytest.fixture(scope="module")
def broadcast_graph(cpu):
    """out = a + row, with ``row`` a stride-0 (broadcast) [4, 8] input."""
    g = fs.Graph(name="vp_readonly", io_data_type=fs.DataType.FLOAT)
    a = g.tensor(name="a", dim=[4, 8])
    row = g.tensor(name="row", dim=[4, 8], stride=[0, 1])
    out = g.add(a, row, name="add").set_output(True).set_name("out")
    g.compile(cpu)
    return g, a, row, out


@pytest.mark.parametrize("aligned", [True, False], ids=["aligned", "misaligned"])
def test_readonly_and_broadcast_inputs_work(broadcast_graph, rng, aligned):
    g, a, row, out = broadcast_graph
    a_arr = fs.empty(a) if aligned else np.zeros(33, np.float32)[1:].reshape(4, 8)
    a_arr[...] = rng.random((4, 8))
    a_arr.flags.writeable = False
    row_arr = np.broadcast_to(rng.random(8).astype(np.float32), (4, 8))  # read-only, stride 0
    out_arr = fs.empty(out)
    pack = {a: a_arr, row: row_arr, out: out_arr}
    for _ in range(2):  # bound, then the fast path
        out_arr[...] = SENTINEL
        g.execute(pack)
        np.testing.assert_allclose(out_arr, a_arr + row_arr, rtol=1e-6)


def test_set_stride_after_compile_is_noticed(cpu, rng):
    g = fs.Graph(name="vp_restride", io_data_type=fs.DataType.FLOAT)
    x = g.tensor(name="x", dim=[3, 5])
    y = g.neg(x, name="neg").set_output(True)
    g.compile(cpu)
    xa, ya = fs.empty(x), fs.empty(y)
    xa[...] = rng.random((3, 5))
    pack = {x: xa, y: ya}
    g.execute(pack)  # bound: the next call would take the fast path
    x.set_stride([1, 3])
    ya[...] = SENTINEL
    transposed = np.asfortranarray(xa)
    for p in (pack, {x: transposed, y: ya}):
        with pytest.raises(fs.FusilliError) as e:
            g.execute(p)
        assert e.value.code == fs.ErrorCode.NOT_COMPILED, str(e.value)
        assert "'x' changed since compile (stride [5, 1] -> [1, 3])" in str(e.value)
        assert (ya == SENTINEL).all()
    g.compile(cpu)  # recompiled for the new layout
    g.execute({x: transposed, y: ya})
    np.testing.assert_array_equal(ya, -xa)


def test_fast_path_repacks_int4_inputs(cpu, rng):
    """int4 arrays are packed into fusilli's own buffer: new contents in the same array
    must reach the repeated-call fast path."""
    g = fs.Graph(name="vp_int4", compute_data_type=fs.DataType.FLOAT)
    a = g.tensor(name="a", dim=[1, 4, 8], data_type="i4")  # the shape of upstream's int4 sample
    b = g.tensor(name="b", dim=[1, 8, 3], data_type="f16")
    c = g.matmul(a, b, name="mm").set_output(True).set_name("c").set_data_type("f16")
    g.compile(cpu)
    pack = {a: random_array(a, rng), b: random_array(b, rng), c: fs.empty(c)}
    for _ in range(2):
        g.execute(pack)
        want = reference.run(g, {a: pack[a], b: pack[b]})["c"]
        np.testing.assert_allclose(np.asarray(pack[c], np.float32), np.asarray(want, np.float32), rtol=1e-2, atol=1e-2)
        pack[a][...] = random_array(a, rng)  # same array, new contents
