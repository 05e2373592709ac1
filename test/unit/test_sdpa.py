"""SDPA: numerics against the float64 reference for each variant, and validation errors."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_array, run_and_check

import fusilli as fs
from fusilli.backend import rules
from fusilli.backend.targets import Target
from fusilli.lowering import sdpa as sdpa_mod

B, S, D = 1, 8, 4
# A size that takes the decomposed (matmul / softmax / matmul) emission: 4*B*H*S*S*D >= 2^20.
BIG_S, BIG_D = 64, 64


def decomposes(node) -> bool:
    """Whether the host CPU's rules decompose ``node`` (matmul / softmax / matmul)."""
    choice = rules.choose(rules.problem_of(node), Target.resolve("cpu"), "algorithm")
    return choice is not None and choice.rule in (rules.CPU_SDPA_DECOMPOSED, rules.CPU_SDPA_CAUSAL_QUERY_BLOCKS)


def softmaxes(text: str) -> int:
    """The decomposed softmaxes in emitted IR: each computes exp twice (its row sum, then the
    normalized scores)."""
    return text.count("math.exp") // 2


def build(variant: str, s: int = S, d: int = D, dt: fs.DataType = fs.DataType.FLOAT):
    g = fs.Graph(name=f"sdpa_{variant}_s{s}_d{d}_{dt.name}", io_data_type=dt, compute_data_type=fs.DataType.FLOAT)
    hq = hk = hv = 2
    S, D = s, d
    skv = S
    kw = {}
    if variant == "gqa":
        hq, hk, hv, kw["enable_gqa"] = 4, 2, 2, True
    if variant == "gqa_hk_ne_hv":
        hq, hk, hv, kw["enable_gqa"] = 4, 2, 1, True
    if variant in ("cross", "causal_cross"):
        skv = S - 2
    q = g.tensor(name="q", dim=[B, hq, S, D])
    k = g.tensor(name="k", dim=[B, hk, skv, D])
    # V stored with S and H swapped in memory: layouts come from strides.
    v = g.tensor(name="v", dim=[B, hv, skv, D], stride=fs.strides([B, hv, skv, D], "NHWC"))
    if variant in ("causal", "causal_cross"):
        kw["is_causal"] = True
    if variant == "mask":
        kw["mask"] = g.tensor(name="m", dim=[1, 1, S, skv], data_type=dt)
    if variant == "bool_mask":
        kw["mask"] = g.tensor(name="m", dim=[B, 1, S, skv], data_type=fs.DataType.BOOLEAN)
    if variant == "scale":
        kw["scale"] = 0.3
    o = g.sdpa(q, k, v, name="attn", **kw)
    o.set_output(True).set_name("o")
    return g.validate()


VARIANTS = ["basic", "causal", "mask", "bool_mask", "scale", "gqa", "gqa_hk_ne_hv", "cross"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_sdpa_numerics(variant, cpu, rng):
    g = build(variant)
    assert not decomposes(g.nodes[0])
    inputs = {t: random_array(t, rng, -2, 2) for t in g.input_tensors()}
    run_and_check(g, cpu, inputs, rtol=1e-4, atol=1e-4)  # random bool masks: some rows fully masked (0)


def _check(g, cpu, rng, tol):
    inputs = {t: random_array(t, rng, -2, 2) for t in g.input_tensors()}
    run_and_check(g, cpu, inputs, rtol=tol, atol=tol)


@pytest.mark.parametrize("variant", VARIANTS)
def test_sdpa_decomposed_numerics(variant, cpu, rng):
    g = build(variant, BIG_S, BIG_D)
    assert decomposes(g.nodes[0])
    text = g.emit_mlir()
    assert softmaxes(text) == 1 and "scaled_dot_product_attention" not in text
    _check(g, cpu, rng, 1e-4)


@pytest.mark.parametrize("dt", [fs.DataType.HALF, fs.DataType.BFLOAT16])
@pytest.mark.parametrize("variant", ["basic", "causal", "mask", "gqa_hk_ne_hv"])
def test_sdpa_decomposed_low_precision(variant, dt, cpu, rng):
    """f16/bf16 are computed in f32 (widened, softmax and matmuls in f32, narrowed once)."""
    g = build(variant, BIG_S, BIG_D, dt)
    assert decomposes(g.nodes[0])
    text = g.emit_mlir()
    assert softmaxes(text) == 1 and f"[1,2,{BIG_S},{BIG_S}],f32>" in text
    _check(g, cpu, rng, 1e-2 if dt == fs.DataType.HALF else 5e-2)


@pytest.mark.parametrize("variant", ["basic", "causal", "mask", "gqa"])
def test_sdpa_fused_large_fallback(variant, cpu, rng, monkeypatch):
    """Scores over the memory bound keep the fused op; a large causal mask is then computed, not a constant."""
    monkeypatch.setenv("FUSILLI_DISABLE_CACHE", "1")  # the emission below differs for the same graph
    monkeypatch.setattr(rules, "CPU_SDPA_MAX_SCORES_BYTES", 1024)
    monkeypatch.setattr(sdpa_mod, "CONST_CAUSAL_MASK_MAX_ELEMENTS", 16)
    g = build(variant, 16, 8)
    assert not decomposes(g.nodes[0])
    text = g.emit_mlir()
    fused = "iree_linalg_ext.attention" if variant == "mask" else "torch.aten.scaled_dot_product_attention"
    assert fused in text and softmaxes(text) == 0
    if variant == "causal":
        assert "torch.aten.arange" in text and "tensor<1x2x16x16xf32>" not in text
    _check(g, cpu, rng, 1e-4)


def _sdpa_keys(skv: int) -> fs.Graph:
    """A decomposed attention of 256 query rows over ``skv`` keys (2 heads, D = 64)."""
    g = fs.Graph(name=f"sdpa_keys_{skv}")
    q = g.tensor(name="q", dim=[1, 2, 256, 64])
    k = g.tensor(name="k", dim=[1, 2, skv, 64])
    v = g.tensor(name="v", dim=[1, 2, skv, 64])
    g.sdpa(q, k, v, name="attn").set_output(True).set_name("o")
    return g.validate()


@pytest.mark.parametrize("skv, lanes, tail", [(64, True, 0), (62, True, 14), (197, True, 5), (31, False, 0)])
def test_sdpa_decomposed_softmax_reduces_in_lanes(skv, lanes, tail, cpu, rng):
    """Rows of at least two rows of SOFTMAX_LANES keys are reduced as that many lanes first (a
    parallel vector dim), then across the lanes, from the reduction of the last N % 16 keys; shorter
    rows along the row."""
    g = _sdpa_keys(skv)
    assert decomposes(g.nodes[0])
    text = g.emit_mlir()
    n = sdpa_mod.SOFTMAX_LANES
    assert (f"tensor<1x2x256x{skv // n}x{n}xf32>" in text) == lanes
    assert ('"parallel", "parallel", "parallel", "reduction", "parallel"' in text) == lanes
    # per lane, the tail, then across the lanes
    assert text.count("arith.maxnumf") == (1 if not lanes else 3 if tail else 2)
    assert (f"tensor<1x2x256x{skv}xf32> to tensor<1x2x256x{tail}xf32>" in text) == bool(tail)
    _check(g, cpu, rng, 1e-4)


@pytest.mark.parametrize("variant", ["basic", "cross"])
def test_sdpa_decomposed_softmax_large_scores(variant, cpu, rng):
    """Scores in the thousands (near one-hot rows): the row max is taken out before exp."""
    g = build(variant, BIG_S, BIG_D)
    inputs = {t: random_array(t, rng, -6, 6) for t in g.input_tensors()}
    run_and_check(g, cpu, inputs, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("variant", ["basic", "cross"])
@pytest.mark.parametrize("where", ["q", "k"])
def test_sdpa_decomposed_softmax_nan(variant, where, cpu, rng):
    """A NaN score makes its row NaN, as torch's softmax does: a NaN in a query row poisons that
    row, in a key every row (arith.maxnumf skips the NaN, the row's sum does not)."""
    g = build(variant, BIG_S, BIG_D)
    inputs = {t: random_array(t, rng, -2, 2) for t in g.input_tensors()}
    tensor = next(t for t in inputs if t.name == where)
    inputs[tensor][0, 1, 3, 5] = np.nan
    got = run_and_check(g, cpu, inputs, rtol=1e-4, atol=1e-4)["o"]  # NaN where the reference has NaN
    nan_rows = np.isnan(got).all(axis=-1)
    assert nan_rows[0, 1, 3] and (nan_rows[0, 1].all() == (where == "k")) and not nan_rows[0, 0].any()


def test_sdpa_decompose_selection():
    node = build("basic", BIG_S, BIG_D).nodes[0]
    assert decomposes(node)
    assert not decomposes(build("basic", 8, 4).nodes[0])  # tiny: the fused op, 1 dispatch
    g = fs.Graph(name="sdpa_dynamic")
    dims = [1, 2, 512, 64]
    q, k, v = (g.tensor(name=n, dim=dims, dynamic_dims=[2]) for n in "qkv")
    g.sdpa(q, k, v, name="attn").set_output(True)
    g.validate()
    assert not decomposes(g.nodes[0])  # dynamic dims: the fused op


def _graph(q_dim=(1, 2, 8, 4), k_dim=(1, 2, 8, 4), v_dim=(1, 2, 8, 4), **kw):
    g = fs.Graph(name="sdpa_bad")
    q = g.tensor(name="q", dim=list(q_dim))
    k = g.tensor(name="k", dim=list(k_dim))
    v = g.tensor(name="v", dim=list(v_dim))
    mask_dim = kw.pop("mask_dim", None)
    mask_dt = kw.pop("mask_dt", None)
    if mask_dim is not None:
        kw["mask"] = g.tensor(name="m", dim=list(mask_dim), data_type=mask_dt)
    g.sdpa(q, k, v, name="attn", **kw).set_output(True)
    return g


@pytest.mark.parametrize(
    "kw, code, words",
    [
        (dict(q_dim=(2, 8, 4)), "INVALID_ATTRIBUTE", ["Q 'q'", "rank 4"]),
        (dict(k_dim=(1, 2, 8, 5)), "INVALID_ATTRIBUTE", ["head dim", "K 'k'"]),
        (dict(v_dim=(1, 2, 6, 4)), "INVALID_ATTRIBUTE", ["sequence length", "V 'v'"]),
        (dict(k_dim=(2, 2, 8, 4)), "INVALID_ATTRIBUTE", ["batch", "K 'k'"]),
        (dict(q_dim=(1, 4, 8, 4)), "INVALID_ATTRIBUTE", ["heads of K 'k'", "enable_gqa"]),
        (dict(q_dim=(1, 3, 8, 4), enable_gqa=True), "INVALID_ATTRIBUTE", ["multiple of heads of K 'k'"]),
        (dict(mask_dim=(1, 1, 8, 8), is_causal=True), "INVALID_ATTRIBUTE", ["MASK 'm'", "mutually exclusive"]),
        (dict(mask_dim=(1, 1, 8, 3)), "INVALID_ATTRIBUTE", ["MASK 'm'", "[B, Hq, Sq, Skv]"]),
        (dict(mask_dim=(1, 1, 8, 8), mask_dt=fs.DataType.INT32), "INVALID_ATTRIBUTE", ["MASK 'm'", "boolean"]),
        (dict(dropout=1.5), "INVALID_ATTRIBUTE", ["dropout", "[0, 1)"]),
        (dict(dropout=0.1), "NOT_IMPLEMENTED", ["dropout"]),
    ],
)
def test_sdpa_validation(kw, code, words):
    with pytest.raises(fs.FusilliError) as e:
        _graph(**kw).validate()
    assert e.value.code == fs.ErrorCode[code]
    msg = str(e.value)
    assert msg.startswith(code) and "sdpa 'attn'" in msg
    for w in words:
        assert w in msg, msg


def test_sdpa_missing_input():
    g = fs.Graph(name="sdpa_missing")
    q = g.tensor(name="q", dim=[1, 2, 8, 4])
    g.sdpa(q, None, q, name="attn").set_output(True)
    with pytest.raises(fs.FusilliError) as e:
        g.validate()
    assert e.value.code == fs.ErrorCode.ATTRIBUTE_NOT_SET and "K" in str(e.value)


def test_sdpa_infers_output():
    g = build("gqa_hk_ne_hv")
    o = g.output_tensors()[0]
    assert o.dim == [B, 4, S, D] and o.stride == fs.strides(o.dim)
    text = g.emit_mlir()
    # Hk != Hv: the attention op reads K and V at their own head counts (no repeat).
    assert "iree_linalg_ext.attention" in text and "torch.aten.expand" not in text


@pytest.mark.parametrize(
    "variant,dt",
    [("causal", fs.DataType.FLOAT), ("causal_cross", fs.DataType.FLOAT), ("causal", fs.DataType.HALF)],
)
def test_sdpa_causal_row_blocks(variant, dt, cpu, rng):
    """Long causal problems run as CAUSAL_ROW_BLOCKS query blocks, block i attending to its key prefix only."""
    s = rules.CPU_SDPA_CAUSAL_BLOCK_MIN_ROWS
    g = build(variant, s, 16, dt)
    assert decomposes(g.nodes[0])
    text = g.emit_mlir()
    n = sdpa_mod.CAUSAL_ROW_BLOCKS
    assert softmaxes(text) == n and "torch.aten.cat" in text
    skv = s - 2 if variant == "causal_cross" else s
    assert f"[1,2,{s // n},{min(s // n, skv)}],f32>" in text  # the first block's scores: its key prefix only
    _check(g, cpu, rng, 1e-4 if dt == fs.DataType.FLOAT else 1e-2)


def test_sdpa_causal_short_not_blocked():
    g = build("causal", BIG_S, BIG_D)
    assert BIG_S < rules.CPU_SDPA_CAUSAL_BLOCK_MIN_ROWS and softmaxes(g.emit_mlir()) == 1


MASK_DIMS = [(2, 4, 8, 6), (1, 1, 8, 6), (2, 1, 8, 6), (1, 4, 8, 6), (1, 1, 1, 6), (2, 4, 1, 6), (1, 4, 8, 1)]


@pytest.mark.parametrize("mask_dim", MASK_DIMS)
@pytest.mark.parametrize("mask_dt", [fs.DataType.FLOAT, fs.DataType.BOOLEAN])
@pytest.mark.parametrize("heads", [(4, 4, 4), (4, 2, 2), (4, 2, 1), (4, 1, 2)])
def test_sdpa_mask_broadcast_numerics(mask_dim, mask_dt, heads, cpu, rng):
    """Fused SDPA with a mask passes the mask at its own shape to iree_linalg_ext.attention (size-1
    dims dropped, broadcast by the indexing map), with and without GQA heads (Hk != Hv: K and V read
    at their own head counts)."""
    hq, hk, hv = heads
    g = fs.Graph(name="sdpa_mask_bcast")
    q = g.tensor(name="q", dim=[2, hq, 8, 4])
    k = g.tensor(name="k", dim=[2, hk, 6, 4])
    v = g.tensor(name="v", dim=[2, hv, 6, 3], stride=fs.strides([2, hv, 6, 3], "NHWC"))
    m = g.tensor(name="m", dim=list(mask_dim), data_type=mask_dt)
    g.sdpa(q, k, v, mask=m, enable_gqa=hk != hq or hv != hq, name="attn").set_output(True).set_name("o")
    g.validate()
    assert not decomposes(g.nodes[0])
    inputs = {t: random_array(t, rng, -2, 2) for t in g.input_tensors()}
    run_and_check(g, cpu, inputs, rtol=1e-4, atol=1e-4)
    # The attention, plus the mask's row reduction that zeroes fully masked rows (none when
    # the mask has one key column); IREE splits one more dispatch off for some GQA mask shapes.
    if mask_dim[3] == 1:
        assert g.compile_stats.dispatch_count == 1
    else:
        assert g.compile_stats.dispatch_count in (2, 3)


@pytest.mark.parametrize("dt", [fs.DataType.HALF, fs.DataType.BFLOAT16])
@pytest.mark.parametrize("variant", ["mask", "bool_mask"])
def test_sdpa_mask_low_precision(variant, dt, cpu, rng):
    _check(build(variant, dt=dt), cpu, rng, 3e-2)
