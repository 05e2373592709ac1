# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

# A strided depthwise data gradient (groups = channels, one filter each; 3x3 s2 p1, DY 2x8x4x4 ->
# DX 2x8x8x8, channels-last): torch-mlir's transposed conv of one channel per group fails to compile
# (every target), so fusilli/lowering/conv.py gives DY, in its own NHWC order, the zeros a transposed
# conv reads (a unit dim after each spatial one, padded to the stride: [2, 4, 1, 4, 1, 8] ->
# [2, 4, 2, 4, 2, 8] -> [2, 8, 8, 8]) and the padding of a stride-1 conv ((3 - 1) - 1 = 1 before, 1
# after: [2, 10, 10, 8]), then emits the forward depthwise conv of the flipped filter, stride 1, no
# padding, groups 8. On CPU that is linalg.depthwise_conv_2d_nhwc_hwc (cpu-conv-depthwise): 4 dispatches
# (the zeros spread, the padding, the filter [R, S, C], the conv).

import sys

from lit_helpers import emitted, optimized, print_stats, run

import fusilli as fs


def build():
    g = fs.Graph(name="conv_dgrad_depthwise_strided")
    dy = g.tensor(name="dy", dim=[2, 8, 4, 4], stride=fs.strides([2, 8, 4, 4], "NHWC"))
    w = g.tensor(name="w", dim=[8, 1, 3, 3], stride=fs.strides([8, 1, 3, 3], "NHWC"))
    out = g.conv_dgrad(dy, w, padding=[1, 1], stride=[2, 2], dilation=[1, 1], name="dgrad")
    out.set_dim([2, 8, 8, 8]).set_stride(fs.strides([2, 8, 8, 8], "NHWC")).set_output(True).set_name("dx")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "stats":

    @run
    def stats_conv_dgrad_depthwise_strided():
        print_stats(build())

    # STATS-LABEL: TEST: stats_conv_dgrad_depthwise_strided
    # STATS: dispatch-count: 4
else:

    @run
    def conv_dgrad_depthwise_strided():
        print(emitted(build()))

    # CHECK-LABEL: TEST: conv_dgrad_depthwise_strided
    # CHECK: func.func @main(%{{.*}}: !torch.tensor<[2,8,8,8],f32>, %[[DY:.*]]: !torch.vtensor<[2,4,4,8],f32>, %{{.*}}: !torch.vtensor<[8,1,3,3],f32>)
    # CHECK: %[[UNITS:.*]] = torch.aten.view %{{.*}} -> !torch.vtensor<[2,4,1,4,1,8],f32>
    # CHECK: %[[SPREAD:.*]] = torch.aten.constant_pad_nd %[[UNITS]], %{{.*}} -> !torch.vtensor<[2,4,2,4,2,8],f32>
    # CHECK: %[[ZEROS:.*]] = torch.aten.view %[[SPREAD]], %{{.*}} -> !torch.vtensor<[2,8,8,8],f32>
    # CHECK: %[[PADDED:.*]] = torch.aten.constant_pad_nd %[[ZEROS]], %{{.*}} -> !torch.vtensor<[2,10,10,8],f32>
    # CHECK: %[[DYL:.*]] = torch.aten.permute %[[PADDED]], %{{.*}} -> !torch.vtensor<[2,8,10,10],f32>
    # CHECK: torch.aten.flip
    # CHECK: %[[DX:.*]] = torch.aten.convolution %[[DYL]], %{{.*}}, %none{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %false, %{{.*}}, %int8{{.*}} :{{.*}} -> !torch.vtensor<[2,8,8,8],f32>
    # CHECK-NOT: %true

    @run
    def conv_dgrad_depthwise_strided_optimized():
        print(optimized(build()))

    # CHECK-LABEL: TEST: conv_dgrad_depthwise_strided_optimized
    # CPU: linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%{{.*}}, %{{.*}} : tensor<2x10x10x8xf32>, tensor<3x3x8xf32>)
    # AMDGPU: torch.aten.convolution
