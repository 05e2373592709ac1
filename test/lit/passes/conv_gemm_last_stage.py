# RUN: env FUSILLI_LIT_TARGET=cpu:znver3 %python %s | filecheck %s --check-prefixes=CHECK,AMD,ZEN3
# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,AMD,AVX512,ROWS
# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64-v3 %python %s | filecheck %s --check-prefixes=CHECK,AVX2,ROWS

# ResNet-50's last stage at batch 1: forward 3x3 convs of 49 output positions with a 9 MiB filter
# are the K-blocked im2col GEMM on AMD cores other than Zen 1 (which takes the transposed GEMM of
# few positions: conv_gemm_few_positions.py) and AVX2 code (cpu-conv-im2col-gemm: GEMM depth 4608, or
# stride 2 from 16 rows). Its B is the KRSC filter's [K, R*S*C] matrix transposed, its rows
# padded to 528 columns in the same dispatch behind the compute barrier (512 would alias in L1;
# conv_layout._im2col_gemm, gemm_config.padded_b_columns), the GEMM's 49 rows one workgroup block,
# and the bias + relu fuse into the GEMM. (AMD's cores all took these convs as the transposed GEMM
# Y^T = W x patches^T until the padding lost its strided copy, Zen 1 still does: rules.py has the runs.) A data
# gradient of those positions reads its KRSC filter as it is (no transposition). Zen 3 (znver3) writes
# the transposed filter in 16-column panels instead (gemm_config.CONV_B_PANEL_BY_CORE).

from lit_helpers import explained_and_optimized, run
from lit_helpers import square_conv_graph as build

import fusilli as fs


@run
def last_stage_3x3():
    print(explained_and_optimized(build("last_stage_3x3", 1, 512, 7, 512, 3, 1, epilogue=True)))


# CHECK-LABEL: TEST: last_stage_3x3
# CHECK: cpu-conv-im2col-gemm (3x3, GEMM depth 4608 >= 2304, K-blocked GEMM for
# ROWS-SAME: the filter written in rows of 528 (512 would alias in L1))
# ZEN3-SAME: the filter written in 16-column panels (each panel's rows contiguous))
# CHECK-NOT: few-positions
# AVX512: #iree_cpu.lowering_config<cache_parallel = [49, 64, 0], cache_reduction = [0, 0, 256], distribution = [49, 64, 0], vector_common_parallel = [8, 32, 0], vector_reduction = [0, 0, 8]>
# AVX2: #iree_cpu.lowering_config<cache_parallel = [49, 64, 0], cache_reduction = [0, 0, {{64|256}}], distribution = [49, 64, 0], vector_common_parallel = [6, 16, 0], vector_reduction = [0, 0, 8]>
# ZEN3: #iree_cpu.lowering_config<cache_parallel = [49, 4, 16, 0], cache_reduction = [0, 0, 0, 64], distribution = [49, 4, 16, 0], vector_common_parallel = [6, 1, 16, 0], vector_reduction = [0, 0, 0, 8]>
# CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x7x7x3x3x512xf32>)
# CHECK: %[[KRSC:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2, 3]] : tensor<512x3x3x512xf32> into tensor<512x4608xf32>
# ROWS: %[[T:.*]] = linalg.transpose ins(%[[KRSC]] : tensor<512x4608xf32>) outs(%{{.*}} : tensor<4608x512xf32>) permutation = [1, 0]
# ROWS: %[[PADDED:.*]] = tensor.pad %[[T]] low[0, 0] high[0, 16]
# ROWS: %[[ROWS:.*]] = iree_tensor_ext.compute_barrier.start %[[PADDED]] : tensor<4608x528xf32>
# ROWS: %[[B:.*]] = tensor.extract_slice %[[ROWS]][0, 0] [4608, 512] [1, 1] : tensor<4608x528xf32> to tensor<4608x512xf32>
# ROWS: linalg.matmul {compilation_info = #{{.*}}} ins(%{{.*}}, %[[B]] : tensor<49x4608xf32>, tensor<4608x512xf32>) outs(%{{.*}} : tensor<49x512xf32>)
# Zen 3: the transposition writes 32 panels of 16 columns, the GEMM a contraction over them.
# ZEN3: %[[PANELLED:.*]] = tensor.expand_shape %[[KRSC]] {{\[\[}}0, 1], [2]] output_shape [32, 16, 4608]
# ZEN3: linalg.transpose ins(%[[PANELLED]] : tensor<32x16x4608xf32>) outs(%{{.*}} : tensor<32x4608x16xf32>) permutation = [0, 2, 1]
# ZEN3: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<49x4608xf32>, tensor<32x4608x16xf32>) outs(%{{.*}} : tensor<49x32x16xf32>)
# CHECK: arith.addf
# CHECK: arith.maximumf


@run
def last_stage_3x3_s2():
    print(explained_and_optimized(build("last_stage_3x3_s2", 1, 512, 14, 512, 3, 2)))


# CHECK-LABEL: TEST: last_stage_3x3_s2
# CHECK: cpu-conv-im2col-gemm (3x3 stride 2, 49 GEMM rows >= 16, GEMM tuned for
# ROWS-SAME: the filter written in rows of 528 (512 would alias in L1))
# ZEN3-SAME: the filter written in 16-column panels (each panel's rows contiguous))
# ROWS: linalg.transpose ins(%{{.*}} : tensor<512x4608xf32>) outs(%{{.*}} : tensor<4608x512xf32>) permutation = [1, 0]
# ROWS: tensor.pad %{{.*}} low[0, 0] high[0, 16]
# ROWS: linalg.matmul {compilation_info = #{{.*}}} ins(%{{.*}}, %{{.*}} : tensor<49x4608xf32>, tensor<4608x512xf32>) outs(%{{.*}} : tensor<49x512xf32>)
# ZEN3: linalg.transpose ins(%{{.*}} : tensor<32x16x4608xf32>) outs(%{{.*}} : tensor<32x4608x16xf32>) permutation = [0, 2, 1]
# ZEN3: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<49x4608xf32>, tensor<32x4608x16xf32>) outs(%{{.*}} : tensor<49x32x16xf32>)


@run
def padded_filter_rows_1x1():
    print(explained_and_optimized(build("padded_filter_rows_1x1", 1, 1024, 14, 2048, 1, 2)))


# 2048 output channels: the im2col GEMM writes the filter's rows apart (gemm_config.padded_b_columns)
# and takes the 1x1 conv from 49 rows (znver3 code: 1.32 -> 1.05-1.13 ms, rules.py).
# CHECK-LABEL: TEST: padded_filter_rows_1x1
# AVX2: cpu-conv-im2col-gemm (1x1, 49 GEMM rows >= 49, 1024 channels <= 2048, GEMM tuned for avx2{{.*}}, the filter written in rows of 2064 (2048 would alias in L1))
# AVX512: cpu-conv-im2col-gemm (1x1, 49 GEMM rows >= 49, 1024 channels <= 2048, GEMM tuned for avx512, AMD, {{.*}}the filter written in rows of 2064 (2048 would alias in L1))
# ZEN3: cpu-conv-im2col-gemm (1x1, 49 GEMM rows >= 49, 1024 channels <= 2048, GEMM tuned for avx2, AMD, the filter written in 16-column panels (each panel's rows contiguous))
# ROWS: tensor.pad %{{.*}} low[0, 0] high[0, 16]
# AVX2: linalg.matmul {compilation_info = #{{.*}}} ins(%{{.*}}, %{{.*}} : tensor<49x1024xf32>, tensor<1024x2048xf32>) outs(%{{.*}} : tensor<49x2048xf32>)
# ZEN3: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<49x1024xf32>, tensor<128x1024x16xf32>) outs(%{{.*}} : tensor<49x128x16xf32>)


@run
def dgrad_last_stage():
    g = fs.Graph(name="dgrad_last_stage")
    dy = g.tensor(name="dy", dim=[1, 512, 7, 7], stride=fs.strides([1, 512, 7, 7], "NHWC"))
    w = g.tensor(name="w", dim=[512, 512, 3, 3], stride=fs.strides([512, 512, 3, 3], "NHWC"))
    dx = g.conv_dgrad(dy, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="dgrad")
    dx.set_dim([1, 512, 7, 7]).set_stride(fs.strides([1, 512, 7, 7], "NHWC")).set_output(True)
    print(explained_and_optimized(g.validate()))


# The data gradient reads its filter flipped, through patches laid out (k, r, s): B is the KRSC
# filter as it is, no transposition.
# CHECK-LABEL: TEST: dgrad_last_stage
# CHECK-NOT: linalg.transpose
# CHECK: linalg.matmul {compilation_info = #{{.*}}} ins(%{{.*}}, %{{.*}} : tensor<49x4608xf32>, tensor<4608x512xf32>)
