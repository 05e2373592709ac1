# RUN: env FUSILLI_LIT_TARGET=cpu:znver1 %python %s | filecheck %s --check-prefixes=CHECK,ZEN,AVX2
# RUN: env FUSILLI_LIT_TARGET=cpu:znver3 %python %s | filecheck %s --check-prefixes=CHECK,OTHER,AMDAVX2
# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,AVX512
# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64-v3 %python %s | filecheck %s --check-prefixes=CHECK,OTHER
# RUN: env FUSILLI_LIT_TARGET=cpu:sapphirerapids %python %s | filecheck %s --check-prefixes=CHECK,OTHER

# A forward conv of at most 64 output positions with a filter of at least 4 MiB is, on Zen 1
# (znver1), the transposed GEMM Y^T[K, positions] = W[K, R*S*C] x patches^T
# (rules.CPU_CONV_GEMM_FEW_POSITIONS, conv_layout._few_positions_gemm): the KRSC filter is the
# GEMM's A as it lies (no HWCF copy of it), the patch gather writes [R*S*C, positions] behind an
# optimization barrier, the GEMM takes gemm_config.FEW_POSITIONS_GEMM_TILES (48 filter rows per
# workgroup, 6x16 register tiles; every position in one column block, K blocks of 256), and its
# result is transposed back behind another barrier, where the bias + relu fuse (3 dispatches with
# or without them: test_conv_gemm.py), 1x1 convs of 2048 output channels too. Other targets keep
# their lowering; 98 positions keep it on Zen 1 too. AMD's other cores take the im2col GEMM (its
# filter transposed as a [K, R*S*C] matrix and padded in one dispatch), measured ahead there
# (Zen 5, and znver3 code on it), while Zen 1 measured it behind (rules.CPU_CONV_GEMM_FEW_POSITIONS_CORES).

from lit_helpers import explained_and_optimized, run
from lit_helpers import square_conv_graph as build

import fusilli as fs


@run
def few_positions_3x3():
    print(explained_and_optimized(build("few_positions_3x3", 1, 512, 7, 512, 3, 1, epilogue=True)))


# CHECK-LABEL: TEST: few_positions_3x3
# ZEN: conv [conv_fprop]: {{.*}}cpu-conv-gemm-few-positions (Y^T[512, 49] = W x patches^T: 49 output positions <= 64, the 9.0 MiB filter read in place
# OTHER-NOT: few-positions
# AVX2: #iree_cpu.lowering_config<cache_parallel = [48, 49, 0], cache_reduction = [0, 0, 256], distribution = [48, 49, 0], vector_common_parallel = [6, 16, 0], vector_reduction = [0, 0, 8]>
# AVX512-NOT: few-positions
# AVX512: cpu-conv-im2col-gemm (3x3, GEMM depth 4608 >= 2304, K-blocked GEMM for avx512, AMD, the filter written in rows of 528 (512 would alias in L1))
# AVX512: linalg.transpose ins(%{{.*}} : tensor<512x4608xf32>) outs(%{{.*}} : tensor<4608x512xf32>) permutation = [1, 0]
# AVX512: linalg.matmul {compilation_info = #{{.*}}} ins(%{{.*}}, %{{.*}} : tensor<49x4608xf32>, tensor<4608x512xf32>) outs(%{{.*}} : tensor<49x512xf32>)
# ZEN-NOT: torch.aten.permute {{.*}} -> !torch.vtensor<[3,3,512,512],f32>
# ZEN: linalg.transpose ins(%{{.*}} : tensor<49x4608xf32>) outs(%{{.*}} : tensor<4608x49xf32>) permutation = [1, 0]
# ZEN-NEXT: %[[PT:.*]] = iree_tensor_ext.compute_barrier.start %{{.*}} : tensor<4608x49xf32>
# ZEN: %[[W:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2, 3]] : tensor<512x3x3x512xf32> into tensor<512x4608xf32>
# ZEN: %[[YT:.*]] = linalg.matmul {compilation_info = #{{.*}}} ins(%[[W]], %[[PT]] : tensor<512x4608xf32>, tensor<4608x49xf32>) outs(%{{.*}} : tensor<512x49xf32>)
# ZEN-NEXT: %[[B:.*]] = iree_tensor_ext.compute_barrier.start %[[YT]] : tensor<512x49xf32>
# ZEN: linalg.transpose ins(%[[B]] : tensor<512x49xf32>) outs(%{{.*}} : tensor<49x512xf32>) permutation = [1, 0]
# The epilogue, one generic on the transposed result (IREE fuses it into the transposition's dispatch).
# ZEN: linalg.generic
# ZEN: arith.addf
# ZEN: arith.maximumf


@run
def few_positions_1x1_strided():
    print(explained_and_optimized(build("few_positions_1x1_strided", 1, 1024, 14, 1280, 1, 2)))


# CHECK-LABEL: TEST: few_positions_1x1_strided
# ZEN: cpu-conv-gemm-few-positions (Y^T[1280, 49] = W x patches^T: 49 output positions <= 64, the 5.0 MiB filter read in place
# OTHER-NOT: few-positions
# AVX512-NOT: few-positions
# ZEN: linalg.transpose ins(%{{.*}} : tensor<49x1024xf32>) outs(%{{.*}} : tensor<1024x49xf32>)
# ZEN: linalg.matmul {compilation_info = #{{.*}}} ins(%{{.*}}, %{{.*}} : tensor<1280x1024xf32>, tensor<1024x49xf32>) outs(%{{.*}} : tensor<1280x49xf32>)
# ZEN: linalg.transpose ins(%{{.*}} : tensor<1280x49xf32>) outs(%{{.*}} : tensor<49x1280xf32>)


@run
def padded_filter_rows_1x1():
    print(explained_and_optimized(build("padded_filter_rows_1x1", 1, 1024, 14, 2048, 1, 2)))


# 2048 output channels: elsewhere on AMD the im2col GEMM writes the filter's rows apart
# (gemm_config.padded_b_columns; Zen 3 in 16-column panels, gemm_config.CONV_B_PANEL_BY_CORE) and
# takes the 1x1 conv (znver3 code, rows padded: 1.32 -> 1.05-1.13 ms); on
# Zen 1 that GEMM measured behind the transposed one (0.77-0.78 against 1.19-1.21 of PyTorch, rules.py).
# CHECK-LABEL: TEST: padded_filter_rows_1x1
# ZEN: cpu-conv-gemm-few-positions (Y^T[2048, 49] = W x patches^T: 49 output positions <= 64, the 8.0 MiB filter read in place, GEMM tuned for avx2, znver1)
# ZEN-NOT: tensor.pad
# ZEN: linalg.matmul {compilation_info = #{{.*}}} ins(%{{.*}}, %{{.*}} : tensor<2048x1024xf32>, tensor<1024x49xf32>) outs(%{{.*}} : tensor<2048x49xf32>)
# AMDAVX2: cpu-conv-im2col-gemm (1x1, 49 GEMM rows >= 49, 1024 channels <= 2048, GEMM tuned for avx2, AMD, the filter written in 16-column panels (each panel's rows contiguous))
# AVX512: cpu-conv-im2col-gemm (1x1, 49 GEMM rows >= 49, 1024 channels <= 2048, GEMM tuned for avx512, AMD, {{.*}}the filter written in rows of 2064 (2048 would alias in L1))
# AMDAVX2-NOT: tensor.pad
# AMDAVX2: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<49x1024xf32>, tensor<128x1024x16xf32>) outs(%{{.*}} : tensor<49x128x16xf32>)


@run
def many_positions():
    print(explained_and_optimized(build("many_positions", 2, 512, 7, 512, 3, 1)))


# 98 positions lost on Zen 1: the rules' other choice (no transposed GEMM of W x patches^T).
# CHECK-LABEL: TEST: many_positions
# CHECK-NOT: few-positions
# CHECK-NOT: tensor<512x4608xf32>, tensor<4608x98xf32>


@run
def dgrad_few_positions():
    g = fs.Graph(name="dgrad_few_positions")
    dy = g.tensor(name="dy", dim=[1, 512, 7, 7], stride=fs.strides([1, 512, 7, 7], "NHWC"))
    w = g.tensor(name="w", dim=[512, 512, 3, 3], stride=fs.strides([512, 512, 3, 3], "NHWC"))
    dx = g.conv_dgrad(dy, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="dgrad")
    dx.set_dim([1, 512, 7, 7]).set_stride(fs.strides([1, 512, 7, 7], "NHWC")).set_output(True)
    print(explained_and_optimized(g.validate()))


# The forward conv's rule only: the dgrad of those 49 positions reads its filter flipped and keeps
# its own GEMM.
# CHECK-LABEL: TEST: dgrad_few_positions
# CHECK-NOT: few-positions
# CHECK-NOT: linalg.transpose
# CHECK: linalg.matmul
