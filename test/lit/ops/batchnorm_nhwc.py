# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

import sys

from lit_helpers import emitted, print_stats, run

import fusilli as fs

DIMS = [2, 4, 3, 3]


def build(phase):
    g = fs.Graph(name="batchnorm_nhwc_" + phase.name.lower())
    x = g.tensor(name="x", dim=DIMS, stride=fs.strides(DIMS, "NHWC"))
    scale, bias, mean, var = (g.tensor(name=n, dim=[4]) for n in ("scale", "bias", "mean", "var"))
    outs = g.batchnorm(x, scale, bias, mean, var, epsilon=1e-5, momentum=0.1, phase=phase, name="bn")
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
    # STATS: dispatch-count: 3
else:

    @run
    def batchnorm_nhwc_inference():
        print(emitted(build(fs.NormPhase.INFERENCE)))

    # CHECK-LABEL: TEST: batchnorm_nhwc_inference
    # CHECK: %[[X:arg[0-9]+]]: !torch.vtensor<[2,3,3,4],f32>)
    # CHECK: %[[XL:.*]] = torch.aten.permute %[[X]], %{{.*}} -> !torch.vtensor<[2,4,3,3],f32>
    # CHECK: %[[Y:.*]], %{{.*}}, %{{.*}} = torch.aten.native_batch_norm %[[XL]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %false, %float1.000000e-01, %float1.000000e-05 :{{.*}} -> !torch.vtensor<[2,4,3,3],f32>, !torch.vtensor<[4],f32>, !torch.vtensor<[4],f32>
    # CHECK: torch.overwrite.tensor.contents

    @run
    def batchnorm_nhwc_training():
        print(emitted(build(fs.NormPhase.TRAINING)))

    # CHECK-LABEL: TEST: batchnorm_nhwc_training
    # CHECK: %[[X:arg[0-9]+]]: !torch.vtensor<[2,3,3,4],f32>)
    # CHECK: %[[XL:.*]] = torch.aten.permute %[[X]], %{{.*}} -> !torch.vtensor<[2,4,3,3],f32>
    # CHECK: %[[MEAN:.*]] = torch.aten.mean.dim %[[XL]], %{{.*}}, %true, %none{{.*}} -> !torch.vtensor<[1,4,1,1],f32>
    # CHECK: %[[C:.*]] = torch.aten.sub.Tensor %[[XL]], %[[MEAN]]
    # CHECK: %[[SQ:.*]] = torch.aten.mul.Tensor %[[C]], %[[C]]
    # CHECK: %[[VAR:.*]] = torch.aten.mean.dim %[[SQ]], {{.*}} -> !torch.vtensor<[1,4,1,1],f32>
    # CHECK: %[[VE:.*]] = torch.aten.add.Scalar %[[VAR]], %float1.000000e-05
    # CHECK: %[[INV:.*]] = torch.aten.rsqrt %[[VE]]
    # CHECK: torch.aten.view %[[MEAN]], %{{.*}} -> !torch.vtensor<[4],f32>
    # CHECK: torch.aten.view %[[INV]], %{{.*}} -> !torch.vtensor<[4],f32>
    # CHECK-NOT: torch.aten.native_batch_norm
