# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

import sys

from lit_helpers import emitted, print_stats, run

import fusilli as fs

DIMS = [2, 4, 3, 3]


def build(phase):
    g = fs.Graph(name="rmsnorm_nhwc_" + phase.name.lower())
    x = g.tensor(name="x", dim=DIMS, stride=fs.strides(DIMS, "NHWC"))
    scale = g.tensor(name="scale", dim=[1, *DIMS[1:]], stride=fs.strides([1, *DIMS[1:]], "NHWC"))
    outs = g.rmsnorm(x, scale, epsilon=1e-5, phase=phase, name="rms")
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
    # STATS: dispatch-count: 2
else:

    @run
    def rmsnorm_nhwc_inference():
        print(emitted(build(fs.NormPhase.INFERENCE)))

    # CHECK-LABEL: TEST: rmsnorm_nhwc_inference
    # CHECK: %[[X:arg[0-9]+]]: !torch.vtensor<[2,3,3,4],f32>)
    # CHECK: %[[XL:.*]] = torch.aten.permute %[[X]], %{{.*}} -> !torch.vtensor<[2,4,3,3],f32>
    # CHECK: %[[W:.*]] = torch.aten.squeeze.dim %{{.*}} -> !torch.vtensor<[4,3,3],f32>
    # CHECK: torch.aten.rms_norm %[[XL]], %{{.*}}, %[[W]], %float1.000000e-05 :{{.*}} -> !torch.vtensor<[2,4,3,3],f32>

    @run
    def rmsnorm_nhwc_training():
        print(emitted(build(fs.NormPhase.TRAINING)))

    # CHECK-LABEL: TEST: rmsnorm_nhwc_training
    # CHECK: %[[X:arg[0-9]+]]: !torch.vtensor<[2,3,3,4],f32>)
    # CHECK: %[[XL:.*]] = torch.aten.permute %[[X]], %{{.*}} -> !torch.vtensor<[2,4,3,3],f32>
    # CHECK: %[[SQ:.*]] = torch.aten.mul.Tensor %[[XL]], %[[XL]]
    # CHECK: %[[MS:.*]] = torch.aten.mean.dim %[[SQ]], %{{.*}}, %true, %none{{.*}} -> !torch.vtensor<[2,1,1,1],f32>
    # CHECK: %[[MSE:.*]] = torch.aten.add.Scalar %[[MS]], %float1.000000e-05
    # CHECK: %[[INV:.*]] = torch.aten.rsqrt %[[MSE]]
    # CHECK: torch.aten.mul.Tensor %[[XL]], %[[INV]]
    # CHECK-NOT: torch.aten.rms_norm
    # CHECK: torch.overwrite.tensor.contents %[[INV]] overwrites
