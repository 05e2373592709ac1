# RUN: env FUSILLI_LIT_TARGET=cpu:znver1 %python %s | filecheck %s --check-prefixes=CHECK,ZEN,ROWS
# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64-v3 %python %s | filecheck %s --check-prefixes=CHECK,V3,ROWS
# RUN: env FUSILLI_LIT_TARGET=cpu:znver3 %python %s | filecheck %s --check-prefixes=CHECK,ZEN3

# On AMD's AVX2 cores (znver1-3) a 2-D conv GEMM with two row blocks or one, >= 128 columns and a B
# operand over 128 KB takes K in cache blocks of 64 (gemm_config.narrow_k_block: on Zen 1 the
# 48x64 workgroup's whole-K B block outgrew the 32 KB L1), unless B's rows are written padded
# (512-2048 columns, gemm_config.padded_b_columns) and K is below 1024
# (gemm_config.PADDED_B_WHOLE_K_BELOW): then K is whole. AVX2 code for no named CPU (x86-64-v3)
# takes K whole below 2048 deep in forward and data-gradient GEMMs (gemm_config.CONV_WHOLE_K_BELOW)
# and the table's blocks of 256 from 512 deep in weight-gradient ones. Forward, data-gradient and weight-gradient
# GEMMs alike; a B of 128 KB (the suite's 1x1 conv) keeps whole K. Zen 3 (znver3) takes K whole below
# 1024 deep in forward and data-gradient GEMMs of more than one row block whatever B's rows
# (gemm_config.CONV_WHOLE_K_BELOW_BY_CORE),
# the blocks of 64 from 1024 deep and in weight gradients, and the GEMMs of strided convs' patch
# matrices in the table's blocks of 256 (gemm_config.STRIDED_PATCH_TABLE_K_BLOCK_CORES).

from lit_helpers import explained_and_optimized, run

import fusilli as fs


def nhwc(g, name, dims):
    return g.tensor(name=name, dim=dims, stride=fs.strides(dims, "NHWC"))


def fprop(name, n, c, hw, k, stride):
    g = fs.Graph(name=name)
    x, w = nhwc(g, "x", [n, c, hw, hw]), nhwc(g, "w", [k, c, 1, 1])
    g.conv_fprop(x, w, padding=[0, 0], stride=[stride] * 2, dilation=[1, 1], name="conv").set_output(True)
    return g.validate()


def gradient(name, kind, operands, result, stride=1):
    """A 1x1 ``kind`` (conv_dgrad / conv_wgrad) graph of NHWC ``operands`` (name, dims) and a
    ``result`` of those dims."""
    g = fs.Graph(name=name)
    ins = [nhwc(g, tensor, dims) for tensor, dims in operands]
    kw = dict(padding=[0, 0], stride=[stride] * 2, dilation=[1, 1])
    y = getattr(g, kind)(*ins, **kw, name=kind.removeprefix("conv_"))
    y.set_dim(result).set_stride(fs.strides(result, "NHWC")).set_output(True)
    return g.validate()


@run
def fprop_1x1_s2_wide():
    # 784 x 512 GEMM 256 deep: B is 512 KB.
    print(explained_and_optimized(fprop("fprop_1x1_s2_wide", 1, 256, 56, 512, 2)))


# B's 512 columns are written in rows of 528 (on Zen 3 in 16-column panels): whole K on each.
# CHECK-LABEL: TEST: fprop_1x1_s2_wide
# ROWS: conv [conv_fprop]: {{.*}}cpu-conv-im2col-gemm (1x1, 784 GEMM rows{{.*}}the filter written in rows of 528
# ROWS: #iree_cpu.lowering_config<cache_parallel = [48, 64, 0], distribution = [48, 64, 0], vector_common_parallel = [6, 16, 0], vector_reduction = [0, 0, 8]>
# ROWS: linalg.matmul {compilation_info = {{.*}}} ins(%{{.*}}, %{{.*}} : tensor<784x256xf32>, tensor<256x512xf32>)
# ZEN3: conv [conv_fprop]: {{.*}}cpu-conv-im2col-gemm (1x1, 784 GEMM rows{{.*}}the filter written in 16-column panels
# ZEN3: #iree_cpu.lowering_config<cache_parallel = [28, 4, 16, 0], distribution = [28, 4, 16, 0], vector_common_parallel = [4, 1, 16, 0], vector_reduction = [0, 0, 0, 8]>
# ZEN3: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<784x256xf32>, tensor<32x256x16xf32>) outs(%{{.*}} : tensor<784x32x16xf32>)


@run
def fprop_1x1_unpadded_512_deep():
    # 784 x 128 GEMM 512 deep: B is 256 KB in rows of 512 B (no padding).
    print(explained_and_optimized(fprop("fprop_1x1_unpadded_512_deep", 1, 512, 28, 128, 1)))


# CHECK-LABEL: TEST: fprop_1x1_unpadded_512_deep
# ZEN: #iree_cpu.lowering_config<cache_parallel = [48, 64, 0], cache_reduction = [0, 0, 64], distribution = [48, 64, 0]
# ZEN3: conv [conv_fprop]: {{.*}}GEMM tuned for avx2, AMD (znver3: K whole below 1024 deep))
# ZEN3: #iree_cpu.lowering_config<cache_parallel = [48, 64, 0], distribution = [48, 64, 0], vector_common_parallel = [6, 16, 0]
# V3: #iree_cpu.lowering_config<cache_parallel = [48, 64, 0], distribution = [48, 64, 0], vector_common_parallel = [6, 16, 0]
# CHECK: linalg.matmul {compilation_info = {{.*}}} ins(%{{.*}}, %{{.*}} : tensor<784x512xf32>, tensor<512x128xf32>)


@run
def fprop_1x1_deep_padded():
    # 196 x 512 GEMM 1024 deep, B padded: K blocks of 64 on Zen from 1024 deep, whole K on V3.
    print(explained_and_optimized(fprop("fprop_1x1_deep_padded", 1, 1024, 14, 512, 1)))


# On Zen 1 (znver1) that deep the filter is written in 64-column panels instead (gemm_config.conv_b_panel,
# conv_gemm_deep_vector.py): the same K blocks, N split in the config.
# CHECK-LABEL: TEST: fprop_1x1_deep_padded
# ZEN: #iree_cpu.lowering_config<cache_parallel = [48, 1, 64, 0], cache_reduction = [0, 0, 0, 64], distribution = [48, 1, 64, 0]
# V3: #iree_cpu.lowering_config<cache_parallel = [48, 64, 0], distribution = [48, 64, 0]
# Zen 3 (znver3) writes it in 16-column panels (gemm_config.CONV_B_PANEL_BY_CORE), K in blocks of 64,
# under the panel's 4x16 tile in 28-row workgroups (gemm_config.PANEL_GEMM_TILE_BY_CORE).
# ZEN3: #iree_cpu.lowering_config<cache_parallel = [28, 4, 16, 0], cache_reduction = [0, 0, 0, 64], distribution = [28, 4, 16, 0], vector_common_parallel = [4, 1, 16, 0]
# ZEN3: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<196x1024xf32>, tensor<32x1024x16xf32>)
# ZEN: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<196x1024xf32>, tensor<8x1024x64xf32>)
# V3: linalg.matmul {compilation_info = {{.*}}} ins(%{{.*}}, %{{.*}} : tensor<196x1024xf32>, tensor<1024x512xf32>)


@run
def fprop_3x3_s2_patches():
    # 196 x 256 GEMM 2304 deep over the gathered patch matrix of a 3x3 stride-2 conv.
    g = fs.Graph(name="fprop_3x3_s2_patches")
    x, w = nhwc(g, "x", [1, 256, 28, 28]), nhwc(g, "w", [256, 256, 3, 3])
    g.conv_fprop(x, w, padding=[1, 1], stride=[2, 2], dilation=[1, 1], name="conv").set_output(True)
    print(explained_and_optimized(g.validate()))


# CHECK-LABEL: TEST: fprop_3x3_s2_patches
# Zen 1 takes the polyphase Winograd there (from 49 tiles: rules.CPU_CONV_POLYPHASE_CORE_LIMITS).
# ZEN: conv [conv_fprop]: {{.*}}cpu-conv-winograd-strided
# ZEN3: conv [conv_fprop]: {{.*}}GEMM tuned for avx2, AMD (znver3: K in blocks of 256)
# ZEN3: cache_reduction = [0, 0, 0, 256]
# ZEN3: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<196x2304xf32>, tensor<16x2304x16xf32>)
# V3: cache_reduction = [0, 0, 256]
# V3: linalg.matmul {compilation_info = {{.*}}} ins(%{{.*}}, %{{.*}} : tensor<196x2304xf32>, tensor<2304x256xf32>)


@run
def fprop_1x1_small_b():
    # 3136 x 128 GEMM 256 deep: B is 128 KB, whole K on both.
    print(explained_and_optimized(fprop("fprop_1x1_small_b", 4, 256, 28, 128, 1)))


# CHECK-LABEL: TEST: fprop_1x1_small_b
# CHECK-NOT: cache_reduction
# CHECK: linalg.matmul {compilation_info = {{.*}}} ins(%{{.*}}, %{{.*}} : tensor<3136x256xf32>, tensor<256x128xf32>)


@run
def dgrad_1x1_wide():
    # DX[196, 1024] = DY[196, 256] x W[256, 1024]: B is 1 MB.
    g = gradient(
        "dgrad_1x1_wide", "conv_dgrad", [("dy", [1, 256, 14, 14]), ("w", [256, 1024, 1, 1])], [1, 1024, 14, 14]
    )
    print(explained_and_optimized(g))


# Its filter copy written padded (196 rows >= 128): whole K on both.
# CHECK-LABEL: TEST: dgrad_1x1_wide
# CHECK-NOT: cache_reduction
# CHECK: linalg.matmul {{.*}}compilation_info = {{.*}} : tensor<196x256xf32>, tensor<256x1024xf32>)


@run
def wgrad_1x1_s2_deep():
    # DW[512, 256] over 576 output positions: B (X's gathered 576 x 256) is 576 KB; V3's K blocks
    # of 256. (Stride 2: AMD's AVX2 cores data-tile stride-1 ones, conv_wgrad_gemm.py, and Zen 3
    # strided 1x1 ones too from 392 positions; from 784 positions Zen 1 takes its own tile,
    # conv_wgrad_gemm.py's wgrad_1x1_many_positions.)
    operands = [("dy", [1, 512, 24, 24]), ("x", [1, 256, 48, 48])]
    print(explained_and_optimized(gradient("wgrad_1x1_s2_deep", "conv_wgrad", operands, [512, 256, 1, 1], 2)))


# CHECK-LABEL: TEST: wgrad_1x1_s2_deep
# ROWS: wgrad [conv_wgrad]: {{.*}}cpu-conv-wgrad-gemm (one GEMM over 576 output positions, conv GEMM tile
# ZEN: #iree_cpu.lowering_config<cache_parallel = [48, 64, 0], cache_reduction = [0, 0, 64], distribution = [48, 64, 0], vector_common_parallel = [6, 16, 0]
# V3: cache_reduction = [0, 0, 256]
# ROWS: linalg.matmul {{.*}}compilation_info = {{.*}} : tensor<576x512xf32>, tensor<576x256xf32>) outs(%{{.*}} : tensor<512x256xf32>)
# ZEN3: wgrad [conv_wgrad]: {{.*}}cpu-conv-wgrad-data-tiling (one GEMM DW[512, 256] over 576 output positions
# ZEN3-NOT: compilation_info
# ZEN3: linalg.matmul {{.*}} : tensor<576x512xf32>, tensor<576x256xf32>) outs(%{{.*}} : tensor<512x256xf32>)


@run
def dgrad_1x1_one_row_block():
    # DX[49, 2048] = DY[49, 512] x W[512, 2048]: ResNet-50's batch-1 7x7 dgrad, its 49 rows one
    # block (gemm_config.ONE_BLOCK_SHORT_REMAINDER_ISAS), B 4 MB, too few rows to pay for a padded
    # copy (gemm_config.B_ROW_PAD_COPY_MIN_ROWS): K blocks of 64 on Zen as well; on V3 512 deep,
    # K whole (Zen 3 keeps the blocks of 64 for one row block).
    g = gradient(
        "dgrad_1x1_one_row_block", "conv_dgrad", [("dy", [1, 512, 7, 7]), ("w", [512, 2048, 1, 1])], [1, 2048, 7, 7]
    )
    print(explained_and_optimized(g))


# CHECK-LABEL: TEST: dgrad_1x1_one_row_block
# ZEN: #iree_cpu.lowering_config<cache_parallel = [49, 64, 0], cache_reduction = [0, 0, 64], distribution = [49, 64, 0]
# V3: #iree_cpu.lowering_config<cache_parallel = [49, 64, 0], distribution = [49, 64, 0]
# ZEN3: #iree_cpu.lowering_config<cache_parallel = [49, 64, 0], cache_reduction = [0, 0, 64], distribution = [49, 64, 0]
# CHECK: linalg.matmul {{.*}}compilation_info = {{.*}} : tensor<49x512xf32>, tensor<512x2048xf32>)
