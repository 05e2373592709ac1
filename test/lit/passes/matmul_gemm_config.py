# RUN: %python %s > %t.json
# RUN: %fusilli-opt %t.json --backend cpu --arch znver1 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,ZEN
# RUN: %fusilli-opt %t.json --backend cpu --arch znver3 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,ZEN
# RUN: %fusilli-opt %t.json --backend cpu --arch haswell --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,DEFAULT
# RUN: %fusilli-opt %t.json --backend cpu --arch x86-64-v3 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,DEFAULT
# RUN: %fusilli-opt %t.json --backend cpu --arch znver4 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,DEFAULT

# f32 matmuls below the data-tiling threshold on AMD's AVX2 cores (rule cpu-matmul-gemm-config,
# gemm_config.user_matmul_compilation_info): a 2-D one is linalg.matmul with a 4x16 register tile
# in 32x64 workgroups and K in blocks of 64, its bias + relu after it (one generic, which IREE fuses
# into the GEMM's dispatch); a batched one linalg.batch_matmul with 4x16 in 64x256 workgroups,
# whole K, also at and above data tiling's 2^28 FLOP where B is at most 256 wide or 64 deep.
# A transposed B (a linear layer's W^T) is copied row-major behind a fusion barrier (a dispatch of
# its own) first. Below 2^21 FLOP (32x64x64), on Intel's AVX2 cores, AVX2 code for no named CPU
# and AVX-512, the matmul stays torch.aten.matmul (IREE's own config).

import fusilli as fs

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
print(g.to_json())

# ZEN-DAG: #[[CONFIG2D:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_parallel = [32, 64, 0], cache_reduction = [0, 0, 64], distribution = [32, 64, 0], vector_common_parallel = [4, 16, 0], vector_reduction = [0, 0, 8]>
# ZEN-DAG: #[[CONFIGB:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_parallel = [1, 64, 256, 0], distribution = [1, 64, 256, 0], vector_common_parallel = [1, 4, 16, 0], vector_reduction = [0, 0, 0, 8]>
# ZEN-DAG: #[[INFO2D:[a-z0-9]+]] = #iree_codegen.compilation_info<lowering_config = #[[CONFIG2D]], translation_info = #{{.*}}>
# ZEN-DAG: #[[INFOB:[a-z0-9]+]] = #iree_codegen.compilation_info<lowering_config = #[[CONFIGB]], translation_info = #{{.*}}>
# DEFAULT-NOT: compilation_info
# CHECK-LABEL: func.func @main
# ZEN: linalg.matmul {compilation_info = #[[INFO2D]]} ins(%{{.*}}, %{{.*}} : tensor<256x256xf32>, tensor<256x256xf32>)
# ZEN: arith.maximumf
# ZEN: linalg.batch_matmul {compilation_info = #[[INFOB]]} ins(%{{.*}}, %{{.*}} : tensor<8x256x64xf32>, tensor<8x64x256xf32>)
# ZEN: linalg.batch_matmul {compilation_info = #[[INFOB]]} ins(%{{.*}}, %{{.*}} : tensor<8x512x64xf32>, tensor<8x64x512xf32>)
# ZEN: torch.aten.matmul %{{.*}}, %{{.*}} : !torch.vtensor<[32,64],f32>, !torch.vtensor<[64,64],f32>
# ZEN: %[[WT:.+]] = torch.aten.permute
# ZEN: %[[B:.+]] = torch_c.to_builtin_tensor %[[WT]]
# ZEN: %[[COPY:.+]] = iree_tensor_ext.compute_barrier.start %[[B]]
# ZEN: linalg.matmul {compilation_info = #[[INFO2D]]} ins(%{{.*}}, %[[COPY]] : tensor<256x256xf32>, tensor<256x256xf32>)
# DEFAULT-NOT: linalg.matmul
# DEFAULT-COUNT-5: torch.aten.matmul
