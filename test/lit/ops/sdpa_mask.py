# RUN: %python %s | filecheck %s
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

import sys

from lit_helpers import print_stats, run

import fusilli as fs


def build():
    g = fs.Graph(name="sdpa_mask")
    q = g.tensor(name="q", dim=[1, 2, 8, 4])
    k = g.tensor(name="k", dim=[1, 2, 6, 4])
    v = g.tensor(name="v", dim=[1, 2, 6, 4])
    m = g.tensor(name="m", dim=[1, 1, 8, 6], data_type=fs.DataType.BOOLEAN)
    g.sdpa(q, k, v, mask=m, name="attn").set_output(True).set_name("o")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "stats":

    @run
    def stats_sdpa_bool_mask():
        print_stats(build())

    # STATS-LABEL: TEST: stats_sdpa_bool_mask
    # STATS: dispatch-count: 2
else:

    @run
    def sdpa_bool_mask():
        print(build().emit_mlir())

    # CHECK-LABEL: TEST: sdpa_bool_mask
    # CHECK: %[[ADD:.*]] = torch.aten.where.self %{{.*}} -> !torch.vtensor<[1,1,8,6],f32>
    # CHECK: %[[NONE:.*]] = torch.constant.none
    # CHECK: torch.aten.scaled_dot_product_attention %{{.*}}, %{{.*}}, %{{.*}}, %[[ADD]], {{.*}}, %[[NONE]], {{.*}} -> !torch.vtensor<[1,2,8,4],f32>
