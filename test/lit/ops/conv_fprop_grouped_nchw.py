# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU

# Grouped and depthwise convolutions: groups = X.C / W.C is the last operand
# of torch.aten.convolution.

from lit_helpers import emitted, run

import fusilli as fs


def conv(name, x_dim, w_dim):
    g = fs.Graph(name=name)
    x = g.tensor(name="x", dim=x_dim)
    w = g.tensor(name="w", dim=w_dim)
    y = g.conv_fprop(x, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv")
    y.set_output(True).set_name("y")
    print(emitted(g))


@run
def conv_grouped_4():
    conv("conv_grouped_4", [2, 8, 5, 5], [4, 2, 3, 3])


# CHECK-LABEL: TEST: conv_grouped_4
# CHECK: %[[GROUPS:.*]] = torch.constant.int 4
# CHECK: torch.aten.convolution %{{.*}}, %{{.*}}, %none, %{{.*}}, %{{.*}}, %{{.*}}, %false, %{{.*}}, %[[GROUPS]] : !torch.vtensor<[2,8,5,5],f32>, !torch.vtensor<[4,2,3,3],f32>, {{.*}} -> !torch.vtensor<[2,4,5,5],f32>


@run
def conv_depthwise():
    conv("conv_depthwise", [1, 6, 4, 4], [6, 1, 3, 3])


# CHECK-LABEL: TEST: conv_depthwise
# CHECK: %[[GROUPS:.*]] = torch.constant.int 6
# CHECK: torch.aten.convolution {{.*}}, %[[GROUPS]] : !torch.vtensor<[1,6,4,4],f32>, !torch.vtensor<[6,1,3,3],f32>, {{.*}} -> !torch.vtensor<[1,6,4,4],f32>
