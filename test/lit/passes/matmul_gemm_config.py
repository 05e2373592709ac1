# RUN: %python %s > %t.json
# RUN: %fusilli-opt %t.json --backend cpu --arch znver1 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,TUNED,AVX2,ROWS128
# RUN: %fusilli-opt %t.json --backend cpu --arch znver3 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,TUNED,AVX2,ROWS128
# RUN: %fusilli-opt %t.json --backend cpu --arch znver4 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,TUNED,TILE512,AVX512
# RUN: %fusilli-opt %t.json --backend cpu --arch znver5 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,TUNED,TILE512,AVX512
# RUN: %fusilli-opt %t.json --backend cpu --arch haswell --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,DEFAULT
# RUN: %fusilli-opt %t.json --backend cpu --arch x86-64-v3 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,DEFAULT
# RUN: %fusilli-opt %t.json --backend cpu --arch sapphirerapids --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,TUNED,TILE512,ROWS128
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

# f32 matmuls below the data-tiling threshold on AMD's AVX2 and AVX-512 cores and Intel's AVX-512 ones (rule
# cpu-matmul-gemm-config, gemm_config.user_matmul_compilation_info): a 2-D one is linalg.matmul
# with a 4x16 register tile in 32x64 workgroups and K in blocks of 64 (AVX-512: 8x32 in 64x64, K
# blocks of 256), its bias + relu after it (one generic, which IREE fuses into the GEMM's
# dispatch); a batched one linalg.batch_matmul with 4x16 (8x32) in 64 x min(N, 256) workgroups,
# whole K, also at and above data tiling's 2^28 FLOP where B is at most 256 wide or 64 deep.
# A transposed B (a linear layer's W^T) is copied row-major behind a fusion barrier (a dispatch of
# its own) first; a decomposed attention of >= 128 query rows runs its two products the same way
# (K^T copied first, the heads collapsed into the batch). Below 2^21 FLOP (32x64x64), on Intel's
# AVX2 cores (haswell) and code for no named CPU, the matmul stays torch.aten.matmul (IREE's own config).

import sys

from lit_helpers import print_stats

import fusilli as fs

if len(sys.argv) > 1 and sys.argv[1] == "stats":
    # Compiled for znver1 and znver5 (AMD's AVX2 and AVX-512 cores) and, for what it changes,
    # haswell (IREE's config).
    def linear(name, m, k, n, transposed):
        g = fs.Graph(name=name)
        x = g.tensor(name="x", dim=[m, k])
        w = g.tensor(name="w", dim=[k, n], stride=[1, k] if transposed else None)
        bias = g.tensor(name="bias", dim=[1, n])
        y = g.pointwise(g.matmul(x, w, name="mm"), bias, mode=fs.PointwiseMode.ADD, name="mm_bias")
        g.pointwise(y, mode=fs.PointwiseMode.RELU_FWD, name="mm_relu").set_output(True).set_name("y")
        return g

    def attention(name):
        g = fs.Graph(name=name)
        q, k, v = (g.tensor(name=t, dim=[1, 2, 128, 64]) for t in "qkv")
        g.sdpa(q, k, v, name="attn").set_output(True).set_name("o")
        return g

    for arch in ("znver1", "znver5", "haswell"):
        print(f"TEST: stats_linear_{arch}", flush=True)
        print_stats(linear(f"stats_linear_{arch}", 512, 256, 512, False), arch=arch)
        print(f"TEST: stats_linear_wt_{arch}", flush=True)
        print_stats(linear(f"stats_linear_wt_{arch}", 512, 256, 512, True), arch=arch)
        print(f"TEST: stats_attention_{arch}", flush=True)
        print_stats(attention(f"stats_attention_{arch}"), arch=arch)
    sys.exit(0)

# The GEMM with its bias + relu: one dispatch; with W^T, W's row-major copy one more; attention:
# K^T's copy, Q K^T, the softmax's five (lanes' max, row max, lanes' sum, row sum, normalization),
# P V (haswell: 7, IREE reads K transposed).
# STATS-LABEL: TEST: stats_linear_znver1
# STATS: dispatch-count: 1
# STATS-LABEL: TEST: stats_linear_wt_znver1
# STATS: dispatch-count: 2
# STATS-LABEL: TEST: stats_attention_znver1
# STATS: dispatch-count: 8
# STATS-LABEL: TEST: stats_linear_znver5
# STATS: dispatch-count: 1
# STATS-LABEL: TEST: stats_linear_wt_znver5
# STATS: dispatch-count: 2
# STATS-LABEL: TEST: stats_attention_znver5
# STATS: dispatch-count: 8
# STATS-LABEL: TEST: stats_linear_haswell
# STATS: dispatch-count: 1
# STATS-LABEL: TEST: stats_linear_wt_haswell
# STATS: dispatch-count: 1
# STATS-LABEL: TEST: stats_attention_haswell
# STATS: dispatch-count: 7

g = fs.Graph(name="matmul_gemm_config")
a = g.tensor(name="a", dim=[256, 256])
b = g.tensor(name="b", dim=[256, 256])
bias = g.tensor(name="bias", dim=[1, 256])
y = g.matmul(a, b, name="mm2d")
y = g.pointwise(y, bias, mode=fs.PointwiseMode.ADD, name="mm2d_bias")
y = g.pointwise(y, mode=fs.PointwiseMode.RELU_FWD, name="mm2d_relu")
y.set_output(True).set_name("y")
ba = g.tensor(name="ba", dim=[8, 256, 64])
bb = g.tensor(name="bb", dim=[8, 64, 256])
g.matmul(ba, bb, name="bmm").set_output(True).set_name("by")
# Batched at 2^28 FLOP (data tiling's threshold) with a B 64 deep: the config, not data tiling.
wa = g.tensor(name="wa", dim=[8, 512, 64])
wb = g.tensor(name="wb", dim=[8, 64, 512])
g.matmul(wa, wb, name="bmm_wide").set_output(True).set_name("wy")
sa = g.tensor(name="sa", dim=[32, 64])
sb = g.tensor(name="sb", dim=[64, 64])
g.matmul(sa, sb, name="small").set_output(True).set_name("sy")
ta = g.tensor(name="ta", dim=[256, 256])
tb = g.tensor(name="tb", dim=[256, 256], stride=[1, 256])
g.matmul(ta, tb, name="transposed_b").set_output(True).set_name("ty")
# A decomposed attention of 128 query rows: both products the same way, K^T copied row-major.
q = g.tensor(name="q", dim=[1, 2, 128, 64])
k = g.tensor(name="k", dim=[1, 2, 128, 64])
v = g.tensor(name="v", dim=[1, 2, 128, 64])
g.sdpa(q, k, v, name="attn").set_output(True).set_name("o")
# 64 query rows: configured GEMMs on AMD's AVX-512 cores (rules.CPU_SDPA_GEMM_CONFIG_MIN_ROWS), torch's
# matmuls on its AVX2 ones.
q64 = g.tensor(name="q64", dim=[1, 4, 64, 64])
k64 = g.tensor(name="k64", dim=[1, 4, 64, 64])
v64 = g.tensor(name="v64", dim=[1, 4, 64, 64])
g.sdpa(q64, k64, v64, name="attn64").set_output(True).set_name("o64")
print(g.to_json())

# AVX2-DAG: #[[CONFIG2D:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_parallel = [32, 64, 0], cache_reduction = [0, 0, 64], distribution = [32, 64, 0], vector_common_parallel = [4, 16, 0], vector_reduction = [0, 0, 8]>
# AVX2-DAG: #[[CONFIGB:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_parallel = [1, 64, 256, 0], distribution = [1, 64, 256, 0], vector_common_parallel = [1, 4, 16, 0], vector_reduction = [0, 0, 0, 8]>
# TILE512-DAG: #[[CONFIG2D:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_parallel = [64, 64, 0], cache_reduction = [0, 0, 256], distribution = [64, 64, 0], vector_common_parallel = [8, 32, 0], vector_reduction = [0, 0, 8]>
# TILE512-DAG: #[[CONFIGB:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_parallel = [1, 64, 256, 0], distribution = [1, 64, 256, 0], vector_common_parallel = [1, 8, 32, 0], vector_reduction = [0, 0, 0, 8]>
# TUNED-DAG: #[[INFO2D:[a-z0-9]+]] = #iree_codegen.compilation_info<lowering_config = #[[CONFIG2D]], translation_info = #{{.*}}>
# TUNED-DAG: #[[INFOB:[a-z0-9]+]] = #iree_codegen.compilation_info<lowering_config = #[[CONFIGB]], translation_info = #{{.*}}>
# DEFAULT-NOT: compilation_info
# CHECK-LABEL: func.func @main
# TUNED: linalg.matmul {compilation_info = #[[INFO2D]]} ins(%{{.*}}, %{{.*}} : tensor<256x256xf32>, tensor<256x256xf32>)
# TUNED: arith.maximumf
# TUNED: linalg.batch_matmul {compilation_info = #[[INFOB]]} ins(%{{.*}}, %{{.*}} : tensor<8x256x64xf32>, tensor<8x64x256xf32>)
# TUNED: linalg.batch_matmul {compilation_info = #[[INFOB]]} ins(%{{.*}}, %{{.*}} : tensor<8x512x64xf32>, tensor<8x64x512xf32>)
# TUNED: torch.aten.matmul %{{.*}}, %{{.*}} : !torch.vtensor<[32,64],f32>, !torch.vtensor<[64,64],f32>
# TUNED: %[[WT:.+]] = torch.aten.permute
# TUNED: %[[B:.+]] = torch_c.to_builtin_tensor %[[WT]]
# TUNED: %[[COPY:.+]] = iree_tensor_ext.compute_barrier.start %[[B]]
# TUNED: linalg.matmul {compilation_info = #[[INFO2D]]} ins(%{{.*}}, %[[COPY]] : tensor<256x256xf32>, tensor<256x256xf32>)
# TUNED: %[[KT:.+]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2], [3]] : tensor<1x2x64x128xf32> into tensor<2x64x128xf32>
# TUNED: %[[KTCOPY:.+]] = iree_tensor_ext.compute_barrier.start %[[KT]]
# TUNED: linalg.batch_matmul {compilation_info = #{{.+}}} ins(%{{.*}}, %[[KTCOPY]] : tensor<2x128x64xf32>, tensor<2x64x128xf32>)
# TUNED: math.exp
# TUNED: linalg.batch_matmul {compilation_info = #{{.+}}} ins(%{{.*}}, %{{.*}} : tensor<2x128x128xf32>, tensor<2x128x64xf32>)
# (AMD's AVX2 cores and Intel's AVX-512 ones take the attention's GEMMs from 128 query rows, AMD's
# AVX-512 cores from 64: rules.CPU_SDPA_GEMM_CONFIG_MIN_ROWS.)
# ROWS128: torch.aten.matmul {{.*}} -> !torch.vtensor<[1,4,64,64],f32>
# ROWS128: math.exp
# ROWS128: torch.aten.matmul {{.*}} -> !torch.vtensor<[1,4,64,64],f32>
# AVX512: linalg.batch_matmul {compilation_info = #{{.+}}} ins(%{{.*}}, %{{.*}} : tensor<4x64x64xf32>, tensor<4x64x64xf32>)
# AVX512: math.exp
# AVX512: linalg.batch_matmul {compilation_info = #{{.+}}} ins(%{{.*}}, %{{.*}} : tensor<4x64x64xf32>, tensor<4x64x64xf32>)
# DEFAULT-NOT: linalg.matmul
# DEFAULT-COUNT-5: torch.aten.matmul
# DEFAULT: math.exp
# DEFAULT: torch.aten.matmul
