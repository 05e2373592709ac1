"""Convs as an im2col GEMM with an explicit lowering config (cpu-conv-im2col-gemm,
fusilli/passes/conv_layout.py): numerics against the NumPy reference for 1x1,
strided, 7x7, padded and dilated convs, f16/bf16 through f32; the GEMM's config
per ISA; the lowering choice; and that bias + relu add no dispatch."""

from __future__ import annotations

import functools

import pytest
from conftest import arch_running_here, channels_last_conv_graph, random_array, run_and_check

import fusilli as fs
from fusilli import pipeline
from fusilli.backend import Artifact, rules, targets
from fusilli.backend.targets import Target
from fusilli.ir import fusilli_context
from fusilli.passes import conv_layout, gemm_config

F32, F16, BF16 = fs.DataType.FLOAT, fs.DataType.HALF, fs.DataType.BFLOAT16


build = functools.partial(channels_last_conv_graph, name="gemm")


@pytest.fixture
def gemm_lowering(monkeypatch):
    monkeypatch.setattr(pipeline, "CONV_LOWERING", "gemm")


# name: x dims (NCHW), K, kernel, stride, padding, dilation.
CASES = {
    "1x1": ([2, 32, 7, 9], 24, (1, 1), (1, 1), (0, 0), (1, 1)),
    "1x1_s2": ([1, 64, 9, 9], 40, (1, 1), (2, 2), (0, 0), (1, 1)),
    "1x1_s2_even": ([2, 32, 10, 12], 24, (1, 1), (2, 2), (0, 0), (1, 1)),
    "1x1_s3x2": ([1, 16, 9, 8], 16, (1, 1), (3, 2), (0, 0), (1, 1)),
    "3x3_s2_pad1": ([2, 16, 11, 10], 32, (3, 3), (2, 2), (1, 1), (1, 1)),
    "7x7_s2_pad3": ([1, 3, 23, 19], 16, (7, 7), (2, 2), (3, 3), (1, 1)),
    "3x3_dil2_pad2": ([1, 8, 12, 12], 8, (3, 3), (1, 1), (2, 2), (2, 2)),
    "3x3_pad_rect": ([1, 5, 8, 13], 6, (3, 3), (1, 2), (2, 0), (1, 1)),
    "3x3_c256": ([1, 256, 10, 10], 32, (3, 3), (2, 2), (1, 1), (1, 1)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_numerics_f32(cpu, rng, gemm_lowering, case):
    x_dim, k, kernel, stride, padding, dilation = CASES[case]
    epilogue = case in ("3x3_s2_pad1", "1x1_s2_even")
    g = build(x_dim, k, kernel, stride, padding, dilation, epilogue=epilogue, name=f"gemm_{case}")
    assert "compilation_info" in g.mlir("optimized")
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [F16, BF16])
def test_numerics_low_precision_through_f32(cpu, rng, gemm_lowering, dtype):
    g = build([1, 16, 9, 9], 8, (3, 3), (2, 2), (1, 1), dtype=dtype, epilogue=True, name="gemm_lp")
    assert "compilation_info" in g.mlir("optimized")
    tol = dict(rtol=2e-2, atol=2e-2) if dtype == F16 else dict(rtol=5e-2, atol=5e-2)
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, **tol)


@pytest.mark.parametrize(
    "kernel, stride, padding", [((1, 1), (1, 1), (0, 0)), ((3, 3), (2, 2), (1, 1)), ((7, 7), (2, 2), (3, 3))]
)
def test_epilogue_adds_no_dispatch(cpu, gemm_lowering, kernel, stride, padding):
    args = ([1, 16, 16, 16], 16, kernel, stride, padding)
    plain = build(*args, name=f"gemm_plain{kernel[0]}").compile(cpu)
    fused = build(*args, epilogue=True, name=f"gemm_epi{kernel[0]}").compile(cpu)
    assert fused.compile_stats.dispatch_count == plain.compile_stats.dispatch_count


@pytest.mark.parametrize(
    "x_dim, stride, view",
    [([2, 16, 12, 10], (2, 2), True), ([1, 16, 9, 8], (3, 2), True), ([1, 16, 9, 9], (2, 2), False)],
)
def test_strided_1x1_reads_a_view_of_the_input(gemm_lowering, x_dim, stride, view):
    """On AMD's AVX-512 cores a strided 1x1 conv whose extents the stride divides reads its rows as
    a slice of the input split by the stride (no gather dispatch: as many dispatches as the
    stride-1 conv's GEMM); other extents, AVX2 and Intel (gemm_config.STRIDED_ROWS_VIEW_TARGETS)
    keep the gather."""
    g = build(x_dim, 16, (1, 1), stride, (0, 0), name=f"gemm_view{stride[0]}{x_dim[2]}")
    for gathered in ("x86-64-v3", "znver1", "sapphirerapids"):
        assert "linalg.matmul" in g.mlir("optimized", backend=fs.Backend.CPU, arch=gathered)
    text = g.mlir("optimized", backend=fs.Backend.CPU, arch="znver4")
    assert ("tensor.extract_slice" in text and "linalg.matmul" not in text) == view
    unit = build(x_dim, 16, (1, 1), (1, 1), (0, 0), name=f"gemm_unit{x_dim[2]}")

    def dispatches(graph: fs.Graph) -> int:  # compiled for AVX-512, not run (CI's CPU may lack it)
        return Artifact.from_bytes(graph.compile_to_artifact(fs.Backend.CPU, "znver4")).stats.dispatch_count

    assert dispatches(g) == dispatches(unit) + (0 if view else 1)


def test_explain_names_the_strided_1x1_view():
    g = build([1, 256, 56, 56], 512, (1, 1), (2, 2), (0, 0), name="gemm_view_explain")
    note = "its rows a view of the input where the stride divides H and W"
    assert note in g.explain(fs.Backend.CPU, "znver4") and note not in g.explain(fs.Backend.CPU, "x86-64-v3")


@pytest.mark.parametrize(
    "x_dim, stride",
    [([2, 32, 10, 12], (2, 2)), ([1, 16, 9, 8], (3, 2)), ([3, 8, 4, 4], (2, 2)), ([1, 16, 18, 18], (2, 2))],
)
def test_numerics_strided_1x1_view_on_any_isa(cpu, rng, gemm_lowering, monkeypatch, x_dim, stride):
    """The view path's numerics wherever the tests run (an AVX2 host takes it here too)."""
    here = (rules.vector_isa(Target.resolve("cpu")), targets.cpu_vendor(targets.host_cpu()) or "")
    monkeypatch.setattr(gemm_config, "STRIDED_ROWS_VIEW_TARGETS", {here})
    g = build(x_dim, 24, (1, 1), stride, (0, 0), epilogue=True, name=f"gemm_anyview{stride[0]}{x_dim[0]}")
    assert "linalg.matmul" not in g.mlir("optimized")
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)


def test_zen5_conv_gemm_tile_from_512_rows_128_deep():
    """Zen 5's conv GEMMs of >= 512 rows >= 128 deep take 6x64 in 60x64 (CONV_GEMM_TILES_BY_CORE);
    fewer rows, shallower ones, strided patch matrices and Zen 4 keep AMD's 8x32."""
    amd = gemm_config.conv_gemm_tile("avx512", 256, "amd", False, 1568, 128)
    zen5 = gemm_config.conv_gemm_tile("avx512", 256, "amd", False, 1568, 128, "znver5")
    assert (zen5.distribution, zen5.vector) == ((60, 64), (6, 64)) and zen5.k_blocks_divide
    assert (amd.distribution, amd.vector) == ((64, 64), (8, 32))
    for rows, depth, strided, core in (
        (511, 128, False, "znver5"),
        (1568, 64, False, "znver5"),
        (1568, 128, True, "znver5"),
        (1568, 128, False, "znver4"),
    ):
        assert gemm_config.conv_gemm_tile("avx512", 256, "amd", strided, rows, depth, core).vector == (8, 32)
    with fusilli_context():
        info = str(gemm_config.matmul_compilation_info("avx512", 1568, 1024, 512, "amd", False, "znver5"))
        assert "vector_common_parallel = [6, 64, 0]" in info and "cache_reduction = [0, 0, 256]" in info
        # Wo = 14 has no divisor in 3..6: 7x64 (28 accumulators) takes it in two, no peeled remainder.
        rows = str(gemm_config.strided_rows_compilation_info("avx512", 112, 14, 1024, 512, "amd", "znver5"))
        assert "distribution = [4, 14, 64, 0]" in rows and "vector_common_parallel = [1, 7, 64, 0]" in rows
        # Wo = 28 keeps its divisor (4); Wo = 13 has neither a divisor nor a taller tile: 6 + a remainder.
        rows28 = str(gemm_config.strided_rows_compilation_info("avx512", 224, 28, 512, 256, "amd", "znver5"))
        assert "vector_common_parallel = [1, 4, 64, 0]" in rows28
        rows13 = str(gemm_config.strided_rows_compilation_info("avx512", 104, 13, 1024, 512, "amd", "znver5"))
        assert "vector_common_parallel = [1, 6, 64, 0]" in rows13


@pytest.mark.parametrize(
    "isa, rows, columns, inner, taller",
    [
        ("avx512", 6, 64, 14, 7),  # 7 x 4 = 28 accumulators
        ("avx512", 6, 64, 13, None),  # 7 does not divide 13
        ("avx512", 7, 64, 16, None),  # 8 x 4 = 32: no register left for B
        ("avx512", 8, 32, 9, 9),  # 9 x 2 = 18
        ("avx2", 6, 16, 14, None),  # no accumulator budget named for AVX2
    ],
)
def test_taller_register_rows(isa, rows, columns, inner, taller):
    assert gemm_config._taller_register_rows(isa, rows, columns, inner) == taller


@pytest.mark.parametrize(
    "x_dim, k, kernel, stride, padding",
    [([8, 256, 14, 14], 1024, (1, 1), (1, 1), (0, 0)), ([8, 128, 56, 56], 128, (3, 3), (2, 2), (1, 1))],
)
def test_explain_names_zen5_tile(x_dim, k, kernel, stride, padding):
    """explain names the tile a CPU core's own table gives (the 1x1 GEMM, the polyphase GEMM)."""
    g = build(x_dim, k, kernel, stride, padding, name=f"gemm_explain{kernel[0]}")
    note = "(znver5: 6x64 register tile in 60x64 workgroups)"
    assert note in g.explain(fs.Backend.CPU, arch="znver5")
    assert note not in g.explain(fs.Backend.CPU, arch="znver4")


@pytest.mark.parametrize(
    "outer, inner, dist, vector", [(28, 28, (2, 28), 7), (8, 56, (1, 56), 8), (14, 14, (4, 14), 7), (7, 7, (7, 7), 7)]
)
def test_strided_rows_compilation_info(outer, inner, dist, vector):
    """A workgroup takes whole rows of the inner loop, its register tile a divisor of them."""
    with fusilli_context():
        text = str(gemm_config.strided_rows_compilation_info("avx512", outer, inner, 512, 256, "amd"))
        assert f"distribution = [{dist[0]}, {dist[1]}, 64, 0]" in text
        assert f"vector_common_parallel = [1, {vector}, 32, 0]" in text
        deep = str(gemm_config.strided_rows_compilation_info("avx512", outer, inner, 512, 1024, "amd"))
        assert "cache_reduction = [0, 0, 0, 256]" in deep
        assert gemm_config.strided_rows_compilation_info("generic", outer, inner, 512, 256) is None


def test_gemm_config_per_isa():
    with fusilli_context():
        avx2 = str(gemm_config.matmul_compilation_info("avx2", 3136, 128, 256))
        avx512 = str(gemm_config.matmul_compilation_info("avx512", 3136, 128, 256))
        small = str(gemm_config.matmul_compilation_info("avx512", 6, 5, 3))
        assert "vector_common_parallel = [6, 16, 0]" in avx2 and "distribution = [48, 64, 0]" in avx2
        # AVX2 for no named CPU: K whole below CONV_WHOLE_K_BELOW (1x1 convs of 1024 channels), in
        # blocks of 256 from it (3x3 convs of 256 channels); the weight gradients' GEMMs from 512.
        middle_avx2 = str(gemm_config.matmul_compilation_info("avx2", 3136, 128, 1024))
        deep_avx2 = str(gemm_config.matmul_compilation_info("avx2", 3136, 128, 2304))
        assert "cache_reduction = [0, 0, 256]" in deep_avx2
        assert "cache_reduction" not in avx2 and "cache_reduction" not in middle_avx2
        wgrad_avx2 = str(gemm_config.wgrad_matmul_compilation_info("avx2", 128, 128, 1024))
        assert "cache_reduction = [0, 0, 256]" in wgrad_avx2
        # AMD's AVX2 cores keep their own blocks (narrow_k_block, PADDED_B_WHOLE_K_BELOW).
        amd_avx2 = str(gemm_config.matmul_compilation_info("avx2", 3136, 128, 1024, "amd"))
        assert "cache_reduction = [0, 0, 64]" in amd_avx2
        assert "vector_common_parallel = [8, 32, 0]" in avx512
        # 2-D GEMMs name their L2 tile; batched (Winograd) GEMMs only where their last row of
        # workgroups is short by at most a register tile's rows (gemm_config._cache_parallel).
        assert "cache_parallel = [64, 64, 0]" in avx512
        short_by_34 = str(gemm_config.batch_matmul_compilation_info("avx512", 25, 98, 256, 128))
        assert "cache_parallel" not in short_by_34 and "distribution = [1, 64, 64, 0]" in short_by_34
        short_by_4 = str(gemm_config.batch_matmul_compilation_info("avx512", 25, 196, 256, 128))
        assert "cache_parallel = [1, 64, 64, 0]" in short_by_4
        assert "distribution = [6, 5, 0]" in small and "vector_reduction = [0, 0, 3]" in small
        assert gemm_config.matmul_compilation_info("generic", 3136, 128, 256) is None


@pytest.mark.parametrize(
    "m, k, block",
    [
        (196, 256, None),  # shallower than the table's depth (512): the whole K
        (196, 512, 256),  # K a multiple of the table's block
        (98, 4608, 256),
        (784, 576, 256),  # 784 = 12 x 64 + 16: a last row of workgroups short by 2 register tiles
        (49, 1152, 256),  # one row of workgroups
        (196, 576, 288),  # 196 = 3 x 64 + 4: K blocks that divide K (2 x 288; 192 is further off)
        (98, 1152, 288),  # 98 = 64 + 34: 4 x 288, not 4.5 x 256
        (130, 1728, 288),  # 6 x 288 (216 is 40 from 256, 288 32)
        (98, 536, None),  # 8 x 67: no multiple of 8 in [128, 512] divides it
        (98, 900, None),  # not a multiple of 8
    ],
)
def test_k_block(m, k, block):
    """K cache blocks divide K where the GEMM's last row of workgroups is short by a count no
    multiple of the register tile's rows (gemm_config.k_block): such a remainder with a K
    remainder ran at a tenth of the speed on the AMD AVX-512 tile. The AVX2 tile keeps 256."""
    tile = gemm_config.CONV_GEMM_TILES_BY_VENDOR[("avx512", "amd")]
    assert gemm_config.k_block(tile, m, k) == block
    avx2 = gemm_config.CONV_GEMM_TILES["avx2"]
    assert gemm_config.k_block(avx2, m, k) == (None if k < 512 else 256)
    if block not in (None, 256):
        assert k % block == 0 and block % tile.reduction == 0


@pytest.mark.parametrize(
    "m, n, k, block",
    [
        (784, 512, 256, 64),  # ResNet-50's 1x1 s2 1x256x56x56->512: a B of 512 KB
        (196, 1024, 256, 64),  # dgrad 1x1 1x1024x14x14->256
        (512, 128, 784, 64),  # wgrad 1x1 1x128x28x28->512, 784 positions deep
        (512, 4608, 392, 64),  # wgrad 3x3 8x512x7x7
        (1568, 128, 256, None),  # the suite's 1x1 in halves: a B of 128 KB
        (3136, 64, 256, None),  # 64 columns
        (256, 2304, 196, None),  # K no multiple of the register tile's K step
        (49, 2048, 512, 64),  # one row block (batch-1 7x7 dgrads)
        (60, 2048, 512, 256),  # one row block and a remainder: the table's block
        (784, 512, 64, None),  # K shallower than two blocks
    ],
)
def test_narrow_k_blocks_on_amd_avx2(m, n, k, block):
    """AMD AVX2 cores take K in blocks of 64 in 2-D conv GEMMs with two row blocks or one, 128 columns
    and a B over 128 KB (gemm_config.NARROW_K_BLOCK_MIN_COLUMNS); batched GEMMs (the chunked weight
    gradients) and AVX2 code for no named CPU keep the table's blocks (256 from 512 deep)."""
    tile = gemm_config.CONV_GEMM_TILES_BY_VENDOR[("avx2", "amd")]
    table = None if k < 512 else 256
    assert gemm_config.k_block(tile, m, k, n) == block
    assert gemm_config.k_block(tile, m, k, n, batched=True) == table
    assert gemm_config.k_block(gemm_config.CONV_GEMM_TILES["avx2"], m, k, n) == table
    with fusilli_context():
        amd = str(gemm_config.matmul_compilation_info("avx2", m, n, k, "amd"))
        vendorless = str(gemm_config.matmul_compilation_info("avx2", m, n, k))
    assert ("cache_reduction = [0, 0, 64]" in amd) is (block == 64)
    assert "cache_reduction = [0, 0, 64]" not in vendorless


def test_zen1_deep_conv_gemms_take_2x32():
    """Zen 1's conv GEMMs from 1024 deep take 2 rows x four 8-wide vectors (gemm_config.DEEP_VECTOR_BY_CORE),
    the vendor's workgroups and K blocks kept; shallower ones, Zen 2 and code for no named CPU keep 6x16."""

    def tile(depth, core, rows=392, strided=False):
        return gemm_config.conv_gemm_tile("avx2", 512, "amd", strided, rows, depth, core)

    assert (tile(1024, "znver1").distribution, tile(1024, "znver1").vector) == ((48, 64), (2, 32))
    assert tile(2304, "znver1", strided=True).vector == (2, 32)  # a 3x3 stride-2 patch matrix
    for depth, core in ((1023, "znver1"), (1024, "znver2"), (1024, "znver3"), (1024, None)):
        assert tile(depth, core).vector == (6, 16)
    one_block = tile(4608, "znver1", rows=49)  # dgrad 3x3 1x512x7x7: one 49-row block (deep_gemm_rows)
    assert (one_block.distribution, one_block.vector) == ((49, 64), (2, 32))
    with fusilli_context():
        info = str(gemm_config.matmul_compilation_info("avx2", 392, 512, 2048, "amd", core="znver1", padded_b=True))
    assert "vector_common_parallel = [2, 32, 0]" in info and "cache_reduction = [0, 0, 64]" in info


def test_explain_and_ir_name_the_zen1_deep_tile():
    """A 1x1 conv 1024 deep compiled for znver1 carries the 2x32 tile, and g.explain names it; for
    znver2 neither."""
    g = build([1, 1024, 14, 14], 512, (1, 1), (1, 1), (0, 0), name="gemm_zen1_deep")
    assert "(znver1: 2x32 register tile in 48x64 workgroups)" in g.explain(fs.Backend.CPU, "znver1")
    # Its filter in 64-column panels there (test_gemm_b_panels): N is two loops, a panel and its columns.
    assert "vector_common_parallel = [2, 1, 32, 0]" in g.mlir("optimized", fs.Backend.CPU, "znver1")
    assert "2x32" not in g.explain(fs.Backend.CPU, "znver2")
    assert "vector_common_parallel = [6, 16, 0]" in g.mlir("optimized", fs.Backend.CPU, "znver2")


@pytest.mark.parametrize(
    "m, n, k, zen3_block",
    [
        (784, 128, 512, None),  # 1x1 1x512x28x28->128: Zen 1's blocks of 64, whole on Zen 3
        (49, 2048, 512, 64),  # dgrad 1x1 1x2048x7x7->512: one row block keeps the blocks
        (196, 512, 1024, 64),  # 1x1 1x1024x14x14->512: from 1024 deep the blocks stay
        (196, 256, 2304, 64),  # 3x3 s2 1x256x28x28->256's patch matrix
    ],
)
def test_zen3_conv_gemms_take_whole_k_below_1024(m, n, k, zen3_block):
    """Zen 3's forward and data-gradient conv GEMMs of more than one row block take K whole below 1024
    deep whatever B's rows (gemm_config.CONV_WHOLE_K_BELOW_BY_CORE), the rest of the config the vendor's;
    Zen 2 (and a vendor-only call) keeps the blocks of 64."""
    with fusilli_context():
        zen3 = str(gemm_config.matmul_compilation_info("avx2", m, n, k, "amd", core="znver3"))
        zen2 = str(gemm_config.matmul_compilation_info("avx2", m, n, k, "amd", core="znver2"))
        amd = str(gemm_config.matmul_compilation_info("avx2", m, n, k, "amd"))
    assert ("cache_reduction" in zen3) is (zen3_block is not None)
    assert zen3_block is None or f"cache_reduction = [0, 0, {zen3_block}]" in zen3
    assert "cache_reduction = [0, 0, 64]" in zen2 and zen2 == amd
    assert zen3.replace(f"cache_reduction = [0, 0, {zen3_block}], ", "") == amd.replace(
        "cache_reduction = [0, 0, 64], ", ""
    )


def test_zen3_strided_patch_gemms_take_the_table_k_blocks():
    """Zen 3's GEMMs over a strided conv's patch matrix take the tile's K blocks of 256, not Zen 1's 64
    (gemm_config.STRIDED_PATCH_TABLE_K_BLOCK_CORES); stride-1 GEMMs that deep keep the 64."""
    with fusilli_context():
        strided = {
            core: str(gemm_config.matmul_compilation_info("avx2", 196, 256, 2304, "amd", True, core, True))
            for core in ("znver3", "znver2")
        }
        deep = str(gemm_config.matmul_compilation_info("avx2", 196, 256, 2304, "amd", False, "znver3", True))
    assert "cache_reduction = [0, 0, 256]" in strided["znver3"]
    assert "cache_reduction = [0, 0, 64]" in strided["znver2"] and "cache_reduction = [0, 0, 64]" in deep
    g = channels_last_conv_graph([1, 256, 28, 28], 256, (3, 3), (2, 2), (1, 1), name="gemm_zen3_s2")
    assert "AMD (znver3: K in blocks of 256)" in g.explain(fs.Backend.CPU, "znver3")
    # (its 256-column filter in 16-column panels there, gemm_config.CONV_B_PANEL_BY_CORE: N is two loops)
    assert "cache_reduction = [0, 0, 0, 256]" in g.mlir("optimized", fs.Backend.CPU, "znver3")
    assert "znver2: K" not in g.explain(fs.Backend.CPU, "znver2")


def test_numerics_zen3_conv_gemms(rng):
    """Zen 3's own choices run as znver3 code against the reference: a stride-1 1x1 conv of 196 rows
    as the GEMM (rules.CPU_CONV_GEMM_1X1_FEW_ROWS_CORES) 512 deep with K whole, with bias + relu, and
    a 3x3 stride-2 conv's patch-matrix GEMM in K blocks of 256 (1152 deep, 4.5 blocks)."""
    arch = arch_running_here("znver3")
    handle = fs.Handle(fs.Backend.CPU, arch=arch)
    few_rows = build([1, 512, 14, 14], 136, (1, 1), (1, 1), (0, 0), (1, 1), epilogue=True, name="gemm_zen3_few")
    strided = build([1, 128, 28, 28], 72, (3, 3), (2, 2), (1, 1), (1, 1), epilogue=True, name="gemm_zen3_s2_blocks")
    assert "cpu-conv-im2col-gemm (1x1, 196 GEMM rows >= 49" in few_rows.explain(fs.Backend.CPU, arch)
    assert "cache_reduction" not in few_rows.mlir("optimized", fs.Backend.CPU, arch)
    assert "cache_reduction = [0, 0, 256]" in strided.mlir("optimized", fs.Backend.CPU, arch)
    for g in (few_rows, strided):
        run_and_check(g, handle, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)


def test_explain_and_ir_name_zen3_whole_k():
    """A 1x1 conv 512 deep with an unpadded B compiled for znver3 takes K whole and g.explain says so;
    for znver2 it keeps the blocks of 64 and explain says nothing of K; 1024 deep Zen 3 keeps the blocks."""
    g = build([1, 512, 28, 28], 128, (1, 1), (1, 1), (0, 0), name="gemm_zen3_whole_k")
    assert "AMD (znver3: K whole below 1024 deep)" in g.explain(fs.Backend.CPU, "znver3")
    assert "cache_reduction" not in g.mlir("optimized", fs.Backend.CPU, "znver3")
    assert "K whole" not in g.explain(fs.Backend.CPU, "znver2")
    assert "cache_reduction = [0, 0, 64]" in g.mlir("optimized", fs.Backend.CPU, "znver2")
    deep = build([1, 1024, 14, 14], 512, (1, 1), (1, 1), (0, 0), name="gemm_zen3_deep")
    assert "K whole" not in deep.explain(fs.Backend.CPU, "znver3")
    # (its 512-column filter in 16-column panels, gemm_config.CONV_B_PANEL_BY_CORE: N is two loops)
    assert "cache_reduction = [0, 0, 0, 64]" in deep.mlir("optimized", fs.Backend.CPU, "znver3")


def test_numerics_deep_vector_tile(rng, gemm_lowering, monkeypatch):
    """The deep GEMMs' 2x32 register tile (Zen 1's, DEEP_VECTOR_BY_CORE) given to AVX2 code for no named
    CPU and run as x86-64-v3 code on any AVX2 host, with bias + relu: a 1x1 conv 1024 deep over 63 rows
    and 72 output channels (a last workgroup of 15 rows, an odd remainder of the 2-row tile, and 8
    columns past 64), and a 3x3 stride-2 conv 1152 deep (its patch matrix)."""
    arch = arch_running_here("x86-64-v3")
    monkeypatch.setattr(gemm_config, "DEEP_VECTOR_BY_CORE", {("avx2", ""): (1024, (2, 32))})
    monkeypatch.setenv("FUSILLI_DISABLE_CACHE", "1")  # the tile tables are not in the cache key
    handle = fs.Handle(fs.Backend.CPU, arch=arch)
    flat = build([1, 1024, 7, 9], 72, (1, 1), (1, 1), (0, 0), (1, 1), epilogue=True, name="gemm_deep_vector_1x1")
    strided = build([1, 128, 9, 9], 40, (3, 3), (2, 2), (1, 1), (1, 1), epilogue=True, name="gemm_deep_vector_s2")
    for g in (flat, strided):
        assert "vector_common_parallel = [2, 32, 0]" in g.mlir("optimized", fs.Backend.CPU, arch)
        run_and_check(g, handle, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "m, n, k, block",
    [
        (784, 512, 256, None),  # 1x1 s2 1x256x56x56->512, its filter in rows of 528: whole K
        (392, 2048, 512, None),  # 1x1 8x512x7x7->2048
        (1568, 1024, 256, None),  # dgrad 1x1 8x1024x14x14->256 (a padded copy of the filter)
        (196, 512, 1024, 64),  # 1x1 1x1024x14x14->512: from 1024 deep the narrow blocks stay
        (392, 512, 2048, 64),  # 1x1 8x2048x7x7->512
    ],
)
def test_padded_b_takes_whole_k_on_amd_avx2(m, n, k, block):
    """Where a conv GEMM's B is written with padded rows, AMD AVX2 cores take K whole below 1024 deep
    (gemm_config.PADDED_B_WHOLE_K_BELOW); unpadded, the narrow blocks; AVX2 code for no named CPU
    takes K whole below 2048 deep either way (gemm_config.CONV_WHOLE_K_BELOW)."""
    with fusilli_context():
        padded = str(gemm_config.matmul_compilation_info("avx2", m, n, k, "amd", padded_b=True))
        plain = str(gemm_config.matmul_compilation_info("avx2", m, n, k, "amd"))
        vendorless = str(gemm_config.matmul_compilation_info("avx2", m, n, k, padded_b=True))
    assert ("cache_reduction" in padded) is (block is not None)
    assert block is None or f"cache_reduction = [0, 0, {block}]" in padded
    assert "cache_reduction = [0, 0, 64]" in plain
    assert ("cache_reduction = [0, 0, 256]" in vendorless) is (k >= gemm_config.CONV_WHOLE_K_BELOW)


def test_numerics_narrow_k_blocks(cpu, rng, gemm_lowering, monkeypatch):
    """A 1x1 conv's GEMM in K blocks of 64 (``narrow_k_block``, AMD AVX2's), with bias + relu, on
    this host's ISA whatever its vendor: 169 rows and 136 output channels leave partial
    workgroups and register tiles in both dims, 512 deep (8 blocks)."""
    target = Target.resolve("cpu", None)
    isa, vendor = rules.vector_isa(target), targets.cpu_vendor(target.cpu)
    if isa == "generic":
        pytest.skip("no tuned GEMM for a CPU without AVX2")
    base = gemm_config.conv_gemm_tile(isa, 136, vendor)
    narrow = gemm_config.GemmTile(base.distribution, base.vector, base.reduction, narrow_k_block=64)
    monkeypatch.setitem(gemm_config.CONV_GEMM_TILES_BY_VENDOR, (isa, vendor or ""), narrow)
    monkeypatch.setattr(gemm_config, "CONV_WHOLE_K_BELOW_BY_CORE", {})  # Zen 3 takes 512 deep whole
    monkeypatch.setenv("FUSILLI_DISABLE_CACHE", "1")  # the tile tables are not in the cache key
    g = build([1, 512, 13, 13], 136, (1, 1), (1, 1), (0, 0), (1, 1), epilogue=True, name="gemm_narrow_k")
    assert "cache_reduction = [0, 0, 64]" in g.mlir("optimized")
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)


def _problem(shape, kernel, stride, padding, channels_last=True, element=F32):
    n, c, h, w, k = shape
    out = [(d + 2 * p - r) // s + 1 for d, p, r, s in zip((h, w), padding, kernel, stride)]
    facts = rules.conv_facts(kernel, stride, (1, 1), 1, channels_last, n, out, c)
    return rules.Problem("conv_fprop", element, 2 * n * out[0] * out[1] * k * c * kernel[0] * kernel[1], facts)


@pytest.mark.parametrize(
    "shape, kernel, stride, padding, expected",
    [
        ((4, 256, 28, 28, 128), (1, 1), (1, 1), (0, 0), True),  # cpu.txt's 1x1 row
        ((8, 64, 56, 56, 64), (1, 1), (1, 1), (0, 0), True),
        # 1024 channels and 1x1 stride 2 from 512 rows: the K-blocked GEMMs (AVX2, AMD AVX-512) win
        ((8, 1024, 14, 14, 256), (1, 1), (1, 1), (0, 0), True),
        ((1, 256, 56, 56, 512), (1, 1), (2, 2), (0, 0), True),
        ((1, 512, 28, 28, 256), (1, 1), (2, 2), (0, 0), False),  # 196 rows
        # stride-1 1x1 convs below 512 rows: AMD AVX-512 and Zen 3 from 49 (rules.CPU_CONV_GEMM_1X1_FEW_ROWS_TARGETS,
        # CPU_CONV_GEMM_1X1_FEW_ROWS_CORES)
        ((1, 1024, 14, 14, 256), (1, 1), (1, 1), (0, 0), {"znver4": True, "znver3": True}),
        ((1, 1024, 7, 7, 256), (1, 1), (1, 1), (0, 0), {"znver4": True, "znver3": True}),  # 49 rows
        ((1, 512, 14, 14, 256), (1, 1), (1, 1), (0, 0), {"znver4": True, "znver3": True}),  # 196 rows 512 deep
        ((1, 1024, 6, 6, 256), (1, 1), (1, 1), (0, 0), False),  # 36 rows
        ((8, 2048, 7, 7, 256), (1, 1), (1, 1), (0, 0), False),  # 2048 channels
        # Output channels whose filter rows are written apart (512, 1024, 2048): from 49 rows, up to
        # 2048 channels (rules.CPU_CONV_GEMM_MIN_ROWS_1X1_PADDED)
        ((1, 512, 28, 28, 1024), (1, 1), (2, 2), (0, 0), True),  # 196 rows
        ((8, 2048, 7, 7, 512), (1, 1), (1, 1), (0, 0), True),  # 2048 channels
        ((1, 4096, 7, 7, 512), (1, 1), (1, 1), (0, 0), False),  # 4096 channels
        ((1, 256, 14, 14, 256), (1, 1), (1, 1), (0, 0), {"znver4": True, "znver3": True}),  # 196 rows
        # Winograd over the phases takes strided 3x3 convs whose transformed data stays <= 40 MiB
        # (cpu-conv-winograd-strided goes first; test_winograd): 38 MiB, 15 MB, 7.5 MB ...
        ((8, 128, 56, 56, 128), (3, 3), (2, 2), (1, 1), False),
        ((8, 128, 28, 28, 256), (3, 3), (2, 2), (1, 1), False),
        ((4, 128, 28, 28, 256), (3, 3), (2, 2), (1, 1), False),
        # ... above it (4704 rows, 1152 deep, 45 MB) K-blocked GEMMs (AVX2, AMD AVX-512) take them
        # from 512 rows at depth >= 512.
        ((24, 128, 28, 28, 256), (3, 3), (2, 2), (1, 1), True),
        ((16, 128, 56, 56, 128), (3, 3), (2, 2), (1, 1), True),
        # stride 1, not Winograd: a K-blocked GEMM 4608 deep (rules.CPU_CONV_GEMM_MIN_DEPTH_AVX512)
        ((1, 512, 7, 7, 512), (3, 3), (1, 1), (1, 1), True),
        ((1, 8, 8, 8, 16), (1, 1), (1, 1), (0, 0), False),  # below the im2col size
    ],
)
@pytest.mark.parametrize("arch", ["x86-64-v3", "znver4", "znver3"])
def test_auto_choice(shape, kernel, stride, padding, expected, arch):
    expected = expected.get(arch, False) if isinstance(expected, dict) else expected
    target = Target.resolve("cpu", arch)
    problem = _problem(shape, kernel, stride, padding)
    assert conv_layout.im2col_gemm("auto", problem, target) is expected
    # Data tiling's flags leave a conv the GEMM (or the phases' Winograd) takes alone (its config is explicit).
    flags = rules.choose(problem, target, "flags")
    data_tiled = flags is not None and flags.rule is rules.CPU_CONV_IM2COL_DATA_TILING
    polyphase = conv_layout.polyphase_tile("auto", problem, target) is not None
    assert data_tiled is (not expected and not polyphase and problem.flops >= rules.CPU_CONV_IM2COL_MIN_FLOPS)


@pytest.mark.parametrize(
    "shape, arch, expected",
    [
        ((1, 1024, 14, 14, 256), "znver1", True),  # 196 rows, 1024 deep: Zen 1's 2x32 GEMM
        ((1, 1024, 7, 7, 256), "znver1", True),  # 49 rows
        ((1, 1024, 6, 6, 256), "znver1", False),  # 36 rows
        ((1, 512, 14, 14, 256), "znver1", False),  # 512 deep: 6x16, data tiling below 512 rows
        ((1, 1024, 14, 14, 256), "znver2", False),  # full-width FMAs: no deep tile, data tiling
    ],
)
def test_zen1_deep_1x1_convs_take_the_gemm_from_49_rows(shape, arch, expected):
    """Stride-1 1x1 convs as deep as a core's own register tile (gemm_config.deep_vector) take the GEMM
    from 49 rows (rules.CPU_CONV_GEMM_MIN_ROWS_1X1_PADDED), else data tiling below 512 rows."""
    target = Target.resolve("cpu", arch)
    problem = _problem(shape, (1, 1), (1, 1), (0, 0))
    assert conv_layout.im2col_gemm("auto", problem, target) is expected
    flags = rules.choose(problem, target, "flags")
    assert (flags is not None and flags.rule is rules.CPU_CONV_IM2COL_DATA_TILING) is (not expected)


def test_no_gemm_config_without_a_tuned_isa_or_channels_last():
    heavy = ((4, 256, 28, 28, 128), (1, 1), (1, 1), (0, 0))
    assert not conv_layout.im2col_gemm("auto", _problem(*heavy), Target.resolve("cpu", "x86-64"))
    nchw = _problem(*heavy, channels_last=False)
    assert not conv_layout.im2col_gemm("auto", nchw, Target.resolve("cpu", "znver4"))


def test_explain_names_the_gemm_rule():
    g = build([4, 256, 28, 28], 128, (1, 1), (1, 1), (0, 0), name="gemm_explain")
    assert "cpu-conv-im2col-gemm (1x1, 3136 GEMM rows >= 512, 256 channels" in g.explain(fs.Backend.CPU, "x86-64-v3")
    assert "cpu-conv-im2col-gemm (1x1, 3136 GEMM rows >= 49, 256 channels" in g.explain(fs.Backend.CPU, arch="znver4")
    assert "cpu-conv-im2col-gemm" not in g.explain(fs.Backend.CPU, arch="x86-64")


def test_explain_names_a_forced_conv_lowering(monkeypatch):
    """Under FUSILLI_CONV_LOWERING explain and the benchmarks' lowering column say so: the conv
    rules they list are then what auto would take, not what compiles."""
    g = build([4, 256, 28, 28], 128, (1, 1), (1, 1), (0, 0), name="gemm_forced_explain")
    target = Target.resolve("cpu", "znver4")
    assert "FUSILLI_CONV_LOWERING" not in g.explain(fs.Backend.CPU, arch="znver4")
    assert rules.lowering_summary(g.nodes, target) == "cpu-conv-im2col-gemm"
    monkeypatch.setattr(pipeline, "CONV_LOWERING", "linalg")
    assert (
        g.explain(fs.Backend.CPU, arch="znver4")
        .splitlines()[-2]
        .startswith("FUSILLI_CONV_LOWERING=linalg forces the conv lowering where it applies")
    )
    assert rules.lowering_summary(g.nodes, target) == "FUSILLI_CONV_LOWERING=linalg + cpu-conv-im2col-gemm"


def test_auto_lowering_is_the_gemm_with_its_epilogue_in_one_dispatch(cpu, rng):
    # 1x1 1x64x32x32->32 (1024 rows): the filter's HWCF copy and the GEMM + bias + relu.
    g = build([1, 64, 32, 32], 32, (1, 1), (1, 1), (0, 0), epilogue=True, name="gemm_auto")
    assert "compilation_info" in g.mlir("optimized")
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)
    assert g.compile_stats.dispatch_count == 2


def test_filter_copy_keeps_the_transients_in_the_workspace(cpu, rng):
    """The filter's HWCF copy is kept out of the GEMM by ir.fusion_barrier
    (iree_tensor_ext.compute_barrier.start): the copy is a dispatch of its own and, unlike behind
    util.optimization_barrier, lives in the caller's workspace (the module's constant transients
    size), not in a per-call allocation after a host wait."""
    g = build([1, 64, 32, 32], 32, (1, 1), (1, 1), (0, 0), name="gemm_workspace")
    optimized = g.mlir("optimized", fs.Backend.CPU, "x86-64-v3")
    assert "iree_tensor_ext.compute_barrier.start" in optimized and "util.optimization_barrier" not in optimized
    arch = arch_running_here("x86-64-v3")
    run_and_check(g, fs.Handle(fs.Backend.CPU, arch=arch), {t: random_array(t, rng) for t in g.input_tensors()})
    assert g.compile_stats.dispatch_count == 2  # the filter's copy, the GEMM
    assert g.workspace_size >= 32 * 64 * 4  # the copy's 8 KB (0 behind util.optimization_barrier)


def test_numerics_k_blocked_deep_gemm(cpu, rng, gemm_lowering, monkeypatch):
    """The K-blocked GEMM (cache_reduction, gemm_config.CONV_GEMM_TILES_BY_VENDOR) of a conv
    2304 deep, with bias + relu, on this host's ISA whatever its vendor (K 32 keeps the
    accumulator's fill small enough for AVX2 codegen too)."""
    target = Target.resolve("cpu", None)
    isa, vendor = rules.vector_isa(target), targets.cpu_vendor(target.cpu)
    if isa == "generic":
        pytest.skip("no tuned GEMM for a CPU without AVX2")
    base = gemm_config.CONV_GEMM_TILES[isa]
    blocked = gemm_config.GemmTile(base.distribution, base.vector, base.reduction, 256, 2048)
    monkeypatch.setitem(gemm_config.CONV_GEMM_TILES_BY_VENDOR, (isa, vendor or ""), blocked)
    monkeypatch.setenv("FUSILLI_DISABLE_CACHE", "1")  # the tile tables are not in the cache key
    g = build([1, 256, 8, 8], 32, (3, 3), (1, 1), (1, 1), (1, 1), epilogue=True, name="gemm_k_blocked")
    assert "cache_reduction = [0, 0, 256]" in g.mlir("optimized")
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)


def test_numerics_k_blocks_that_divide_k(cpu, rng, gemm_lowering, monkeypatch):
    """A 3x3 stride-2 conv 1152 deep over 98 GEMM rows (a short last row of workgroups) as the
    K-blocked GEMM: its K blocks are 288 wide (gemm_config.k_block), with bias + relu."""
    target = Target.resolve("cpu", None)
    isa, vendor = rules.vector_isa(target), targets.cpu_vendor(target.cpu)
    if isa == "generic":
        pytest.skip("no tuned GEMM for a CPU without AVX2")
    base = gemm_config.CONV_GEMM_TILES[isa]
    blocked = gemm_config.GemmTile(base.distribution, base.vector, base.reduction, 256, 512, k_blocks_divide=True)
    monkeypatch.setitem(gemm_config.CONV_GEMM_TILES_BY_VENDOR, (isa, vendor or ""), blocked)
    monkeypatch.setattr(gemm_config, "PATCH_MATRIX_ROWS_TARGETS", set())  # keep the short last row
    monkeypatch.setattr(gemm_config, "DEEP_VECTOR_BY_CORE", {})  # and the 6-row register tile it is short by
    monkeypatch.setenv("FUSILLI_DISABLE_CACHE", "1")  # the tile tables are not in the cache key
    g = build([2, 128, 14, 14], 32, (3, 3), (2, 2), (1, 1), (1, 1), epilogue=True, name="gemm_k_divides")
    assert "cache_reduction = [0, 0, 288]" in g.mlir("optimized")
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)


def test_numerics_wide_strided_patch_gemm(cpu, rng, gemm_lowering, monkeypatch):
    """The wide-workgroup GEMM of a stride-2 3x3 conv (gemm_config.STRIDED_PATCH_GEMM_TILES_BY_VENDOR,
    Intel AVX-512's 24x256 workgroups with K blocks), with bias + relu, on any AVX-512 host:
    81 rows and 160 output channels leave partial workgroups and register tiles in both dims."""
    target = Target.resolve("cpu", None)
    isa, vendor = rules.vector_isa(target), targets.cpu_vendor(target.cpu)
    if isa != "avx512":
        pytest.skip("the wide tile is AVX-512's (24x256 f32 accumulators exceed AVX2 codegen's vector limit)")
    wide = gemm_config.STRIDED_PATCH_GEMM_TILES_BY_VENDOR[("avx512", "intel")]
    monkeypatch.setitem(gemm_config.STRIDED_PATCH_GEMM_TILES_BY_VENDOR, (isa, vendor or ""), wide)
    monkeypatch.setattr(gemm_config, "PATCH_MATRIX_ROWS_TARGETS", set())  # keep the partial workgroups
    monkeypatch.setenv("FUSILLI_DISABLE_CACHE", "1")  # the tile tables are not in the cache key
    g = build([1, 64, 18, 18], 160, (3, 3), (2, 2), (1, 1), (1, 1), epilogue=True, name="gemm_wide_strided")
    assert "distribution = [24, 160, 0]" in g.mlir("optimized")
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)


def test_strided_patch_gemm_tile_choice():
    intel = ("avx512", "intel")
    wide = gemm_config.STRIDED_PATCH_GEMM_TILES_BY_VENDOR[intel]
    assert gemm_config.conv_gemm_tile("avx512", 256, "intel", strided_patches=True) == wide
    # Too few output channels, a 1x1 conv's plain A, or another vendor: the plain conv GEMM table.
    assert gemm_config.conv_gemm_tile("avx512", 64, "intel", strided_patches=True) != wide
    assert gemm_config.conv_gemm_tile("avx512", 256, "intel") == gemm_config.CONV_GEMM_TILES_BY_VENDOR[intel]
    amd = gemm_config.CONV_GEMM_TILES_BY_VENDOR[("avx512", "amd")]
    assert gemm_config.conv_gemm_tile("avx512", 256, "amd", strided_patches=True) == amd
    assert gemm_config.conv_gemm_tile("avx512", 256, "generic") == gemm_config.CONV_GEMM_TILES["avx512"]


@pytest.mark.parametrize(
    "m, rows, vector_rows, expected",
    [
        (196, 64, 8, 49),  # 4 x 49 rows, not 3 x 64 and a masked 4
        (195, 64, 8, 39),  # 5 x 39
        (197, 64, 8, 63),  # a prime: 3 x 63 and a last workgroup of one register tile
        (192, 64, 8, 64),  # whole workgroups already
        (784, 64, 8, 64),  # a last workgroup of 16 rows: two whole register tiles
        (49, 64, 8, 64),  # one workgroup, clamped to M where the config is written
        (641, 64, 8, 64),  # a prime no size from 32 to 64 leaves whole: the table's rows
    ],
)
def test_patch_matrix_rows(m, rows, vector_rows, expected):
    assert gemm_config.patch_matrix_rows(m, rows, vector_rows) == expected


def test_patch_matrix_gemm_rows_on_amd_avx512():
    """A strided 3x3 conv's patch matrix (materialized by the graph) of 196 rows takes 4 workgroups
    of 49 rows on AMD's AVX-512 cores, not 3 x 64 and a masked 4 (gemm_config.patch_matrix_rows);
    AVX2 code and Intel's cores keep the table's rows. (A 1x1 conv's A, the input itself, takes a
    divisor too below 512 rows: test_input_rows_divisor_on_amd_avx512.)"""
    strided = build([1, 256, 28, 28], 256, (3, 3), (2, 2), (1, 1), name="patch_rows_strided")
    for arch in ("znver5", "znver4"):
        assert "distribution = [49, 64, 0]" in strided.mlir("optimized", fs.Backend.CPU, arch)
        assert "its 196 rows in workgroups of 49 (no masked register tile past the patch matrix)" in strided.explain(
            fs.Backend.CPU, arch
        )
    assert "workgroups of 49" not in strided.explain(fs.Backend.CPU, "sapphirerapids")
    assert "distribution = [24, 256, 0]" in strided.mlir("optimized", fs.Backend.CPU, "sapphirerapids")
    # 392 rows: 6 x 64 and a last 8 (a whole register tile) on AMD AVX-512; 8 x 48 and a masked 8 on AVX2.
    batch2 = build([2, 128, 28, 28], 256, (3, 3), (2, 2), (1, 1), name="patch_rows_strided_392")
    assert "distribution = [64, 64, 0]" in batch2.mlir("optimized", fs.Backend.CPU, "znver4")
    assert "distribution = [48, 64, 0]" in batch2.mlir("optimized", fs.Backend.CPU, "x86-64-v3")


def _dgrad_1x1(name: str, dy_dim: list[int], c: int, stride: int = 1) -> fs.Graph:
    """A validated NHWC 1x1 conv_dgrad of DY ``dy_dim`` into ``c`` channels (a strided one: col2im)."""
    n, k, h, w = dy_dim
    g = fs.Graph(name=name)
    dy = g.tensor(name="dy", dim=dy_dim, stride=fs.strides(dy_dim, "NHWC"))
    wt = g.tensor(name="w", dim=[k, c, 1, 1], stride=fs.strides([k, c, 1, 1], "NHWC"))
    dx = g.conv_dgrad(dy, wt, padding=[0, 0], stride=[stride] * 2, dilation=[1, 1], name="dgrad")
    dx.set_dim([n, c, h * stride, w * stride]).set_output(True)
    return g.validate()


@pytest.mark.parametrize(
    "isa, vendor, m, rows",
    [
        ("avx512", "amd", 196, 49),  # 4 x 49, not 3 x 64 and a last 4 (half a register tile)
        ("avx512", "amd", 98, 49),  # a row split's half: 2 x 49, not 64 + 34
        ("avx512", "amd", 392, 64),  # 6 x 64 and a last 8: one whole register tile
        ("avx512", "amd", 49, 64),  # one workgroup (clamped to M where the config is written)
        ("avx512", "amd", 131, 64),  # a prime: no divisor from 32 to 64, the table's rows
        ("avx512", "amd", 516, 64),  # from INPUT_ROWS_DIVISOR_BELOW rows, the table's (a last 4)
        ("avx512", "intel", 196, 60),  # Intel's 6x64 in 60 rows: not measured, the table's
        ("avx2", "amd", 196, 48),  # AVX2: the table's
        ("avx2", None, 196, 48),
    ],
)
def test_input_rows_tile(isa, vendor, m, rows):
    tile = gemm_config.conv_gemm_tile(isa, 256, vendor)
    assert gemm_config.input_rows_tile(tile, isa, vendor, m).distribution[0] == rows


def test_input_rows_divisor_on_amd_avx512():
    """GEMMs whose A is the graph's input (a stride-1 1x1 conv's X, a 1x1 dgrad's DY) of 196 rows
    take 4 workgroups of 49 rows on AMD's AVX-512 cores, named by explain; AVX2 code and Intel's
    cores keep the table's; 784 rows (a whole register tile past the last 64) keep 64."""
    plain = build([1, 256, 14, 14], 1024, (1, 1), (1, 1), (0, 0), name="input_rows_1x1")
    why = "its 196 rows in workgroups of 49 (a divisor: no partial register tile in a last workgroup)"
    for arch in ("znver4", "znver5"):
        assert "distribution = [49, 64, 0]" in plain.mlir("optimized", fs.Backend.CPU, arch)
        assert why in plain.explain(fs.Backend.CPU, arch)
    assert "distribution = [48, 64, 0]" in plain.mlir("optimized", fs.Backend.CPU, "x86-64-v3")
    assert "workgroups of" not in plain.explain(fs.Backend.CPU, "x86-64-v3")
    assert "workgroups of" not in plain.explain(fs.Backend.CPU, "sapphirerapids")
    g = _dgrad_1x1("input_rows_dgrad", [1, 1024, 14, 14], 256)
    assert "distribution = [49, 64, 0]" in g.mlir("optimized", fs.Backend.CPU, "znver4")
    assert why in g.explain(fs.Backend.CPU, "znver4")
    # A strided dgrad's col2im GEMM (DY as A, 196 positions) as well.
    g = _dgrad_1x1("input_rows_col2im", [1, 1024, 14, 14], 512, stride=2)
    assert "cpu-conv-dgrad-col2im-gemm" in g.explain(fs.Backend.CPU, "znver4")
    assert "distribution = [49, 64, 0]" in g.mlir("optimized", fs.Backend.CPU, "znver4")
    assert why in g.explain(fs.Backend.CPU, "znver4")
    taller = build([1, 256, 28, 28], 1024, (1, 1), (1, 1), (0, 0), name="input_rows_1x1_784")
    assert "distribution = [64, 64, 0]" in taller.mlir("optimized", fs.Backend.CPU, "znver4")
    assert "workgroups of" not in taller.explain(fs.Backend.CPU, "znver4")


def test_numerics_input_rows_divisor(cpu, rng, gemm_lowering, monkeypatch):
    """A 1x1 conv + bias + relu, a 1x1 dgrad and a strided dgrad's col2im GEMM of 196 rows whose GEMMs
    take a divisor of their rows (gemm_config.input_rows_tile: 49 under AVX-512's 64-row table, 28
    under AVX2's 48), against the reference, on this host's tile (its ISA and vendor put in
    INPUT_ROWS_DIVISOR_BELOW)."""
    target = Target.resolve("cpu", None)
    isa, vendor = rules.vector_isa(target), targets.cpu_vendor(target.cpu)
    tile = gemm_config.conv_gemm_tile(isa, 40, vendor, rows=196, depth=64)
    if tile is None:
        pytest.skip("no tuned GEMM for a CPU without AVX2")
    monkeypatch.setattr(gemm_config, "INPUT_ROWS_DIVISOR_BELOW", {(isa, vendor or ""): 512})
    monkeypatch.setenv("FUSILLI_DISABLE_CACHE", "1")  # the rule's targets are not in the cache key
    rows = gemm_config.input_rows_tile(tile, isa, vendor, 196).distribution[0]
    assert rows != tile.distribution[0] and 196 % rows == 0
    fprop = build([1, 64, 14, 14], 40, (1, 1), (1, 1), (0, 0), (1, 1), epilogue=True, name="gemm_input_rows")
    g = _dgrad_1x1("gemm_input_rows_dgrad", [1, 40, 14, 14], 64)
    col2im = _dgrad_1x1("gemm_input_rows_col2im", [1, 40, 14, 14], 64, stride=2)  # DY [196, 40] x W [40, 64]
    for graph, columns in ((fprop, 40), (g, 64), (col2im, 64)):
        assert f"distribution = [{rows}, {columns}, 0]" in graph.mlir("optimized")
        run_and_check(graph, cpu, {t: random_array(t, rng) for t in graph.input_tensors()}, rtol=1e-4, atol=1e-4)


def test_numerics_patch_matrix_rows(cpu, rng, gemm_lowering, monkeypatch):
    """The patch-matrix GEMM in workgroups of patch_matrix_rows (147 rows: 3 x 49 under AVX-512's
    64-row table; under AVX2's 48 rows no divisor is near, so 3 x 47 and a last 6, one whole 6x16
    register tile), with bias + relu, on this host's tile (its ISA and vendor put in
    PATCH_MATRIX_ROWS_TARGETS)."""
    target = Target.resolve("cpu", None)
    isa, vendor = rules.vector_isa(target), targets.cpu_vendor(target.cpu)
    tile = gemm_config.conv_gemm_tile(isa, 32, vendor, strided_patches=True, rows=147, depth=576)
    if tile is None:
        pytest.skip("no tuned GEMM for a CPU without AVX2")
    monkeypatch.setattr(gemm_config, "PATCH_MATRIX_ROWS_TARGETS", {(isa, vendor or "")})
    monkeypatch.setenv("FUSILLI_DISABLE_CACHE", "1")  # the rule's targets are not in the cache key
    g = build([3, 64, 14, 14], 32, (3, 3), (2, 2), (1, 1), (1, 1), epilogue=True, name="gemm_patch_rows")
    rows = gemm_config.patch_matrix_rows(147, tile.distribution[0], tile.vector[0])
    assert 147 % rows % tile.vector[0] == 0 and f"distribution = [{rows}, 32, 0]" in g.mlir("optimized")
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "shape, kernel, expected",
    [
        ((1, 256, 28, 28, 256), (3, 3), True),  # 196 rows, 256 output channels: wide GEMM
        ((1, 64, 32, 32, 128), (3, 3), True),  # 256 rows
        ((1, 512, 14, 14, 512), (3, 3), False),  # 49 rows: data tiling
        ((1, 64, 32, 32, 64), (3, 3), False),  # 64 output channels: the 512-row limit
        ((1, 256, 28, 28, 512), (1, 1), False),  # 1x1 stride 2, 196 rows: below the 1x1 limit
    ],
)
def test_intel_avx512_strided_rows(shape, kernel, expected):
    problem = _problem(shape, kernel, (2, 2), (1, 1) if kernel == (3, 3) else (0, 0))
    assert conv_layout.im2col_gemm("auto", problem, Target.resolve("cpu", "sapphirerapids")) is expected
    # The vendor-free AVX-512 level keeps the 4096-row limit.
    assert conv_layout.im2col_gemm("auto", problem, Target.resolve("cpu", "x86-64-v4")) is False


@pytest.mark.parametrize(
    "shape, expected",
    [
        # stride-1 1x1 forward convs below 512 rows up to 512 output channels
        # (rules.CPU_CONV_GEMM_1X1_FEW_ROWS_MAX_OUT_CHANNELS), up to Intel's 1024 channels
        ((1, 512, 28, 28, 128), True),  # 784 rows: its row split's halves of 392 keep the GEMM
        ((1, 1024, 14, 14, 256), True),  # 196 rows
        ((1, 1024, 14, 14, 512), True),
        ((1, 512, 7, 7, 512), True),  # 49 rows
        ((1, 256, 14, 14, 1024), False),  # 1024 output channels: measured slower
        ((1, 2048, 7, 7, 512), False),  # 2048 channels
        ((1, 512, 6, 6, 256), False),  # 36 rows
    ],
)
def test_intel_avx512_1x1_few_rows(shape, expected):
    problem = _problem(shape, (1, 1), (1, 1), (0, 0))
    assert conv_layout.im2col_gemm("auto", problem, Target.resolve("cpu", "sapphirerapids")) is expected


@pytest.mark.parametrize(
    "shape, kernel, znver4, avx2",
    [
        ((1, 512, 14, 14, 512), (3, 3), True, True),  # 49 rows, 4608 deep
        ((1, 256, 28, 28, 256), (3, 3), True, True),  # 196 rows, 2304 deep
        ((1, 64, 28, 28, 128), (3, 3), True, True),  # 196 rows, 576 deep
        ((1, 128, 28, 28, 128), (3, 3), True, True),  # 49 rows, 1152 deep
        ((1, 512, 7, 7, 512), (3, 3), True, True),  # 16 rows
        ((1, 128, 6, 6, 128), (3, 3), False, False),  # 9 rows: below the 16
        ((1, 32, 28, 28, 128), (3, 3), False, False),  # 288 deep: below the deep-GEMM depth
        ((1, 256, 28, 28, 256), (1, 1), False, False),  # 1x1 stride 2, 196 rows: the 1x1 limits
    ],
)
def test_deep_strided_rows_few(shape, kernel, znver4, avx2):
    """cpu-conv-im2col-gemm takes stride-2 convs >= 512 deep from 16 GEMM rows on AMD AVX-512 and
    AVX2, Intel's AVX2 code too (K-blocked GEMMs, measured ahead of data tiling there; up to 1152
    deep on AVX2 until its filter lost a strided copy: rules.CPU_CONV_GEMM_MIN_ROWS_DEEP_STRIDED_FEW_TARGETS)."""
    problem = _problem(shape, kernel, (2, 2), (1, 1) if kernel == (3, 3) else (0, 0))
    assert conv_layout.im2col_gemm("auto", problem, Target.resolve("cpu", "znver4")) is znver4
    assert conv_layout.im2col_gemm("auto", problem, Target.resolve("cpu", "haswell")) is avx2
    assert conv_layout.im2col_gemm("auto", problem, Target.resolve("cpu", "x86-64-v3")) is avx2
    # The vendor-free AVX-512 level keeps its 4096-row limit.
    assert conv_layout.im2col_gemm("auto", problem, Target.resolve("cpu", "x86-64-v4")) is False


@pytest.mark.parametrize(
    "x_dim, k, stride, fact",
    [
        ([1, 256, 7, 7], 40, (1, 1), "3x3, GEMM depth 2304 >= 2304, K-blocked GEMM for avx2"),
        ([1, 256, 13, 13], 40, (2, 2), "3x3 stride 2, 49 GEMM rows >= 16, GEMM tuned for avx2"),
    ],
    ids=["stride-1-2304-deep", "stride-2-2304-deep"],
)
def test_numerics_avx2_deep_gemm_by_the_rules(rng, x_dim, k, stride, fact):
    """Deep 3x3 convs (2304 deep, 49 GEMM rows) that AVX2 code takes to the K-blocked GEMM by the
    rules (rules.CPU_CONV_GEMM_MIN_DEPTH_AVX512 for stride 1, no depth limit for stride 2), run as
    x86-64-v3 code with bias + relu: the GEMM's one 49-row block, its K blocks of 256, 3 dispatches."""
    arch_running_here("x86-64-v3")
    g = build(x_dim, k, (3, 3), stride, (1, 1), (1, 1), epilogue=True, name=f"gemm_avx2_deep_rules_{stride[0]}")
    assert f"cpu-conv-im2col-gemm ({fact}" in g.explain(fs.Backend.CPU, "x86-64-v3")
    optimized = g.mlir("optimized", fs.Backend.CPU, "x86-64-v3")
    assert "distribution = [49, 40, 0]" in optimized and "cache_reduction = [0, 0, 256]" in optimized
    handle = fs.Handle(fs.Backend.CPU, arch="x86-64-v3")
    run_and_check(g, handle, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)
    assert g.compile_stats.dispatch_count == 3


def test_numerics_avx2_gemm_tile(rng, gemm_lowering):
    """The AVX2 conv GEMM (6x16 in 48x64 workgroups, K whole below 2048 deep, in blocks of 256
    from it: gemm_config.CONV_WHOLE_K_BELOW) run as x86-64-v3 code: a 3x3 conv 2160 deep
    (K-blocked, a last block of 112), a 1x1 one 64 deep, a 1x1 one 1024 deep and a 1x1 stride-2
    one, with bias + relu, 36-100 rows and 40 output channels (partial workgroups and tiles)."""
    arch_running_here("x86-64-v3")
    handle = fs.Handle(fs.Backend.CPU, arch="x86-64-v3")
    deep = build([1, 240, 9, 9], 40, (3, 3), (1, 1), (1, 1), (1, 1), epilogue=True, name="gemm_avx2_deep")
    flat = build([1, 64, 10, 10], 40, (1, 1), (1, 1), (0, 0), (1, 1), epilogue=True, name="gemm_avx2_flat")
    wide = build([1, 1024, 6, 6], 40, (1, 1), (1, 1), (0, 0), (1, 1), epilogue=True, name="gemm_avx2_wide")
    strided = build([1, 64, 19, 19], 40, (1, 1), (2, 2), (0, 0), (1, 1), epilogue=True, name="gemm_avx2_s2")
    # Dispatches: the filter's HWCF copy, (the 3x3's and the strided 1x1's patch gather,) the
    # GEMM with bias + relu.
    cases = ((deep, True, 3), (flat, False, 2), (wide, False, 2), (strided, False, 3))
    for g, blocked, dispatches in cases:
        optimized = g.mlir("optimized", fs.Backend.CPU, "x86-64-v3")
        assert "vector_common_parallel = [6, 16, 0]" in optimized
        assert ("cache_reduction = [0, 0, 256]" in optimized) is blocked
        run_and_check(g, handle, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)
        assert g.compile_stats.dispatch_count == dispatches


def test_deep_gemm_rows_in_equal_blocks():
    """Deep stride-1 conv GEMMs take their rows in equal workgroup blocks (gemm_config.deep_gemm_rows)
    of <= 100 on Intel and AMD AVX-512, of <= 60 as AMD's or no named CPU's AVX2 code; shallower or
    strided ones keep the table's, short of one block plus a remainder below a register tile."""
    table = gemm_config.CONV_GEMM_TILES_BY_VENDOR[("avx512", "intel")]
    deep = functools.partial(gemm_config.conv_gemm_tile, "avx512", 512, "intel", depth=4608)
    assert deep(rows=392).distribution == (98, 64) and deep(rows=392).vector == table.vector
    assert deep(rows=49).distribution == (49, 64) and deep(rows=1568).distribution == (98, 64)
    assert deep(rows=400).distribution == (100, 64) and deep(rows=401).distribution == (81, 64)
    assert gemm_config.conv_gemm_tile("avx512", 512, "intel", rows=392, depth=1152) == table
    amd = gemm_config.CONV_GEMM_TILES_BY_VENDOR[("avx512", "amd")]
    amd_deep = gemm_config.conv_gemm_tile("avx512", 512, "amd", rows=98, depth=4608)
    assert amd_deep.distribution == (98, 64) and amd_deep.vector == amd.vector
    assert gemm_config.conv_gemm_tile("avx512", 512, "amd", rows=784, depth=3200).distribution == (98, 64)
    assert gemm_config.conv_gemm_tile("avx512", 512, "amd", rows=98, depth=1152) == amd
    avx2 = gemm_config.CONV_GEMM_TILES["avx2"]
    avx2_deep = functools.partial(gemm_config.conv_gemm_tile, "avx2", 512, depth=4608)
    assert avx2_deep(rows=49).distribution == (49, 64) and avx2_deep(rows=49).vector == avx2.vector
    assert avx2_deep(rows=98).distribution == (49, 64) and avx2_deep(rows=392).distribution == (56, 64)
    assert avx2_deep(rows=120, vendor="amd").distribution == (60, 64)
    assert avx2_deep(rows=121).distribution == (41, 64)
    assert gemm_config.conv_gemm_tile("avx2", 512, None, rows=54, depth=1152) == avx2
    assert gemm_config.conv_gemm_tile("avx2", 512, None, True, rows=54, depth=4608) == avx2
    # ... but a remainder shorter than the 6-row register tile joins the one block at any depth
    # (gemm_config.ONE_BLOCK_SHORT_REMAINDER_ISAS), AVX2 only.
    for strided in (False, True):
        assert gemm_config.conv_gemm_tile("avx2", 512, None, strided, rows=49, depth=1152).distribution == (49, 64)
    assert gemm_config.conv_gemm_tile("avx2", 512, None, rows=53, depth=512).distribution == (53, 64)
    assert gemm_config.conv_gemm_tile("avx512", 512, "amd", rows=65, depth=512) == amd
    wide = gemm_config.STRIDED_PATCH_GEMM_TILES_BY_VENDOR[("avx512", "intel")]
    assert gemm_config.conv_gemm_tile("avx512", 512, "intel", True, rows=392, depth=4608) == wide


def test_numerics_deep_gemm_rows(cpu, rng, gemm_lowering, monkeypatch):
    """A deep GEMM's equal row blocks (gemm_config.deep_gemm_rows) with bias + relu on this host's
    ISA whatever its vendor: 2x256x14x14 is 392 rows, in four workgroups of 98 on AVX-512 (the 8-row
    register tile leaves a remainder of 2) and seven of 56 on AVX2; K 32 keeps the accumulator
    small for AVX2 codegen."""
    target = Target.resolve("cpu", None)
    isa, vendor = rules.vector_isa(target), targets.cpu_vendor(target.cpu)
    if isa == "generic":
        pytest.skip("no tuned GEMM for a CPU without AVX2")
    monkeypatch.setattr(gemm_config, "DEEP_GEMM_VENDORS", {(isa, vendor or "")})
    monkeypatch.setenv("FUSILLI_DISABLE_CACHE", "1")  # the tile tables are not in the cache key
    g = build([2, 256, 14, 14], 32, (3, 3), (1, 1), (1, 1), (1, 1), epilogue=True, name="gemm_deep_rows")
    assert f"distribution = [{gemm_config.deep_gemm_rows(392, isa)}, 32, 0]" in g.mlir("optimized")
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)


def test_forced_winograd_leaves_other_convs_the_rules_choice(monkeypatch):
    """FUSILLI_CONV_LOWERING=winogradM forces Winograd on 3x3 stride-1 convs only: a stride-2 conv
    keeps what the target's rules choose (here Intel AVX-512's explicit-config GEMM), not a plain
    linalg conv without im2col (3x3 s2 1x128x56x56 took 20 ms that way, against 1.3)."""
    args = ([1, 128, 56, 56], 128, (3, 3), (2, 2), (1, 1))
    auto = build(*args, name="gemm_forced_auto").mlir("optimized", fs.Backend.CPU, "sapphirerapids")
    monkeypatch.setattr(pipeline, "CONV_LOWERING", "winograd4")
    forced = build(*args, name="gemm_forced_wino").mlir("optimized", fs.Backend.CPU, "sapphirerapids")
    assert "linalg.matmul {compilation_info" in auto
    assert forced == auto.replace("gemm_forced_auto", "gemm_forced_wino")


def test_unknown_conv_lowering_is_refused(monkeypatch):
    """A FUSILLI_CONV_LOWERING the pass does not know is an INVALID_ARGUMENT naming the setting,
    not silently the plain linalg conv."""
    monkeypatch.setattr(pipeline, "CONV_LOWERING", "winograd3")
    g = build([1, 64, 16, 16], 32, (3, 3), (1, 1), (1, 1), name="gemm_bad_lowering")
    with pytest.raises(fs.FusilliError) as e:
        g.mlir("optimized", fs.Backend.CPU, "sapphirerapids")
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT
    assert "FUSILLI_CONV_LOWERING='winograd3'" in str(e.value) and "winograd4" in str(e.value)


@pytest.mark.parametrize(
    "x_dim, k, kernel, stride, padding",
    [
        ([1, 2048, 7, 7], 768, (1, 1), (1, 1), (0, 0)),
        ([1, 512, 10, 10], 256, (3, 3), (2, 2), (1, 1)),
        ([1, 1024, 14, 14], 2048, (1, 1), (2, 2), (0, 0)),
    ],
    ids=["1x1-49-positions", "3x3-s2-25-positions", "1x1-s2-2048-channels"],
)
def test_few_positions_gemm_on_zen1(rng, x_dim, k, kernel, stride, padding):
    """A forward conv of <= 64 output positions and a >= 4 MiB filter is Y^T[K, positions] = W x
    patches^T on Zen 1 (rules.CPU_CONV_GEMM_FEW_POSITIONS): the KRSC filter read in place as the
    GEMM's A, the patches gathered transposed, the result transposed back in a dispatch that takes
    the bias + relu (3 dispatches with or without them). The GEMM's workgroups: 48 filter rows
    (gemm_config.FEW_POSITIONS_GEMM_TILES). 2048 output channels too, whose filter the im2col GEMM
    would write with padded rows. Other AMD cores, x86-64-v3 code and Intel's cores keep their
    lowering. Numerics against the reference where this CPU runs that code."""
    amd = "znver1"
    plain = build(x_dim, k, kernel, stride, padding, name=f"few_positions_plain_{amd}")
    g = build(x_dim, k, kernel, stride, padding, epilogue=True, name=f"few_positions_{amd}")
    oh = (x_dim[2] + 2 * padding[0] - kernel[0]) // stride[0] + 1
    positions, depth = oh * oh, kernel[0] * kernel[1] * x_dim[1]
    assert f"cpu-conv-gemm-few-positions (Y^T[{k}, {positions}] = W x patches^T" in g.explain(arch=amd)
    for other in ("x86-64-v3", "sapphirerapids", "znver2", "znver3", "znver4", "znver5"):
        assert "few-positions" not in g.explain(arch=other)
    optimized = g.mlir("optimized", fs.Backend.CPU, amd)
    assert f"tensor<{k}x{depth}xf32>, tensor<{depth}x{positions}xf32>) outs(" in optimized  # W x patches^T
    assert optimized.count("linalg.transpose") == 2 and "distribution = [48, " in optimized
    arch = arch_running_here(amd)
    handle = fs.Handle(fs.Backend.CPU, arch=arch)
    run_and_check(g, handle, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)
    plain.compile(handle)
    assert g.compile_stats.dispatch_count == plain.compile_stats.dispatch_count == 3


@pytest.mark.parametrize(
    "x_dim, k, kernel, dilation, dtype, why",
    [
        ([2, 512, 7, 7], 512, (3, 3), (1, 1), F32, "98 positions"),
        ([1, 512, 7, 7], 1024, (1, 1), (1, 1), F32, "a 2 MiB filter"),
        ([1, 1024, 7, 7], 1024, (1, 1), (1, 1), BF16, "bf16"),
        ([1, 512, 7, 7], 512, (3, 3), (2, 2), F32, "dilation 2"),
    ],
)
def test_few_positions_gemm_only_where_measured(x_dim, k, kernel, dilation, dtype, why):
    padding = tuple(d * (s // 2) for d, s in zip(dilation, kernel))
    g = build(x_dim, k, kernel, (1, 1), padding, dilation, dtype=dtype, name="few_positions_not")
    assert "few-positions" not in g.explain(arch="znver1"), why


@pytest.mark.parametrize(
    "x_dim, kernel, stride",
    [([1, 512, 7, 7], (3, 3), (1, 1)), ([1, 512, 14, 14], (3, 3), (2, 2))],
    ids=["3x3-49-positions", "3x3-s2-49-positions"],
)
@pytest.mark.parametrize("arch", ["znver3", "znver4", "znver5", "x86-64-v3"])
def test_last_stage_convs_take_the_k_blocked_gemm(x_dim, kernel, stride, arch):
    """ResNet-50's 512-channel 3x3 convs of 49 output positions (a 9 MiB filter) are the K-blocked
    im2col GEMM on AMD cores other than Zen 1 and on AVX2 code: its B the filter's [K, R*S*C] matrix
    transposed and padded to rows of 528 in one dispatch (on Zen 3 written in 16-column panels
    instead, gemm_config.CONV_B_PANEL_BY_CORE), the GEMM's rows one block of 49 (the transposed GEMM
    of few positions, which Zen 1 keeps, lost to it there, rules.py)."""
    g = build(x_dim, 512, kernel, stride, (1, 1), epilogue=True, name=f"last_stage_{stride[0]}")
    assert "cpu-conv-im2col-gemm (3x3" in g.explain(arch=arch)
    optimized = g.mlir("optimized", fs.Backend.CPU, arch)
    assert "distribution = [49, " in optimized
    if arch == "znver3":
        assert "tensor<49x4608xf32>, tensor<32x4608x16xf32>) outs(" in optimized
        return
    assert "tensor<49x4608xf32>, tensor<4608x512xf32>) outs(" in optimized
    assert "tensor<4608x512xf32> to tensor<4608x528xf32>" in optimized
