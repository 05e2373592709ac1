# RUN: env FUSILLI_LIT_TARGET=cpu:znver5 %python %s | filecheck %s --check-prefixes=CHECK,TILED,AVX512
# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64-v3 %python %s | filecheck %s --check-prefixes=CHECK,TILED,AVX2
# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64 %python %s | filecheck %s --check-prefixes=CHECK,GENERIC

# A channels-last grouped conv of several channels per group (ResNeXt's 3x3 g32;
# rules.CPU_CONV_GROUPED_DIRECT) becomes one reduction generic over (n, oh, ow, g, kg, cg)
# (fusilli-conv-layout's _rewrite_grouped, conv_direct.grouped_conv): its operands are the taps,
# strided slices [N, Ho, Wo, G, Cg] of the NHWC input padded by a generic that reads it through
# clamped indices (conv_direct.padded_copy, behind a compute barrier) and [G, Cg, Kg] slices of
# the filter transposed to [R, S, G, Cg, Kg] behind a compute barrier; the body sums the products,
# then adds the accumulator once. The register tile (gemm_config.grouped_conv_compilation_info) is output
# columns x a group's channels, about 8 accumulators: 7 x 8 for Wo = 14 on AVX-512 and AVX2, 8 x 16
# (one AVX-512 register a column) and 4 x 16 (two AVX2 ones) for Wo = 8; workgroups of whole rows
# and a quarter of the groups (112 of them) in the first case. Unit dims (one image, one
# channel per group) are left out of the generic. x86-64 (no vector ISA with a tile) keeps
# torch.aten.convolution.

from lit_helpers import explained_and_optimized, run

import fusilli as fs


def grouped(name: str, x_dim: list[int], k: int, groups: int, stride: int, epilogue: bool) -> fs.Graph:
    g = fs.Graph(name=name)
    wdim = [k, x_dim[1] // groups, 3, 3]
    x = g.tensor(name="x", dim=x_dim, stride=fs.strides(x_dim, "NHWC"))
    w = g.tensor(name="w", dim=wdim, stride=fs.strides(wdim, "NHWC"))
    y = g.conv_fprop(x, w, padding=[1, 1], stride=[stride, stride], dilation=[1, 1], name="conv")
    if epilogue:
        b = g.tensor(name="b", dim=[1, k, 1, 1], stride=fs.strides([1, k, 1, 1], "NHWC"))
        y = g.relu(g.add(y, b, name="bias"), name="relu")
    y.set_output(True).set_name("y")
    return g


@run
def grouped_3x3_g8_bias_relu():
    print(explained_and_optimized(grouped("grouped_3x3_g8_bias_relu", [2, 32, 14, 14], 64, 8, 1, True)))


# CHECK-LABEL: TEST: grouped_3x3_g8_bias_relu
# TILED: conv [conv_fprop]: {{.*}}cpu-conv-grouped-direct (8 groups of 4 -> 8 channels: a direct conv over the NHWC input, vectors along a group's 8 output channels)
# TILED: distribution = [1, 1, 14, 2, 8, 0], vector_common_parallel = [1, 1, 7, 1, 8, 0], vector_reduction = [0, 0, 0, 0, 0, 1]
# TILED: func.func @main(
# TILED: %[[COPY:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x16x16x32xf32>)
# TILED: arith.cmpi ult, %{{.*}}, %{{.*}} : index
# TILED: tensor.extract %{{.*}} : tensor<2x14x14x32xf32>
# TILED: %[[PADDED:.*]] = iree_tensor_ext.compute_barrier.start %[[COPY]] : tensor<2x16x16x32xf32>
# TILED: %[[X:.*]] = tensor.expand_shape %[[PADDED]] {{\[}}[0], [1], [2], [3, 4]] output_shape [2, 16, 16, 8, 4]
# TILED: %[[T:.*]] = linalg.transpose ins(%{{.*}} : tensor<8x8x3x3x4xf32>) outs(%{{.*}} : tensor<3x3x8x4x8xf32>) permutation = [2, 3, 0, 4, 1]
# TILED: %[[W:.*]] = iree_tensor_ext.compute_barrier.start %[[T]] : tensor<3x3x8x4x8xf32>
# TILED: tensor.extract_slice %[[X]][0, 0, 0, 0, 0] [2, 14, 14, 8, 4] [1, 1, 1, 1, 1] : tensor<2x16x16x8x4xf32> to tensor<2x14x14x8x4xf32>
# TILED: tensor.extract_slice %[[W]][0, 0, 0, 0, 0] [1, 1, 8, 4, 8] [1, 1, 1, 1, 1] : tensor<3x3x8x4x8xf32> to tensor<8x4x8xf32>
# TILED: tensor.extract_slice %[[X]][0, 2, 2, 0, 0] [2, 14, 14, 8, 4] [1, 1, 1, 1, 1]
# TILED: tensor.extract_slice %[[W]][2, 2, 0, 0, 0] [1, 1, 8, 4, 8]
# TILED: %[[CONV:.*]] = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]}
# TILED-SAME: outs(%{{.*}} : tensor<2x14x14x8x8xf32>) attrs = {compilation_info = #{{.*}}}
# TILED: ^bb0({{.*}}, %[[ACC:[a-z_0-9]+]]: f32):
# TILED: %[[SUM:.*]] = arith.addf %[[ACC]], %{{.*}} : f32
# TILED-NEXT: linalg.yield %[[SUM]] : f32
# TILED: tensor.collapse_shape %[[CONV]] {{\[}}[0], [1], [2], [3, 4]] : tensor<2x14x14x8x8xf32> into tensor<2x14x14x64xf32>
# TILED: arith.maximumf
# TILED-NOT: torch.aten.convolution
# GENERIC-NOT: cpu-conv-grouped-direct
# GENERIC: torch.aten.convolution


@run
def grouped_s2_one_image():
    print(explained_and_optimized(grouped("grouped_s2_one_image", [1, 64, 15, 15], 64, 4, 2, False)))


# One image: no n dim in the generic or its config; the taps are slices with the stride.
# CHECK-LABEL: TEST: grouped_s2_one_image
# TILED: cpu-conv-grouped-direct (4 groups of 16 -> 16 channels
# AVX512: vector_common_parallel = [1, 8, 1, 16, 0]
# AVX2: vector_common_parallel = [1, 4, 1, 16, 0]
# TILED: tensor.extract_slice %{{.*}}[0, 2, 2, 0, 0] [1, 8, 8, 4, 16] [1, 2, 2, 1, 1] : tensor<1x17x17x4x16xf32> to tensor<8x8x4x16xf32>
# TILED: linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
# TILED-SAME: outs(%{{.*}} : tensor<8x8x4x16xf32>)
# TILED: tensor.collapse_shape %{{.*}} {{\[}}[0], [1], [2, 3]] : tensor<8x8x4x16xf32> into tensor<8x8x64xf32>
# TILED: tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2], [3]] output_shape [1, 8, 8, 64] : tensor<8x8x64xf32> into tensor<1x8x8x64xf32>
# GENERIC: torch.aten.convolution


@run
def grouped_channel_multiplier():
    print(explained_and_optimized(grouped("grouped_channel_multiplier", [1, 16, 10, 10], 32, 16, 1, False)))


# One input channel and two filters per group (not depthwise: two outputs per channel): no cg dim,
# so nothing is reduced; the accumulator is still added once.
# CHECK-LABEL: TEST: grouped_channel_multiplier
# TILED: cpu-conv-grouped-direct (16 groups of 1 -> 2 channels
# TILED: linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel"]}{{.*}}outs(%{{.*}} : tensor<10x10x16x2xf32>)
# GENERIC: torch.aten.convolution
