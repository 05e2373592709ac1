"""CPU lowering configs for the GEMMs fusilli emits, per ISA: the one place that spells IREE's syntax.

IREE 3.13 picks a register tile for an f32 GEMM without data tiling from its
own heuristics (8x8 on AVX2); data tiling + ukernels packs both operands in
dispatches of their own. For the GEMMs fusilli builds itself (the Winograd
batched GEMM) an explicit ``compilation_info`` is measurably faster. The table
below is keyed by ISA; each entry says what it was measured against.

The ISA comes from the CPU the code is compiled for: ``FUSILLI_CPU_ARCH`` (an
LLVM CPU name, as in API.md "Targets") or the host's features.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from fusilli import ir

# LLVM CPU names -> the vector ISA class fusilli tunes for.
_ISA_BY_CPU = {
    "x86-64-v4": "avx512",
    "skylake-avx512": "avx512",
    "cascadelake": "avx512",
    "icelake-server": "avx512",
    "sapphirerapids": "avx512",
    "znver4": "avx512",
    "znver5": "avx512",
    "x86-64-v3": "avx2",
    "haswell": "avx2",
    "skylake": "avx2",
    "znver2": "avx2",
    "znver3": "avx2",
}


@functools.lru_cache(maxsize=1)
def _host_isa() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        flags = []
    if "avx512f" in flags:
        return "avx512"
    if "avx2" in flags and "fma" in flags:
        return "avx2"
    return "generic"


def cpu_arch() -> str:
    """The LLVM CPU name code is compiled for (``host`` unless FUSILLI_CPU_ARCH says otherwise)."""
    return os.environ.get("FUSILLI_CPU_ARCH", "host")


def cpu_isa(arch: str | None = None) -> str:
    """``avx512``, ``avx2`` or ``generic`` for an LLVM CPU name (``host``: this machine)."""
    arch = arch or cpu_arch()
    return _host_isa() if arch == "host" else _ISA_BY_CPU.get(arch, "generic")


@dataclass(frozen=True)
class GemmTile:
    """Tile sizes of a ``[B, M, N, K]`` batched GEMM (B tiled by 1)."""

    distribution: tuple[int, int]  # (M, N) per workgroup
    vector: tuple[int, int]  # (M, N) register tile
    reduction: int  # K per vector step


# Winograd batched GEMM [t*t, tiles, K] x [t*t, C, K], f32, per ISA.
# avx2: 4 rows x two 8-wide FMA vectors; 1.29 ms for 36x784x64x64 against
#   1.8-2.4 ms with IREE's default 8x8 and 4.4 ms data-tiled (winograd-cpu.md, Zen 3).
# avx512: measured on the Zen 4 host (BENCHMARKS.md): see the module docstring table.
WINOGRAD_GEMM_TILES = {
    "avx2": GemmTile((112, 64), (4, 16), 8),
    "avx512": GemmTile((112, 64), (8, 32), 8),
}


def batch_matmul_compilation_info(isa: str, batch: int, m: int, n: int, k: int) -> ir.Attribute | None:
    """The ``compilation_info`` for an f32 ``linalg.batch_matmul`` on ``isa``, or None for IREE's default."""
    tile = WINOGRAD_GEMM_TILES.get(isa)
    if tile is None:
        return None
    dm, dn = min(tile.distribution[0], m), min(tile.distribution[1], n)
    vm, vn = min(tile.vector[0], dm), min(tile.vector[1], dn)
    text = (
        "#iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<"
        f"distribution = [1, {dm}, {dn}, 0], cache_parallel = [1, {dm}, {dn}, 0], "
        f"vector_common_parallel = [1, {vm}, {vn}, 0], vector_reduction = [0, 0, 0, {min(tile.reduction, k)}]>, "
        "translation_info = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>, "
        "{enable_loop_peeling}>>"
    )
    return ir.Attribute.parse(text)
