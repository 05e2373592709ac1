# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU

# Pointwise DIV: torch.aten.div.Tensor (true division), broadcasting a
# [1, 3, 1] divisor over [2, 3, 4].

from lit_helpers import emitted, run

import fusilli as fs


@run
def div_broadcast():
    g = fs.Graph(name="div")
    a = g.tensor(name="a", dim=[2, 3, 4])
    b = g.tensor(name="b", dim=[1, 3, 1])
    c = g.div(a, b, name="div")
    c.set_output(True).set_name("c")
    print(emitted(g))


# CHECK-LABEL: TEST: div_broadcast
# CHECK: func.func @main(%[[C:[a-z0-9_]+]]: !torch.tensor<[2,3,4],f32>, %[[A:[a-z0-9_]+]]: !torch.vtensor<[2,3,4],f32>, %[[B:[a-z0-9_]+]]: !torch.vtensor<[1,3,1],f32>)
# CHECK: %[[DIV:.*]] = torch.aten.div.Tensor %[[A]], %[[B]] : !torch.vtensor<[2,3,4],f32>, !torch.vtensor<[1,3,1],f32> -> !torch.vtensor<[2,3,4],f32>
# CHECK: torch.overwrite.tensor.contents %[[DIV]] overwrites %[[C]]
