"""The latency-critical paths, checked deterministically (no timing assertions):
a light ``import fusilli``, a cache hit that neither builds IR nor imports the
compiler, and the bound fast path of ``execute`` (reused while the pack is the
same, rebound and re-checked when an array changes)."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest
from conftest import run_python

import fusilli as fs
from fusilli.backend import cache

DIM = [2, 3, 4, 5]


def add_graph(name: str = "latency_paths") -> tuple[fs.Graph, fs.TensorAttr, fs.TensorAttr, fs.TensorAttr]:
    g = fs.Graph(name=name)
    x = g.tensor(name="x", dim=DIM)
    y = g.tensor(name="y", dim=DIM)
    out = g.add(x, y, name="add").set_output(True).set_name("out")
    return g, x, y, out


@pytest.fixture(scope="module")
def compiled(cpu):
    g, x, y, out = add_graph()
    g.compile(cpu)
    return g, x, y, out


def arrays(rng, *tensors):
    result = []
    for t in tensors:
        a = fs.empty(t)
        a[...] = rng.uniform(-1, 1, a.shape)
        result.append(a)
    return result


def test_import_fusilli_imports_neither_iree_nor_the_graph_builder():
    code = """
        import json, sys
        import fusilli as fs
        heavy = sorted(m for m in sys.modules if m.startswith(("iree", "fusilli.graph", "fusilli.ops", "fusilli.backend")))
        print(json.dumps({"heavy": heavy, "dtype": fs.DataType.FLOAT.name}))
        fs.Graph, fs.Handle, fs.PointwiseMode, fs.CompileStats  # lazy names resolve
    """
    out = json.loads(run_python(textwrap.dedent(code)).stdout.strip().splitlines()[-1])
    assert out == {"heavy": [], "dtype": "FLOAT"}


def test_fusilli_never_imports_torch(tmp_path):
    """Building, compiling, executing and checking a graph (numpy arrays) leaves PyTorch unloaded."""
    code = """
        import json, sys
        import numpy as np
        import fusilli as fs
        from fusilli import reference
        g = fs.Graph(name="no_torch")
        x = g.tensor(name="x", dim=[4])
        out = g.relu(x, name="relu").set_output(True)
        g.compile(fs.Handle(fs.Backend.CPU))
        xa, oa = fs.empty(x), fs.empty(out)
        xa[...] = [-1, 2, -3, 4]
        g.execute({x: xa, out: oa})
        reference.run(g, {x: xa})
        print(json.dumps({"torch": sorted(m for m in sys.modules if m == "torch" or m.startswith("torch.")),
                          "ok": oa.tolist() == [0, 2, 0, 4]}))
    """
    proc = run_python(textwrap.dedent(code), env={"FUSILLI_CACHE_DIR": str(tmp_path)})
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"torch": [], "ok": True}


def test_cache_hit_compile_builds_no_ir_and_imports_no_compiler(tmp_path):
    # The cache is filled by a fresh process too: this one's source digest
    # (part of the key) was taken at its start and may predate an edit.
    fill = """
        import fusilli as fs
        g = fs.Graph(name="latency_hit")
        x = g.tensor(name="x", dim=__DIM__)
        y = g.tensor(name="y", dim=__DIM__)
        g.add(x, y, name="add").set_output(True).set_name("out")
        g.compile(fs.Handle(fs.Backend.CPU))
    """.replace("__DIM__", repr(DIM))
    run_python(textwrap.dedent(fill), env={"FUSILLI_CACHE_DIR": str(tmp_path)})
    code = """
        import json, sys
        import numpy as np
        import fusilli as fs
        from fusilli.graph import Graph

        DIM = __DIM__

        def no_ir(self):
            raise AssertionError("a cache hit built IR")

        Graph._optimized_module = no_ir
        g = fs.Graph(name="latency_hit")
        x = g.tensor(name="x", dim=DIM)
        y = g.tensor(name="y", dim=DIM)
        out = g.add(x, y, name="add").set_output(True).set_name("out")
        handle = fs.Handle(fs.Backend.CPU)
        before = set(sys.modules)
        g.compile(handle)
        new = sorted(set(sys.modules) - before)
        xa, ya, oa = fs.empty(x), fs.empty(y), fs.empty(out)
        xa[...] = 1.5
        ya[...] = 2.0
        g.execute({x: xa, y: ya, out: oa})
        print(json.dumps({
            "hit": g._compiled.artifact.from_cache,
            "new_compiler_modules": [
                m for m in new if m.startswith(("iree.compiler", "fusilli.ir", "fusilli.lowering", "fusilli.passes"))
            ],
            "compiler_module_loaded": "fusilli.backend.compiler" in sys.modules,
            "ok": bool(np.all(oa == 3.5)),
        }))
    """.replace("__DIM__", repr(DIM))
    proc = run_python(textwrap.dedent(code), env={"FUSILLI_CACHE_DIR": str(tmp_path)})
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"hit": True, "new_compiler_modules": [], "compiler_module_loaded": False, "ok": True}


def test_repeated_execute_reuses_the_binding(compiled, rng, monkeypatch):
    g, x, y, out = compiled
    cg = g._compiled
    xa, ya, oa = arrays(rng, x, y, out)
    pack = {x: xa, y: ya, out: oa}
    g.execute(pack)
    binding = cg._binding
    assert binding is not None and binding.direct and binding.fast
    calls = []
    real_bind = cg._bind
    monkeypatch.setattr(cg, "_bind", lambda *a: calls.append(a) or real_bind(*a))
    for _ in range(3):
        xa[...] = rng.uniform(-1, 1, xa.shape)  # same arrays, new contents
        g.execute(pack)
        np.testing.assert_array_equal(oa, xa + ya)  # outputs land in the caller's array
    g.execute(dict(pack))  # another dict with the same arrays: still the same call
    assert calls == [] and cg._binding is binding


def test_changed_array_rebinds_and_rechecks(compiled, rng, monkeypatch):
    g, x, y, out = compiled
    cg = g._compiled
    xa, ya, oa = arrays(rng, x, y, out)
    pack = {x: xa, y: ya, out: oa}
    g.execute(pack)
    first = cg._binding
    (xb,) = arrays(rng, x)
    pack[x] = xb  # another object under the same key
    g.execute(pack)
    assert cg._binding is not first
    np.testing.assert_array_equal(oa, xb + ya)
    # The same output object, reshaped in place: re-checked, rejected, nothing runs.
    oa[...] = 7.0
    oa.shape = (6, 4, 5)
    with pytest.raises(fs.FusilliError) as e:
        g.execute(pack)
    assert e.value.code == fs.ErrorCode.VARIANT_PACK_ERROR
    assert np.all(oa == 7.0)
    oa.shape = tuple(DIM)
    g.execute(pack)
    np.testing.assert_array_equal(oa, xb + ya)


class SwappableTensor:
    """A DLPack array-like whose storage can be replaced (as torch's ``set_`` does)."""

    def __init__(self, array: np.ndarray):
        self.storage = array

    def __dlpack__(self, **kwargs):
        return self.storage.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.storage.__dlpack_device__()


def test_array_like_with_new_storage_rebinds(compiled, rng):
    g, x, y, out = compiled
    xa, ya, oa = arrays(rng, x, y, out)
    xs = SwappableTensor(xa)
    pack = {x: xs, y: ya, out: oa}
    g.execute(pack)
    np.testing.assert_array_equal(oa, xa + ya)
    (xb,) = arrays(rng, x)
    xs.storage = xb  # same object, new address
    g.execute(pack)
    np.testing.assert_array_equal(oa, xb + ya)


def misaligned(a: np.ndarray) -> np.ndarray:
    raw = np.empty(a.nbytes + 64 + a.itemsize, np.uint8)
    start = (-raw.ctypes.data) % 64 + a.itemsize  # aligned to the element, not to 64 bytes
    view = raw[start : start + a.nbytes].view(a.dtype).reshape(a.shape)
    view[...] = a
    assert view.ctypes.data % 64
    return view


def test_misaligned_arrays_on_the_fast_path(compiled, rng, monkeypatch):
    g, x, y, out = compiled
    cg = g._compiled
    xa, ya, oa = (misaligned(a) for a in arrays(rng, x, y, out))
    pack = {x: xa, y: ya, out: oa}
    g.execute(pack)
    np.testing.assert_array_equal(oa, xa + ya)
    binding = cg._binding
    assert not binding.direct and binding.copy_in and binding.copy_out
    monkeypatch.setattr(cg, "_bind", lambda *a: pytest.fail("rebound"))
    for _ in range(2):
        xa[...] = rng.uniform(-1, 1, xa.shape)
        g.execute(pack)
        np.testing.assert_array_equal(oa, xa + ya)  # copied in and out on each call


def test_fresh_arrays_in_the_tensors_layout_skip_the_general_checks(compiled, rng, monkeypatch):
    """A new array each call (a fresh output, as fusilli.torch allocates one per call) in
    exactly its tensor's shape, dtype and strides, aligned, is bound by one comparison
    (``_exact_slot``); anything else, here a misaligned output, takes the general checks."""
    g, x, y, out = compiled
    cg = g._compiled
    xa, ya = arrays(rng, x, y)
    checked = []
    real_check = cg._check_array
    monkeypatch.setattr(
        cg, "_check_array", lambda t, a, is_output: checked.append(t.name) or real_check(t, a, is_output)
    )
    for _ in range(3):
        oa = fs.empty(out)
        g.execute({x: xa, y: ya, out: oa})
        np.testing.assert_array_equal(oa, xa + ya)
    assert checked == []
    shifted = misaligned(fs.empty(out))
    g.execute({x: xa, y: ya, out: shifted})
    np.testing.assert_array_equal(shifted, xa + ya)  # through a staging copy
    assert checked == ["out"]


@pytest.mark.parametrize(
    "stride",
    [fs.strides(DIM, "NCHW"), fs.strides(DIM, "NHWC"), [0, 20, 5, 1], [5, 0, 0, 1]],
    ids=["nchw", "nhwc", "broadcast_n", "broadcast_ch"],
)
def test_exact_layout_agrees_with_the_general_path(stride):
    """``_ExactLayout`` (precomputed per tensor) gives the physical view and byte extent the
    general path computes for the same array (``_physical_view``, ``_byte_extent``)."""
    from fusilli.backend.runtime import _byte_extent, _ExactLayout, aligned_empty

    g = fs.Graph(name="exact_layout")
    t = g.tensor(name="t", dim=DIM, stride=stride)
    exact = _ExactLayout.of(t, split=False)
    assert exact is not None
    span = exact.extent[1] // 4
    a = np.lib.stride_tricks.as_strided(aligned_empty([span], np.float32), DIM, exact.strides)
    base = a.__array_interface__["data"][0]
    assert (base + exact.extent[0], base + exact.extent[1]) == _byte_extent(a)
    phys = a.transpose(exact.order)
    if exact.broadcast_index is not None:
        phys = phys[exact.broadcast_index]
    assert phys.flags.c_contiguous and list(phys.shape) == t.physical_dim


def test_non_mapping_pack_is_rejected_after_a_bound_call(compiled, rng):
    g, x, y, out = compiled
    xa, ya, oa = arrays(rng, x, y, out)
    g.execute({x: xa, y: ya, out: oa})
    with pytest.raises(fs.FusilliError) as e:
        g.execute([(x, xa), (y, ya), (out, oa)])
    assert e.value.code == fs.ErrorCode.VARIANT_PACK_ERROR


def test_cache_entry_payload_is_aligned_and_stats_lazy(compiled):
    g = compiled[0]
    artifact = cache.lookup(g.key())
    assert artifact is not None and artifact.from_cache
    assert np.frombuffer(artifact.vmfb, np.uint8).ctypes.data % 64 == 0
    assert isinstance(artifact._stats, dict)  # decoded on first use
    assert artifact.stats.dispatch_count == g.compile_stats.dispatch_count
    again = cache.Artifact.from_bytes(artifact.to_bytes())
    assert bytes(again.vmfb) == bytes(artifact.vmfb) and again.graph_key == artifact.graph_key


def test_dist_versions_match_importlib_metadata():
    from importlib import metadata

    for dist in ("fusilli", "iree-base-compiler"):
        assert cache.dist_version(dist) == metadata.version(dist)
