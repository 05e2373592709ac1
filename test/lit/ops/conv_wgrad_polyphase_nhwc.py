# RUN: env FUSILLI_CONV_LOWERING=polyphase2 FUSILLI_CPU_ARCH=x86-64-v3 %python %s | filecheck %s --check-prefixes=CHECK,AVX2
# RUN: env FUSILLI_CONV_LOWERING=polyphase2 FUSILLI_CPU_ARCH=znver4 %python %s | filecheck %s --check-prefixes=CHECK,AVX512
# RUN: env FUSILLI_CONV_LOWERING=polyphase2 FUSILLI_CPU_ARCH=generic %python %s | filecheck %s --check-prefixes=CHECK,GENERIC
# RUN: env FUSILLI_CONV_LOWERING=polyphase2 %python %s stats | filecheck %s --check-prefix=STATS
# RUN: %python %s explain | filecheck %s --check-prefix=EXPLAIN

# The weight gradient of a channels-last 3x3 stride-2 conv as Winograd over X's phases
# (fusilli/passes/winograd.py, polyphase_wgrad): X 1x8x16x16 (pad 1), DY 1x8x8x16 -> DW 16x8x3x3.
# DW = G^T [(A dy) * (B^T x)] summed over tiles: X's 5x5 tiles (4 apart) transformed as the
# forward polyphase conv's input, DY's 2x2 tiles by A, one 25-batch GEMM over the tiles, G^T
# along both filter dims. One case per stage of the optimized module.

import sys

from lit_helpers import print_stats, run

import fusilli as fs


def build(n=1, c=8, h=16, k=16):
    g = fs.Graph(name=f"wgrad_polyphase_{n}x{c}x{h}x{k}")
    oh = (h - 1) // 2 + 1
    dy = g.tensor(name="dy", dim=[n, k, oh, oh], stride=fs.strides([n, k, oh, oh], "NHWC"))
    x = g.tensor(name="x", dim=[n, c, h, h], stride=fs.strides([n, c, h, h], "NHWC"))
    dw = g.conv_wgrad(dy, x, padding=[1, 1], stride=[2, 2], dilation=[1, 1], name="wgrad")
    dw.set_dim([k, c, 3, 3]).set_stride(fs.strides([k, c, 3, 3], "NHWC")).set_output(True).set_name("dw")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "stats":
    # X rows, X columns, DY rows, DY columns, the GEMM, output rows, output columns (writing the
    # KRSC gradient).
    @run
    def stats_wgrad():
        print_stats(build())

    # STATS-LABEL: TEST: stats_wgrad
    # STATS: dispatch-count: 7
    sys.exit(0)

if len(sys.argv) > 1 and sys.argv[1] == "explain":
    # Chosen by the rules (cpu-conv-wgrad-winograd-strided) for ResNet-50's 3x3 s2 weight gradient:
    # F(2x2) at batch 1 (196 2x2 DY tiles), F(4x4) at batch 8 (392 4x4 ones), on AVX2 and AMD's and
    # Intel's AVX-512; 64 input channels keep the GEMM.
    @run
    def explain_resnet_shapes():
        for arch, args in (
            ("x86-64-v3", {}),
            ("znver4", {}),
            ("znver4", dict(n=8)),
            ("sapphirerapids", {}),
            ("znver4", dict(n=4, c=64)),
        ):
            g = build(**(dict(c=128, h=56, k=128) | args))
            g.validate()
            print(
                arch, [line for line in g.explain(fs.Backend.CPU, arch=arch).splitlines() if "[conv_wgrad]" in line][0]
            )

    # EXPLAIN-LABEL: TEST: explain_resnet_shapes
    # EXPLAIN: x86-64-v3 {{.*}}cpu-conv-wgrad-winograd-strided (F(2x2, 2x2) over X's 4 phases, 3x3 stride 2, 196 2x2 DY tiles >= 128
    # EXPLAIN: znver4 {{.*}}cpu-conv-wgrad-winograd-strided (F(2x2, 2x2) {{.*}} GEMM tuned for avx512, AMD)
    # EXPLAIN: znver4 {{.*}}cpu-conv-wgrad-winograd-strided (F(4x4, 2x2) over X's 4 phases, 3x3 stride 2, 392 4x4 DY tiles >= 392
    # EXPLAIN: sapphirerapids {{.*}}cpu-conv-wgrad-winograd-strided (F(2x2, 2x2) {{.*}} GEMM tuned for avx512, Intel)
    # EXPLAIN: znver4 {{.*}}cpu-conv-wgrad-gemm
    sys.exit(0)


@run
def polyphase_wgrad():
    print(build().mlir("optimized"))


# CHECK-LABEL: TEST: polyphase_wgrad
# The GEMM's lowering config: the Winograd weight gradient's table, clamped to K = 16 rows and
# C = 8 columns.
# AVX2: #iree_cpu.lowering_config<cache_parallel = [1, 16, 8, 0], distribution = [1, 16, 8, 0], vector_common_parallel = [1, 4, 8, 0], vector_reduction = [0, 0, 0, 8]>
# AVX512: #iree_cpu.lowering_config<cache_parallel = [1, 16, 8, 0], distribution = [1, 16, 8, 0], vector_common_parallel = [1, 8, 8, 0], vector_reduction = [0, 0, 0, 8]>
# GENERIC-NOT: lowering_config
# CHECK-NOT: convolution_backward
# CHECK-NOT: linalg.matmul
#
# X's tiles: the forward polyphase input transform's B^T (F(2, 2)'s on the even taps, the
# identity on the odd ones), tiles 4 apart over the virtually padded 17-wide X; tap 0 of the
# first tile row and the first padded column fall into the padding.
# CHECK: %[[X:.*]] = torch_c.to_builtin_tensor %{{.*}} : !torch.vtensor<[1,16,16,8],f32> -> tensor<1x16x16x8xf32>
# CHECK: arith.constant dense<[1.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]> : tensor<5xf32>
# CHECK: arith.constant dense<[0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00]> : tensor<5xf32>
# CHECK: arith.constant dense<[false, true, true, true]> : tensor<4xi1>
# CHECK: arith.constant dense<[false, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true]> : tensor<17xi1>
# CHECK: linalg.generic
# CHECK: tensor.extract %[[X]]
# CHECK: } -> tensor<1x4x17x5x8xf32>
# CHECK: } -> tensor<5x5x1x4x4x8xf32>
# CHECK: %[[V:.*]] = tensor.collapse_shape %{{.*}} : tensor<5x5x1x4x4x8xf32> into tensor<25x16x8xf32>
#
# DY's 2x2 tiles by A = (F(2, 2)'s A^T beside the identity, its second column negated as G's row 4)^T:
# rows [1, 0], [1, -1], [0, 1], [1, 0], [0, -1], its two columns read along the coefficient dim; DY tiles need no masks.
# CHECK: arith.constant dense<[1.000000e+00, 1.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00]> : tensor<5xf32>
# CHECK-NEXT: arith.constant dense<[0.000000e+00, -1.000000e+00, 1.000000e+00, 0.000000e+00, -1.000000e+00]> : tensor<5xf32>
# CHECK-NOT: xi1>
# CHECK: } -> tensor<1x4x8x5x16xf32>
# CHECK: } -> tensor<5x5x1x4x4x16xf32>
# CHECK: %[[D:.*]] = tensor.collapse_shape %{{.*}} : tensor<5x5x1x4x4x16xf32> into tensor<25x16x16xf32>
#
# One batched GEMM summing over the 16 tiles: M[25, K, C] = D^T V.
# AVX2: linalg.batch_matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] {compilation_info = #{{.*}}} ins(%[[D]], %[[V]] : tensor<25x16x16xf32>, tensor<25x16x8xf32>) outs(%{{.*}} : tensor<25x16x8xf32>)
# AVX512: linalg.batch_matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] {compilation_info = #{{.*}}} ins(%[[D]], %[[V]] : tensor<25x16x16xf32>, tensor<25x16x8xf32>) outs(%{{.*}} : tensor<25x16x8xf32>)
# GENERIC: linalg.batch_matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] ins(%[[D]], %[[V]] : tensor<25x16x16xf32>, tensor<25x16x8xf32>) outs(%{{.*}} : tensor<25x16x8xf32>)
#
# G^T along the filter's rows, then its columns into the KRSC gradient: tap 1's row of G^T picks
# the odd phase's products (columns 3 and 4), taps 0 and 2 F(2, 2)'s G^T.
# CHECK: arith.constant dense<[1.000000e+00, 0.000000e+00, 0.000000e+00]> : tensor<3xf32>
# CHECK-NEXT: arith.constant dense<[-1.000000e+00, 0.000000e+00, 1.000000e+00]> : tensor<3xf32>
# CHECK-NEXT: arith.constant dense<[0.000000e+00, 0.000000e+00, 1.000000e+00]> : tensor<3xf32>
# CHECK-NEXT: arith.constant dense<[0.000000e+00, 1.000000e+00, 0.000000e+00]> : tensor<3xf32>
# CHECK-NEXT: arith.constant dense<[0.000000e+00, -1.000000e+00, 0.000000e+00]> : tensor<3xf32>
# CHECK: } -> tensor<3x5x16x8xf32>
# CHECK: } -> tensor<16x3x3x8xf32>
