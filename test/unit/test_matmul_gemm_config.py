"""cpu-matmul-gemm-config: an f32 matmul below the data-tiling threshold on AMD's AVX2 and AVX-512
cores as ``linalg.matmul`` / ``linalg.batch_matmul`` with an explicit lowering config."""

from __future__ import annotations

import pytest
from conftest import random_array, run_and_check

import fusilli as fs
from fusilli.backend import rules
from fusilli.backend.targets import Target


def _matmul_graph(name, a_dim, b_dim, *, a_stride=None, b_stride=None, epilogue=False, io=fs.DataType.FLOAT):
    g = fs.Graph(name=name, io_data_type=io)
    a = g.tensor(name="a", dim=a_dim, stride=a_stride)
    b = g.tensor(name="b", dim=b_dim, stride=b_stride)
    y = g.matmul(a, b, name="mm")
    if epilogue:
        bias = g.tensor(name="bias", dim=[1] * (len(a_dim) - 1) + [b_dim[-1]])
        y = g.relu(g.add(y, bias, name="mm_bias"), name="mm_relu")
    y.set_output(True).set_name("y")
    g.validate()
    return g


def _rule(g, arch):
    choice = rules.choose(rules.problem_of(g.nodes[0]), Target.resolve("cpu", arch), "algorithm")
    return choice.rule if choice is not None else None


@pytest.mark.parametrize(
    "a_dim, b_dim",
    [
        ([256, 256], [256, 256]),
        ([128, 768], [768, 768]),
        ([64, 128], [128, 128]),  # 2.1 MFLOP: the smallest taken
        ([8, 256, 64], [8, 64, 256]),
        ([12, 197, 64], [12, 64, 197]),
        ([8, 512, 64], [8, 64, 512]),  # batched, 2^28 FLOP, B 64 deep
        ([8, 128, 1024], [8, 1024, 128]),  # batched, 2^28 FLOP, B 128 wide
    ],
)
def test_taken_on_amd_and_intel_avx512(a_dim, b_dim):
    g = _matmul_graph("mm_taken", a_dim, b_dim)
    for arch in ("znver1", "znver3", "znver4", "znver5", "sapphirerapids", "icelake-server"):
        assert _rule(g, arch) is rules.CPU_MATMUL_GEMM_CONFIG
    for arch in ("haswell", "x86-64-v3", "x86-64-v4"):  # not measured: IREE's config
        assert _rule(g, arch) is None


@pytest.mark.parametrize(
    "a_dim, b_dim, a_stride, b_stride, io",
    [
        ([64, 64], [64, 64], None, None, fs.DataType.FLOAT),  # 0.5 MFLOP: below the rule's minimum
        ([1024, 1024], [1024, 1024], None, None, fs.DataType.FLOAT),  # 2-D, 2^31 FLOP: data tiling
        ([4, 512, 512], [4, 512, 512], None, None, fs.DataType.FLOAT),  # batched, 2^30 FLOP, B 512 x 512: data tiling
        ([256, 256], [256, 256], [1, 256], None, fs.DataType.FLOAT),  # A transposed by its strides
        ([64, 1024], [1024, 1024], None, [1, 1024], fs.DataType.FLOAT),  # B transposed, A of 64 rows
        ([256, 256], [256, 256], None, None, fs.DataType.HALF),  # not f32
        ([4, 256, 256], [256, 256], None, None, fs.DataType.FLOAT),  # B's batch broadcast
        ([2, 4, 128, 128], [2, 4, 128, 128], None, None, fs.DataType.FLOAT),  # two batch dims
    ],
)
def test_not_taken(a_dim, b_dim, a_stride, b_stride, io):
    g = _matmul_graph("mm_not_taken", a_dim, b_dim, a_stride=a_stride, b_stride=b_stride, io=io)
    assert _rule(g, "znver1") is None


@pytest.mark.parametrize(
    "a_dim, b_dim, data_tiled",
    [([8, 512, 64], [8, 64, 512], False), ([4, 512, 512], [4, 512, 512], True), ([1024, 1024], [1024, 1024], True)],
)
def test_data_tiling_only_where_no_config(a_dim, b_dim, data_tiled):
    """A batched matmul with its own config above the data-tiling threshold gets no data-tiling
    flags on AMD's AVX2 cores; other CPUs keep them."""
    g = _matmul_graph("mm_flags", a_dim, b_dim)
    tiling = "--iree-opt-data-tiling=true"
    assert (tiling in rules.compile_flags(g.nodes, Target.resolve("cpu", "znver1"))) == data_tiled
    assert tiling in rules.compile_flags(g.nodes, Target.resolve("cpu", "haswell"))


def test_the_config_reaches_the_dispatch():
    """The compilation_info survives IREE's global optimization into the dispatch (IREE folding a
    unit dim would drop it), and bias + relu fuse into the GEMM's dispatch."""
    g = _matmul_graph("mm_config_flow", [256, 256], [256, 256], epilogue=True)
    assert "cpu-matmul-gemm-config" in g.explain(fs.Backend.CPU, arch="znver1")
    flow = g.mlir("flow", fs.Backend.CPU, "znver1")
    assert "vector_common_parallel = [4, 16, 0]" in flow and "cache_reduction = [0, 0, 64]" in flow
    assert flow.count("flow.dispatch.workgroups") + flow.count("flow.dispatch.region") <= 2  # GEMM (+ epilogue)
    batched = _matmul_graph("bmm_config_flow", [8, 256, 64], [8, 64, 256]).mlir("flow", fs.Backend.CPU, "znver1")
    assert "vector_common_parallel = [1, 4, 16, 0]" in batched and "distribution = [1, 64, 256, 0]" in batched


def test_avx512_tiles():
    """AMD's AVX-512 cores take 8x32 in 64x64 workgroups with K blocks of 256 (whole K below 256),
    batched 8x32 in 64 x min(N, 256); explain names the tile."""
    g = _matmul_graph("mm_avx512_flow", [256, 1024], [1024, 256], epilogue=True)
    assert "8x32 register tile, K in blocks of 256 for avx512, AMD" in g.explain(fs.Backend.CPU, arch="znver5")
    flow = g.mlir("flow", fs.Backend.CPU, "znver5")
    assert "vector_common_parallel = [8, 32, 0]" in flow and "cache_reduction = [0, 0, 256]" in flow
    assert "distribution = [64, 64, 0]" in flow
    shallow = _matmul_graph("mm_avx512_shallow", [256, 128], [128, 256]).mlir("flow", fs.Backend.CPU, "znver4")
    assert "vector_common_parallel = [8, 32, 0]" in shallow and "cache_reduction" not in shallow
    batched = _matmul_graph("bmm_avx512_flow", [12, 197, 64], [12, 64, 197]).mlir("flow", fs.Backend.CPU, "znver5")
    assert "vector_common_parallel = [1, 8, 32, 0]" in batched and "distribution = [1, 64, 197, 0]" in batched


def _host_takes_it() -> bool:
    g = _matmul_graph("mm_host", [256, 256], [256, 256])
    return _rule(g, None) is rules.CPU_MATMUL_GEMM_CONFIG


@pytest.mark.skipif(not _host_takes_it(), reason="the rule is measured for AMD's cores only")
@pytest.mark.parametrize(
    "a_dim, b_dim",
    [
        ([256, 256], [256, 256]),
        ([242, 300], [300, 130]),  # no dim a multiple of the tiles
        ([96, 1000], [1000, 130]),  # K blocks with a remainder
        ([8, 256, 64], [8, 64, 256]),
        ([12, 197, 64], [12, 64, 197]),
    ],
)
def test_numerics_and_one_dispatch(cpu, rng, a_dim, b_dim):
    g = _matmul_graph("mm_numerics_" + "x".join(map(str, a_dim + b_dim)), a_dim, b_dim, epilogue=True)
    assert "cpu-matmul-gemm-config" in g.explain(fs.Backend.CPU)
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)
    assert g.compile_stats.dispatch_count == 1  # bias + relu in the GEMM's dispatch


@pytest.mark.skipif(not _host_takes_it(), reason="the rule is measured for AMD's cores only")
def test_beside_a_data_tiled_matmul(cpu, rng):
    """A graph whose other matmul is data-tiled compiles with data tiling's flags; the configured
    batched GEMM still computes the right product."""
    g = fs.Graph(name="mm_mixed_lowerings", io_data_type=fs.DataType.FLOAT)
    big = g.matmul(g.tensor(name="a", dim=[640, 640]), g.tensor(name="b", dim=[640, 640]), name="big")
    big.set_output(True).set_name("y")
    small = g.matmul(g.tensor(name="ba", dim=[8, 256, 64]), g.tensor(name="bb", dim=[8, 64, 256]), name="bmm")
    small.set_output(True).set_name("by")
    g.validate()
    explained = g.explain(fs.Backend.CPU)
    assert "cpu-matmul-data-tiling" in explained and "cpu-matmul-gemm-config" in explained
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)


def test_transposed_b_is_copied_first():
    """A linear layer's weight read as W^T (B transposed by its strides) is copied row-major in a
    dispatch of its own, behind a fusion barrier, and the GEMM keeps its config."""
    g = _matmul_graph("mm_transposed_b", [512, 256], [256, 384], b_stride=[1, 256])
    assert _rule(g, "znver1") is rules.CPU_MATMUL_GEMM_CONFIG
    assert "B copied row-major first" in g.explain(fs.Backend.CPU, arch="znver1")
    optimized = g.mlir("optimized", fs.Backend.CPU, "znver1")
    assert "iree_tensor_ext.compute_barrier.start" in optimized and "compilation_info" in optimized
    batched = _matmul_graph("bmm_transposed_b", [4, 256, 128], [4, 128, 256], b_stride=[128 * 256, 1, 128])
    assert _rule(batched, "znver1") is rules.CPU_MATMUL_GEMM_CONFIG


@pytest.mark.skipif(not _host_takes_it(), reason="the rule is measured for AMD's cores only")
@pytest.mark.parametrize(
    "a_dim, b_dim, b_stride",
    [([512, 256], [256, 384], [1, 256]), ([4, 200, 96], [4, 96, 130], [96 * 130, 1, 96])],
)
def test_transposed_b_numerics(cpu, rng, a_dim, b_dim, b_stride):
    g = _matmul_graph("mm_tb_" + "x".join(map(str, a_dim + b_dim)), a_dim, b_dim, b_stride=b_stride, epilogue=True)
    assert "B copied row-major first" in g.explain(fs.Backend.CPU)
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)
    assert g.compile_stats.dispatch_count == 2  # B's row-major copy, the GEMM with bias + relu


def _sdpa_graph(name, q_dim, kv_heads=None, **attrs):
    g = fs.Graph(name=name, io_data_type=fs.DataType.FLOAT)
    kv_dim = [q_dim[0], kv_heads or q_dim[1], *q_dim[2:]]
    q = g.tensor(name="q", dim=q_dim)
    k, v = g.tensor(name="k", dim=kv_dim), g.tensor(name="v", dim=kv_dim)
    g.sdpa(q, k, v, name="attn", **attrs).set_output(True).set_name("o")
    g.validate()
    return g


def test_attention_products_configured():
    """A decomposed attention's Q K^T and P V are GEMMs with the config on AMD's cores (K^T copied
    row-major first) from 128 query rows (AVX-512: 64); other CPUs and fewer rows keep torch's
    matmuls."""
    g = _sdpa_graph("sdpa_gemms", [1, 2, 128, 64])
    assert "Q K^T and P V as GEMMs" in g.explain(fs.Backend.CPU, arch="znver1")
    optimized = g.mlir("optimized", fs.Backend.CPU, "znver1")
    assert optimized.count("linalg.batch_matmul {compilation_info") == 2
    assert "iree_tensor_ext.compute_barrier.start" in optimized
    assert "compilation_info" not in g.mlir("optimized", fs.Backend.CPU, "haswell")
    few = _sdpa_graph("sdpa_few_rows", [1, 2, 64, 64])
    optimized = few.mlir("optimized", fs.Backend.CPU, "znver1")
    assert "compilation_info" not in optimized and "torch.aten.matmul" in optimized
    # AMD's AVX-512 cores repay K^T's copy from 64 query rows.
    assert "from 64 query rows" in few.explain(fs.Backend.CPU, arch="znver5")
    optimized = few.mlir("optimized", fs.Backend.CPU, "znver5")
    assert optimized.count("linalg.batch_matmul {compilation_info") == 2
    fewer = _sdpa_graph("sdpa_fewer_rows", [1, 4, 32, 128]).mlir("optimized", fs.Backend.CPU, "znver5")
    assert "compilation_info" not in fewer and "torch.aten.matmul" in fewer


@pytest.mark.skipif(not _host_takes_it(), reason="the rule is measured for AMD's cores only")
@pytest.mark.parametrize(
    "q_dim, kv_heads, attrs",
    [
        ([1, 4, 160, 64], None, {}),  # rows no multiple of the workgroup's
        ([1, 2, 512, 32], None, {"is_causal": True}),  # 4 causal query blocks of 128 rows
        ([2, 4, 128, 64], 2, {"enable_gqa": True}),  # two query heads folded per K/V head
        ([1, 8, 77, 64], None, {}),  # 77 rows and keys: configured from 64 rows on AVX-512
    ],
)
def test_attention_numerics(cpu, rng, q_dim, kv_heads, attrs):
    g = _sdpa_graph("sdpa_gemm_" + "x".join(map(str, q_dim)), q_dim, kv_heads, **attrs)
    if q_dim[2] < rules.sdpa_gemm_min_rows(Target.resolve("cpu")):
        pytest.skip("too few query rows for the host's configured attention GEMMs")
    assert "Q K^T and P V as GEMMs" in g.explain(fs.Backend.CPU)
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)
