# RUN: env FUSILLI_LIT_TARGET=cpu:znver5 %python %s | filecheck %s --check-prefixes=CHECK,ROWS,AVX512
# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64-v3 %python %s | filecheck %s --check-prefixes=CHECK,ROWS,AVX2
# RUN: env FUSILLI_LIT_TARGET=cpu:sapphirerapids %python %s | filecheck %s --check-prefixes=CHECK,ROWS,AVX512

# A weight gradient with few input channels and a filter of 7 rows or more (the 7x7 stride-2 stem)
# is one GEMM per block of stride filter rows (rules.CPU_CONV_WGRAD_ROW_BLOCKS, fusilli-conv-layout's
# _row_block_wgrad): one gather of X's row phases, each output column's S taps along W on every
# padded input row, [N, sh, S, C, OH + blocks - 1, OW] (conv_direct.row_phase_patches); then per
# image and block q of filter rows a GEMM DW^T_q[sh*S*C, K] reading those patches at an offset of q
# output rows (a slice, no gather of its own) and that image's DY, accumulating into block q's
# rows of one DW^T[R*S*C, K] (a last block R leaves short takes its phases' rows only); one permute
# to the filter's layout. The register tile (gemm_config.ROW_BLOCK_WGRAD_TILES): AVX-512 7x32 in 21-row workgroups,
# AVX2 6x16 over all 42 rows; Intel's AVX-512 cores as AMD's (rules.CPU_CONV_WGRAD_ROW_BLOCKS_TARGETS).

from lit_helpers import explained_and_optimized, nhwc_wgrad_graph, run


@run
def wgrad_stem_row_blocks():
    g = nhwc_wgrad_graph("wgrad_stem_row_blocks", 2, 3, 64, 64, 7, 2, 3)
    print(explained_and_optimized(g))


# 7 filter rows at stride 2: 4 blocks of 2 (the last one row: 21 GEMM rows); 32x32 output,
# 35 = 32 + 3 phase rows of 32 columns; 1024 positions deep, K in cache blocks of 256.
# CHECK-LABEL: TEST: wgrad_stem_row_blocks
# ROWS: cpu-conv-wgrad-row-blocks (4 GEMMs DW^T[2x7x3, K] over X's 2 row phases, one per 2 of the 7 >= 7 filter rows (3 channels <= 4)
# AVX512-SAME: a 7x32 register tile)
# AVX2-SAME: a 6x16 register tile)
# AVX512: #iree_cpu.lowering_config<cache_parallel = [21, 32, 0], cache_reduction = [0, 0, 256], distribution = [21, 32, 0], vector_common_parallel = [7, 32, 0], vector_reduction = [0, 0, 8]>
# AVX2: #iree_cpu.lowering_config<cache_parallel = [42, 16, 0], cache_reduction = [0, 0, 256], distribution = [42, 16, 0], vector_common_parallel = [6, 16, 0], vector_reduction = [0, 0, 8]>
# ROWS: %[[PATCHES:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x2x7x3x35x32xf32>)
# ROWS: tensor.extract %{{.*}} : tensor<2x64x64x3xf32>
# ROWS: %[[A:.*]] = tensor.collapse_shape %[[PATCHES]] {{\[}}[0], [1, 2, 3], [4, 5]] : tensor<2x2x7x3x35x32xf32> into tensor<2x42x1120xf32>
# ROWS: %[[DY:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2], [3]] : tensor<2x32x32x64xf32> into tensor<2x1024x64xf32>
# ROWS: %[[DY0:.*]] = tensor.extract_slice %[[DY]][0, 0, 0] [1, 1024, 64] [1, 1, 1] : tensor<2x1024x64xf32> to tensor<1024x64xf32>
# ROWS: %[[A00:.*]] = tensor.extract_slice %[[A]][0, 0, 0] [1, 42, 1024] [1, 1, 1] : tensor<2x42x1120xf32> to tensor<42x1024xf32>
# ROWS: linalg.matmul {compilation_info = {{.*}}} ins(%[[A00]], %[[DY0]] : tensor<42x1024xf32>, tensor<1024x64xf32>) outs(%{{.*}} : tensor<42x64xf32>)
# ROWS: tensor.extract_slice %[[A]][0, 0, 32] [1, 42, 1024]
# ROWS: tensor.extract_slice %[[A]][0, 0, 64] [1, 42, 1024]
# ROWS: %[[A03:.*]] = tensor.extract_slice %[[A]][0, 0, 96] [1, 21, 1024]
# ROWS: %[[S03:.*]] = tensor.extract_slice %{{.*}}[126, 0] [21, 64] [1, 1] : tensor<147x64xf32> to tensor<21x64xf32>
# ROWS: linalg.matmul {compilation_info = {{.*}}} ins(%[[A03]], %[[DY0]] : tensor<21x1024xf32>, tensor<1024x64xf32>) outs(%[[S03]] : tensor<21x64xf32>)
# ROWS: %[[DY1:.*]] = tensor.extract_slice %[[DY]][1, 0, 0] [1, 1024, 64]
# ROWS: %[[A10:.*]] = tensor.extract_slice %[[A]][1, 0, 0] [1, 42, 1024]
# ROWS: linalg.matmul {compilation_info = {{.*}}} ins(%[[A10]], %[[DY1]] :
# ROWS: tensor.expand_shape %{{.*}} {{\[}}[0, 1, 2], [3]] output_shape [7, 7, 3, 64] : tensor<147x64xf32> into tensor<7x7x3x64xf32>
# ROWS: torch.aten.permute {{.*}} -> !torch.vtensor<[64,7,7,3],f32>
# ROWS-NOT: x147xf32>


@run
def wgrad_one_channel():
    g = nhwc_wgrad_graph("wgrad_one_channel", 1, 1, 64, 32, 7, 2, 3)
    print(explained_and_optimized(g))


# One input channel: X has no permute (NHWC and NCHW are the same memory), the weight gradient is
# rewritten from DY's alone. 14 rows a block: AVX-512's 7 rows twice, one workgroup each.
# CHECK-LABEL: TEST: wgrad_one_channel
# ROWS: cpu-conv-wgrad-row-blocks (4 GEMMs DW^T[2x7x1, K]
# AVX512: #iree_cpu.lowering_config<cache_parallel = [7, 32, 0], cache_reduction = [0, 0, 256], distribution = [7, 32, 0], vector_common_parallel = [7, 32, 0]
# ROWS: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x7x1x35x32xf32>)
# ROWS-COUNT-3: linalg.matmul {compilation_info = {{.*}}} ins(%{{.*}}, %{{.*}} : tensor<14x1024xf32>, tensor<1024x32xf32>)
# ROWS: linalg.matmul {compilation_info = {{.*}}} ins(%{{.*}}, %{{.*}} : tensor<7x1024xf32>, tensor<1024x32xf32>)
# CHECK-NOT: torch.aten.convolution_backward
