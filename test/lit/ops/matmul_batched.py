# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU
# RUN: %python %s linalg | filecheck %s --check-prefix=LINALG

# Batched matmul with equal batch dims: [B, M, K] @ [B, K, N].

import sys

from lit_helpers import emitted, run

import fusilli as fs


def build():
    g = fs.Graph(name="matmul_batched")
    a = g.tensor(name="a", dim=[2, 4, 8])
    b = g.tensor(name="b", dim=[2, 8, 6])
    c = g.matmul(a, b, name="mm")
    c.set_output(True).set_name("c")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "linalg":

    @run
    def linalg_matmul_batched():
        print(build().mlir("input"))

    # LINALG-LABEL: TEST: linalg_matmul_batched
    # LINALG: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<2x8x6xf32>) {{.*}} -> tensor<2x4x6xf32>
else:

    @run
    def matmul_batched():
        print(emitted(build()))

    # CHECK-LABEL: TEST: matmul_batched
    # CHECK: func.func @main(%[[C:[a-z0-9_]+]]: !torch.tensor<[2,4,6],f32>, %[[A:[a-z0-9_]+]]: !torch.vtensor<[2,4,8],f32>, %[[B:[a-z0-9_]+]]: !torch.vtensor<[2,8,6],f32>)
    # CHECK-NOT: torch.aten.permute
    # CHECK: %[[MM:.*]] = torch.aten.matmul %[[A]], %[[B]] : {{.*}} -> !torch.vtensor<[2,4,6],f32>
    # CHECK: torch.overwrite.tensor.contents %[[MM]] overwrites %[[C]]
