# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

# Reduction MUL: prims.prod (which drops the reduced dims), then unsqueeze back to keepdim.
# X [2,3,4] reduced over dim 1 (given by axes=, or implied by Y's dims) to Y [2,1,4].

import sys

from lit_helpers import emitted, print_stats, run

import fusilli as fs


def build(implied: bool = False) -> fs.Graph:
    g = fs.Graph(name="reduction_mul")
    x = g.tensor(name="x", dim=[2, 3, 4])
    if implied:
        g.reduction(x, mode=fs.ReductionMode.MUL, name="red").set_output(True).set_name("y").set_dim([2, 1, 4])
    else:
        g.reduction(x, mode=fs.ReductionMode.MUL, axes=[1], name="red").set_output(True).set_name("y")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "stats":

    @run
    def stats_mul():
        print_stats(build())

    # STATS-LABEL: TEST: stats_mul
    # STATS: dispatch-count: 1
else:

    @run
    def mul_axes():
        print(emitted(build()))

    # CHECK-LABEL: TEST: mul_axes
    # CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,1,4],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3,4],f32>)
    # CHECK: %[[DIMS:.*]] = torch.prim.ListConstruct %{{.*}} : (!torch.int) -> !torch.list<int>
    # CHECK: %[[NONE:.*]] = torch.constant.none
    # CHECK: %[[P:.*]] = torch.prims.prod %[[X]], %[[DIMS]], %[[NONE]] : !torch.vtensor<[2,3,4],f32>, !torch.list<int>, !torch.none -> !torch.vtensor<[2,4],f32>
    # CHECK: %[[ONE:.*]] = torch.constant.int 1
    # CHECK: %[[R:.*]] = torch.aten.unsqueeze %[[P]], %[[ONE]] : !torch.vtensor<[2,4],f32>, !torch.int -> !torch.vtensor<[2,1,4],f32>
    # CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

    @run
    def mul_implied_by_y_dims():
        print(emitted(build(implied=True)))

    # CHECK-LABEL: TEST: mul_implied_by_y_dims
    # CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,1,4],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3,4],f32>)
    # CHECK: %[[DIMS:.*]] = torch.prim.ListConstruct %{{.*}} : (!torch.int) -> !torch.list<int>
    # CHECK: %[[NONE:.*]] = torch.constant.none
    # CHECK: %[[P:.*]] = torch.prims.prod %[[X]], %[[DIMS]], %[[NONE]] : !torch.vtensor<[2,3,4],f32>, !torch.list<int>, !torch.none -> !torch.vtensor<[2,4],f32>
    # CHECK: %[[ONE:.*]] = torch.constant.int 1
    # CHECK: %[[R:.*]] = torch.aten.unsqueeze %[[P]], %[[ONE]] : !torch.vtensor<[2,4],f32>, !torch.int -> !torch.vtensor<[2,1,4],f32>
    # CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

    # torch-mlir cannot lower prims.prod on dynamic shapes: one prod.dim_int (keepdim) per reduced dim.
    @run
    def mul_dynamic_batch():
        g = fs.Graph(name="reduction_mul_dynamic")
        x = g.tensor(name="x", dim=[2, 3, 4], dynamic_dims=[0])
        g.reduction(x, mode=fs.ReductionMode.MUL, axes=[1, 2], name="red").set_output(True).set_name("y")
        print(emitted(g))

    # CHECK-LABEL: TEST: mul_dynamic_batch
    # CHECK: %[[P1:.*]] = torch.aten.prod.dim_int %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : !torch.vtensor<[?,3,4],f32>, !torch.int, !torch.bool, !torch.none -> !torch.vtensor<[?,1,4],f32>
    # CHECK: %[[P2:.*]] = torch.aten.prod.dim_int %[[P1]], %{{.*}}, %{{.*}}, %{{.*}} : !torch.vtensor<[?,1,4],f32>, !torch.int, !torch.bool, !torch.none -> !torch.vtensor<[?,1,1],f32>
    # CHECK: torch.overwrite.tensor.contents %[[P2]] overwrites
    # CHECK-NOT: torch.prims.prod
