# RUN: env FUSILLI_LIT_TARGET=cpu:znver5 %python %s | filecheck %s --check-prefixes=CHECK,TILED,AVX512
# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64-v3 %python %s | filecheck %s --check-prefixes=CHECK,TILED,AVX2
# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64 %python %s | filecheck %s --check-prefixes=CHECK,GENERIC

# The weight gradient of a channels-last grouped conv of several channels per group (ResNeXt's
# 3x3 g32; rules.CPU_CONV_GROUPED_WGRAD) becomes (fusilli-conv-layout's _rewrite_grouped_wgrad,
# conv_direct.grouped_wgrad): two gathers behind compute barriers that lay out chunks of output
# rows flat with one row pitch (X's rows split into the stride's phases, DY's rows padded with
# zero columns), one contraction generic over a chunk's positions per phase of X with a result per
# filter tap of that phase (up to 9), each tap's X view starting at its phase and flat offset, the
# taps' per-chunk sums inserted into one [R, S, ...] tensor, and one generic that adds up the chunks
# into the KRSC filter. Stride 2
# 2x32x8x8 g8: Ho = Wo = 4, row pitch 5 (a tap reaches one column of its phase further), 4 rows
# of each of the 4 phases gathered with one more row (5 x 5 = 25 positions), 3 * 5 + 4 = 19
# positions in each view; tap (2, 2) reads phase 0 at offset 5 + 1 = 6. Phase 0 holds taps (0, 0),
# (0, 2), (2, 0), (2, 2), phases 1 and 2 two each, phase 3 tap (1, 1): four generics. The register
# tile (gemm_config.grouped_wgrad_compilation_info): a group's 4 input channels x its 8 output
# channels on both ISAs for Kg = 8 (4 x 9 / 4 taps: all Cg = 4); for Kg = 32 (g2
# 1x64x6x6 stride 1, whole images: a group fills cache lines; one generic of nine taps) 1 x 32 on
# AVX-512 and 2 x 16 on AVX2. x86-64 (no vector ISA with a tile) keeps
# torch.aten.convolution_backward.

from lit_helpers import explained_and_optimized, run

import fusilli as fs


def wgrad(name: str, x_dim: list[int], k: int, groups: int, stride: int) -> fs.Graph:
    g = fs.Graph(name=name)
    n, c, h, w = x_dim
    out = (h + 2 - 3) // stride + 1
    dy_dim, w_dim = [n, k, out, out], [k, c // groups, 3, 3]
    dy = g.tensor(name="dy", dim=dy_dim, stride=fs.strides(dy_dim, "NHWC"))
    x = g.tensor(name="x", dim=x_dim, stride=fs.strides(x_dim, "NHWC"))
    dw = g.conv_wgrad(dy, x, padding=[1, 1], stride=[stride, stride], dilation=[1, 1], name="wgrad")
    dw.set_dim(w_dim).set_stride(fs.strides(w_dim, "NHWC")).set_output(True).set_name("dw")
    return g


@run
def grouped_wgrad_3x3_g8_s2():
    print(explained_and_optimized(wgrad("grouped_wgrad_3x3_g8_s2", [2, 32, 8, 8], 64, 8, 2)))


# CHECK-LABEL: TEST: grouped_wgrad_3x3_g8_s2
# TILED: wgrad [conv_wgrad]: {{.*}}cpu-conv-grouped-wgrad (8 groups of 4 -> 8 channels: contractions over chunks of output rows, a result per filter tap, vectors along a group's 8 output channels)
# TILED: distribution = [1, 8, 4, 8, 0], vector_common_parallel = [1, 1, 4, 8, 0], vector_reduction = [0, 0, 0, 0, 8]
# TILED: func.func @main(
# TILED: %[[XG:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x1x2x2x5x5x32xf32>)
# TILED: tensor.extract %{{.*}} : tensor<2x8x8x32xf32>
# TILED: %[[XB:.*]] = iree_tensor_ext.compute_barrier.start %[[XG]] : tensor<2x1x2x2x5x5x32xf32>
# TILED: %[[XF:.*]] = tensor.collapse_shape %[[XB]] {{\[}}[0], [1], [2, 3], [4, 5], [6]] : tensor<2x1x2x2x5x5x32xf32> into tensor<2x1x4x25x32xf32>
# TILED: %[[DG:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x1x4x5x64xf32>)
# TILED: %[[DB:.*]] = iree_tensor_ext.compute_barrier.start %[[DG]] : tensor<2x1x4x5x64xf32>
# TILED: %[[X:.*]] = tensor.expand_shape %[[XF]] {{.*}} output_shape [2, 1, 4, 25, 8, 4]
# TILED: %[[D:.*]] = tensor.expand_shape %{{.*}} output_shape [2, 1, 20, 8, 8]
# TILED: %[[DV:.*]] = tensor.extract_slice %[[D]][0, 0, 0, 0, 0] [2, 1, 19, 8, 8] {{.*}} to tensor<2x19x8x8xf32>
# TILED: %[[X00:.*]] = tensor.extract_slice %[[X]][0, 0, 0, 0, 0, 0] [2, 1, 1, 19, 8, 4] {{.*}} to tensor<2x19x8x4xf32>
# TILED: %[[X01:.*]] = tensor.extract_slice %[[X]][0, 0, 1, 0, 0, 0] [2, 1, 1, 19, 8, 4]
# TILED: %[[X02:.*]] = tensor.extract_slice %[[X]][0, 0, 0, 1, 0, 0] [2, 1, 1, 19, 8, 4]
# TILED: %[[X10:.*]] = tensor.extract_slice %[[X]][0, 0, 2, 0, 0, 0] [2, 1, 1, 19, 8, 4]
# TILED: %[[X11:.*]] = tensor.extract_slice %[[X]][0, 0, 3, 0, 0, 0] [2, 1, 1, 19, 8, 4]
# TILED: %[[X20:.*]] = tensor.extract_slice %[[X]][0, 0, 0, 5, 0, 0] [2, 1, 1, 19, 8, 4]
# TILED: %[[X22:.*]] = tensor.extract_slice %[[X]][0, 0, 0, 6, 0, 0] [2, 1, 1, 19, 8, 4]
# TILED: %[[PARTIALS:.*]] = tensor.empty() : tensor<3x3x2x8x4x8xf32>
# TILED: %[[P0:.*]]:4 = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[DV]], %[[X00]], %[[X02]], %[[X20]], %[[X22]] : tensor<2x19x8x8xf32>, tensor<2x19x8x4xf32>, {{.*}}) outs({{.*}}) attrs = {compilation_info = #{{.*}}}
# TILED: tensor.insert_slice %[[P0]]#0 into %[[PARTIALS]][0, 0, 0, 0, 0, 0] [1, 1, 2, 8, 4, 8]
# TILED: tensor.insert_slice %[[P0]]#3 into %{{.*}}[2, 2, 0, 0, 0, 0] [1, 1, 2, 8, 4, 8]
# TILED: %[[P1:.*]]:2 = linalg.generic {{.*}} ins(%[[DV]], %[[X01]], %{{.*}} :
# TILED: %[[P2:.*]]:2 = linalg.generic {{.*}} ins(%[[DV]], %[[X10]], %{{.*}} :
# TILED: %[[P3:.*]] = linalg.generic {{.*}} ins(%[[DV]], %[[X11]] :
# TILED: %[[ALL:.*]] = tensor.insert_slice %[[P3]] into %{{.*}}[1, 1, 0, 0, 0, 0] [1, 1, 2, 8, 4, 8]
# TILED: %[[SUM:.*]] = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[ALL]] : tensor<3x3x2x8x4x8xf32>) outs(%{{.*}} : tensor<8x8x3x3x4xf32>)
# TILED: tensor.collapse_shape %[[SUM]] {{\[}}[0, 1], [2], [3], [4]] : tensor<8x8x3x3x4xf32> into tensor<64x3x3x4xf32>
# TILED-NOT: convolution_backward
# GENERIC: wgrad [conv_wgrad]: {{.*}}cpu-conv-channels-last-linalg
# GENERIC: torch.aten.convolution_backward


@run
def grouped_wgrad_3x3_g2_whole_image():
    print(explained_and_optimized(wgrad("grouped_wgrad_3x3_g2_whole_image", [1, 64, 6, 6], 64, 2, 1)))


# CHECK-LABEL: TEST: grouped_wgrad_3x3_g2_whole_image
# AVX512: distribution = [1, 32, 32, 0], vector_common_parallel = [1, 1, 32, 0], vector_reduction = [0, 0, 0, 8]
# AVX2: distribution = [1, 32, 32, 0], vector_common_parallel = [1, 2, 16, 0], vector_reduction = [0, 0, 0, 8]
# TILED: tensor.empty() : tensor<1x1x1x1x8x8x64xf32>
# TILED: tensor.empty() : tensor<1x1x6x8x64xf32>
# TILED: tensor.extract_slice %{{.*}}[0, 0, 0, 18, 0, 0] [1, 1, 1, 46, 2, 32] {{.*}} to tensor<46x2x32xf32>
# TILED: %{{.*}}:9 = linalg.generic
# TILED: tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2], [3], [4]] : tensor<2x32x3x3x32xf32> into tensor<64x3x3x32xf32>
# GENERIC: torch.aten.convolution_backward
