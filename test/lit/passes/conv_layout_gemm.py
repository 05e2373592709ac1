# RUN: %python %s > %t.json
# RUN: %fusilli-opt %t.json --backend cpu --arch znver4 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,AVX512
# RUN: %fusilli-opt %t.json --backend cpu --arch x86-64-v3 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,AVX2
# RUN: %fusilli-opt %t.json --backend cpu --arch x86-64 --pass-pipeline=default | filecheck %s --check-prefix=GENERIC

# cpu-conv-im2col-gemm (fusilli/passes/conv_layout.py): on AVX2 and AVX-512 a
# 1x1 conv with >= 512 GEMM rows and a 3x3 stride-2 conv with >= 4096 rows (here
# 20480, its 5120 2x2 tiles too many for the phases' Winograd: 49 MB transformed) become
# an f32 linalg.matmul of the im2col patches (a reshape for the 1x1; for the
# strided conv one all-parallel generic reading the unpadded input through
# clamped tensor.extract, taps in the padding zeroed) and the HWCF filter,
# materialized behind iree_tensor_ext.compute_barrier.start, carrying the ISA's
# compilation_info (fusilli/passes/gemm_config.py). The bias + relu epilogue
# follows as an elementwise consumer (fusilli-epilogue-fusion's
# generic). Without a tuned ISA (x86-64) they keep
# IREE's path: a matmul and a linalg conv, no compilation_info. A strided 1x1 conv (Wo = 32)
# reads its rows as a view of the input on AMD's AVX-512 cores (gemm_config.STRIDED_ROWS_VIEW_TARGETS).

import fusilli as fs

g = fs.Graph(name="conv_gemm")
n, c, h, w, k = 20, 64, 64, 64, 32
x = g.tensor(name="x", dim=[n, c, h, w], stride=fs.strides([n, c, h, w], "NHWC"))
w1 = g.tensor(name="w1", dim=[k, c, 1, 1], stride=fs.strides([k, c, 1, 1], "NHWC"))
w3 = g.tensor(name="w3", dim=[k, c, 3, 3], stride=fs.strides([k, c, 3, 3], "NHWC"))
b = g.tensor(name="b", dim=[1, k, 1, 1], stride=fs.strides([1, k, 1, 1], "NHWC"))
y1 = g.conv_fprop(x, w1, padding=[0, 0], stride=[1, 1], dilation=[1, 1], name="conv1x1")
y1 = g.relu(g.add(y1, b, name="bias1"), name="relu1")
y1.set_output(True).set_name("y1")
y3 = g.conv_fprop(x, w3, padding=[1, 1], stride=[2, 2], dilation=[1, 1], name="conv3x3s2")
y3.set_output(True).set_name("y3")
y2 = g.conv_fprop(x, w1, padding=[0, 0], stride=[2, 2], dilation=[1, 1], name="conv1x1s2")
y2.set_output(True).set_name("y2")
print(g.to_json())

# The ISA's config: AVX-512 8x32 in 64-row workgroups, K in cache blocks of 256 for the strided
# conv's 576-deep GEMM (from depth 512); AVX2 6x16 in 48-row ones, K whole below 2048 deep
# (gemm_config.CONV_WHOLE_K_BELOW), so its strided conv takes the 1x1's config.
# AVX512-DAG: #[[CFG:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_parallel = [64, 32, 0], distribution = [64, 32, 0], vector_common_parallel = [8, 32, 0], vector_reduction = [0, 0, 8]>
# AVX2-DAG: #[[CFG:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_parallel = [48, 32, 0], distribution = [48, 32, 0], vector_common_parallel = [6, 16, 0], vector_reduction = [0, 0, 8]>
# AVX512-DAG: #[[CFG_DEEP:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_parallel = [64, 32, 0], cache_reduction = [0, 0, 256], distribution = [64, 32, 0], vector_common_parallel = [8, 32, 0], vector_reduction = [0, 0, 8]>
# AVX512-DAG: #[[CFG_ROWS:[a-z0-9]+]] = #iree_cpu.lowering_config<distribution = [2, 32, 32, 0], vector_common_parallel = [1, 8, 32, 0], vector_reduction = [0, 0, 0, 8]>
# CHECK-DAG: #[[TRANSLATION:.*]] = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>, {enable_loop_peeling}>
# CHECK-DAG: #[[INFO:[a-z0-9]+]] = #iree_codegen.compilation_info<lowering_config = #[[CFG]], translation_info = #[[TRANSLATION]]>
# AVX512-DAG: #[[INFO_ROWS:[a-z0-9]+]] = #iree_codegen.compilation_info<lowering_config = #[[CFG_ROWS]], translation_info = #[[TRANSLATION]]>
# AVX512-DAG: #[[INFO_DEEP:[a-z0-9]+]] = #iree_codegen.compilation_info<lowering_config = #[[CFG_DEEP]], translation_info = #[[TRANSLATION]]>
# CHECK-LABEL: func.func @main(
# The 1x1 conv: the input reshaped, the filter's [K, R*S*C] matrix transposed behind the barrier
# (its HWCF copy kept), the GEMM, the epilogue.
# CHECK: %[[X1:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1, 2], [3]] : tensor<20x64x64x64xf32> into tensor<81920x64xf32>
# CHECK: %[[W1K:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2, 3]] : tensor<32x1x1x64xf32> into tensor<32x64xf32>
# CHECK: %[[W1:.*]] = linalg.transpose ins(%[[W1K]] : tensor<32x64xf32>) outs(%{{.*}} : tensor<64x32xf32>) permutation = [1, 0]
# CHECK: %[[W1B:.*]] = iree_tensor_ext.compute_barrier.start %[[W1]] : tensor<64x32xf32>
# CHECK: linalg.matmul {compilation_info = #[[INFO]]} ins(%[[X1]], %[[W1B]] : tensor<81920x64xf32>, tensor<64x32xf32>) outs(%{{.*}} : tensor<81920x32xf32>)
# CHECK: linalg.generic
# CHECK: arith.addf
# CHECK: arith.maximumf
# The strided conv: patches gathered through the padding, no tensor.pad.
# CHECK-NOT: tensor.pad
# CHECK: %[[P:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<20x32x32x3x3x64xf32>)
# CHECK: arith.cmpi ult
# CHECK: tensor.extract
# CHECK: arith.select
# CHECK: %[[P2:.*]] = tensor.collapse_shape %[[P]] {{\[}}[0, 1, 2], [3, 4, 5]] : tensor<20x32x32x3x3x64xf32> into tensor<20480x576xf32>
# CHECK: %[[W3K:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2, 3]] : tensor<32x3x3x64xf32> into tensor<32x576xf32>
# CHECK: %[[W3:.*]] = linalg.transpose ins(%[[W3K]] : tensor<32x576xf32>) outs(%{{.*}} : tensor<576x32xf32>) permutation = [1, 0]
# CHECK: %[[W3B:.*]] = iree_tensor_ext.compute_barrier.start %[[W3]] : tensor<576x32xf32>
# AVX512: linalg.matmul {compilation_info = #[[INFO_DEEP]]} ins(%[[P2]], %[[W3B]] : tensor<20480x576xf32>, tensor<576x32xf32>)
# AVX2: linalg.matmul {compilation_info = #[[INFO]]} ins(%[[P2]], %[[W3B]] : tensor<20480x576xf32>, tensor<576x32xf32>)
# The strided 1x1 conv on AMD AVX-512: its rows a slice of the input split by the stride (no gather),
# the GEMM's rows two loops (N*Ho, Wo) of a linalg.generic (gemm_config.strided_rows_compilation_info:
# two rows of Wo = 32 per 64-row workgroup, 8 of them in the register tile); on AVX2 the gather.
# AVX512: %[[XR:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2, 3], [4]] output_shape [640, 2, 32, 2, 64] : tensor<1280x64x64xf32> into tensor<640x2x32x2x64xf32>
# AVX512: %[[XS:.*]] = tensor.extract_slice %[[XR]][0, 0, 0, 0, 0] [640, 1, 32, 1, 64] [1, 1, 1, 1, 1] : tensor<640x2x32x2x64xf32> to tensor<640x32x64xf32>
# AVX512: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]{{.*}} ins(%[[XS]], %{{.*}} : tensor<640x32x64xf32>, tensor<64x32xf32>) outs(%{{.*}} : tensor<640x32x32xf32>) attrs =  {compilation_info = #[[INFO_ROWS]]}
# AVX512: arith.mulf
# AVX512: arith.addf
# AVX2: %[[P1:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<20x32x32x1x1x64xf32>)
# AVX2: linalg.matmul {compilation_info = #[[INFO]]} ins(%{{.*}}, %{{.*}} : tensor<20480x64xf32>, tensor<64x32xf32>)
# CHECK-NOT: torch.aten.convolution
# CHECK-NOT: linalg.conv_2d

# GENERIC-NOT: compilation_info
# GENERIC-LABEL: func.func @main(
# GENERIC: torch.aten.mm
# GENERIC: linalg.conv_2d_nhwc_hwcf
# GENERIC-NOT: compilation_info
