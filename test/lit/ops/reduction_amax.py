# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

# Reduction AMAX: max of |x|: abs then amax.
# X [2,3,4] reduced over dim 1 (given by axes=, or implied by Y's dims) to Y [2,1,4].

import sys

from lit_helpers import emitted, print_stats, run

import fusilli as fs


def build(implied: bool = False) -> fs.Graph:
    g = fs.Graph(name="reduction_amax")
    x = g.tensor(name="x", dim=[2, 3, 4])
    if implied:
        g.reduction(x, mode=fs.ReductionMode.AMAX, name="red").set_output(True).set_name("y").set_dim([2, 1, 4])
    else:
        g.reduction(x, mode=fs.ReductionMode.AMAX, axes=[1], name="red").set_output(True).set_name("y")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "stats":

    @run
    def stats_amax():
        print_stats(build())

    # STATS-LABEL: TEST: stats_amax
    # STATS: dispatch-count: 1
else:

    @run
    def amax_axes():
        print(emitted(build()))

    # CHECK-LABEL: TEST: amax_axes
    # CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,1,4],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3,4],f32>)
    # CHECK: %[[ABS:.*]] = torch.aten.abs %[[X]] : !torch.vtensor<[2,3,4],f32> -> !torch.vtensor<[2,3,4],f32>
    # CHECK: %[[DIMS:.*]] = torch.prim.ListConstruct %{{.*}} : (!torch.int) -> !torch.list<int>
    # CHECK: %[[TRUE:.*]] = torch.constant.bool true
    # CHECK: %[[R:.*]] = torch.aten.amax %[[ABS]], %[[DIMS]], %[[TRUE]] : !torch.vtensor<[2,3,4],f32>, !torch.list<int>, !torch.bool -> !torch.vtensor<[2,1,4],f32>
    # CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

    @run
    def amax_implied_by_y_dims():
        print(emitted(build(implied=True)))

    # CHECK-LABEL: TEST: amax_implied_by_y_dims
    # CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,1,4],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3,4],f32>)
    # CHECK: %[[ABS:.*]] = torch.aten.abs %[[X]] : !torch.vtensor<[2,3,4],f32> -> !torch.vtensor<[2,3,4],f32>
    # CHECK: %[[DIMS:.*]] = torch.prim.ListConstruct %{{.*}} : (!torch.int) -> !torch.list<int>
    # CHECK: %[[TRUE:.*]] = torch.constant.bool true
    # CHECK: %[[R:.*]] = torch.aten.amax %[[ABS]], %[[DIMS]], %[[TRUE]] : !torch.vtensor<[2,3,4],f32>, !torch.list<int>, !torch.bool -> !torch.vtensor<[2,1,4],f32>
    # CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]
