# RUN: env FUSILLI_LIT_TARGET=cpu:sapphirerapids %python %s | filecheck %s --check-prefixes=CHECK,INTEL
# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,AMD
# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64-v3 %python %s | filecheck %s --check-prefixes=CHECK,TILED
# RUN: env FUSILLI_LIT_TARGET=cpu:znver1 %python %s | filecheck %s --check-prefixes=CHECK,ZEN

# cpu-conv-winograd's output tile (rules.winograd_output_tile): a 3x3 conv over
# 1x256x14x14 has 16 4x4 output tiles, below the F(4x4, 3x3) limit (48), and 49 2x2
# ones. On an Intel AVX-512 core it is Winograd F(2x2, 3x3): 4x4 = 16 transform
# points, a [16, 49, 256] x [16, 256, 256] batched GEMM. On AMD Zen 4 and as x86-64-v3 code
# its 16 4x4 tiles are enough for F(4x4) (cpu-conv-winograd's limit for cores not Intel's,
# with the one-pass filter transform): 36 points. AMD's AVX2 cores (znver1) take F(2x2) for
# those few 4x4 tiles while its transformed filter (16*C*K f32, 4 MiB here) is at most 4 MiB
# (rules.CPU_CONV_WINOGRAD_F2_FEW_TILES), their GEMM the 4x16 register tile in 64x64 workgroups
# (gemm_config.WINOGRAD_GEMM_TILES_BY_VENDOR). A 28x28 image (49 4x4 tiles) is F(4x4) everywhere.

from lit_helpers import explained_and_optimized, run

import fusilli as fs


def build(name, hw, c, n=1):
    g = fs.Graph(name=name)
    x = g.tensor(name="x", dim=[n, c, hw, hw], stride=fs.strides([n, c, hw, hw], "NHWC"))
    w = g.tensor(name="w", dim=[c, c, 3, 3], stride=fs.strides([c, c, 3, 3], "NHWC"))
    g.conv_fprop(x, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv").set_output(True)
    return g.validate()


@run
def small_image_many_channels():
    g = build("winograd_f2_choice", 14, 256)
    print(explained_and_optimized(g))


# CHECK-LABEL: TEST: small_image_many_channels
# INTEL: cpu-conv-winograd (F(2x2, 3x3), 3x3 stride 1, {{.*}} 49 2x2 tiles >= 48, GEMM tuned for avx512, Intel)
# INTEL: linalg.batch_matmul {{.*}}ins(%{{.*}}, %{{.*}} : tensor<16x49x256xf32>, tensor<16x256x256xf32>)
# INTEL-NOT: linalg.conv_2d_nhwc_hwcf
# TILED: cpu-conv-winograd (F(4x4, 3x3), 3x3 stride 1, {{.*}} 16 4x4 tiles >= 16, GEMM tuned for avx2, its filter transformed in one pass)
# TILED: linalg.batch_matmul {{.*}}ins(%{{.*}}, %{{.*}} : tensor<36x16x256xf32>, tensor<36x256x256xf32>)
# TILED-NOT: linalg.conv_2d_nhwc_hwcf
# AMD: cpu-conv-winograd (F(4x4, 3x3), 3x3 stride 1, {{.*}} 16 4x4 tiles >= 16, GEMM tuned for avx512, its filter transformed in one pass)
# AMD: linalg.batch_matmul {{.*}}ins(%{{.*}}, %{{.*}} : tensor<36x16x256xf32>, tensor<36x256x256xf32>)
# AMD-NOT: linalg.matmul
# ZEN: cpu-conv-winograd (F(2x2, 3x3), 3x3 stride 1, {{.*}} 16 4x4 tiles in [16, 48), F(2x2)'s transformed filter <= 4 MiB, GEMM tuned for avx2, AMD)
# ZEN: #iree_cpu.lowering_config<cache_parallel = [1, 49, 64, 0], distribution = [1, 49, 64, 0], vector_common_parallel = [1, 4, 16, 0], vector_reduction = [0, 0, 0, 8]>
# ZEN: linalg.batch_matmul {{.*}}ins(%{{.*}}, %{{.*}} : tensor<16x49x256xf32>, tensor<16x256x256xf32>)
# ZEN-NOT: linalg.conv_2d_nhwc_hwcf


@run
def larger_image():
    g = build("winograd_f4_choice", 28, 128)
    print(explained_and_optimized(g))


# CHECK-LABEL: TEST: larger_image
# CHECK: cpu-conv-winograd (F(4x4, 3x3), 3x3 stride 1, {{.*}} 49 4x4 tiles >= 48
# CHECK: linalg.batch_matmul {{.*}}ins(%{{.*}}, %{{.*}} : tensor<36x49x128xf32>, tensor<36x128x128xf32>)


# ResNet-50's 3x3 8x512x7x7->512: 32 4x4 tiles. Intel's AVX-512 cores take F(4x4) with the one-pass
# filter transform from 32 tiles (rules.CPU_CONV_WINOGRAD_MIN_TILES_ONE_PASS_FILTER_BY_TARGET), the
# others from 16; F(2x2)'s transformed filter (16 MiB) would not fit Intel's limit anyway.
@run
def deep_layer_batch8():
    g = build("winograd_deep_batch8", 7, 512, n=8)
    print(explained_and_optimized(g))


# CHECK-LABEL: TEST: deep_layer_batch8
# INTEL: cpu-conv-winograd (F(4x4, 3x3), 3x3 stride 1, {{.*}} 32 4x4 tiles >= 32, GEMM tuned for avx512, its filter transformed in one pass
# AMD: cpu-conv-winograd (F(4x4, 3x3), 3x3 stride 1, {{.*}} 32 4x4 tiles >= 16, GEMM tuned for avx512, its filter transformed in one pass
# TILED: cpu-conv-winograd (F(4x4, 3x3), 3x3 stride 1, {{.*}} 32 4x4 tiles >= 16, GEMM tuned for avx2, its filter transformed in one pass
# ZEN: cpu-conv-winograd (F(4x4, 3x3), 3x3 stride 1, {{.*}} 32 4x4 tiles >= 16, GEMM tuned for avx2, its filter transformed in one pass
# INTEL: linalg.batch_matmul {{.*}}ins(%{{.*}}, %{{.*}} : tensor<36x32x512xf32>, tensor<36x512x512xf32>)
# AMD: linalg.batch_matmul {{.*}}ins(%{{.*}}, %{{.*}} : tensor<36x32x512xf32>, tensor<36x512x512xf32>)
# (AVX2 code reads the transformed filter as 64-column panels: gemm_config.winograd_b_panel.)
# TILED: linalg.generic {{.*}}"reduction"]} ins(%{{.*}}, %{{.*}} : tensor<36x32x512xf32>, tensor<36x8x512x64xf32>)
# ZEN: linalg.generic {{.*}}"reduction"]} ins(%{{.*}}, %{{.*}} : tensor<36x32x512xf32>, tensor<36x8x512x64xf32>)
# CHECK-NOT: linalg.conv_2d_nhwc_hwcf
