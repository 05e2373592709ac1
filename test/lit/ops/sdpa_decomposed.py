# RUN: env FUSILLI_LIT_TARGET=cpu:haswell %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

# On CPU, above CPU_SDPA_DECOMPOSE_MIN_FLOPS, SDPA is emitted as matmul / softmax /
# matmul in f32 (IREE's fused attention kernel is ~15x slower on CPU), the softmax as
# linalg.generic row reductions in lanes (sdpa.SOFTMAX_LANES); on AMD GPUs it stays
# IREE's fused attention. The CPU is Intel's AVX2 one (haswell), whose products stay torch's matmuls
# (AMD's cores and Intel's AVX-512 ones make them configured GEMMs: test/lit/passes/matmul_gemm_config.py).

import sys

from lit_helpers import emitted, print_stats, run

import fusilli as fs


def build(variant, dt=fs.DataType.FLOAT):
    g = fs.Graph(name=f"sdpa_dec_{variant}", io_data_type=dt, compute_data_type=fs.DataType.FLOAT)
    hq, hk, hv, kw = 2, 2, 2, {}
    if variant == "gqa_hk_ne_hv":
        hq, hk, hv, kw["enable_gqa"] = 4, 2, 1, True
    if variant == "causal":
        kw["is_causal"] = True
    if variant == "mask":
        kw["mask"] = g.tensor(name="m", dim=[1, 1, 64, 64], data_type=fs.DataType.BOOLEAN)
    skv = 40 if variant == "keys40" else 64
    q = g.tensor(name="q", dim=[1, hq, 64, 64])
    k = g.tensor(name="k", dim=[1, hk, skv, 64])
    v = g.tensor(name="v", dim=[1, hv, skv, 64])
    g.sdpa(q, k, v, name="attn", **kw).set_output(True).set_name("o")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "stats":
    for variant in ("basic", "causal", "mask", "gqa_hk_ne_hv"):
        print(f"TEST: stats_{variant}", flush=True)
        # x86-64-v3 code: on AMD's AVX2 cores (znver*) Q K^T copies K^T first from 128 query rows
        # (the GQA variant's folded heads have them): one dispatch more, test/lit/passes/matmul_gemm_config.py.
        print_stats(build(variant), arch="x86-64-v3")
        print(flush=True)

    # Q K^T, the softmax's five (each row's 64 scores as 16 lanes: their max, the row's max,
    # the lanes' sums of exp, the row's sum, the normalization), P V.
    # STATS-LABEL: TEST: stats_basic
    # STATS: dispatch-count: 7
    # STATS-LABEL: TEST: stats_causal
    # STATS: dispatch-count: 7
    # STATS-LABEL: TEST: stats_mask
    # (+1: the mask's row reduction that zeroes fully masked rows)
    # STATS: dispatch-count: 8
    # STATS-LABEL: TEST: stats_gqa_hk_ne_hv
    # STATS: dispatch-count: 7
else:

    @run
    def sdpa_decomposed():
        print(emitted(build("basic")))

    # On gfx942 the same problems stay one fused attention in their own type
    # (rule amdgpu-sdpa-fused-attention): no scores are materialized.
    # CHECK-LABEL: TEST: sdpa_decomposed
    # AMDGPU-NOT: math.exp
    # AMDGPU: iree_linalg_ext.attention {{.*}} ins({{.*}} : tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>, f32)
    # CPU-NOT: scaled_dot_product_attention
    # CPU: %[[KT:.*]] = torch.aten.permute %{{.*}}, %{{.*}} : !torch.vtensor<[1,2,64,64],f32>, !torch.list<int> -> !torch.vtensor<[1,2,64,64],f32>
    # CPU: %[[S:.*]] = torch.aten.matmul %{{.*}}, %[[KT]] : {{.*}} -> !torch.vtensor<[1,2,64,64],f32>
    # CPU: %[[SC:.*]] = torch.aten.mul.Scalar %[[S]], %{{.*}}
    # The softmax: each row's 64 scores as 16 lanes of 4 (a free expand_shape), each lane's max
    # (the lanes a parallel dim, vectorized), the row's max over the lanes; the same for the sum
    # of exp(s - max); then exp(s - max) * (1 / sum).
    # CPU: %[[SB:.*]] = torch_c.to_builtin_tensor %[[SC]] : !torch.vtensor<[1,2,64,64],f32> -> tensor<1x2x64x64xf32>
    # CPU: %[[LANES:.*]] = tensor.expand_shape %[[SB]] {{\[}}[0], [1], [2], [3, 4]] output_shape [1, 2, 64, 4, 16] : tensor<1x2x64x64xf32> into tensor<1x2x64x4x16xf32>
    # CPU: %[[LMAX:.*]] = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%[[LANES]] : tensor<1x2x64x4x16xf32>) outs(%{{.*}} : tensor<1x2x64x16xf32>)
    # CPU: arith.maxnumf
    # CPU: %[[MAX:.*]] = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[LMAX]] : tensor<1x2x64x16xf32>) outs(%{{.*}} : tensor<1x2x64xf32>)
    # CPU: arith.maxnumf
    # CPU: %[[LSUM:.*]] = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%{{.*}}, %[[MAX]] : tensor<1x2x64x4x16xf32>, tensor<1x2x64xf32>) outs(%{{.*}} : tensor<1x2x64x16xf32>)
    # CPU: math.exp
    # CPU: arith.addf
    # CPU: %[[SUM:.*]] = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[LSUM]] : tensor<1x2x64x16xf32>) outs(%{{.*}} : tensor<1x2x64xf32>)
    # CPU: %[[NORM:.*]] = linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[SB]], %[[MAX]], %[[SUM]] : tensor<1x2x64x64xf32>, tensor<1x2x64xf32>, tensor<1x2x64xf32>) outs(%{{.*}} : tensor<1x2x64x64xf32>)
    # CPU: math.exp
    # CPU: arith.divf
    # CPU: arith.mulf
    # CPU: %[[P:.*]] = torch_c.from_builtin_tensor %[[NORM]] : tensor<1x2x64x64xf32> -> !torch.vtensor<[1,2,64,64],f32>
    # CPU: torch.aten.matmul %[[P]], %{{.*}} : {{.*}} -> !torch.vtensor<[1,2,64,64],f32>

    @run
    def sdpa_decomposed_keys40():
        print(emitted(build("keys40")))

    # 40 keys: the first 32 as 2 rows of 16 lanes (a slice of the scores), the last 8 (a tail no
    # lane takes) reduced along the row into the value the lanes' reduction starts from.
    # CHECK-LABEL: TEST: sdpa_decomposed_keys40
    # CPU: %[[SB:.*]] = torch_c.to_builtin_tensor {{.*}} -> tensor<1x2x64x40xf32>
    # CPU: %[[MAIN:.*]] = tensor.extract_slice %[[SB]][0, 0, 0, 0] [1, 2, 64, 32] [1, 1, 1, 1] : tensor<1x2x64x40xf32> to tensor<1x2x64x32xf32>
    # CPU: %[[LANES:.*]] = tensor.expand_shape %[[MAIN]] {{\[}}[0], [1], [2], [3, 4]] output_shape [1, 2, 64, 2, 16]
    # CPU: %[[LMAX:.*]] = linalg.generic {{.*}} ins(%[[LANES]] : tensor<1x2x64x2x16xf32>) outs(%{{.*}} : tensor<1x2x64x16xf32>)
    # CPU: %[[TAIL:.*]] = tensor.extract_slice %[[SB]][0, 0, 0, 32] [1, 2, 64, 8] [1, 1, 1, 1] : tensor<1x2x64x40xf32> to tensor<1x2x64x8xf32>
    # CPU: %[[TMAX:.*]] = linalg.generic {{.*}} ins(%[[TAIL]] : tensor<1x2x64x8xf32>) outs(%{{.*}} : tensor<1x2x64xf32>)
    # CPU: arith.maxnumf
    # CPU: linalg.generic {{.*}} ins(%[[LMAX]] : tensor<1x2x64x16xf32>) outs(%[[TMAX]] : tensor<1x2x64xf32>)
    # CPU: arith.maxnumf

    @run
    def sdpa_decomposed_causal_f16():
        print(emitted(build("causal", fs.DataType.HALF)))

    # CHECK-LABEL: TEST: sdpa_decomposed_causal_f16
    # AMDGPU-NOT: torch.aten.to.dtype
    # AMDGPU: iree_linalg_ext.attention {{.*}} ins({{.*}} : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>, f32, tensor<64x64xi1>) outs({{.*}} : tensor<1x2x64x64xf16>)
    # CPU: torch.aten.to.dtype %{{.*}} : !torch.vtensor<[1,2,64,64],f16>, {{.*}} -> !torch.vtensor<[1,2,64,64],f32>
    # CPU: %[[S:.*]] = torch.aten.matmul {{.*}} -> !torch.vtensor<[1,2,64,64],f32>
    # CPU: torch.aten.arange
    # CPU: %[[KEEP:.*]] = torch.aten.le.Tensor {{.*}} -> !torch.vtensor<[64,64],i1>
    # CPU: %[[M:.*]] = torch.aten.where.self %[[KEEP]], %{{.*}}, %{{.*}} : {{.*}} -> !torch.vtensor<[1,2,64,64],f32>
    # CPU: torch_c.to_builtin_tensor %[[M]]
    # CPU: math.exp
    # CPU: %[[P:.*]] = torch_c.from_builtin_tensor
    # CPU: %[[O:.*]] = torch.aten.matmul %[[P]], {{.*}} -> !torch.vtensor<[1,2,64,64],f32>
    # CPU: torch.aten.to.dtype %[[O]], {{.*}} -> !torch.vtensor<[1,2,64,64],f16>

    @run
    def sdpa_decomposed_gqa_hk_ne_hv():
        print(emitted(build("gqa_hk_ne_hv")))

    # CHECK-LABEL: TEST: sdpa_decomposed_gqa_hk_ne_hv
    # AMDGPU: iree_linalg_ext.attention {{.*}} ins({{.*}} : tensor<1x1x2x2x64x64xf32>, tensor<1x1x2x64x64xf32>, tensor<1x1x64x64xf32>, f32)
    # CPU: torch.aten.reshape {{.*}} -> !torch.vtensor<[1,2,128,64],f32>
    # CPU: torch.aten.matmul {{.*}} -> !torch.vtensor<[1,2,128,64],f32>
    # CPU: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x128x64xf32>)
    # CPU: torch.aten.matmul {{.*}} -> !torch.vtensor<[1,2,128,64],f32>
    # CPU: torch.aten.reshape {{.*}} -> !torch.vtensor<[1,4,64,64],f32>
