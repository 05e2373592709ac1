# RUN: %python %s | filecheck %s --check-prefix=STATS

# A chain of five pointwise ops over an NHWC tensor and a broadcast bias is
# one elementwise region after fusilli's passes: one dispatch on CPU.

from lit_helpers import print_stats, run

import fusilli as fs


@run
def pointwise_chain_5():
    g = fs.Graph(name="pointwise_chain_5")
    dim = [2, 8, 4, 4]
    x = g.tensor(name="x", dim=dim, stride=fs.strides(dim, "NHWC"))
    y = g.tensor(name="y", dim=dim, stride=fs.strides(dim, "NHWC"))
    bias = g.tensor(name="bias", dim=[1, 8, 1, 1])
    t = g.add(x, y, name="add")
    t = g.mul(t, bias, name="scale")
    t = g.sub(t, x, name="sub")
    t = g.relu(t, name="relu")
    t = g.mul(t, g.scalar(0.5), name="half")
    t.set_output(True).set_name("out")
    print_stats(g)


# STATS-LABEL: TEST: pointwise_chain_5
# STATS: dispatch-count: 1
# STATS: transient-memory-bytes: 0
