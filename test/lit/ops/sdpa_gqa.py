# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

import sys

from lit_helpers import emitted, print_stats, run

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
    # STATS: dispatch-count: 1
else:

    @run
    def sdpa_gqa():
        print(emitted(build(2)))

    # On the CPU query heads are folded into the sequence dim of torch's SDPA op: no
    # copy of K/V. On gfx942: iree_linalg_ext.attention with a head-group loop (q read as
    # [B, Hk, Hq/Hk, S, D]), K/V read at their own head count.
    # CHECK-LABEL: TEST: sdpa_gqa
    # CPU: %[[Q:.*]] = torch.aten.reshape %{{.*}} -> !torch.vtensor<[1,2,16,4],f32>
    # CPU: %[[O:.*]] = torch.aten.scaled_dot_product_attention %[[Q]], {{.*}} -> !torch.vtensor<[1,2,16,4],f32>
    # CPU: torch.aten.reshape %[[O]], {{.*}} -> !torch.vtensor<[1,4,8,4],f32>
    # AMDGPU-NOT: scaled_dot_product_attention
    # AMDGPU: %[[O:.*]] = iree_linalg_ext.attention {{.*}} ins({{.*}} : tensor<1x2x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, f32) outs({{.*}} : tensor<1x2x2x8x4xf32>)
    # AMDGPU: %[[OT:.*]] = torch_c.from_builtin_tensor %[[O]]
    # AMDGPU: torch.aten.reshape %[[OT]], {{.*}} -> !torch.vtensor<[1,4,8,4],f32>

    @run
    def sdpa_gqa_hk_ne_hv():
        print(emitted(build(1)))

    # Hk = 2, Hv = 1: loops (b, lo=1, x=2, r=2, m, n, k1, k2); V's map has no x loop, so V is
    # read at its own head count (no repeat).
    # CHECK-LABEL: TEST: sdpa_gqa_hk_ne_hv
    # CHECK-DAG: #[[QMAP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4, d6)>
    # CHECK-DAG: #[[KMAP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d7, d6)>
    # CHECK-DAG: #[[VMAP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d7, d5)>
    # CHECK-NOT: torch.aten.expand
    # CHECK: %[[O:.*]] = iree_linalg_ext.attention <indexing_maps = [#[[QMAP]], #[[KMAP]], #[[VMAP]], {{.*}}]> ins({{.*}} : tensor<1x1x2x2x8x4xf32>, tensor<1x1x2x8x4xf32>, tensor<1x1x8x4xf32>, f32) outs({{.*}} : tensor<1x1x2x2x8x4xf32>)
    # CHECK: %[[OT:.*]] = torch_c.from_builtin_tensor %[[O]]
    # CHECK: torch.aten.reshape %[[OT]], {{.*}} -> !torch.vtensor<[1,4,8,4],f32>
