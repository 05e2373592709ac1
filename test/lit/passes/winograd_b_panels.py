# RUN: env FUSILLI_LIT_TARGET=cpu:znver1 %python %s | filecheck %s --check-prefixes=CHECK,AVX2,PLAIN
# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64-v3 %python %s | filecheck %s --check-prefixes=CHECK,AVX2,PLAIN
# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,AVX512,PLAIN
# RUN: env FUSILLI_LIT_TARGET=cpu:znver3 %python %s | filecheck %s --check-prefixes=CHECK,ZEN3
# RUN: %python %s stats | filecheck %s --check-prefix=STATS
# RUN: %python %s explain | filecheck %s --check-prefix=EXPLAIN

# Winograd's transformed filter in 64-column panels (fusilli/passes/gemm_config.py,
# winograd_b_panel): on AVX2, where the GEMM's B has 512, 1024 or 2048 columns (rows a multiple
# of 2 KiB apart alias in L1), the filter transform writes U as [t*t, columns / 64, depth, 64]
# (c and the panel index swapped in its output map, the panel's 64 columns innermost) and the
# GEMM reads it as a contraction over (b, m, j, n, c) whose tile splits N into panels; its
# [t*t, tiles, columns / 64, 64] result is the plain [t*t, tiles, columns] collapsed. AVX-512 (not
# measured) and 256 columns keep the plain layout and linalg.batch_matmul. Zen 3 (znver3) writes
# panels of its 4x16 register tile's 16 columns from 128 columns (rows 512 bytes apart) up.

import sys

from lit_helpers import optimized, print_stats, run

import fusilli as fs


def forward(k, c=16, stride=1, n=1, hw=8):
    g = fs.Graph(name=f"winograd_panels_{n}x{c}x{hw}_{k}_s{stride}")
    x = g.tensor(name="x", dim=[n, c, hw, hw], stride=fs.strides([n, c, hw, hw], "NHWC"))
    w = g.tensor(name="w", dim=[k, c, 3, 3], stride=fs.strides([k, c, 3, 3], "NHWC"))
    g.conv_fprop(x, w, padding=[1, 1], stride=[stride] * 2, dilation=[1, 1], name="conv").set_output(True)
    return g.validate()


def strided_dgrad(c, k=16, n=1, hw=8):
    g = fs.Graph(name=f"winograd_panels_dgrad_{n}x{k}x{hw}_{c}")
    dy = g.tensor(name="dy", dim=[n, k, hw // 2, hw // 2], stride=fs.strides([n, k, hw // 2, hw // 2], "NHWC"))
    w = g.tensor(name="w", dim=[k, c, 3, 3], stride=fs.strides([k, c, 3, 3], "NHWC"))
    dx = g.conv_dgrad(dy, w, padding=[1, 1], stride=[2, 2], dilation=[1, 1], name="dgrad")
    dx.set_dim([n, c, hw, hw]).set_stride(fs.strides([n, c, hw, hw], "NHWC")).set_output(True)
    return g.validate()


def with_lowering(lowering, build, *args):
    from fusilli import pipeline

    saved, pipeline.CONV_LOWERING = pipeline.CONV_LOWERING, lowering
    try:
        return optimized(build(*args))
    finally:
        pipeline.CONV_LOWERING = saved


if len(sys.argv) > 1 and sys.argv[1] == "stats":
    # The panels cost no dispatch: the filter's transpose, the filter, input and output
    # transforms, the GEMM, with 512 columns as with 256 (znver1 code, compiled, not run).
    @run
    def stats_panels():
        from fusilli import pipeline

        pipeline.CONV_LOWERING = "winograd4"
        for k in (256, 512):
            print_stats(forward(k), arch="znver1")

    # STATS-LABEL: TEST: stats_panels
    # STATS: dispatch-count: 6
    # STATS: dispatch-count: 6
    sys.exit(0)

if len(sys.argv) > 1 and sys.argv[1] == "explain":
    # ResNet-50's stage-4/5 convs at batch 8 as the rules lower them, per target.
    @run
    def explain_resnet_shapes():
        cases = (
            ("3x3 8x512x7x7->512", forward(512, 512, 1, 8, 7)),
            ("3x3 s2 8x512x14x14->512", forward(512, 512, 2, 8, 14)),
            ("dgrad 3x3 s2 8x512x14x14", strided_dgrad(512, 512, 8, 14)),
            ("3x3 8x256x14x14->256", forward(256, 256, 1, 8, 14)),
        )
        for arch in ("znver1", "x86-64-v3", "znver4", "znver3"):
            for label, g in cases:
                print(
                    arch,
                    label,
                    [line for line in g.explain(fs.Backend.CPU, arch=arch).splitlines() if "winograd" in line],
                )

    # EXPLAIN-LABEL: TEST: explain_resnet_shapes
    # EXPLAIN: znver1 3x3 8x512x7x7->512 {{.*}}cpu-conv-winograd (F(4x4, 3x3){{.*}}, the transformed filter in 64-column panels (rows of 512 would alias in L1))
    # EXPLAIN: znver1 3x3 s2 8x512x14x14->512 {{.*}}cpu-conv-winograd-strided (F(2x2, 2x2){{.*}}, the transformed filter in 64-column panels (rows of 512 would alias in L1))
    # EXPLAIN: znver1 dgrad 3x3 s2 8x512x14x14 {{.*}}cpu-conv-dgrad-winograd-strided (F(2x2, 2x2){{.*}}, the transformed filter in 64-column panels (rows of 512 would alias in L1))
    # EXPLAIN: znver1 3x3 8x256x14x14->256 {{.*}}cpu-conv-winograd (F(4x4, 3x3){{.*}} GEMM tuned for avx2)']
    # EXPLAIN: x86-64-v3 3x3 8x512x7x7->512 {{.*}}cpu-conv-winograd (F(4x4, 3x3){{.*}}, the transformed filter in 64-column panels
    # EXPLAIN: znver4 3x3 8x512x7x7->512 {{.*}}cpu-conv-winograd (F(4x4, 3x3){{.*}} GEMM tuned for avx512, its filter transformed in one pass)']
    # EXPLAIN: znver3 3x3 8x512x7x7->512 {{.*}}cpu-conv-winograd (F(4x4, 3x3){{.*}}, the transformed filter in 16-column panels (rows of 512 would alias in L1))
    # EXPLAIN: znver3 3x3 8x256x14x14->256 {{.*}}cpu-conv-winograd (F(4x4, 3x3){{.*}}, the transformed filter in 16-column panels (rows of 256 would alias in L1))
    sys.exit(0)


@run
def forward_512_columns():
    print(with_lowering("winograd4", forward, 512))


# CHECK-LABEL: TEST: forward_512_columns
# AVX2: #iree_cpu.lowering_config<cache_parallel = [1, 4, 1, 64, 0], distribution = [1, 4, 1, 64, 0], vector_common_parallel = [1, 4, 1, 16, 0], vector_reduction = [0, 0, 0, 0, 8]>
# The filter transform: each tap as [C, K / 64, 64], written [K / 64, C, 64] per row of G.
# AVX2: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [16, 8, 64] : tensor<16x512xf32> into tensor<16x8x64xf32>
# AVX2: } -> (tensor<6x8x16x64xf32>, tensor<6x8x16x64xf32>, tensor<6x8x16x64xf32>, tensor<6x8x16x64xf32>, tensor<6x8x16x64xf32>, tensor<6x8x16x64xf32>)
# AVX2: %[[U:.*]] = tensor.collapse_shape %{{.*}} : tensor<6x6x8x16x64xf32> into tensor<36x8x16x64xf32>
# AVX2: %[[M:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%{{.*}}, %[[U]] : tensor<36x4x16xf32>, tensor<36x8x16x64xf32>) outs(%{{.*}} : tensor<36x4x8x64xf32>) attrs =  {compilation_info = #{{.*}}}
# AVX2: tensor.collapse_shape %[[M]] {{\[\[}}0], [1], [2, 3]] : tensor<36x4x8x64xf32> into tensor<36x4x512xf32>
# AVX2-NOT: linalg.batch_matmul
# AVX512: linalg.batch_matmul {compilation_info = #{{.*}}} ins(%{{.*}}, %{{.*}} : tensor<36x4x16xf32>, tensor<36x16x512xf32>)
# Zen 3: the same contraction over 32 panels of 16 columns, four to a 64-column workgroup.
# ZEN3: #iree_cpu.lowering_config<cache_parallel = [1, 4, 4, 16, 0], distribution = [1, 4, 4, 16, 0], vector_common_parallel = [1, 4, 1, 16, 0], vector_reduction = [0, 0, 0, 0, 8]>
# ZEN3: linalg.generic {{.*}}"reduction"]} ins(%{{.*}}, %{{.*}} : tensor<36x4x16xf32>, tensor<36x32x16x16xf32>) outs(%{{.*}} : tensor<36x4x32x16xf32>) attrs =  {compilation_info = #{{.*}}}
# ZEN3-NOT: linalg.batch_matmul


@run
def forward_256_columns():
    print(with_lowering("winograd4", forward, 256))


# Rows of 1 KiB do not alias on Zen 1 (measured even): the plain layout there and on the other
# ISAs; Zen 3's 16-column panels.
# CHECK-LABEL: TEST: forward_256_columns
# PLAIN: linalg.batch_matmul {compilation_info = #{{.*}}} ins(%{{.*}}, %{{.*}} : tensor<36x4x16xf32>, tensor<36x16x256xf32>)
# ZEN3: linalg.generic {{.*}}"reduction"]} ins(%{{.*}}, %{{.*}} : tensor<36x4x16xf32>, tensor<36x16x16x16xf32>) outs(%{{.*}} : tensor<36x4x16x16xf32>) attrs =  {compilation_info = #{{.*}}}


@run
def forward_128_columns():
    print(with_lowering("winograd4", forward, 128))


# Rows of 128 columns, 512 bytes apart: Zen 3's smallest panelled B; 64 columns keep the plain layout everywhere.
# The filter transform iterates (b, j, c, n) in its output's order, each tap read as [C, K / 16, 16]
# with c and j swapped: every result written as one stream.
# CHECK-LABEL: TEST: forward_128_columns
# ZEN3: #[[TAP:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d2, d1, d3)>
# ZEN3: #[[PANELS:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
# ZEN3: linalg.generic {indexing_maps = [#[[TAP]], {{.*}}, #[[PANELS]]]
# ZEN3: } -> (tensor<6x8x16x16xf32>,
# PLAIN: linalg.batch_matmul {compilation_info = #{{.*}}} ins(%{{.*}}, %{{.*}} : tensor<36x4x16xf32>, tensor<36x16x128xf32>)
# ZEN3: linalg.generic {{.*}}"reduction"]} ins(%{{.*}}, %{{.*}} : tensor<36x4x16xf32>, tensor<36x8x16x16xf32>) outs(%{{.*}} : tensor<36x4x8x16xf32>) attrs =  {compilation_info = #{{.*}}}


@run
def forward_64_columns():
    print(with_lowering("winograd4", forward, 64))


# CHECK-LABEL: TEST: forward_64_columns
# CHECK: linalg.batch_matmul {compilation_info = #{{.*}}} ins(%{{.*}}, %{{.*}} : tensor<36x4x16xf32>, tensor<36x16x64xf32>)


@run
def polyphase_512_columns():
    print(with_lowering("polyphase2", forward, 512, 16, 2))


# The polyphase Winograd (t = 5) of a 3x3 stride-2 conv: the same panels.
# CHECK-LABEL: TEST: polyphase_512_columns
# AVX2: tensor<25x8x16x64xf32>
# AVX2: linalg.generic {{.*}}"reduction"]} ins(%{{.*}}, %{{.*}} : tensor<25x4x16xf32>, tensor<25x8x16x64xf32>) outs(%{{.*}} : tensor<25x4x8x64xf32>) attrs =  {compilation_info = #{{.*}}}
# AVX512: linalg.batch_matmul {compilation_info = #{{.*}}} ins(%{{.*}}, %{{.*}} : tensor<25x4x16xf32>, tensor<25x16x512xf32>)
# ZEN3: linalg.generic {{.*}}"reduction"]} ins(%{{.*}}, %{{.*}} : tensor<25x4x16xf32>, tensor<25x32x16x16xf32>) outs(%{{.*}} : tensor<25x4x32x16xf32>) attrs =  {compilation_info = #{{.*}}}


@run
def strided_dgrad_512_dx_channels():
    print(with_lowering("polyphase2", strided_dgrad, 512))


# A data gradient's GEMM contracts DY's channels (16) and writes DX's (512): B is U[25, K, C],
# panelled along DX's channels.
# CHECK-LABEL: TEST: strided_dgrad_512_dx_channels
# AVX2: linalg.generic {{.*}}"reduction"]} ins(%{{.*}}, %{{.*}} : tensor<25x4x16xf32>, tensor<25x8x16x64xf32>) outs(%{{.*}} : tensor<25x4x8x64xf32>) attrs =  {compilation_info = #{{.*}}}
# AVX512: linalg.batch_matmul {compilation_info = #{{.*}}} ins(%{{.*}}, %{{.*}} : tensor<25x4x16xf32>, tensor<25x16x512xf32>)
# ZEN3: linalg.generic {{.*}}"reduction"]} ins(%{{.*}}, %{{.*}} : tensor<25x4x16xf32>, tensor<25x32x16x16xf32>) outs(%{{.*}} : tensor<25x4x32x16xf32>) attrs =  {compilation_info = #{{.*}}}


@run
def strided_dgrad_512_dy_channels():
    print(with_lowering("polyphase2", strided_dgrad, 16, 512))


# 512 DY channels are the GEMM's depth, not its columns: no panels.
# CHECK-LABEL: TEST: strided_dgrad_512_dy_channels
# CHECK: linalg.batch_matmul {compilation_info = #{{.*}}} ins(%{{.*}}, %{{.*}} : tensor<25x4x512xf32>, tensor<25x512x16xf32>)
