# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU

# Pointwise ADD: torch.aten.add.Tensor with alpha = 1; channels-last operands
# are permuted to logical order and the result back (the layout pass removes
# the pairs this leaves between ops).

from lit_helpers import emitted, optimized, run

import fusilli as fs


def build(layout):
    g = fs.Graph(name=f"add_{layout.lower()}")
    dim = [2, 3, 4, 5]
    a = g.tensor(name="a", dim=dim, stride=fs.strides(dim, layout))
    b = g.tensor(name="b", dim=dim, stride=fs.strides(dim, layout))
    c = g.add(a, b, name="add")
    c.set_output(True).set_name("c")
    return g


@run
def add_nchw():
    print(emitted(build("NCHW")))


# CHECK-LABEL: TEST: add_nchw
# CHECK: func.func @main(%[[C:[a-z0-9_]+]]: !torch.tensor<[2,3,4,5],f32>, %[[A:[a-z0-9_]+]]: !torch.vtensor<[2,3,4,5],f32>, %[[B:[a-z0-9_]+]]: !torch.vtensor<[2,3,4,5],f32>)
# CHECK-NOT: torch.aten.permute
# CHECK: %[[ALPHA:.*]] = torch.constant.int 1
# CHECK: %[[ADD:.*]] = torch.aten.add.Tensor %[[A]], %[[B]], %[[ALPHA]] : {{.*}} -> !torch.vtensor<[2,3,4,5],f32>
# CHECK: torch.overwrite.tensor.contents %[[ADD]] overwrites %[[C]]


@run
def add_nhwc():
    print(emitted(build("NHWC")))


# CHECK-LABEL: TEST: add_nhwc
# CHECK: func.func @main(%[[C:[a-z0-9_]+]]: !torch.tensor<[2,4,5,3],f32>, %[[A:[a-z0-9_]+]]: !torch.vtensor<[2,4,5,3],f32>, %[[B:[a-z0-9_]+]]: !torch.vtensor<[2,4,5,3],f32>)
# CHECK: %[[AL:.*]] = torch.aten.permute %[[A]], %{{.*}} -> !torch.vtensor<[2,3,4,5],f32>
# CHECK: %[[BL:.*]] = torch.aten.permute %[[B]], %{{.*}} -> !torch.vtensor<[2,3,4,5],f32>
# CHECK: %[[ADD:.*]] = torch.aten.add.Tensor %[[AL]], %[[BL]], %{{.*}} -> !torch.vtensor<[2,3,4,5],f32>
# CHECK: %[[CP:.*]] = torch.aten.permute %[[ADD]], %{{.*}} -> !torch.vtensor<[2,4,5,3],f32>
# CHECK: torch.overwrite.tensor.contents %[[CP]] overwrites %[[C]]


@run
def add_nhwc_optimized():
    print(optimized(build("NHWC")))


# The permutes sink below the add and cancel: the add runs in physical order.
# CHECK-LABEL: TEST: add_nhwc_optimized
# CHECK: func.func @main(%[[C:[a-z0-9_]+]]: !torch.tensor<[2,4,5,3],f32>, %[[A:[a-z0-9_]+]]: !torch.vtensor<[2,4,5,3],f32>, %[[B:[a-z0-9_]+]]: !torch.vtensor<[2,4,5,3],f32>)
# CHECK-NOT: torch.aten.permute
# CHECK: %[[A_B:.*]] = torch_c.to_builtin_tensor %[[A]]
# CHECK: %[[B_B:.*]] = torch_c.to_builtin_tensor %[[B]]
# CHECK: linalg.generic {{.*}} ins(%[[A_B]], %[[B_B]] : tensor<2x4x5x3xf32>, tensor<2x4x5x3xf32>) outs(%{{.*}} : tensor<2x4x5x3xf32>)
# CHECK: arith.addf
# CHECK-NOT: torch.aten.permute
# CHECK: torch.overwrite.tensor.contents
