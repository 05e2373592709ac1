# RUN: env FUSILLI_LIT_TARGET=cpu:znver5 %python %s | filecheck %s --check-prefixes=CHECK,TILED
# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64-v3 %python %s | filecheck %s --check-prefixes=CHECK,TILED
# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64 %python %s | filecheck %s --check-prefixes=CHECK,GENERIC

# The weight gradient of a channels-last depthwise conv (rules.CPU_CONV_DEPTHWISE_WGRAD) is a
# depthwise conv of X with DY as the filter (fusilli-conv-layout's _rewrite_grouped_wgrad,
# conv_direct.depthwise_wgrad): two gathers behind compute barriers lay out the padded X
# [Hp, Wp, N, C] (the rows and columns the taps read: 2*6 + 2 + 1 = 15 of 3x3 s2 2x16x13x13) and
# DY [Ho, Wo, N, C], the images join the channels (2 x 16 = 32), one
# linalg.depthwise_conv_2d_nhwc_hwc computes [1, R, S, N*C] with the conv's stride as its
# dilations, and one generic sums the images into [C, R, S], the KRSC filter [C, R, S, 1]. A
# batch of one needs no DY gather. x86-64 (no vector ISA measured) keeps
# torch.aten.convolution_backward.

from lit_helpers import explained_and_optimized, run

import fusilli as fs


def wgrad(name: str, x_dim: list[int], stride: int) -> fs.Graph:
    g = fs.Graph(name=name)
    n, c, h, _ = x_dim
    out = (h + 2 - 3) // stride + 1
    dy_dim = [n, c, out, out]
    dy = g.tensor(name="dy", dim=dy_dim, stride=fs.strides(dy_dim, "NHWC"))
    x = g.tensor(name="x", dim=x_dim, stride=fs.strides(x_dim, "NHWC"))
    dw = g.conv_wgrad(dy, x, padding=[1, 1], stride=[stride, stride], dilation=[1, 1], name="wgrad")
    dw.set_dim([c, 1, 3, 3]).set_stride(fs.strides([c, 1, 3, 3], "NHWC")).set_output(True).set_name("dw")
    return g


@run
def depthwise_wgrad_s2():
    print(explained_and_optimized(wgrad("depthwise_wgrad_s2", [2, 16, 13, 13], 2)))


# CHECK-LABEL: TEST: depthwise_wgrad_s2
# TILED: wgrad [conv_wgrad]: {{.*}}cpu-conv-depthwise-wgrad (16 channels, one filter each: a depthwise conv of X with DY as the filter, the images joining the channels)
# TILED: %[[XG:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<15x15x2x16xf32>)
# TILED: tensor.extract %{{.*}} : tensor<2x13x13x16xf32>
# TILED: %[[XB:.*]] = iree_tensor_ext.compute_barrier.start %[[XG]] : tensor<15x15x2x16xf32>
# TILED: %[[DG:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<7x7x2x16xf32>)
# TILED: %[[DB:.*]] = iree_tensor_ext.compute_barrier.start %[[DG]] : tensor<7x7x2x16xf32>
# TILED: %[[X:.*]] = tensor.expand_shape %{{.*}} output_shape [1, 15, 15, 32]
# TILED: %[[D:.*]] = tensor.collapse_shape %[[DB]] {{\[}}[0], [1], [2, 3]] : tensor<7x7x2x16xf32> into tensor<7x7x32xf32>
# TILED: %[[CONV:.*]] = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%[[X]], %[[D]] : tensor<1x15x15x32xf32>, tensor<7x7x32xf32>) outs(%{{.*}} : tensor<1x3x3x32xf32>)
# TILED: %[[IMAGES:.*]] = tensor.expand_shape %[[CONV]] {{.*}} output_shape [1, 3, 3, 2, 16]
# TILED: %[[SUM:.*]] = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[IMAGES]] : tensor<1x3x3x2x16xf32>) outs(%{{.*}} : tensor<16x3x3xf32>)
# TILED: tensor.expand_shape %[[SUM]] {{.*}} output_shape [16, 3, 3, 1]
# TILED-NOT: convolution_backward
# GENERIC: torch.aten.convolution_backward


@run
def depthwise_wgrad_one_image():
    print(explained_and_optimized(wgrad("depthwise_wgrad_one_image", [1, 16, 8, 8], 1)))


# CHECK-LABEL: TEST: depthwise_wgrad_one_image
# TILED: %[[XG:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<10x10x1x16xf32>)
# TILED: tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2], [3]] : tensor<1x8x8x16xf32> into tensor<8x8x16xf32>
# TILED: linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%{{.*}}, %{{.*}} : tensor<1x10x10x16xf32>, tensor<8x8x16xf32>)
# GENERIC: torch.aten.convolution_backward
