# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU

# 3-D forward convolution, channels-last everywhere (NDHWC input and output,
# KDRSC filter): X and W are permuted to logical order, the result back.

from lit_helpers import emitted, run

import fusilli as fs


@run
def conv_3d_ndhwc_kdrsc():
    g = fs.Graph(name="conv_3d_ndhwc")
    xd, wd = [1, 2, 4, 5, 6], [3, 2, 3, 3, 3]
    x = g.tensor(name="x", dim=xd, stride=fs.strides(xd, "NDHWC"))
    w = g.tensor(name="w", dim=wd, stride=fs.strides(wd, "NDHWC"))
    y = g.conv_fprop(x, w, padding=[0, 0, 0], stride=[1, 1, 1], dilation=[1, 1, 1], name="conv")
    y.set_output(True).set_name("y")
    print(emitted(g))


# CHECK-LABEL: TEST: conv_3d_ndhwc_kdrsc
# CHECK: func.func @main(%[[Y:[a-z0-9_]+]]: !torch.tensor<[1,2,3,4,3],f32>, %[[W:[a-z0-9_]+]]: !torch.vtensor<[3,3,3,3,2],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[1,4,5,6,2],f32>)
# CHECK: %[[TO_NCDHW:.*]] = torch.prim.ListConstruct %int0{{[_0-9]*}}, %int4{{[_0-9]*}}, %int1{{[_0-9]*}}, %int2{{[_0-9]*}}, %int3{{[_0-9]*}} :
# CHECK: %[[XL:.*]] = torch.aten.permute %[[X]], %[[TO_NCDHW]] : {{.*}} -> !torch.vtensor<[1,2,4,5,6],f32>
# CHECK: %[[WL:.*]] = torch.aten.permute %[[W]], %{{.*}} -> !torch.vtensor<[3,2,3,3,3],f32>
# CHECK: %[[CONV:.*]] = torch.aten.convolution %[[XL]], %[[WL]], {{.*}} -> !torch.vtensor<[1,3,2,3,4],f32>
# CHECK: %[[TO_NDHWC:.*]] = torch.prim.ListConstruct %int0{{[_0-9]*}}, %int2{{[_0-9]*}}, %int3{{[_0-9]*}}, %int4{{[_0-9]*}}, %int1{{[_0-9]*}} :
# CHECK: %[[YP:.*]] = torch.aten.permute %[[CONV]], %[[TO_NDHWC]] : {{.*}} -> !torch.vtensor<[1,2,3,4,3],f32>
# CHECK: torch.overwrite.tensor.contents %[[YP]] overwrites %[[Y]]
