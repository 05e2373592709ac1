# RUN: %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

import sys

from lit_helpers import emitted, print_stats, run

import fusilli as fs


def build():
    g = fs.Graph(name="sdpa_causal")
    q = g.tensor(name="q", dim=[1, 2, 8, 4])
    k = g.tensor(name="k", dim=[1, 2, 8, 4])
    v = g.tensor(name="v", dim=[1, 2, 8, 4])
    g.sdpa(q, k, v, is_causal=True, scale=0.5, name="attn").set_output(True).set_name("o")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "stats":

    @run
    def stats_sdpa_causal():
        print_stats(build())

    # STATS-LABEL: TEST: stats_sdpa_causal
    # STATS: dispatch-count: 1
else:

    @run
    def sdpa_causal():
        print(emitted(build()))

    # CHECK-LABEL: TEST: sdpa_causal
    # CHECK: %[[MASK:.*]] = torch.vtensor.literal({{.*}}) : !torch.vtensor<[1,2,8,8],f32>
    # CHECK: %[[SCALE:.*]] = torch.constant.float 5.000000e-01
    # CHECK: torch.aten.scaled_dot_product_attention %{{.*}}, %{{.*}}, %{{.*}}, %[[MASK]], %{{.*}}, %{{.*}}, %[[SCALE]], %{{.*}} : {{.*}} -> !torch.vtensor<[1,2,8,4],f32>
