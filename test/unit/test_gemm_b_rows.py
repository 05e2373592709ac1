"""A conv GEMM's filter (its B operand) written with padded rows where rows a multiple of 2 KiB apart
would share L1's sets (gemm_config.padded_b_columns, conv_layout._materialized_b): the rule, the IR
the forward, 1x1 dgrad and col2im GEMMs get, their numerics against the reference, that the padding
adds no dispatch where the filter is transposed anyway, and what ``g.explain`` says."""

from __future__ import annotations

import re

import pytest
from conftest import channels_last_conv_graph, random_array, run_and_check

import fusilli as fs
from fusilli.backend import Artifact
from fusilli.passes import gemm_config


def test_padded_b_columns_rule():
    # f32 rows of 512, 1024, 1536, 2048 columns are a multiple of 2 KiB apart: one 64-byte line more.
    for columns in (512, 1024, 1536, 2048):
        for isa in ("avx512", "avx2"):
            assert gemm_config.padded_b_columns(isa, columns, 4, 1568, copied=False) == columns + 16
    # bf16 rows of 1024 are 2 KiB apart too; 32 elements make the line.
    assert gemm_config.padded_b_columns("avx512", 1024, 2, 1568, copied=False) == 1056
    # 1 KiB rows (256 f32), other multiples, and targets without a tuned GEMM stay as they are.
    for columns in (256, 768, 1000, 64):
        assert gemm_config.padded_b_columns("avx512", columns, 4, 1568, copied=False) is None
    assert gemm_config.padded_b_columns("generic", 1024, 4, 1568, copied=False) is None
    # A filter copied only to be padded: from B_ROW_PAD_COPY_MIN_ROWS GEMM rows.
    few = gemm_config.B_ROW_PAD_COPY_MIN_ROWS - 1
    assert gemm_config.padded_b_columns("avx512", 1024, 4, few, copied=True) is None
    assert gemm_config.padded_b_columns("avx512", 1024, 4, few + 1, copied=True) == 1040
    assert gemm_config.padded_b_columns("avx512", 1024, 4, few, copied=False) == 1040


def _dgrad_graph(name: str, n: int, k: int, hw: int, c: int, stride: int = 1) -> fs.Graph:
    """A channels-last 1x1 dgrad: DY [n, k, hw, hw] into DX [n, c, hw * stride, hw * stride]."""
    g = fs.Graph(name=name)
    dy_dim, w_dim, dx_dim = [n, k, hw, hw], [k, c, 1, 1], [n, c, hw * stride, hw * stride]
    dy = g.tensor(name="dy", dim=dy_dim, stride=fs.strides(dy_dim, "NHWC"))
    w = g.tensor(name="w", dim=w_dim, stride=fs.strides(w_dim, "NHWC"))
    dx = g.conv_dgrad(dy, w, padding=[0, 0], stride=[stride, stride], dilation=[1, 1], name="dgrad")
    dx.set_dim(dx_dim).set_output(True).set_name("dx")
    g.validate()
    return g


def _padded_barrier(text: str, depth: int, padded: int) -> bool:
    return f"iree_tensor_ext.compute_barrier.start %padded : tensor<{depth}x{padded}xf32>" in text


# name: graph builder, the GEMM's depth and padded B row, or None where B stays as it is.
CASES = {
    "fprop_1x1_512": (lambda: channels_last_conv_graph([2, 32, 16, 16], 512, (1, 1), (1, 1), (0, 0)), 32, 528),
    "fprop_1x1_s2_1024": (lambda: channels_last_conv_graph([2, 16, 64, 64], 1024, (1, 1), (2, 2), (0, 0)), 16, 1040),
    "fprop_3x3_s2_512": (lambda: channels_last_conv_graph([1, 64, 18, 18], 512, (3, 3), (2, 2), (1, 1)), 576, 528),
    "fprop_1x1_49_rows": (lambda: channels_last_conv_graph([1, 64, 7, 7], 512, (1, 1), (1, 1), (0, 0)), 64, 528),
    "fprop_1x1_256": (lambda: channels_last_conv_graph([2, 32, 16, 16], 256, (1, 1), (1, 1), (0, 0)), 32, None),
    "dgrad_1x1_512": (lambda: _dgrad_graph("b_rows_dgrad", 2, 32, 16, 512), 32, 528),
    "dgrad_1x1_few_rows": (lambda: _dgrad_graph("b_rows_dgrad_few", 1, 32, 8, 512), 32, None),
    "dgrad_1x1_s2_col2im": (lambda: _dgrad_graph("b_rows_col2im", 2, 32, 8, 512, stride=2), 32, 528),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("arch", ["znver4", "x86-64-v3"])
def test_filter_rows_padded_in_the_ir_and_explain(case, arch):
    """The rules take every case's GEMM themselves (``g.explain`` names the padding where the IR has it)."""
    build, depth, padded = CASES[case]
    g = build()
    text = g.mlir("optimized", backend=fs.Backend.CPU, arch=arch)
    explain = g.explain(fs.Backend.CPU, arch)
    assert "compilation_info" in text
    if padded is None:
        assert "%padded = tensor.pad" not in text and "would alias in L1" not in explain
        return
    # The forward filter's transposition or the dgrad's filter as it is, padded.
    assert re.search(r"%padded = tensor.pad %(collapsed|transposed)", text) and "low[0, 0] high[0, 16]" in text
    assert f"tensor<{depth}x{padded - 16}xf32> to tensor<{depth}x{padded}xf32>" in text
    assert _padded_barrier(text, depth, padded)
    assert f"[0, 0] [{depth}, {padded - 16}] [1, 1] : tensor<{depth}x{padded}xf32> to" in text
    assert f"the filter written in rows of {padded} ({padded - 16} would alias in L1)" in explain


@pytest.mark.parametrize("case", sorted(c for c, (_, _, padded) in CASES.items() if padded is not None))
def test_numerics_with_padded_filter_rows(cpu, rng, case):
    """On the host (its own GEMM config; an AVX2 or AVX-512 CPU pads as above)."""
    g = CASES[case][0]()
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "x_dim, kernel, stride, padding, depth, dispatches",
    [
        ([2, 32, 16, 16], (1, 1), (1, 1), (0, 0), 32, 2),  # the transposition, the GEMM
        # The patch gather, the transposition of the [K, R*S*C] filter matrix, the GEMM: transposed as
        # a 4-D filter and then collapsed, the pad was a strided copy of its own (4 dispatches).
        ([1, 64, 16, 16], (3, 3), (2, 2), (1, 1), 576, 3),
    ],
    ids=["1x1", "3x3-s2"],
)
def test_padding_a_transposed_filter_adds_no_dispatch(monkeypatch, x_dim, kernel, stride, padding, depth, dispatches):
    """The pad fuses into the filter's transposition: as many dispatches (compiled for AVX-512, not
    run), the transients larger by the padding's lines (a row of 64 bytes per row of B)."""

    def stats(name: str) -> Artifact:
        # Named apart: the cache key holds the graph, not the tables monkeypatched here.
        g = channels_last_conv_graph(x_dim, 512, kernel, stride, padding, epilogue=True, name=name)
        return Artifact.from_bytes(g.compile_to_artifact(fs.Backend.CPU, "znver4")).stats

    tag = f"{kernel[0]}x{kernel[1]}"
    padded = stats(f"b_rows_padded_{tag}")
    monkeypatch.setattr(gemm_config, "B_ROW_PADDING_ISAS", set())
    plain = stats(f"b_rows_plain_{tag}")
    assert padded.dispatch_count == plain.dispatch_count == dispatches
    assert padded.transient_memory_bytes == plain.transient_memory_bytes + depth * 64


@pytest.mark.parametrize("arch", ["znver4", "znver5", "x86-64-v3", "znver3", "sapphirerapids"])
def test_1x1_convs_with_padded_filter_rows_take_the_gemm_from_49_rows(arch):
    """rules.CPU_CONV_GEMM_MIN_ROWS_1X1_PADDED / _MAX_CHANNELS_1X1_PADDED: where the filter's rows are
    written apart, 1x1 convs of 49 rows and up to 2048 channels take the GEMM on AMD and AVX2 code;
    other widths keep the 512-row limit (stride-1 ones on AMD AVX-512 take it from 49 rows too, and
    on Intel AVX-512 up to 512 output channels), Intel (not measured) its own channel limit."""

    def takes_gemm(x_dim, k) -> bool:
        g = channels_last_conv_graph(x_dim, k, (1, 1), (1, 1), (0, 0), name="b_rows_reach")
        return "cpu-conv-im2col-gemm" in g.explain(fs.Backend.CPU, arch)

    amd_or_avx2 = arch != "sapphirerapids"
    assert takes_gemm([1, 2048, 7, 7], 512) == amd_or_avx2
    assert takes_gemm([1, 512, 7, 7], 2048) == amd_or_avx2
    assert takes_gemm([8, 1024, 7, 7], 1024) == amd_or_avx2
    assert not takes_gemm([1, 4096, 7, 7], 512)  # deeper than measured
    assert not takes_gemm([1, 512, 6, 6], 2048)  # 36 rows
    # 1 KiB rows: the 512-row limit, but on AMD AVX-512 (rules.CPU_CONV_GEMM_1X1_FEW_ROWS_TARGETS),
    # Zen 3 (rules.CPU_CONV_GEMM_1X1_FEW_ROWS_CORES) and Intel AVX-512 up to 512 output channels
    # (rules.CPU_CONV_GEMM_1X1_FEW_ROWS_MAX_OUT_CHANNELS)
    assert takes_gemm([1, 512, 7, 7], 256) == (arch in ("znver4", "znver5", "znver3", "sapphirerapids"))
    assert takes_gemm([2, 256, 16, 16], 256)  # 512 rows
