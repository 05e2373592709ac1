# RUN: env FUSILLI_CONV_LOWERING=winograd FUSILLI_CPU_ARCH=sapphirerapids %python %s | filecheck %s --check-prefixes=CHECK,INTEL
# RUN: env FUSILLI_CONV_LOWERING=winograd FUSILLI_CPU_ARCH=x86-64-v3 %python %s | filecheck %s --check-prefixes=CHECK,AVX2
# RUN: env FUSILLI_CONV_LOWERING=winograd FUSILLI_CPU_ARCH=generic %python %s | filecheck %s --check-prefixes=CHECK,GENERIC
# RUN: env FUSILLI_CONV_LOWERING=winograd %python %s stats | filecheck %s --check-prefix=STATS

# Weight gradient of a channels-last 3x3 stride-1 conv by Winograd F(3x3, 4x4)
# (fusilli/passes/winograd.py): X 1x8x8x8 (pad 1), DY 1x8x8x16 -> DW 16x8x3x3.
# DY is cut into 2x2 tiles of 4x4; each pairs with the 6x6 input tile starting
# at the same (padded) position. One case per stage of the optimized module.

import sys

from lit_helpers import print_stats, run

import fusilli as fs


def build():
    g = fs.Graph(name="wgrad_winograd_nhwc")
    n, c, h, w, k = 1, 8, 8, 8, 16
    dy = g.tensor(name="dy", dim=[n, k, h, w], stride=fs.strides([n, k, h, w], "NHWC"))
    x = g.tensor(name="x", dim=[n, c, h, w], stride=fs.strides([n, c, h, w], "NHWC"))
    dw = g.conv_wgrad(dy, x, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="wgrad")
    dw.set_dim([k, c, 3, 3]).set_output(True).set_name("dw")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "stats":
    # X rows, X columns, DY rows, DY columns, the GEMM, output rows, output columns
    # (writing the KRSC gradient: the final permute fuses into it).
    @run
    def stats_wgrad_winograd():
        print_stats(build())

    # STATS-LABEL: TEST: stats_wgrad_winograd
    # STATS: dispatch-count: 7
    sys.exit(0)


@run
def wgrad_winograd():
    print(build().mlir("optimized"))


# CHECK-LABEL: TEST: wgrad_winograd
# The GEMM's lowering config, printed as an alias first (see the GEMM below):
# INTEL: #iree_cpu.lowering_config<cache_parallel = [1, 16, 8, 0], distribution = [1, 16, 8, 0], vector_common_parallel = [1, 8, 8, 0], vector_reduction = [0, 0, 0, 4]>
# On AVX2 the weight gradient keeps the 4x16 tile (gemm_config.WINOGRAD_WGRAD_GEMM_TILES), not
# the forward GEMMs' 6x16.
# AVX2: #iree_cpu.lowering_config<cache_parallel = [1, 16, 8, 0], distribution = [1, 16, 8, 0], vector_common_parallel = [1, 4, 8, 0], vector_reduction = [0, 0, 0, 4]>
# GENERIC-NOT: lowering_config
# CHECK-DAG: #[[BMK:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1)>
# CHECK-DAG: #[[BKN:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
# CHECK-DAG: #[[BMN:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
# CHECK-NOT: convolution_backward
#
# CHECK-DAG: %[[XB:.*]] = torch_c.to_builtin_tensor %{{.*}} : !torch.vtensor<[1,8,8,8],f32> -> tensor<1x8x8x8xf32>
# CHECK-DAG: %[[DYB:.*]] = torch_c.to_builtin_tensor %{{.*}} : !torch.vtensor<[1,8,8,16],f32> -> tensor<1x8x8x16xf32>
# X tiles (6x6, stride 4, padding folded into clamped, masked reads), B^T of F(3, 4):
# CHECK: %[[XR:.*]] = linalg.generic
# CHECK-SAME: outs(%{{.*}} : tensor<1x2x10x6x8xf32>)
# CHECK: tensor.extract %[[XB]]
# CHECK: arith.select
# CHECK: tensor.extract_slice %[[XR]][0, 0, 5, 0, 0] [1, 2, 2, 6, 8] [1, 1, 4, 1, 1]
# CHECK: %[[XC:.*]] = linalg.generic
# CHECK-SAME: outs(%{{.*}} : tensor<6x6x1x2x2x8xf32>)
# CHECK: %[[V:.*]] = tensor.collapse_shape %[[XC]] {{\[}}[0, 1], [2, 3, 4], [5]] : tensor<6x6x1x2x2x8xf32> into tensor<36x4x8xf32>
#
# DY tiles (4x4, no overlap, nothing out of bounds here: no masks), G of F(3, 4):
# CHECK: %[[DR:.*]] = linalg.generic
# CHECK-SAME: outs(%{{.*}} : tensor<1x2x8x6x16xf32>)
# CHECK: tensor.extract %[[DYB]]
# CHECK-NOT: arith.select
# CHECK: tensor.extract_slice %[[DR]][0, 0, 3, 0, 0] [1, 2, 2, 6, 16] [1, 1, 4, 1, 1]
# CHECK: %[[DC:.*]] = linalg.generic
# CHECK-SAME: outs(%{{.*}} : tensor<6x6x1x2x2x16xf32>)
# CHECK: %[[D:.*]] = tensor.collapse_shape %[[DC]] {{\[}}[0, 1], [2, 3, 4], [5]] : tensor<6x6x1x2x2x16xf32> into tensor<36x4x16xf32>
#
# The tiles are summed in the transformed domain: M[36, K, C] = D^T V (K rows, C columns, so
# the output transform writes KRSC with C innermost), a GEMM with the wgrad GEMM's lowering
# config (above: the ISA's 8x32 register tile in 64x64 workgroups on AVX-512, Intel's too, clamped to
# K x C = 16 x 8 and 4 tiles deep here; 4x16 on AVX2; IREE's own choice on a generic CPU).
# AVX2: %[[M:.*]] = linalg.batch_matmul indexing_maps = [#[[BMK]], #[[BKN]], #[[BMN]]] {compilation_info = #{{.*}}} ins(%[[D]], %[[V]] : tensor<36x4x16xf32>, tensor<36x4x8xf32>) outs(%{{.*}} : tensor<36x16x8xf32>)
# INTEL: %[[M:.*]] = linalg.batch_matmul indexing_maps = [#[[BMK]], #[[BKN]], #[[BMN]]] {compilation_info = #{{.*}}} ins(%[[D]], %[[V]] : tensor<36x4x16xf32>, tensor<36x4x8xf32>) outs(%{{.*}} : tensor<36x16x8xf32>)
# GENERIC: %[[M:.*]] = linalg.batch_matmul indexing_maps = [#[[BMK]], #[[BKN]], #[[BMN]]] ins(%[[D]], %[[V]] : tensor<36x4x16xf32>, tensor<36x4x8xf32>) outs(%{{.*}} : tensor<36x16x8xf32>)
#
# Output transform (A^T of F(3, 4)) straight to the KRSC gradient the graph asks for (no permute):
# CHECK: %[[M6:.*]] = tensor.expand_shape %[[M]] {{\[}}[0, 1], [2], [3]] output_shape [6, 6, 16, 8]
# CHECK: %[[O1:.*]] = linalg.generic
# CHECK-SAME: outs(%{{.*}} : tensor<3x6x16x8xf32>)
# CHECK: %[[O2:.*]] = linalg.generic
# CHECK-SAME: outs(%{{.*}} : tensor<16x3x3x8xf32>)
# CHECK: %[[DW:.*]] = torch_c.from_builtin_tensor %[[O2]] : tensor<16x3x3x8xf32> -> !torch.vtensor<[16,3,3,8],f32>
# CHECK-NOT: torch.aten.permute
# CHECK: torch.overwrite.tensor.contents %[[DW]] overwrites
