# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

import sys

from lit_helpers import emitted, print_stats, run

import fusilli as fs

TEMPLATE = """
func.func private @{FUNC_NAME}(%a: {IN0_TYPE}, %b: {IN1_TYPE}) -> ({OUT0_TYPE}, {OUT1_TYPE}) {
  %int1 = torch.constant.int 1
  %s = torch.aten.add.Tensor %a, %b, %int1 : {IN0_TYPE}, {IN1_TYPE}, !torch.int -> {OUT0_TYPE}
  %m = torch.aten.mul.Tensor %a, %b : {IN0_TYPE}, {IN1_TYPE} -> {OUT1_TYPE}
  return %s, %m : {OUT0_TYPE}, {OUT1_TYPE}
}
"""


def build():
    g = fs.Graph(name="custom_add_mul")
    x = g.tensor(name="x", dim=[2, 3], stride=[1, 2])
    s, m = g.custom_op([x, x], mlir=TEMPLATE, num_outputs=2, name="addmul")
    s.set_dim([2, 3]).set_output(True).set_name("s")
    m.set_dim([2, 3]).set_output(True).set_name("m")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "stats":

    @run
    def stats_custom_add_mul():
        print_stats(build())

    # STATS-LABEL: TEST: stats_custom_add_mul
    # STATS: dispatch-count: 2
else:

    @run
    def custom_add_mul():
        print(emitted(build()))

    # CHECK-LABEL: TEST: custom_add_mul
    # CHECK: func.func private @addmul(%{{.*}}: !torch.vtensor<[2,3],f32>, %{{.*}}: !torch.vtensor<[2,3],f32>) -> (!torch.vtensor<[2,3],f32>, !torch.vtensor<[2,3],f32>)
    # CHECK: torch.aten.add.Tensor
    # CHECK: func.func @main(
    # The same input twice: one permute per operand, as upstream.
    # CHECK: %[[X0:.*]] = torch.aten.permute %{{.*}} -> !torch.vtensor<[2,3],f32>
    # CHECK: %[[X1:.*]] = torch.aten.permute %{{.*}} -> !torch.vtensor<[2,3],f32>
    # CHECK: %{{.*}}:2 = call @addmul(%[[X0]], %[[X1]])
