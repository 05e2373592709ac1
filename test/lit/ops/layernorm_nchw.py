# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

import sys

from lit_helpers import emitted, print_stats, run

import fusilli as fs

DIMS = [2, 4, 3, 3]


def build(phase):
    g = fs.Graph(name="layernorm_nchw_" + phase.name.lower())
    x = g.tensor(name="x", dim=DIMS, stride=fs.strides(DIMS, "NCHW"))
    affine = [
        g.tensor(name=n, dim=[1, *DIMS[1:]], stride=fs.strides([1, *DIMS[1:]], "NCHW")) for n in ("scale", "bias")
    ]
    outs = g.layernorm(x, *affine, epsilon=1e-5, phase=phase, name="ln")
    for t in outs:
        if t is not None:
            t.set_output(True)
    return g


if len(sys.argv) > 1 and sys.argv[1] == "stats":

    @run
    def stats_inference():
        print_stats(build(fs.NormPhase.INFERENCE))

    # STATS-LABEL: TEST: stats_inference
    # STATS: dispatch-count: 1

    @run
    def stats_training():
        print_stats(build(fs.NormPhase.TRAINING))

    # STATS-LABEL: TEST: stats_training
    # STATS: dispatch-count: 1
else:

    @run
    def layernorm_nchw_inference():
        print(emitted(build(fs.NormPhase.INFERENCE)))

    # Two passes over each row (corrected two-pass): the sum, then the sums of x - m0 and
    # (x - m0)^2 about its mean m0; the normalization in torch ops.
    # CHECK-LABEL: TEST: layernorm_nchw_inference
    # CHECK: %[[X:arg[0-9]+]]: !torch.vtensor<[2,4,3,3],f32>)
    # CHECK: %[[XB:.*]] = torch_c.to_builtin_tensor %[[X]]
    # CHECK: %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "reduction", "reduction"]} ins(%[[XB]] : tensor<2x4x3x3xf32>) outs({{.*}} : tensor<2xf32>)
    # CHECK: arith.addf
    # CHECK: %[[SQ:.*]]:2 = linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "reduction", "reduction"]} ins(%[[XB]], %[[SUM]] : tensor<2x4x3x3xf32>, tensor<2xf32>) outs({{.*}} : tensor<2xf32>, tensor<2xf32>)
    # CHECK: %[[MEAN:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
    # CHECK: %[[D:.*]] = arith.subf %{{.*}}, %[[MEAN]] : f32
    # CHECK: arith.addf %{{.*}}, %[[D]] : f32
    # CHECK: arith.mulf %[[D]], %[[D]] : f32
    # CHECK-NOT: torch.aten.slice.Tensor
    # CHECK: torch.aten.rsqrt
    # CHECK: torch.aten.sub.Tensor %[[X]]
    # CHECK-NOT: torch.aten.layer_norm

    @run
    def layernorm_nchw_training():
        print(emitted(build(fs.NormPhase.TRAINING)))

    # Training: the same two reductions, then a generic over [B, 1, 1, 1] makes the stats.
    # CHECK-LABEL: TEST: layernorm_nchw_training
    # CHECK: %[[X:arg[0-9]+]]: !torch.vtensor<[2,4,3,3],f32>)
    # CHECK: %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "reduction", "reduction"]}
    # CHECK: %[[SQ:.*]]:2 = linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "reduction", "reduction"]} ins({{.*}}, %[[SUM]] :
    # CHECK: %[[F:.*]]:2 = linalg.generic {{.*}} ins(%[[SUM]], %[[SQ]]#0, %[[SQ]]#1 : {{.*}}) outs({{.*}})
    # CHECK: math.rsqrt
    # CHECK: %[[MEAN:.*]] = torch_c.from_builtin_tensor %[[F]]#0 {{.*}} -> !torch.vtensor<[2,1,1,1],f32>
    # CHECK: %[[INV:.*]] = torch_c.from_builtin_tensor %[[F]]#1 {{.*}} -> !torch.vtensor<[2,1,1,1],f32>
    # CHECK: torch.aten.sub.Tensor %[[X]], %[[MEAN]]
    # CHECK: torch.aten.mul.Tensor %{{.*}}, %[[INV]]
    # CHECK-DAG: torch.overwrite.tensor.contents %[[MEAN]] overwrites
    # CHECK-DAG: torch.overwrite.tensor.contents %[[INV]] overwrites
