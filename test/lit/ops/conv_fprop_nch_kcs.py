# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU

# 1-D forward convolution (NCH input, KCS filter): one-element stride, padding
# and dilation lists.

from lit_helpers import emitted, run

import fusilli as fs


@run
def conv_1d_nch_kcs():
    g = fs.Graph(name="conv_1d_nch_kcs")
    x = g.tensor(name="x", dim=[2, 3, 9])
    w = g.tensor(name="w", dim=[4, 3, 3])
    y = g.conv_fprop(x, w, padding=[2], stride=[2], dilation=[1], name="conv")
    y.set_output(True).set_name("y")
    print(emitted(g))


# (9 + 2*2 - 3) // 2 + 1 = 6
# CHECK-LABEL: TEST: conv_1d_nch_kcs
# CHECK: func.func @main(%[[Y:[a-z0-9_]+]]: !torch.tensor<[2,4,6],f32>, %[[W:[a-z0-9_]+]]: !torch.vtensor<[4,3,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3,9],f32>)
# CHECK-NOT: torch.aten.permute
# CHECK: %[[STRIDE:.*]] = torch.prim.ListConstruct %int2{{[_0-9]*}} : (!torch.int) -> !torch.list<int>
# CHECK: %[[PAD:.*]] = torch.prim.ListConstruct %int2{{[_0-9]*}} : (!torch.int) -> !torch.list<int>
# CHECK: %[[DIL:.*]] = torch.prim.ListConstruct %int1{{[_0-9]*}} : (!torch.int) -> !torch.list<int>
# CHECK: %[[CONV:.*]] = torch.aten.convolution %[[X]], %[[W]], %none, %[[STRIDE]], %[[PAD]], %[[DIL]], {{.*}} -> !torch.vtensor<[2,4,6],f32>
# CHECK: torch.overwrite.tensor.contents %[[CONV]] overwrites %[[Y]]
