# RUN: %python %s > %t.json
# RUN: %fusilli-opt %t.json --backend cpu --arch sapphirerapids --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,INTEL
# RUN: %fusilli-opt %t.json --backend cpu --arch znver4 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,AMD
# RUN: %fusilli-opt %t.json --backend cpu --arch x86-64-v3 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,GENERIC

# Deep 3x3 stride-1 convs that Winograd leaves (512x7x7->512: 4 4x4 tiles at batch 1, 8 at
# batch 2; 16 and 32 2x2 ones): on an Intel AVX-512 core cpu-conv-im2col-gemm takes them (GEMM
# depth 4608 >= 2304) and their GEMMs get Intel's 6x64 register tile and K blocks of 256
# (gemm_config.CONV_GEMM_TILES_BY_VENDOR, from depth 512), with the rows in equal workgroup
# blocks of at most 100 (gemm_config.deep_gemm_rows): batch 1's 49 rows are one block, batch 2's
# 98 one. The padded patches are one gather. Batch 8's 32 4x4 tiles are Winograd F(4x4)
# everywhere (cpu-conv-winograd's one-pass-filter limit: 32 tiles on Intel, 16 elsewhere);
# batches 1 and 2 stay the K-blocked GEMM on
# AMD Zen 4 (8x32 tile, same K blocks, the same equal row blocks: 98 rows are one, not 64 + 34;
# test conv_gemm_last_stage.py), and so does AVX2 code (x86-64-v3: its 6x16 tile in one and two
# blocks of 49 rows, rules.CPU_CONV_GEMM_MIN_DEPTH_AVX512), where IREE's linalg conv (im2col + data
# tiling) took them until the GEMM's filter lost its strided copy.
# The dgrad 1x512x7x7 <- 512 is the GEMM everywhere (cpu-conv-im2col-gemm; as x86-64-v3 code
# cpu-conv-dgrad-flipped-gemm) over patches laid out (k, r, s) and the KRSC filter as is, its
# 49 rows one block: as AVX2 code too (at most 60 there), not the table's 48 + 1.

import fusilli as fs


def conv(g, name, n):
    c, h, w, k = 512, 7, 7, 512
    x = g.tensor(name=f"{name}_x", dim=[n, c, h, w], stride=fs.strides([n, c, h, w], "NHWC"))
    wt = g.tensor(name=f"{name}_w", dim=[k, c, 3, 3], stride=fs.strides([k, c, 3, 3], "NHWC"))
    y = g.conv_fprop(x, wt, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name=name)
    y.set_output(True).set_name(f"{name}_y")


def dgrad(g, name, n):
    k, c, h, w = 512, 512, 7, 7
    dy = g.tensor(name=f"{name}_dy", dim=[n, k, h, w], stride=fs.strides([n, k, h, w], "NHWC"))
    wt = g.tensor(name=f"{name}_w", dim=[k, c, 3, 3], stride=fs.strides([k, c, 3, 3], "NHWC"))
    dx = g.conv_dgrad(dy, wt, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name=name)
    dx.set_dim([n, c, h, w]).set_stride(fs.strides([n, c, h, w], "NHWC")).set_output(True).set_name(f"{name}_dx")


g = fs.Graph(name="conv_gemm_deep")
conv(g, "deep1", 1)
conv(g, "deep2", 2)
conv(g, "deep8", 8)
dgrad(g, "dgrad1", 1)
print(g.to_json())

# INTEL-DAG: #[[CFG1:.*]] = #iree_cpu.lowering_config<cache_parallel = [49, 64, 0], cache_reduction = [0, 0, 256], distribution = [49, 64, 0], vector_common_parallel = [6, 64, 0], vector_reduction = [0, 0, 8]>
# INTEL-DAG: #[[CFG2:.*]] = #iree_cpu.lowering_config<cache_parallel = [98, 64, 0], cache_reduction = [0, 0, 256], distribution = [98, 64, 0], vector_common_parallel = [6, 64, 0], vector_reduction = [0, 0, 8]>
# AMD-DAG: #[[CFG:.*]] = #iree_cpu.lowering_config<cache_parallel = [49, 64, 0], cache_reduction = [0, 0, 256], distribution = [49, 64, 0], vector_common_parallel = [8, 32, 0], vector_reduction = [0, 0, 8]>
# AMD-DAG: #[[CFG2:.*]] = #iree_cpu.lowering_config<cache_parallel = [98, 64, 0], cache_reduction = [0, 0, 256], distribution = [98, 64, 0], vector_common_parallel = [8, 32, 0], vector_reduction = [0, 0, 8]>
# GENERIC-DAG: #[[GCFG:.*]] = #iree_cpu.lowering_config<cache_parallel = [49, 64, 0], cache_reduction = [0, 0, 256], distribution = [49, 64, 0], vector_common_parallel = [6, 16, 0], vector_reduction = [0, 0, 8]>
# CHECK-LABEL: func.func @main(
# INTEL: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x7x7x3x3x512xf32>)
# INTEL: linalg.matmul {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<49x4608xf32>, tensor<4608x512xf32>)
# INTEL: linalg.matmul {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<98x4608xf32>, tensor<4608x512xf32>)
# INTEL: linalg.batch_matmul {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<36x32x512xf32>, tensor<36x512x512xf32>)
# INTEL-NOT: linalg.conv_2d_nhwc_hwcf
# AMD: linalg.matmul {compilation_info = #{{.*}}} ins(%{{.*}}, %{{.*}} : tensor<49x4608xf32>, tensor<4608x512xf32>)
# AMD: linalg.matmul {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<98x4608xf32>, tensor<4608x512xf32>)
# AMD: linalg.batch_matmul {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<36x32x512xf32>, tensor<36x512x512xf32>)
# AMD-NOT: linalg.conv_2d_nhwc_hwcf
# GENERIC: linalg.matmul {compilation_info = #{{.*}}} ins(%{{.*}}, %{{.*}} : tensor<49x4608xf32>, tensor<4608x512xf32>)
# GENERIC: linalg.matmul {compilation_info = #{{.*}}} ins(%{{.*}}, %{{.*}} : tensor<98x4608xf32>, tensor<4608x512xf32>)
# GENERIC-NOT: linalg.conv_2d_nhwc_hwcf
# (AVX2 code reads the transformed filter as 64-column panels: gemm_config.winograd_b_panel.)
# GENERIC: linalg.generic {{.*}}"reduction"]} ins(%{{.*}}, %{{.*}} : tensor<36x32x512xf32>, tensor<36x8x512x64xf32>)
# CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x7x7x512x3x3xf32>)
# CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1, 2], [3]] : tensor<512x3x3x512xf32> into tensor<4608x512xf32>
# CHECK: linalg.matmul {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<49x4608xf32>, tensor<4608x512xf32>)
# CHECK-NOT: linalg.transpose
