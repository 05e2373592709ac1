# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

import sys

from lit_helpers import emitted, print_stats, run

import fusilli as fs


def build(mask_dt=fs.DataType.BOOLEAN):
    g = fs.Graph(name=f"sdpa_mask_{mask_dt.name}")
    q = g.tensor(name="q", dim=[1, 2, 8, 4])
    k = g.tensor(name="k", dim=[1, 2, 6, 4])
    v = g.tensor(name="v", dim=[1, 2, 6, 4])
    m = g.tensor(name="m", dim=[1, 1, 8, 6], data_type=mask_dt)
    g.sdpa(q, k, v, mask=m, name="attn").set_output(True).set_name("o")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "stats":

    @run
    def stats_sdpa_bool_mask():
        print_stats(build())

    # The attention, and the mask's row reduction that finds fully masked rows (their
    # output is 0, as in PyTorch): 2 dispatches.
    # STATS-LABEL: TEST: stats_sdpa_bool_mask
    # STATS: dispatch-count: 2

    @run
    def stats_sdpa_float_mask():
        print_stats(build(fs.DataType.FLOAT))

    # STATS-LABEL: TEST: stats_sdpa_float_mask
    # STATS: dispatch-count: 2
else:

    @run
    def sdpa_bool_mask():
        print(emitted(build()))

    # The boolean mask goes to iree_linalg_ext.attention as i1 at its own shape (size-1 dims
    # dropped); its map reads only (m, k2), so no broadcast is materialized.
    # CHECK-LABEL: TEST: sdpa_bool_mask
    # CHECK-DAG: #[[QMAP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d4)>
    # CHECK-DAG: #[[MMAP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d2, d5)>
    # CHECK-NOT: torch.aten.where
    # CHECK: %[[M:.*]] = torch.aten.reshape %arg{{.*}} : !torch.vtensor<[1,1,8,6],i1>, !torch.list<int> -> !torch.vtensor<[8,6],i1>
    # CHECK: %[[MB:.*]] = torch_c.to_builtin_tensor %[[M]] : !torch.vtensor<[8,6],i1> -> tensor<8x6xi1>
    # CHECK: %[[O:.*]] = iree_linalg_ext.attention <indexing_maps = [#[[QMAP]], {{.*}}, #[[MMAP]], {{.*}}]> ins({{.*}}, %[[MB]] : tensor<1x2x8x4xf32>, tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>, f32, tensor<8x6xi1>) outs({{.*}} : tensor<1x2x8x4xf32>)
    # CHECK: iree_linalg_ext.yield
    # CHECK: %[[OT:.*]] = torch_c.from_builtin_tensor %[[O]] : tensor<1x2x8x4xf32> -> !torch.vtensor<[1,2,8,4],f32>
    # A query row with no key left attends to nothing: 0, not 0/0.
    # CHECK: %[[ANY:.*]] = torch.aten.any.dim %arg{{.*}}, %{{.*}}, %{{.*}} : !torch.vtensor<[1,1,8,6],i1>, !torch.int, !torch.bool -> !torch.vtensor<[1,1,8,1],i1>
    # CHECK: torch.aten.where.ScalarOther %[[ANY]], %{{.*}}, %{{.*}} : !torch.vtensor<[1,1,8,1],i1>, !torch.vtensor<[1,2,8,4],f32>
