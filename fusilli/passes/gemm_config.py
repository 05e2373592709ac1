"""CPU lowering configs for the GEMMs fusilli emits, per ISA: the one place that spells IREE's syntax.

IREE 3.13 picks a register tile for an f32 GEMM without data tiling from its
own heuristics (8x8 on AVX2); data tiling + ukernels packs both operands in
dispatches of their own. For the GEMMs fusilli builds itself (the Winograd
batched GEMM) an explicit ``compilation_info`` is measurably faster. The table
below is keyed by ISA; each entry says what it was measured against.

The ISA class comes from the target's CPU features (``rules.vector_isa``).
"""

from __future__ import annotations

from dataclasses import dataclass

from fusilli import ir


@dataclass(frozen=True)
class GemmTile:
    """Tile sizes of a ``[B, M, N, K]`` batched GEMM (B tiled by 1)."""

    distribution: tuple[int, int]  # (M, N) per workgroup
    vector: tuple[int, int]  # (M, N) register tile
    reduction: int  # K per vector step


# Winograd batched GEMM [t*t, tiles, K] x [t*t, C, K], f32, per ISA.
# avx2: 4 rows x two 8-wide FMA vectors; 1.29 ms for 36x784x64x64 against
#   1.8-2.4 ms with IREE's default 8x8 and 4.4 ms data-tiled (winograd-cpu.md, Zen 3).
# avx512: 8 rows x two 16-wide vectors; on the 2-core Zen 4 host, 36x784x64x64 dispatch
#   (iree-benchmark-module, median of 5, loaded machine): IREE's default 3.3 ms, 4x16 2.1,
#   8x16 2.7, 16x16 2.2, 4x32 1.7, 8x32 1.37-1.55, 6x32 1.38, 4x64 2.4.
WINOGRAD_GEMM_TILES = {
    "avx2": GemmTile((112, 64), (4, 16), 8),
    "avx512": GemmTile((112, 64), (8, 32), 8),
}

# The GEMM of a conv lowered as im2col patches x HWCF filter ([N*Ho*Wo, R*S*C] x
# [R*S*C, K]) without data tiling, per ISA (rules.CPU_CONV_IM2COL_GEMM has the measurements).
CONV_GEMM_TILES = {
    "avx2": GemmTile((64, 64), (4, 16), 8),
    "avx512": GemmTile((64, 64), (8, 32), 8),
}


def _compilation_info(tile: GemmTile, batch: int | None, m: int, n: int, k: int) -> ir.Attribute:
    """``[B,] M, N, K`` tile sizes (B tiled by 1) clamped to the problem, as IREE's ``compilation_info``."""
    dm, dn = min(tile.distribution[0], m), min(tile.distribution[1], n)
    vm, vn = min(tile.vector[0], dm), min(tile.vector[1], dn)
    lead = "1, " if batch is not None else ""
    zero = "0, " if batch is not None else ""
    text = (
        "#iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<"
        f"distribution = [{lead}{dm}, {dn}, 0], cache_parallel = [{lead}{dm}, {dn}, 0], "
        f"vector_common_parallel = [{lead}{vm}, {vn}, 0], vector_reduction = [{zero}0, 0, {min(tile.reduction, k)}]>, "
        "translation_info = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>, "
        "{enable_loop_peeling}>>"
    )
    return ir.Attribute.parse(text)


def batch_matmul_compilation_info(isa: str, batch: int, m: int, n: int, k: int) -> ir.Attribute | None:
    """The ``compilation_info`` for an f32 ``linalg.batch_matmul`` on ``isa``, or None for IREE's default."""
    tile = WINOGRAD_GEMM_TILES.get(isa)
    return None if tile is None else _compilation_info(tile, batch, m, n, k)


def matmul_compilation_info(isa: str, m: int, n: int, k: int) -> ir.Attribute | None:
    """The ``compilation_info`` for an f32 conv-as-GEMM ``linalg.matmul`` on ``isa``, or None."""
    tile = CONV_GEMM_TILES.get(isa)
    return None if tile is None else _compilation_info(tile, None, m, n, k)
