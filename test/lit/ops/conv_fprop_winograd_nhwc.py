# RUN: env FUSILLI_CONV_LOWERING=winograd4 FUSILLI_CPU_ARCH=x86-64-v3 %python %s | filecheck %s --check-prefixes=CHECK,AVX2
# RUN: env FUSILLI_CONV_LOWERING=winograd4 FUSILLI_CPU_ARCH=znver4 %python %s | filecheck %s --check-prefixes=CHECK,AVX512
# RUN: env FUSILLI_CONV_LOWERING=winograd4 FUSILLI_CPU_ARCH=sapphirerapids %python %s | filecheck %s --check-prefixes=CHECK,INTEL
# RUN: env FUSILLI_CONV_LOWERING=winograd4 FUSILLI_CPU_ARCH=generic %python %s | filecheck %s --check-prefixes=CHECK,GENERIC
# RUN: env FUSILLI_CONV_LOWERING=winograd4 %python %s stats | filecheck %s --check-prefix=STATS

# Winograd F(4x4, 3x3) of a channels-last 3x3 conv + bias + relu
# (fusilli/passes/winograd.py), 1x8x8x8 -> 16, pad 1: 2x2 tiles of 4x4 outputs,
# 6x6 input tiles over the (virtually) padded 10-wide input. One case per stage
# of the optimized module; the GEMM's lowering config depends on the target ISA.

import sys

from lit_helpers import print_stats, run

import fusilli as fs


def build(epilogue=True, hw=16):
    g = fs.Graph(name=f"winograd_nhwc_{int(epilogue)}_{hw}")
    n, c, h, w, k = 1, 8, hw, hw, 32
    x = g.tensor(name="x", dim=[n, c, h, w], stride=fs.strides([n, c, h, w], "NHWC"))
    wt = g.tensor(name="w", dim=[k, c, 3, 3], stride=fs.strides([k, c, 3, 3], "NHWC"))
    y = g.conv_fprop(x, wt, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv")
    if epilogue:
        b = g.tensor(name="b", dim=[1, k, 1, 1], stride=fs.strides([1, k, 1, 1], "NHWC"))
        y = g.relu(g.add(y, b, name="bias"), name="relu")
    y.set_output(True).set_name("y")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "stats":
    # The bias + relu epilogue runs inside the output transform's dispatch.
    @run
    def stats_conv():
        print_stats(build(epilogue=False))

    # Six dispatches: the filter's HWCF transpose, the filter transform, the input
    # transform, the GEMM, the output transform's rows and columns.
    # STATS-LABEL: TEST: stats_conv
    # STATS: dispatch-count: [[N:6]]

    @run
    def stats_conv_bias_relu():
        print_stats(build(epilogue=True))

    # STATS-LABEL: TEST: stats_conv_bias_relu
    # STATS: dispatch-count: [[N]]

    # 14x14 outputs in 4x4 tiles (16x16, cropped): the columns stage writes the cropped
    # result itself, so the crop is no copy and bias + relu still fuse.
    @run
    def stats_cropped_conv():
        print_stats(build(epilogue=False, hw=14))

    # STATS-LABEL: TEST: stats_cropped_conv
    # STATS: dispatch-count: [[N]]

    @run
    def stats_cropped_conv_bias_relu():
        print_stats(build(epilogue=True, hw=14))

    # STATS-LABEL: TEST: stats_cropped_conv_bias_relu
    # STATS: dispatch-count: [[N]]
    sys.exit(0)


@run
def winograd_conv_bias_relu():
    print(build().mlir("optimized"))


# CHECK-LABEL: TEST: winograd_conv_bias_relu
# The GEMM's lowering config (printed as an alias first): a 6x16 register tile on AVX2,
# 8x32 on AVX-512 (also on Intel AVX-512 cores for a GEMM of 16 rows like this one: their
# 6x64 tile starts at 512 rows), IREE's own choice elsewhere.
# AVX2: #iree_cpu.lowering_config<cache_parallel = [1, 16, 32, 0], distribution = [1, 16, 32, 0], vector_common_parallel = [1, 6, 16, 0], vector_reduction = [0, 0, 0, 8]>
# AVX512: #iree_cpu.lowering_config<cache_parallel = [1, 16, 32, 0], distribution = [1, 16, 32, 0], vector_common_parallel = [1, 8, 32, 0], vector_reduction = [0, 0, 0, 8]>
# INTEL: #iree_cpu.lowering_config<cache_parallel = [1, 16, 32, 0], distribution = [1, 16, 32, 0], vector_common_parallel = [1, 8, 32, 0], vector_reduction = [0, 0, 0, 8]>
# GENERIC-NOT: lowering_config
# CHECK-DAG: #[[FTAP:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
# CHECK-DAG: #[[FCOL:.*]] = affine_map<(d0, d1, d2) -> (d0)>
# CHECK-DAG: #[[FOUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
# CHECK-DAG: #[[COEF5:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d3)>
# CHECK-DAG: #[[TH:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1)>
# CHECK-DAG: #[[TW:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d2)>
# CHECK-DAG: #[[VOUT:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d3, d0, d1, d2, d4)>
# CHECK-DAG: #[[NHWC:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
# CHECK-DAG: #[[OX:.*]] = affine_map<(d0, d1, d2, d3) -> (d2)>
# CHECK-DAG: #[[BIAS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, 0, 0)>
# CHECK-NOT: torch.aten.convolution
# CHECK-NOT: linalg.conv_2d
#
# Filter transform in one generic over (b, c, k): the nine [C, K] taps of the HWCF filter,
# G's columns read along b, one [6, C, K] result per row of G (its entries constants),
# concatenated:
# CHECK: %[[HWCF:.*]] = torch_c.to_builtin_tensor %{{.*}} : !torch.vtensor<[3,3,8,32],f32> -> tensor<3x3x8x32xf32>
# CHECK: tensor.extract_slice %[[HWCF]][2, 2, 0, 0] [1, 1, 8, 32] [1, 1, 1, 1] : tensor<3x3x8x32xf32> to tensor<8x32xf32>
# CHECK: arith.constant dense<[2.500000e-01, -0.166666672, -0.166666672, 0.0416666679, 0.0416666679, 0.000000e+00]> : tensor<6xf32>
# CHECK: %[[F:.*]]:6 = linalg.generic {indexing_maps = [#[[FTAP]], #[[FTAP]], #[[FTAP]], #[[FTAP]], #[[FTAP]], #[[FTAP]], #[[FTAP]], #[[FTAP]], #[[FTAP]], #[[FCOL]], #[[FCOL]], #[[FCOL]], #[[FOUT]], #[[FOUT]], #[[FOUT]], #[[FOUT]], #[[FOUT]], #[[FOUT]]]
# CHECK-SAME: outs({{.*}} : tensor<6x8x32xf32>, tensor<6x8x32xf32>, tensor<6x8x32xf32>, tensor<6x8x32xf32>, tensor<6x8x32xf32>, tensor<6x8x32xf32>)
# CHECK: math.fma
# Row a = 0 of G is [1/4, 0, 0]: one multiply by a constant.
# CHECK: %[[G00:.*]] = arith.constant 2.500000e-01 : f32
# CHECK-NEXT: arith.mulf %[[G00]], %{{.*}} : f32
# CHECK: linalg.yield
# CHECK: tensor.expand_shape %[[F]]#5 {{\[}}[0, 1], [2], [3]] output_shape [1, 6, 8, 32]
# CHECK: %[[FC:.*]] = tensor.concat dim(0)
# CHECK-SAME: -> tensor<6x6x8x32xf32>
# CHECK: %[[U:.*]] = tensor.collapse_shape %[[FC]] {{\[}}[0, 1], [2], [3]] : tensor<6x6x8x32xf32> into tensor<36x8x32xf32>
#
# Input transform in one generic over (n, th, tw, b, c) (b right outside the channels),
# B^T's columns read along b, one [6, N, TH, TW, C] result per row of B^T; clamped reads
# of the unpadded input, the taps in the padding zeroed by 1-D masks over tile rows and
# tile columns, only for tap rows (columns) that reach outside the input (the first and
# the last of the six here; the middle four have no mask and no select):
# CHECK: arith.constant dense<[4.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]> : tensor<6xf32>
# CHECK: arith.constant dense<[false, true, true, true]> : tensor<4xi1>
# CHECK-NEXT: arith.constant dense<[true, true, true, false]> : tensor<4xi1>
# CHECK-NEXT: arith.constant dense<[false, true, true, true]> : tensor<4xi1>
# CHECK-NEXT: arith.constant dense<[true, true, true, false]> : tensor<4xi1>
# CHECK-NOT: tensor<4xi1>
# CHECK: %[[I:.*]]:6 = linalg.generic {indexing_maps = [#[[COEF5]], #[[COEF5]], #[[COEF5]], #[[COEF5]], #[[COEF5]], #[[COEF5]], #[[TH]], #[[TH]], #[[TW]], #[[TW]], #[[VOUT]], #[[VOUT]], #[[VOUT]], #[[VOUT]], #[[VOUT]], #[[VOUT]]]
# CHECK-SAME: outs({{.*}} : tensor<6x1x4x4x8xf32>, tensor<6x1x4x4x8xf32>, tensor<6x1x4x4x8xf32>, tensor<6x1x4x4x8xf32>, tensor<6x1x4x4x8xf32>, tensor<6x1x4x4x8xf32>)
# CHECK: linalg.index 4 : index
# CHECK: arith.maxsi
# CHECK: arith.minsi
# Tap (0, 0): masked by its row and its column.
# CHECK: %[[X0:.*]] = tensor.extract %{{.*}} : tensor<1x16x16x8xf32>
# CHECK-NEXT: %[[OK:.*]] = arith.andi %{{.*}}, %{{.*}} : i1
# CHECK-NEXT: arith.select %[[OK]], %[[X0]], %{{.*}} : f32
# The 16 taps of rows and columns 1-4 are always inside: 20 selects for the 36 reads.
# CHECK-COUNT-19: arith.select
# CHECK-NOT: arith.select
# CHECK: linalg.yield
# CHECK: %[[VC:.*]] = tensor.concat dim(0)
# CHECK-SAME: -> tensor<6x6x1x4x4x8xf32>
# CHECK: %[[V:.*]] = tensor.collapse_shape %[[VC]] {{\[}}[0, 1], [2, 3, 4], [5]] : tensor<6x6x1x4x4x8xf32> into tensor<36x16x8xf32>
#
# The batched GEMM (one per transform coefficient), with the target's config:
# AVX2: %[[M:.*]] = linalg.batch_matmul {compilation_info = #{{.*}}} ins(%[[V]], %[[U]] : tensor<36x16x8xf32>, tensor<36x8x32xf32>)
# AVX512: %[[M:.*]] = linalg.batch_matmul {compilation_info = #{{.*}}} ins(%[[V]], %[[U]] : tensor<36x16x8xf32>, tensor<36x8x32xf32>)
# INTEL: %[[M:.*]] = linalg.batch_matmul {compilation_info = #{{.*}}} ins(%[[V]], %[[U]] : tensor<36x16x8xf32>, tensor<36x8x32xf32>)
# GENERIC: %[[M:.*]] = linalg.batch_matmul ins(%[[V]], %[[U]] : tensor<36x16x8xf32>, tensor<36x8x32xf32>)
#
# Output transform rows then columns (A^T M A). The rows stage reads M's six row slices:
# CHECK: %[[M6:.*]] = tensor.expand_shape %[[M]] {{\[}}[0, 1], [2, 3, 4], [5]] output_shape [6, 6, 1, 4, 4, 32]
# CHECK: tensor.extract_slice %[[M6]][5, 0, 0, 0, 0, 0] [1, 6, 1, 4, 4, 32]
# CHECK: arith.constant dense<[0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00]> : tensor<4xf32>
# CHECK: %[[O1:.*]] = linalg.generic
# CHECK-SAME: outs(%{{.*}} : tensor<1x4x4x4x6x32xf32>)
# The columns stage iterates the NHWC result (n, oy, ox, k): A^T[ox % 4, b] as 16-wide
# constants read along ox (column b = 5 is [0, 0, 0, 1] repeated), O1 read at
# [n, oy / 4, oy % 4, ox / 4, b, k]:
# CHECK: %[[A5:.*]] = arith.constant dense<[0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00, {{.*}}]> : tensor<16xf32>
# CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#[[OX]], #[[OX]], #[[OX]], #[[OX]], #[[OX]], #[[OX]], #[[NHWC]]]
# CHECK-SAME: ins({{.*}}, %[[A5]] : {{.*}}) outs(%{{.*}} : tensor<1x16x16x32xf32>)
# CHECK: %[[N:.*]] = linalg.index 0 : index
# CHECK-NEXT: %[[OY:.*]] = linalg.index 1 : index
# CHECK-NEXT: %[[OXI:.*]] = linalg.index 2 : index
# CHECK-NEXT: %[[CH:.*]] = linalg.index 3 : index
# CHECK: %[[TR:.*]] = arith.divui %[[OY]], %{{.*}} : index
# CHECK: %[[YR:.*]] = arith.remui %[[OY]], %{{.*}} : index
# CHECK: %[[TC:.*]] = arith.divui %[[OXI]], %{{.*}} : index
# CHECK: tensor.extract %[[O1]][%[[N]], %[[TR]], %[[YR]], %[[TC]], %{{.*}}, %[[CH]]] : tensor<1x4x4x4x6x32xf32>
# CHECK-COUNT-5: tensor.extract %[[O1]]
# CHECK: linalg.yield
# CHECK-NEXT: } -> tensor<1x16x16x32xf32>
#
# The epilogue iterates in the stored NHWC order, so IREE fuses it into the last stage:
# CHECK: %[[YB:.*]] = torch_c.to_builtin_tensor %{{.*}} : !torch.vtensor<[1,16,16,32],f32> -> tensor<1x16x16x32xf32>
# CHECK: linalg.generic {indexing_maps = [#[[NHWC]], #[[BIAS]], #[[NHWC]]]
# CHECK-SAME: ins(%[[YB]], %{{.*}} : tensor<1x16x16x32xf32>, tensor<1x32x1x1xf32>)
# CHECK: arith.maximumf


@run
def winograd_cropped_conv_bias_relu():
    print(build(hw=14).mlir("optimized"))


# CHECK-LABEL: TEST: winograd_cropped_conv_bias_relu
# 14x14 outputs in 4x4 tiles: the columns stage writes the 14x14 result (no crop slice
# after it), its constants 14 wide (column b = 5 of A^T at ox % 4), and bias + relu read it.
# CHECK: %[[O1:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x4x4x4x6x32xf32>)
# CHECK: arith.constant dense<[0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00, 0.000000e+00]> : tensor<14xf32>
# CHECK: linalg.generic
# CHECK-SAME: outs(%{{.*}} : tensor<1x14x14x32xf32>)
# CHECK: tensor.extract %[[O1]]
# CHECK: } -> tensor<1x14x14x32xf32>
# CHECK-NOT: tensor.extract_slice
# CHECK: linalg.generic
# CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<1x14x14x32xf32>, tensor<1x32x1x1xf32>)
# CHECK: arith.maximumf
