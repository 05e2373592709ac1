# RUN: %python %s > %t.json
# RUN: %fusilli-opt %t.json --backend cpu --arch sapphirerapids --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,AVX512
# RUN: %fusilli-opt %t.json --backend cpu --arch haswell --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,AVX2,AVX2_8X8
# RUN: %fusilli-opt %t.json --backend cpu --arch znver4 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,AVX512
# RUN: %fusilli-opt %t.json --backend cpu --arch znver3 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,AVX2,ZEN
# RUN: %fusilli-opt %t.json --backend cpu --arch x86-64-v3 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,AVX2,AVX2_8X8
# RUN: %fusilli-opt %t.json --backend cpu --arch x86-64-v4 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,GENERIC

# The 7x7 stride-2 stem (3 input channels) on an Intel or AMD CPU (cpu-conv-direct-few-channels):
# a direct linalg.conv_2d_nhwc_hwcf over the padded input and the HWCF filter, that filter
# behind an optimization barrier (its own small dispatch: folded into the conv, its transposed
# read is 30x slower), with the ISA's register tile (gemm_config.DIRECT_CONV_TILES_BY_VENDOR)
# and bias + relu after it (AMD's AVX2 cores, znver3 here: 4 output columns x 16 channels;
# other AVX2 cores 8 x 8). No patch matrix. AVX2 code for no named CPU (x86-64-v3) takes the
# AVX2 tile; the vendor-free AVX-512 level (x86-64-v4: no tile measured for it) keeps the im2col
# GEMM, and the first layer IREE's linalg conv. A batch of one runs as two images, bands of the
# output's rows and of the padded input rows each reads (IREE folding a unit batch away would drop
# the config), reshaped back; the stem's 56-row bands take 7-row workgroups, 32 of them, which
# split evenly over a two-worker pool (8-row ones would be 28: gemm_config.pool_share).

import fusilli as fs

g = fs.Graph(name="conv_direct_stem")
x = g.tensor(name="x", dim=[1, 3, 224, 224], stride=fs.strides([1, 3, 224, 224], "NHWC"))
w = g.tensor(name="w", dim=[64, 3, 7, 7], stride=fs.strides([64, 3, 7, 7], "NHWC"))
bias = g.tensor(name="b", dim=[1, 64, 1, 1], stride=[64, 1, 64, 64])
y = g.conv_fprop(x, w, padding=[3, 3], stride=[2, 2], dilation=[1, 1], name="stem")
y = g.pointwise(y, bias, mode=fs.PointwiseMode.ADD, name="stem_bias")
y = g.pointwise(y, mode=fs.PointwiseMode.RELU_FWD, name="stem_relu")
y.set_output(True).set_name("y")
# A first layer: 3x3 stride 1 on 3 channels, direct there too (Winograd's GEMM would be 3 deep).
x1 = g.tensor(name="x1", dim=[1, 3, 64, 64], stride=fs.strides([1, 3, 64, 64], "NHWC"))
w1 = g.tensor(name="w1", dim=[32, 3, 3, 3], stride=fs.strides([32, 3, 3, 3], "NHWC"))
first = g.conv_fprop(x1, w1, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="first")
first.set_output(True).set_name("y1")
print(g.to_json())

# GENERIC-NOT: ConvTileAndDecomposeExpert
# AVX512-DAG: #[[CONFIG:[a-z0-9]+]] = #iree_cpu.lowering_config<distribution = [1, 7, 56, 64, 0, 0, 0], vector_common_parallel = [1, 1, 8, 32, 0, 0, 0], vector_reduction = [0, 0, 0, 0, 1, 1, 3]>
# AVX512-DAG: #[[CONFIG1:[a-z0-9]+]] = #iree_cpu.lowering_config<distribution = [1, 8, 32, 32, 0, 0, 0], vector_common_parallel = [1, 1, 8, 32, 0, 0, 0], vector_reduction = [0, 0, 0, 0, 1, 1, 3]>
# AVX2_8X8-DAG: #[[CONFIG:[a-z0-9]+]] = #iree_cpu.lowering_config<distribution = [1, 7, 56, 64, 0, 0, 0], vector_common_parallel = [1, 1, 8, 8, 0, 0, 0], vector_reduction = [0, 0, 0, 0, 1, 1, 3]>
# AVX2_8X8-DAG: #[[CONFIG1:[a-z0-9]+]] = #iree_cpu.lowering_config<distribution = [1, 8, 32, 32, 0, 0, 0], vector_common_parallel = [1, 1, 8, 8, 0, 0, 0], vector_reduction = [0, 0, 0, 0, 1, 1, 3]>
# ZEN-DAG: #[[CONFIG:[a-z0-9]+]] = #iree_cpu.lowering_config<distribution = [1, 7, 56, 64, 0, 0, 0], vector_common_parallel = [1, 1, 4, 16, 0, 0, 0], vector_reduction = [0, 0, 0, 0, 1, 1, 3]>
# ZEN-DAG: #[[CONFIG1:[a-z0-9]+]] = #iree_cpu.lowering_config<distribution = [1, 8, 32, 32, 0, 0, 0], vector_common_parallel = [1, 1, 4, 16, 0, 0, 0], vector_reduction = [0, 0, 0, 0, 1, 1, 3]>
# AVX512-DAG: #[[TRANSLATION:[a-z0-9]+]] = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<ConvTileAndDecomposeExpert>>
# AVX2-DAG: #[[TRANSLATION:[a-z0-9]+]] = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<ConvTileAndDecomposeExpert>>
# AVX512-DAG: #[[INFO:[a-z0-9]+]] = #iree_codegen.compilation_info<lowering_config = #[[CONFIG]], translation_info = #[[TRANSLATION]]>
# AVX2-DAG: #[[INFO:[a-z0-9]+]] = #iree_codegen.compilation_info<lowering_config = #[[CONFIG]], translation_info = #[[TRANSLATION]]>
# AVX512-DAG: #[[INFO1:[a-z0-9]+]] = #iree_codegen.compilation_info<lowering_config = #[[CONFIG1]], translation_info = #[[TRANSLATION]]>
# AVX2-DAG: #[[INFO1:[a-z0-9]+]] = #iree_codegen.compilation_info<lowering_config = #[[CONFIG1]], translation_info = #[[TRANSLATION]]>
# CHECK-LABEL: func.func @main(
# AVX512: %[[FILTER:.+]] = iree_tensor_ext.compute_barrier.start %{{.*}} : tensor<7x7x3x64xf32>
# AVX512: %[[PADDED:.+]] = tensor.pad %{{.*}} low[0, 3, 3, 0] high[0, 3, 3, 0]
# AVX512: %[[TOP:.+]] = tensor.extract_slice %[[PADDED]][0, 0, 0, 0] [1, 117, 230, 3] [1, 1, 1, 1]
# AVX512: %[[BANDS0:.+]] = tensor.insert_slice %[[TOP]] into %{{.*}}[0, 0, 0, 0] [1, 117, 230, 3] [1, 1, 1, 1] : tensor<1x117x230x3xf32> into tensor<2x117x230x3xf32>
# AVX512: %[[BOTTOM:.+]] = tensor.extract_slice %[[PADDED]][0, 112, 0, 0] [1, 117, 230, 3] [1, 1, 1, 1]
# AVX512: %[[BANDS:.+]] = tensor.insert_slice %[[BOTTOM]] into %[[BANDS0]][1, 0, 0, 0] [1, 117, 230, 3] [1, 1, 1, 1]
# AVX512: %[[CONV:.+]] = linalg.conv_2d_nhwc_hwcf {compilation_info = #[[INFO]], {{.*}}strides = dense<2> : tensor<2xi64>} ins(%[[BANDS]], %[[FILTER]] : tensor<2x117x230x3xf32>, tensor<7x7x3x64xf32>) outs(%{{.*}} : tensor<2x56x112x64xf32>)
# AVX512: %[[ROWS:.+]] = tensor.collapse_shape %[[CONV]] {{\[\[}}0, 1], [2], [3]] : tensor<2x56x112x64xf32> into tensor<112x112x64xf32>
# AVX512: tensor.expand_shape %[[ROWS]] {{\[\[}}0, 1], [2], [3]] output_shape [1, 112, 112, 64]
# AVX2: iree_tensor_ext.compute_barrier.start %{{.*}} : tensor<7x7x3x64xf32>
# AVX2: linalg.conv_2d_nhwc_hwcf {compilation_info = #[[INFO]], {{.*}} : tensor<2x117x230x3xf32>, tensor<7x7x3x64xf32>) outs(%{{.*}} : tensor<2x56x112x64xf32>)
# AVX512: iree_tensor_ext.compute_barrier.start %{{.*}} : tensor<3x3x3x32xf32>
# AVX512: linalg.conv_2d_nhwc_hwcf {compilation_info = #[[INFO1]], {{.*}}strides = dense<1> : tensor<2xi64>} ins(%{{.*}}, %{{.*}} : tensor<2x34x66x3xf32>, tensor<3x3x3x32xf32>) outs(%{{.*}} : tensor<2x32x64x32xf32>)
# AVX2: linalg.conv_2d_nhwc_hwcf {compilation_info = #[[INFO1]], {{.*}} : tensor<2x34x66x3xf32>, tensor<3x3x3x32xf32>) outs(%{{.*}} : tensor<2x32x64x32xf32>)
# AVX512-NOT: linalg.batch_matmul
# GENERIC: linalg.matmul {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<12544x147xf32>, tensor<147x64xf32>)
# GENERIC: linalg.conv_2d_nhwc_hwcf {dilations
# CHECK-NOT: tensor<12544x147xf32>
