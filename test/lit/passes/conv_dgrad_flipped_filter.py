# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64-v3 %python %s | filecheck %s --check-prefixes=CHECK,AVX2
# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,AMD

# A channels-last stride-1 dgrad reads its forward filter unflipped, copying nothing
# (conv_layout._flipped_taps): 1x96x8x8 <- 80, 3x3 (4 4x4 tiles): as x86-64-v3 code
# cpu-conv-dgrad-flipped-gemm makes it the im2col GEMM whose patch gather, laid out
# (n, oh, ow, k, r, s), indexes tap (2 - r, 2 - s), over the KRSC filter as the [K*R*S, C]
# matrix it already is (a collapse, no transpose); 1x96x16x16
# (16 tiles) is Winograd F(4x4), whose filter transform reads the taps as [K, C] slices of the
# KRSC forward filter, tap (0, 0) first from [0, 2, 2, 0]. No torch.aten.flip is left.

from lit_helpers import explained_and_optimized, optimized, run

import fusilli as fs


def build(name, hw):
    g = fs.Graph(name=name)
    n, k, c = 1, 96, 80
    dy = g.tensor(name="dy", dim=[n, k, hw, hw], stride=fs.strides([n, k, hw, hw], "NHWC"))
    w = g.tensor(name="w", dim=[k, c, 3, 3], stride=fs.strides([k, c, 3, 3], "NHWC"))
    dx = g.conv_dgrad(dy, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="dgrad")
    dx.set_dim([n, c, hw, hw]).set_stride(fs.strides([n, c, hw, hw], "NHWC")).set_output(True)
    return g.validate()


@run
def dgrad_few_tiles():
    g = build("dgrad_flipped_gemm", 8)
    print(explained_and_optimized(g))


# CHECK-LABEL: TEST: dgrad_few_tiles
# AVX2: cpu-conv-dgrad-flipped-gemm (3x3 stride 1 on avx2
# AVX2-NOT: torch.aten.flip
# AVX2: #[[PATCH:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5, d3, d4)>
# AVX2-NOT: torch.aten.permute
# AVX2: %[[W:.*]] = torch_c.to_builtin_tensor %{{.*}} : !torch.vtensor<[96,3,3,80],f32>
# AVX2: linalg.generic {indexing_maps = [#[[PATCH]]]{{.*}}outs(%{{.*}} : tensor<1x8x8x96x3x3xf32>)
# AVX2: %[[R:.*]] = linalg.index 3 : index
# AVX2: %[[S:.*]] = linalg.index 4 : index
# AVX2: %[[CH:.*]] = linalg.index 5 : index
# AVX2: arith.subi %{{.*}}, %[[R]] : index
# AVX2: arith.subi %{{.*}}, %[[S]] : index
# AVX2: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %[[CH]]] : tensor<1x8x8x96xf32>
# AVX2: tensor.collapse_shape %[[W]] {{\[\[}}0, 1, 2], [3]] : tensor<96x3x3x80xf32> into tensor<864x80xf32>
# AVX2: linalg.matmul {compilation_info = {{.*}} ins(%{{.*}}, %{{.*}} : tensor<64x864xf32>, tensor<864x80xf32>)
# AMD-NOT: cpu-conv-dgrad-flipped-gemm


@run
def dgrad_winograd_taps():
    g = build("dgrad_winograd_taps", 16)
    print(optimized(g))


# CHECK-LABEL: TEST: dgrad_winograd_taps
# CHECK-NOT: torch.aten.flip
# CHECK: tensor.extract_slice %{{.*}}[0, 2, 2, 0] [96, 1, 1, 80] [1, 1, 1, 1] : tensor<96x3x3x80xf32> to tensor<96x80xf32>
# CHECK: tensor.extract_slice %{{.*}}[0, 0, 0, 0] [96, 1, 1, 80] [1, 1, 1, 1] : tensor<96x3x3x80xf32> to tensor<96x80xf32>
# CHECK: linalg.batch_matmul {{.*}}ins(%{{.*}}, %{{.*}} : tensor<36x16x96xf32>, tensor<36x96x80xf32>)
