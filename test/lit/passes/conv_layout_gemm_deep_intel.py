# RUN: %python %s > %t.json
# RUN: %fusilli-opt %t.json --backend cpu --arch sapphirerapids --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,INTEL
# RUN: %fusilli-opt %t.json --backend cpu --arch znver4 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,AMD
# RUN: %fusilli-opt %t.json --backend cpu --arch x86-64-v3 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,AMD

# A deep 3x3 stride-1 conv that Winograd leaves (1x512x7x7->512: 4 4x4 tiles, 16 2x2
# ones): on an Intel AVX-512 core cpu-conv-im2col-gemm takes it (GEMM depth 4608 >=
# 2304) and its GEMM gets Intel's 6x64 register tile and K blocks of 256
# (gemm_config.CONV_GEMM_TILES_BY_VENDOR, from depth 512); the padded patches are
# one gather. On AMD Zen 4 and x86-64-v3 it stays
# IREE's linalg conv (im2col + data tiling), no lowering config.

import fusilli as fs

g = fs.Graph(name="conv_gemm_deep")
n, c, h, w, k = 1, 512, 7, 7, 512
x = g.tensor(name="x", dim=[n, c, h, w], stride=fs.strides([n, c, h, w], "NHWC"))
wt = g.tensor(name="w", dim=[k, c, 3, 3], stride=fs.strides([k, c, 3, 3], "NHWC"))
g.conv_fprop(x, wt, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv").set_output(True).set_name("y")
print(g.to_json())

# INTEL-DAG: #[[CFG:.*]] = #iree_cpu.lowering_config<cache_parallel = [49, 64, 0], cache_reduction = [0, 0, 256], distribution = [49, 64, 0], vector_common_parallel = [6, 64, 0], vector_reduction = [0, 0, 8]>
# CHECK-LABEL: func.func @main(
# INTEL: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x7x7x3x3x512xf32>)
# INTEL: linalg.matmul {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<49x4608xf32>, tensor<4608x512xf32>)
# INTEL-NOT: linalg.conv_2d_nhwc_hwcf
# AMD-NOT: compilation_info
# AMD: linalg.conv_2d_nhwc_hwcf
# AMD-NOT: compilation_info
