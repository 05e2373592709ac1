# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64-v3 %python %s | filecheck %s --check-prefixes=CHECK,GEMM,AVX2
# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,GEMM,AMD
# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64 %python %s | filecheck %s --check-prefixes=CHECK,GENERIC

# A channels-last strided dgrad (emitted as a transposed torch.aten.convolution of DY with the
# forward filter) becomes, where cpu-conv-dgrad-col2im-gemm holds (AVX2 and AVX-512 code), one
# GEMM cols[N*Ho*Wo, R*S*C] = DY[N*Ho*Wo, K] x W[K, R*S*C] with the conv GEMM's lowering config
# (the KRSC filter read as it is: no filter transpose) and one col2im gather over DX, which
# reads each tap's column where h + pad - r = oh * stride. A CPU without AVX2 keeps the
# transposed conv. On AMD AVX-512 the GEMM's 196 DY rows go to 4 workgroups of 49
# (gemm_config.input_rows_tile).

from lit_helpers import explained_and_optimized, run

import fusilli as fs


def build(name, n, k, c, hw, kernel, stride, padding):
    g = fs.Graph(name=name)
    oh = (hw + 2 * padding - kernel) // stride + 1
    dy_dim, w_dim, dx_dim = [n, k, oh, oh], [k, c, kernel, kernel], [n, c, hw, hw]
    dy = g.tensor(name="dy", dim=dy_dim, stride=fs.strides(dy_dim, "NHWC"))
    w = g.tensor(name="w", dim=w_dim, stride=fs.strides(w_dim, "NHWC"))
    dx = g.conv_dgrad(dy, w, padding=[padding] * 2, stride=[stride] * 2, dilation=[1, 1], name="dgrad")
    dx.set_dim(dx_dim).set_stride(fs.strides(dx_dim, "NHWC")).set_output(True)
    return g.validate()


@run
def dgrad_3x3_s2():
    # 49 4x4 DX tiles: too few for cpu-conv-dgrad-winograd-strided (conv_dgrad_polyphase_nhwc.py).
    g = build("dgrad_3x3_s2", 1, 256, 256, 28, 3, 2, 1)
    print(explained_and_optimized(g))


# CHECK-LABEL: TEST: dgrad_3x3_s2
# GEMM: dgrad [conv_dgrad]: {{.*}}cpu-conv-dgrad-col2im-gemm (3x3 stride 2x2: one GEMM DY x W into 9 taps' columns
# GENERIC-NOT: cpu-conv-dgrad-col2im-gemm
# AVX2: #iree_cpu.lowering_config<{{.*}}distribution = [48, 64, 0], vector_common_parallel = [6, 16, 0]
# AMD-SAME: its 196 rows in workgroups of 49
# AMD: #iree_cpu.lowering_config<{{.*}}distribution = [49, 64, 0], vector_common_parallel = [8, 32, 0]
# GEMM-NOT: torch.aten.convolution
# GEMM: %[[W:.+]] = iree_tensor_ext.compute_barrier.start %{{.*}} : tensor<256x2304xf32>
# GEMM: %[[COLS:.+]] = linalg.matmul {{.*}}compilation_info = {{.*}} ins(%{{.*}}, %[[W]] : tensor<196x256xf32>, tensor<256x2304xf32>) outs(%{{.*}} : tensor<196x2304xf32>)
# GEMM: %[[TAPS:.+]] = tensor.expand_shape %[[COLS]] {{.*}} into tensor<1x14x14x3x3x256xf32>
# GEMM: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%{{.*}} : tensor<1x28x28x256xf32>)
# GEMM: arith.remui %{{.*}}, %c2
# GEMM: arith.divui %{{.*}}, %c2
# GEMM-COUNT-9: tensor.extract %[[TAPS]]
# GEMM-NOT: tensor.extract
# GEMM: linalg.yield
# GENERIC: torch.aten.convolution %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %true


@run
def dgrad_1x1_s2():
    g = build("dgrad_1x1_s2", 1, 512, 256, 56, 1, 2, 0)
    print(explained_and_optimized(g))


# CHECK-LABEL: TEST: dgrad_1x1_s2
# GEMM: cpu-conv-dgrad-col2im-gemm (1x1 stride 2x2: one GEMM DY x W into 1 taps' columns
# GEMM: linalg.matmul {{.*}}compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<784x512xf32>, tensor<512x256xf32>) outs(%{{.*}} : tensor<784x256xf32>)
# GEMM-COUNT-1: tensor.extract
# GEMM-NOT: tensor.extract
# GENERIC: torch.aten.convolution {{.*}}%true


# A 1x1 stride-1 dgrad is the GEMM DX[N*H*W, C] = DY[N*H*W, K] x W[K, C] of the forward filter as
# it is (no torch.aten.flip, no transpose). Where cpu-conv-im2col-gemm holds (AVX2; AMD AVX-512)
# it carries the conv GEMM's config at any rows (49 here, 2048 deep: K blocks of 256; one
# workgroup row of 49, not AVX2's 48 + 1: gemm_config.ONE_BLOCK_SHORT_REMAINDER_ISAS); elsewhere
# it is the plain torch.aten.mm.


@run
def dgrad_1x1_few_rows():
    g = build("dgrad_1x1_few_rows", 1, 2048, 512, 7, 1, 1, 0)
    print(explained_and_optimized(g))


# CHECK-LABEL: TEST: dgrad_1x1_few_rows
# GEMM: cpu-conv-im2col-gemm (1x1 dgrad, 49 GEMM rows: DY x the forward filter as it is
# AVX2: #iree_cpu.lowering_config<{{.*}}distribution = [49, 64, 0], vector_common_parallel = [6, 16, 0]
# AMD: #iree_cpu.lowering_config<{{.*}}distribution = [49, 64, 0], vector_common_parallel = [8, 32, 0]
# CHECK-NOT: torch.aten.flip
# GEMM: linalg.matmul {{.*}}compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<49x2048xf32>, tensor<2048x512xf32>) outs(%{{.*}} : tensor<49x512xf32>)
# GENERIC: torch.aten.mm %{{.*}}, %{{.*}} : !torch.vtensor<[49,2048],f32>, !torch.vtensor<[2048,512],f32> -> !torch.vtensor<[49,512],f32>
