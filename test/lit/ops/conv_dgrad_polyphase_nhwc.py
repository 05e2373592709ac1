# RUN: env FUSILLI_CONV_LOWERING=polyphase2 FUSILLI_CPU_ARCH=x86-64-v3 %python %s | filecheck %s --check-prefixes=CHECK,AVX2
# RUN: env FUSILLI_CONV_LOWERING=polyphase2 FUSILLI_CPU_ARCH=znver4 %python %s | filecheck %s --check-prefixes=CHECK,AVX512
# RUN: env FUSILLI_CONV_LOWERING=polyphase2 FUSILLI_CPU_ARCH=generic %python %s | filecheck %s --check-prefixes=CHECK,GENERIC
# RUN: env FUSILLI_CONV_LOWERING=polyphase2 %python %s stats | filecheck %s --check-prefix=STATS
# RUN: %python %s explain | filecheck %s --check-prefix=EXPLAIN

# The data gradient of a channels-last 3x3 stride-2 conv as Winograd F(2, 2) per DX phase
# (fusilli/passes/winograd.py, polyphase_dgrad_matrices): DY 1x8x8x16 (K = 16), the forward
# filter 16x8x3x3 as KRSC, DX 1x8x16x16, pad 1. Each 4x4 tile of DX reads a 3x3 tile of DY
# (tiles 2 apart, overlapping by 1); the DX rows with row + pad even take taps 0 and 2 (F(2, 2)),
# the others tap 1 alone (t = 5, 25 GEMMs). One case per stage of the optimized module.

import sys

from lit_helpers import print_stats, run

import fusilli as fs


def build(n=1, k=16, c=8, h=16, pad=1):
    g = fs.Graph(name=f"dgrad_polyphase_{n}x{k}x{c}x{h}_{pad}")
    oh = (h + 2 * pad - 3) // 2 + 1
    dy = g.tensor(name="dy", dim=[n, k, oh, oh], stride=fs.strides([n, k, oh, oh], "NHWC"))
    w = g.tensor(name="w", dim=[k, c, 3, 3], stride=fs.strides([k, c, 3, 3], "NHWC"))
    dx = g.conv_dgrad(dy, w, padding=[pad, pad], stride=[2, 2], dilation=[1, 1], name="dgrad")
    dx.set_dim([n, c, h, h]).set_stride(fs.strides([n, c, h, h], "NHWC")).set_output(True).set_name("dx")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "stats":
    # The filter transform, the DY transform, the GEMM, the one-stage output transform.
    @run
    def stats_dgrad():
        print_stats(build())

    # STATS-LABEL: TEST: stats_dgrad
    # STATS: dispatch-count: 4
    sys.exit(0)

if len(sys.argv) > 1 and sys.argv[1] == "explain":
    # Chosen by the rules (cpu-conv-dgrad-winograd-strided) for ResNet-50's 3x3 s2 dgrad at batch 1
    # (196 4x4 DX tiles) on AVX2 and AMD's and Intel's AVX-512; 49 tiles (1x256x28x28) keep the col2im
    # GEMM but on Zen 1, which takes F(2x2, 2x2) from 49 tiles (rules.CPU_CONV_DGRAD_POLYPHASE_CORE_LIMITS).
    @run
    def explain_resnet_shapes():
        for arch, args in (
            ("x86-64-v3", {}),
            ("znver4", {}),
            ("sapphirerapids", {}),
            ("znver4", dict(k=256, c=256, h=28)),
            ("znver1", dict(k=256, c=256, h=28)),
        ):
            g = build(**(dict(k=128, c=128, h=56) | args))
            g.validate()
            print(
                arch, [line for line in g.explain(fs.Backend.CPU, arch=arch).splitlines() if "[conv_dgrad]" in line][0]
            )

    # EXPLAIN-LABEL: TEST: explain_resnet_shapes
    # EXPLAIN: x86-64-v3 {{.*}}cpu-conv-dgrad-winograd-strided (F(2x2, 2x2) per DX phase, 3x3 stride 2, 196 4x4 DX tiles >= 128
    # EXPLAIN: znver4 {{.*}}cpu-conv-dgrad-winograd-strided (F(2x2, 2x2) {{.*}} GEMM tuned for avx512, AMD)
    # EXPLAIN: sapphirerapids {{.*}}cpu-conv-dgrad-winograd-strided (F(2x2, 2x2) per DX phase, 3x3 stride 2, 196 4x4 DX tiles >= 128
    # EXPLAIN: znver4 {{.*}}cpu-conv-dgrad-col2im-gemm (3x3 stride 2x2
    # EXPLAIN: znver1 {{.*}}cpu-conv-dgrad-winograd-strided (F(2x2, 2x2) per DX phase, 3x3 stride 2, 49 4x4 DX tiles >= 49,
    sys.exit(0)


@run
def polyphase_dgrad():
    print(build().mlir("optimized"))


# CHECK-LABEL: TEST: polyphase_dgrad
# The GEMM's lowering config (printed as an alias first): the Winograd GEMM tables', clamped
# to 16 rows (tiles) and DX's 8 channels: 6x8 on AVX2, 8x8 on AVX-512, IREE's own choice elsewhere.
# AVX2: #iree_cpu.lowering_config<cache_parallel = [1, 16, 8, 0], distribution = [1, 16, 8, 0], vector_common_parallel = [1, 6, 8, 0], vector_reduction = [0, 0, 0, 8]>
# AVX512: #iree_cpu.lowering_config<cache_parallel = [1, 16, 8, 0], distribution = [1, 16, 8, 0], vector_common_parallel = [1, 8, 8, 0], vector_reduction = [0, 0, 0, 8]>
# GENERIC-NOT: lowering_config
# CHECK-NOT: torch.aten.convolution
# CHECK-NOT: linalg.matmul
#
# Filter transform in one generic over the KRSC forward filter's nine [K, C] taps (no flip, no
# transpose): G's columns, read along the generic's first dim, are F(2, 2)'s G on taps 2 and 0
# (rows 0-2) and tap 1 times 1 and -1 (rows 3-4, distinct: no copies); one [5, K, C] result per
# row of G.
# CHECK: %[[KRSC:.*]] = torch_c.to_builtin_tensor %{{.*}} : !torch.vtensor<[16,3,3,8],f32> -> tensor<16x3x3x8xf32>
# CHECK: tensor.extract_slice %[[KRSC]][0, 2, 2, 0] [16, 1, 1, 8] [1, 1, 1, 1] : tensor<16x3x3x8xf32> to tensor<16x8xf32>
# CHECK: arith.constant dense<[0.000000e+00, 1.000000e+00, 1.000000e+00, 0.000000e+00, 0.000000e+00]> : tensor<5xf32>
# CHECK: arith.constant dense<[0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00, -1.000000e+00]> : tensor<5xf32>
# CHECK: arith.constant dense<[1.000000e+00, -1.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]> : tensor<5xf32>
# CHECK: linalg.generic
# CHECK-SAME: outs({{.*}} : tensor<5x16x8xf32>, tensor<5x16x8xf32>, tensor<5x16x8xf32>, tensor<5x16x8xf32>, tensor<5x16x8xf32>)
# CHECK: linalg.yield
# CHECK: %[[FC:.*]] = tensor.concat dim(0)
# CHECK-SAME: -> tensor<5x5x16x8xf32>
# CHECK: %[[U:.*]] = tensor.collapse_shape %[[FC]] {{\[}}[0, 1], [2], [3]] : tensor<5x5x16x8xf32> into tensor<25x16x8xf32>
#
# DY transform in one generic: B^T's columns per tap of the 3-wide DY tile (F(2, 2)'s B^T, then
# the tap-1 phase's picks of its first two values) read along b; clamped reads of DY at rows
# (columns) 2*t + i; only tap 2 of the last tile row (column) falls past DY's 8 rows: two masks.
# The integer entries of B^T are exact (ones and zeros), so its rows combine without multiplies.
# Its row 4 picks what row 1 does, negated (winograd._distinct_rows; G's row 4 too, so A^T keeps
# its signs): equal rows would be one result IREE copies into place.
# CHECK: arith.constant dense<[1.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00]> : tensor<5xf32>
# CHECK: arith.constant dense<[1.000000e+00, 1.000000e+00, 1.000000e+00, 0.000000e+00, -1.000000e+00]> : tensor<5xf32>
# CHECK: arith.constant dense<[0.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00, 0.000000e+00]> : tensor<5xf32>
# CHECK: arith.constant dense<[true, true, true, false]> : tensor<4xi1>
# CHECK-NEXT: arith.constant dense<[true, true, true, false]> : tensor<4xi1>
# CHECK-NOT: tensor<4xi1>
# CHECK: linalg.generic
# CHECK-SAME: outs({{.*}} : tensor<5x1x4x4x16xf32>, tensor<5x1x4x4x16xf32>, tensor<5x1x4x4x16xf32>, tensor<5x1x4x4x16xf32>, tensor<5x1x4x4x16xf32>)
# CHECK: arith.muli %{{.*}}, %c2
# CHECK: tensor.extract %{{.*}} : tensor<1x8x8x16xf32>
# CHECK-COUNT-5: arith.select
# CHECK-NOT: arith.select
# CHECK-NOT: arith.constant 1.000000e+00 : f32
# CHECK: linalg.yield
# CHECK: %[[VC:.*]] = tensor.concat dim(0)
# CHECK-SAME: -> tensor<5x5x1x4x4x16xf32>
# CHECK: %[[V:.*]] = tensor.collapse_shape %[[VC]] {{\[}}[0, 1], [2, 3, 4], [5]] : tensor<5x5x1x4x4x16xf32> into tensor<25x16x16xf32>
#
# One batched GEMM over DY's channels: the four phases' 9 + 6 + 6 + 4 products of every tile.
# AVX2: %[[M:.*]] = linalg.batch_matmul {compilation_info = #{{.*}}} ins(%[[V]], %[[U]] : tensor<25x16x16xf32>, tensor<25x16x8xf32>)
# AVX512: %[[M:.*]] = linalg.batch_matmul {compilation_info = #{{.*}}} ins(%[[V]], %[[U]] : tensor<25x16x16xf32>, tensor<25x16x8xf32>)
# GENERIC: %[[M:.*]] = linalg.batch_matmul ins(%[[V]], %[[U]] : tensor<25x16x16xf32>, tensor<25x16x8xf32>)
#
# Output transform in one stage over DX: A^T's rows have at most two nonzeros, so each output reads
# 2 x 2 products, at [a(y % 4), b(x % 4), n, y / 4, x / 4, c] (a and b selected among constants),
# their coefficients read along y and x: DX row 3 (the two-tap phase's second) is -M[1] + M[2].
# CHECK: %[[M6:.*]] = tensor.expand_shape %[[M]] {{\[}}[0, 1], [2, 3, 4], [5]] output_shape [5, 5, 1, 4, 4, 8]
# CHECK: arith.constant dense<[1.000000e+00, 1.000000e+00, 1.000000e+00, -1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, -1.000000e+00, {{.*}}]> : tensor<16xf32>
# CHECK: arith.constant dense<[0.000000e+00, 1.000000e+00, 0.000000e+00, 1.000000e+00, {{.*}}]> : tensor<16xf32>
# CHECK: linalg.generic
# CHECK-SAME: outs(%{{.*}} : tensor<1x16x16x8xf32>)
# CHECK: arith.divui %{{.*}}, %c4
# CHECK: arith.remui %{{.*}}, %c4
# CHECK-COUNT-4: tensor.extract %[[M6]]
# CHECK-NOT: tensor.extract
# CHECK: } -> tensor<1x16x16x8xf32>


@run
def polyphase_dgrad_pad0_cropped():
    print(build(h=15, pad=0).mlir("optimized"))


# CHECK-LABEL: TEST: polyphase_dgrad_pad0_cropped
# Pad 0: DX 15x15 from DY 7x7. Each tile's DY read starts a row before 2*t, the two-tap phase is
# the even DX rows, and the tap-1 phase reads the tile's last two DY values (B^T's rows 3-4);
# masks at both ends: tap 0 of the first tile, tap 2 of the last.
# CHECK: arith.constant dense<[1.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]> : tensor<5xf32>
# CHECK: arith.constant dense<[1.000000e+00, 1.000000e+00, 1.000000e+00, -1.000000e+00, 0.000000e+00]> : tensor<5xf32>
# CHECK: arith.constant dense<[0.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00, 1.000000e+00]> : tensor<5xf32>
# CHECK: arith.constant dense<[false, true, true, true]> : tensor<4xi1>
# CHECK: arith.constant dense<[true, true, true, false]> : tensor<4xi1>
# CHECK: arith.addi %{{.*}}, %c-1
# CHECK: linalg.batch_matmul
# The output stage iterates DX's 15x15 (no crop copy); even rows are M[0] + M[1] and -M[1] + M[2],
# odd rows -M[3] and -M[4] (B^T's row 3 and G's row 4 negated, scaled back).
# CHECK: arith.constant dense<[1.000000e+00, -1.000000e+00, -1.000000e+00, -1.000000e+00, {{.*}}]> : tensor<15xf32>
# CHECK: linalg.generic
# CHECK-SAME: outs(%{{.*}} : tensor<1x15x15x8xf32>)
# CHECK-NOT: tensor.extract_slice
# CHECK: torch_c.from_builtin_tensor %{{.*}} : tensor<1x15x15x8xf32>
