# RUN: %python %s > %t.json
# RUN: %fusilli-opt %t.json --pass-pipeline=default --stats | filecheck %s --check-prefix=STATS

# matmul + bias + relu compiled by fusilli-opt from the graph's JSON: one
# dispatch on CPU (the epilogue is fused into the matmul's).

import fusilli as fs

g = fs.Graph(name="matmul_bias_relu")
a = g.tensor(name="a", dim=[16, 32])
b = g.tensor(name="b", dim=[32, 24])
bias = g.tensor(name="bias", dim=[1, 24])
c = g.relu(g.add(g.matmul(a, b, name="mm"), bias, name="bias_add"), name="relu")
c.set_output(True).set_name("c")
print(g.to_json())

# STATS: dispatch-count: 1
# STATS-NEXT: transient-memory-bytes: 0
