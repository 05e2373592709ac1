# RUN: %python %s | filecheck %s --check-prefix=STATS

# Norm anchors + bias/scale/relu epilogue on CPU: the epilogue joins the norm's
# dispatch. LayerNorm's two row reductions fuse with Y (upstream: inference 2,
# training 4 dispatches); rmsnorm inference 1 (upstream 1); batchnorm training 3
# (upstream 4).

from lit_helpers import print_stats, run

import fusilli as fs

DIMS = [2, 4, 3, 3]


def build(norm, phase):
    g = fs.Graph(name=f"anchor_{norm}_{phase.name.lower()}")
    x = g.tensor(name="x", dim=DIMS, stride=fs.strides(DIMS, "NHWC"))
    bias = g.tensor(name="bias", dim=[1, 4, 1, 1])
    if norm == "layernorm":
        y, *stats = g.layernorm(x, epsilon=1e-5, phase=phase, name="ln")
    elif norm == "rmsnorm":
        y, *stats = g.rmsnorm(x, epsilon=1e-5, phase=phase, name="rms")
    else:
        y, *stats = g.batchnorm(x, epsilon=1e-5, momentum=0.1, phase=phase, name="bn")
    y = g.relu(g.mul(g.add(y, bias, name="bias_add"), g.scalar(0.5), name="scale"), name="relu")
    y.set_output(True)
    for t in stats:
        if t is not None:
            t.set_output(True)
    return g


@run
def layernorm_inference_epilogue():
    print_stats(build("layernorm", fs.NormPhase.INFERENCE))


# STATS-LABEL: TEST: layernorm_inference_epilogue
# STATS: dispatch-count: 1


@run
def layernorm_training_epilogue():
    print_stats(build("layernorm", fs.NormPhase.TRAINING))


# STATS-LABEL: TEST: layernorm_training_epilogue
# STATS: dispatch-count: 1


@run
def rmsnorm_inference_epilogue():
    print_stats(build("rmsnorm", fs.NormPhase.INFERENCE))


# STATS-LABEL: TEST: rmsnorm_inference_epilogue
# STATS: dispatch-count: 1


@run
def batchnorm_training_epilogue():
    print_stats(build("batchnorm", fs.NormPhase.TRAINING))


# STATS-LABEL: TEST: batchnorm_training_epilogue
# STATS: dispatch-count: 3
