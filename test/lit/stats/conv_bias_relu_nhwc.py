# RUN: %python %s json 0 > %t.unpadded.json
# RUN: %fusilli-opt %t.unpadded.json --pass-pipeline=default --stats | filecheck %s --check-prefix=OPT-UNPADDED
# RUN: %python %s json 1 > %t.padded.json
# RUN: %fusilli-opt %t.padded.json --pass-pipeline=default --stats | filecheck %s --check-prefix=OPT-PADDED
# RUN: %python %s | filecheck %s --check-prefix=STATS

# Channels-last conv + bias + relu on CPU: after fusilli's layout and
# epilogue-fusion passes the epilogue runs in the convolution's dispatch.
# STATS checks what Graph.compile produces (its target flags included);
# OPT-* check the module fusilli's default pipeline makes, compiled by
# fusilli-opt with the CPU backend's base flags.

import sys

from lit_helpers import print_stats, run

import fusilli as fs


def build(padding):
    g = fs.Graph(name=f"conv_bias_relu_pad{padding[0]}")
    n, c, h, w, k = 1, 8, 8, 8, 16
    x = g.tensor(name="x", dim=[n, c, h, w], stride=fs.strides([n, c, h, w], "NHWC"))
    wt = g.tensor(name="w", dim=[k, c, 3, 3], stride=fs.strides([k, c, 3, 3], "NHWC"))
    b = g.tensor(name="b", dim=[1, k, 1, 1], stride=fs.strides([1, k, 1, 1], "NHWC"))
    y = g.conv_fprop(x, wt, padding=padding, stride=[1, 1], dilation=[1, 1], name="conv")
    y = g.relu(g.add(y, b, name="bias"), name="relu")
    y.set_output(True).set_name("y")
    return g


if len(sys.argv) > 2 and sys.argv[1] == "json":
    print(build([int(sys.argv[2])] * 2).to_json())
    sys.exit(0)

# OPT-UNPADDED: dispatch-count: 1
# OPT-PADDED: dispatch-count: 1


@run
def conv_bias_relu_unpadded():
    print_stats(build([0, 0]))


# STATS-LABEL: TEST: conv_bias_relu_unpadded
# STATS: dispatch-count: 1
# STATS: transient-memory-bytes: 0


# The padded convolution is 1 dispatch too (upstream Fusilli: 2, the pad its own):
# below the im2col size fusilli-conv-layout folds the padding into the conv's input
# read (fusilli/passes/conv_direct.py) instead of using IREE's pad fusion flag, which
# in IREE 3.13 makes CPU code that crashes when run (CPU_CRASHING_FLAGS in
# fusilli/backend/targets.py).
@run
def conv_bias_relu_padded():
    print_stats(build([1, 1]))


# STATS-LABEL: TEST: conv_bias_relu_padded
# STATS: dispatch-count: 1
