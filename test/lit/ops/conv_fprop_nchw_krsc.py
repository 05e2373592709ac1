# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU

# NCHW input and output with a channels-last (KRSC) filter: only the filter is
# permuted to the logical KCRS order.

from lit_helpers import emitted, run

import fusilli as fs


@run
def conv_nchw_krsc():
    g = fs.Graph(name="conv_nchw_krsc")
    x = g.tensor(name="x", dim=[2, 3, 6, 5])
    w = g.tensor(name="w", dim=[4, 3, 3, 3], stride=fs.strides([4, 3, 3, 3], "NHWC"))
    y = g.conv_fprop(x, w, padding=[0, 0], stride=[1, 1], dilation=[1, 1], name="conv")
    y.set_output(True).set_name("y")
    print(emitted(g))


# CHECK-LABEL: TEST: conv_nchw_krsc
# CHECK: func.func @main(%[[Y:[a-z0-9_]+]]: !torch.tensor<[2,4,4,3],f32>, %[[W:[a-z0-9_]+]]: !torch.vtensor<[4,3,3,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3,6,5],f32>)
# CHECK: %[[TO_KCRS:.*]] = torch.prim.ListConstruct %int0{{[_0-9]*}}, %int3{{[_0-9]*}}, %int1{{[_0-9]*}}, %int2{{[_0-9]*}} :
# CHECK: %[[WL:.*]] = torch.aten.permute %[[W]], %[[TO_KCRS]] :
# CHECK: %[[CONV:.*]] = torch.aten.convolution %[[X]], %[[WL]], {{.*}} -> !torch.vtensor<[2,4,4,3],f32>
# CHECK-NOT: torch.aten.permute
# CHECK: torch.overwrite.tensor.contents %[[CONV]] overwrites %[[Y]]
