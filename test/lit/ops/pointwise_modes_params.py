# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

# Pointwise modes with parameters (elu alpha, softplus beta/threshold, swish beta)
# and the swish composites; the STATS run checks that a chain of many modes
# compiles to one dispatch after epilogue fusion.

import sys

from lit_helpers import emitted, optimized, print_stats, run

import fusilli as fs


def one(method: str, n_inputs: int = 1, **params) -> fs.Graph:
    g = fs.Graph(name=method)
    ins = [g.tensor(name=name, dim=[2, 3]) for name in ("x", "y")[:n_inputs]]
    getattr(g, method)(*ins, name="op", **params).set_output(True).set_name("out")
    return g


def chain() -> fs.Graph:
    g = fs.Graph(name="chain")
    x = g.tensor(name="x", dim=[2, 8, 4], stride=fs.strides([2, 8, 4], "NHC"))
    b = g.tensor(name="b", dim=[1, 8, 1])
    h = g.gelu(g.add(x, b, name="bias"), name="gelu")
    h = g.swish(g.mul(h, g.scalar(0.5, name="half"), name="scale"), beta=1.5, name="swish")
    h = g.binary_select(
        g.cmp_gt(h, b, name="gt"), g.softplus(h, name="softplus"), g.tanh(h, name="tanh"), name="select"
    )
    g.erf(h, name="erf").set_output(True).set_name("y")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "stats":

    @run
    def stats_chain():
        print_stats(chain())

    # STATS-LABEL: TEST: stats_chain
    # STATS: dispatch-count: 1
else:

    @run
    def elu_default():
        print(emitted(one("elu")))

    # CHECK-LABEL: TEST: elu_default
    # CHECK: %[[ALPHA:.*]] = torch.constant.float 1.000000e+00
    # CHECK: %[[SCALE:.*]] = torch.constant.float 1.000000e+00
    # CHECK: %[[IN_SCALE:.*]] = torch.constant.float 1.000000e+00
    # CHECK: torch.aten.elu %{{.*}}, %[[ALPHA]], %[[SCALE]], %[[IN_SCALE]] : !torch.vtensor<[2,3],f32>, !torch.float, !torch.float, !torch.float -> !torch.vtensor<[2,3],f32>

    @run
    def elu_alpha():
        print(emitted(one("elu", alpha=0.5)))

    # CHECK-LABEL: TEST: elu_alpha
    # CHECK: %[[ALPHA:.*]] = torch.constant.float 5.000000e-01
    # CHECK: torch.aten.elu %{{.*}}, %[[ALPHA]], %{{.*}}, %{{.*}} :

    @run
    def softplus_default():
        print(emitted(one("softplus")))

    # CHECK-LABEL: TEST: softplus_default
    # CHECK: %[[BETA:.*]] = torch.constant.float 1.000000e+00
    # CHECK: %[[THRESHOLD:.*]] = torch.constant.float 2.000000e+01
    # CHECK: torch.aten.softplus %{{.*}}, %[[BETA]], %[[THRESHOLD]] : !torch.vtensor<[2,3],f32>, !torch.float, !torch.float -> !torch.vtensor<[2,3],f32>

    @run
    def softplus_params():
        print(emitted(one("softplus", beta=2.0, threshold=10.0)))

    # CHECK-LABEL: TEST: softplus_params
    # CHECK: %[[BETA:.*]] = torch.constant.float 2.000000e+00
    # CHECK: %[[THRESHOLD:.*]] = torch.constant.float 1.000000e+01
    # CHECK: torch.aten.softplus %{{.*}}, %[[BETA]], %[[THRESHOLD]]

    # x * sigmoid(beta * x)
    @run
    def swish():
        print(emitted(one("swish", beta=2.0)))

    # CHECK-LABEL: TEST: swish
    # CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>)
    # CHECK: %[[BETA:.*]] = torch.constant.float 2.000000e+00
    # CHECK: %[[BX:.*]] = torch.aten.mul.Scalar %[[X]], %[[BETA]]
    # CHECK: %[[S:.*]] = torch.aten.sigmoid %[[BX]]
    # CHECK: %[[R:.*]] = torch.aten.mul.Tensor %[[X]], %[[S]]
    # CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

    # dy * (s + beta*x * s * (1 - s)), s = sigmoid(beta * x)
    @run
    def swish_bwd():
        print(emitted(one("swish_bwd", 2)))

    # CHECK-LABEL: TEST: swish_bwd
    # CHECK: func.func @main(%[[OUT:[a-z0-9_]+]]: !torch.tensor<[2,3],f32>, %[[DY:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3],f32>)
    # CHECK: %[[BETA:.*]] = torch.constant.float 1.000000e+00
    # CHECK: %[[BX:.*]] = torch.aten.mul.Scalar %[[X]], %[[BETA]]
    # CHECK: %[[S:.*]] = torch.aten.sigmoid %[[BX]]
    # CHECK: %[[OMS:.*]] = torch.aten.rsub.Scalar %[[S]], %{{.*}}, %{{.*}} : !torch.vtensor<[2,3],f32>, !torch.float, !torch.int
    # CHECK: %[[T1:.*]] = torch.aten.mul.Tensor %[[BX]], %[[S]]
    # CHECK: %[[T2:.*]] = torch.aten.mul.Tensor %[[T1]], %[[OMS]]
    # CHECK: %[[D:.*]] = torch.aten.add.Tensor %[[S]], %[[T2]], %{{.*}}
    # CHECK: %[[R:.*]] = torch.aten.mul.Tensor %[[DY]], %[[D]]
    # CHECK: torch.overwrite.tensor.contents %[[R]] overwrites %[[OUT]]

    # After fusion the whole chain is one linalg.generic computing the bodies.
    @run
    def chain_optimized():
        print(optimized(chain()))

    # CHECK-LABEL: TEST: chain_optimized
    # CHECK-NOT: torch.aten.gelu
    # CHECK: linalg.generic
    # CHECK: math.erf
    # CHECK: math.exp
    # CHECK: arith.cmpf ogt
    # CHECK: math.log1p
    # CHECK: arith.select
    # CHECK: math.tanh
    # CHECK: arith.select
    # CHECK: math.erf
    # CHECK: linalg.yield
    # CHECK-NOT: linalg.generic
    # CHECK-NOT: torch.aten
    # CHECK: return
