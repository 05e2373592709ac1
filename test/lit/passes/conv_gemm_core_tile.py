# RUN: %python %s > %t.json
# RUN: %fusilli-opt %t.json --backend cpu --arch znver5 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,ZEN5
# RUN: %fusilli-opt %t.json --backend cpu --arch znver4 --pass-pipeline=default | filecheck %s --check-prefixes=CHECK,ZEN4

# Conv GEMMs per core (gemm_config.CONV_GEMM_TILES_BY_CORE): on Zen 5 (znver5) a conv GEMM of at
# least 512 rows 128 deep takes the 6x64 register tile in 60x64 workgroups; Zen 4 (znver4) keeps
# AMD's 8x32 in 64x64. ResNet-50's 1x1 8x256x14x14->1024 (1568 rows, 256 deep) takes it; its
# 1x1 8x64x56x56->256 (25088 rows, 64 deep) does not. The strided 1x1 8x512x28x28->1024 reads
# its rows as a view (two row loops, 8*14 by 14), 4 rows of 14 per workgroup, 7 of the 14 in the
# register tile: on Zen 5 its 6x64 one row taller (no divisor of 14 from 3 to 6, and 7x64 fits 28
# accumulators: gemm_config._taller_register_rows), on Zen 4 8x32's divisor 7.

import fusilli as fs

g = fs.Graph(name="conv_gemm_core_tile")


def conv(name, n, c, hw, k, stride):
    x = g.tensor(name=f"{name}_x", dim=[n, c, hw, hw], stride=fs.strides([n, c, hw, hw], "NHWC"))
    w = g.tensor(name=f"{name}_w", dim=[k, c, 1, 1], stride=fs.strides([k, c, 1, 1], "NHWC"))
    y = g.conv_fprop(x, w, padding=[0, 0], stride=[stride, stride], dilation=[1, 1], name=name)
    y.set_output(True).set_name(f"{name}_y")


conv("deep", 8, 256, 14, 1024, 1)
conv("shallow", 8, 64, 56, 256, 1)
conv("strided", 8, 512, 28, 1024, 2)
print(g.to_json())

# ZEN5-DAG: #[[DEEP:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_parallel = [60, 64, 0], distribution = [60, 64, 0], vector_common_parallel = [6, 64, 0], vector_reduction = [0, 0, 8]>
# ZEN5-DAG: #[[SHALLOW:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_parallel = [64, 64, 0], distribution = [64, 64, 0], vector_common_parallel = [8, 32, 0], vector_reduction = [0, 0, 8]>
# ZEN5-DAG: #[[ROWS:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_reduction = [0, 0, 0, 256], distribution = [4, 14, 64, 0], vector_common_parallel = [1, 7, 64, 0], vector_reduction = [0, 0, 0, 8]>
# ZEN4-DAG: #[[DEEP:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_parallel = [64, 64, 0], distribution = [64, 64, 0], vector_common_parallel = [8, 32, 0], vector_reduction = [0, 0, 8]>
# ZEN4-DAG: #[[ROWS:[a-z0-9]+]] = #iree_cpu.lowering_config<cache_reduction = [0, 0, 0, 256], distribution = [4, 14, 64, 0], vector_common_parallel = [1, 7, 32, 0], vector_reduction = [0, 0, 0, 8]>
# CHECK-DAG: #[[INFO_DEEP:[a-z0-9]+]] = #iree_codegen.compilation_info<lowering_config = #[[DEEP]]
# CHECK-DAG: #[[INFO_ROWS:[a-z0-9]+]] = #iree_codegen.compilation_info<lowering_config = #[[ROWS]]
# CHECK-LABEL: func.func @main(
# CHECK: linalg.matmul {compilation_info = #[[INFO_DEEP]]} ins(%{{.*}}, %{{.*}} : tensor<1568x256xf32>, tensor<256x1024xf32>)
# ZEN5: linalg.matmul {compilation_info = #{{[a-z0-9]+}}} ins(%{{.*}}, %{{.*}} : tensor<25088x64xf32>, tensor<64x256xf32>)
# CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<112x14x512xf32>, tensor<512x1024xf32>) {{.*}}compilation_info = #[[INFO_ROWS]]
