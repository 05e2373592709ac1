"""End-to-end smoke test of the core path: conv + bias + relu, NHWC, f32."""

from conftest import random_array, run_and_check

import fusilli as fs


def test_conv_bias_relu_nhwc(cpu, rng):
    g = fs.Graph(name="conv_bias_relu_nhwc")
    n, c, h, w, k = 2, 8, 8, 8, 16
    x = g.tensor(name="x", dim=[n, c, h, w], stride=fs.strides([n, c, h, w], "NHWC"))
    wt = g.tensor(name="w", dim=[k, c, 3, 3], stride=fs.strides([k, c, 3, 3], "NHWC"))
    b = g.tensor(name="b", dim=[1, k, 1, 1], stride=fs.strides([1, k, 1, 1], "NHWC"))
    y = g.conv_fprop(x, wt, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv")
    y = g.relu(g.add(y, b, name="bias"), name="relu").set_output(True)
    g.validate()
    inputs = {t: random_array(t, rng) for t in (x, wt, b)}
    run_and_check(g, cpu, inputs, rtol=1e-4, atol=1e-4)
