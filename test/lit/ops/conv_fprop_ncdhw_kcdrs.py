# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU
# RUN: %python %s linalg | filecheck %s --check-prefix=LINALG

# 3-D forward convolution, NCDHW input and output, KCDRS filter: no permutes.

import sys

from lit_helpers import emitted, run

import fusilli as fs


def build():
    g = fs.Graph(name="conv_3d_ncdhw")
    x = g.tensor(name="x", dim=[1, 2, 4, 5, 6])
    w = g.tensor(name="w", dim=[3, 2, 3, 3, 3])
    y = g.conv_fprop(x, w, padding=[1, 0, 2], stride=[1, 1, 1], dilation=[1, 1, 1], name="conv")
    y.set_output(True).set_name("y")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "linalg":

    @run
    def linalg_conv_3d_ncdhw():
        print(build().mlir("input"))

    # LINALG-LABEL: TEST: linalg_conv_3d_ncdhw
    # LINALG: tensor.pad %{{.*}} low[0, 0, 1, 0, 2] high[0, 0, 1, 0, 2]
    # LINALG: linalg.conv_3d_ncdhw_fcdhw {{.*}} -> tensor<1x3x4x3x8xf32>
else:

    @run
    def conv_3d_ncdhw_kcdrs():
        print(emitted(build()))

    # CHECK-LABEL: TEST: conv_3d_ncdhw_kcdrs
    # CHECK: func.func @main(%[[Y:[a-z0-9_]+]]: !torch.tensor<[1,3,4,3,8],f32>, %[[W:[a-z0-9_]+]]: !torch.vtensor<[3,2,3,3,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[1,2,4,5,6],f32>)
    # CHECK-NOT: torch.aten.permute
    # CHECK: %[[PAD:.*]] = torch.prim.ListConstruct %int1{{[_0-9]*}}, %int0{{[_0-9]*}}, %int2{{[_0-9]*}} :
    # CHECK: %[[CONV:.*]] = torch.aten.convolution %[[X]], %[[W]], %none, %{{.*}}, %[[PAD]], {{.*}} -> !torch.vtensor<[1,3,4,3,8],f32>
    # CHECK: torch.overwrite.tensor.contents %[[CONV]] overwrites %[[Y]]
