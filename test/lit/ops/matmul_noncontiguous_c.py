# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU

# A result stored with non-contiguous (column-major per batch) strides: the
# logical result is permuted to C's physical order before it is written.

from lit_helpers import emitted, run

import fusilli as fs


@run
def matmul_column_major_c():
    g = fs.Graph(name="matmul_cm_c")
    a = g.tensor(name="a", dim=[2, 4, 8])
    b = g.tensor(name="b", dim=[2, 8, 6])
    c = g.matmul(a, b, name="mm")
    c.set_output(True).set_name("c").set_stride([24, 1, 4])
    print(emitted(g))


# CHECK-LABEL: TEST: matmul_column_major_c
# CHECK: func.func @main(%[[C:[a-z0-9_]+]]: !torch.tensor<[2,6,4],f32>, %{{.*}}: !torch.vtensor<[2,4,8],f32>, %{{.*}}: !torch.vtensor<[2,8,6],f32>)
# CHECK: %[[MM:.*]] = torch.aten.matmul {{.*}} -> !torch.vtensor<[2,4,6],f32>
# CHECK: %[[T:.*]] = torch.prim.ListConstruct %int0{{[_0-9]*}}, %int2{{[_0-9]*}}, %int1{{[_0-9]*}} :
# CHECK: %[[CP:.*]] = torch.aten.permute %[[MM]], %[[T]] : {{.*}} -> !torch.vtensor<[2,6,4],f32>
# CHECK: torch.overwrite.tensor.contents %[[CP]] overwrites %[[C]] : !torch.vtensor<[2,6,4],f32>, !torch.tensor<[2,6,4],f32>
