# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU

# Batch dims broadcast as in torch.matmul: extent-1 batch dims on either side,
# and a B of lower rank than A.

from lit_helpers import emitted, run

import fusilli as fs


def matmul(name, a_dim, b_dim):
    g = fs.Graph(name=name)
    a = g.tensor(name="a", dim=a_dim)
    b = g.tensor(name="b", dim=b_dim)
    c = g.matmul(a, b, name="mm")
    c.set_output(True).set_name("c")
    print(emitted(g))


@run
def matmul_broadcast_unit_batch_dims():
    matmul("matmul_broadcast_unit", [3, 1, 4, 8], [1, 2, 8, 6])


# CHECK-LABEL: TEST: matmul_broadcast_unit_batch_dims
# CHECK: func.func @main(%[[C:[a-z0-9_]+]]: !torch.tensor<[3,2,4,6],f32>, %[[A:[a-z0-9_]+]]: !torch.vtensor<[3,1,4,8],f32>, %[[B:[a-z0-9_]+]]: !torch.vtensor<[1,2,8,6],f32>)
# CHECK: %[[MM:.*]] = torch.aten.matmul %[[A]], %[[B]] : !torch.vtensor<[3,1,4,8],f32>, !torch.vtensor<[1,2,8,6],f32> -> !torch.vtensor<[3,2,4,6],f32>
# CHECK: torch.overwrite.tensor.contents %[[MM]] overwrites %[[C]]


@run
def matmul_broadcast_lower_rank_b():
    matmul("matmul_broadcast_rank", [2, 3, 4, 8], [8, 6])


# CHECK-LABEL: TEST: matmul_broadcast_lower_rank_b
# CHECK: %[[MM:.*]] = torch.aten.matmul %{{.*}}, %{{.*}} : !torch.vtensor<[2,3,4,8],f32>, !torch.vtensor<[8,6],f32> -> !torch.vtensor<[2,3,4,6],f32>
# CHECK: torch.overwrite.tensor.contents %[[MM]] overwrites
