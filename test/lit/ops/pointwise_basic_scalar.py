# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU

# A scalar operand from g.scalar is a compile-time constant: a one-element
# torch.vtensor.literal, not a function argument.

from lit_helpers import emitted, run

import fusilli as fs


@run
def mul_by_scalar():
    g = fs.Graph(name="mul_scalar")
    a = g.tensor(name="a", dim=[2, 3, 4])
    s = g.scalar(2.5, data_type=fs.DataType.FLOAT)
    c = g.mul(a, s, name="scale")
    c.set_output(True).set_name("c")
    print(emitted(g))


# CHECK-LABEL: TEST: mul_by_scalar
# CHECK: func.func @main(%[[C:[a-z0-9_]+]]: !torch.tensor<[2,3,4],f32>, %[[A:[a-z0-9_]+]]: !torch.vtensor<[2,3,4],f32>) attributes
# CHECK: %[[S:.*]] = torch.vtensor.literal(dense<2.500000e+00> : tensor<1xf32>) : !torch.vtensor<[1],f32>
# CHECK: %[[MUL:.*]] = torch.aten.mul.Tensor %[[A]], %[[S]] : !torch.vtensor<[2,3,4],f32>, !torch.vtensor<[1],f32> -> !torch.vtensor<[2,3,4],f32>
# CHECK: torch.overwrite.tensor.contents %[[MUL]] overwrites %[[C]]


@run
def add_scalar_first():
    g = fs.Graph(name="add_scalar")
    a = g.tensor(name="a", dim=[4])
    s = g.scalar(1.0)
    c = g.add(s, a, name="add")
    c.set_output(True).set_name("c")
    print(emitted(g))


# CHECK-LABEL: TEST: add_scalar_first
# CHECK: %[[S:.*]] = torch.vtensor.literal(dense<1.000000e+00> : tensor<1xf32>) : !torch.vtensor<[1],f32>
# CHECK: torch.aten.add.Tensor %[[S]], %{{.*}}, %{{.*}} : !torch.vtensor<[1],f32>, !torch.vtensor<[4],f32>, !torch.int -> !torch.vtensor<[4],f32>
