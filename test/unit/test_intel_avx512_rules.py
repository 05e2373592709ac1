"""Numerics of the lowerings Intel's AVX-512 cores take by their own rules (compiled for
``sapphirerapids``; skipped on a CPU that cannot run that code), each checked against the
reference, with the rule ``g.explain`` names:

* stride-1 1x1 forward convs of few rows as the explicit-config GEMM
  (rules.CPU_CONV_GEMM_1X1_FEW_ROWS_MAX_OUT_CHANNELS), and 1x1 data gradients of any rows but the
  shallow, wide ones (rules.CPU_CONV_GEMM_1X1_DGRAD_SHALLOW_WIDE_KEPT),
* Winograd F(4x4) with the one-pass filter transform from 32 4x4 tiles
  (rules.CPU_CONV_WINOGRAD_MIN_TILES_ONE_PASS_FILTER_BY_TARGET), forward and data gradient, and
  F(2x2) below that for data gradients as for forward convs (rules.CPU_CONV_WINOGRAD_F2_INTEL_KINDS),
* 3x3 stride-2 convs of many tiles as Winograd over the input's phases
  (rules.CPU_CONV_POLYPHASE_CORE_LIMITS["intel"]), with bias + relu,
* 3x3 stride-2 data gradients by Winograd per DX phase (rules.CPU_CONV_POLYPHASE_EXCLUDED_VENDORS),
* weight gradients as the tuned GEMM (rules.CPU_CONV_WGRAD_GEMM_VENDORS), in chunks of positions,
  over blocks of filter rows (rules.CPU_CONV_WGRAD_ROW_BLOCKS_TARGETS) and over X's phases
  (rules.CPU_CONV_POLYPHASE_EXCLUDED_VENDORS),
* f32 matmuls below data tiling, batched ones and attention's products as GEMMs with AMD's
  AVX-512 tile (rules.CPU_MATMUL_GEMM_CONFIG_TARGETS).
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import (
    arch_running_here,
    channels_last_conv_graph,
    channels_last_dgrad_graph,
    channels_last_wgrad_graph,
    random_array,
    run_and_check,
)

import fusilli as fs

INTEL = "sapphirerapids"


@pytest.fixture(scope="module")
def intel() -> fs.Handle:
    return fs.Handle(fs.Backend.CPU, arch=arch_running_here(INTEL))


def _check(g: fs.Graph, handle: fs.Handle, want: str, rng: np.random.Generator) -> None:
    conv_line = next(line for line in g.explain(fs.Backend.CPU, INTEL).splitlines() if "[conv_" in line)
    assert want in conv_line, conv_line
    inputs = {t: random_array(t, rng) for t in g.input_tensors()}
    run_and_check(g, handle, inputs, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "x_dim, k",
    [
        ([1, 512, 14, 14], 256),  # 196 rows
        ([1, 256, 7, 7], 256),  # 49 rows
        ([1, 192, 13, 11], 96),  # 143 rows: partial register tiles and workgroups
    ],
)
def test_1x1_few_rows_gemm(intel, rng, x_dim, k):
    g = channels_last_conv_graph(x_dim, k, (1, 1), (1, 1), (0, 0), epilogue=True, name=f"intel_1x1_{x_dim[1]}_{k}")
    _check(g, intel, "cpu-conv-im2col-gemm (1x1, ", rng)


def test_winograd_one_pass_filter_from_32_tiles(intel, rng):
    # 8x64x7x7: 32 4x4 tiles (8 images of 2x2)
    g = channels_last_conv_graph([8, 64, 7, 7], 64, (3, 3), (1, 1), (1, 1), epilogue=True, name="intel_wino32")
    _check(g, intel, "cpu-conv-winograd (F(4x4, 3x3), 3x3 stride 1, 28.9 MFLOP >= 16.8 MFLOP, 32 4x4 tiles >= 32", rng)


def test_winograd_one_pass_filter_dgrad_from_32_tiles(intel, rng):
    g = channels_last_dgrad_graph("intel_wino32_dgrad", n=8, c=64, k=64, hw=7).validate()
    _check(g, intel, "32 4x4 tiles >= 32", rng)


def test_polyphase_from_392_tiles(intel, rng):
    # 8x128x28x28 -> 14x14 outputs: 8 * 7 * 7 = 392 2x2 tiles, 128 channels
    g = channels_last_conv_graph([8, 128, 28, 28], 128, (3, 3), (2, 2), (1, 1), epilogue=True, name="intel_poly")
    _check(g, intel, "cpu-conv-winograd-strided (F(2x2, 2x2) over the input's 4 phases", rng)
    # One image fewer (343 tiles) keeps the im2col GEMM.
    fewer = channels_last_conv_graph([7, 128, 28, 28], 128, (3, 3), (2, 2), (1, 1), name="intel_poly_fewer")
    assert "cpu-conv-im2col-gemm (3x3 stride 2" in fewer.explain(fs.Backend.CPU, INTEL)


@pytest.mark.parametrize(
    "n, c, hw, k, kernel, stride, want",
    [
        (1, 96, 20, 80, 1, 1, "cpu-conv-wgrad-gemm (one GEMM over 400 output positions"),
        # DW[64, 256] over 784 positions: fewer rows than columns, AMD's 8x32 (gemm_config.WGRAD_FEW_ROWS_TILES)
        (1, 256, 28, 64, 1, 1, "784 output positions, a 8x32 register tile in 64x64 workgroups for avx512, Intel"),
        (2, 64, 27, 40, 3, 2, "cpu-conv-wgrad-gemm (one GEMM over 392 output positions"),  # patches read padded
        (8, 128, 28, 512, 1, 1, "cpu-conv-wgrad-gemm (one batched GEMM over 28 chunks of 224 output positions"),
        (1, 3, 64, 64, 7, 2, "cpu-conv-wgrad-row-blocks (4 GEMMs"),
        (2, 128, 32, 16, 3, 2, "cpu-conv-wgrad-winograd-strided (F(2x2, 2x2) over X's 4 phases"),
    ],
    ids=["1x1", "1x1-few-rows", "3x3-s2", "chunked", "row-blocks", "polyphase"],
)
def test_weight_gradients(intel, rng, n, c, hw, k, kernel, stride, want):
    # padded by kernel // 2 (channels_last_wgrad_graph)
    name = f"intel_wgrad_{n}_{c}_{hw}_{k}_{kernel}"
    g = channels_last_wgrad_graph(name, n=n, c=c, k=k, hw=hw, kernel=kernel, stride=stride).validate()
    _check(g, intel, want, rng)


@pytest.mark.parametrize(
    "n, c, hw, k, gemm",
    [
        (1, 512, 7, 2048, True),  # 49 rows, 2048 deep
        (1, 2048, 7, 512, True),  # 512 deep, 2048 wide
        (1, 256, 7, 256, True),
        (1, 1024, 14, 256, False),  # 256 deep, 1024 wide: IREE's GEMM (measured faster)
    ],
)
def test_1x1_dgrads(intel, rng, n, c, hw, k, gemm):
    g = channels_last_dgrad_graph(f"intel_dgrad_1x1_{n}_{c}_{hw}_{k}", n=n, c=c, k=k, hw=hw, kernel=1).validate()
    line = next(line for line in g.explain(fs.Backend.CPU, INTEL).splitlines() if "[conv_dgrad]" in line)
    assert ("cpu-conv-im2col-gemm (1x1 dgrad" in line) is gemm, line
    run_and_check(g, intel, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "a_dim, b_dim",
    [
        ([200, 96], [96, 136]),  # partial workgroups and register tiles
        ([12, 197, 64], [12, 64, 197]),  # attention's Q K^T shape
    ],
)
def test_matmul_gemm_config(intel, rng, a_dim, b_dim):
    g = fs.Graph(name=f"intel_mm_{len(a_dim)}_{a_dim[-2]}")
    a = g.tensor(name="a", dim=a_dim)
    b = g.tensor(name="b", dim=b_dim)
    g.matmul(a, b, name="mm").set_output(True).set_name("y")
    g.validate()
    assert "cpu-matmul-gemm-config" in g.explain(fs.Backend.CPU, INTEL)
    assert "compilation_info" in g.mlir("optimized", fs.Backend.CPU, INTEL)
    run_and_check(g, intel, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=1e-4, atol=1e-4)


def test_winograd_f2_dgrad(intel, rng):
    # 1x128x14x14: 16 4x4 tiles (below the one-pass filter's 32 on Intel AVX-512), 49 2x2 ones and a
    # 1 MiB F(2x2) filter: F(2x2, 3x3) (rules.CPU_CONV_WINOGRAD_F2_INTEL_KINDS), as the forward conv.
    g = channels_last_dgrad_graph("intel_wino_f2_dgrad", n=1, c=128, k=128, hw=14).validate()
    _check(g, intel, "cpu-conv-winograd (F(2x2, 3x3), 3x3 stride 1", rng)


def test_polyphase_dgrad(intel, rng):
    # 2x128x16x16 DY -> 2x128x32x32 DX: 2 x 8 x 8 = 128 4x4 DX tiles, F(2x2, 2x2) per DX phase.
    g = channels_last_dgrad_graph("intel_poly_dgrad", n=2, c=128, k=128, hw=32, stride=2).validate()
    _check(g, intel, "cpu-conv-dgrad-winograd-strided (F(2x2, 2x2) per DX phase", rng)
