# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64-v3 %python %s | filecheck %s --check-prefixes=CHECK,TUNED,AVX2
# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,TUNED,AMD
# RUN: env FUSILLI_LIT_TARGET=cpu:sapphirerapids %python %s | filecheck %s --check-prefixes=CHECK,TUNED,INTEL
# RUN: env FUSILLI_LIT_TARGET=cpu:znver1 %python %s | filecheck %s --check-prefixes=CHECK,ZEN
# RUN: env FUSILLI_LIT_TARGET=cpu:znver3 %python %s | filecheck %s --check-prefixes=CHECK,ZEN3

# A channels-last weight gradient Winograd does not take is one GEMM over the output positions,
# DW[K, R*S*C] = DY^T x patches (fusilli-conv-layout). Where cpu-conv-wgrad-gemm holds (AVX2
# code; AMD and Intel AVX-512) it carries the conv GEMM's lowering config (gemm_config.
# wgrad_matmul_compilation_info): 1x1 8x1024x14x14 -> 256 is 1568 deep, in K blocks of 256;
# 3x3 stride 2 1x64x29x29 -> 64 is a patch gather (read through the padding) and 225 deep,
# whole K. Intel AVX-512 takes its own tile (6x64 in 60x64 workgroups; AMD's 8x32 in 64x64 for a DW of
# fewer rows than columns from 784 positions). AVX2 takes a GEMM with at most 128 output
# channels and more filter columns transposed, DW^T[R*S*C, K] (gemm_config.wgrad_gemm_transposed).
# AMD's AVX2 cores (znver1) leave a stride-1 GEMM of >= 96 positions with >= 128 output channels
# and filter columns plain, for IREE's data tiling (rules.CPU_CONV_WGRAD_DATA_TILING; its flags).
# Zen 3 (znver3) steps K one position at a time in the GEMMs of >= 128 columns
# (gemm_config.WGRAD_VECTOR_REDUCTION_BY_CORE), g.explain says so.

from lit_helpers import TARGET_ARCH, TARGET_BACKEND, explained_and_optimized, nhwc_wgrad_graph, run


@run
def wgrad_1x1_deep():
    g = nhwc_wgrad_graph("wgrad_1x1_deep", 8, 1024, 14, 256, 1, 1, 0)
    print(explained_and_optimized(g))


# CHECK-LABEL: TEST: wgrad_1x1_deep
# TUNED: wgrad [conv_wgrad]: {{.*}}cpu-conv-wgrad-gemm (one GEMM over 1568 output positions
# AVX2: #iree_cpu.lowering_config<{{.*}}cache_reduction = [0, 0, 256], distribution = [48, 64, 0], vector_common_parallel = [6, 16, 0]
# AMD: #iree_cpu.lowering_config<{{.*}}cache_reduction = [0, 0, 256], distribution = [64, 64, 0], vector_common_parallel = [8, 32, 0]
# (Intel: DW[256, 1024] has fewer rows than columns, AMD's 8x32: gemm_config.WGRAD_FEW_ROWS_TILES.)
# INTEL: #iree_cpu.lowering_config<{{.*}}cache_reduction = [0, 0, 256], distribution = [64, 64, 0], vector_common_parallel = [8, 32, 0]
# TUNED: linalg.matmul indexing_maps = {{.*}} {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1568x256xf32>, tensor<1568x1024xf32>) outs(%{{.*}} : tensor<256x1024xf32>)
# ZEN: cpu-conv-wgrad-data-tiling (one GEMM DW[256, 1024] over 1568 output positions, data-tiled for avx2, AMD
# ZEN-NOT: compilation_info
# ZEN: linalg.matmul indexing_maps = [{{.*}}] ins(%{{.*}}, %{{.*}} : tensor<1568x256xf32>, tensor<1568x1024xf32>) outs(%{{.*}} : tensor<256x1024xf32>)
# ZEN3: cpu-conv-wgrad-data-tiling (one GEMM DW[256, 1024] over 1568 output positions, data-tiled for avx2, AMD
# ZEN3-NOT: compilation_info


@run
def wgrad_3x3_strided():
    g = nhwc_wgrad_graph("wgrad_3x3_strided", 1, 64, 29, 64, 3, 2, 1)
    print(explained_and_optimized(g))


# The patches read X through its padding (conv_direct.padded_patches: no tensor.pad, masked
# tensor.extract): 2 dispatches, the gather and the GEMM.
# CHECK-LABEL: TEST: wgrad_3x3_strided
# TUNED: cpu-conv-wgrad-gemm (one GEMM over 225 output positions
# AVX2-SAME: as DW^T[R*S*C = 576, K]
# Stride 2 ran even data-tiled on Zen 1: the tile.
# ZEN: cpu-conv-wgrad-gemm (one GEMM over 225 output positions as DW^T[R*S*C = 576, K]
# AMD-NOT: DW^T
# INTEL-NOT: DW^T
# CHECK-NOT: tensor.pad
# CHECK: outs(%{{.*}} : tensor<1x15x15x3x3x64xf32>)
# CHECK: tensor.extract %{{.*}} : tensor<1x29x29x64xf32>
# CHECK: arith.select
# AVX2: linalg.matmul indexing_maps = {{.*}} {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<225x576xf32>, tensor<225x64xf32>) outs(%{{.*}} : tensor<576x64xf32>)
# AMD: linalg.matmul indexing_maps = {{.*}} {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<225x64xf32>, tensor<225x576xf32>) outs(%{{.*}} : tensor<64x576xf32>)
# INTEL: linalg.matmul indexing_maps = {{.*}} {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<225x64xf32>, tensor<225x576xf32>) outs(%{{.*}} : tensor<64x576xf32>)
# ZEN: linalg.matmul indexing_maps = {{.*}} {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<225x576xf32>, tensor<225x64xf32>) outs(%{{.*}} : tensor<576x64xf32>)


@run
def wgrad_1x1_few_out_channels():
    g = nhwc_wgrad_graph("wgrad_1x1_few_out_channels", 1, 256, 56, 64, 1, 1, 0)
    print(explained_and_optimized(g))


# ResNet-50's 1x1 256 -> 64: DW[64, 256] has one 64-row workgroup of AVX2's 48 rows and a
# remainder; AVX2 computes DW^T[256, 64] (and permutes it back in the GEMM's dispatch), AVX-512
# keeps DW[64, 256].
# CHECK-LABEL: TEST: wgrad_1x1_few_out_channels
# AVX2: cpu-conv-wgrad-gemm (one GEMM over 3136 output positions as DW^T[R*S*C = 256, K]
# AVX2: #iree_cpu.lowering_config<{{.*}}cache_reduction = [0, 0, 256], distribution = [48, 64, 0], vector_common_parallel = [6, 16, 0]
# AVX2: linalg.matmul indexing_maps = {{.*}} {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<3136x256xf32>, tensor<3136x64xf32>) outs(%{{.*}} : tensor<256x64xf32>)
# AMD-NOT: DW^T
# AMD: linalg.matmul indexing_maps = {{.*}} {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<3136x64xf32>, tensor<3136x256xf32>) outs(%{{.*}} : tensor<64x256xf32>)
# Intel AVX-512 takes AMD's 8x32 for a DW of fewer rows than columns (gemm_config.WGRAD_FEW_ROWS_TILES).
# INTEL: cpu-conv-wgrad-gemm (one GEMM over 3136 output positions, a 8x32 register tile in 64x64 workgroups for avx512, Intel)
# INTEL: #iree_cpu.lowering_config<{{.*}}distribution = [64, 64, 0], vector_common_parallel = [8, 32, 0]
# INTEL: linalg.matmul indexing_maps = {{.*}} {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<3136x64xf32>, tensor<3136x256xf32>) outs(%{{.*}} : tensor<64x256xf32>)
# 64 output channels ran even or behind data-tiled on Zen 1: the tile.
# ZEN: cpu-conv-wgrad-gemm (one GEMM over 3136 output positions as DW^T[R*S*C = 256, K]
# ZEN: linalg.matmul indexing_maps = {{.*}} {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<3136x256xf32>, tensor<3136x64xf32>) outs(%{{.*}} : tensor<256x64xf32>)


@run
def wgrad_1x1_chunked():
    g = nhwc_wgrad_graph("wgrad_1x1_chunked", 8, 128, 28, 512, 1, 1, 0)
    print(explained_and_optimized(g))


# ResNet-50's 1x1 8x128x28x28 -> 512: 6272 output positions summed in 28 chunks of 224
# (gemm_config.wgrad_chunk_positions): a batched GEMM of partials [28, K, C] with the conv GEMM's
# tile, a chunk per row of workgroups, then their sum over the chunks.
# CHECK-LABEL: TEST: wgrad_1x1_chunked
# TUNED: cpu-conv-wgrad-gemm (one batched GEMM over 28 chunks of 224 output positions, summed
# AVX2: #iree_cpu.lowering_config<{{.*}}distribution = [1, 48, 64, 0], vector_common_parallel = [1, 6, 16, 0], vector_reduction = [0, 0, 0, 8]>
# AMD: #iree_cpu.lowering_config<{{.*}}distribution = [1, 64, 64, 0], vector_common_parallel = [1, 8, 32, 0], vector_reduction = [0, 0, 0, 8]>
# INTEL: #iree_cpu.lowering_config<{{.*}}distribution = [1, 60, 64, 0], vector_common_parallel = [1, 6, 64, 0], vector_reduction = [0, 0, 0, 8]>
# TUNED: tensor.expand_shape {{.*}} : tensor<6272x512xf32> into tensor<28x224x512xf32>
# TUNED: tensor.expand_shape {{.*}} : tensor<6272x128xf32> into tensor<28x224x128xf32>
# TUNED: linalg.batch_matmul indexing_maps = {{.*}} {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<28x224x512xf32>, tensor<28x224x128xf32>) outs(%{{.*}} : tensor<28x512x128xf32>)
# TUNED: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%{{.*}} : tensor<28x512x128xf32>) outs(%{{.*}} : tensor<512x128xf32>)
# TUNED: arith.addf
# AMD's AVX2 cores (znver1) halve the chunk: 256 positions of DY and X rows are 640 KB, more than
# their 512 KB L2 (gemm_config.WGRAD_CHUNK_L2_BYTES).
# ZEN: cpu-conv-wgrad-gemm (one batched GEMM over 49 chunks of 128 output positions, summed
# ZEN: linalg.batch_matmul indexing_maps = {{.*}} {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<49x128x512xf32>, tensor<49x128x128xf32>) outs(%{{.*}} : tensor<49x512x128xf32>)
# ZEN: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%{{.*}} : tensor<49x512x128xf32>) outs(%{{.*}} : tensor<512x128xf32>)
# Zen 3 keeps the chunk of 224 (gemm_config.WGRAD_CHUNK_WHOLE_CORES).
# ZEN3: cpu-conv-wgrad-gemm (one batched GEMM over 28 chunks of 224 output positions, summed, conv GEMM tile for avx2, AMD (znver3: K one position per vector step))
# ZEN3: #iree_cpu.lowering_config<{{.*}}distribution = [1, 48, 64, 0], vector_common_parallel = [1, 6, 16, 0], vector_reduction = [0, 0, 0, 1]>
# ZEN3: linalg.batch_matmul indexing_maps = {{.*}} {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<28x224x512xf32>, tensor<28x224x128xf32>) outs(%{{.*}} : tensor<28x512x128xf32>)


@run
def wgrad_1x1_few_out_channels_chunked():
    g = nhwc_wgrad_graph("wgrad_1x1_few_out_channels_chunked", 8, 256, 56, 64, 1, 1, 0)
    print(explained_and_optimized(g))


# ResNet-50's 1x1 8x256x56x56 -> 64: AVX2's DW^T[256, 64] takes 98 chunks of 256 positions; AMD
# AVX-512's DW[64, 256] (64 output channels) stays one GEMM.
# CHECK-LABEL: TEST: wgrad_1x1_few_out_channels_chunked
# AVX2: cpu-conv-wgrad-gemm (one batched GEMM over 98 chunks of 256 output positions, summed as DW^T[R*S*C = 256, K]
# ZEN: cpu-conv-wgrad-gemm (one batched GEMM over 98 chunks of 256 output positions, summed as DW^T[R*S*C = 256, K]
# AVX2: linalg.batch_matmul indexing_maps = {{.*}} {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<98x256x256xf32>, tensor<98x256x64xf32>) outs(%{{.*}} : tensor<98x256x64xf32>)
# AVX2: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%{{.*}} : tensor<98x256x64xf32>) outs(%{{.*}} : tensor<256x64xf32>)
# AMD: cpu-conv-wgrad-gemm (one GEMM over 25088 output positions, conv GEMM tile
# AMD-NOT: batch_matmul
# AMD: linalg.matmul indexing_maps = {{.*}} {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<25088x64xf32>, tensor<25088x256xf32>) outs(%{{.*}} : tensor<64x256xf32>)
# Zen 3 keeps K steps of 8 in GEMMs of 64 columns.
# ZEN3: summed as DW^T[R*S*C = 256, K], conv GEMM tile for avx2, AMD)
# ZEN3: #iree_cpu.lowering_config<{{.*}}distribution = [1, 48, 64, 0], vector_common_parallel = [1, 6, 16, 0], vector_reduction = [0, 0, 0, 8]>


@run
def wgrad_few_channels():
    g = nhwc_wgrad_graph("wgrad_few_channels", 1, 3, 64, 64, 5, 2, 2)
    print(explained_and_optimized(g))


# A 5x5 stride-2 filter over 3 input channels leaves R*S*C = 75 filter columns, no multiple of
# the register tile's: the GEMM is DW^T[75, K] = patches^T x DY (gemm_config.wgrad_gemm_transposed),
# its rows in two blocks of 40 on AMD AVX-512 and AVX2's 48-row workgroups; one permute gives the
# KRSC filter (IREE fuses it into the GEMM's dispatch); Intel AVX-512's 6x64 tile takes them in two
# blocks of 42. (The 7x7
# stem takes GEMMs over blocks of filter rows: conv_wgrad_row_blocks.py.)
# CHECK-LABEL: TEST: wgrad_few_channels
# TUNED: cpu-conv-wgrad-gemm (one GEMM over 1024 output positions as DW^T[R*S*C = 75, K], conv GEMM tile
# AVX2: #iree_cpu.lowering_config<{{.*}}distribution = [48, 64, 0], vector_common_parallel = [6, 16, 0]
# AMD: #iree_cpu.lowering_config<{{.*}}distribution = [40, 64, 0], vector_common_parallel = [8, 32, 0]
# INTEL: #iree_cpu.lowering_config<{{.*}}distribution = [42, 64, 0], vector_common_parallel = [6, 64, 0]
# TUNED: linalg.matmul indexing_maps = {{.*}} {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1024x75xf32>, tensor<1024x64xf32>) outs(%{{.*}} : tensor<75x64xf32>)
# TUNED: tensor.expand_shape {{.*}} : tensor<75x64xf32> into tensor<5x5x3x64xf32>
# TUNED: torch.aten.permute {{.*}} : !torch.vtensor<[5,5,3,64],f32>, !torch.list<int> -> !torch.vtensor<[64,5,5,3],f32>


@run
def wgrad_1x1_many_positions():
    g = nhwc_wgrad_graph("wgrad_1x1_many_positions", 1, 256, 56, 512, 1, 2, 0)
    print(explained_and_optimized(g))


# ResNet-50's 1x1 stride-2 weight gradient: DW[512, 256] over 784 output positions. From 784
# positions AMD's AVX2 cores take 4x16 in 32x64 workgroups, K in blocks of 64
# (gemm_config.WGRAD_MANY_POSITIONS_TILES); x86-64-v3 the conv GEMM's 6x16 in 48x64.
# CHECK-LABEL: TEST: wgrad_1x1_many_positions
# ZEN: cpu-conv-wgrad-gemm (one GEMM over 784 output positions, a 4x16 register tile in 32x64 workgroups for avx2, AMD)
# AVX2: cpu-conv-wgrad-gemm (one GEMM over 784 output positions, conv GEMM tile for avx2)
# ZEN: #iree_cpu.lowering_config<cache_parallel = [32, 64, 0], cache_reduction = [0, 0, 64], distribution = [32, 64, 0], vector_common_parallel = [4, 16, 0]
# AVX2: #iree_cpu.lowering_config<cache_parallel = [48, 64, 0], cache_reduction = [0, 0, 256], distribution = [48, 64, 0], vector_common_parallel = [6, 16, 0]
# AMD: #iree_cpu.lowering_config<{{.*}}distribution = [64, 64, 0], vector_common_parallel = [8, 32, 0]
# Zen 3 data-tiles it (wgrad_1x1_strided_data_tiling below).
# ZEN3: cpu-conv-wgrad-data-tiling (one GEMM DW[512, 256] over 784 output positions
# ZEN3-NOT: compilation_info
# INTEL: #iree_cpu.lowering_config<{{.*}}distribution = [60, 64, 0], vector_common_parallel = [6, 64, 0]
# CHECK: linalg.matmul {{.*}}ins(%{{.*}}, %{{.*}} : tensor<784x512xf32>, tensor<784x256xf32>) outs(%{{.*}} : tensor<512x256xf32>)


@run
def wgrad_few_channels_chunked():
    g = nhwc_wgrad_graph("wgrad_few_channels_chunked", 1, 3, 224, 64, 5, 2, 2)
    print(explained_and_optimized(g))


# At 224x224 its 12544 positions are summed in 49 chunks on AVX2 (gemm_config.
# wgrad_chunk_positions). Its 75 rows are 3 past a multiple of the 6-row register tile: AMD's
# AVX2 cores take 3x16 over all 75 in one workgroup (gemm_config.CHUNKED_ODD_ROWS_VECTOR_ROWS),
# x86-64-v3 the table's 6x16 in 48-row workgroups. AVX-512 keeps one GEMM.
# CHECK-LABEL: TEST: wgrad_few_channels_chunked
# AVX2: cpu-conv-wgrad-gemm (one batched GEMM over 49 chunks of 256 output positions, summed as DW^T[R*S*C = 75, K], conv GEMM tile for avx2)
# ZEN: cpu-conv-wgrad-gemm (one batched GEMM over 49 chunks of 256 output positions, summed as DW^T[R*S*C = 75, K], a 3x16 register tile over its 75 rows for avx2, AMD)
# AMD: cpu-conv-wgrad-gemm (one GEMM over 12544 output positions as DW^T[R*S*C = 75, K]
# INTEL: cpu-conv-wgrad-gemm (one GEMM over 12544 output positions as DW^T[R*S*C = 75, K]
# AVX2: #iree_cpu.lowering_config<distribution = [1, 48, 64, 0], vector_common_parallel = [1, 6, 16, 0]
# ZEN: #iree_cpu.lowering_config<cache_parallel = [1, 75, 64, 0], distribution = [1, 75, 64, 0], vector_common_parallel = [1, 3, 16, 0]
# AVX2: linalg.batch_matmul {{.*}} ins(%{{.*}}, %{{.*}} : tensor<49x256x75xf32>, tensor<49x256x64xf32>) outs(%{{.*}} : tensor<49x75x64xf32>)
# ZEN: linalg.batch_matmul {{.*}} ins(%{{.*}}, %{{.*}} : tensor<49x256x75xf32>, tensor<49x256x64xf32>) outs(%{{.*}} : tensor<49x75x64xf32>)
# The chunks' sum is DW^T, behind a fusion barrier: the permute to the filter's layout is a small
# dispatch of its own (fused, the sum wrote DW^T transposed).
# AVX2: %[[SUM:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<49x75x64xf32>) outs(%{{.*}} : tensor<75x64xf32>)
# AVX2: iree_tensor_ext.compute_barrier.start %[[SUM]] : tensor<75x64xf32>
# ZEN: %[[SUM:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<49x75x64xf32>) outs(%{{.*}} : tensor<75x64xf32>)
# ZEN: iree_tensor_ext.compute_barrier.start %[[SUM]] : tensor<75x64xf32>
# AVX2: torch.aten.permute {{.*}} -> !torch.vtensor<[64,5,5,3],f32>
# ZEN: torch.aten.permute {{.*}} -> !torch.vtensor<[64,5,5,3],f32>
# AMD-NOT: linalg.batch_matmul
# INTEL-NOT: linalg.batch_matmul


@run
def wgrad_3x3_deep():
    g = nhwc_wgrad_graph("wgrad_3x3_deep", 8, 512, 7, 512, 3, 1, 1)
    print(explained_and_optimized(g))


# ResNet-50's last 3x3 at batch 8: 392 positions, DW[512, 4608], 1.85 GFLOP. AMD's AVX2 cores
# data-tile it (the patch gather stays, the pack of the patches fuses into it); x86-64-v3 keeps
# the tile.
# CHECK-LABEL: TEST: wgrad_3x3_deep
# AVX2: cpu-conv-wgrad-gemm (one GEMM over 392 output positions, conv GEMM tile for avx2)
# AVX2: linalg.matmul indexing_maps = {{.*}} {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<392x512xf32>, tensor<392x4608xf32>) outs(%{{.*}} : tensor<512x4608xf32>)
# ZEN: cpu-conv-wgrad-data-tiling (one GEMM DW[512, 4608] over 392 output positions, data-tiled for avx2, AMD ({{.*}}, 1.85 GFLOP >= 268 MFLOP)
# ZEN-NOT: compilation_info
# ZEN: linalg.matmul indexing_maps = [{{.*}}] ins(%{{.*}}, %{{.*}} : tensor<392x512xf32>, tensor<392x4608xf32>) outs(%{{.*}} : tensor<512x4608xf32>)


@run
def wgrad_3x3_below_data_tiling():
    g = nhwc_wgrad_graph("wgrad_3x3_below_data_tiling", 1, 256, 14, 256, 3, 1, 1)
    print(explained_and_optimized(g))


# 3x3 1x256x14x14: 231 MFLOP, below the 268 MFLOP from which Zen 1 ran 3x3 filters faster
# data-tiled: the tile.
# CHECK-LABEL: TEST: wgrad_3x3_below_data_tiling
# ZEN: cpu-conv-wgrad-gemm (one GEMM over 196 output positions, conv GEMM tile for avx2, AMD)
# ZEN: linalg.matmul indexing_maps = {{.*}} {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<196x256xf32>, tensor<196x2304xf32>) outs(%{{.*}} : tensor<256x2304xf32>)


@run
def wgrad_1x1_strided_data_tiling():
    g = nhwc_wgrad_graph("wgrad_1x1_strided_data_tiling", 2, 128, 28, 128, 1, 2, 0)
    print(explained_and_optimized(g))
    g = nhwc_wgrad_graph("wgrad_1x1_strided_few_positions", 1, 128, 28, 256, 1, 2, 0)
    print(g.explain(TARGET_BACKEND, TARGET_ARCH))


# A stride-2 1x1 weight gradient of 392 positions: Zen 3 data-tiles it (X's rows gathered, the
# pack fused into the gather; rules.CPU_CONV_WGRAD_DATA_TILING_STRIDED_1X1_CORES), Zen 1 keeps the
# tile (even there); of 196 positions, Zen 3 keeps the tile too.
# CHECK-LABEL: TEST: wgrad_1x1_strided_data_tiling
# ZEN3: cpu-conv-wgrad-data-tiling (one GEMM DW[128, 128] over 392 output positions, data-tiled for avx2, AMD (K and R*S*C >= 128, strided 1x1 on znver3, positions >= 392))
# ZEN3-NOT: compilation_info
# ZEN3: linalg.matmul indexing_maps = [{{.*}}] ins(%{{.*}}, %{{.*}} : tensor<392x128xf32>, tensor<392x128xf32>) outs(%{{.*}} : tensor<128x128xf32>)
# ZEN3: cpu-conv-wgrad-gemm (one GEMM over 196 output positions
# ZEN: cpu-conv-wgrad-gemm (one GEMM over 392 output positions, conv GEMM tile for avx2, AMD)
# ZEN: linalg.matmul indexing_maps = {{.*}} {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<392x128xf32>, tensor<392x128xf32>) outs(%{{.*}} : tensor<128x128xf32>)
