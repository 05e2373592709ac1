# RUN: %python %s | filecheck %s
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

import sys

from lit_helpers import print_stats, run

import fusilli as fs


def build(hv):
    g = fs.Graph(name=f"sdpa_gqa_hv{hv}")
    q = g.tensor(name="q", dim=[1, 4, 8, 4])
    k = g.tensor(name="k", dim=[1, 2, 8, 4])
    v = g.tensor(name="v", dim=[1, hv, 8, 4])
    g.sdpa(q, k, v, enable_gqa=True, name="attn").set_output(True).set_name("o")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "stats":

    @run
    def stats_gqa():
        print_stats(build(2))

    # STATS-LABEL: TEST: stats_gqa
    # STATS: dispatch-count: 1

    @run
    def stats_gqa_hk_ne_hv():
        print_stats(build(1))

    # STATS-LABEL: TEST: stats_gqa_hk_ne_hv
    # STATS: dispatch-count: 2
else:

    @run
    def sdpa_gqa():
        print(build(2).emit_mlir())

    # Query heads are folded into the sequence dim: no copy of K/V.
    # CHECK-LABEL: TEST: sdpa_gqa
    # CHECK: %[[Q:.*]] = torch.aten.reshape %{{.*}} -> !torch.vtensor<[1,2,16,4],f32>
    # CHECK: %[[O:.*]] = torch.aten.scaled_dot_product_attention %[[Q]], {{.*}} -> !torch.vtensor<[1,2,16,4],f32>
    # CHECK: torch.aten.reshape %[[O]], {{.*}} -> !torch.vtensor<[1,4,8,4],f32>

    @run
    def sdpa_gqa_hk_ne_hv():
        print(build(1).emit_mlir())

    # CHECK-LABEL: TEST: sdpa_gqa_hk_ne_hv
    # CHECK: torch.aten.expand %{{.*}} -> !torch.vtensor<[1,1,2,8,4],f32>
    # CHECK: %[[V:.*]] = torch.aten.reshape %{{.*}} -> !torch.vtensor<[1,2,8,4],f32>
    # CHECK: torch.aten.scaled_dot_product_attention %{{.*}}, %{{.*}}, %[[V]], {{.*}} -> !torch.vtensor<[1,2,16,4],f32>
