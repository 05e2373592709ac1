# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU

# Channels-last input and output with a KCRS filter: X is permuted to NCHW and
# the result back to NHWC; the filter is used as it is.

from lit_helpers import emitted, run

import fusilli as fs


@run
def conv_nhwc_kcrs():
    g = fs.Graph(name="conv_nhwc_kcrs")
    x = g.tensor(name="x", dim=[2, 3, 6, 5], stride=fs.strides([2, 3, 6, 5], "NHWC"))
    w = g.tensor(name="w", dim=[4, 3, 3, 3])
    y = g.conv_fprop(x, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv")
    y.set_output(True).set_name("y").set_stride(fs.strides([2, 4, 6, 5], "NHWC"))
    print(emitted(g))


# CHECK-LABEL: TEST: conv_nhwc_kcrs
# CHECK: func.func @main(%[[Y:[a-z0-9_]+]]: !torch.tensor<[2,6,5,4],f32>, %[[W:[a-z0-9_]+]]: !torch.vtensor<[4,3,3,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,6,5,3],f32>)
# CHECK: %[[TO_NCHW:.*]] = torch.prim.ListConstruct %int0{{[_0-9]*}}, %int3{{[_0-9]*}}, %int1{{[_0-9]*}}, %int2{{[_0-9]*}} :
# CHECK: %[[XL:.*]] = torch.aten.permute %[[X]], %[[TO_NCHW]] : {{.*}} -> !torch.vtensor<[2,3,6,5],f32>
# CHECK-NOT: torch.aten.permute %[[W]]
# CHECK: %[[CONV:.*]] = torch.aten.convolution %[[XL]], %[[W]], {{.*}} -> !torch.vtensor<[2,4,6,5],f32>
# CHECK: %[[TO_NHWC:.*]] = torch.prim.ListConstruct %int0{{[_0-9]*}}, %int2{{[_0-9]*}}, %int3{{[_0-9]*}}, %int1{{[_0-9]*}} :
# CHECK: %[[YP:.*]] = torch.aten.permute %[[CONV]], %[[TO_NHWC]] : {{.*}} -> !torch.vtensor<[2,6,5,4],f32>
# CHECK: torch.overwrite.tensor.contents %[[YP]] overwrites %[[Y]]
