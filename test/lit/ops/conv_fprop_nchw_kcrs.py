# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU
# RUN: %python %s linalg | filecheck %s --check-prefix=LINALG

# 2-D forward convolution, NCHW input and output, KCRS filter: every tensor is
# already in the order torch.aten.convolution wants, so nothing is permuted.

import sys

from lit_helpers import emitted, run

import fusilli as fs


def build():
    g = fs.Graph(name="conv_nchw_kcrs")
    x = g.tensor(name="x", dim=[2, 3, 6, 5])
    w = g.tensor(name="w", dim=[4, 3, 3, 3])
    y = g.conv_fprop(x, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv")
    y.set_output(True).set_name("y")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "linalg":

    @run
    def linalg_conv_nchw_kcrs():
        print(build().mlir("input"))

    # LINALG-LABEL: TEST: linalg_conv_nchw_kcrs
    # LINALG-NOT: linalg.transpose
    # LINALG: %[[PADDED:.*]] = tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
    # LINALG: linalg.conv_2d_nchw_fchw {{.*}} ins(%[[PADDED]], %{{.*}} : tensor<2x3x8x7xf32>, tensor<4x3x3x3xf32>) {{.*}} -> tensor<2x4x6x5xf32>
else:

    @run
    def conv_nchw_kcrs():
        print(emitted(build()))

    # CHECK-LABEL: TEST: conv_nchw_kcrs
    # CHECK: func.func @main(%[[Y:[a-z0-9_]+]]: !torch.tensor<[2,4,6,5],f32>, %[[W:[a-z0-9_]+]]: !torch.vtensor<[4,3,3,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3,6,5],f32>)
    # CHECK-NOT: torch.aten.permute
    # CHECK: %[[STRIDE:.*]] = torch.prim.ListConstruct %int1{{[_0-9]*}}, %int1{{[_0-9]*}} :
    # CHECK: %[[PAD:.*]] = torch.prim.ListConstruct %int1{{[_0-9]*}}, %int1{{[_0-9]*}} :
    # CHECK: %[[DIL:.*]] = torch.prim.ListConstruct %int1{{[_0-9]*}}, %int1{{[_0-9]*}} :
    # CHECK: %[[CONV:.*]] = torch.aten.convolution %[[X]], %[[W]], %none, %[[STRIDE]], %[[PAD]], %[[DIL]], %false, %{{.*}}, %int1{{[_0-9]*}} : {{.*}} -> !torch.vtensor<[2,4,6,5],f32>
    # CHECK-NOT: torch.aten.permute
    # CHECK: torch.overwrite.tensor.contents %[[CONV]] overwrites %[[Y]]
