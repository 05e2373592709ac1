# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU

# Pointwise MUL: torch.aten.mul.Tensor. With f16 graph inputs and outputs the
# op computes in compute_data_type (f32): operands are cast up, the result is
# cast down once.

from lit_helpers import emitted, run

import fusilli as fs


def build(io_type):
    g = fs.Graph(name="mul", io_data_type=io_type)
    a = g.tensor(name="a", dim=[2, 3, 4])
    b = g.tensor(name="b", dim=[2, 3, 4])
    c = g.mul(a, b, name="mul")
    c.set_output(True).set_name("c")
    return g


@run
def mul_f32():
    print(emitted(build(fs.DataType.FLOAT)))


# CHECK-LABEL: TEST: mul_f32
# CHECK: func.func @main(%[[C:[a-z0-9_]+]]: !torch.tensor<[2,3,4],f32>, %[[A:[a-z0-9_]+]]: !torch.vtensor<[2,3,4],f32>, %[[B:[a-z0-9_]+]]: !torch.vtensor<[2,3,4],f32>)
# CHECK-NOT: torch.aten.to.dtype
# CHECK: %[[MUL:.*]] = torch.aten.mul.Tensor %[[A]], %[[B]] : {{.*}} -> !torch.vtensor<[2,3,4],f32>
# CHECK: torch.overwrite.tensor.contents %[[MUL]] overwrites %[[C]]


@run
def mul_f16_computes_in_f32():
    print(emitted(build(fs.DataType.HALF)))


# CHECK-LABEL: TEST: mul_f16_computes_in_f32
# CHECK: func.func @main(%[[C:[a-z0-9_]+]]: !torch.tensor<[2,3,4],f16>, %[[A:[a-z0-9_]+]]: !torch.vtensor<[2,3,4],f16>, %[[B:[a-z0-9_]+]]: !torch.vtensor<[2,3,4],f16>)
# CHECK: %[[A32:.*]] = torch.aten.to.dtype %[[A]], {{.*}} -> !torch.vtensor<[2,3,4],f32>
# CHECK: %[[B32:.*]] = torch.aten.to.dtype %[[B]], {{.*}} -> !torch.vtensor<[2,3,4],f32>
# CHECK: %[[MUL:.*]] = torch.aten.mul.Tensor %[[A32]], %[[B32]] : {{.*}} -> !torch.vtensor<[2,3,4],f32>
# CHECK: %[[C16:.*]] = torch.aten.to.dtype %[[MUL]], {{.*}} -> !torch.vtensor<[2,3,4],f16>
# CHECK: torch.overwrite.tensor.contents %[[C16]] overwrites %[[C]]
