# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU

# Pointwise SUB: torch.aten.sub.Tensor with alpha = 1.

from lit_helpers import emitted, run

import fusilli as fs


@run
def sub():
    g = fs.Graph(name="sub")
    a = g.tensor(name="a", dim=[2, 3, 4])
    b = g.tensor(name="b", dim=[2, 3, 4])
    c = g.sub(a, b, name="sub")
    c.set_output(True).set_name("c")
    print(emitted(g))


# CHECK-LABEL: TEST: sub
# CHECK: func.func @main(%[[C:[a-z0-9_]+]]: !torch.tensor<[2,3,4],f32>, %[[A:[a-z0-9_]+]]: !torch.vtensor<[2,3,4],f32>, %[[B:[a-z0-9_]+]]: !torch.vtensor<[2,3,4],f32>)
# CHECK: %[[ALPHA:.*]] = torch.constant.int 1
# CHECK: %[[SUB:.*]] = torch.aten.sub.Tensor %[[A]], %[[B]], %[[ALPHA]] : {{.*}} -> !torch.vtensor<[2,3,4],f32>
# CHECK: torch.overwrite.tensor.contents %[[SUB]] overwrites %[[C]]
