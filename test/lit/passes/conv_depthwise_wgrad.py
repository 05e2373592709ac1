# RUN: env FUSILLI_LIT_TARGET=cpu:znver5 %python %s | filecheck %s --check-prefixes=CHECK,TILED,AVX512
# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64-v3 %python %s | filecheck %s --check-prefixes=CHECK,TILED,AVX2
# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64 %python %s | filecheck %s --check-prefixes=CHECK,GENERIC

# The weight gradient of a channels-last depthwise conv (rules.CPU_CONV_DEPTHWISE_WGRAD; fusilli-conv-layout's
# _rewrite_grouped_wgrad, conv_direct.depthwise_wgrad): per output row, each filter tap's products summed
# over pairs of output columns, vectorized along the channels, then the rows' sum.
#
# 3x3 s2 3x16x13x13 (DY 7 x 7; too few positions read inside X: one strip of all of them): DY gathered with
# a zero column to an even width (8; an even batch would pair its images instead), X padded by a gather to the rows and columns the taps read
# (2*6 + 2 + 1 = 15, and 2*7 + 2 + 1 = 17 for 4 column pairs), both behind compute barriers; each tap
# reads two strided views of X (rows a stride apart, a pair's columns two strides), DY two views (its
# pair's columns); one generic over (n, oh, c | j) with a result per tap, whose body adds a tap's two
# products before the accumulator; the results' rows [9, 3*7, 16] summed into [16, 9], the KRSC filter
# [16, 3, 3, 1].
#
# 3x3 2x16x7x7: DY's odd width and even batch pair images (0 with 1) instead of columns: DY read where it
# lies, no gather for a zero column; the images' dim of one pair left out.
#
# 3x3 1x8x44x44 (91% of the positions' taps inside X): rows 1-42 x columns 1-42 read X and DY where they
# lie (views, no gather); the rows above and below (strips of one row, two gathers) and the columns left
# and right (strips of one column, DY's with a zero one) are one generic each, their two strips as
# images; the regions' rows (42 + 2 + 2*42 = 128) go into one [9, 128, 8] for the sum.
#
# An unpadded 3x3 of DY even in width reads X in place (no gather), its one image's dim left out. x86-64
# (no vector ISA measured) keeps torch.aten.convolution_backward.

from lit_helpers import explained_and_optimized, run

import fusilli as fs


def wgrad(name: str, x_dim: list[int], stride: int, padding: int) -> fs.Graph:
    g = fs.Graph(name=name)
    n, c, h, _ = x_dim
    out = (h + 2 * padding - 3) // stride + 1
    dy_dim = [n, c, out, out]
    dy = g.tensor(name="dy", dim=dy_dim, stride=fs.strides(dy_dim, "NHWC"))
    x = g.tensor(name="x", dim=x_dim, stride=fs.strides(x_dim, "NHWC"))
    dw = g.conv_wgrad(dy, x, padding=[padding, padding], stride=[stride, stride], dilation=[1, 1], name="wgrad")
    dw.set_dim([c, 1, 3, 3]).set_stride(fs.strides([c, 1, 3, 3], "NHWC")).set_output(True).set_name("dw")
    return g


@run
def depthwise_wgrad_s2():
    print(explained_and_optimized(wgrad("depthwise_wgrad_s2", [3, 16, 13, 13], 2, 1)))


@run
def depthwise_wgrad_inside_and_strips():
    print(explained_and_optimized(wgrad("depthwise_wgrad_inside_and_strips", [1, 8, 44, 44], 1, 1)))


@run
def depthwise_wgrad_paired_images():
    print(explained_and_optimized(wgrad("depthwise_wgrad_paired_images", [2, 16, 7, 7], 1, 1)))


@run
def depthwise_wgrad_unpadded():
    print(explained_and_optimized(wgrad("depthwise_wgrad_unpadded", [1, 16, 10, 10], 1, 0)))


# CHECK-LABEL: TEST: depthwise_wgrad_s2
# TILED: wgrad [conv_wgrad]: {{.*}}cpu-conv-depthwise-wgrad (16 channels, one filter each: per output row, sums of column pairs' products with a result per filter tap, vectorized along the channels (X read in place at the positions whose taps stay inside it, where those are 88% of them or more), then the rows' sum)
# AVX512: #config = #iree_cpu.lowering_config<distribution = [1, 4, 16, 0], vector_common_parallel = [1, 2, 16, 0], vector_reduction = [0, 0, 0, 1]>
# AVX2: #config = #iree_cpu.lowering_config<distribution = [1, 4, 16, 0], vector_common_parallel = [1, 2, 8, 0], vector_reduction = [0, 0, 0, 1]>
# TILED: #config1 = #iree_cpu.lowering_config<distribution = [16, 1, 0], vector_common_parallel = [16, 1, 0], vector_reduction = [0, 0, 1]>
# TILED: linalg.generic {{.*}} outs(%{{.*}} : tensor<3x1x7x8x16xf32>)
# TILED: tensor.extract %{{.*}} : tensor<3x7x7x16xf32>
# TILED: %[[DYB:.*]] = iree_tensor_ext.compute_barrier.start %{{.*}} : tensor<3x1x7x8x16xf32>
# TILED: %[[DY:.*]] = tensor.collapse_shape %[[DYB]] {{\[}}[0, 1], [2], [3], [4]] : tensor<3x1x7x8x16xf32> into tensor<3x7x8x16xf32>
# TILED: linalg.generic {{.*}} outs(%{{.*}} : tensor<3x1x15x17x16xf32>)
# TILED: tensor.extract %{{.*}} : tensor<3x13x13x16xf32>
# TILED: %[[XB:.*]] = iree_tensor_ext.compute_barrier.start %{{.*}} : tensor<3x1x15x17x16xf32>
# TILED: %[[X:.*]] = tensor.collapse_shape %[[XB]] {{\[}}[0, 1], [2], [3], [4]] : tensor<3x1x15x17x16xf32> into tensor<3x15x17x16xf32>
# TILED: %[[DY0:.*]] = tensor.extract_slice %[[DY]][0, 0, 0, 0] [3, 7, 4, 16] [1, 1, 2, 1] : tensor<3x7x8x16xf32> to tensor<3x7x4x16xf32>
# TILED: %[[DY1:.*]] = tensor.extract_slice %[[DY]][0, 0, 1, 0] [3, 7, 4, 16] [1, 1, 2, 1]
# TILED: %[[X00:.*]] = tensor.extract_slice %[[X]][0, 0, 0, 0] [3, 7, 4, 16] [1, 2, 4, 1] : tensor<3x15x17x16xf32> to tensor<3x7x4x16xf32>
# TILED: %[[X01:.*]] = tensor.extract_slice %[[X]][0, 0, 2, 0] [3, 7, 4, 16] [1, 2, 4, 1]
# TILED: tensor.extract_slice %[[X]][0, 2, 4, 0] [3, 7, 4, 16] [1, 2, 4, 1]
# TILED: %[[SUMS:.*]]:9 = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[DY0]], %[[DY1]], %[[X00]], %[[X01]], {{.*}}) outs({{.*}}) attrs = {compilation_info = #compilation}
# TILED: ^bb0(%[[D0:[^:]*]]: f32, %[[D1:[^:]*]]: f32, %[[A0:[^:]*]]: f32, %[[A1:[^:]*]]: f32,
# TILED: %[[M0:.*]] = arith.mulf %[[A0]], %[[D0]] : f32
# TILED: %[[M1:.*]] = arith.mulf %[[A1]], %[[D1]] : f32
# TILED: %[[PAIR:.*]] = arith.addf %[[M0]], %[[M1]] : f32
# TILED: arith.addf %out, %[[PAIR]] : f32
# TILED: -> (tensor<3x7x16xf32>,
# TILED: %[[ROWS8:.*]] = tensor.collapse_shape %[[SUMS]]#8 {{\[}}[0, 1], [2]] : tensor<3x7x16xf32> into tensor<21x16xf32>
# TILED: %[[ROWS:.*]] = tensor.insert_slice %[[ROWS8]] into %{{.*}}[8, 0, 0] [1, 21, 16] [1, 1, 1] : tensor<21x16xf32> into tensor<9x21x16xf32>
# TILED: %[[TOTAL:.*]] = linalg.generic {{.*}} ins(%[[ROWS]] : tensor<9x21x16xf32>) outs(%{{.*}} : tensor<16x9xf32>) attrs = {compilation_info = #compilation1}
# TILED: tensor.expand_shape %[[TOTAL]] {{.*}} output_shape [16, 3, 3, 1]
# TILED-NOT: convolution_backward
# GENERIC: torch.aten.convolution_backward


# CHECK-LABEL: TEST: depthwise_wgrad_inside_and_strips
# TILED: %[[X:.*]] = torch_c.to_builtin_tensor %{{.*}} -> tensor<1x44x44x8xf32>
# TILED: %[[DY:.*]] = torch_c.to_builtin_tensor %{{.*}} -> tensor<1x44x44x8xf32>
# TILED: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x1x44x8xf32>)
# TILED: tensor.collapse_shape %{{.*}} : tensor<1x2x1x44x8xf32> into tensor<2x1x44x8xf32>
# TILED: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x3x46x8xf32>)
# TILED: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x42x2x8xf32>)
# TILED: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x44x4x8xf32>)
# TILED: tensor.collapse_shape %{{.*}} : tensor<1x2x44x4x8xf32> into tensor<2x44x4x8xf32>
# TILED: tensor.empty() : tensor<9x128x8xf32>
# TILED: tensor.extract_slice %[[X]][0, 0, 0, 0] [1, 42, 21, 8] [1, 1, 2, 1] : tensor<1x44x44x8xf32> to tensor<42x21x8xf32>
# TILED: } -> (tensor<42x8xf32>,
# TILED: tensor.insert_slice %{{.*}} into %{{.*}}[8, 0, 0] [1, 42, 8] [1, 1, 1] : tensor<42x8xf32> into tensor<9x128x8xf32>
# TILED: } -> (tensor<2x8xf32>,
# TILED: tensor.insert_slice %{{.*}} into %{{.*}}[8, 42, 0] [1, 2, 8] [1, 1, 1] : tensor<2x8xf32> into tensor<9x128x8xf32>
# TILED: } -> (tensor<2x42x8xf32>,
# TILED: tensor.insert_slice %{{.*}} into %{{.*}}[8, 44, 0] [1, 84, 8] [1, 1, 1] : tensor<84x8xf32> into tensor<9x128x8xf32>
# TILED: linalg.generic {{.*}} ins(%{{.*}} : tensor<9x128x8xf32>) outs(%{{.*}} : tensor<8x9xf32>)
# GENERIC: torch.aten.convolution_backward


# CHECK-LABEL: TEST: depthwise_wgrad_paired_images
# TILED: %[[DY:.*]] = torch_c.to_builtin_tensor %arg1 {{.*}} -> tensor<2x7x7x16xf32>
# TILED-NOT: outs(%{{.*}} : tensor<2x1x7x8x16xf32>)
# TILED: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x1x9x9x16xf32>)
# TILED: %[[X:.*]] = tensor.collapse_shape %{{.*}} : tensor<2x1x9x9x16xf32> into tensor<2x9x9x16xf32>
# TILED: %[[DY0:.*]] = tensor.extract_slice %[[DY]][0, 0, 0, 0] [1, 7, 7, 16] [1, 1, 1, 1] : tensor<2x7x7x16xf32> to tensor<7x7x16xf32>
# TILED: %[[DY1:.*]] = tensor.extract_slice %[[DY]][1, 0, 0, 0] [1, 7, 7, 16] [1, 1, 1, 1]
# TILED: %[[X0:.*]] = tensor.extract_slice %[[X]][0, 0, 0, 0] [1, 7, 7, 16] [1, 1, 1, 1] : tensor<2x9x9x16xf32> to tensor<7x7x16xf32>
# TILED: %[[X1:.*]] = tensor.extract_slice %[[X]][1, 0, 0, 0] [1, 7, 7, 16] [1, 1, 1, 1]
# TILED: linalg.generic {{.*}} ins(%[[DY0]], %[[DY1]], %[[X0]], %[[X1]], {{.*}}) outs(
# TILED: } -> (tensor<7x16xf32>,
# GENERIC: torch.aten.convolution_backward


# CHECK-LABEL: TEST: depthwise_wgrad_unpadded
# TILED: %[[X:.*]] = torch_c.to_builtin_tensor %{{.*}} -> tensor<1x10x10x16xf32>
# TILED-NOT: compute_barrier
# TILED: tensor.extract_slice %[[X]][0, 0, 0, 0] [1, 8, 4, 16] [1, 1, 2, 1] : tensor<1x10x10x16xf32> to tensor<8x4x16xf32>
# TILED: } -> (tensor<8x16xf32>,
# TILED: tensor.insert_slice %{{.*}} into %{{.*}}[8, 0, 0] [1, 8, 16] [1, 1, 1] : tensor<8x16xf32> into tensor<9x8x16xf32>
# GENERIC: torch.aten.convolution_backward
