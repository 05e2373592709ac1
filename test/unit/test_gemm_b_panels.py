"""A conv GEMM's filter (its B operand) written in 64-column panels where Zen 1's deep conv GEMMs take
their 2x32 register tile (gemm_config.conv_b_panel, conv_layout._b_panels / _panel_gemm): the rule,
the IR and ``g.explain`` per CPU, that an epilogue still adds no dispatch, and the numerics of the
forward, 1x1 dgrad, flipped-patch dgrad and strided patch-matrix GEMMs against the reference."""

from __future__ import annotations

import pytest
from conftest import arch_running_here, channels_last_conv_graph, random_array, run_and_check

import fusilli as fs
from fusilli import pipeline
from fusilli.backend import Artifact
from fusilli.ir import fusilli_context
from fusilli.passes import gemm_config


def _dgrad_graph(name: str, n: int, k: int, hw: int, c: int, kernel: int = 1) -> fs.Graph:
    """A channels-last stride-1 dgrad (padding keeps the map): DY [n, k, hw, hw] into DX [n, c, hw, hw]."""
    g = fs.Graph(name=name)
    dy_dim, w_dim, dx_dim = [n, k, hw, hw], [k, c, kernel, kernel], [n, c, hw, hw]
    dy = g.tensor(name="dy", dim=dy_dim, stride=fs.strides(dy_dim, "NHWC"))
    w = g.tensor(name="w", dim=w_dim, stride=fs.strides(w_dim, "NHWC"))
    pad = kernel // 2
    dx = g.conv_dgrad(dy, w, padding=[pad, pad], stride=[1, 1], dilation=[1, 1], name="dgrad")
    dx.set_dim(dx_dim).set_output(True).set_name("dx")
    g.validate()
    return g


def test_conv_b_panel_rule():
    """Panels go with Zen 1's deep 2x32 tile (DEEP_VECTOR_BY_CORE): from 1024 deep, columns a multiple
    of 64; a B the graph only copies (a dgrad's) where its rows would be padded anyway."""

    def panel(columns=512, rows=392, depth=2048, core="znver1", copied=False, strided=False):
        return gemm_config.conv_b_panel("avx2", columns, rows, depth, "amd", core, strided, copied)

    assert panel() == panel(columns=256) == panel(columns=2048) == panel(strided=True) == 64
    assert panel(depth=1023) is None and panel(columns=72) is None
    for core in ("znver2", None):
        assert panel(core=core) is None
    assert panel(copied=True) == 64  # rows of 512 would be padded: the copy is made anyway
    assert panel(columns=256, copied=True) is None  # 1 KiB rows are read in place
    assert panel(rows=gemm_config.B_ROW_PAD_COPY_MIN_ROWS - 1, copied=True) is None
    assert gemm_config.conv_b_panel("avx512", 512, 392, 2048, "amd", "znver5") is None
    with fusilli_context():
        info = str(gemm_config.matmul_compilation_info("avx2", 392, 512, 2048, "amd", core="znver1", panel=64))
    # The same 48x64 workgroups and 2x32 tile, N split into one 64-column panel per workgroup.
    assert "distribution = [48, 1, 64, 0]" in info and "vector_common_parallel = [2, 1, 32, 0]" in info
    assert "cache_reduction = [0, 0, 0, 64]" in info and "vector_reduction = [0, 0, 0, 8]" in info


def test_conv_b_panel_rule_zen3():
    """Zen 3 writes a forward conv's filter in 16-column panels (its 6x16 tile's width) from rows 1 KiB
    apart, at any depth; a dgrad's B (copied) keeps its rows."""

    def panel(columns=256, rows=196, depth=1024, copied=False, strided=False):
        return gemm_config.conv_b_panel("avx2", columns, rows, depth, "amd", "znver3", strided, copied)

    assert panel() == panel(columns=512) == panel(columns=2048) == panel(depth=64) == panel(strided=True) == 16
    assert panel(columns=128) is None and panel(columns=200) is None  # 512-byte rows; no whole 16-wide panels
    assert panel(copied=True) is None and panel(columns=512, copied=True) is None
    with fusilli_context():
        info = str(gemm_config.matmul_compilation_info("avx2", 196, 256, 1024, "amd", core="znver3", panel=16))
        few = str(gemm_config.matmul_compilation_info("avx2", 49, 256, 1024, "amd", core="znver3", panel=16))
        rows = str(gemm_config.matmul_compilation_info("avx2", 196, 128, 1024, "amd", core="znver3"))
        zen1 = str(gemm_config.matmul_compilation_info("avx2", 196, 256, 1024, "amd", core="znver1", panel=16))
    # From 196 rows the panel's 4x16 tile in 28-row workgroups (PANEL_GEMM_TILE_BY_CORE), N as four
    # 16-column panels per workgroup; 49 rows (one workgroup), B in rows and other cores keep the 6x16.
    assert "distribution = [28, 4, 16, 0]" in info and "vector_common_parallel = [4, 1, 16, 0]" in info
    assert "distribution = [49, 4, 16, 0]" in few and "vector_common_parallel = [6, 1, 16, 0]" in few
    assert "distribution = [48, 64, 0]" in rows and "vector_common_parallel = [6, 16, 0]" in rows
    assert "vector_common_parallel = [4, 1, 16, 0]" not in zen1
    g = channels_last_conv_graph([1, 1024, 14, 14], 256, (1, 1), (1, 1), (0, 0), name="b_panels_zen3")
    zen3 = g.mlir("optimized", fs.Backend.CPU, "znver3")
    assert "iree_tensor_ext.compute_barrier.start %transposed : tensor<16x1024x16xf32>" in zen3
    explain = g.explain(fs.Backend.CPU, "znver3")
    assert "the filter written in 16-column panels (each panel's rows contiguous)" in explain
    assert "under a 4x16 tile in 28-row workgroups" in explain  # 196 rows
    narrow = channels_last_conv_graph([4, 256, 28, 28], 128, (1, 1), (1, 1), (0, 0), name="b_rows_zen3")
    assert "panels" not in narrow.explain(fs.Backend.CPU, "znver3")


def test_ir_and_explain_per_core():
    """A 1x1 conv 1024 deep: on znver1 its filter's transposition writes [8, 1024, 64] panels the GEMM
    (a contraction over (m, j, n, c)) reads, and explain says so; on znver2 the padded rows stay."""
    g = channels_last_conv_graph([1, 1024, 14, 14], 512, (1, 1), (1, 1), (0, 0), name="b_panels_ir")
    zen1 = g.mlir("optimized", fs.Backend.CPU, "znver1")
    assert "permutation = [0, 2, 1]" in zen1 and "tensor<8x64x1024xf32>) outs(" in zen1
    assert "iree_tensor_ext.compute_barrier.start %transposed : tensor<8x1024x64xf32>" in zen1
    assert "ins(%collapsed, %5 : tensor<196x1024xf32>, tensor<8x1024x64xf32>)" in zen1
    assert "vector_common_parallel = [2, 1, 32, 0]" in zen1 and "%padded = tensor.pad" not in zen1
    explain = g.explain(fs.Backend.CPU, "znver1")
    assert "the filter written in 64-column panels (each panel's rows contiguous)" in explain
    assert "rows of 528" not in explain
    zen2 = g.mlir("optimized", fs.Backend.CPU, "znver2")
    assert "%padded = tensor.pad" in zen2 and "x64xf32>" not in zen2.split("compute_barrier.start")[1][:60]
    assert "the filter written in rows of 528 (512 would alias in L1)" in g.explain(fs.Backend.CPU, "znver2")


@pytest.mark.parametrize("panels", [True, False])
def test_epilogue_adds_no_dispatch(monkeypatch, panels):
    """The GEMM's [rows, K / 64, 64] result is expanded to NHWC before the panel dims are collapsed, so
    bias + relu fuse into the GEMM's dispatch (collapsed first, they took a dispatch of their own):
    the filter's transposition and the GEMM, as with padded rows (compiled for znver1, not run)."""
    if not panels:
        monkeypatch.setattr(gemm_config, "conv_b_panel", lambda *args, **kwargs: None)
    tag = "panels" if panels else "rows"
    g = channels_last_conv_graph([1, 1024, 7, 7], 256, (1, 1), (1, 1), (0, 0), epilogue=True, name=f"b_{tag}_epi")
    text = g.mlir("optimized", fs.Backend.CPU, "znver1")
    assert ("tensor<4x1024x64xf32>" in text) is panels
    stats = Artifact.from_bytes(g.compile_to_artifact(fs.Backend.CPU, "znver1")).stats
    assert stats.dispatch_count == 2


CASES = {
    # name: graph builder, conv lowering forced (None: auto), the panels' [blocks, depth, 64]
    "fprop_1x1": (
        lambda: channels_last_conv_graph(
            [1, 128, 7, 9], 128, (1, 1), (1, 1), (0, 0), epilogue=True, name="b_panels_1x1"
        ),
        None,
        "2x128x64",
    ),
    "fprop_3x3_s2": (
        lambda: channels_last_conv_graph(
            [1, 16, 11, 10], 64, (3, 3), (2, 2), (1, 1), epilogue=True, name="b_panels_s2"
        ),
        "gemm",
        "1x144x64",
    ),
    "dgrad_1x1": (lambda: _dgrad_graph("b_panels_dgrad_1x1", 2, 128, 8, 512), None, "8x128x64"),
    "dgrad_3x3_flipped": (lambda: _dgrad_graph("b_panels_dgrad_3x3", 1, 16, 12, 512, kernel=3), "gemm", "8x144x64"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_numerics_with_b_panels(rng, monkeypatch, case):
    """Each GEMM form with its filter in panels, run against the reference as x86-64-v3 code on any AVX2
    host (AVX2 code for no named CPU given Zen 1's deep tile from 128 deep, so that small graphs take
    it): 63 rows leave a last workgroup of 15 and an odd remainder of the 2-row tile."""
    arch = arch_running_here("x86-64-v3")
    monkeypatch.setattr(gemm_config, "DEEP_VECTOR_BY_CORE", {("avx2", ""): (128, (2, 32))})
    monkeypatch.setenv("FUSILLI_DISABLE_CACHE", "1")  # the tile tables are not in the cache key
    build, lowering, panels = CASES[case]
    if lowering is not None:
        monkeypatch.setattr(pipeline, "CONV_LOWERING", lowering)
    g = build()
    if lowering is None:  # the rules' own choice: explain names the panels where the IR has them
        assert "the filter written in 64-column panels" in g.explain(fs.Backend.CPU, arch)
    _check_panels_and_numerics(g, arch, panels, "[2, 1, 32, 0]", rng)


def _check_panels_and_numerics(g, arch, panels, vector, rng):
    """``g``'s optimized IR for ``arch`` transposes the filter into ``panels`` under the register tile
    ``vector``, and its compiled result matches the reference."""
    text = g.mlir("optimized", fs.Backend.CPU, arch)
    assert f"compute_barrier.start %transposed : tensor<{panels}xf32>" in text
    assert f"vector_common_parallel = {vector}" in text
    handle = fs.Handle(fs.Backend.CPU, arch=arch)
    run_and_check(g, handle, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)


ZEN3_CASES = {
    # name: graph builder, conv lowering forced (None: auto), the panels' [blocks, depth, 16], the
    # register tile
    "fprop_1x1": (
        lambda: channels_last_conv_graph(
            [1, 64, 7, 9], 256, (1, 1), (1, 1), (0, 0), epilogue=True, name="z3_panels_1x1"
        ),
        None,
        "16x64x16",
        "[6, 1, 16, 0]",
    ),
    "fprop_3x3_s2": (
        lambda: channels_last_conv_graph(
            [1, 16, 11, 10], 256, (3, 3), (2, 2), (1, 1), epilogue=True, name="z3_panels_s2"
        ),
        "gemm",
        "16x144x16",
        "[6, 1, 16, 0]",
    ),
    # 225 rows: the 4x16 tile in 28-row workgroups, a last workgroup of one row (a masked tile).
    "fprop_1x1_225_rows": (
        lambda: channels_last_conv_graph(
            [1, 64, 15, 15], 256, (1, 1), (1, 1), (0, 0), epilogue=True, name="z3_panels_1x1_225"
        ),
        None,
        "16x64x16",
        "[4, 1, 16, 0]",
    ),
    # 98 rows (the row split's half of a 14x14 image), 1024 deep: the 4x16 in 28-row workgroups
    # (PANEL_GEMM_DEEP_ROWS_BY_CORE), a last workgroup of 14 rows (a 2-row remainder of the tile) and
    # K in blocks; 512 deep it keeps the 6x16.
    "fprop_1x1_98_rows_deep": (
        lambda: channels_last_conv_graph(
            [1, 1024, 7, 14], 256, (1, 1), (1, 1), (0, 0), epilogue=True, name="z3_panels_1x1_98_deep"
        ),
        None,
        "16x1024x16",
        "[4, 1, 16, 0]",
    ),
    "fprop_1x1_98_rows_shallow": (
        lambda: channels_last_conv_graph(
            [1, 512, 7, 14], 256, (1, 1), (1, 1), (0, 0), epilogue=True, name="z3_panels_1x1_98_shallow"
        ),
        None,
        "16x512x16",
        "[6, 1, 16, 0]",
    ),
    "fprop_3x3_s2_196_rows": (
        lambda: channels_last_conv_graph(
            [1, 16, 28, 28], 256, (3, 3), (2, 2), (1, 1), epilogue=True, name="z3_panels_s2_196"
        ),
        "gemm",
        "16x144x16",
        "[4, 1, 16, 0]",
    ),
}


@pytest.mark.parametrize("case", sorted(ZEN3_CASES))
def test_numerics_with_zen3_b_panels(rng, monkeypatch, case):
    """Zen 3 code: the forward conv's filter of 256 columns in 16-column panels, under the 6x16 tile
    (63 rows: a last workgroup of 15 and a 3-row remainder of the tile) or from 196 rows (98 where
    1024 deep) the 4x16 (PANEL_GEMM_TILE_BY_CORE, PANEL_GEMM_DEEP_ROWS_BY_CORE), against the reference."""
    arch = arch_running_here("znver3")
    build, lowering, panels, vector = ZEN3_CASES[case]
    if lowering is not None:
        monkeypatch.setattr(pipeline, "CONV_LOWERING", lowering)
    _check_panels_and_numerics(build(), arch, panels, vector, rng)
