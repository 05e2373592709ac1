# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU

# Transposed operands are given by strides, as with a PyTorch tensor's
# .stride(): a column-major A [M, K] arrives physically as [K, M] and is
# permuted to logical order before torch.aten.matmul; likewise B.

from lit_helpers import emitted, run

import fusilli as fs


def matmul(name, a_stride, b_stride):
    g = fs.Graph(name=name)
    a = g.tensor(name="a", dim=[4, 8], stride=a_stride)
    b = g.tensor(name="b", dim=[8, 6], stride=b_stride)
    c = g.matmul(a, b, name="mm")
    c.set_output(True).set_name("c")
    print(emitted(g))


@run
def matmul_transposed_a():
    matmul("matmul_ta", [1, 4], [6, 1])


# CHECK-LABEL: TEST: matmul_transposed_a
# CHECK: func.func @main(%{{.*}}: !torch.tensor<[4,6],f32>, %[[A:[a-z0-9_]+]]: !torch.vtensor<[8,4],f32>, %[[B:[a-z0-9_]+]]: !torch.vtensor<[8,6],f32>)
# CHECK: %[[T:.*]] = torch.prim.ListConstruct %int1{{[_0-9]*}}, %int0{{[_0-9]*}} :
# CHECK: %[[AL:.*]] = torch.aten.permute %[[A]], %[[T]] : !torch.vtensor<[8,4],f32>, !torch.list<int> -> !torch.vtensor<[4,8],f32>
# CHECK: torch.aten.matmul %[[AL]], %[[B]] : {{.*}} -> !torch.vtensor<[4,6],f32>


@run
def matmul_transposed_b():
    matmul("matmul_tb", [8, 1], [1, 8])


# CHECK-LABEL: TEST: matmul_transposed_b
# CHECK: func.func @main(%{{.*}}: !torch.tensor<[4,6],f32>, %[[A:[a-z0-9_]+]]: !torch.vtensor<[4,8],f32>, %[[B:[a-z0-9_]+]]: !torch.vtensor<[6,8],f32>)
# CHECK: %[[BL:.*]] = torch.aten.permute %[[B]], %{{.*}} : !torch.vtensor<[6,8],f32>, !torch.list<int> -> !torch.vtensor<[8,6],f32>
# CHECK: torch.aten.matmul %[[A]], %[[BL]] : {{.*}} -> !torch.vtensor<[4,6],f32>


@run
def matmul_transposed_a_and_b():
    matmul("matmul_tab", [1, 4], [1, 8])


# CHECK-LABEL: TEST: matmul_transposed_a_and_b
# CHECK: %[[AL:.*]] = torch.aten.permute %{{.*}} -> !torch.vtensor<[4,8],f32>
# CHECK: %[[BL:.*]] = torch.aten.permute %{{.*}} -> !torch.vtensor<[8,6],f32>
# CHECK: torch.aten.matmul %[[AL]], %[[BL]]
