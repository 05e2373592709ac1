# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU

# Two-input pointwise modes on x [2,3] and a broadcast y [1,3]: the torch ops each
# emits (broadcasting is left to the torch op; the result is [2,3]).

from lit_helpers import emitted, run

import fusilli as fs

M = fs.PointwiseMode


def binary(mode: fs.PointwiseMode, **params):
    def case():
        g = fs.Graph(name=mode.value)
        x = g.tensor(name="x", dim=[2, 3])
        y = g.tensor(name="y", dim=[1, 3])
        g.pointwise(x, y, mode=mode, name="op", **params).set_output(True).set_name("out")
        print(emitted(g))

    case.__name__ = mode.value
    run(case)


binary(M.ADD)
# CHECK-LABEL: TEST: add
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>, %[[Y:[a-z0-9_]+]]: !torch.vtensor<[1,3],f32>)
# CHECK: %[[ONE:.*]] = torch.constant.int 1
# CHECK: %[[R:.*]] = torch.aten.add.Tensor %[[X]], %[[Y]], %[[ONE]] : !torch.vtensor<[2,3],f32>, !torch.vtensor<[1,3],f32>, !torch.int -> !torch.vtensor<[2,3],f32>
# CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

binary(M.SUB)
# CHECK-LABEL: TEST: sub
# CHECK: %[[ONE:.*]] = torch.constant.int 1
# CHECK: torch.aten.sub.Tensor %{{.*}}, %{{.*}}, %[[ONE]] : !torch.vtensor<[2,3],f32>, !torch.vtensor<[1,3],f32>, !torch.int -> !torch.vtensor<[2,3],f32>

binary(M.MUL)
# CHECK-LABEL: TEST: mul
# CHECK: torch.aten.mul.Tensor %{{.*}}, %{{.*}} : !torch.vtensor<[2,3],f32>, !torch.vtensor<[1,3],f32> -> !torch.vtensor<[2,3],f32>

binary(M.DIV)
# CHECK-LABEL: TEST: div
# CHECK: torch.aten.div.Tensor %{{.*}}, %{{.*}} : !torch.vtensor<[2,3],f32>, !torch.vtensor<[1,3],f32> -> !torch.vtensor<[2,3],f32>

binary(M.MAX_OP)
# CHECK-LABEL: TEST: max
# CHECK: torch.aten.maximum %{{.*}}, %{{.*}} : !torch.vtensor<[2,3],f32>, !torch.vtensor<[1,3],f32> -> !torch.vtensor<[2,3],f32>

binary(M.MIN_OP)
# CHECK-LABEL: TEST: min
# CHECK: torch.aten.minimum %{{.*}}, %{{.*}} : !torch.vtensor<[2,3],f32>, !torch.vtensor<[1,3],f32> -> !torch.vtensor<[2,3],f32>

# ADD_SQUARE: in0 + in1 * in1; the square keeps in1's shape and is added as its finite
# part, then its overflowed (inf) part, so no FMA hides an overflowing square.
binary(M.ADD_SQUARE)
# CHECK-LABEL: TEST: add_square
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>, %[[Y:[a-z0-9_]+]]: !torch.vtensor<[1,3],f32>)
# CHECK: %[[SQ:.*]] = torch.aten.mul.Tensor %[[Y]], %[[Y]] : !torch.vtensor<[1,3],f32>, !torch.vtensor<[1,3],f32> -> !torch.vtensor<[1,3],f32>
# CHECK: %[[INF:.*]] = torch.constant.float 0x7FF0000000000000
# CHECK: %[[OVER:.*]] = torch.aten.eq.Scalar %[[SQ]], %[[INF]] : {{.*}} -> !torch.vtensor<[1,3],i1>
# CHECK: %[[FINITE:.*]] = torch.aten.ne.Scalar %[[SQ]], %[[INF]]
# CHECK: %[[FPART:.*]] = torch.aten.where.ScalarOther %[[FINITE]], %[[SQ]]
# CHECK: %[[IPART:.*]] = torch.aten.where.ScalarOther %[[OVER]], %[[SQ]]
# CHECK: %[[SUM:.*]] = torch.aten.add.Tensor %[[X]], %[[FPART]], %{{.*}} -> !torch.vtensor<[2,3],f32>
# CHECK: %[[R:.*]] = torch.aten.add.Tensor %[[SUM]], %[[IPART]], %{{.*}} -> !torch.vtensor<[2,3],f32>
# CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

# Backward modes take (grad, forward input).
binary(M.RELU_BWD)
# CHECK-LABEL: TEST: relu_bwd
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],f32>, %[[DY:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[1,3],f32>)
# CHECK: %[[ZERO:.*]] = torch.constant.int 0
# CHECK: torch.aten.threshold_backward %[[DY]], %[[X]], %[[ZERO]] : !torch.vtensor<[2,3],f32>, !torch.vtensor<[1,3],f32>, !torch.int -> !torch.vtensor<[2,3],f32>

binary(M.GELU_BWD)
# CHECK-LABEL: TEST: gelu_bwd
# CHECK: %[[NONE:.*]] = torch.constant.str "none"
# CHECK: torch.aten.gelu_backward %{{.*}}, %{{.*}}, %[[NONE]] : !torch.vtensor<[2,3],f32>, !torch.vtensor<[1,3],f32>, !torch.str -> !torch.vtensor<[2,3],f32>

binary(M.GELU_APPROX_TANH_BWD)
# CHECK-LABEL: TEST: gelu_approx_tanh_bwd
# CHECK: %[[TANH:.*]] = torch.constant.str "tanh"
# CHECK: torch.aten.gelu_backward %{{.*}}, %{{.*}}, %[[TANH]] : !torch.vtensor<[2,3],f32>, !torch.vtensor<[1,3],f32>, !torch.str -> !torch.vtensor<[2,3],f32>

# TANH_BWD: y = tanh(x), then tanh_backward(dy, y).
binary(M.TANH_BWD)
# CHECK-LABEL: TEST: tanh_bwd
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],f32>, %[[DY:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[1,3],f32>)
# CHECK: %[[T:.*]] = torch.aten.tanh %[[X]] : !torch.vtensor<[1,3],f32> -> !torch.vtensor<[1,3],f32>
# CHECK: %[[R:.*]] = torch.aten.tanh_backward %[[DY]], %[[T]] : !torch.vtensor<[2,3],f32>, !torch.vtensor<[1,3],f32> -> !torch.vtensor<[2,3],f32>
# CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]
