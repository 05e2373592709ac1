# RUN: %python %s | filecheck %s

# Dispatch counts of small channels-last convs after fusilli-conv-layout (CPU):
# the layout-native conv (or 1x1 matmul) and its bias + relu epilogue share one
# dispatch; f16 convs compute in f32 with the input cast fused too. A padded
# bf16 conv is 1 as well: its padding is folded into the conv's input read
# (fusilli/passes/conv_direct.py; it took 3 with a tensor.pad and the cast to f32
# as dispatches of their own).

from lit_helpers import print_stats, run

import fusilli as fs


def build(name, c, k, r, padding, dtype=fs.DataType.FLOAT):
    g = fs.Graph(name=name, io_data_type=dtype, compute_data_type=fs.DataType.FLOAT)
    n, h, w = 1, 8, 8
    x = g.tensor(name="x", dim=[n, c, h, w], stride=fs.strides([n, c, h, w], "NHWC"))
    wt = g.tensor(name="w", dim=[k, c, r, r], stride=fs.strides([k, c, r, r], "NHWC"))
    b = g.tensor(name="b", dim=[1, k, 1, 1], stride=fs.strides([1, k, 1, 1], "NHWC"))
    y = g.conv_fprop(x, wt, padding=padding, stride=[1, 1], dilation=[1, 1], name="conv")
    y = g.relu(g.add(y, b, name="bias"), name="relu")
    y.set_output(True).set_name("y")
    return g


@run
def conv1x1_bias_relu():
    print_stats(build("conv1x1_bias_relu", 16, 8, 1, [0, 0]))


# CHECK-LABEL: TEST: conv1x1_bias_relu
# CHECK: dispatch-count: 1


@run
def conv3x3_bias_relu_f16():
    print_stats(build("conv3x3_bias_relu_f16", 8, 16, 3, [0, 0], fs.DataType.HALF))


# CHECK-LABEL: TEST: conv3x3_bias_relu_f16
# CHECK: dispatch-count: 1


@run
def conv3x3_bias_relu_padded_bf16():
    print_stats(build("conv3x3_bias_relu_padded_bf16", 8, 16, 3, [1, 1], fs.DataType.BFLOAT16))


# CHECK-LABEL: TEST: conv3x3_bias_relu_padded_bf16
# CHECK: dispatch-count: 1
