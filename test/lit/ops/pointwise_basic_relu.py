# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU

# Pointwise RELU_FWD: torch.aten.relu, and its body after epilogue fusion
# (a maximum against 0 in a linalg.generic).

from lit_helpers import emitted, optimized, run

import fusilli as fs


def build():
    g = fs.Graph(name="relu")
    a = g.tensor(name="a", dim=[2, 3, 4])
    c = g.relu(a, name="relu")
    c.set_output(True).set_name("c")
    return g


@run
def relu():
    print(emitted(build()))


# CHECK-LABEL: TEST: relu
# CHECK: func.func @main(%[[C:[a-z0-9_]+]]: !torch.tensor<[2,3,4],f32>, %[[A:[a-z0-9_]+]]: !torch.vtensor<[2,3,4],f32>)
# CHECK: %[[R:.*]] = torch.aten.relu %[[A]] : !torch.vtensor<[2,3,4],f32> -> !torch.vtensor<[2,3,4],f32>
# CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[C]]


@run
def relu_optimized():
    print(optimized(build()))


# CHECK-LABEL: TEST: relu_optimized
# CHECK-NOT: torch.aten.relu
# CHECK: linalg.generic
# CHECK: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
# CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
# CHECK: %[[MAX:.*]] = arith.maximumf %[[IN]], %[[ZERO]] : f32
# CHECK: linalg.yield %[[MAX]] : f32
