# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
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

    # CPU (tiny: rule cpu-sdpa-fused): torch's SDPA op with a constant causal mask.
    # AMDGPU (rule amdgpu-sdpa-fused-attention): iree_linalg_ext.attention with a
    # computed boolean [Sq, Skv] mask read through its indexing map.
    # CHECK-LABEL: TEST: sdpa_causal
    # CPU: %[[MASK:.*]] = torch.vtensor.literal({{.*}}) : !torch.vtensor<[1,2,8,8],f32>
    # CPU: %[[SCALE:.*]] = torch.constant.float 5.000000e-01
    # CPU: torch.aten.scaled_dot_product_attention %{{.*}}, %{{.*}}, %{{.*}}, %[[MASK]], %{{.*}}, %{{.*}}, %[[SCALE]], %{{.*}} : {{.*}} -> !torch.vtensor<[1,2,8,4],f32>
    # AMDGPU-NOT: scaled_dot_product_attention
    # AMDGPU: torch.aten.le.Tensor {{.*}} -> !torch.vtensor<[8,8],i1>
    # AMDGPU: %[[SCALE:.*]] = arith.constant 5.000000e-01 : f32
    # AMDGPU: %[[MASK:.*]] = torch_c.to_builtin_tensor %{{.*}} : !torch.vtensor<[8,8],i1> -> tensor<8x8xi1>
    # AMDGPU: iree_linalg_ext.attention {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}}, %[[SCALE]], %[[MASK]] : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, f32, tensor<8x8xi1>)
