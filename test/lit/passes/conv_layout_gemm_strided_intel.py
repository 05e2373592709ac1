# RUN: %python %s > %t.json
# RUN: %fusilli-opt %t.json --backend cpu --arch sapphirerapids --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,INTEL
# RUN: %fusilli-opt %t.json --backend cpu --arch znver4 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,AMD

# A stride-2 3x3 conv's GEMM reads its patch matrix (R*S*C deep) once per column of
# workgroups. On an Intel AVX-512 core a conv with >= 128 output channels gets wide
# workgroups (24 rows x 256 channels, gemm_config.STRIDED_PATCH_GEMM_TILES_BY_VENDOR)
# and cpu-conv-im2col-gemm takes it from 192 GEMM rows: 1x256x28x28->256 (196 rows)
# is an explicit-config GEMM there, with the padded strided gather as its A operand.
# A 1x1 stride-2 conv (A only C deep) keeps the 60x64 workgroups. On AMD Zen 4 the 3x3
# one is an explicit-config GEMM too, from 16 rows where it is >= 512 deep (its 8x32 tile, K in
# blocks of 256: rules.CPU_CONV_GEMM_MIN_ROWS_DEEP_STRIDED_FEW), its 196 rows in 4 workgroups of
# 49, not 3 x 64 and a masked 4 past the patch matrix (gemm_config.patch_matrix_rows), and so
# for the 1152-deep one too, whose K blocks no longer need to divide K (gemm_config.k_block).

import fusilli as fs


def conv(g, name, c, h, k, r, pad):
    x = g.tensor(name=f"{name}_x", dim=[1, c, h, h], stride=fs.strides([1, c, h, h], "NHWC"))
    wt = g.tensor(name=f"{name}_w", dim=[k, c, r, r], stride=fs.strides([k, c, r, r], "NHWC"))
    y = g.conv_fprop(x, wt, padding=[pad, pad], stride=[2, 2], dilation=[1, 1], name=name)
    y.set_output(True).set_name(f"{name}_y")


g = fs.Graph(name="conv_gemm_strided")
conv(g, "conv3x3", 256, 28, 256, 3, 1)
conv(g, "conv1x1", 256, 56, 512, 1, 0)
conv(g, "conv3x3_c128", 128, 28, 256, 3, 1)
print(g.to_json())

# INTEL-DAG: #[[WIDE:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_parallel = [24, 256, 0], cache_reduction = [0, 0, 256], distribution = [24, 256, 0], vector_common_parallel = [6, 64, 0], vector_reduction = [0, 0, 8]>
# INTEL-DAG: #[[NARROW:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_parallel = [60, 64, 0], distribution = [60, 64, 0], vector_common_parallel = [6, 64, 0], vector_reduction = [0, 0, 8]>
# INTEL-DAG: #[[WIDE_INFO:[a-z0-9]+]] = #iree_codegen.compilation_info<lowering_config = #[[WIDE]],
# INTEL-DAG: #[[NARROW_INFO:[a-z0-9]+]] = #iree_codegen.compilation_info<lowering_config = #[[NARROW]],
# AMD-DAG: #[[KBLOCKED:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_parallel = [49, 64, 0], cache_reduction = [0, 0, 256], distribution = [49, 64, 0], vector_common_parallel = [8, 32, 0], vector_reduction = [0, 0, 8]>
# AMD-DAG: #[[KBLOCKED_INFO:[a-z0-9]+]] = #iree_codegen.compilation_info<lowering_config = #[[KBLOCKED]],
# CHECK-LABEL: func.func @main(
# INTEL: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x14x14x3x3x256xf32>)
# INTEL: linalg.matmul {compilation_info = #[[WIDE_INFO]]} ins(%{{.*}}, %{{.*}} : tensor<196x2304xf32>, tensor<2304x256xf32>)
# INTEL: linalg.matmul {compilation_info = #[[NARROW_INFO]]} ins(%{{.*}}, %{{.*}} : tensor<784x256xf32>, tensor<256x512xf32>)
# INTEL: linalg.matmul {compilation_info = #[[WIDE_INFO]]} ins(%{{.*}}, %{{.*}} : tensor<196x1152xf32>, tensor<1152x256xf32>)
# INTEL-NOT: linalg.conv_2d_nhwc_hwcf
# AMD: linalg.matmul {compilation_info = #[[KBLOCKED_INFO]]} ins(%{{.*}}, %{{.*}} : tensor<196x2304xf32>, tensor<2304x256xf32>)
# AMD: linalg.matmul {compilation_info = #[[KBLOCKED_INFO]]} ins(%{{.*}}, %{{.*}} : tensor<196x1152xf32>, tensor<1152x256xf32>)
# AMD-NOT: linalg.conv_2d_nhwc_hwcf
