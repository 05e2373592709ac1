"""Dynamic dims: one compiled graph runs other extents in those dims, no recompile."""

import numpy as np
import pytest

import fusilli as fs
import fusilli.backend.compiler as compiler
from fusilli import reference


@pytest.fixture
def compile_counter(monkeypatch):
    calls = []
    original = compiler.compile_module

    def counting(module, flags):
        calls.append(flags)
        return original(module, flags)

    monkeypatch.setattr(compiler, "compile_module", counting)
    monkeypatch.setattr(fs.backend, "compile_module", counting)
    return calls


def _check(g, handle, arrays, outputs, rtol=1e-4, atol=1e-4):
    g.execute({**arrays, **outputs})
    expected = reference.run(g, arrays)
    for t, got in outputs.items():
        np.testing.assert_allclose(got, expected[t.name], rtol=rtol, atol=atol)


def test_padded_conv_dynamic_batch_with_workspace(cpu, rng, compile_counter):
    # Padding makes IREE use scratch memory whose size depends on the batch:
    # the workspace is sized per call from the module's size function.
    g = fs.Graph(name="dyn_conv_relu")
    x = g.tensor(name="x", dim=[2, 4, 6, 6], stride=fs.strides([2, 4, 6, 6], "NHWC"), dynamic_dims=[0])
    w = g.tensor(name="w", dim=[8, 4, 3, 3])
    y = g.relu(g.conv_fprop(x, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1])).set_output(True)
    g.validate()
    assert y.dynamic_dims == [0]
    g.compile(cpu)
    assert len(compile_counter) <= 1  # 0 when the session cache already had it
    compiled_before = len(compile_counter)
    sizes = []
    for n in (1, 3, 5):
        xa = fs.empty(x, dim=[n, 4, 6, 6])
        xa[...] = rng.standard_normal(xa.shape)
        wa = fs.empty(w)
        wa[...] = rng.standard_normal(wa.shape)
        _check(g, cpu, {x: xa, w: wa}, {y: fs.empty(y, dim=[n, 8, 6, 6])})
        sizes.append(g.workspace_size)
    assert len(compile_counter) == compiled_before
    assert sizes[-1] > sizes[0] > 0


def test_matmul_dynamic_m_with_bias(cpu, rng):
    g = fs.Graph(name="dyn_matmul_bias")
    a = g.tensor(name="a", dim=[8, 16], dynamic_dims=[0])
    b = g.tensor(name="b", dim=[16, 12])
    bias = g.tensor(name="bias", dim=[1, 12])
    c = g.add(g.matmul(a, b), bias).set_output(True)
    g.validate()
    assert c.dynamic_dims == [0]
    g.compile(cpu)
    for m in (1, 8, 33):
        arrays = {t: fs.empty(t, dim=d) for t, d in ((a, [m, 16]), (b, None), (bias, None))}
        for arr in arrays.values():
            arr[...] = rng.standard_normal(arr.shape)
        _check(g, cpu, arrays, {c: fs.empty(c, dim=[m, 12])})


def test_dynamic_extent_mismatch_in_static_dim_is_rejected(cpu):
    g = fs.Graph(name="dyn_reject")
    a = g.tensor(name="a", dim=[4, 8], dynamic_dims=[0])
    out = g.relu(a).set_output(True)
    g.compile(cpu)
    bad = fs.empty(a, dim=[4, 9])
    o = fs.empty(out)
    with pytest.raises(fs.FusilliError) as err:
        g.execute({a: bad, out: o})
    assert err.value.code == fs.ErrorCode.VARIANT_PACK_ERROR
    assert "'a'" in str(err.value)


def test_dynamic_dim_of_extent_one_is_invalid():
    g = fs.Graph(name="dyn_invalid")
    a = g.tensor(name="a", dim=[1, 8], dynamic_dims=[0])
    g.relu(a).set_output(True)
    with pytest.raises(fs.FusilliError) as err:
        g.validate()
    assert err.value.code == fs.ErrorCode.INVALID_ATTRIBUTE
    assert "'a'" in str(err.value) and "dynamic dim 0" in str(err.value)


# ----------------------------------------------------------------------------- extents of 0
def _empty_batch_graph(kind: str) -> tuple[fs.Graph, fs.TensorAttr]:
    g = fs.Graph(name=f"dyn_empty_{kind}")
    if kind == "conv":
        x = g.tensor(name="x", dim=[2, 4, 6, 6], stride=fs.strides([2, 4, 6, 6], "NHWC"), dynamic_dims=[0])
        w = g.tensor(name="w", dim=[8, 4, 3, 3], stride=fs.strides([8, 4, 3, 3], "NHWC"))
        y = g.relu(g.conv_fprop(x, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv"), name="relu")
    else:
        a = g.tensor(name="a", dim=[4, 8], dynamic_dims=[0])
        if kind == "matmul":
            y = g.matmul(a, g.tensor(name="b", dim=[8, 5]), name="mm")
        else:
            y = g.reduction(a, mode="ADD", axes=[0], name="reduce")
    y.set_output(True).set_name("y")
    g.validate()
    return g, y


@pytest.mark.parametrize(
    "kind, y_dim, want",
    [("conv", [0, 8, 6, 6], None), ("matmul", [0, 5], None), ("sum", [1, 8], 0.0)],
    ids=["conv-empty-output", "matmul-empty-rows", "sum-over-nothing-is-0"],
)
@pytest.mark.parametrize("make", ["numpy", "fs.empty"])
def test_an_empty_batch_runs_as_in_pytorch(cpu, kind, y_dim, want, make):
    """An extent of 0 in a dynamic dim. NumPy 2 gives empty arrays strides of 0: they were
    refused ("strides [0, 0, 0, 0] do not match") or collapsed like a broadcast dim (IREE:
    "expected shape 0x8, actual shape 0x1"); any strides do for an array with no element."""
    g, y = _empty_batch_graph(kind)
    g.compile(cpu)

    def array(t, dim):
        if make == "fs.empty":
            return fs.empty(t, dim=dim)
        return np.zeros(dim, np.float32)  # strides all 0 (NumPy 2) when empty

    inputs = {t: array(t, [0, *t.dim[1:]] if t.dynamic_dims else t.dim) for t in g.input_tensors()}
    for t, arr in inputs.items():
        if arr.size:
            inputs[t] = fs.empty(t)
            inputs[t][...] = 1.0
    out = array(y, y_dim) if 0 in y_dim else fs.empty(y, dim=y_dim)
    out[...] = 1e6  # the call writes its output
    g.execute({**inputs, y: out})
    assert list(out.shape) == y_dim
    if want is not None:
        np.testing.assert_array_equal(out, np.full(y_dim, want, np.float32))
    full = {t: fs.empty(t) for t in g.input_tensors()}  # the same graph runs non-empty calls after
    for arr in full.values():
        arr[...] = 1.0
    _check(g, cpu, full, {y: fs.empty(y)})
