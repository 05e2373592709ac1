# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

# Reduction MUL_NO_ZEROS: product of the non-zero elements: ne.Scalar mask, where.ScalarOther(mask, x, 1), prims.prod.
# X [2,3,4] reduced over dim 1 (given by axes=, or implied by Y's dims) to Y [2,1,4].

import sys

from lit_helpers import emitted, print_stats, run

import fusilli as fs


def build(implied: bool = False) -> fs.Graph:
    g = fs.Graph(name="reduction_mul_no_zeros")
    x = g.tensor(name="x", dim=[2, 3, 4])
    if implied:
        g.reduction(x, mode=fs.ReductionMode.MUL_NO_ZEROS, name="red").set_output(True).set_name("y").set_dim([2, 1, 4])
    else:
        g.reduction(x, mode=fs.ReductionMode.MUL_NO_ZEROS, axes=[1], name="red").set_output(True).set_name("y")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "stats":

    @run
    def stats_mul_no_zeros():
        print_stats(build())

    # STATS-LABEL: TEST: stats_mul_no_zeros
    # STATS: dispatch-count: 1
else:

    @run
    def mul_no_zeros_axes():
        print(emitted(build()))

    # CHECK-LABEL: TEST: mul_no_zeros_axes
    # CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,1,4],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3,4],f32>)
    # CHECK: %[[ZERO:.*]] = torch.constant.int 0
    # CHECK: %[[MASK:.*]] = torch.aten.ne.Scalar %[[X]], %[[ZERO]] : !torch.vtensor<[2,3,4],f32>, !torch.int -> !torch.vtensor<[2,3,4],i1>
    # CHECK: %[[ONE:.*]] = torch.constant.int 1
    # CHECK: %[[SEL:.*]] = torch.aten.where.ScalarOther %[[MASK]], %[[X]], %[[ONE]] : !torch.vtensor<[2,3,4],i1>, !torch.vtensor<[2,3,4],f32>, !torch.int -> !torch.vtensor<[2,3,4],f32>
    # CHECK: %[[DIMS:.*]] = torch.prim.ListConstruct %{{.*}} : (!torch.int) -> !torch.list<int>
    # CHECK: %[[NONE:.*]] = torch.constant.none
    # CHECK: %[[P:.*]] = torch.prims.prod %[[SEL]], %[[DIMS]], %[[NONE]] : !torch.vtensor<[2,3,4],f32>, !torch.list<int>, !torch.none -> !torch.vtensor<[2,4],f32>
    # CHECK: %[[R:.*]] = torch.aten.unsqueeze %[[P]], %{{.*}} : !torch.vtensor<[2,4],f32>, !torch.int -> !torch.vtensor<[2,1,4],f32>
    # CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

    @run
    def mul_no_zeros_implied_by_y_dims():
        print(emitted(build(implied=True)))

    # CHECK-LABEL: TEST: mul_no_zeros_implied_by_y_dims
    # CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,1,4],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3,4],f32>)
    # CHECK: %[[ZERO:.*]] = torch.constant.int 0
    # CHECK: %[[MASK:.*]] = torch.aten.ne.Scalar %[[X]], %[[ZERO]] : !torch.vtensor<[2,3,4],f32>, !torch.int -> !torch.vtensor<[2,3,4],i1>
    # CHECK: %[[ONE:.*]] = torch.constant.int 1
    # CHECK: %[[SEL:.*]] = torch.aten.where.ScalarOther %[[MASK]], %[[X]], %[[ONE]] : !torch.vtensor<[2,3,4],i1>, !torch.vtensor<[2,3,4],f32>, !torch.int -> !torch.vtensor<[2,3,4],f32>
    # CHECK: %[[DIMS:.*]] = torch.prim.ListConstruct %{{.*}} : (!torch.int) -> !torch.list<int>
    # CHECK: %[[NONE:.*]] = torch.constant.none
    # CHECK: %[[P:.*]] = torch.prims.prod %[[SEL]], %[[DIMS]], %[[NONE]] : !torch.vtensor<[2,3,4],f32>, !torch.list<int>, !torch.none -> !torch.vtensor<[2,4],f32>
    # CHECK: %[[R:.*]] = torch.aten.unsqueeze %[[P]], %{{.*}} : !torch.vtensor<[2,4],f32>, !torch.int -> !torch.vtensor<[2,1,4],f32>
    # CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]
