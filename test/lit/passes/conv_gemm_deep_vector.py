# RUN: %python %s > %t.json
# RUN: %fusilli-opt %t.json --backend cpu --arch znver1 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,ZEN1,ROWS
# RUN: %fusilli-opt %t.json --backend cpu --arch znver2 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,ZEN2,ROWS
# RUN: %fusilli-opt %t.json --backend cpu --arch znver3 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,ZEN3

# Deep conv GEMMs per core (gemm_config.DEEP_VECTOR_BY_CORE): on Zen 1 (znver1) a conv GEMM at
# least 1024 deep takes 2 rows x four 8-wide vectors, the workgroups (48x64) and K blocks (64, B
# wide and 1024 deep) of AMD's AVX2 tile kept; a shallower one (512 deep, its filter's rows padded:
# K whole) keeps 6x16, and Zen 2 (znver2) keeps 6x16 everywhere. ResNet-50's 1x1 8x1024x14x14->512
# (1568 rows, 1024 deep), its 1x1 dgrad 8x512x7x7 from 2048 DY channels (392 rows, 2048 deep), and
# 1x1 8x512x14x14->512 (1568 rows, 512 deep). On Zen 1 a stride-1 1x1 conv that deep takes the GEMM
# from 49 rows (rules.CPU_CONV_GEMM_MIN_ROWS_1X1_PADDED): 1x1 1x1024x14x14->256 (196 rows); Zen 2 leaves
# it to IREE's data tiling (torch.aten.mm, no config); Zen 3 (znver3) takes Zen 2's tiles, and that
# GEMM from 49 rows whatever its depth (rules.CPU_CONV_GEMM_1X1_FEW_ROWS_CORES). Where Zen 1 takes 2x32, the filter is written
# in 64-column panels (gemm_config.conv_b_panel): the forward filter's transposition and the 1x1
# dgrad's copy write [K / 64, depth, 64] and the GEMM is a contraction over (m, j, n, c), its N split
# in the config; Zen 2's filters keep their padded rows and linalg.matmul. Zen 3 writes a forward
# conv's filter of 256 or more columns in 16-column panels at any depth (gemm_config.CONV_B_PANEL_BY_CORE):
# the deep, shallow and few-rows convs, each (from 196 rows) under the panel's 4x16 tile in 28-row
# workgroups (gemm_config.PANEL_GEMM_TILE_BY_CORE); the dgrad's B keeps its rows and the 6x16. From
# 98 rows the 4x16 where the GEMM is 1024 deep (gemm_config.PANEL_GEMM_DEEP_ROWS_BY_CORE: 1x1
# 2x1024x7x7->256), the 6x16 in 48-row workgroups where it is shallower (2x512x7x7->256).

import fusilli as fs

g = fs.Graph(name="conv_gemm_deep_vector")


def conv(name, n, c, hw, k):
    x = g.tensor(name=f"{name}_x", dim=[n, c, hw, hw], stride=fs.strides([n, c, hw, hw], "NHWC"))
    w = g.tensor(name=f"{name}_w", dim=[k, c, 1, 1], stride=fs.strides([k, c, 1, 1], "NHWC"))
    y = g.conv_fprop(x, w, padding=[0, 0], stride=[1, 1], dilation=[1, 1], name=name)
    y.set_output(True).set_name(f"{name}_y")


def dgrad(name, n, k, hw, c):
    dy = g.tensor(name=f"{name}_dy", dim=[n, k, hw, hw], stride=fs.strides([n, k, hw, hw], "NHWC"))
    w = g.tensor(name=f"{name}_w", dim=[k, c, 1, 1], stride=fs.strides([k, c, 1, 1], "NHWC"))
    dx = g.conv_dgrad(dy, w, padding=[0, 0], stride=[1, 1], dilation=[1, 1], name=name)
    dx.set_dim([n, c, hw, hw]).set_output(True).set_name(f"{name}_dx")


conv("deep", 8, 1024, 14, 512)
dgrad("dgrad", 8, 2048, 7, 512)
conv("shallow", 8, 512, 14, 512)
conv("few_rows", 1, 1024, 14, 256)
conv("rows_98", 2, 1024, 7, 256)
conv("rows_98_shallow", 2, 512, 7, 256)
print(g.to_json())

# ZEN1-DAG: #[[DEEP:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_parallel = [48, 1, 64, 0], cache_reduction = [0, 0, 0, 64], distribution = [48, 1, 64, 0], vector_common_parallel = [2, 1, 32, 0], vector_reduction = [0, 0, 0, 8]>
# ZEN2-DAG: #[[DEEP:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_parallel = [48, 64, 0], cache_reduction = [0, 0, 64], distribution = [48, 64, 0], vector_common_parallel = [6, 16, 0], vector_reduction = [0, 0, 8]>
# ZEN3-DAG: #[[DEEP:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_parallel = [48, 64, 0], cache_reduction = [0, 0, 64], distribution = [48, 64, 0], vector_common_parallel = [6, 16, 0], vector_reduction = [0, 0, 8]>
# ROWS-DAG: #[[SHALLOW:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_parallel = [48, 64, 0], distribution = [48, 64, 0], vector_common_parallel = [6, 16, 0], vector_reduction = [0, 0, 8]>
# ZEN3-DAG: #[[SHALLOW:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_parallel = [28, 4, 16, 0], distribution = [28, 4, 16, 0], vector_common_parallel = [4, 1, 16, 0], vector_reduction = [0, 0, 0, 8]>
# ZEN3-DAG: #[[PANELS:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_parallel = [28, 4, 16, 0], cache_reduction = [0, 0, 0, 64], distribution = [28, 4, 16, 0], vector_common_parallel = [4, 1, 16, 0], vector_reduction = [0, 0, 0, 8]>
# ZEN3-DAG: #[[INFO_PANELS:[a-z0-9]+]] = #iree_codegen.compilation_info<lowering_config = #[[PANELS]]
# ZEN3-DAG: #[[PANELS_6X16:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_parallel = [48, 4, 16, 0], distribution = [48, 4, 16, 0], vector_common_parallel = [6, 1, 16, 0], vector_reduction = [0, 0, 0, 8]>
# ZEN3-DAG: #[[INFO_PANELS_6X16:[a-z0-9]+]] = #iree_codegen.compilation_info<lowering_config = #[[PANELS_6X16]]
# CHECK-DAG: #[[INFO_DEEP:[a-z0-9]+]] = #iree_codegen.compilation_info<lowering_config = #[[DEEP]]
# CHECK-DAG: #[[INFO_SHALLOW:[a-z0-9]+]] = #iree_codegen.compilation_info<lowering_config = #[[SHALLOW]]
# CHECK-LABEL: func.func @main(
# ZEN1: linalg.transpose ins(%{{.*}} : tensor<8x64x1024xf32>) outs(%{{.*}} : tensor<8x1024x64xf32>) permutation = [0, 2, 1]
# ZEN1: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1568x1024xf32>, tensor<8x1024x64xf32>) outs(%{{.*}} : tensor<1568x8x64xf32>) attrs = {compilation_info = #[[INFO_DEEP]]}
# ZEN1: linalg.transpose ins(%{{.*}} : tensor<2048x8x64xf32>) outs(%{{.*}} : tensor<8x2048x64xf32>) permutation = [1, 0, 2]
# ZEN1: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<392x2048xf32>, tensor<8x2048x64xf32>) outs(%{{.*}} : tensor<392x8x64xf32>) attrs = {compilation_info = #[[INFO_DEEP]]}
# ZEN2: linalg.matmul {compilation_info = #[[INFO_DEEP]]} ins(%{{.*}}, %{{.*}} : tensor<1568x1024xf32>, tensor<1024x512xf32>)
# ZEN3: linalg.transpose ins(%{{.*}} : tensor<32x16x1024xf32>) outs(%{{.*}} : tensor<32x1024x16xf32>) permutation = [0, 2, 1]
# ZEN3: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1568x1024xf32>, tensor<32x1024x16xf32>) outs(%{{.*}} : tensor<1568x32x16xf32>) attrs = {compilation_info = #[[INFO_PANELS]]}
# ZEN2: linalg.matmul {compilation_info = #[[INFO_DEEP]]} ins(%{{.*}}, %{{.*}} : tensor<392x2048xf32>, tensor<2048x512xf32>)
# ZEN3: linalg.matmul {compilation_info = #[[INFO_DEEP]]} ins(%{{.*}}, %{{.*}} : tensor<392x2048xf32>, tensor<2048x512xf32>)
# ROWS: compute_barrier.start %padded{{.*}} : tensor<512x528xf32>
# ROWS: linalg.matmul {compilation_info = #[[INFO_SHALLOW]]} ins(%{{.*}}, %{{.*}} : tensor<1568x512xf32>, tensor<512x512xf32>)
# ZEN3: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1568x512xf32>, tensor<32x512x16xf32>) outs(%{{.*}} : tensor<1568x32x16xf32>) attrs = {compilation_info = #[[INFO_SHALLOW]]}
# ZEN1: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<196x1024xf32>, tensor<4x1024x64xf32>) outs(%{{.*}} : tensor<196x4x64xf32>) attrs = {compilation_info = #[[INFO_DEEP]]}
# ZEN2: torch.aten.mm %{{.*}}, %{{.*}} : !torch.vtensor<[196,1024],f32>, !torch.vtensor<[1024,256],f32>
# ZEN3: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<196x1024xf32>, tensor<16x1024x16xf32>) outs(%{{.*}} : tensor<196x16x16xf32>) attrs = {compilation_info = #[[INFO_PANELS]]}
# ZEN3: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<98x1024xf32>, tensor<16x1024x16xf32>) outs(%{{.*}} : tensor<98x16x16xf32>) attrs = {compilation_info = #[[INFO_PANELS]]}
# ZEN3: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<98x512xf32>, tensor<16x512x16xf32>) outs(%{{.*}} : tensor<98x16x16xf32>) attrs = {compilation_info = #[[INFO_PANELS_6X16]]}
