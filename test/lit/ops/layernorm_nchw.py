# RUN: %python %s | filecheck %s
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

import sys

from lit_helpers import print_stats, run

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
    # STATS: dispatch-count: 2

    @run
    def stats_training():
        print_stats(build(fs.NormPhase.TRAINING))

    # STATS-LABEL: TEST: stats_training
    # STATS: dispatch-count: 3
else:

    @run
    def layernorm_nchw_inference():
        print(build(fs.NormPhase.INFERENCE).emit_mlir())

    # CHECK-LABEL: TEST: layernorm_nchw_inference
    # CHECK: %[[X:arg[0-9]+]]: !torch.vtensor<[2,4,3,3],f32>)
    # CHECK: %[[W:.*]] = torch.aten.squeeze.dim %{{.*}} -> !torch.vtensor<[4,3,3],f32>
    # CHECK: %[[B:.*]] = torch.aten.squeeze.dim %{{.*}} -> !torch.vtensor<[4,3,3],f32>
    # CHECK: torch.aten.layer_norm %[[X]], %{{.*}}, %[[W]], %[[B]], %float1.000000e-05, %false :{{.*}} -> !torch.vtensor<[2,4,3,3],f32>

    @run
    def layernorm_nchw_training():
        print(build(fs.NormPhase.TRAINING).emit_mlir())

    # CHECK-LABEL: TEST: layernorm_nchw_training
    # CHECK: %[[X:arg[0-9]+]]: !torch.vtensor<[2,4,3,3],f32>)
    # CHECK: %[[MEAN:.*]] = torch.aten.mean.dim %[[X]], %{{.*}}, %true, %none{{.*}} -> !torch.vtensor<[2,1,1,1],f32>
    # CHECK: %[[INV:.*]] = torch.aten.rsqrt %{{.*}} -> !torch.vtensor<[2,1,1,1],f32>
    # CHECK: torch.aten.mul.Tensor %{{.*}}, %[[INV]]
    # CHECK-DAG: torch.overwrite.tensor.contents %[[MEAN]] overwrites
    # CHECK-DAG: torch.overwrite.tensor.contents %[[INV]] overwrites
