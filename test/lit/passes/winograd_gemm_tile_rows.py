# RUN: env FUSILLI_LIT_TARGET=cpu:sapphirerapids %python %s | filecheck %s --check-prefixes=CHECK,INTEL
# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,AMD
# RUN: env FUSILLI_LIT_TARGET=cpu:znver5 %python %s | filecheck %s --check-prefixes=CHECK,ZEN5
# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64-v4 %python %s | filecheck %s --check-prefixes=CHECK,AVX512
# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64-v3 %python %s | filecheck %s --check-prefixes=CHECK,AVX2

# The Winograd GEMM's lowering config by its rows (fusilli/passes/gemm_config.py): 64-row
# workgroups with the ISA's register tile (AVX2 6x16 in 48-row workgroups, AVX-512 8x32), and
# the 6x64 tile in 60-row workgroups on Intel AVX-512 cores from 512 rows (4x4 tiles) and on
# Zen 5 from 384 rows 128 deep (gemm_config.WINOGRAD_GEMM_TILES_BY_CORE; Zen 4 keeps 8x32).
# A 56x56 image at batch 1 has 196 tiles, at batch 4 784. A last row of workgroups short by
# more than a register tile's rows (784 = 12 x 64 + 16, 16 x 48 + 16) leaves out
# cache_parallel; 196 (3 x 64 + 4) and 784 in 60-row workgroups (13 x 60 + 4) keep it.

from lit_helpers import optimized, run

import fusilli as fs


def build(name, n, c=64):
    g = fs.Graph(name=name)
    x = g.tensor(name="x", dim=[n, c, 56, 56], stride=fs.strides([n, c, 56, 56], "NHWC"))
    w = g.tensor(name="w", dim=[c, c, 3, 3], stride=fs.strides([c, c, 3, 3], "NHWC"))
    g.conv_fprop(x, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv").set_output(True)
    return g.validate()


@run
def tiles_196():
    print(optimized(build("winograd_rows_196", 1)))


# CHECK-LABEL: TEST: tiles_196
# INTEL: lowering_config<cache_parallel = [1, 64, 64, 0], distribution = [1, 64, 64, 0], vector_common_parallel = [1, 8, 32, 0]
# AMD: lowering_config<cache_parallel = [1, 64, 64, 0], distribution = [1, 64, 64, 0], vector_common_parallel = [1, 8, 32, 0]
# ZEN5: lowering_config<cache_parallel = [1, 64, 64, 0], distribution = [1, 64, 64, 0], vector_common_parallel = [1, 8, 32, 0]
# AVX512: lowering_config<cache_parallel = [1, 64, 64, 0], distribution = [1, 64, 64, 0], vector_common_parallel = [1, 8, 32, 0]
# AVX2: lowering_config<cache_parallel = [1, 48, 64, 0], distribution = [1, 48, 64, 0], vector_common_parallel = [1, 6, 16, 0]
# CHECK: linalg.batch_matmul {compilation_info = {{.*}}} ins(%{{.*}}, %{{.*}} : tensor<36x196x64xf32>, tensor<36x64x64xf32>)


@run
def tiles_784():
    print(optimized(build("winograd_rows_784", 4)))


# CHECK-LABEL: TEST: tiles_784
# INTEL: lowering_config<cache_parallel = [1, 60, 64, 0], distribution = [1, 60, 64, 0], vector_common_parallel = [1, 6, 64, 0]
# AMD: lowering_config<distribution = [1, 64, 64, 0], vector_common_parallel = [1, 8, 32, 0]
# ZEN5: lowering_config<distribution = [1, 64, 64, 0], vector_common_parallel = [1, 8, 32, 0]
# AVX512: lowering_config<distribution = [1, 64, 64, 0], vector_common_parallel = [1, 8, 32, 0]
# AVX2: lowering_config<distribution = [1, 48, 64, 0], vector_common_parallel = [1, 6, 16, 0]
# CHECK: linalg.batch_matmul {compilation_info = {{.*}}} ins(%{{.*}}, %{{.*}} : tensor<36x784x64xf32>, tensor<36x64x64xf32>)


@run
def tiles_784_deep():
    print(optimized(build("winograd_rows_784_deep", 4, 128)))


# Zen 5's 6x64 is for GEMMs 128 deep or more (64 deep ones ran even or slower with it).
# CHECK-LABEL: TEST: tiles_784_deep
# INTEL: lowering_config<cache_parallel = [1, 60, 64, 0], distribution = [1, 60, 64, 0], vector_common_parallel = [1, 6, 64, 0]
# AMD: lowering_config<distribution = [1, 64, 64, 0], vector_common_parallel = [1, 8, 32, 0]
# ZEN5: lowering_config<cache_parallel = [1, 60, 64, 0], distribution = [1, 60, 64, 0], vector_common_parallel = [1, 6, 64, 0]
# AVX512: lowering_config<distribution = [1, 64, 64, 0], vector_common_parallel = [1, 8, 32, 0]
# AVX2: lowering_config<distribution = [1, 48, 64, 0], vector_common_parallel = [1, 6, 16, 0]
# CHECK: linalg.batch_matmul {compilation_info = {{.*}}} ins(%{{.*}}, %{{.*}} : tensor<36x784x128xf32>, tensor<36x128x128xf32>)
