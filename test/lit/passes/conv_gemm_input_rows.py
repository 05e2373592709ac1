# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,AMD
# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64-v3 %python %s | filecheck %s --check-prefixes=CHECK,V3

# On AMD's AVX-512 cores a conv GEMM whose A is the graph's input (a stride-1 1x1 conv's reshaped
# X, a 1x1 dgrad's DY, a strided dgrad's DY in its col2im GEMM) of fewer than 512 rows, where the
# table's 64-row workgroups leave a last one of a partial register tile, takes workgroups of a
# divisor of its rows (gemm_config.input_rows_tile, INPUT_ROWS_DIVISOR_BELOW): ResNet-50's batch-1
# 14x14 GEMMs, 196 rows, as 4 x 49, named by g.explain (the forward conv has 512 output channels,
# whose filter's padded rows take AVX2 code to the GEMM at 196 rows too). 784 rows (a last
# workgroup of two whole register tiles) keep 64. AVX2 code keeps the table's 48 rows.

from lit_helpers import explained_and_optimized, run

import fusilli as fs


def nhwc(g, name, dims):
    return g.tensor(name=name, dim=dims, stride=fs.strides(dims, "NHWC"))


def fprop(name, c, hw, k):
    g = fs.Graph(name=name)
    x, w = nhwc(g, "x", [1, c, hw, hw]), nhwc(g, "w", [k, c, 1, 1])
    g.conv_fprop(x, w, padding=[0, 0], stride=[1, 1], dilation=[1, 1], name="conv").set_output(True)
    return g.validate()


def dgrad(name, k, c, hw, stride):
    """A 1x1 conv_dgrad of DY [1, k, hw, hw] into DX [1, c, hw * stride, hw * stride]."""
    g = fs.Graph(name=name)
    dy, w = nhwc(g, "dy", [1, k, hw, hw]), nhwc(g, "w", [k, c, 1, 1])
    dx_dims = [1, c, hw * stride, hw * stride]
    dx = g.conv_dgrad(dy, w, padding=[0, 0], stride=[stride] * 2, dilation=[1, 1], name="dgrad")
    dx.set_dim(dx_dims).set_stride(fs.strides(dx_dims, "NHWC")).set_output(True)
    return g.validate()


@run
def fprop_1x1_196_rows():
    print(explained_and_optimized(fprop("fprop_1x1_196_rows", 1024, 14, 512)))


# CHECK-LABEL: TEST: fprop_1x1_196_rows
# AMD: conv [conv_fprop]: {{.*}}cpu-conv-im2col-gemm (1x1, 196 GEMM rows{{.*}}its 196 rows in workgroups of 49 (a divisor: no partial register tile in a last workgroup)
# V3-NOT: workgroups of
# AMD: #iree_cpu.lowering_config<cache_parallel = [49, 64, 0], cache_reduction = [0, 0, 256], distribution = [49, 64, 0], vector_common_parallel = [8, 32, 0]
# V3: #iree_cpu.lowering_config<cache_parallel = [48, 64, 0], distribution = [48, 64, 0], vector_common_parallel = [6, 16, 0]
# CHECK: linalg.matmul {compilation_info = {{.*}}} ins(%{{.*}}, %{{.*}} : tensor<196x1024xf32>, tensor<1024x512xf32>)


@run
def dgrad_1x1_196_rows():
    print(explained_and_optimized(dgrad("dgrad_1x1_196_rows", 1024, 256, 14, 1)))


# CHECK-LABEL: TEST: dgrad_1x1_196_rows
# AMD: dgrad [conv_dgrad]: {{.*}}(1x1 dgrad, 196 GEMM rows{{.*}}its 196 rows in workgroups of 49
# AMD: #iree_cpu.lowering_config<cache_parallel = [49, 64, 0], cache_reduction = [0, 0, 256], distribution = [49, 64, 0]
# V3: #iree_cpu.lowering_config<cache_parallel = [48, 64, 0], distribution = [48, 64, 0]
# CHECK: linalg.matmul {{.*}}compilation_info = {{.*}} : tensor<196x1024xf32>, tensor<1024x256xf32>)


@run
def fprop_1x1_784_rows():
    print(explained_and_optimized(fprop("fprop_1x1_784_rows", 512, 28, 128)))


# CHECK-LABEL: TEST: fprop_1x1_784_rows
# CHECK-NOT: workgroups of
# AMD: #iree_cpu.lowering_config<cache_parallel = [64, 64, 0], cache_reduction = [0, 0, 256], distribution = [64, 64, 0]
# V3: #iree_cpu.lowering_config<cache_parallel = [48, 64, 0], distribution = [48, 64, 0]
# CHECK: linalg.matmul {compilation_info = {{.*}}} ins(%{{.*}}, %{{.*}} : tensor<784x512xf32>, tensor<512x128xf32>)


@run
def dgrad_1x1_s2_col2im():
    # ResNet-50's dgrad of its 1x1 s2 512x28x28->1024: the col2im GEMM DY[196, 1024] x W[1024, 512].
    print(explained_and_optimized(dgrad("dgrad_1x1_s2_col2im", 1024, 512, 14, 2)))


# CHECK-LABEL: TEST: dgrad_1x1_s2_col2im
# CHECK: dgrad [conv_dgrad]: {{.*}}cpu-conv-dgrad-col2im-gemm
# AMD-SAME: its 196 rows in workgroups of 49
# V3-NOT: workgroups of
# AMD: #iree_cpu.lowering_config<cache_parallel = [49, 64, 0], cache_reduction = [0, 0, 256], distribution = [49, 64, 0]
# V3: #iree_cpu.lowering_config<cache_parallel = [48, 64, 0], distribution = [48, 64, 0]
# CHECK: linalg.matmul {{.*}}compilation_info = {{.*}} : tensor<196x1024xf32>, tensor<1024x512xf32>)
