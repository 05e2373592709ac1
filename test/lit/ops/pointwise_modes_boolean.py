# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU

# Comparison and logical modes give i1 (BOOLEAN) results whatever the graph's data
# types; binary_select(cond, a, b) is torch.where(cond, a, b).

from lit_helpers import emitted, run

import fusilli as fs

M = fs.PointwiseMode


def boolean(mode: fs.PointwiseMode):
    def case():
        g = fs.Graph(name=mode.value, io_data_type=fs.DataType.HALF)
        ins = [g.tensor(name=name, dim=[2, 3]) for name in ("x", "y")[: 1 if mode == M.LOGICAL_NOT else 2]]
        g.pointwise(*ins, mode=mode, name="op").set_output(True).set_name("out")
        print(emitted(g))

    case.__name__ = mode.value
    run(case)


# f16 inputs are compared in the f32 compute type.
boolean(M.CMP_EQ)
# CHECK-LABEL: TEST: cmp_eq
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],i1>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3],f16>, %[[Y:[a-z0-9_]+]]: !torch.vtensor<[2,3],f16>)
# CHECK: %[[XF:.*]] = torch.aten.to.dtype %[[X]], {{.*}} -> !torch.vtensor<[2,3],f32>
# CHECK: %[[YF:.*]] = torch.aten.to.dtype %[[Y]], {{.*}} -> !torch.vtensor<[2,3],f32>
# CHECK: %[[R:.*]] = torch.aten.eq.Tensor %[[XF]], %[[YF]] : !torch.vtensor<[2,3],f32>, !torch.vtensor<[2,3],f32> -> !torch.vtensor<[2,3],i1>
# CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

boolean(M.CMP_NEQ)
# CHECK-LABEL: TEST: cmp_neq
# CHECK: torch.aten.ne.Tensor {{.*}} -> !torch.vtensor<[2,3],i1>

boolean(M.CMP_LT)
# CHECK-LABEL: TEST: cmp_lt
# CHECK: torch.aten.lt.Tensor {{.*}} -> !torch.vtensor<[2,3],i1>

boolean(M.CMP_LE)
# CHECK-LABEL: TEST: cmp_le
# CHECK: torch.aten.le.Tensor {{.*}} -> !torch.vtensor<[2,3],i1>

boolean(M.CMP_GT)
# CHECK-LABEL: TEST: cmp_gt
# CHECK: torch.aten.gt.Tensor {{.*}} -> !torch.vtensor<[2,3],i1>

boolean(M.CMP_GE)
# CHECK-LABEL: TEST: cmp_ge
# CHECK: torch.aten.ge.Tensor {{.*}} -> !torch.vtensor<[2,3],i1>

boolean(M.LOGICAL_AND)
# CHECK-LABEL: TEST: logical_and
# CHECK: torch.aten.logical_and {{.*}} -> !torch.vtensor<[2,3],i1>

boolean(M.LOGICAL_OR)
# CHECK-LABEL: TEST: logical_or
# CHECK: torch.aten.logical_or {{.*}} -> !torch.vtensor<[2,3],i1>

boolean(M.LOGICAL_NOT)
# CHECK-LABEL: TEST: logical_not
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],i1>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3],f16>)
# CHECK: torch.aten.logical_not {{.*}} : !torch.vtensor<[2,3],f32> -> !torch.vtensor<[2,3],i1>


@run
def binary_select():
    g = fs.Graph(name="select")
    cond = g.tensor(name="cond", dim=[2, 1], data_type=fs.DataType.BOOLEAN)
    a = g.tensor(name="a", dim=[2, 3])
    g.binary_select(cond, a, g.scalar(0.0, name="zero"), name="op").set_output(True).set_name("out")
    print(emitted(g))


# CHECK-LABEL: TEST: binary_select
# CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],f32>, %[[A:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>, %[[C:[a-z0-9_]+]]: !torch.vtensor<[2,1],i1>)
# CHECK: %[[Z:.*]] = torch.vtensor.literal
# CHECK: %[[R:.*]] = torch.aten.where.self %[[C]], %[[A]], %[[Z]] : !torch.vtensor<[2,1],i1>, !torch.vtensor<[2,3],f32>, !torch.vtensor<[1],f32> -> !torch.vtensor<[2,3],f32>
# CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]
