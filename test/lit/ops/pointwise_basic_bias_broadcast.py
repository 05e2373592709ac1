# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU

# A bias broadcast over a channels-last activation, two ways: by shape
# ([1, C, 1, 1], torch broadcasting) and by strides (dim [N, C, H, W] with
# stride 0 in the broadcast dims, which emission expands).

from lit_helpers import emitted, run

import fusilli as fs


@run
def bias_broadcast_by_shape():
    g = fs.Graph(name="bias_shape")
    dim = [2, 3, 4, 5]
    x = g.tensor(name="x", dim=dim, stride=fs.strides(dim, "NHWC"))
    b = g.tensor(name="b", dim=[1, 3, 1, 1])
    y = g.add(x, b, name="bias")
    y.set_output(True).set_name("y")
    print(emitted(g))


# CHECK-LABEL: TEST: bias_broadcast_by_shape
# CHECK: func.func @main(%[[Y:[a-z0-9_]+]]: !torch.tensor<[2,4,5,3],f32>, %[[B:[a-z0-9_]+]]: !torch.vtensor<[1,3,1,1],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,4,5,3],f32>)
# CHECK: %[[XL:.*]] = torch.aten.permute %[[X]], %{{.*}} -> !torch.vtensor<[2,3,4,5],f32>
# CHECK: %[[ADD:.*]] = torch.aten.add.Tensor %[[XL]], %[[B]], %{{.*}} : !torch.vtensor<[2,3,4,5],f32>, !torch.vtensor<[1,3,1,1],f32>, !torch.int -> !torch.vtensor<[2,3,4,5],f32>
# CHECK: %[[YP:.*]] = torch.aten.permute %[[ADD]], %{{.*}} -> !torch.vtensor<[2,4,5,3],f32>
# CHECK: torch.overwrite.tensor.contents %[[YP]] overwrites %[[Y]]


@run
def bias_broadcast_by_stride():
    g = fs.Graph(name="bias_stride")
    x = g.tensor(name="x", dim=[2, 3, 4])
    b = g.tensor(name="b", dim=[2, 3, 4], stride=[0, 1, 0])
    y = g.add(x, b, name="bias")
    y.set_output(True).set_name("y")
    print(emitted(g))


# CHECK-LABEL: TEST: bias_broadcast_by_stride
# CHECK: func.func @main(%[[Y:[a-z0-9_]+]]: !torch.tensor<[2,3,4],f32>, %[[B:[a-z0-9_]+]]: !torch.vtensor<[1,3,1],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3,4],f32>)
# CHECK: %[[SIZES:.*]] = torch.prim.ListConstruct %int2{{[_0-9]*}}, %int3{{[_0-9]*}}, %int4{{[_0-9]*}} :
# CHECK: %[[BE:.*]] = torch.aten.expand %[[B]], %[[SIZES]], %false : !torch.vtensor<[1,3,1],f32>, !torch.list<int>, !torch.bool -> !torch.vtensor<[2,3,4],f32>
# CHECK: %[[ADD:.*]] = torch.aten.add.Tensor %[[X]], %[[BE]], %{{.*}} -> !torch.vtensor<[2,3,4],f32>
# CHECK: torch.overwrite.tensor.contents %[[ADD]] overwrites %[[Y]]
