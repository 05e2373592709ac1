# RUN: env FUSILLI_CONV_LOWERING=polyphase2 FUSILLI_CPU_ARCH=x86-64-v3 %python %s | filecheck %s --check-prefixes=CHECK,AVX2
# RUN: env FUSILLI_CONV_LOWERING=polyphase2 FUSILLI_CPU_ARCH=znver4 %python %s | filecheck %s --check-prefixes=CHECK,AVX512
# RUN: env FUSILLI_CONV_LOWERING=polyphase2 FUSILLI_CPU_ARCH=generic %python %s | filecheck %s --check-prefixes=CHECK,GENERIC
# RUN: env FUSILLI_CONV_LOWERING=polyphase2 %python %s stats | filecheck %s --check-prefix=STATS
# RUN: %python %s explain | filecheck %s --check-prefix=EXPLAIN

# Winograd over the input's phases (fusilli/passes/winograd.py, polyphase_matrices) of a
# channels-last 3x3 stride-2 conv + bias + relu, 1x8x16x16 -> 32, pad 1: 4x4 tiles of 2x2
# outputs, each read from a 5x5 input tile (tiles 4 apart, overlapping by 1) of the
# (virtually) padded 17-wide input. The transforms are F(2, 2) on the even taps beside the
# identity on the odd ones (t = 5, 25 GEMMs). One case per stage of the optimized module.

import sys

from lit_helpers import print_stats, run

import fusilli as fs


def build(epilogue=True, n=1, c=8, h=16, k=32):
    g = fs.Graph(name=f"polyphase_nhwc_{n}x{c}x{h}x{k}_{int(epilogue)}")
    x = g.tensor(name="x", dim=[n, c, h, h], stride=fs.strides([n, c, h, h], "NHWC"))
    wt = g.tensor(name="w", dim=[k, c, 3, 3], stride=fs.strides([k, c, 3, 3], "NHWC"))
    y = g.conv_fprop(x, wt, padding=[1, 1], stride=[2, 2], dilation=[1, 1], name="conv")
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

    # STATS-LABEL: TEST: stats_conv
    # STATS: dispatch-count: [[N:[0-9]+]]
    # G's distinct rows make five distinct results of the filter transform, each written in place
    # into U (with rows 3 and 4 equal IREE wrote one result aside and copied it twice):
    # STATS: copy-count: 0

    @run
    def stats_conv_bias_relu():
        print_stats(build(epilogue=True))

    # STATS-LABEL: TEST: stats_conv_bias_relu
    # STATS: dispatch-count: [[N]]
    # STATS: copy-count: 0
    sys.exit(0)

if len(sys.argv) > 1 and sys.argv[1] == "explain":
    # Chosen by the rules (cpu-conv-winograd-strided) for the suite's 4x128x28x28->256 (196 2x2
    # tiles) on AVX2 and AMD AVX-512; Intel AVX-512 keeps the im2col GEMM (it takes polyphase from 392 tiles).
    @run
    def explain_suite_shape():
        g = build(n=4, c=128, h=28, k=256)
        g.validate()
        for arch in ("x86-64-v3", "znver4", "sapphirerapids"):
            print(
                arch, [line for line in g.explain(fs.Backend.CPU, arch=arch).splitlines() if "[conv_fprop]" in line][0]
            )

    # EXPLAIN-LABEL: TEST: explain_suite_shape
    # EXPLAIN: x86-64-v3 {{.*}}cpu-conv-winograd-strided (F(2x2, 2x2) over the input's 4 phases, 3x3 stride 2, 196 2x2 tiles >= 128
    # EXPLAIN: znver4 {{.*}}cpu-conv-winograd-strided (F(2x2, 2x2) {{.*}} GEMM tuned for avx512, AMD)
    # EXPLAIN: sapphirerapids {{.*}}cpu-conv-im2col-gemm (3x3 stride 2

    # ResNet-50's 1x256x28x28->256 (49 2x2 tiles, a 6.5 MB transformed filter): Zen 1 takes it from
    # 49 tiles and of any filter (rules.CPU_CONV_POLYPHASE_CORE_LIMITS); the others keep the GEMM.
    @run
    def explain_zen1_few_tiles():
        g = build(epilogue=False, n=1, c=256, h=28, k=256)
        g.validate()
        for arch in ("znver1", "znver3", "x86-64-v3"):
            print(
                arch, [line for line in g.explain(fs.Backend.CPU, arch=arch).splitlines() if "[conv_fprop]" in line][0]
            )

    # EXPLAIN-LABEL: TEST: explain_zen1_few_tiles
    # EXPLAIN: znver1 {{.*}}cpu-conv-winograd-strided (F(2x2, 2x2) over the input's 4 phases, 3x3 stride 2, 49 2x2 tiles >= 49,
    # EXPLAIN: znver3 {{.*}}cpu-conv-im2col-gemm (3x3 stride 2
    # EXPLAIN: x86-64-v3 {{.*}}cpu-conv-im2col-gemm (3x3 stride 2
    sys.exit(0)


@run
def polyphase_conv_bias_relu():
    print(build().mlir("optimized"))


# CHECK-LABEL: TEST: polyphase_conv_bias_relu
# The GEMM's lowering config (printed as an alias first): the Winograd GEMM tables', clamped
# to 16 rows: 6x16 on AVX2, 8x32 on AVX-512, IREE's own choice elsewhere.
# AVX2: #iree_cpu.lowering_config<cache_parallel = [1, 16, 32, 0], distribution = [1, 16, 32, 0], vector_common_parallel = [1, 6, 16, 0], vector_reduction = [0, 0, 0, 8]>
# AVX512: #iree_cpu.lowering_config<cache_parallel = [1, 16, 32, 0], distribution = [1, 16, 32, 0], vector_common_parallel = [1, 8, 32, 0], vector_reduction = [0, 0, 0, 8]>
# GENERIC-NOT: lowering_config
# CHECK-NOT: torch.aten.convolution
# CHECK-NOT: linalg.conv_2d
#
# Filter transform in one generic over the HWCF filter's nine taps: G's columns, read along
# the generic's first dim, are F(2, 2)'s G on taps 0 and 2 (rows 0-2) and tap 1 times 1 and -1
# (rows 3-4: equal rows would be one result IREE copies twice, see STATS); one [5, C, K] result
# per row of G, its entries folded in as constants.
# CHECK: %[[HWCF:.*]] = torch_c.to_builtin_tensor %{{.*}} : !torch.vtensor<[3,3,8,32],f32> -> tensor<3x3x8x32xf32>
# CHECK: tensor.extract_slice %[[HWCF]][2, 2, 0, 0] [1, 1, 8, 32] [1, 1, 1, 1] : tensor<3x3x8x32xf32> to tensor<8x32xf32>
# CHECK: arith.constant dense<[1.000000e+00, -1.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]> : tensor<5xf32>
# CHECK: arith.constant dense<[0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00, -1.000000e+00]> : tensor<5xf32>
# CHECK: arith.constant dense<[0.000000e+00, 1.000000e+00, 1.000000e+00, 0.000000e+00, 0.000000e+00]> : tensor<5xf32>
# CHECK: %[[F:.*]]:5 = linalg.generic
# CHECK-SAME: outs({{.*}} : tensor<5x8x32xf32>, tensor<5x8x32xf32>, tensor<5x8x32xf32>, tensor<5x8x32xf32>, tensor<5x8x32xf32>)
# Row 1 of G is [-1, 0, 1]: a negation and an add, no multiply by 0 or 1.
# CHECK: %[[NEG:.*]] = arith.constant -1.000000e+00 : f32
# CHECK-NEXT: %[[R1:.*]] = arith.mulf %[[NEG]], %{{.*}} : f32
# CHECK-NEXT: arith.addf %[[R1]], %{{.*}} : f32
# CHECK: linalg.yield
# CHECK: %[[FC:.*]] = tensor.concat dim(0)
# CHECK-SAME: -> tensor<5x5x8x32xf32>
# CHECK: %[[U:.*]] = tensor.collapse_shape %[[FC]] {{\[}}[0, 1], [2], [3]] : tensor<5x5x8x32xf32> into tensor<25x8x32xf32>
#
# Input transform in one generic: B^T's columns per tap of the 5-wide tile (F(2, 2)'s B^T on
# the even taps, the identity on the odd ones) read along b, one [5, N, TH, TW, C] result per
# row of B^T; clamped reads of the unpadded input at rows (columns) 4*t + i - 1; only tap row
# (column) 0 reaches into the padding, in the first tile row (column): two masks, and 9
# selects for the 25 reads.
# CHECK: arith.constant dense<[1.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]> : tensor<5xf32>
# CHECK: arith.constant dense<[0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00]> : tensor<5xf32>
# CHECK: arith.constant dense<[false, true, true, true]> : tensor<4xi1>
# CHECK-NEXT: arith.constant dense<[false, true, true, true]> : tensor<4xi1>
# CHECK-NOT: tensor<4xi1>
# CHECK: %[[I:.*]]:5 = linalg.generic
# CHECK-SAME: outs({{.*}} : tensor<5x1x4x4x8xf32>, tensor<5x1x4x4x8xf32>, tensor<5x1x4x4x8xf32>, tensor<5x1x4x4x8xf32>, tensor<5x1x4x4x8xf32>)
# CHECK: arith.muli %{{.*}}, %c4
# CHECK: tensor.extract %{{.*}} : tensor<1x16x16x8xf32>
# CHECK-COUNT-9: arith.select
# CHECK-NOT: arith.select
# CHECK: linalg.yield
# CHECK: %[[VC:.*]] = tensor.concat dim(0)
# CHECK-SAME: -> tensor<5x5x1x4x4x8xf32>
# CHECK: %[[V:.*]] = tensor.collapse_shape %[[VC]] {{\[}}[0, 1], [2, 3, 4], [5]] : tensor<5x5x1x4x4x8xf32> into tensor<25x16x8xf32>
#
# One batched GEMM: the four phases' 9 + 6 + 6 + 4 products of every tile.
# AVX2: %[[M:.*]] = linalg.batch_matmul {compilation_info = #{{.*}}} ins(%[[V]], %[[U]] : tensor<25x16x8xf32>, tensor<25x8x32xf32>)
# AVX512: %[[M:.*]] = linalg.batch_matmul {compilation_info = #{{.*}}} ins(%[[V]], %[[U]] : tensor<25x16x8xf32>, tensor<25x8x32xf32>)
# GENERIC: %[[M:.*]] = linalg.batch_matmul ins(%[[V]], %[[U]] : tensor<25x16x8xf32>, tensor<25x8x32xf32>)
#
# Output transform in one stage over the NHWC result, summing the phases: A^T = [F(2, 2)'s A^T | I]
# (the identity's second column negated, as G's row 4) has rows [1, 1, 0, 1, 0] and
# [0, -1, 1, 0, -1], three nonzeros each, so an output reads 3 x 3 of its tile's products, at
# [a(oy % 2), b(ox % 2), n, oy / 2, ox / 2, k], the coefficients of its row's first nonzero
# ([1, -1] repeated), its second (ones) and its third ([1, -1]) read along oy and ox.
# CHECK: %[[M6:.*]] = tensor.expand_shape %[[M]] {{\[}}[0, 1], [2, 3, 4], [5]] output_shape [5, 5, 1, 4, 4, 32]
# CHECK: arith.constant dense<[1.000000e+00, -1.000000e+00, 1.000000e+00, -1.000000e+00, 1.000000e+00, -1.000000e+00, 1.000000e+00, -1.000000e+00]> : tensor<8xf32>
# CHECK-NEXT: arith.constant dense<1.000000e+00> : tensor<8xf32>
# CHECK-NEXT: arith.constant dense<[1.000000e+00, -1.000000e+00, 1.000000e+00, -1.000000e+00, 1.000000e+00, -1.000000e+00, 1.000000e+00, -1.000000e+00]> : tensor<8xf32>
# CHECK: linalg.generic
# CHECK-SAME: outs(%{{.*}} : tensor<1x8x8x32xf32>)
# CHECK: arith.divui %{{.*}}, %c2
# CHECK: arith.remui %{{.*}}, %c2
# CHECK-COUNT-9: tensor.extract %[[M6]]
# CHECK-NOT: tensor.extract
# CHECK: } -> tensor<1x8x8x32xf32>
#
# The epilogue iterates in the stored NHWC order, so IREE fuses it into the last stage:
# CHECK: %[[YB:.*]] = torch_c.to_builtin_tensor %{{.*}} : !torch.vtensor<[1,8,8,32],f32> -> tensor<1x8x8x32xf32>
# CHECK: linalg.generic
# CHECK-SAME: ins(%[[YB]], %{{.*}} : tensor<1x8x8x32xf32>, tensor<1x32x1x1xf32>)
# CHECK: arith.maximumf
