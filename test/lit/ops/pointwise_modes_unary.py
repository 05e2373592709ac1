# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU

# Single-op unary pointwise modes: the torch op each emits on a [2,3] f32 input.

from lit_helpers import emitted, run

import fusilli as fs

M = fs.PointwiseMode


def unary(mode: fs.PointwiseMode, data_type=fs.DataType.FLOAT, **params):
    def case():
        g = fs.Graph(name=mode.value, io_data_type=data_type)
        x = g.tensor(name="x", dim=[2, 3])
        g.pointwise(x, mode=mode, name="op", **params).set_output(True).set_name("out")
        print(emitted(g))

    case.__name__ = mode.value if data_type == fs.DataType.FLOAT else f"{mode.value}_{data_type.short_name}"
    run(case)


unary(M.ABS)
# CHECK-LABEL: TEST: abs
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>)
# CHECK: %[[R:.*]] = torch.aten.abs %[[X]] : !torch.vtensor<[2,3],f32> -> !torch.vtensor<[2,3],f32>
# CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

unary(M.CEIL)
# CHECK-LABEL: TEST: ceil
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>)
# CHECK: %[[R:.*]] = torch.aten.ceil %[[X]] : !torch.vtensor<[2,3],f32> -> !torch.vtensor<[2,3],f32>
# CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

unary(M.ERF)
# CHECK-LABEL: TEST: erf
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>)
# CHECK: %[[R:.*]] = torch.aten.erf %[[X]] : !torch.vtensor<[2,3],f32> -> !torch.vtensor<[2,3],f32>
# CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

unary(M.EXP)
# CHECK-LABEL: TEST: exp
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>)
# CHECK: %[[R:.*]] = torch.aten.exp %[[X]] : !torch.vtensor<[2,3],f32> -> !torch.vtensor<[2,3],f32>
# CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

unary(M.FLOOR)
# CHECK-LABEL: TEST: floor
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>)
# CHECK: %[[R:.*]] = torch.aten.floor %[[X]] : !torch.vtensor<[2,3],f32> -> !torch.vtensor<[2,3],f32>
# CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

unary(M.LOG)
# CHECK-LABEL: TEST: log
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>)
# CHECK: %[[R:.*]] = torch.aten.log %[[X]] : !torch.vtensor<[2,3],f32> -> !torch.vtensor<[2,3],f32>
# CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

unary(M.NEG)
# CHECK-LABEL: TEST: neg
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>)
# CHECK: %[[R:.*]] = torch.aten.neg %[[X]] : !torch.vtensor<[2,3],f32> -> !torch.vtensor<[2,3],f32>
# CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

unary(M.RECIPROCAL)
# CHECK-LABEL: TEST: reciprocal
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>)
# CHECK: %[[R:.*]] = torch.aten.reciprocal %[[X]] : !torch.vtensor<[2,3],f32> -> !torch.vtensor<[2,3],f32>
# CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

unary(M.RELU_FWD)
# CHECK-LABEL: TEST: relu
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>)
# CHECK: %[[R:.*]] = torch.aten.relu %[[X]] : !torch.vtensor<[2,3],f32> -> !torch.vtensor<[2,3],f32>
# CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

unary(M.RSQRT)
# CHECK-LABEL: TEST: rsqrt
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>)
# CHECK: %[[R:.*]] = torch.aten.rsqrt %[[X]] : !torch.vtensor<[2,3],f32> -> !torch.vtensor<[2,3],f32>
# CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

unary(M.SIGMOID_FWD)
# CHECK-LABEL: TEST: sigmoid
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>)
# CHECK: %[[R:.*]] = torch.aten.sigmoid %[[X]] : !torch.vtensor<[2,3],f32> -> !torch.vtensor<[2,3],f32>
# CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

unary(M.SIN)
# CHECK-LABEL: TEST: sin
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>)
# CHECK: %[[R:.*]] = torch.aten.sin %[[X]] : !torch.vtensor<[2,3],f32> -> !torch.vtensor<[2,3],f32>
# CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

unary(M.SQRT)
# CHECK-LABEL: TEST: sqrt
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>)
# CHECK: %[[R:.*]] = torch.aten.sqrt %[[X]] : !torch.vtensor<[2,3],f32> -> !torch.vtensor<[2,3],f32>
# CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

unary(M.TAN)
# CHECK-LABEL: TEST: tan
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>)
# CHECK: %[[R:.*]] = torch.aten.tan %[[X]] : !torch.vtensor<[2,3],f32> -> !torch.vtensor<[2,3],f32>
# CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

unary(M.TANH_FWD)
# CHECK-LABEL: TEST: tanh
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>)
# CHECK: %[[R:.*]] = torch.aten.tanh %[[X]] : !torch.vtensor<[2,3],f32> -> !torch.vtensor<[2,3],f32>
# CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

unary(M.IDENTITY)
# CHECK-LABEL: TEST: identity
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>)
# CHECK: %[[NONE:.*]] = torch.constant.none
# CHECK: %[[R:.*]] = torch.aten.clone %[[X]], %[[NONE]] : !torch.vtensor<[2,3],f32>, !torch.none -> !torch.vtensor<[2,3],f32>
# CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

unary(M.GELU_FWD)
# CHECK-LABEL: TEST: gelu
# CHECK: %[[NONE:.*]] = torch.constant.str "none"
# CHECK: torch.aten.gelu %{{.*}}, %[[NONE]] : !torch.vtensor<[2,3],f32>, !torch.str -> !torch.vtensor<[2,3],f32>

unary(M.GELU_APPROX_TANH_FWD)
# CHECK-LABEL: TEST: gelu_approx_tanh
# CHECK: %[[TANH:.*]] = torch.constant.str "tanh"
# CHECK: torch.aten.gelu %{{.*}}, %[[TANH]] : !torch.vtensor<[2,3],f32>, !torch.str -> !torch.vtensor<[2,3],f32>

# Integer input to a floating-point mode: computed in f32 (torch.exp(int) is float),
# rounded to the si32 output.
unary(M.EXP, fs.DataType.INT32)
# CHECK-LABEL: TEST: exp_si32
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],si32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3],si32>)
# CHECK: %[[XF:.*]] = torch.aten.to.dtype %[[X]], {{.*}} -> !torch.vtensor<[2,3],f32>
# CHECK: %[[E:.*]] = torch.aten.exp %[[XF]] : !torch.vtensor<[2,3],f32> -> !torch.vtensor<[2,3],f32>
# CHECK: %[[R:.*]] = torch.aten.to.dtype %[[E]], {{.*}} -> !torch.vtensor<[2,3],si32>
# CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

# Integers are integral already: ceil keeps the si32 type.
unary(M.CEIL, fs.DataType.INT32)
# CHECK-LABEL: TEST: ceil_si32
# CHECK: torch.aten.ceil %{{.*}} : !torch.vtensor<[2,3],si32> -> !torch.vtensor<[2,3],si32>
