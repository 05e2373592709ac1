# RUN: %python %s | filecheck %s

# Dispatch counts where upstream differs from 1: IDENTITY costs no dispatch
# (the copy folds into the output write), and a matmul with a broadcast batch
# dim is one dispatch (upstream's CPU count is 2).

from lit_helpers import print_stats, run

import fusilli as fs


@run
def identity():
    g = fs.Graph(name="stats_identity")
    a = g.tensor(name="a", dim=[4, 8])
    g.identity(a).set_output(True)
    print_stats(g)


# CHECK-LABEL: TEST: identity
# CHECK: dispatch-count: 0


@run
def matmul_broadcast_batch():
    g = fs.Graph(name="stats_matmul_broadcast")
    a = g.tensor(name="a", dim=[4, 16, 32])
    b = g.tensor(name="b", dim=[1, 32, 8])
    g.matmul(a, b).set_output(True)
    print_stats(g)


# CHECK-LABEL: TEST: matmul_broadcast_batch
# CHECK: dispatch-count: 1
