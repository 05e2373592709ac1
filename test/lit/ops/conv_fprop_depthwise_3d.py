# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU

# A 3-D depthwise conv (one input channel per group; 3x3x3 p1 over a channels-last 1x8x4x5x5 input):
# torch-mlir fails to legalize it, so fusilli/lowering/conv.py emits the sum over its 3 depth taps of
# 2-D depthwise convs whose images are the N x Do = 4 output depths, in the input's NDHWC order:
# depth padded (4 + 2 = 6), tap t's depths t..t+3 sliced, [1, 4, 5, 5, 8] viewed as [4, 5, 5, 8] and
# permuted to the logical [4, 8, 5, 5] a channels-last 2-D conv reads, the filter's depth tap t
# selected ([8, 1, 3, 3]), the results viewed back [1, 4, 5, 5, 8] and added. On CPU each 2-D conv
# is linalg.depthwise_conv_2d_nhwc_hwc (cpu-conv-depthwise).

from lit_helpers import emitted, optimized, run

import fusilli as fs


def build():
    g = fs.Graph(name="conv_fprop_depthwise_3d")
    x_dim, w_dim = [1, 8, 4, 5, 5], [8, 1, 3, 3, 3]
    x = g.tensor(name="x", dim=x_dim, stride=fs.strides(x_dim, "NDHWC"))
    w = g.tensor(name="w", dim=w_dim, stride=fs.strides(w_dim, "NDHWC"))
    y = g.conv_fprop(x, w, padding=[1, 1, 1], stride=[1, 1, 1], dilation=[1, 1, 1], name="dw3d")
    y.set_output(True).set_name("y")
    return g


@run
def conv_fprop_depthwise_3d():
    print(emitted(build()))


# CHECK-LABEL: TEST: conv_fprop_depthwise_3d
# CHECK: %[[PADDED:.*]] = torch.aten.constant_pad_nd %{{.*}} -> !torch.vtensor<[1,6,5,5,8],f32>
# CHECK: %[[TAP0:.*]] = torch.aten.slice.Tensor %[[PADDED]], %{{.*}} -> !torch.vtensor<[1,4,5,5,8],f32>
# CHECK: %[[IMAGES0:.*]] = torch.aten.view %[[TAP0]], %{{.*}} -> !torch.vtensor<[4,5,5,8],f32>
# CHECK: %[[X0:.*]] = torch.aten.permute %[[IMAGES0]], %{{.*}} -> !torch.vtensor<[4,8,5,5],f32>
# CHECK: %[[W0:.*]] = torch.aten.select.int %{{.*}}, %{{.*}}, %{{.*}} : !torch.vtensor<[8,1,3,3,3],f32>, !torch.int, !torch.int -> !torch.vtensor<[8,1,3,3],f32>
# CHECK: torch.aten.convolution %[[X0]], %[[W0]], {{.*}} -> !torch.vtensor<[4,8,5,5],f32>
# CHECK: torch.aten.convolution
# CHECK: torch.aten.add.Tensor {{.*}} -> !torch.vtensor<[1,4,5,5,8],f32>
# CHECK: torch.aten.convolution
# CHECK: %[[SUM:.*]] = torch.aten.add.Tensor {{.*}} -> !torch.vtensor<[1,4,5,5,8],f32>
# CHECK: torch.aten.permute %[[SUM]], %{{.*}} -> !torch.vtensor<[1,8,4,5,5],f32>
# CHECK-NOT: torch.aten.convolution


@run
def conv_fprop_depthwise_3d_optimized():
    print(optimized(build()))


# CHECK-LABEL: TEST: conv_fprop_depthwise_3d_optimized
# CPU-COUNT-3: linalg.depthwise_conv_2d_nhwc_hwc {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x7x7x8xf32>, tensor<3x3x8xf32>)
# AMDGPU-COUNT-3: torch.aten.convolution
