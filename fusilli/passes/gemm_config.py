"""CPU lowering configs for the GEMMs fusilli emits, per ISA: the one place that spells IREE's syntax.

IREE 3.13 picks a register tile for an f32 GEMM without data tiling from its
own heuristics (8x8 on AVX2); data tiling + ukernels packs both operands in
dispatches of their own. For the GEMMs fusilli builds itself (Winograd's batched
GEMM, the convs' im2col GEMMs, weight gradients, and on AMD's cores the user's
matmuls and attention's products: ``USER_MATMUL_TILES``) an explicit
``compilation_info`` is measurably faster. The tables below are keyed by ISA (and
CPU vendor where measured apart); each entry says what it was measured against.

The ISA class comes from the target's CPU features (``rules.vector_isa``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from fusilli import ir
from fusilli.backend import rules


@dataclass(frozen=True)
class GemmTile:
    """Tile sizes of a ``[B, M, N, K]`` batched GEMM (B tiled by 1)."""

    distribution: tuple[int, int]  # (M, N) per workgroup
    vector: tuple[int, int]  # (M, N) register tile
    reduction: int  # K per vector step
    cache_reduction: int | None = None  # K per cache block (None: the whole K at once) ...
    cache_reduction_min_depth: int = 0  # ... for GEMMs at least this deep
    k_blocks_divide: bool = False  # K blocks that divide K where the rows need it (k_block)
    narrow_k_block: int | None = None  # K per cache block of 2-D GEMMs wide and tall enough (k_block)
    padded_b_whole_k_below: int = 0  # ... but K whole below this depth where B's rows are padded
    conv_whole_k_below: int = 0  # K whole below this depth in forward and dgrad conv GEMMs (matmul_compilation_info)


# Winograd batched GEMM [t*t, tiles, K] x [t*t, C, K], f32, per ISA.
# avx2: 4 rows x two 8-wide FMA vectors; 1.29 ms for 36x784x64x64 against
#   1.8-2.4 ms with IREE's default 8x8 and 4.4 ms data-tiled (winograd-cpu.md, Zen 3).
# avx512: 8 rows x two 16-wide vectors; on the 2-core Zen 4 host, 36x784x64x64 dispatch
#   (iree-benchmark-module, median of 5, loaded machine): IREE's default 3.3 ms, 4x16 2.1,
#   8x16 2.7, 16x16 2.2, 4x32 1.7, 8x32 1.37-1.55, 6x32 1.38, 4x64 2.4.
# Workgroups of 64 rows, not 112: a tile count that is no multiple of 112 (196 for 28x28
# images at batch 4 or 56x56 at batch 1, 392, 128) left a remainder workgroup whose peeled
# code ran slowly. Intel Xeon (sapphirerapids as named), 2 threads, interleaved, ratio to
# PyTorch, 112 -> 64 rows: AVX2 (x86-64-v3, PyTorch held to AVX2) dgrad 4x64x28x28 0.95-1.07 ->
# 1.42-1.51, 3x3 1x64x56x56 0.84 -> 1.31-1.40, 8x128x28x28 1.61-1.62 -> 1.91-1.92, 8x256x14x14
# 1.18-1.20 -> 1.48-1.50, wgrad 8x256x14x14 1.39 -> 1.70, 8x128x28x28 1.69 -> 2.06; 784 tiles
# (7 x 112) and 1568 the same within 3% (1.61-1.62 both, 1.73-1.80 -> 1.70-1.75). AVX-512 with
# the 8x32 tile (the one AMD cores take; measured on the Intel core): dgrad 0.82 -> 1.00,
# 8x256x14x14 1.16 -> 1.31, 8x128x28x28 1.47 -> 1.62, the rest within 3%. AMD cores were not
# re-measured; the 112-row workgroups were chosen there on 784 tiles, where 64 measured equal.
# AVX2 since the sixth session: 6 rows x two 8-wide vectors in 48x64 workgroups (the conv GEMM's
# tile below; 12 accumulators against 4x16's 8), x86-64-v3 code on the Zen 5 VM, PyTorch held to
# AVX2, python benchmarks/conv_lowerings.py, ratio to PyTorch, 4x16 in 64x64 -> 6x16: conv 3x3
# 4x64x56x56->64 1.87 -> 2.12, dgrad 4x64x28x28 2.08 -> 2.32, 3x3 + bias + relu 2.94 -> 3.02, 3x3 s2
# polyphase 4x128x28x28->256 0.89 -> 0.97, 1x128x56x56->128 0.83 -> 1.00, 1x64x56x56->128 0.83 ->
# 0.88; the polyphase GEMM 25x196x128x128 alone (iree-benchmark-module, one thread) 1699 -> 1558
# us (7x16 in 49x64 2288, 8x16 2081). The weight gradient's GEMM (64 rows: a 48-row workgroup
# leaves a 16-row remainder) lost, 2.94 -> 2.09, so it keeps 4x16 (WINOGRAD_WGRAD_GEMM_TILES).
WINOGRAD_GEMM_TILES = {
    "avx2": GemmTile((48, 64), (6, 16), 8),
    "avx512": GemmTile((64, 64), (8, 32), 8),
}
WINOGRAD_WGRAD_GEMM_TILES = {
    "avx2": GemmTile((64, 64), (4, 16), 8),
    "avx512": GemmTile((64, 64), (8, 32), 8),
}
# On Intel AVX-512, Winograd GEMMs of at least WINOGRAD_VENDOR_TILE_MIN_ROWS rows (tiles) take
# the 6x64 register tile (see CONV_GEMM_TILES_BY_VENDOR) in 60x64 workgroups. First Intel host,
# 2 threads, interleaved against 8x32 in 112x64 (the table's entry then), ratio to PyTorch, two
# runs: conv 3x3 4x64x56x56->64 1.50 -> 1.57-1.59, dgrad 4x64x28x28 1.05-1.07 -> 1.35-1.37, 3x3
# 1x64x56x56->64 0.88 -> 1.16-1.23, 3x3 8x128x28x28->128 1.46-1.48 -> 1.56-1.61 (4x64 in 64x64
# measured the same). Second Intel host (sapphirerapids as named), 6x64 in 60x64 against 8x32
# in 64x64 (the table's entry now), two runs: ahead on GEMMs of many rows (784 tiles: conv 3x3
# 4x64x56x56 1.31-1.34 -> 1.33-1.35; 1568: 8x64x56x56 1.44-1.50 -> 1.56-1.60), behind on fewer,
# where a 60-row workgroup leaves a large remainder (128 tiles: 8x256x14x14 1.31-1.33 ->
# 1.05-1.10; 392: 8x128x28x28 1.62-1.63 -> 1.51-1.53; 196: dgrad 4x64x28x28, 3x3 1x64x56x56
# within 0.05 either way). Hence 6x64 from 512 rows, the ISA's table below. The weight
# gradient's GEMM (a row per output channel) takes the ISA's table: measured there as the
# best of IREE's default, 6x64 in 60x64 and 8x32 in 64x64 (4x64x28x28 0.86 -> 0.89-0.91 ->
# 0.93, 8x128x28x28 1.25 -> 1.19-1.27 -> 1.37, 8x256x14x14 0.80 -> 0.87-0.89 -> 0.88).
# AMD's AVX2 cores take 4 rows x two 8-wide vectors in 64x64 workgroups (the tile chosen on Zen 3
# in winograd-cpu.md, and the weight gradient's) from any rows: on Zen 1, whose 256-bit FMAs
# issue as two 128-bit halves, 8 accumulators keep the FMA pipes as busy as 12 and leave
# registers free. EPYC Zen 1 VM (znver1), in one process, interleaved, ratio to PyTorch, two runs,
# 6x16 in 48x64 -> 4x16 in 64x64: polyphase 3x3 s2 + bias + relu 4x128x28x28->256 0.93 -> 1.00,
# 0.88 -> 0.96; 3x3 s2 1x128x56x56->128 0.87 -> 0.96, 1.06 -> 1.19; conv 3x3 4x64x56x56->64 1.64
# -> 1.72, 1.69 -> 1.88; dgrad 4x64x28x28 1.91 -> 2.09, 2.19 -> 2.18; 3x3 1x64x56x56->64 1.77 ->
# 2.01, 1.93 -> 2.19; F(2x2) 1x256x14x14->256 0.95 -> 1.13, 1.17 -> 1.50; 8x128x28x28->128 1.98 ->
# 2.11, 2.06 -> 2.26; 8x256x14x14->256 1.48 -> 1.74, 1.63 -> 1.82. 2x32 measured within 0.1 of
# 4x16 (ahead on two rows of eight, behind on five), 3x24 lost (0.52-1.23), and in one run of
# the stride-2 rows 8x8 0.83-0.84, 4x16 in 32x64 or 64x128 0.93-0.97, 6x16 in 48x64 with K in
# blocks of 64 0.68-0.87. A 512-deep GEMM ran even (8x512x7x7->512, 32 tiles, two runs: 1.18 ->
# 1.15, 1.16 -> 1.15; its dgrad 1.21 -> 1.18, 1.20 -> 1.18; 4x16 in 48x64 with K in blocks of 128
# 1.14).
WINOGRAD_GEMM_TILES_BY_VENDOR = {
    ("avx512", "intel"): GemmTile((60, 64), (6, 64), 8),
    ("avx2", "amd"): GemmTile((64, 64), (4, 16), 8),
}
WINOGRAD_VENDOR_TILE_MIN_ROWS = {("avx512", "intel"): 512}  # other entries: from any rows
# Per core (ISA, LLVM CPU name), ahead of the vendor's entry: (from this many rows, from this
# depth, tile). Zen 5 (whose 512-bit FMAs are full width; Zen 4 issues each as two 256-bit halves)
# takes Intel's 6x64 in 60x64 from 384 rows 128 deep: 24 accumulators against 8x32's 16, a B panel
# of four 16-wide vectors per six row broadcasts. Zen 5 VM (znver5), the polyphase GEMM
# 25x1568x128x128 alone, one thread (iree local-sync, interleaved, two runs): 8x32 in 64x64 144,
# 120 GFLOP/s -> 6x64 in 60x64 178, 155 (in 120x64 180, 156; 30x64 178, 158; 5x64 183, 154; 60x128
# 141, 117; 8x32 with K steps of 16 165, 118). Whole graphs, in one process, interleaved, ratio to
# PyTorch, 8x32 -> 6x64: C = 128 gains: polyphase 3x3 s2 8x128x56x56->128 (1568 tiles) 0.69 ->
# 0.81, 0.70 -> 0.86, its dgrad 0.79 -> 0.95; 4x128x56x56->128 (784) 0.73 -> 0.89, its dgrad 0.87
# -> 0.98; F(4x4) 16x128x28x28->128 (784) 1.57 -> 1.88, 4x128x56x56->128 1.53 -> 1.70; even at 392
# tiles (8x128x28x28->128 2.35 -> 2.32, 1.77 -> 1.80; polyphase 8x128x28x28->256 0.73 -> 0.84,
# 0.76 -> 0.78) and for 256 output channels (8x128x56x56->256 0.80 -> 0.80). 64 deep it lost or
# ran even: polyphase 8x64x56x56->128 0.82 -> 0.65, F(4x4) 8x64x56x56->64 1.83 -> 1.79, 1.39 ->
# 1.30, 4x64x56x56->64 2.10 -> 1.90, 1.70 -> 1.69; 96 and 256 deep even (8x96x28x28 1.48 -> 1.45,
# 8x256x28x28 2.11 -> 2.22, 4x256x56x56 2.02 -> 1.94, polyphase 4x256x56x56->256 0.90 -> 0.94).
# Below 384 rows it lost: 8x256x14x14->256 (128 tiles) 1.53 -> 1.31. On a Zen 4 VM (the eleventh
# session, BENCHMARKS.md) 6x64 in 60x64 ran the polyphase GEMMs no faster than 8x32 (the dgrad
# 14.6 against 13.7 ms), so znver4 keeps 8x32.
WINOGRAD_GEMM_TILES_BY_CORE = {("avx512", "znver5"): (384, 128, GemmTile((60, 64), (6, 64), 8))}

# The GEMM of a conv lowered as im2col patches x HWCF filter ([N*Ho*Wo, R*S*C] x
# [R*S*C, K]) without data tiling, per ISA (rules.CPU_CONV_IM2COL_GEMM has the measurements).
# avx512 on Intel: K in cache blocks of 256, so a deep GEMM keeps its 64-row A block and
#   64-column B block in L2 (and an 8x32 register tile's B strip in L1) instead of streaming
#   both whole. One thread, Intel Xeon, ms (PyTorch one thread beside): 3x3 1x256x14x14->256
#   (K 2304) 4.41 -> 2.52 (1.80-2.08), 3x3 1x512x7x7->512 (K 4608) 4.89 -> 3.50 (2.59-2.66),
#   8x512x7x7 29.8 -> 20.0 (14.8-15.5), 1x1 8x1024x14x14->256 7.87 -> 5.93 (6.07-7.41), 1x1 as a
#   1024^3 GEMM 53 -> 31 (16.2); blocks of 128 and 512 measured the same. 2 threads, the same
#   graph compiled both ways and run interleaved (benchmarks/conv_gemm_tiles.py),
#   ratio to PyTorch, whole K -> blocks: 3x3 1x512x7x7 0.46 -> 0.65, 8x512x7x7 0.37 -> 0.69, 1x1
#   1024^3 0.46 -> 0.66, 1x1 8x1024x14x14->512 0.50 -> 0.76, 1x1 + bias + relu 512x512->2048 (K 512)
#   0.57 -> 0.88; other rows moved within the A/B's noise (+-10%, seen on a K 256 row that both
#   variants compile alike), hence blocks from K 512. With K blocks IREE leaves the
#   accumulator's zero fill as one vector of the whole workgroup tile: AVX2 codegen refuses
#   16 KB (64x64), AVX-512 32 KB (the 64x64 distribution tile is the largest that compiles).
# avx2: 6 rows x two 8-wide vectors (12 accumulators: two FMA pipes of latency 4 need at least
#   8 in flight, which 4x16 only just has) in 48x64 workgroups (a 12 KB fill, so K blocks of
#   256 from depth 512 compile). x86-64-v3 code on the Intel Xeon (sapphirerapids as named),
#   PyTorch held to AVX2, 2 threads, benchmarks/conv_gemm_tiles.py, two runs, 4x16 in 64x64
#   whole-K -> this: 1x1 4x256x28x28->128 0.81-0.84 -> 0.87-0.94, 1x1 8x64x56x56->64 0.90-0.94 ->
#   1.01-1.03, 7x7 s2 stem 0.76-0.77 -> 0.84-0.85, 1x1 + bias + relu 512x512->2048 0.36 ->
#   0.60-0.66, 1x1 8x256x14x14->1024 0.76-0.79 -> 0.85-0.88; rows on data tiling unchanged.
#   6x16 in 96x64 and without K blocks measured between the two. AMD AVX2 cores keep the tile
#   and take narrower K blocks in wide GEMMs (``narrow_k_block``, see NARROW_K_BLOCK_MIN_COLUMNS).
#   Zen 1 (znver1), one thread, 1x1 s2 1x256x56x56->512 (784x512x256), ms: whole K, 48x64 8.2,
#   48x128 7.4, 24x64 7.9, 96x64 8.5, 48x32 8.4; K in blocks of 64, 48x64 6.6-6.8, 24x128 6.8,
#   60x64 6.8 (the register tiles there: below).
# AVX2 code for no named CPU (x86-64-v3, and Intel's AVX2 cores) takes K whole in forward and dgrad
#   conv GEMMs below CONV_WHOLE_K_BELOW deep (1x1 convs of 512 and 1024 channels), since conv
#   filters are written with padded rows (padded_b_columns, the twenty-first session): its 6x16 tile
#   then streams a 48x64 workgroup's B panel (at most 1024 x 64 f32, 256 KB) from L2 once instead
#   of K/256 blocks each reloading A. x86-64-v3 code on the AMD Zen 4 VM (znver4), PyTorch held to
#   AVX2, the two compiled in one process and run interleaved with PyTorch (benchmarks/table_ab.py),
#   ratio to PyTorch, K blocks of 256 -> whole K, three runs: 1x1 1x512x28x28->128 0.85, 0.77, 0.89
#   -> 0.91, 0.86, 0.96; 1x512x28x28->256 0.89, 0.88, 0.58 -> 0.94, 0.92, 0.94; 1x1024x14x14->512
#   0.74, 0.74, 0.76 -> 0.82, 0.80, 0.80; s2 1x512x28x28->1024 0.78, 0.83, 0.63 -> 0.86, 0.85, 0.76;
#   8x512x28x28->256 0.85, 0.92, 0.84 -> 0.92, 0.99, 0.84; s2 8x512x28x28->1024 0.82, 0.81, 0.78 ->
#   0.95, 0.95, 0.96; 8x1024x14x14->512 0.86, 0.69, 0.93 -> 0.96, 1.01, 0.88; 8x512x7x7->2048 0.91,
#   0.94, 0.83 -> 1.06, 1.11, 0.96; s2 1x1024x14x14->2048 1.22, 0.93, 1.04 -> 1.14, 1.02, 1.09; dgrad
#   1x1 1x2048x7x7->512 (512 deep, one run) 1.13 -> 1.22; one thread (local-sync, PyTorch on one
#   thread), the graphs' ms: 1x1024x14x14->512 2.38 -> 2.14, 8x512x28x28->256 18.2 -> 16.7, s2
#   1x512x28x28->1024 2.42 -> 2.15, 1x512x28x28->128 0.98 -> 0.92. From 2048 deep K blocks stayed
#   ahead (3x3 s2 8x512x14x14->512, 4608 deep, 0.78 -> 0.67; 3x3 1x512x7x7 1.24 -> 1.17;
#   1x2048x7x7->512 1.22 -> 1.17), hence the limit. The sixth session's Intel measurement (6x16 in
#   96x64 whole K between 4x16 whole K and this tile's K blocks, Sapphire Rapids) predates padded
#   filter rows and was not repeated. Weight gradients keep their blocks (not measured).
CONV_WHOLE_K_BELOW = 2048
CONV_GEMM_TILES = {
    "avx2": GemmTile(
        (48, 64), (6, 16), 8, cache_reduction=256, cache_reduction_min_depth=512, conv_whole_k_below=CONV_WHOLE_K_BELOW
    ),
    "avx512": GemmTile((64, 64), (8, 32), 8),
}
# Per (ISA, CPU vendor) where measured different. AMD AVX-512 keeps the table's 8x32 in 64x64
# and takes K in cache blocks of 256 from depth 512: Zen 5 VM (znver5), 2 threads,
# benchmarks/conv_gemm_tiles.py, whole K -> blocks, ratio to PyTorch: 3x3 s2 + bias + relu
# 4x128x28x28->256 (1152 deep) 0.58 -> 0.76 (a second run, as an explicit GEMM: 1.74 -> 1.41
# ms), 3x3 s2 1x128x56x56 0.61 -> 0.62, 8x128x56x56 0.74 -> 0.70, 1x1 512-deep rows within
# +-0.04 (1x1 + bias + relu 512x512->2048, 8x512x7x7->2048, 8x512x28x28->128); K blocks of 128
# or 512 measured the same as 256. Intel AVX-512 measured its own register tile: 6 rows x 64 columns (24 accumulators, four 16-wide B loads
# and six broadcasts per step; oneDNN's shape) in 60x64 workgroups against 8x32 in 64x64, 2
# threads, benchmarks/conv_gemm_tiles.py --variant 6x64=60,64,6,64,8,256,512, two runs: better on
# 12 and 11 of its 15 rows (1x1 as a 1024^3 GEMM 0.59-0.61 -> 0.64-0.78 of PyTorch, 1x1
# 8x256x14x14->1024 0.59-0.78 -> 0.82-0.93, 1x1 8x1024x14x14->256 0.74-0.79 -> 0.82-0.93, 3x3
# 8x512x7x7 0.66-0.76 -> 0.73-0.81), worse on the 3x3 stride-2 convs by ~5% (0.76-0.78 -> 0.72-0.73).
# K blocks (of 256 from depth 512, of 64 in wide GEMMs: NARROW_K_BLOCK_MIN_COLUMNS) were chosen on
# Zen 1 before conv GEMMs wrote their B with padded rows (padded_b_columns): they kept a B that
# aliased in L1 in blocks L1 could hold. Where B's rows are padded, AMD's AVX2 cores take K whole
# below PADDED_B_WHOLE_K_BELOW (a 48-row A block and a 64-column B panel, (48 + 64) x K f32, within
# Zen 1's 512 KB L2). EPYC Zen 1 VM (znver1), python benchmarks/table_ab.py (old and new tables
# compiled in one process, run interleaved with PyTorch), ratio to PyTorch, two runs, blocks of 64 ->
# whole K: 1x1 s2 1x256x56x56->512 (784x512x256) 0.90 -> 0.98, 0.86 -> 0.98; 1x128x28x28->512 1.38 ->
# 1.51, 0.84 -> 1.00; 1x256x14x14->1024 0.92 -> 1.04, 0.87 -> 0.98; 8x128x28x28->512 1.00 -> 1.17,
# 0.85 -> 1.11; 8x256x14x14->1024 0.85 -> 0.96, 0.90 -> 0.98; s2 8x512x28x28->1024 (1568x1024x512)
# 0.95 -> 1.13, 0.66 -> 0.84; 8x512x7x7->2048 0.60 -> 0.76, 0.64 -> 0.79; dgrad 1x1 1x1024x14x14->256
# 1.02 -> 1.16, 1.03 -> 1.15; 8x1024x14x14->256 1.23 -> 1.36, 1.22 -> 1.40 (rows compiled alike moved
# up to 0.98 / 1.25 in a run). From 1024 deep whole K was mixed or lost (one run: 8x1024x14x14->512
# 0.74 -> 0.85, ->256 0.87 -> 0.83, s2 8x1024x14x14->2048 0.67 -> 0.55, 8x2048x7x7->512 0.70 ->
# 0.61). Zen 2 takes it with the vendor's tile, not measured; Zen 3 takes K whole below 1024 deep
# whatever B's rows (next).
PADDED_B_WHOLE_K_BELOW = 1024
# Per core (ISA, LLVM CPU name): forward and data-gradient conv GEMMs of more than one row block take K
# whole below this depth whatever B's rows (the tile's ``conv_whole_k_below``), ahead of the vendor's
# narrow blocks. Zen 3 (full-width 256-bit FMAs, Zen 1's 32 KB L1 and 512 KB L2) ran 512-deep GEMMs with
# an unpadded B (128 or 256 columns: rows of 512 B or 1 KiB) faster whole than in Zen 1's blocks of 64.
# EPYC Zen 3 VM (znver3), python benchmarks/table_ab.py (both compiled in one process, run interleaved
# with PyTorch), ratio to PyTorch, blocks of 64 -> whole K, three runs on two threads and one on one
# (FUSILLI_CPU_EXECUTOR=local-sync OMP_NUM_THREADS=1): 1x1 1x512x28x28->128 0.89, 0.88, 0.93 -> 0.95,
# 0.96, 0.96 (one thread 0.93 -> 1.11); 1x512x28x28->256 0.88, 0.79, 0.88 -> 0.99, 0.95, 0.61 (0.85 ->
# 0.92); 8x512x28x28->128 1.18, 0.90, 0.91 -> 1.11, 1.07, 1.07 (0.95 -> 1.11); 8x512x28x28->256 0.82,
# 0.84, 0.94 -> 0.94, 0.99, 0.91 (0.83 -> 1.10); the col2im GEMM of dgrad 1x1 s2 1x256x56x56->512 3.05,
# 2.35, 2.62 -> 2.98, 2.60, 2.67. One row block keeps the narrow blocks, as Zen 1 measured it (above):
# dgrad 1x1 1x2048x7x7->512 (49 rows) 1.13, 0.92, 0.96, 1.04, 0.96, 0.98 -> 1.04, 1.01, 0.95, 1.03, 0.94,
# 0.90 (behind in four of six). From 1024 deep the blocks of 64 stayed ahead of whole K and of blocks of
# 256 (AVX2 code for no named CPU, CONV_WHOLE_K_BELOW; one run each on two threads and one) on the
# strided 1x1 rows: s2 1x1024x14x14->2048 1.29 -> 1.18 / 1.29, one thread 1.28 -> 1.06 / 1.21; s2
# 8x1024x14x14->2048 0.97 -> 0.82 / 0.93, one thread 1.03 -> 0.87 / 0.92; 1x2048x7x7->512 (one row block)
# moved either way (1.13 -> 1.24 / 1.22, one thread 0.92 -> 0.88 / 0.94). Zen 2 (the same caches and FMA width as Zen 3) keeps Zen 1's blocks: not measured.
CONV_WHOLE_K_BELOW_BY_CORE = {("avx2", "znver3"): 1024}
# ... and the GEMMs of strided convs' patch matrices (3x3 stride 2, 1152-4608 deep) take the tile's blocks
# of 256 there instead of the narrow ones. EPYC Zen 3 VM, in one process, ratio to PyTorch, blocks of 64
# -> 256 (python benchmarks/table_ab.py, the AMD tile without ``narrow_k_block``), two runs on two threads
# and one on one, and one earlier run of each (AVX2 code for no named CPU's tile): 3x3 s2 1x256x28x28->256
# 0.83, 0.81, 0.81 -> 0.87, 0.85, 0.91 (one thread 0.85 -> 0.89, 0.86 -> 0.95); 1x512x14x14->512 0.95,
# 1.33, 0.89 -> 1.04, 1.32, 1.07 (1.01 -> 1.02, 0.94 -> 0.95); 8x512x14x14->512 1.13, 0.86, 0.90 -> 1.10,
# 0.91, 0.96 (0.88 -> 0.92, 0.89 -> 0.91); two more runs, this rule against the blocks of 64: 3x3 s2
# 2x128x28x28->256 (benchmarks/conv_strided.txt, 1152 deep) 0.80 -> 0.85, 1.00 -> 1.06, 1x256x28x28->256
# 0.82 -> 0.83, 0.85 -> 0.92. Stride-1 GEMMs that deep (the batch-1 7x7 maps' 3x3, 49 rows x 4608) moved
# either way (forward 0.86 -> 0.96, 1.20 -> 1.22, one thread 1.04 / 1.04; dgrad 1.21 -> 1.12, 0.89 ->
# 0.97, one thread 1.11 -> 0.99) and keep Zen 1's.
STRIDED_PATCH_TABLE_K_BLOCK_CORES = {("avx2", "znver3")}
CONV_GEMM_TILES_BY_VENDOR = {
    ("avx2", "amd"): GemmTile(
        (48, 64),
        (6, 16),
        8,
        cache_reduction=256,
        cache_reduction_min_depth=512,
        narrow_k_block=64,
        padded_b_whole_k_below=PADDED_B_WHOLE_K_BELOW,
    ),
    ("avx512", "intel"): GemmTile((60, 64), (6, 64), 8, cache_reduction=256, cache_reduction_min_depth=512),
    ("avx512", "amd"): GemmTile(
        (64, 64), (8, 32), 8, cache_reduction=256, cache_reduction_min_depth=512, k_blocks_divide=True
    ),
}


# Strided convs with a spatial filter have a patch matrix A of [N*Ho*Wo, R*S*C] (its gather is a
# dispatch of its own: wrapping it in an optimization barrier changed nothing), which every
# column of workgroups reads again: a workgroup covering more output channels reads A fewer
# times (a quarter as often for 256 channels). Intel AVX-512 (sapphirerapids as named), 2
# threads, benchmarks/conv_gemm_tiles.py, 60x64 -> 24x256 workgroups (same 6x64 register tile
# and K blocks), ratio to PyTorch, two runs: 3x3 s2 1x128x56x56->128 0.47-0.48 -> 0.60-0.64,
# 3x3 s2 + bias + relu 4x128x28x28->256 0.62-0.64 -> 0.76-0.80, 3x3 s2 8x128x56x56->128 0.60-0.63
# -> 0.71-0.73; 12x256 and 30x128 measured the same or lower, 48x256 does not compile (a 48 KB
# accumulator vector). Stride-1 GEMMs this deep lost with wide workgroups (fewer of them for
# their few rows: 3x3 1x512x7x7 0.61 -> 0.48, 8x512x7x7 0.63 -> 0.61), 1x1 ones (A is C deep)
# moved within noise (1x1 s2 1x256x56x56->512 0.67-0.72 -> 0.69) or lost (1x1 1024^3 0.63 ->
# 0.53), so they keep the table above; so do convs with fewer output channels than
# rules.CPU_CONV_GEMM_WIDE_MIN_OUT_CHANNELS, where the wide workgroup would only be shorter.
# cpu-conv-im2col-gemm takes such convs from fewer rows on Intel AVX-512.
STRIDED_PATCH_GEMM_TILES_BY_VENDOR = {
    ("avx512", "intel"): GemmTile((24, 256), (6, 64), 8, cache_reduction=256, cache_reduction_min_depth=512),
}


# Stride-1 conv GEMMs as deep as rules.CPU_CONV_GEMM_MIN_DEPTH_AVX512 (3x3 convs on 7x7
# maps, which Winograd leaves) have few rows and a B of R*S*C x K (9.4 MB for 512 channels) that
# every row of workgroups reads again. On Intel AVX-512 their workgroups take the rows in equal
# blocks of at most DEEP_GEMM_MAX_ROWS (IREE's vector-size limit, 32 KB, caps a 64-column
# accumulator at 127 rows). Intel AVX-512 (sapphirerapids as named), 2 threads,
# benchmarks/conv_gemm_tiles.py, ratio to PyTorch, three runs: 3x3 8x512x7x7->512 (392 rows)
# 60x64 0.61-0.63 -> 98x64 0.73-0.76; 102x64 0.73, 120x64 0.66, 96x64 0.65 (uneven blocks),
# 196x32 0.70, 49x128 0.72, 56x128 0.67; 1x512x7x7 (49 rows) is one block either way (0.56-0.61).
# Shallower GEMMs did not gain (3x3 s2 8x128x56x56 0.70 -> 0.61, 1x1 8x1024x14x14 0.81 -> 0.86
# within noise), so they keep their table's tile. AMD AVX-512 (the 8x32 tile, K blocks of 256)
# gains as much: Zen 4 VM (znver4), 2 threads, benchmarks/conv_gemm_tiles.py, table (64-row
# blocks, a short last one) -> equal blocks, ratio to PyTorch, four runs: 3x3 2x256x7x7 (98 rows,
# 2304 deep) 0.56-0.79 -> 0.75-0.85, 3x3 2x512x7x7 (98, 4608) 0.75-0.82 -> 0.87-0.97; two runs: 5x5
# 1x128x28x28->128 (784, 3200) 0.59-0.71 -> 0.79-0.89; one run: 3x3 3x512x7x7 (147, 4608) 0.47 ->
# 0.44 (two blocks of 74, within noise).
# AVX2 code (the 6x16 tile in 48x64, K blocks of 256) loses most where the table's 48 rows
# leave a last block of one: 3x3 1x512x7x7 dgrad (49 rows, 4608 deep, cpu-conv-dgrad-flipped-gemm)
# is 48 + 1, and the 8 one-row workgroups ran at a fraction of the others' speed. AVX2 codegen
# refuses a 64x64 accumulator fill (16 KB), so its blocks are at most 60 rows. x86-64-v3 code on
# the Zen 4 VM (znver4), PyTorch held to AVX2, in one process, ratio to PyTorch, table ->
# equal blocks: dgrad 1x512x7x7 0.62 -> 1.14 (0.67 -> 1.08-1.09 with 49- or 54-row blocks as
# benchmarks/conv_gemm_tiles.py variants); 2x512x7x7 (two blocks of 49) 0.98 -> 0.97, 2x256x7x7
# 0.82 -> 0.86, within noise. Forward convs this deep stayed on data tiling on AVX2 until the
# twenty-fifth session (rules.CPU_CONV_IM2COL_GEMM); forced to the GEMM they gained as well (1x512x7x7
# 0.40 -> 0.69), and take it since.
# AMD AVX2 code (znver3 and older as named) takes the same tile and rule, not measured as such.
DEEP_GEMM_MAX_ROWS = {"avx512": 100, "avx2": 60}
DEEP_GEMM_VENDORS = {("avx512", "intel"), ("avx512", "amd"), ("avx2", "amd"), ("avx2", "")}
# Shallower AVX2 conv GEMMs with one row block and a remainder shorter than the register tile
# take their rows in one block too: ResNet-50's 1x1 dgrads on 7x7 maps (49 rows, 512 or 2048
# deep) were 48 + 1. x86-64-v3 code on the Zen 4 VM, in one process, ms (ratio to PyTorch held
# to AVX2), two runs, 48 + 1 -> 49: 1x512x7x7->2048 2.15 -> 1.69 (1.47 -> 1.87), 1.69 -> 1.11
# (1.20 -> 1.82); 1x2048x7x7->512 1.66 -> 1.24 (1.12 -> 1.50), 1.50 -> 1.29 (1.06 -> 1.22). With
# several blocks, equal ones lost a little (1x1024x14x14->256, 196 rows, 4 x 48 + 4 -> 4 x 49:
# 1.63 -> 1.72, 1.23 -> 1.32 ms), so only the one-block case changes.
ONE_BLOCK_SHORT_REMAINDER_ISAS = {"avx2"}


def deep_gemm_rows(rows: int, isa: str = "avx512") -> int:
    """Workgroup rows of a deep conv GEMM on ``isa``: ``rows`` in equal blocks of at most
    ``DEEP_GEMM_MAX_ROWS[isa]``."""
    return math.ceil(rows / math.ceil(rows / DEEP_GEMM_MAX_ROWS[isa]))


# AMD's AVX2 cores (znver1-3 as named) take K in blocks of 64 (``narrow_k_block``) in 2-D conv
# GEMMs of at least two row blocks or of one (see below), NARROW_K_BLOCK_MIN_COLUMNS columns and a B operand (K x N)
# of more than NARROW_K_BLOCK_MIN_B_BYTES, K a multiple of the register tile's K step (Zen 3 not below
# 1024 deep with more than one row block, nor over a strided patch matrix: see above). On Zen 1
# (32 KB L1D, 512 KB L2, 256-bit FMAs issued as two 128-bit halves) a workgroup's B block of
# 256 x 64 f32 is 64 KB, twice the L1, read again for each 6-row register step; in blocks of 64
# it is 16 KB. One thread (FUSILLI_CPU_EXECUTOR=local-sync, PyTorch on one thread beside),
# 1x1 s2 1x256x56x56->512 (784x512x256): whole K 8.1-9.1 ms, blocks of 128 7.1-7.5, of 64
# 6.6-6.8, of 32 6.9 (PyTorch 5.9-6.1); with blocks of 64 the register tiles 4x16 7.1, 8x8 8.1,
# 3x32 7.9 ms. Two threads, EPYC Zen 1 VM (znver1), the two forms compiled in one process and run
# interleaved with PyTorch (benchmarks/conv_lowerings.py-style A/B), ratio to PyTorch, two runs,
# table -> blocks of 64: 1x1 s2 1x256x56x56->512 0.74 -> 0.89, 0.70 -> 0.83 (three more runs:
# 0.96 -> 1.03, 0.74 -> 0.85, 0.80 -> 0.98); 1x1 8x1024x14x14->256 0.89 -> 0.88, 0.67 -> 0.87;
# dgrad 1x1 1x1024x14x14->256 0.75 -> 0.94, 0.80 -> 1.02; 8x1024x14x14->256 0.74 -> 0.98, 0.58 ->
# 0.96; wgrad 1x1 1x512x28x28->128 0.81 -> 1.01, 0.68 -> 0.81; 1x128x28x28->512 0.77 -> 0.93, 0.67
# -> 0.87; 1x1 s2 1x256x56x56->512 0.78 -> 0.99, 0.77 -> 0.95; 8x1024x14x14->256 0.57 -> 0.69, 0.55
# -> 0.62; 3x3 8x512x7x7 0.90 -> 1.03, 0.83 -> 1.06; dgrad 1x1 s2 1x256x56x56->512 2.11 -> 2.00,
# 2.04 -> 1.97 (within noise). Where they lost, hence the limits: a B of 128 KB (the suite's 1x1
# 4x256x28x28->128, halves of 1568x128x256: 0.85 -> 0.83, 1.08 -> 0.95, 1.21 -> 1.05), 64 columns
# (1x1 1x256x56x56->64: 1.06 -> 0.96, 1.10 -> 0.87, 1.06 -> 0.90), K no multiple of 8 (wgrad 3x3
# 1x256x14x14, 196 positions: 1.74 -> 1.45, 1.76 -> 1.49), one row block (the 49-row dgrads
# 1x2048x7x7->512 0.99 -> 0.79, 1x512x7x7->2048 1.13 -> 0.97) and the chunked weight gradients'
# batched GEMMs (8x512x28x28->128 0.78 -> 0.62, 8x128x28x28->512 0.73 -> 0.58, 1x1 s2
# 8x256x56x56->512 0.75 -> 0.59). Zen 2 (the same L1 and L2, full-width FMAs) was not measured (Zen 3
# was: CONV_WHOLE_K_BELOW_BY_CORE, STRIDED_PATCH_TABLE_K_BLOCK_CORES); AVX2 code for no named CPU (x86-64-v3) keeps the table's blocks. One row block (rows
# short of the tile's rows plus a register tile: ResNet-50's batch-1 7x7 data gradients, 49 rows):
# the fourteenth session measured it again, the two compiled in one process (K blocks of 256 ->
# 64, nothing else different) and run interleaved with PyTorch, three runs, ratio to PyTorch: dgrad
# 3x3 1x512x7x7 0.85 -> 1.00, 0.84 -> 0.99, 0.82 -> 0.94; 1x1 1x512x7x7->2048 1.33 -> 1.52, 1.31 ->
# 1.60, 1.15 -> 1.30; 1x2048x7x7->512 1.03 -> 1.37, 1.02 -> 1.33, 0.94 -> 1.13; 1x1024x7x7->256 1.12
# -> 1.49, 1.12 -> 1.20 (a second form of the run), 1.20 -> 1.61; 3x3 1x256x7x7->256 1.23 -> 1.18,
# 1.22 -> 1.18, 1.13 -> 1.14 (even); one thread (local-sync) ms: 11.5 -> 10.0, 4.51 -> 3.85, 5.13 ->
# 4.14, 1.27 -> 0.93, 2.02 -> 1.90. That contradicts the thirteenth session's one run above (0.99 ->
# 0.79, 1.13 -> 0.97); the later, repeated measurement with a one-thread check is the rule's.
# (Measured on those dgrads; a weight gradient with as few output channels takes it too, unmeasured.)
NARROW_K_BLOCK_MIN_COLUMNS = 128
NARROW_K_BLOCK_MIN_B_BYTES = 128 << 10
# Only GEMMs whose depth is a multiple of 8 (the K step of every tile the rule was measured with)
# take the narrow blocks, whatever a core's own K step (WGRAD_VECTOR_REDUCTION_BY_CORE): a remainder
# of K that is no whole step runs as masked code. Zen 3, the weight gradient 3x3 1x256x14x14's
# GEMM (256 x 2304 over 196 positions) in K steps of 1 took blocks of 64 and their 4-deep remainder:
# 3285 and 3270 us in K steps of 8 and whole K -> 4315 and 4350 (dispatch_profile, one thread).
NARROW_K_BLOCK_DEPTH_MULTIPLE = 8


def narrow_k_blocks_apply(tile: GemmTile, m: int, n: int, k: int) -> bool:
    """Whether a 2-D ``m`` x ``n`` GEMM ``k`` deep takes ``tile.narrow_k_block`` (see above)."""
    narrow = tile.narrow_k_block
    if narrow is None or k < 2 * narrow or k % NARROW_K_BLOCK_DEPTH_MULTIPLE:
        return False
    rows, vector_rows = tile.distribution[0], tile.vector[0]
    row_blocks_measured = m >= 2 * rows or m < rows + vector_rows  # two or more, or one (not 1 + a remainder)
    return row_blocks_measured and n >= NARROW_K_BLOCK_MIN_COLUMNS and 4 * k * n > NARROW_K_BLOCK_MIN_B_BYTES


# A K block that leaves a remainder of K, together with a last row of workgroups shorter than
# the others by a count that is no multiple of the register tile's rows, runs that remainder
# at a fraction of the speed: IREE 3.13, AVX-512 8x32 register tile in 64x64 workgroups, K in
# blocks of 256, one GEMM dispatch alone (iree-benchmark-module local-sync, Zen 5 VM, GFLOP/s):
# 196x256x1152 73, 98x512x1152 20, 130x512x1152 25, 68x512x1152 22, 196x512x1152 52, while
# rows a multiple of 64 or 8 past it (128, 136, 200, 104) and K 2304 (9 blocks of 256) ran at
# 180-230. Blocks that divide K: 196x256x1152 73 -> 191 (192-wide blocks) / 186 (288) / 182
# (384), 98x256x1152 20 -> 160 / 166 / 172, 130x256x1152 23 -> 147 / 165 / 156. Where the rows
# are not short that way the table's block stays a little ahead (3x3 s2 1x64x56x56->128, 784
# rows 576 deep, 256 + 64 against 2 x 288, the two compiled in one process and run interleaved
# with PyTorch, three runs: 0.82-0.83 against 0.76-0.81 of PyTorch), so only those GEMMs take the
# divisor of K nearest the table's block (a multiple of the register tile's K step, between half
# and twice it), and whole K where K has none (tiles with ``k_blocks_divide``). The AVX2 6x16
# tile in 48x64 had no such loss (98-130 rows: 75-108 GFLOP/s with either block) and keeps its
# blocks; Intel's 6x64 tile was not measured. (Patch-matrix GEMMs on AMD AVX-512 now take rows
# that leave no such last row, ``patch_matrix_rows``, and so keep the table's block: 3x3 s2
# 1x128x28x28->256, 196x256x1152, 64 rows and blocks of 288 -> 49 rows and 256, whole graph, old
# and new code in alternating processes, three rounds, fusilli median ms: 0.78, 0.44, 0.44 ->
# 0.37, 0.44, 0.36.)
def k_block(tile: GemmTile, m: int, k: int, n: int = 0, batched: bool = False) -> int | None:
    """The K cache block of ``tile`` for an ``m`` x ``n`` GEMM ``k`` deep (``batched``: one of a
    batch), see above and ``NARROW_K_BLOCK_MIN_COLUMNS``, or None for whole K."""
    if not batched and narrow_k_blocks_apply(tile, m, n, k):
        return tile.narrow_k_block
    want = tile.cache_reduction
    if want is None or k < max(tile.cache_reduction_min_depth, want):
        return None
    dm = min(tile.distribution[0], m)
    if not tile.k_blocks_divide or k % want == 0 or (m % dm) % min(tile.vector[0], dm) == 0:
        return want
    step = tile.reduction
    divisors = [d for d in range(step, 2 * want + 1, step) if d * 2 >= want and k % d == 0]
    return min(divisors, key=lambda d: (abs(d - want), d), default=None)


# A batched GEMM whose last row of workgroups is short by more than one register tile of rows
# gets no cache_parallel (the L2 tile of M and N): with it that row ran so slowly that it slowed
# the whole dispatch by half. Winograd GEMMs alone (iree-benchmark-module local-sync, Zen 5 VM,
# AVX-512 8x32 in 64x64, two runs each, us, without / with): 25x98x256x128 (a last row of 34)
# 721-768 / 1094-1126, 36x98x256x256 2167-2200 / 3170-3190; 36x784x64x64 (16) 965-976 / 1010-1012.
# Rows that divide evenly or leave a short remainder moved within 5% either way alone
# (25x196x128x128 698-716 / 727-743, 16x128x512x512 5042-5145 / 5063-5105), and in whole graphs
# on two threads kept it a little ahead (the two compiled in one process and run interleaved with
# PyTorch, with / without: dgrad 4x64x28x28 2.17 / 2.03 and 1.77 / 1.70, 3x3 1x64x56x56 1.93 /
# 1.87, 8x128x28x28 1.72 / 1.70). AVX2 6x16 in 48x64, alone: 25x98x256x128 1509 / 1581,
# 25x196x128x128 1375 / 1482, 36x392x64x64 988 / 973. The 2-D conv GEMMs measured the same with
# and without it (3136x128x256 815 / 818, 98x256x1024 252 / 249, 392x512x4608 in K blocks 8677 /
# 8745) and keep it.
def _cache_parallel(batch: int | None, m: int, dm: int, vm: int) -> bool:
    return batch is None or m % dm <= vm


def _compilation_info(
    tile: GemmTile, batch: int | None, m: int, n: int, k: int, panel: int | None = None
) -> ir.Attribute:
    """``[B,] M, N, K`` tile sizes (B tiled by 1) clamped to the problem, as IREE's ``compilation_info``;
    with ``panel``, N is two loops, ``N / panel`` panels of ``panel`` columns (``winograd_b_panel``)."""
    dm, dn = min(tile.distribution[0], m), min(tile.distribution[1], n)
    vm, vn = min(tile.vector[0], dm), min(tile.vector[1], dn)
    lead = "1, " if batch is not None else ""
    zero = "0, " if batch is not None else ""
    n_tile, n_vector, n_zero = (
        (f"{dn}", f"{vn}", "0") if panel is None else (f"{dn // panel}, {panel}", f"1, {vn}", "0, 0")
    )
    block = k_block(tile, m, k, n, batch is not None)
    parallel = f"{lead}{dm}, {n_tile}, 0"
    return _double_tiling_info(
        f"distribution = [{parallel}], "
        + (f"cache_parallel = [{parallel}], " if _cache_parallel(batch, m, dm, vm) else "")
        + (f"cache_reduction = [{zero}0, {n_zero}, {block}], " if block is not None else "")
        + f"vector_common_parallel = [{lead}{vm}, {n_vector}, 0], "
        + f"vector_reduction = [{zero}0, {n_zero}, {min(tile.reduction, k)}]"
    )


def _double_tiling_info(lowering_config: str) -> ir.Attribute:
    """IREE's ``compilation_info`` of a GEMM with the ``#iree_cpu.lowering_config`` fields
    ``lowering_config`` under the DoubleTilingExpert pipeline, its remainders peeled."""
    return ir.Attribute.parse(
        f"#iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<{lowering_config}>, "
        "translation_info = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>, "
        "{enable_loop_peeling}>>"
    )


def _core_tile(
    table: dict[tuple[str, str], tuple[int, int, GemmTile]], isa: str, core: str | None, rows: int, depth: int
) -> GemmTile | None:
    """The CPU ``core``'s entry of a per-core ``table`` (from its rows and depth), or None."""
    min_rows, min_depth, tile = table.get((isa, core or ""), (0, 0, None))
    return tile if tile is not None and rows >= min_rows and depth >= min_depth else None


def batch_matmul_compilation_info(
    isa: str,
    batch: int,
    m: int,
    n: int,
    k: int,
    vendor: str | None = None,
    core: str | None = None,
    panel: int | None = None,
) -> ir.Attribute | None:
    """The ``compilation_info`` for an f32 Winograd ``linalg.batch_matmul`` of ``m`` rows on ``isa``
    ``k`` deep (the CPU ``core``'s entry from its rows and depth, then the ``vendor``'s from its
    rows), or None for IREE's default; with ``panel``, for the contraction over ``(b, m, j, n, c)``
    that reads B as panels of ``panel`` columns (``winograd_b_panel``): the same tile, N split."""
    tile = winograd_gemm_tile(isa, m, k, vendor, core)
    return None if tile is None else _compilation_info(tile, batch, m, n, k, panel)


def winograd_gemm_tile(
    isa: str, rows: int, depth: int, vendor: str | None = None, core: str | None = None
) -> GemmTile | None:
    """The tile of an f32 Winograd GEMM of ``rows`` (tiles) ``depth`` deep on ``isa``: the CPU
    ``core``'s entry from its rows and depth, then the ``vendor``'s from its rows, then the ISA's."""
    key = (isa, vendor or "")
    tile = WINOGRAD_GEMM_TILES_BY_VENDOR.get(key) if rows >= WINOGRAD_VENDOR_TILE_MIN_ROWS.get(key, 0) else None
    return _core_tile(WINOGRAD_GEMM_TILES_BY_CORE, isa, core, rows, depth) or tile or WINOGRAD_GEMM_TILES.get(isa)


# Winograd's batched GEMM reads its B, the transformed filter U[t*t, depth, columns] (a forward
# conv's C x K, a data gradient's K x C), a row per reduction step, a register tile's width of each
# row, like a conv GEMM's filter: rows of 512, 1024 or 2048 f32 columns are a multiple of
# B_ROW_ALIAS_BYTES apart and share one or two of L1's sets (see above). Padding the rows as the conv
# GEMM's filter is padded cost a copy of U here (IREE writes a row-padded result of the filter
# transform in a dispatch of its own, 37 MB a call for F(4x4) of 512 channels), so on the ISAs
# below the filter transform writes U as panels of WINOGRAD_B_PANEL columns, [t*t, columns / panel,
# depth, panel], every panel's rows contiguous (winograd.filter_transform), at no cost, and the GEMM
# reads them as a contraction over (b, m, j, n, c) (winograd.batched_gemm). EPYC Zen 1 VM (znver1),
# the GEMM compiled alone (iree.runtime calls) with the table's 4x16 in 64x64, one thread
# (local-sync) / two (local-task), ms, plain -> panels, one process, interleaved: 25x128x512x512
# (the polyphase GEMM of 3x3 s2 8x512x14x14->512) 85.3 -> 55.2 / 45.2 -> 30.3 (rows padded instead: 77.1 -> 58.0 / 45.2 -> 32.0);
# 36x32x512x512 (F(4x4) of 3x3 8x512x7x7) 29.2 -> 21.0 / 20.0 -> 12.9. Rows of 256 or 128 columns
# (1 or 0.5 KiB apart) ran even: 36x128x256x256 19.6 / 19.0, 13.7 / 13.8; 25x392x256x256 42.0 /
# 41.9, 28.1 / 28.7; 36x392x128x128 15.5 / 16.2, 12.0 / 16.1 (min 7.6 / 7.7), so they keep the
# plain layout. Whole graphs, both layouts compiled in one process and run interleaved with PyTorch
# (python benchmarks/table_ab.py SUITE --variant 'plain:fusilli.passes.gemm_config.
# WINOGRAD_B_PANEL_ISAS=set()' --variant panels), two runs, ratio to PyTorch or ms, plain ->
# panels: polyphase 3x3 s2 8x512x14x14->512 0.51 -> 0.69, 0.53 -> 0.75; 4x512x14x14->512 0.52 ->
# 0.71, 0.54 -> 0.73; 1x256x28x28->512 0.68 -> 0.79; its dgrad 8x512x14x14 0.61 -> 0.87, 0.56 ->
# 0.84; F(4x4) 3x3 8x512x7x7->512 29.0 -> 25.5, 26.3 -> 23.0 ms; its dgrad 23.3 -> 16.8, 26.2 ->
# 17.3 ms; the same dispatches and transient bytes. As x86-64-v3 code (its 6x16 tile; one run):
# F(4x4) 3x3 8x512x7x7->512 27.5 -> 24.9 ms, its dgrad 22.8 -> 21.2 (znver1 code beside: 26.9 ->
# 22.9, 24.8 -> 17.4). AVX-512 code was not measured (its 8x32 and 6x64 tiles read two and four
# lines of each B row per step): it keeps the plain layout.
WINOGRAD_B_PANEL = 64
WINOGRAD_B_PANEL_ISAS = {"avx2"}
# Per core (ISA, LLVM CPU name), ahead of the above: (panel width, from this many bytes per B row).
# Zen 3 (znver3; full-width 256-bit FMAs, where Zen 1 issues each as two halves) is bound by B's
# reads from rows of 128 columns up: a 4x16 register tile reads one 64-byte line of each of `depth`
# B rows per step, and rows 512 bytes apart fall into 8 of L1's 64 sets (32 KB, 8 ways): 64 lines,
# fewer than the 128-256 rows a strip of B spans, so every step's line comes from L2. Panels of the
# register tile's 16 columns make each strip one contiguous block. Zen 3 VM, the GEMM dispatch
# alone, one thread (python benchmarks/dispatch_profile.py SUITE --device local-sync --rounds 2
# --variant 'old:fusilli.passes.gemm_config.WINOGRAD_B_PANEL_BY_CORE={}' --variant cur), min us,
# plain (or 64-column panels at 512 columns) -> 16-column panels: polyphase 25x196x256x128 (cpu.txt's
# 3x3 s2 + bias + relu) 4119, 4071 -> 3262, 3354; 25x196x128x128 2084, 2094 -> 1601, 1595;
# 25x392x256x256 18488, 17151 -> 13675, 13654; 25x1568x128x128 17889, 17057 -> 15252, 15634; F(4x4)
# 36x392x128x128 6117, 6012 -> 5130, 5017; 36x128x256x256 9312, 8124 -> 6443, 6362; 36x32x512x512
# (64-column panels before) 8534, 9738 -> 7530, 8114; F(2x2) 16x49x256x256 1380, 1371 -> 1075, 1086;
# the data gradients' alike (dgrad 3x3 8x128x28x28 36x392x128x128 6170, 6386 -> 4996, 4862;
# 81x392x128x128 14789, 14470 -> 11830, 12003). Rows of 64 columns (256 bytes apart, 128 lines in L1 for 64 rows)
# ran even, 16-column panels from 256 bytes: 36x784x64x64 2429, 2319, 2297, 2380 -> 2288, 2282,
# 2289, 2272; 36x1568x64x64 4676, 4670 -> 4672, 4740; hence from 512 bytes. Whole graphs, two
# threads, in one process, interleaved with PyTorch (python benchmarks/table_ab.py SUITE --variant
# 'old:fusilli.passes.gemm_config.WINOGRAD_B_PANEL_BY_CORE={}' --variant cur; the filter transform
# iterating in its output's order, winograd.filter_transform), ratio to PyTorch, two runs: cpu.txt's
# 3x3 s2 + bias + relu 0.91, 1.08 -> 0.97, 1.15; 3x3 s2 1x128x56x56->128 0.90, 0.77 -> 1.01, 0.85; 8x128x56x56->128 0.94, 0.88 -> 1.03, 1.00; 8x256x28x28->256 0.92, 0.90 -> 1.08, 1.08;
# 1x128x28x28->128 1.54, 1.03 -> 1.81, 1.19; 8x256x14x14->256 1.66, 1.62 -> 1.86, 1.89; 8x512x7x7->512
# 1.59, 1.42 -> 1.70, 1.50; dgrad 3x3 8x128x28x28 1.46, 2.11 -> 2.05, 2.23; s2 8x128x56x56 0.98, 1.18
# -> 1.13, 1.31; s2 1x128x56x56 1.00, 0.92 -> 1.10, 1.06; even: 1x256x14x14->256 1.13, 0.85 -> 1.10,
# 0.78 (two runs before 1.19, 1.21 -> 1.25, 1.38), dgrad 8x512x7x7 1.61, 1.78 -> 1.58, 1.77.
WINOGRAD_B_PANEL_BY_CORE: dict[tuple[str, str], tuple[int, int]] = {("avx2", "znver3"): (16, 512)}


def winograd_b_panel(
    isa: str, columns: int, rows: int, depth: int, vendor: str | None = None, core: str | None = None
) -> int | None:
    """The panel width Winograd's transformed filter of ``columns`` (its GEMMs ``rows`` x
    ``columns`` x ``depth``) is written in on ``isa`` and the CPU ``core`` (see above: the core's
    entry, else the ISA's rule), or None for the plain ``[t*t, depth, columns]``."""
    tile = winograd_gemm_tile(isa, rows, depth, vendor, core)
    core_entry = WINOGRAD_B_PANEL_BY_CORE.get((isa, core or ""))
    if core_entry is not None:
        return _core_panel(core_entry, tile, columns)
    if isa not in WINOGRAD_B_PANEL_ISAS or (columns * 4) % B_ROW_ALIAS_BYTES:
        return None
    return _panel_fitting(tile, columns, WINOGRAD_B_PANEL)


def _core_panel(core_entry: tuple[int, int], tile: GemmTile | None, columns: int) -> int | None:
    """A per-core panel table's ``(panel, min_row_bytes)`` entry applied to an f32 B of ``columns``
    read by ``tile``: ``panel`` where B's rows are that many bytes apart or more and it fits."""
    panel, min_row_bytes = core_entry
    return _panel_fitting(tile, columns, panel) if columns * 4 >= min_row_bytes else None


def _panel_fitting(tile: GemmTile | None, columns: int, panel: int) -> int | None:
    """``panel`` where B's ``columns`` split into whole panels that whole workgroups of ``tile`` cover,
    each panel whole register tiles wide, else None."""
    if tile is None or columns % panel:
        return None
    dn, vn = min(tile.distribution[1], columns), tile.vector[1]
    return panel if dn % panel == 0 and panel % vn == 0 else None


def wgrad_batch_matmul_compilation_info(isa: str, batch: int, m: int, n: int, k: int) -> ir.Attribute | None:
    """The ``compilation_info`` of the Winograd weight gradient's f32 ``linalg.batch_matmul`` (a row
    per output channel) on ``isa``, whatever the vendor, or None for IREE's default."""
    tile = WINOGRAD_WGRAD_GEMM_TILES.get(isa)
    return None if tile is None else _compilation_info(tile, batch, m, n, k)


# Per core (ISA, LLVM CPU name), ahead of the vendor's entry: (from this many rows, from this
# depth, tile). Zen 5 takes 6x64 in 60x64 (its Winograd GEMMs' tile, WINOGRAD_GEMM_TILES_BY_CORE)
# for conv GEMMs of at least 512 rows 128 deep. Zen 5 VM (znver5), the 1x1 s2 8x512x28x28->1024
# GEMM (1568x1024x512) alone, one thread: 8x32 with K blocks of 256 153-156 GFLOP/s, 6x64 176-198.
# Whole graphs, both tiles compiled in one process and run interleaved with PyTorch (ratio, two
# runs, 8x32 -> 6x64; the batch-8 graphs run as two halves of batch 4, their GEMMs' rows halved):
# 1x1 8x256x56x56->64 0.89 -> 1.30, 0.92 -> 1.33; 8x128x28x28->512 0.84 -> 0.97, 0.88 -> 0.98;
# 8x512x28x28->128 0.96 -> 0.99, 0.94 -> 0.99; s2 8x256x56x56->512 even. The halves of 784 rows (14x14
# maps), 6x64 from 512 rows against from 1024: 8x256x14x14->1024 0.69 -> 0.85, 0.64 -> 0.72;
# 8x1024x14x14->512 0.91 -> 0.94, 0.87 -> 0.92; 8x1024x14x14->256 0.97 -> 0.98, 0.98 -> 0.96; s2
# 8x512x28x28->1024 0.74 -> 0.76, 0.76 -> 0.75. Batch-1 28x28 maps (784 rows) on the pool (the
# split executor, which auto takes there, cuts them to 392): 1x512x28x28->128 0.83 -> 0.86, 0.74 ->
# 0.81, 1x256x56x56->128 0.87 -> 0.88, 0.84 -> 0.88, 1x128x28x28->512 even, 1x512x28x28->256 0.98 ->
# 0.89, 0.95 -> 0.90. 64 deep it lost (1x1 8x64x56x56->256 1.11 -> 0.94, 1.06 -> 1.01); batch-1
# GEMMs below 512 rows moved within their noise or lost (3x3 1x512x7x7, 49 rows, 1.41 -> 1.33; the
# suite's 1x1 4x256x28x28->128 1.01 -> 0.95 and 1.01 -> 1.03). Old and new code (from 1024 rows) in
# alternating processes (fusilli-benchmark, two rounds, fusilli's median ms; PyTorch's own medians
# jumped to 10-16 ms in some blocks): 8x256x56x56->64 2.95, 4.03 -> 2.07, 1.96; the others within
# their noise. Not measured for the patch matrices of strided spatial filters, which keep the
# vendor's tile.
CONV_GEMM_TILES_BY_CORE = {
    ("avx512", "znver5"): (
        512,
        128,
        GemmTile((60, 64), (6, 64), 8, cache_reduction=256, cache_reduction_min_depth=512, k_blocks_divide=True),
    )
}


# Zen 1 (znver1) issues each 256-bit FMA as two 128-bit halves on its two FMA pipes: one ymm FMA a
# cycle, so five accumulators cover its latency, and each broadcast of A competes with them for
# issue. Conv GEMMs at least DEEP_VECTOR_BY_CORE's depth deep (1x1 convs from 1024 channels, 1x1
# dgrads from 1024 DY channels, the patch matrices of 3x3 convs from 128 channels) take 2 rows x
# four 8-wide vectors there (8 accumulators, 2 broadcasts and 4 loads a step, against 6x16's 6
# and 2), the workgroups and K blocks of the vendor's tile unchanged. One GEMM alone (one thread,
# local-sync, B's rows padded, K in blocks of 64, best GFLOP/s; torch.mm one thread beside):
# 392x512x2048 6x16 24.0-25.4, 2x32 27.9-29.6, 1x64 29.8, 3x32 27.2, 4x24 / 2x48 (N no multiple)
# 9-11, torch 35.5-36.1; 196x512x1024 31.9 -> 34.1 (torch 35.6); 392x2048x1024 24.9 -> 28.7
# (1x64 21.0; torch 34.6); 1568x512x1024 33.0 -> 33.9; 512 deep 6x16 stays ahead (1568x1024x512
# whole K 33.4 against 2x32's 31.4, 784x512x256 33.1 against 31.5). Whole graphs, EPYC Zen 1 VM,
# python benchmarks/table_ab.py (both compiled in one process, run interleaved with PyTorch), ratio
# to PyTorch, 6x16 -> 2x32, two runs on two threads and one on one (FUSILLI_CPU_EXECUTOR=local-sync
# OMP_NUM_THREADS=1): 1x1 8x1024x14x14->512 0.71 -> 0.83, 0.71 -> 0.82, 0.79 -> 0.92; 8x2048x7x7->512
# 0.71 -> 0.83, 0.72 -> 0.76, 0.87 -> 0.99; s2 8x1024x14x14->2048 0.63 -> 0.70, 0.79 -> 0.88, 0.71 ->
# 0.80; 1x1024x14x14->512 0.75 -> 0.90, 1.07 -> 0.93, 0.81 -> 0.87; 8x1024x14x14->256 1.17 -> 1.14,
# 1.00 -> 1.00, 0.99 -> 0.97; dgrad 3x3 1x512x7x7 (49 rows, 4608 deep) 0.97 -> 1.03, 1.22 -> 1.12,
# 0.86 -> 0.83; dgrad 1x1 1x512x7x7->2048 1.35 -> 1.42, 1.23 -> 1.28, 1.12 -> 1.12. 4x16 (0.70-0.92)
# and 1x64 (0.71-0.95) measured between or below. Strided patch matrices as GEMMs
# (FUSILLI_CONV_LOWERING=gemm), one run: 3x3 s2 1x256x28x28->256 0.76 -> 0.85, 1x512x14x14->512
# 0.91 -> 0.95, 8x512x14x14->512 0.77 -> 0.82, + bias + relu 4x128x28x28->256 (1152 deep) 0.90 ->
# 0.93. Zen 2 and later issue 256-bit FMAs whole (two a cycle: 8 accumulators would leave them
# latency-bound), so they keep the vendor's tile; not measured there.
DEEP_VECTOR_BY_CORE = {("avx2", "znver1"): (1024, (2, 32))}


def deep_vector(isa: str, core: str | None, depth: int) -> tuple[int, int] | None:
    """The register tile of a conv GEMM ``depth`` deep on the CPU ``core`` (DEEP_VECTOR_BY_CORE), or None
    where the vendor's tile keeps its own."""
    min_depth, vector = DEEP_VECTOR_BY_CORE.get((isa, core or ""), (0, None))
    return vector if vector is not None and depth >= min_depth else None


# Where Zen 1's conv GEMMs take that tile, the filter the graph writes for them (a forward conv's
# transposition; a dgrad's copy, made where its rows are padded) is written in CONV_B_PANEL-column
# panels, ``[columns / 64, depth, 64]``, each panel's rows contiguous, as Winograd's transformed
# filter is (WINOGRAD_B_PANEL), at no cost (the transposition writes panels instead of rows), and
# the GEMM is a contraction over ``(m, j, n, c)`` whose ``[rows, columns / 64, 64]`` result is the
# plain one collapsed (conv_layout._panel_gemm; the 48x64 workgroup is one panel). A workgroup's B
# block of 64 K steps is then 16 KB in one run instead of 64 rows 2 KiB-8 KiB apart. EPYC Zen 1 VM
# (znver1), one GEMM alone (iree.runtime calls, one thread, local-sync, interleaved with torch.mm on
# one thread), the 2x32 tile in 48x64 with K blocks of 64, best GFLOP/s, B's rows padded by 16
# floats (as the graph wrote them) -> 64-column panels: 392x512x2048 30.4 -> 31.8, 30.8 -> 32.0;
# 196x512x1024 29.0 -> 32.2; 1568x512x1024 31.2 -> 32.2; 392x2048x1024 26.4 -> 28.7; 1568x256x1024
# (rows 1 KiB apart, not padded: 31.8) 32.4 -> 32.6; 196x256x1024 19.6 -> 20.3 (torch.mm 32.8-35.9,
# 22.3 for the last). The 6x16 tile on 392x512x2048 gained as much (26.6 -> 27.5); whole K at 512
# deep or less did not (392x2048x512 6x16 30.6 -> 27.4, 1568x1024x256 32.0 -> 31.5, 784x512x128
# 32.9 / 33.0), so panels go with the deep 2x32 tile.
CONV_B_PANEL = 64
# Per core (ISA, LLVM CPU name), ahead of the above, for a forward conv's filter (its transposition
# writes it; a dgrad's B, read as it is, keeps its rows): (panel width, from this many bytes per B
# row), whatever the depth and tile. Zen 3 (znver3) writes 16-column panels, its 6x16 tile's width,
# from rows 1 KiB apart (256 columns), as it writes Winograd's transformed filter
# (WINOGRAD_B_PANEL_BY_CORE): rows 1 KiB apart fall into 4 of L1's 64 sets, and rows padded past 2 KiB
# multiples still stride through few. Zen 3 VM, the GEMM dispatch alone, one thread (python benchmarks/dispatch_profile.py
# SUITE --device local-sync --rounds 2 --variant 'old:fusilli.passes.gemm_config.CONV_B_PANEL_BY_CORE={}'
# --variant cur), min us, rows (padded where 2 KiB multiples) -> 16-column panels: 1x1
# 8x1024x14x14->256 1568x256x1024 10859, 10933 -> 9445, 9604; 1x1024x14x14->256 196x256x1024 1302,
# 1297, 1282 -> 1184, 1314, 1185; 1x512x7x7->2048 49x2048x512 1169, 1169 -> 1066, 1064; 8x512x28x28->256
# 6272x256x512 18770, 18526 -> 17517, 17558; 3x3 s2 1x256x28x28->256 196x256x2304 2676, 2682 -> 2525,
# 2547; s2 1x512x28x28->1024 196x1024x512 2374, 2345 -> 2230, 2228; most others 0-5% ahead or even;
# behind: 3x3 1x512x7x7->512 49x512x4608 2580, 2537, 2524 -> 2685, 2631, 2565 (its whole call ahead:
# 5640, 4920, 5420 -> 5130, 4840, 5050). Whole graphs, two threads, in one process, interleaved with
# PyTorch (python benchmarks/table_ab.py SUITE --variant old:... --variant cur), two runs, of the 24
# ResNet-50 rows with 256 or more output channels 36 of 48 results ahead, 9 behind (among them the
# pool's stalls: 1x1 8x1024x14x14->512 0.89 -> 0.63 once, 0.93 -> 0.95 the other): 1x1
# 8x1024x14x14->256 0.90, 0.87 -> 1.01, 1.05; s2 8x512x28x28->1024 0.88 -> 1.00 (once 0.70 -> 0.59);
# 8x512x28x28->256 0.94, 0.95 -> 1.03, 1.07; 8x256x14x14->1024 1.00, 0.96 -> 1.11, 1.08; 1x512x7x7->2048
# 1.03, 0.75 -> 1.07, 1.02; 1x1024x14x14->256 0.80, 0.75 -> 0.85, 0.75; 3x3 1x512x7x7->512 1.24, 0.85 ->
# 1.34, 0.99; s2 1x256x56x56->512 1.03, 0.73 -> 1.07, 1.09. Rows of 128 columns (512 bytes apart) ran
# mixed, hence from 1 KiB: cpu.txt's 1x1 4x256x28x28->128 1.12, 1.06 -> 1.06, 1.01 (its GEMM alone
# 2199, 2326 -> 2190, 2156), 1x256x56x56->128 1.07, 0.82 -> 1.07, 0.74, 8x512x28x28->128 1.02, 1.01 ->
# 1.09, 1.14.
CONV_B_PANEL_BY_CORE: dict[tuple[str, str], tuple[int, int]] = {("avx2", "znver3"): (16, 1024)}


def conv_b_panel(
    isa: str,
    columns: int,
    rows: int,
    depth: int,
    vendor: str | None = None,
    core: str | None = None,
    strided_patches: bool = False,
    copied: bool = False,
) -> int | None:
    """The panel width a conv GEMM's B of ``columns`` (``rows`` x ``columns`` x ``depth``; ``copied``:
    B is in its layout already, so writing it is a copy that only ``padded_b_columns``' rows justify)
    is written in on ``isa`` and the CPU ``core`` (see above: the core's entry, else Zen 1's deep
    tile's rule), or None for rows."""
    core_entry = CONV_B_PANEL_BY_CORE.get((isa, core or ""))
    if core_entry is not None and not copied:
        return _core_panel(
            core_entry, conv_gemm_tile(isa, columns, vendor, strided_patches, rows, depth, core), columns
        )
    if deep_vector(isa, core, depth) is None:
        return None
    if copied and padded_b_columns(isa, columns, 4, rows, copied) is None:
        return None
    tile = conv_gemm_tile(isa, columns, vendor, strided_patches, rows, depth, core)
    return _panel_fitting(tile, columns, CONV_B_PANEL)


def conv_gemm_tile(
    isa: str,
    n: int,
    vendor: str | None = None,
    strided_patches: bool = False,
    rows: int = 0,
    depth: int = 0,
    core: str | None = None,
) -> GemmTile | None:
    """The tile of an f32 conv-as-GEMM with ``n`` output channels on ``isa`` (and the CPU
    ``vendor`` and ``core``: CONV_GEMM_TILES_BY_CORE from its rows and depth); ``strided_patches``:
    its A operand is a strided conv's patch matrix (stride > 1, a filter larger than 1x1), see
    ``STRIDED_PATCH_GEMM_TILES_BY_VENDOR``; a stride-1 GEMM of ``rows`` x ``depth`` deep enough takes
    ``deep_gemm_rows`` rows per workgroup, and one ``depth`` deep enough the core's register tile
    of DEEP_VECTOR_BY_CORE (see above); the core's CONV_WHOLE_K_BELOW_BY_CORE where ``rows`` are more
    than one block of its workgroups, and its STRIDED_PATCH_TABLE_K_BLOCK_CORES."""
    key = (isa, vendor or "")
    if strided_patches and n >= rules.CPU_CONV_GEMM_WIDE_MIN_OUT_CHANNELS and key in STRIDED_PATCH_GEMM_TILES_BY_VENDOR:
        return STRIDED_PATCH_GEMM_TILES_BY_VENDOR[key]
    core_tile = None if strided_patches else _core_tile(CONV_GEMM_TILES_BY_CORE, isa, core, rows, depth)
    if core_tile is not None:
        return core_tile
    tile = CONV_GEMM_TILES_BY_VENDOR.get(key) or CONV_GEMM_TILES.get(isa)
    deep = not strided_patches and rows > 0 and depth >= rules.CPU_CONV_GEMM_MIN_DEPTH_AVX512
    if tile is not None and deep and key in DEEP_GEMM_VENDORS:
        tile = replace(tile, distribution=(deep_gemm_rows(rows, isa), tile.distribution[1]))
    elif tile is not None and isa in ONE_BLOCK_SHORT_REMAINDER_ISAS:
        if tile.distribution[0] < rows < tile.distribution[0] + tile.vector[0]:
            tile = replace(tile, distribution=(rows, tile.distribution[1]))
    vector = deep_vector(isa, core, depth)
    if tile is not None and vector is not None:
        tile = replace(tile, vector=vector)
    whole_k_below = CONV_WHOLE_K_BELOW_BY_CORE.get((isa, core or ""))
    if tile is not None and whole_k_below is not None and rows > tile.distribution[0]:  # not one row block
        tile = replace(tile, conv_whole_k_below=max(tile.conv_whole_k_below, whole_k_below))
    if tile is not None and strided_patches and (isa, core or "") in STRIDED_PATCH_TABLE_K_BLOCK_CORES:
        tile = replace(tile, narrow_k_block=None)
    return tile


# A GEMM's last row of workgroups, where it is shorter than the others, runs its last register
# tile of rows (the rows past M) as masked vector loads of A. Where A is a matrix the graph
# materialized (a patch gather's output, laid out last in its transient buffer), those lanes
# address memory past the buffer's end, and a masked load whose masked-off lanes fall in an
# unmapped page takes a microcode assist: one per load of that tile, every reduction step. perf
# (cpu-clock samples) on 3x3 s2 1x256x28x28->256's GEMM (196x256x2304, AVX-512 8x32 in 64-row
# workgroups, 4 rows past 192) put 36% of the dispatch's samples on three instructions after
# the masked loads of A; whole workgroups of rows (a divisor of M), or a last one a multiple of
# the register tile's rows, read no lane past M. Where A is the graph's input (1x1 convs'
# reshaped X), the masked tail cost nothing measurable and whole blocks of a register-tile
# remainder each lost a little (784x256x512, 6x64: 60 -> 58 rows 798 -> 901 us). So A operands
# the graph materializes take workgroup rows that divide M, from the table's rows down to half
# of them, else a last workgroup of whole register tiles, else the table's rows.
# Zen 5 VM, one thread (local-sync), the GEMM dispatch's mean (HAL profiler, us): znver5 code,
# 196x256x2304 (8x32): 64 rows 1905-1949, 56 1912, 48 1855, 72 1824 (masked tails); 49 930-954,
# 98 930, 28 912 (divisors), 60 1051-1072, 52 1061, 66 996 (tails of whole tiles); 195x256x2304
# (a 1x256x26x30 input) 64 rows 2075, 192x256x2304 894. x86-64-v3 code (6x16), 392x256x1152
# (3x3 s2 2x128x28x28->256): 48 rows 2691, 46 2233 (a tail of whole tiles), 28 1865, 49 1797,
# 56 1791 (divisors). In whole graphs (fusilli's own workspace, whatever lies past it) the AMD
# AVX-512 row gained: old and new code in alternating processes, fusilli-benchmark --compare
# torch, three rounds, fusilli median ms (ratio to PyTorch): 3x3 s2 1x256x28x28->256 1.49, 0.92,
# 0.70 (0.38-0.74) -> 0.82, 0.62, 0.59 (0.61-0.89). The AVX2 rows did not (two rounds, x86-64-v3
# code against PyTorch held to AVX2, 48 -> 28 or 32 rows): 3x3 s2 2x128x28x28->256 1.10, 1.07 ->
# 1.16, 1.19; 1x1 s2 1x512x28x28->1024 0.96, 0.97 -> 1.10, 1.08; 1x1 s2 1x256x56x56->512,
# 8x512x28x28->1024 and 8x1024x14x14->2048 within 4%. Intel cores: not measured.
PATCH_MATRIX_ROWS_TARGETS = {("avx512", "amd")}


def patch_matrix_tile(tile: GemmTile, isa: str, vendor: str | None, m: int) -> GemmTile:
    """``tile`` for the GEMM of a materialized A of ``m`` rows: its workgroup rows from
    ``patch_matrix_rows`` on PATCH_MATRIX_ROWS_TARGETS, else as it is."""
    if (isa, vendor or "") not in PATCH_MATRIX_ROWS_TARGETS:
        return tile
    rows = patch_matrix_rows(m, tile.distribution[0], tile.vector[0])
    return replace(tile, distribution=(rows, tile.distribution[1]))


def patch_matrix_rows(m: int, rows: int, vector_rows: int) -> int:
    """Workgroup rows near ``rows`` for a materialized A of ``m`` rows that leave no masked
    last register tile (see above)."""
    if m <= rows or m % rows % vector_rows == 0:
        return rows
    candidates = range(rows, (rows + 1) // 2 - 1, -1)
    divisor = next((d for d in candidates if m % d == 0), None)
    if divisor is not None:
        return divisor
    return next((d for d in candidates if m % d % vector_rows == 0), rows)


# Where A is the graph's input (a stride-1 1x1 conv's reshaped X, a 1x1 or strided dgrad's DY) a
# masked last register tile reads mapped memory, but a GEMM of few rows whose last workgroup is a
# partial register tile still ran slower than one in workgroups of a divisor of its rows: on AMD
# AVX-512 GEMMs below INPUT_ROWS_DIVISOR_BELOW rows take the divisor as patch_matrix_rows would
# (196 -> 49, a row split's half of 98 -> 49; with the 8x32 tile only row counts no multiple of 8
# change). AMD Zen 4 VM (znver4), python benchmarks/table_ab.py (both compiled in one process, run
# interleaved with PyTorch), ratio to PyTorch, 64 -> 49 rows, three runs on two threads and one on
# one: 1x1 1x1024x14x14->256 0.98 -> 1.03, 1.08 -> 1.12, 1.08 -> 1.16, 1.10 -> 1.12 (one thread);
# 1x1024x14x14->512 0.95 -> 0.99, 0.98 -> 1.04, 0.97 -> 1.06, 1.05 -> 1.11; dgrad 1x1 1x1024x14x14->256
# 0.97 -> 1.15, 1.14 -> 1.17, 1.14 -> 1.16, 1.66 -> 1.70; 1x256x14x14->1024 (256 deep) even (0.88 ->
# 0.93, 1.58 -> 1.52, 1.50 -> 1.48, 1.06 -> 1.08). The rule as shipped against none, two runs:
# 1x1024x14x14->256 1.01 -> 1.09, 0.62 -> 0.67; 1x1024x14x14->512 0.99 -> 1.06, 1.00 -> 1.07; dgrad
# 1.22 -> 1.27, 1.50 -> 1.57; 1x256x14x14->1024 1.66 -> 1.57, 1.23 -> 1.21 (0.69 -> 0.73 ms, 0.62 ->
# 0.64: a little behind or even at 256 deep). Two earlier runs with 49-row workgroups of 8x32 or
# 7x32: 1x1024x14x14->512 0.91, 0.95 -> 1.01-1.02, 1x1024x14x14->256 1.02, 1.04 -> 1.08-1.13. From
# 512 rows Zen 5 takes its own 6x64 tile (CONV_GEMM_TILES_BY_CORE), where whole register tiles in the
# last workgroup measured a little slower (784x256x512: 60 -> 58 rows 798 -> 901 us, above), hence
# the limit; Zen 5 was not measured below it. The col2im GEMM of strided dgrads (DY as A) takes it
# too: ResNet-50's dgrad 1x1 s2 1x512x28x28->1024 (196 DY positions, 1024 deep), fusilli's ms, three
# runs: 2.86 -> 2.61, 1.92 -> 1.58, 2.87 -> 2.85 (PyTorch 13-20 ms); 512 deep (1x256x28x28->512) even,
# 0.50 -> 0.52, 0.55 -> 0.44, 0.58 -> 0.61; dgrad 3x3 s2 1x256x28x28 (196 DY positions, 256 deep,
# 2304 columns) even, 1.28 -> 1.27, 1.48 -> 1.52 (a third run under load 2.40 -> 1.50).
INPUT_ROWS_DIVISOR_BELOW = {("avx512", "amd"): 512}


def input_rows_tile(tile: GemmTile, isa: str, vendor: str | None, m: int) -> GemmTile:
    """``tile`` for the GEMM of ``m`` rows whose A is the graph's input: below
    INPUT_ROWS_DIVISOR_BELOW rows, where the table's rows leave a last workgroup of a partial register
    tile, a divisor of ``m`` from the table's rows down to half of them (see above); else as it is."""
    rows, vector_rows = tile.distribution[0], tile.vector[0]
    if m >= INPUT_ROWS_DIVISOR_BELOW.get((isa, vendor or ""), 0) or m <= rows or m % rows % vector_rows == 0:
        return tile
    divisor = next((d for d in range(rows, (rows + 1) // 2 - 1, -1) if m % d == 0), None)
    return tile if divisor is None else replace(tile, distribution=(divisor, tile.distribution[1]))


def gemm_rows_tile(tile: GemmTile, isa: str, vendor: str | None, m: int, materialized_a: bool) -> GemmTile:
    """``tile`` with the workgroup rows of a conv GEMM of ``m`` rows: ``patch_matrix_tile``'s where A
    is a matrix the graph writes, else ``input_rows_tile``'s."""
    return patch_matrix_tile(tile, isa, vendor, m) if materialized_a else input_rows_tile(tile, isa, vendor, m)


# On Zen 3 a conv GEMM whose B is in 16-column panels (CONV_B_PANEL_BY_CORE), of at least
# PANEL_GEMM_TILE_BY_CORE's rows, takes a 4x16 register tile (one panel wide) in workgroups of 28
# rows (7 register tiles; ResNet-50's 196, 784, 1568, 3136 and 6272 rows are multiples of 28)
# instead of the AMD 6x16 in 48 rows; its K blocks stay the vendor tile's. The Winograd GEMMs on
# the same panels had measured 4x16 ahead of 6x16 (thirty-fourth session). AMD Zen 3 VM, one
# thread, the GEMM alone, min us over two rounds (python benchmarks/dispatch_profile.py SUITE
# --device local-sync --rounds 2 --variant 'old:fusilli.passes.gemm_config.PANEL_GEMM_TILE_BY_CORE={}'
# --variant cur): see BENCHMARKS.md, thirty-fifth session. Below 196 rows (49: batch-1 7x7 images)
# the 48-row workgroups stay (4x16 in 28 rows, K blocks of 64, measured 10-26% behind there).
PANEL_GEMM_TILE_BY_CORE: dict[tuple[str, str], tuple[int, int, tuple[int, int]]] = {
    ("avx2", "znver3"): (196, 28, (4, 16))
}
# ... and from these fewer rows, where the GEMM is at least this deep: (rows, depth). Zen 3 VM, one
# thread, the GEMM alone, min us over two rounds, 6x16 in 48 rows -> 4x16 in 28 (python
# benchmarks/dispatch_profile.py SUITE --device local-sync --rounds 2 --variant 'old:...' --variant cur):
# the 98-row halves the row split gives ResNet-50's batch-1 14x14 rows, 1024 deep: 98x1024x256 645,
# 645 -> 581, 585; 98x1024x512 1297, 1305 -> 1173, 1175; shallower they lose: 98x512x1024 (s2
# 1x512x28x28->1024) 1233, 1234 -> 1528, 1540; 98x256x1024 619, 622 -> 770, 772. (98 rows leave a
# 2-row remainder under either tile; workgroups of 24, 36 or 52 rows measured as 28.) Batch-2 7x7
# rows (98 rows) the same, one thread: 1x1 2x1024x7x7->256 649, 644 -> 582, 582; 2x2048x7x7->512 2589,
# 2598 -> 2368, 2365; s2 2x1024x14x14->2048 5445, 5789 -> 4880, 5289; whole graphs on the pool, in one
# process with PyTorch, two runs, ms (ratio to PyTorch; python benchmarks/table_ab.py SUITE --variant
# 'old:fusilli.passes.gemm_config.PANEL_GEMM_DEEP_ROWS_BY_CORE={}' --variant new): 0.776 (1.05) -> 0.626
# (1.30), 0.573 (1.18) -> 0.556 (1.21); 2.095 (1.35) -> 1.885 (1.50), 2.024 (1.38) -> 1.876 (1.49);
# 4.299 (1.17) -> 4.203 (1.20), 4.703 (1.12) -> 4.041 (1.30).
PANEL_GEMM_DEEP_ROWS_BY_CORE: dict[tuple[str, str], tuple[int, int]] = {("avx2", "znver3"): (98, 1024)}


def panel_core_tile(isa: str, core: str | None, m: int, k: int) -> tuple[int, tuple[int, int]] | None:
    """The CPU ``core``'s (workgroup rows, register tile) from PANEL_GEMM_TILE_BY_CORE for a conv GEMM
    of ``m`` rows ``k`` deep that reads B in panels, where ``m`` reaches its rows (or
    PANEL_GEMM_DEEP_ROWS_BY_CORE's, ``k`` its depth); else None."""
    min_rows, rows, vector = PANEL_GEMM_TILE_BY_CORE.get((isa, core or ""), (0, 0, None))
    deep_rows, deep_k = PANEL_GEMM_DEEP_ROWS_BY_CORE.get((isa, core or ""), (min_rows, 0))
    if vector is None or m < min(min_rows, deep_rows) or (m < min_rows and k < deep_k):
        return None
    return rows, vector


def panel_gemm_tile(tile: GemmTile, isa: str, core: str | None, m: int, k: int) -> GemmTile:
    """``tile`` for a conv GEMM of ``m`` rows ``k`` deep that reads B in panels: ``panel_core_tile``'s
    workgroup rows and register tile where it has them, else as it is."""
    own = panel_core_tile(isa, core, m, k)
    if own is None:
        return tile
    rows, vector = own
    return replace(tile, distribution=(rows, tile.distribution[1]), vector=vector)


def matmul_compilation_info(
    isa: str,
    m: int,
    n: int,
    k: int,
    vendor: str | None = None,
    strided_patches: bool = False,
    core: str | None = None,
    materialized_a: bool = False,
    padded_b: bool = False,
    panel: int | None = None,
) -> ir.Attribute | None:
    """The ``compilation_info`` for an f32 conv-as-GEMM ``linalg.matmul`` on ``isa`` (and the
    CPU ``vendor`` and ``core``, ``targets.cpu_vendor`` / ``cpu_core``; ``strided_patches`` as in
    ``conv_gemm_tile``; ``materialized_a``: A is a matrix the graph writes, see
    ``gemm_rows_tile``; ``padded_b``: B's rows are written padded, see
    ``PADDED_B_WHOLE_K_BELOW``; K whole below the tile's ``conv_whole_k_below``, see
    ``CONV_WHOLE_K_BELOW``), or None; with ``panel``, for the contraction over ``(m, j, n, c)``
    that reads B as panels of ``panel`` columns (``conv_b_panel``): the same tile, N split."""
    tile = conv_gemm_tile(isa, n, vendor, strided_patches, m, k, core)
    if tile is None:
        return None
    tile = gemm_rows_tile(tile, isa, vendor, m, materialized_a)
    if panel is not None:
        tile = panel_gemm_tile(tile, isa, core, m, k)
    tile = conv_gemm_k_tile(tile, k, padded_b or panel is not None)
    return _compilation_info(tile, None, m, n, k, panel)


def conv_gemm_k_tile(tile: GemmTile, k: int, padded_b: bool) -> GemmTile:
    """``tile`` for a forward or dgrad conv GEMM ``k`` deep, its K blocks dropped where K is whole:
    below the tile's ``conv_whole_k_below``, or ``padded_b_whole_k_below`` where B's rows are padded
    (or B is in panels)."""
    if k < tile.conv_whole_k_below or (padded_b and k < tile.padded_b_whole_k_below):
        return replace(tile, cache_reduction=None, narrow_k_block=None)
    return tile


# A conv GEMM's B operand (its filter matrix, [depth, columns]) is read a row per reduction step,
# a register tile's width of each row. x86 L1 data caches index their 64 sets by address bits 6-11
# (a 4 KiB period), so rows a multiple of 2 KiB apart share one or two sets' ways: 12-24 of a 256-deep
# panel's rows stay in L1 and every step reloads B from L2. Where the filter is materialized for the
# GEMM anyway (fusion_barrier: a transposition, or a copy of 1 MB for a 1x1 dgrad's filter), it is
# written B_ROW_PAD_BYTES longer per row and read back as the [depth, columns] slice (a strided load
# of the GEMM's dispatch; the pad fuses into the transposition's dispatch: no dispatch added).
# Zen 5 VM, one thread (local-sync), the GEMM with the table's config after the filter's
# transposition, GFLOP/s, plain -> padded: znver5 code (6x64) 1568x1024x256 197-216 -> 217-245,
# 784x1024x256 206 -> 236, 1568x512x1024 191-205 -> 215-237, 392x2048x512 144-184 -> 193-207,
# 1568x512x128 230-232 -> 235-236; 1 KiB rows even (1568x256x512 232 / 232, 6272x128x512 214 / 214).
# x86-64-v3 code (6x16): 1568x1024x256 73 -> 123, 784x1024x256 69 -> 119, 1568x512x1024 101 -> 118,
# 392x2048x512 66 -> 113, 1568x256x512 120 / 120; znver3 code 81 -> 120, 79 -> 118, 115 -> 120,
# 76 -> 113, 126 / 127. A 1x1 dgrad's filter (no transposition to fuse into: a copy dispatch more)
# 204 -> 231, 199 -> 223, 154 -> 196 with the copy. Pads of 32, 64, 128 or 256 bytes measured the
# same; 64 keeps the rows aligned for full-line vector loads. Intel's cores index L1 the same way
# (not measured). Whole graphs, old and new code in alternating processes, fusilli's median ms, two
# rounds each, znver5: 1x1 8x256x14x14->1024 2.25, 2.10 -> 1.76, 1.78 (ratio to PyTorch 0.79-0.80 ->
# 0.97-0.98), 1x1 s2 8x512x28x28->1024 4.36, 4.27 -> 3.92, 4.16, 8x1024x14x14->512 4.15, 3.72 -> 3.59,
# 3.66, 1x128x28x28->512 0.29, 0.27 -> 0.23, 0.24, 1x1 s2 1x256x56x56->512 0.51, 0.50 -> 0.46, 0.48;
# 1x1 dgrads (a copy more) 1x1024x14x14 0.39, 0.35 -> 0.28, 0.27, 8x1024x14x14 2.12, 1.96 -> 1.75, 1.74.
# Where B is copied only to be padded and the GEMM has few rows to read it for, the copy costs more
# than it saves: dgrad 3x3 1x512x7x7 (49 rows, a 9.4 MB B) 0.69, 0.66 -> 0.94, 0.89, dgrad 1x1
# 1x512x7x7->2048 (49 rows) 0.40, 0.32 -> 0.35, 0.36; hence B_ROW_PAD_COPY_MIN_ROWS.
B_ROW_ALIAS_BYTES = 2048
B_ROW_PAD_BYTES = 64
B_ROW_PADDING_ISAS = {"avx512", "avx2"}
B_ROW_PAD_COPY_MIN_ROWS = 128


def padded_b_columns(isa: str, columns: int, element_bytes: int, rows: int, copied: bool) -> int | None:
    """The row length, in elements, to materialize a GEMM's B of ``columns`` in on ``isa`` so its rows
    are not a multiple of B_ROW_ALIAS_BYTES apart (see above), or None where it needs no padding or
    (``copied``: B is in its layout already, the padding a copy of its own) the GEMM's ``rows`` are
    too few to pay for the copy."""
    if isa not in B_ROW_PADDING_ISAS or (columns * element_bytes) % B_ROW_ALIAS_BYTES:
        return None
    if copied and rows < B_ROW_PAD_COPY_MIN_ROWS:
        return None
    return columns + B_ROW_PAD_BYTES // element_bytes


# The (ISA, CPU vendor) pairs whose strided, unpadded 1x1 convs read their rows as a view of the input
# (conv_layout._strided_1x1_rows, a GEMM whose rows are two loops: strided_rows_compilation_info)
# instead of a gather dispatch. Zen 5 VM (znver5), whole graphs compiled both ways in one process
# and run interleaved with PyTorch, ratio to PyTorch, gather -> view: 1x1 s2 1x256x56x56->512 0.85
# -> 0.89, + bias + relu 0.81 -> 0.85, 8x256x56x56->512 0.86 -> 0.92, 8x512x28x28->1024 0.67 ->
# 0.69 (as iree.runtime calls of the two modules, 1x256x56x56: 0.82, 1.12 -> 0.75-0.78, 0.97-1.00
# ms; 7 or 8 rows in the register tile, 28 or 56 in a workgroup within 3% of each other). As
# x86-64-v3 code (PyTorch held to AVX2) the view lost: with 4x16 (4 divides Wo = 28) 0.80 -> 0.69,
# 0.80 -> 0.66, 0.85 -> 0.72; with the table's 6x16 (a peeled remainder) 0.83 -> 0.81, 0.78 ->
# 0.74, 0.90 -> 0.89. So AVX2 keeps the gather, and so do Intel's AVX-512 cores (not measured;
# their conv GEMMs take a tile of their own).
STRIDED_ROWS_VIEW_TARGETS = {("avx512", "amd")}

# Where no divisor of the inner loop lies between half the register tile's rows and its rows, the
# tile takes one row more where that divides it, if its accumulators fit: on AVX-512, 28 of the 32
# vector registers (the B row's 64 floats take four, the broadcast of A folds into each FMA as
# {1to16}). Zen 5's 6x64 tile on Wo = 14 (ResNet-50's 1x1 s2 512x28x28->1024) was 6 + 6 + a peeled
# 2; 7x64 takes it in two. Zen 5 VM (znver5), the GEMM 112x14 x 1024 x 512 over the strided view
# alone, one thread, GFLOP/s, two runs: 6x64 153, 156 -> 7x64 177, 176 (2x7x32 173, 174; the
# gathered 2-D GEMM 194-199); the whole graph 8x512x28x28->1024, both compiled in one process and
# run interleaved with PyTorch, ratio, three runs: 0.72 -> 0.85, 0.80 -> 0.93, 0.69 -> 0.86.
# Where a divisor exists it stays ahead (Wo = 28 takes 4x64: 8x256x56x56->512 0.96 against 0.88 with
# 7x64).
MAX_ACCUMULATOR_REGISTERS = {"avx512": 28}
F32_LANES = {"avx512": 16, "avx2": 8}


def _taller_register_rows(isa: str, rows: int, columns: int, inner: int) -> int | None:
    """``rows`` + 1 where that divides ``inner`` and its accumulators fit (see above), else None."""
    lanes, limit = F32_LANES.get(isa), MAX_ACCUMULATOR_REGISTERS.get(isa)
    if lanes is None or limit is None or inner % (rows + 1):
        return None
    return rows + 1 if (rows + 1) * math.ceil(columns / lanes) <= limit else None


def strided_rows_compilation_info(
    isa: str, outer: int, inner: int, n: int, k: int, vendor: str | None = None, core: str | None = None
) -> ir.Attribute | None:
    """The ``compilation_info`` of a conv GEMM whose rows are two loops, ``outer`` x ``inner``
    (conv_layout._strided_rows_gemm: a strided 1x1 conv's N*Ho by Wo), ``n`` columns ``k`` deep:
    the 2-D conv GEMM tile (``conv_gemm_tile``) with a workgroup's rows as whole rows of ``inner``
    (as many as its rows hold) and the register tile's rows along ``inner`` (the largest divisor of
    ``inner`` from half the tile's rows up, else one row more where that divides it and fits,
    ``_taller_register_rows``, else the tile's rows and a peeled remainder)."""
    rows = outer * inner
    tile = conv_gemm_tile(isa, n, vendor, False, rows, k, core)
    if tile is None:
        return None
    dm, dn = min(tile.distribution[0], rows), min(tile.distribution[1], n)
    vn = min(tile.vector[1], dn)
    d_inner = min(inner, dm)
    d_outer = max(1, dm // d_inner)
    want = min(tile.vector[0], d_inner)
    divisor = max((d for d in range((want + 1) // 2, want + 1) if d_inner % d == 0), default=None)
    v_inner = divisor or _taller_register_rows(isa, want, vn, d_inner) or want
    block = k_block(tile, rows, k, n)
    return _double_tiling_info(
        f"distribution = [{d_outer}, {d_inner}, {dn}, 0], "
        + (f"cache_reduction = [0, 0, 0, {block}], " if block is not None else "")
        + f"vector_common_parallel = [1, {v_inner}, {vn}, 0], vector_reduction = [0, 0, 0, {min(tile.reduction, k)}]"
    )


# A user's f32 matmul below the data-tiling threshold (rules.CPU_MATMUL_GEMM_CONFIG), per (ISA, CPU
# vendor): IREE's own config there is an 8x8 register tile. EPYC Zen 1 VM (znver1), one thread
# (IREE local-sync against PyTorch with one thread, ratio to PyTorch, two runs alike): 2-D, 4x16 in
# 32x64 workgroups with K in blocks of 64: 256^3 0.77 -> 0.92, 512x256x512 (M x K x N) 0.61 ->
# 0.96, 256x1024x256 0.61 -> 0.91, 128x768x768 0.52 -> 0.88, 64x1024x1024 0.47 -> 0.66-0.68 (IREE's
# data tiling 0.78, 0.80-0.82, 0.72, 0.70, 0.62 there); 64-row, up-to-256-column workgroups
# (whole K) ran 0.96 / 0.72 / 0.93 / 0.64 / 0.57: an unpacked B 768-1024 floats wide needs its K
# blocks. Batched (B x M x K x N), 4x16 in 64 x min(N, 256) workgroups, whole K: 8x256x64x256
# 0.80 -> 0.99, 12x197x64x197 0.70 -> 0.84, 4x512x512x64 0.70 -> 0.89; 32x64 with K blocks of 64
# 0.98 / 0.66 / 0.84, 6x16 in 48x64 0.82 / 0.78 / 0.77. Whole graphs on two threads: BENCHMARKS.md.
# AMD AVX-512 (EPYC Zen 5 VM, znver5, two threads, whole graphs compiled in one process and run
# interleaved with PyTorch, ratio to PyTorch, IREE's config (data tiling at 2^28 FLOP and above) ->
# 8x32 in 64x64 with K blocks of 64 / of 256 (batched: 64x64 / 64 x min(N, 256) workgroups, whole
# K): 128x768x768 1.11 -> 1.61 / 1.52, 512x256x512 1.08 -> 1.29 / 1.40, 256x1024x256 1.02 -> 1.59 /
# 1.73, 64x1024x1024 0.76 -> 1.46 / 1.42, 256^3 0.95 -> 1.03 / 1.06, 128x128x256 1.02 -> 1.28 /
# 1.31; batched 12x197x64x197 (attention's Q K^T) 0.07 -> 1.40, 1.28 / 1.53, 1.48, 12x197x197x64
# 0.64 -> 1.47 / 1.45, 8x256x64x256 1.17, 1.33 -> 1.38, 1.62 / 1.38, 1.55, 8x512x64x512 (data
# tiling) 0.94 -> 1.94 / 2.06, 8x512x128x256 (data tiling) 1.05 -> 2.29 / 2.31. Also measured: 4x32
# in 32x64 (K blocks of 64) 1.02-1.53 on the 2-D rows, 8x16 in 32x64 1.03-1.43; 64x128
# workgroups failed to compile (a 32 KB vector.transfer_write of the accumulator's fill).
# Intel's AVX-512 cores take AMD's (rules.CPU_MATMUL_GEMM_CONFIG_TARGETS has the measurements).
USER_MATMUL_TILES = {
    ("avx2", "amd"): GemmTile((32, 64), (4, 16), 8, cache_reduction=64),
    ("avx512", "amd"): GemmTile((64, 64), (8, 32), 8, cache_reduction=256),
    ("avx512", "intel"): GemmTile((64, 64), (8, 32), 8, cache_reduction=256),
}
USER_BATCH_MATMUL_TILES = {
    ("avx2", "amd"): GemmTile((64, 256), (4, 16), 8),
    ("avx512", "amd"): GemmTile((64, 256), (8, 32), 8),
    ("avx512", "intel"): GemmTile((64, 256), (8, 32), 8),
}


def user_matmul_tile(isa: str, vendor: str | None, batched: bool) -> GemmTile | None:
    """The tile of a user's f32 matmul (``batched``: ``linalg.batch_matmul``) on ``isa`` and the
    CPU ``vendor``, or None where not measured."""
    return (USER_BATCH_MATMUL_TILES if batched else USER_MATMUL_TILES).get((isa, vendor or ""))


def user_matmul_compilation_info(
    isa: str, vendor: str | None, batch: int | None, m: int, n: int, k: int
) -> ir.Attribute | None:
    """The ``compilation_info`` of a user's f32 ``linalg.matmul`` (``batch`` None) or
    ``linalg.batch_matmul`` of ``m`` x ``n`` over ``k`` on ``isa`` and the CPU ``vendor`` (see
    above), or None where not measured (IREE's own config)."""
    tile = user_matmul_tile(isa, vendor, batch is not None)
    return None if tile is None else _compilation_info(tile, batch, m, n, k)


# A weight gradient's one GEMM DW[K, R*S*C] (not transposed, not in chunks) over at least
# WGRAD_MANY_POSITIONS_MIN output positions takes WGRAD_MANY_POSITIONS_TILES' tile where the CPU
# has an entry: on AMD's AVX2 cores 4 rows x two 8-wide vectors in 32x64 workgroups, K (the
# positions) in blocks of 64. EPYC Zen 1 VM (znver1), the two compiled in one process and run
# interleaved with PyTorch, ratio to PyTorch, the conv GEMM tile (6x16 in 48x64, K blocks of 64) ->
# this: 1x1 s2 1x256x56x56->512 (DW[512, 256], 784 positions) 0.96 -> 1.07, 0.93 -> 1.05, 0.95 ->
# 1.06, 0.95 -> 1.06, 0.94 -> 1.05, 0.94 -> 1.04, 0.94 -> 1.06, 0.96 -> 1.04; 1x64x56x56->256 (3136)
# 1.10 -> 1.17, 1.01 -> 1.14, 1.04 -> 1.18, 1.08 -> 1.17; 1x1 s2 1x128x56x56->256 0.99 -> 1.15, 1.04 ->
# 1.22; 1x64x28x28->256 1.38 -> 1.47, 1.25 -> 1.35. The workgroup's rows more than its register tile:
# 6x16 in 32x64 1.01-1.03, 4x16 in 48x64 0.92, 4x16 in 16x64 or 64x32 1.01-1.02, K blocks of 112
# (784 / 7) 0.92-0.95, whole K 0.72-0.73 (1x1 s2 1x256x56x56->512). With few positions it lost:
# 3x3 1x256x14x14 (196) 1.79-1.84 -> 1.66-1.71, 1x1 1x512x7x7->2048 (49) 1.94-1.98 -> 1.79-1.94,
# 1x2048x7x7->512 1.76-1.96 -> 1.86-1.94, 3x3 1x512x7x7 even. Other CPUs were not measured.
WGRAD_MANY_POSITIONS_TILES = {("avx2", "amd"): GemmTile((32, 64), (4, 16), 8, cache_reduction=64)}
WGRAD_MANY_POSITIONS_MIN = 784
# ... and, where the CPU has an entry here, such a GEMM with fewer rows (K) than columns (R*S*C) takes
# this tile: on Intel's AVX-512 cores AMD's AVX-512 conv GEMM tile, 8x32 in 64x64 workgroups, in place
# of their own 6x64 in 60x64. Intel Xeon VM (sapphirerapids as named), python benchmarks/table_ab.py
# (in one process, run interleaved with PyTorch), ratio to PyTorch, 6x64 -> 8x32: 1x1 8x256x56x56->64
# (DW[64, 256]) 0.60 -> 0.77; 1x256x56x56->64 0.72 -> 0.86; 8x1024x14x14->256 (DW[256, 1024]) 0.77 ->
# 0.83; 1x512x28x28->128 0.96 -> 1.01; two more runs of those four: 0.61 -> 0.81, 0.66 -> 0.86; 0.81 ->
# 0.94, 0.72 -> 0.86; 0.79 -> 0.83, 0.75 -> 0.82; 0.99 -> 1.00, 1.01 -> 1.04. With as many rows as
# columns or more it lost: 1x64x56x56->256
# (DW[256, 64]) 1.05 -> 0.99, 1x128x28x28->512 1.02 -> 0.96, s2 1x256x56x56->512 0.85 -> 0.82.
WGRAD_FEW_ROWS_TILES = {
    ("avx512", "intel"): GemmTile(
        (64, 64), (8, 32), 8, cache_reduction=256, cache_reduction_min_depth=512, k_blocks_divide=True
    )
}


def wgrad_tile(
    isa: str, n: int, k: int, vendor: str | None = None, core: str | None = None, m: int = 0
) -> GemmTile | None:
    """The tile of a weight gradient's f32 GEMM ``DW[m = K, n = R*S*C]`` over ``k`` output positions
    (one GEMM, not transposed) on ``isa`` and the CPU ``vendor``: ``WGRAD_MANY_POSITIONS_TILES``'
    from ``WGRAD_MANY_POSITIONS_MIN`` positions (``WGRAD_FEW_ROWS_TILES``' there where ``m`` < ``n``),
    else the conv GEMM's for ``n`` columns and its
    K blocks, without the deep stride-1 convs' row blocks (measured on forward GEMMs); the
    ``core``'s K step of WGRAD_VECTOR_REDUCTION_BY_CORE (below; ``m`` 0, rows unknown: without the
    step's limit on K blocks)."""
    many = WGRAD_MANY_POSITIONS_TILES.get((isa, vendor or ""))
    if many is not None and k >= WGRAD_MANY_POSITIONS_MIN:
        return wgrad_core_step(many, isa, core, m, n, k)
    few_rows = WGRAD_FEW_ROWS_TILES.get((isa, vendor or ""))
    if few_rows is not None and k >= WGRAD_MANY_POSITIONS_MIN and 0 < m < n:
        return wgrad_core_step(few_rows, isa, core, m, n, k)
    return wgrad_core_step(conv_gemm_tile(isa, n, vendor), isa, core, m, n, k)


def wgrad_matmul_compilation_info(
    isa: str, m: int, n: int, k: int, vendor: str | None = None, core: str | None = None
) -> ir.Attribute | None:
    """The ``compilation_info`` of a weight gradient's f32 GEMM ``DW[m = K, n = R*S*C]`` over ``k``
    output positions (rules.CPU_CONV_WGRAD_GEMM), with ``wgrad_tile``."""
    tile = wgrad_tile(isa, n, k, vendor, core, m)
    return None if tile is None else _compilation_info(tile, None, m, n, k)


# Per core (ISA, LLVM CPU name): the K (output positions) per vector step of every weight-gradient
# GEMM (one GEMM, DW^T, the chunks' batched GEMM), in place of the tile's 8. Both operands of these
# GEMMs run K along their rows (DY[positions, K] and the patches[positions, R*S*C], read
# transposed), so a register tile's step reads 6 consecutive floats of one row of A and 16 of one
# row of B whatever the step. EPYC Zen 3 VM (znver3), python benchmarks/dispatch_profile.py
# --variant (the GEMM dispatch alone, one thread, min us over 5 calls, two rounds), 8 -> 1: the
# chunks' batched GEMM of 1x1 8x128x28x28->512 and 8x512x28x28->128 (49 x 512 x 128 over 128
# positions, 6x16 in 48x64) 12763, 12859 -> 11657, 11747 and 12811, 12715 -> 11723, 11668; of 1x1 s2
# 8x256x56x56->512 (49 x 512 x 256) 25553, 25809 -> 23373, 23577; the one GEMM of 1x1 s2
# 1x256x56x56->512 (512 x 256 over 784, 4x16 in 32x64, K blocks of 64) 3601, 3608 -> 3157, 3096.
# Whole graphs, python benchmarks/table_ab.py (both compiled in one process, run interleaved with
# PyTorch), ratio to PyTorch, three runs on two threads and one on one (local-sync): 1x1
# 1x512x7x7->2048 1.19, 1.27, 1.18 -> 1.61, 1.77, 1.56 (0.81 -> 1.09); 1x2048x7x7->512 1.12, 1.43,
# 1.34 -> 1.13, 1.78, 1.60 (0.85 -> 0.87); 8x128x28x28->512 0.88, 0.82, 0.89 -> 0.84, 0.89, 0.98 (0.73
# -> 0.81); 8x512x28x28->128 0.83, 0.83, 1.08 -> 0.85, 0.86, 1.08 (0.71 -> 0.78); s2 8x256x56x56->512
# 0.90, 0.81, 0.80 -> 0.95, 0.93, 0.85 (0.90 -> 0.94); s2 1x256x56x56->512 0.86, 0.84, 0.94 -> 0.87,
# 0.87, 0.88 (0.81 -> 0.92); 3x3 1x512x7x7 (512 x 4608 over 49: 4033, 4073 -> 3582, 3702 us alone)
# 7.44, 8.17, 8.65 -> 7.64, 8.15, 9.00; 3x3 1x256x14x14 (whole K: NARROW_K_BLOCK_DEPTH_MULTIPLE) 1.65,
# 3.12, 3.25 -> 2.37, 2.94, 3.53.
# Steps of 4 measured between (the chunked GEMMs 14150 and 16920 against 17498 in one run). GEMMs
# of fewer than WGRAD_STEP_MIN_COLUMNS columns (64: DW^T of 64 output channels, DW of 64 filter
# columns) lost with it and keep the tile's step: DW^T of 1x1 1x256x56x56->64 (256 x 64 over 3136)
# 1348, 1355 -> 1689, 1719; of 8x256x56x56->64 (98 x 256 x 64 over 256) 11157, 11453 -> 11922, 11848;
# DW of 1x64x56x56->256 (256 x 64 over 3136) gained on one thread (1490, 1495 -> 1297, 1291) but
# lost on two, ratio to PyTorch, python benchmarks/table_ab.py, three runs: 0.83, 0.92, 0.86 ->
# 0.75, 0.87, 0.74. So did 2-D GEMMs in K blocks whose B rows lie 4 KB or more apart (each block's
# 64 rows on a few L1 sets): the GEMMs Zen 3 leaves data-tiled (rules.CPU_CONV_WGRAD_DATA_TILING)
# given the tile instead, three runs, steps of 8 -> 1: 3x3 8x512x7x7 (512 x 4608 over 392, narrow
# blocks of 64) 2.02, 1.59, 2.09 -> 0.67, 0.53, 0.77; 1x1 8x1024x14x14->256 (256 x 1024 over 1568, the
# many-positions tile's blocks of 64) 0.70, 0.75, 0.52 -> 0.44, 0.69, 0.49. K blocks gained with rows
# 1 KB apart (1x1 s2 1x256x56x56->512, above), so GEMMs in K blocks take the step up to
# WGRAD_STEP_BLOCKED_MAX_COLUMNS columns (whole K it gained at any: 512 x 4608 over 49). Other cores
# were not measured and keep the tile's step.
WGRAD_VECTOR_REDUCTION_BY_CORE = {("avx2", "znver3"): 1}
WGRAD_STEP_MIN_COLUMNS = 128
WGRAD_STEP_BLOCKED_MAX_COLUMNS = 256


def wgrad_step(isa: str, core: str | None, tile: GemmTile | None, m: int, n: int, k: int) -> int | None:
    """The ``core``'s K per vector step of a weight-gradient GEMM of ``m`` x ``n`` over ``k``
    positions (n: R*S*C of DW, K of DW^T; m and k 0 for a chunk's batched GEMM, K whole) with
    ``tile`` on ``isa`` (see above), or None for the tile's own."""
    if tile is None or n < WGRAD_STEP_MIN_COLUMNS:
        return None
    if m and n > WGRAD_STEP_BLOCKED_MAX_COLUMNS and k_block(tile, m, k, n) is not None:
        return None
    return WGRAD_VECTOR_REDUCTION_BY_CORE.get((isa, core or ""))


def wgrad_core_step(tile: GemmTile | None, isa: str, core: str | None, m: int, n: int, k: int) -> GemmTile | None:
    """``tile`` with ``wgrad_step``'s K per vector step where the core has one."""
    step = wgrad_step(isa, core, tile, m, n, k)
    return tile if tile is None or step is None else replace(tile, reduction=step)


# The transposed GEMM of a forward conv with few output positions (rules.CPU_CONV_GEMM_FEW_POSITIONS),
# Y^T[K, positions] = W[K, R*S*C] x patches^T, per (ISA, CPU vendor): the filter's K rows in
# 48-row workgroups (not the deep GEMMs' equal blocks: 512 rows as 57-row blocks lost, 3x3
# 1x512x7x7->512 0.76 -> 0.78 and 0.73 -> 0.62 of PyTorch, 3x3 s2 1x512x14x14->512 0.86 -> 0.75, 0.79
# -> 0.75), every position in one column block, K in blocks of 256. EPYC Zen 1 VM (znver1), 3x3
# 1x512x7x7->512, in one process, two runs, ratio to PyTorch: K blocks of 256 0.97, 1.19; of 128
# 0.92, 1.18; of 64 0.89, 1.06; whole K 0.85 (one run); 24-row workgroups 0.96, 1.08; 48 rows x 32
# columns 0.44, 0.53.
# Only Zen 1 takes that rule now (rules.CPU_CONV_GEMM_FEW_POSITIONS_CORES); AMD's AVX-512 cores took
# 16x16 in 32-row workgroups until the im2col GEMM overtook this form there.
FEW_POSITIONS_GEMM_TILES = {
    ("avx2", "amd"): GemmTile((48, 64), (6, 16), 8, cache_reduction=256),
}


def few_positions_compilation_info(isa: str, vendor: str | None, m: int, n: int, k: int) -> ir.Attribute | None:
    """The ``compilation_info`` of a few-positions conv's transposed f32 GEMM ``Y^T[m = K, n =
    positions]`` over ``k`` = R*S*C on ``isa`` and the CPU ``vendor``, or None where not measured."""
    tile = FEW_POSITIONS_GEMM_TILES.get((isa, vendor or ""))
    return None if tile is None else _compilation_info(tile, None, m, n, k)


# A 1x1 weight gradient over many output positions sums them in chunks: partial[c, K, C] over
# about WGRAD_CHUNK_POSITIONS positions each (a batched GEMM, a chunk per row of workgroups), then
# the partials (a reduction, a dispatch of its own). As one GEMM, DW[K, C] has few workgroups
# (K/64 x C/64), each streaming every position of its DY and X columns from memory, and two threads
# gained little over one (8x512x28x28->128 on AVX-512: 9.5 ms min on one thread, 7.9-9.5 on two);
# a chunk's DY and X rows (224 positions: 112 KB and 448 KB there) are read by all of its
# workgroups while in cache. Zen 4 VM (znver4), the two forms compiled in one process and run
# interleaved, ms (ratio to PyTorch); AVX-512, three runs: ResNet-50's 1x1 8x512x28x28->128 8.03 ->
# 6.23 (0.78 -> 1.00), 9.45 -> 7.18 (0.74 -> 0.98), 6.75 -> 5.49 (0.88 -> 1.08); 8x128x28x28->512
# 7.57 -> 5.61 (0.90 -> 1.21), 7.36 -> 6.03 (0.97 -> 1.19), 7.75 -> 5.85 (0.93 -> 1.24); two runs:
# 1x1 s2 8x256x56x56->512 17.1 -> 13.2 (0.69 -> 0.89), 16.6 -> 13.5 (0.92 -> 1.13); one run:
# 8x64x56x56->256 7.34 -> 6.99. x86-64-v3 code, PyTorch held to AVX2: 8x128x28x28->512 12.4 -> 9.7
# (0.59 -> 0.75), 8.32 -> 6.15 (0.67 -> 0.91); 1x1 s2 8x256x56x56->512 21.1 -> 19.0, 16.2 -> 13.5
# (0.74 -> 0.89); 8x64x56x56->256 10.7 -> 7.6. Where it lost or ran even, hence the limits: fewer
# positions (1x512x28x28->128, 784: 0.73 -> 0.90 ms; 1x256x56x56->64, 3136: 0.69 -> 0.79;
# 8x1024x14x14->256, 1568: 5.76 -> 6.04 and 6.59 -> 5.92 on AVX-512), 64 output channels
# (8x256x56x56->64 8.67 -> 7.76 and 6.69 -> 7.55 on AVX-512), 3x3 filters (the patch gather's
# dispatch before: 3x3 s2 8x64x56x56->128 9.5 -> 11.0, 3x3 8x512x7x7 14.5 -> 18.5). The transposed
# GEMMs DW^T (below) of 1x1 filters take chunks at any output channels: AVX2's with at most 128,
# x86-64-v3 code, PyTorch held to AVX2, two runs: 8x512x28x28->128 9.26 -> 6.78 (0.67 -> 0.91), 8.92
# -> 6.24 (0.64 -> 0.92); 8x256x56x56->64 8.27 -> 6.16 (0.79 -> 1.06), 8.90 -> 6.35 (0.63 -> 0.89);
# 1x256x56x56->64 (3136 positions, not taken) 0.97 -> 0.90, 0.93 -> 0.90. AVX2's DW^T of any filter
# takes them (its patch gather did not cost what AVX-512's did): 3x3 s2 8x64x56x56->128 19.9 -> 14.9
# (0.84 -> 1.12), 22.4 -> 13.7 (0.78 -> 1.26); the 7x7 s2 stem (C = 3) 8x3x224x224 33.4 -> 26.7
# (0.82 -> 1.03), 34.4 -> 28.4 (0.79 -> 0.95), 1x3x224x224 5.10 -> 4.31, 4.80 -> 3.97. AVX-512's stem
# (DW^T in two 80-row blocks) lost with chunks: batch 8 19.8 -> 23.7, 21.2 -> 25.3 ms.
WGRAD_CHUNK_TRANSPOSED_ANY_KERNEL_ISAS = {"avx2"}
WGRAD_CHUNK_POSITIONS = 256
WGRAD_CHUNK_MIN_POSITIONS = 4096
WGRAD_CHUNK_MIN_OUT_CHANNELS = 128
# A chunk's DY and X rows ((K + R*S*C) x 4 bytes a position) are meant to stay in the L2 while its
# workgroups read them: where they would outgrow it (the L2 per core, by ISA and vendor where
# measured) the chunk is halved. AMD's AVX2 cores have 512 KB (Zen 1-3); 256 positions of
# 8x128x28x28->512 are 640 KB. EPYC Zen 1 VM (znver1), the two compiled in one process and run
# interleaved with PyTorch, ratio to PyTorch, two runs, 256 -> 128 positions: 1x1 8x512x28x28->128
# (DW^T) 0.72 -> 0.79, 0.74 -> 0.85; 8x128x28x28->512 0.69 -> 0.76, 0.75 -> 0.86; 1x1 s2
# 8x256x56x56->512 0.81 -> 0.91, 0.73 -> 0.81; 3x3 s2 8x64x56x56->128 (DW^T, 576 filter columns)
# 1.17 -> 1.18, 1.16 -> 1.21. 8x256x56x56->64 (320 KB, kept) lost with 128: 1.06 -> 0.94, 1.16 ->
# 1.06; 64 positions lost everywhere (0.83-0.96), and one GEMM (no chunks) more (0.59-0.70).
# Zen 4 (1 MB) measured 256 best (above), Zen 2 not measured. Zen 3 (the same 512 KB L2, and
# weight-gradient GEMMs in K steps of one position there, WGRAD_VECTOR_REDUCTION_BY_CORE) keeps the
# chunk whole (WGRAD_CHUNK_WHOLE_CORES): EPYC Zen 3 VM (znver3), python benchmarks/dispatch_profile.py
# --variant, one thread, the whole call's median over two rounds, ms, 128 -> 224 positions:
# 8x512x28x28->128 14.1, 14.3 -> 13.4, 13.8; 8x128x28x28->512 15.3, 14.8 -> 13.1, 14.6; 1x1 s2
# 8x256x56x56->512 31.0, 30.6 -> 28.4, 30.2. Two threads, python benchmarks/table_ab.py, ratio to
# PyTorch, three runs (one thread beside): 8x512x28x28->128 0.93, 0.91, 0.84 -> 0.93, 0.94, 0.87 (0.77
# -> 0.79); 8x128x28x28->512 1.03, 0.89, 1.17 -> 1.14, 0.90, 1.20 (0.79 -> 0.87); s2 8x256x56x56->512
# 0.94, 0.90, 0.81 -> 1.04, 0.92, 1.04 (0.93 -> 0.98); three runs in K steps of 8 (the thirty-second
# session) gained as well: s2 8x256x56x56->512 0.82, 0.93, 0.77 -> 0.89, 0.98, 0.85.
WGRAD_CHUNK_L2_BYTES = {("avx2", "amd"): 512 << 10}
WGRAD_CHUNK_WHOLE_CORES = {("avx2", "znver3")}


def wgrad_chunk_positions(
    kernel: tuple[int, ...],
    positions: int,
    out_channels: int,
    transposed: bool = False,
    isa: str = "generic",
    vendor: str | None = None,
    filter_columns: int = 0,
    core: str | None = None,
) -> int | None:
    """The output positions per chunk of a weight gradient's GEMM on ``isa`` and the CPU ``vendor``
    (see above; ``transposed``: as DW^T, ``wgrad_gemm_transposed``; ``filter_columns``: R*S*C):
    the divisor of ``positions`` nearest ``WGRAD_CHUNK_POSITIONS`` (halved where a chunk's rows
    outgrow ``WGRAD_CHUNK_L2_BYTES``, but not on the ``core``s of ``WGRAD_CHUNK_WHOLE_CORES``) within
    a factor of two, or None where it stays one GEMM."""
    any_kernel = transposed and isa in WGRAD_CHUNK_TRANSPOSED_ANY_KERNEL_ISAS
    if (tuple(kernel) != (1, 1) and not any_kernel) or positions < WGRAD_CHUNK_MIN_POSITIONS:
        return None
    if out_channels < WGRAD_CHUNK_MIN_OUT_CHANNELS and not transposed:
        return None
    # A divisor within a factor of two of the chunk measured (none: one GEMM, as for a prime count).
    want = WGRAD_CHUNK_POSITIONS
    l2_bytes = None if (isa, core or "") in WGRAD_CHUNK_WHOLE_CORES else WGRAD_CHUNK_L2_BYTES.get((isa, vendor or ""))
    if l2_bytes is not None and 4 * want * (out_channels + filter_columns) > l2_bytes:
        want //= 2
    divisors = [d for d in range(want // 2, 2 * want + 1) if positions % d == 0]
    return min(divisors, key=lambda d: (abs(d - want), d), default=None)


# A chunked GEMM whose rows the register tile leaves a remainder of (DW^T of a C = 3 input: R*S*C
# = 147 for the 7x7 stem, 75 for 5x5, 27 for 3x3; 6-row tiles leave 3) takes a register tile of
# CHUNKED_ODD_ROWS_VECTOR_ROWS rows that divides them, every row in one workgroup (up to
# CHUNKED_ODD_ROWS_MAX_ROWS, the most measured). The 6x16 tile's 48-row workgroups ran the 147
# rows as 48 + 48 + 48 + 3, the last through peeled code; 3x16 keeps 6 accumulators, enough for
# Zen 1's FMA pipes. EPYC Zen 1 VM (znver1), the two compiled in one process and run interleaved
# with PyTorch, ratio to PyTorch, 6x16 in 48x64 -> 3x16 in 147x64: wgrad stem 7x7 s2 1x3x224x224->64
# 0.83 -> 0.92, 0.77 -> 0.86, 0.76 -> 0.85, 0.73 -> 0.80, 0.67 -> 0.74, 0.74 -> 0.83, 0.78 -> 0.85;
# 8x3x224x224->64 0.72 -> 0.79, 0.70 -> 0.77, 0.69 -> 0.76, 0.70 -> 0.77, 0.71 -> 0.78, 0.71 -> 0.78;
# one thread (local-sync), its GEMM 9.9 -> 8.8 ms. 21-row workgroups of 3x16 (0.78, 0.72 at batch 1),
# 147x32 (0.80, 0.79), 3x32 (0.79, 0.72), 7x8 in 49 rows (0.84 against 0.83) and chunks of 128 or 512
# positions (0.77-0.81) measured lower. 3x3 1x3x224x224->64 (27 rows, 24 + 3) 1.42 -> 1.60, 1.43 ->
# 1.64; 4x3x224x224 1.39 -> 1.57, 1.36 -> 1.55; 5x5 s2 1x3x224x224->64 (75 rows) 0.80 -> 0.89-0.90
# (0.87-0.88 in 27-row workgroups). Other CPUs were not measured and keep the table's tile.
CHUNKED_ODD_ROWS_VECTOR_ROWS = {("avx2", "amd"): 3}
CHUNKED_ODD_ROWS_MAX_ROWS = 147


def chunked_wgrad_tile(isa: str, m: int, n: int, vendor: str | None = None, core: str | None = None) -> GemmTile | None:
    """The tile of a chunked weight gradient's batched GEMM of ``m`` rows and ``n`` columns on
    ``isa`` and the CPU ``vendor``: the conv GEMM's, or for rows it leaves a remainder of, a
    register tile of ``CHUNKED_ODD_ROWS_VECTOR_ROWS`` rows over every row (see above); the
    ``core``'s K step of WGRAD_VECTOR_REDUCTION_BY_CORE."""
    tile = conv_gemm_tile(isa, n, vendor)
    vector_rows = CHUNKED_ODD_ROWS_VECTOR_ROWS.get((isa, vendor or ""))
    if (
        tile is not None
        and vector_rows is not None
        and m % tile.vector[0] != 0  # rows the table's register tile leaves a remainder of ...
        and m % vector_rows == 0  # ... that the odd-rows tile divides, up to the most measured
        and m <= CHUNKED_ODD_ROWS_MAX_ROWS
    ):
        # Whole K, as measured (chunks of ~256 positions): K blocks would make the accumulator's zero
        # fill one vector of every row, beyond AVX2 codegen's 16 KB.
        tile = replace(
            tile, distribution=(m, tile.distribution[1]), vector=(vector_rows, tile.vector[1]), cache_reduction=None
        )
    return wgrad_core_step(tile, isa, core, 0, n, 0)  # a batched GEMM: K whole, no K-block limit


def wgrad_chunked_compilation_info(
    isa: str,
    chunks: int,
    m: int,
    n: int,
    positions: int,
    vendor: str | None = None,
    core: str | None = None,
) -> ir.Attribute | None:
    """The ``compilation_info`` of a chunked weight gradient's batched GEMM ``partial[chunks, m = K,
    n = C]`` over ``positions`` per chunk: ``chunked_wgrad_tile``, one chunk per workgroup row."""
    tile = chunked_wgrad_tile(isa, m, n, vendor, core)
    return None if tile is None else _compilation_info(tile, chunks, m, n, positions)


# A weight gradient whose filter columns R*S*C are no multiple of the register tile's columns
# (the 7x7 stem, C = 3: 147) is computed transposed, DW^T[R*S*C, K] = patches^T x DY: the K
# output channels (a multiple of the tile) become the vectorized columns and R*S*C the rows, of
# which only the last register tile is short. IREE fuses the transposition back to DW[K, R*S*C]
# into the GEMM's dispatch (no dispatch of its own), which bounds a workgroup's rows: its
# [rows, K-block] transposed write is one vector, at most 512 native vectors (IREE's
# LLVMCPUVerifyVectorSizeLegality: 16 KiB on AVX2, 32 KiB on AVX-512). Zen 4 VM (znver4), stem
# 1x3x224x224->64, one thread (benchmarks/dispatch_profile.py --device local-sync): the
# 64x147x12544 GEMM 3.75-5.07 ms (47-63 GFLOP/s) -> 147x64x12544 2.23-2.86 ms (83-106). Whole
# graphs in one process, ratio to PyTorch, batch 1 / batch 8, as rows per workgroup:
# AVX-512 (8x32 register tile), IREE's 147 rows in 64-row workgroups (64 + 64 + 19) 0.65 / 0.55,
# 0.55 / 0.47, 0.67 / 0.47; two blocks of 80 (80 + 67) 0.69 / 0.57, 0.57 / 0.55, 0.75 / 0.66; 72
# 0.68 / 0.51, 96 0.58 / 0.63, 40 0.57 (batch 1). x86-64-v3 code (6x16), PyTorch held to AVX2:
# the table's 48 0.81 / 0.75, 0.84 / 0.83; 54 (three blocks) 0.73 / 0.66, 0.62 / 0.74; 30
# 0.65 / 0.54. The untransposed GEMM in the same runs: AVX-512 0.28-0.33 / 0.25, AVX2 0.45-0.48
# / 0.38-0.40. A first layer's 3x3 1x3x224x224->64 (27 rows), AVX-512: one workgroup 0.44,
# 16 rows 0.61, 8 rows 0.64; x86-64-v3: one 1.55, 18 rows 1.68, 12 rows 1.29. So AVX-512 takes
# the rows in at least two equal blocks of <= DEEP_GEMM_MAX_ROWS, rounded up to the register
# tile (both cores busy), AVX2 the table's rows.
_MAX_VECTOR_BYTES = {"avx2": 32 * 512, "avx512": 64 * 512}
WGRAD_TRANSPOSED_EQUAL_ROW_BLOCKS = {"avx512"}
# AVX2 code also takes the transposed GEMM where the output channels K are few (at most
# WGRAD_TRANSPOSED_MAX_OUT_CHANNELS) and the filter columns more: DW[K, R*S*C] then has 64 or 128
# rows for 48-row workgroups (48 + 16, 48 + 48 + 32) over a deep K, DW^T[R*S*C, K] hundreds.
# x86-64-v3 code on the Zen 4 VM (znver4), PyTorch held to AVX2, the two forms compiled in one
# process and run interleaved, ms (ratio to PyTorch), two runs: ResNet-50's 1x1 8x512x28x28->128
# 8.91 -> 8.01 (0.63 -> 0.70), 11.39 -> 10.92 (0.59 -> 0.62); 8x256x56x56->64 10.39 -> 8.93 (0.57 ->
# 0.66), 14.61 -> 11.87 (0.84 -> 1.04); 1x512x28x28->128 1.38 -> 1.18 (0.67 -> 0.78), 1.50 -> 1.08
# (0.64 -> 0.89); 1x256x56x56->64 1.52 -> 1.08 (0.59 -> 0.84), 1.21 -> 0.97 (0.67 -> 0.85); 3x3
# weight gradients on the GEMM (R*S*C = 576): 1x64x14x14->64 0.262 -> 0.239, 0.199 -> 0.154, 3x3 s2
# 8x64x56x56->128 11.8 -> 9.9, 15.7 -> 9.0, 3x3 s2 1x64x56x56->128 1.00 -> 1.09, 1.04 -> 0.92 and
# 3x3 1x128x7x7->128 (1152) 0.167 -> 0.165, 0.194 -> 0.198 within noise. One thread
# (benchmarks/dispatch_profile.py), 8x256x56x56->64's GEMM 14.8 -> 11.3 ms min. With 256
# output channels it ran even (1x1 8x1024x14x14->256 8.54 / 8.32, 1x1024x14x14->256 1.34 / 1.32)
# and with more filter rows than columns it lost (1x2048x7x7->512 0.92 -> 1.15 ms, 1x512x7x7->2048
# 1.05 -> 1.61). AVX-512 code (8x32 tile in 64-row workgroups) lost or ran even on the same four
# rows (ratio 1.04 -> 0.88, 0.99 -> 0.77, 1.25 -> 1.13, 0.95 -> 0.98) and keeps DW[K, R*S*C].
WGRAD_TRANSPOSED_FEW_OUT_CHANNELS_ISAS = {"avx2"}
WGRAD_TRANSPOSED_MAX_OUT_CHANNELS = 128
# Zen 5 (znver5) takes it from as many output positions as the chunks (WGRAD_CHUNK_MIN_POSITIONS:
# DW^T's chunks, chunked at any output channels), where the untransposed GEMM's few workgroups (K /
# 64 rows of them) had two threads share 2-4. Zen 5 VM, the two forms compiled in one process and
# run interleaved with PyTorch, ms (ratio to PyTorch), two runs: 1x1 8x512x28x28->128 2.65 -> 2.28
# (0.84 -> 0.98), 2.46 -> 2.13 (0.82 -> 0.95); 8x256x56x56->64 2.79 -> 2.63 (0.97 -> 1.03), 2.72 ->
# 2.51 (0.94 -> 1.02). Batch 1 (one GEMM either way) lost, as on Zen 4 above: 1x256x56x56->64 0.307
# -> 0.345, 0.287 -> 0.339; 1x512x28x28->128 0.290 -> 0.306.
WGRAD_TRANSPOSED_FEW_OUT_CHANNELS_CORES = {("avx512", "znver5"): WGRAD_CHUNK_MIN_POSITIONS}


def wgrad_gemm_transposed(
    isa: str,
    out_channels: int,
    filter_columns: int,
    vendor: str | None = None,
    core: str | None = None,
    positions: int = 0,
) -> bool:
    """Whether a weight gradient's GEMM on ``isa`` is computed as ``DW^T[R*S*C, K]`` (see above):
    the ``out_channels`` (K) a multiple of the conv GEMM tile's register columns, and either
    ``filter_columns`` (R*S*C) no multiple of them or, on AVX2 (on the CPU ``core``s of
    WGRAD_TRANSPOSED_FEW_OUT_CHANNELS_CORES over as many output ``positions``), K at most
    ``WGRAD_TRANSPOSED_MAX_OUT_CHANNELS`` and fewer than R*S*C."""
    tile = conv_gemm_tile(isa, out_channels, vendor)
    if tile is None:
        return False
    columns = tile.vector[1]
    if out_channels % columns != 0:
        return False
    min_positions = WGRAD_TRANSPOSED_FEW_OUT_CHANNELS_CORES.get((isa, core or ""))
    few_out_channels = (
        (isa in WGRAD_TRANSPOSED_FEW_OUT_CHANNELS_ISAS or (min_positions is not None and positions >= min_positions))
        and out_channels <= WGRAD_TRANSPOSED_MAX_OUT_CHANNELS
        and filter_columns > out_channels
    )
    return filter_columns % columns != 0 or few_out_channels


def wgrad_transposed_tile(
    isa: str, m: int, n: int, k: int, vendor: str | None = None, core: str | None = None
) -> GemmTile | None:
    """The tile of a transposed weight gradient's f32 GEMM ``DW^T[m = R*S*C, n = K]`` over ``k``
    output positions (see above; the ``core``'s K step, WGRAD_VECTOR_REDUCTION_BY_CORE), or None."""
    tile = conv_gemm_tile(isa, n, vendor)
    if tile is None:
        return None
    rows, (vector_rows, _) = tile.distribution[0], tile.vector
    if isa in WGRAD_TRANSPOSED_EQUAL_ROW_BLOCKS:
        blocks = max(2, math.ceil(m / DEEP_GEMM_MAX_ROWS[isa]))
        rows = math.ceil(math.ceil(m / blocks) / vector_rows) * vector_rows
    columns = min(tile.distribution[1], n)
    rows = min(rows, _MAX_VECTOR_BYTES.get(isa, 16 * 512) // (4 * columns) // vector_rows * vector_rows)
    return wgrad_core_step(replace(tile, distribution=(rows, tile.distribution[1])), isa, core, m, n, k)


def wgrad_transposed_matmul_compilation_info(
    isa: str, m: int, n: int, k: int, vendor: str | None = None, core: str | None = None
) -> ir.Attribute | None:
    """The ``compilation_info`` of a transposed weight gradient's f32 GEMM ``DW^T[m = R*S*C, n = K]``
    over ``k`` output positions, with ``wgrad_transposed_tile``, or None."""
    tile = wgrad_transposed_tile(isa, m, n, k, vendor, core)
    return None if tile is None else _compilation_info(tile, None, m, n, k)


# The row-block GEMMs of a weight gradient with few input channels (conv_layout._row_block_wgrad,
# rules.CPU_CONV_WGRAD_ROW_BLOCKS): DW^T[sh*S*C, K] per block of filter rows, 42 x 64 for the 7x7 s2
# stem, over every output position. Per ISA: (most register rows, register columns); the register
# tile takes the largest divisor of the rows from 4 up (the stem's 42: 7 on AVX-512, 6 on AVX2), a
# workgroup half the rows where the register tile divides them (two row blocks), K in cache blocks
# of 256 from depth 512. Zen 5 VM (znver5), the stem's 1x3x224x224 four GEMMs and their gather in one
# module, two threads, ms (PyTorch beside 1.00-1.17): 7x32 in 21x32 0.86-1.13, 7x64 in 21x64
# 0.87-1.25, 6x32 in 42x32 0.86-1.14, 7x64 in 7x64 0.93-1.35, whole K 0.91-1.15; one thread 7x32
# 1.36, 7x64 1.45, 6x32 1.37. As x86-64-v3 code (PyTorch held to AVX2, 1.54-1.77): 6x16 in 42x32
# 1.72, in 42x16 1.50-1.94, 7x8 in 21x32 3.3-6.1 (the 32 columns a 7x32 AVX2 tile would need spill).
ROW_BLOCK_WGRAD_TILES = {"avx512": (7, 32), "avx2": (6, 16)}
ROW_BLOCK_WGRAD_K_BLOCK = 256


def row_block_wgrad_register_tile(isa: str, rows: int) -> tuple[int, int] | None:
    """(rows, columns) of the register tile of a row-block weight-gradient GEMM of ``rows`` rows
    on ``isa`` (see above), or None."""
    entry = ROW_BLOCK_WGRAD_TILES.get(isa)
    if entry is None:
        return None
    most_rows, columns = entry
    return max((d for d in range(4, most_rows + 1) if rows % d == 0), default=min(most_rows, rows)), columns


def row_block_wgrad_compilation_info(isa: str, rows: int, columns: int, depth: int) -> ir.Attribute | None:
    """The ``compilation_info`` of a row-block weight-gradient GEMM ``DW^T[rows, columns]`` over
    ``depth`` output positions on ``isa`` (see above), or None for IREE's default."""
    tile = row_block_wgrad_register_tile(isa, rows)
    if tile is None:
        return None
    vm, vn = tile
    dm = rows // 2 if rows % 2 == 0 and (rows // 2) % vm == 0 else rows
    dn = min(vn, columns)
    block = ROW_BLOCK_WGRAD_K_BLOCK if depth >= 2 * ROW_BLOCK_WGRAD_K_BLOCK else None
    return _double_tiling_info(
        f"distribution = [{dm}, {dn}, 0], cache_parallel = [{dm}, {dn}, 0], "
        + (f"cache_reduction = [0, 0, {block}], " if block is not None else "")
        + f"vector_common_parallel = [{vm}, {dn}, 0], vector_reduction = [0, 0, {min(8, depth)}]"
    )


# IREE's task system (the local-task pool, a worker per core) hands a dispatch's workgroups to
# its workers POOL_RESERVATION_TILES at a time once there are that many per worker, else one at
# a time (IREE_TASK_DISPATCH_MAX_TILES_PER_SHARD_RESERVATION, runtime/src/iree/task/tuning.h;
# iree_task_dispatch_issue): on two cores a dispatch of 28 equal workgroups runs as 8 + 8 + 8 +
# 4, one worker doing 16 of them while the other does 12. Where a config has a choice of
# workgroup tiles (the direct conv's rows), it takes the largest whose count splits evenly over
# POOL_BALANCE_WORKERS workers, the machines measured and CI. EPYC Zen 1 VM (znver1), stem 7x7 s2
# 1x3x224x224->64 as two bands of rows (conv_layout), in one process, interleaved with PyTorch,
# ms: 8-row workgroups (28) 4.04, 4-row (56, 7 reservations) 4.04; 2-row (112) 3.59, 14-row (16)
# 3.59, four bands of 7-row workgroups (32) 3.59 (PyTorch 3.86); one thread they all ran 5.7-6.5.
POOL_RESERVATION_TILES = 8
POOL_BALANCE_WORKERS = 2


def pool_share(workgroups: int, workers: int = POOL_BALANCE_WORKERS) -> float:
    """The most workgroups any of ``workers`` runs of a dispatch of ``workgroups`` equal ones,
    each worker reserving the next ones as it frees up (see above), over an even share."""
    step = POOL_RESERVATION_TILES if workgroups >= workers * POOL_RESERVATION_TILES else 1
    loads = [0] * workers
    for start in range(0, workgroups, step):
        loads[loads.index(min(loads))] += min(step, workgroups - start)
    return max(loads) * workers / workgroups


# A conv with few input channels (the 7x7 stride-2 stem, C = 3) as im2col writes and reads
# back a patch matrix R*S times its input (the stem at batch 8: 59 MB for a 4.8 MB input), 40%
# of its time. As IREE's direct linalg.conv_2d_nhwc_hwcf (ConvTileAndDecomposeExpert) it
# reads the padded input in place; IREE's own register tile there is 8 output columns x 16
# channels (8 accumulators). Tiles of [N, OH, OW, K] per workgroup / per register block, all
# R, S and C taps per vector step. Intel AVX-512 (sapphirerapids as named), one thread,
# iree-benchmark-module local-sync, stem 8x3x224x224->64 (PyTorch 12.8 ms, im2col GEMM 25.0):
# IREE's 8x16 15.9 ms, 4x64 13.0, 8x32 12.6-13.6, 8x64 22.9, 7x64 16.1, 2x64 14.7; register
# tiles that do not divide the output width fall off the vector path (6x64 492 ms), so
# rules.CPU_CONV_DIRECT_FEW_CHANNELS only takes shapes the tile divides. The same tiles on AMD,
# Zen 5 VM (znver5; its AVX2 side as znver3 code, PyTorch held to AVX2), fusilli-benchmark
# --compare torch, im2col GEMM (Winograd for the first layer) -> direct, ratio to PyTorch, two
# runs on AVX-512: stem 8x3x224x224->64 0.31-0.38 -> 1.01-1.04, stem 1x3x224x224 0.59-0.60 ->
# 0.87-0.95, 3x3 s1 1x3x224x224->64 0.12-0.16 -> 0.58-1.03; AVX2: 0.63 -> 0.89, 0.87 -> 0.82
# (within its noise), 0.26 -> 0.78. AVX2 code for no named CPU (x86-64-v3, vendor "") takes
# the AVX2 tile both vendors measured: as x86-64-v3 code on a Zen 4 VM (PyTorch held to AVX2),
# im2col GEMM (Winograd for the first layer) -> direct, in one process, two runs: stem
# 1x3x224x224 0.75-0.77 -> 0.89, stem 8x3x224x224 0.72-0.74 -> 0.97, 3x3 s1 1x3x224x224->64
# 0.19-0.21 -> 0.82-0.84. AMD's AVX2 cores take 4 output columns x 16 channels (8 accumulators,
# as 8x8, but two 8-wide filter loads per tap and half the input broadcasts): EPYC Zen 1 VM
# (znver1), in one process, interleaved, ratio to PyTorch, three runs, 8x8 -> 4x16: stem
# 8x3x224x224->64 0.83 -> 1.08, 0.84 -> 1.09, 0.87 -> 1.09 (2x32: 1.02-1.04, 8x16 0.81, 4x8 0.79);
# stem 1x3x224x224 0.80 -> 0.81, 0.75 -> 0.83, 0.78 -> 0.80; first layer 3x3 1x3x224x224->64 1.10
# -> 1.10, 1.07 -> 1.08.
DIRECT_CONV_TILES_BY_VENDOR = {
    ("avx512", "intel"): ((1, 8, 56, 64), (1, 1, 8, 32)),
    ("avx2", "intel"): ((1, 8, 56, 64), (1, 1, 8, 8)),
    ("avx512", "amd"): ((1, 8, 56, 64), (1, 1, 8, 32)),
    ("avx2", "amd"): ((1, 8, 56, 64), (1, 1, 4, 16)),
    ("avx2", ""): ((1, 8, 56, 64), (1, 1, 8, 8)),
}


# IREE's global optimization folds a conv's unit batch away (FoldUnitExtentDims) and drops its
# compilation_info doing so: a batch-1 direct conv (cpu-conv-direct-few-channels) ran with IREE's
# own tiles (8x8, its workgroups 16 rows) where a larger batch kept the table's. So a batch of
# one image runs as DIRECT_ROW_BANDS images, each a band of the output's rows, and keeps its
# config. EPYC Zen 1 VM (znver1), in one process, interleaved, ratio to PyTorch, one band (the
# config lost) -> two: stem 7x7 s2 1x3x224x224->64 0.82 -> 0.93 (+ bias + relu 0.93 -> 1.03), 3x3
# 1x3x224x224->64 1.05 -> 1.32, 5x5 s2 1x3x224x224->64 0.88 -> 0.98 (with 8-row workgroups,
# before pool_share chose their rows); one thread, the stem's conv 7.9-8.2 -> 6.0-6.5 ms. With
# pool_share's rows too, fusilli-benchmark --compare torch, the code before and after in
# alternating processes, two runs: stem 0.95, 0.85 -> 1.06, 1.08 (+ bias + relu 0.92 -> 1.17),
# 3x3 0.99, 1.08 -> 1.30, 1.31, 5x5 s2 0.85, 0.86 -> 1.06, 1.07, 3x3 s2 1x3x224x224->32 0.79, 0.80
# -> 0.94, 0.95; batch 8 (not cut) 1.07 -> 1.06, 1.09. x86-64-v3 code (the 8x8 tile, IREE's own
# vector tile too), in one process: even, 0.87-1.07 against 0.88-1.07 as one image (IREE's
# 16-row workgroups); 8-row workgroups (28 for the stem) lost there as well, 0.78-0.80.
DIRECT_ROW_BANDS = 2


def direct_conv_row_bands(n: int, oh: int) -> int:
    """The images a direct conv of ``n`` images and ``oh`` output rows runs as (1: as it is;
    conv_layout cuts the rows into bands)."""
    return DIRECT_ROW_BANDS if n == 1 and oh % DIRECT_ROW_BANDS == 0 else 1


def direct_conv_vector_tile(isa: str, vendor: str | None = None) -> tuple[int, int] | None:
    """(output columns, output channels) of the register tile of a direct conv on ``isa``, or None."""
    entry = DIRECT_CONV_TILES_BY_VENDOR.get((isa, vendor or ""))
    return None if entry is None else (entry[1][2], entry[1][3])


def direct_conv_compilation_info(
    isa: str, out_dims: tuple[int, int, int, int], channels: int, vendor: str | None = None
) -> ir.Attribute | None:
    """The ``compilation_info`` of an f32 ``linalg.conv_2d_nhwc_hwcf`` with output ``[N, OH, OW, K]``
    over ``channels`` input channels on ``isa`` (and the CPU ``vendor``), or None where the table
    has no entry or its register tile does not divide the output. IREE decomposes the conv into
    1-D convs, so a vector step takes one filter tap row and column and every input channel."""
    entry = DIRECT_CONV_TILES_BY_VENDOR.get((isa, vendor or ""))
    if entry is None:
        return None
    (_, dist_oh, dist_ow, dist_k), (_, _, vec_ow, vec_k) = entry
    n, oh, ow, k = out_dims
    if ow % vec_ow or k % vec_k:
        return None
    # Workgroup tiles: the largest that divide the output and are multiples of the register tile,
    # rows first cut to the most that split evenly over the pool (see pool_share).
    dist_ow = max(d for d in range(vec_ow, min(dist_ow, ow) + 1, vec_ow) if ow % d == 0)
    dist_k = max(d for d in range(vec_k, min(dist_k, k) + 1, vec_k) if k % d == 0)
    columns = n * (ow // dist_ow) * (k // dist_k)
    row_tiles = sorted((d for d in range(1, dist_oh + 1) if oh % d == 0), reverse=True)
    dist_oh = min(row_tiles, key=lambda d: pool_share(columns * (oh // d)))
    text = (
        "#iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<"
        f"distribution = [1, {dist_oh}, {dist_ow}, {dist_k}, 0, 0, 0], "
        f"vector_common_parallel = [1, 1, {vec_ow}, {vec_k}, 0, 0, 0], "
        f"vector_reduction = [0, 0, 0, 0, 1, 1, {channels}]>, "
        "translation_info = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<ConvTileAndDecomposeExpert>>>"
    )
    return ir.Attribute.parse(text)


# Grouped convs of several channels per group (rules.CPU_CONV_GROUPED_DIRECT, conv_direct.grouped_conv):
# a reduction generic over (n, oh, ow, g, kg, cg), vectorized along a group's Kg output channels
# with the input broadcast, a register tile of output columns x Kg. Vectors are one group wide,
# so a group of 8 output channels fills half an AVX-512 register. Every R*S tap's filter vector is
# live beside the accumulators, so about 8 accumulator registers ran fastest: prototypes on the Zen
# 5 VM (znver5), 2 threads, fastest of 40 calls in ms, columns x channels per register tile, 3x3 g32:
# AVX-512 8x256x28x28 (Kg 8) 14x8 1.16-1.23, 7x8 1.14-1.18, 4x8 1.16-1.17 (IREE's own tiles: 0.28
# of PyTorch, one thread); 8x512x14x14 (Kg 16) 14x16 1.00-1.03, 7x16 0.63-0.72, 5x16 0.62, 4x16
# 0.70, two groups at once (7x2x16) 0.78; 8x1024x7x7 (Kg 32) 7x32 1.01-1.02, 4x32 0.80-0.88 (7 in 4
# and a peeled 3), 3x32 0.92, 2x32 1.08, 7x16 1.15-1.20. As x86-64-v3 code: Kg 8 12x8 1.31, 7x8
# 1.33, 4x8 1.24; Kg 16 4x16 1.12, 2x16 1.24, 6x8 1.19, 7x8 1.32; Kg 32 2x32 1.22, 4x16 1.41, 3x16
# 1.39, 7x8 2.36. Hence up to this many accumulator registers ...
GROUPED_CONV_ACCUMULATORS = 8
# ... of a group's channels up to this many registers wide (F32_LANES each), on these ISAs.
GROUPED_CONV_CHANNEL_REGISTERS = 4
GROUPED_CONV_ISAS = ("avx512", "avx2")


def grouped_conv_compilation_info(isa: str, dims: dict[str, int]) -> ir.Attribute | None:
    """The ``compilation_info`` of conv_direct.grouped_conv's generic on ``isa`` (None for ISAs
    without a tile), over its iteration ``dims`` (``n, oh, ow, g, kg, cg`` by name and extent, in
    that order, those of extent 1 left out as the generic leaves them out): a register tile of a
    group's channels (up to GROUPED_CONV_CHANNEL_REGISTERS registers) by output columns (up to
    GROUPED_CONV_ACCUMULATORS accumulators: a divisor of OW from three quarters of that up, else
    that many with a peeled remainder), workgroups of whole output rows and of the most groups that
    split evenly over the pool (pool_share), one input channel per vector step."""
    if isa not in GROUPED_CONV_ISAS:
        return None
    ow, groups, per_group = dims.get("ow", 1), dims.get("g", 1), dims.get("kg", 1)
    lanes = F32_LANES[isa]
    vec_k = max(d for d in range(1, min(per_group, GROUPED_CONV_CHANNEL_REGISTERS * lanes) + 1) if per_group % d == 0)
    columns = min(ow, max(1, GROUPED_CONV_ACCUMULATORS // -(-vec_k // lanes)))
    divisor = max(d for d in range(1, columns + 1) if ow % d == 0)
    vec_ow = divisor if 4 * divisor >= 3 * columns else columns
    dist_g = _pool_group_tile(groups, dims.get("n", 1) * dims.get("oh", 1))
    distribution = {"n": 1, "oh": 1, "ow": ow, "g": dist_g, "kg": per_group, "cg": 0}
    vector = {"n": 1, "oh": 1, "ow": vec_ow, "g": 1, "kg": vec_k, "cg": 0}
    return _named_tiles_info(dims, distribution, vector, {name: int(name == "cg") for name in dims})


def _pool_group_tile(groups: int, others: int) -> int:
    """The most groups per workgroup (a divisor of ``groups``) whose ``others * groups / tile``
    workgroups split most evenly over the pool (pool_share)."""
    group_tiles = sorted((d for d in range(1, groups + 1) if groups % d == 0), reverse=True)
    return min(group_tiles, key=lambda d: pool_share(others * (groups // d)))


def _named_tiles_info(
    dims, distribution: dict[str, int], vector: dict[str, int], reduction: dict[str, int]
) -> ir.Attribute:
    """``_double_tiling_info`` of a generic whose iteration ``dims`` are named: each level's tile
    sizes given by name, in the order of ``dims``."""

    def tiles(sizes: dict[str, int]) -> str:
        return "[" + ", ".join(str(sizes[name]) for name in dims) + "]"

    return _double_tiling_info(
        f"distribution = {tiles(distribution)}, vector_common_parallel = {tiles(vector)}, "
        f"vector_reduction = {tiles(reduction)}"
    )


# Grouped weight gradients (rules.CPU_CONV_GROUPED_WGRAD, conv_direct.grouped_wgrad): up to this
# many filter taps are the results of one reduction generic over (n, chunk, g, cg, kg | p) summing a
# chunk's output positions, vectorized along a group's Kg output channels with X broadcast, a
# register tile of input channels x Kg per tap. Nine taps in one generic against one generic per tap
# (prototype, HAL profiler, fastest dispatch, summed over the taps, 3x3 g32): 8x128x56x56 2.9 ms
# against 7.6, 8x256x28x28 1.15-1.27 against 2.1-2.2 (3 taps a generic 1.34, 5 1.30), 8x512x14x14
# 1.09 against 1.19, 1x256x28x28 0.15 against 0.27 (the register tile: below).
GROUPED_WGRAD_TAPS_PER_GENERIC = 9
# A chunk is the most output rows, dividing Ho, whose gathered X and DY (f32) fit in this many
# bytes, so that a workgroup's pass of every group over its chunk reads it from cache (more where
# the chunk's partial sums would outweigh it) ...
GROUPED_WGRAD_CHUNK_BYTES = 1 << 20
CACHE_LINE_BYTES = 64
# ... this many input channels per tap (each an accumulator per register of Kg) for nine taps, by
# ISA and the registers Kg fills (9 / taps times as many for fewer taps), Kg up to 2 registers
# wide, this many positions per vector step. Fusilli's IR, HAL profiler, mean us of
# the contraction(s) by input channels per tap: AVX-512 8x256x28x28 (Kg 8, half a register) 1 3316,
# 2 1473-1495, 4 1055-1114, 8 1154; 8x512x14x14 (Kg 16) 1 1676, 2 1019, 4 672, 8 636; 8x1024x7x7
# (Kg 32, 2 registers) 1 526, 2 586, 4 727; 8x128x56x56 (Kg 4) 2 3044, 4 2762, 8 2917; s2
# 8x512x28x28 (4 + 2 + 2 + 1 taps) 4 for all 1390, 8 934, 4 / 8 / 8 / 16 904; x86-64-v3 code
# 8x256x28x28 2 1484, 4 1284, 8 1706; 8x512x14x14 (Kg 16 in 2 registers) 1 2243, 2 1669, 4 1876.
GROUPED_WGRAD_CHANNELS_PER_TAP = {("avx512", 1): 4, ("avx512", 2): 1, ("avx2", 1): 4, ("avx2", 2): 2}
GROUPED_WGRAD_CHANNEL_REGISTERS = 2
GROUPED_WGRAD_POSITIONS = 8


def grouped_wgrad_chunk_rows(
    out_rows: int,
    pitch: int,
    reach_rows: int,
    x_channels: int,
    out_channels: int,
    group_floats: int,
    partial_bytes: int,
) -> int:
    """Output rows per chunk of conv_direct.grouped_wgrad, a divisor of ``out_rows``. Where a
    group's channels (``group_floats``: the fewer of its input and output channels) fill whole
    cache lines, no two groups share a line and a chunk is a whole image. Otherwise the most rows
    whose gathered input (``rows + reach_rows`` rows of ``pitch`` positions, ``x_channels`` f32
    each over the stride's phases) and output gradient (``rows`` of ``pitch`` x ``out_channels``)
    fit in GROUPED_WGRAD_CHUNK_BYTES (one row where none does), then more while a chunk's
    ``partial_bytes`` of partial sums, written and read back once, outweigh its data (3x3 g32 s2
    8x1024x14x14: 56 chunks of one row summed 66 MB of partial sums in 1.8-2.1 ms)."""
    if 4 * group_floats >= CACHE_LINE_BYTES:
        return out_rows

    def size(rows: int) -> int:
        return 4 * pitch * ((rows + reach_rows) * x_channels + rows * out_channels)

    divisors = [d for d in range(1, out_rows + 1) if out_rows % d == 0]
    rows = max((d for d in divisors if size(d) <= GROUPED_WGRAD_CHUNK_BYTES), default=1)
    return min((d for d in divisors if d >= rows and partial_bytes <= size(d)), default=out_rows)


def grouped_wgrad_compilation_info(isa: str, dims: dict[str, int], taps: int = 1) -> ir.Attribute | None:
    """The ``compilation_info`` of conv_direct.grouped_wgrad's contraction generics of ``taps``
    filter taps (one result each) on ``isa`` (None for ISAs without a tile), over its iteration
    ``dims`` (``n, chunk, g, cg, kg, p`` by name and extent, those of extent 1 left out): a register
    tile, per tap, of a group's output channels (up to GROUPED_WGRAD_CHANNEL_REGISTERS registers) by
    its input channels (GROUPED_WGRAD_CHANNELS_PER_TAP),
    GROUPED_WGRAD_POSITIONS positions per vector step, workgroups of one chunk and of the most groups
    that split evenly over the pool (pool_share)."""
    if isa not in GROUPED_CONV_ISAS:
        return None
    groups, per_group, out_per_group = dims.get("g", 1), dims.get("cg", 1), dims.get("kg", 1)
    lanes = F32_LANES[isa]
    vec_kg = max(
        d for d in range(1, min(out_per_group, GROUPED_WGRAD_CHANNEL_REGISTERS * lanes) + 1) if out_per_group % d == 0
    )
    registers = -(-vec_kg // lanes)
    channels = max(1, GROUPED_WGRAD_CHANNELS_PER_TAP[isa, registers] * GROUPED_WGRAD_TAPS_PER_GENERIC // taps)
    vec_cg = max(d for d in range(1, min(per_group, channels) + 1) if per_group % d == 0)
    dist_g = _pool_group_tile(groups, dims.get("n", 1) * dims.get("chunk", 1))
    distribution = {"n": 1, "chunk": 1, "g": dist_g, "cg": per_group, "kg": out_per_group, "p": 0}
    vector = {"n": 1, "chunk": 1, "g": 1, "cg": vec_cg, "kg": vec_kg, "p": 0}
    return _named_tiles_info(
        dims, distribution, vector, {name: GROUPED_WGRAD_POSITIONS if name == "p" else 0 for name in dims}
    )


# Depthwise weight gradients (rules.CPU_CONV_DEPTHWISE_WGRAD, conv_direct.depthwise_wgrad): up to this
# many filter taps are the results of one reduction generic over (n, oh, c | j) summing an output row's
# column pairs, vectorized along the channels ...
DEPTHWISE_WGRAD_TAPS_PER_GENERIC = 9
# ... in workgroups of this many output rows and up to this many channels (a divisor of C, in
# registers of the ISA's lanes), a register tile of this many rows by one register of channels per
# tap. Prototype (the padded input gathered, HAL profiler, mean us of the generic) at 3x3
# 8x144x56x56, workgroup rows / channels, vector rows / channels: 8 / 144, 1 / 16 1000; 4 / 48, 1 /
# 16 895; 4 / 16, 1 / 16 817; 4 / 48, 1 / 32 739; 4 / 48, 2 / 16 695; 8 / 144, 1 / 48 3431; s2
# 8x144x56x56 4 / 48, 2 / 16 252, 1 / 16 293, 8 / 48, 2 / 16 272; 8x384x14x14 4 / 48, 2 / 16 68, 1 / 16
# 72, 8 / 48, 2 / 16 59; as x86-64-v3 code 8x144x56x56 4 / 48, 2 / 8 1194, 1 / 8 1394, 1 / 16 1162, s2
# 490 / 471 / 457.
DEPTHWISE_WGRAD_ROWS = 4
DEPTHWISE_WGRAD_CHANNELS = 48
DEPTHWISE_WGRAD_VECTOR_ROWS = 2
# Where the positions whose taps all read inside the input (in whole column pairs) are at least this
# share of a depthwise weight gradient's, they read the input where it lies and small gathers serve
# the strips around them (conv_direct.depthwise_wgrad); else all positions are one strip over the
# input padded by a gather. Alternating processes, two rounds, fusilli median ms, padded -> split:
# 3x3 1x32x112x112 (inside 96%) 0.129, 0.157 -> 0.113, 0.125; s2 8x96x112x112 (95%) 3.43, 3.37 ->
# 1.41, 1.44; 8x144x56x56 (93%) 1.66, 2.70 -> 1.03, 1.07; s2 8x144x56x56 (90%) 0.89, 0.93 -> 0.45,
# 0.45; 8x192x28x28 (86%) even, 0.293, 0.385 -> 0.310, 0.305; 8x384x14x14 (73%) lost, 0.255, 0.222 ->
# 0.302, 0.236.
DEPTHWISE_WGRAD_SPLIT_MIN_INSIDE = 0.88
# The rows' partial sums are added up in workgroups of DEPTHWISE_WGRAD_CHANNELS channels, this many
# per vector (2 registers on AVX2): IREE's own tiles vectorized along the taps and ran 3.5-4.0 ms at
# 8x144x56x56 as x86-64-v3 code (45-60 us with these; 40-50 its own on AVX-512).
DEPTHWISE_WGRAD_SUM_VECTOR = 16


def _channel_tile(channels: int, vector: int, most: int) -> int:
    """Channels per workgroup: the most, up to ``most``, that divide ``channels`` in whole vectors
    of ``vector``; else ``min(channels, most)`` (a peeled remainder)."""
    tiles = [d for d in range(vector, most + 1, vector) if channels % d == 0]
    return max(tiles) if tiles else min(channels, most)


def depthwise_wgrad_compilation_info(isa: str, dims: dict[str, int]) -> ir.Attribute | None:
    """The ``compilation_info`` of conv_direct.depthwise_wgrad's row-sum generics on ``isa`` (None
    for ISAs without a tile), over its iteration ``dims`` (``n, oh, c, j`` by name and extent, those of
    extent 1 left out): workgroups of DEPTHWISE_WGRAD_ROWS rows and DEPTHWISE_WGRAD_CHANNELS
    channels, a register tile of DEPTHWISE_WGRAD_VECTOR_ROWS rows by one register of channels, one
    column pair per vector step."""
    if isa not in GROUPED_CONV_ISAS:
        return None
    lanes = F32_LANES[isa]
    channels = dims["c"]
    vector_c = min(lanes, channels)
    distribution = {
        "n": 1,
        "oh": DEPTHWISE_WGRAD_ROWS,
        "c": _channel_tile(channels, vector_c, DEPTHWISE_WGRAD_CHANNELS),
        "j": 0,
    }
    vector = {"n": 1, "oh": DEPTHWISE_WGRAD_VECTOR_ROWS, "c": vector_c, "j": 0}
    return _named_tiles_info(dims, distribution, vector, {name: int(name == "j") for name in dims})


def depthwise_wgrad_sum_compilation_info(isa: str, channels: int) -> ir.Attribute | None:
    """The ``compilation_info`` of conv_direct.depthwise_wgrad's sum of the rows' partials, a generic
    over ``(c, t | q)`` (None for ISAs without a tile): see DEPTHWISE_WGRAD_SUM_VECTOR."""
    if isa not in GROUPED_CONV_ISAS:
        return None
    vector_c = min(DEPTHWISE_WGRAD_SUM_VECTOR, channels)
    dims = {"c": channels, "t": 1, "q": 1}
    distribution = {"c": _channel_tile(channels, vector_c, DEPTHWISE_WGRAD_CHANNELS), "t": 1, "q": 0}
    return _named_tiles_info(dims, distribution, {"c": vector_c, "t": 1, "q": 0}, {"c": 0, "t": 0, "q": 1})
