# RUN: env FUSILLI_LIT_TARGET=cpu:znver3 %python %s | filecheck %s
# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64-v3 %python %s | filecheck %s
# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s

# A channels-last 3-D conv is folded into a 2-D one (fusilli-conv-layout's _fold_depth and
# _fold_wgrad_depth, rules.depth_folded): X's depth taps gathered into the channels by one generic
# (conv_direct.depth_taps), read through the depth padding (tensor.extract and a select, no
# tensor.pad), the filter as [K, R, S, T*C]; the 2-D conv of N*Do images then takes the 2-D
# lowerings, and its [N*Do, Ho, Wo, K] result is Y's NDHWC memory (an expand_shape). No 3-D
# torch.aten.convolution is left.

from lit_helpers import explained_and_optimized, run

import fusilli as fs


def conv3d(name: str, kind: str, x_dim, w_dim, padding, stride):
    g = fs.Graph(name=name)
    n, c, d, h, w = x_dim
    k, _, t, r, s = w_dim
    out = [n, k, *((e + 2 * p - f) // st + 1 for e, p, f, st in zip((d, h, w), padding, (t, r, s), stride))]
    attrs = dict(padding=padding, stride=stride, dilation=[1, 1, 1])
    if kind == "fprop":
        x = g.tensor(name="x", dim=x_dim, stride=fs.strides(x_dim, "NDHWC"))
        f = g.tensor(name="w", dim=w_dim, stride=fs.strides(w_dim, "NDHWC"))
        g.conv_fprop(x, f, name="conv", **attrs).set_output(True)
    else:
        dy = g.tensor(name="dy", dim=out, stride=fs.strides(out, "NDHWC"))
        x = g.tensor(name="x", dim=x_dim, stride=fs.strides(x_dim, "NDHWC"))
        dw = g.conv_wgrad(dy, x, name="wgrad", **attrs)
        dw.set_dim(w_dim).set_stride(fs.strides(w_dim, "NDHWC")).set_output(True)
    return g.validate()


@run
def fold_3x3x3_padded():
    print(
        explained_and_optimized(
            conv3d("fold_3x3x3_padded", "fprop", [2, 64, 8, 28, 28], [64, 64, 3, 3, 3], [1] * 3, [1] * 3)
        )
    )


# 3x3x3 padded 2x64x8x28x28->64: a 3x3 conv of 16 images, 192 channels: 2-D Winograd.
# CHECK-LABEL: TEST: fold_3x3x3_padded
# CHECK: conv [conv_fprop]: 3-D as 2-D: 3 depth taps gathered into 192 channels, batch 16 (cpu-conv-depth-fold); {{.*}}cpu-conv-winograd (F(4x4, 3x3)
# CHECK-NOT: torch.aten.convolution
# CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x8x28x28x3x64xf32>)
# CHECK: tensor.extract %{{.*}} : tensor<2x8x28x28x64xf32>
# CHECK: arith.select
# CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2], [3], [4, 5]] : tensor<2x8x28x28x3x64xf32> into tensor<16x28x28x192xf32>
# CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1], [2], [3, 4]] : tensor<64x3x3x3x64xf32> into tensor<64x3x3x192xf32>
# CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2], [3], [4]] output_shape [2, 8, 28, 28, 64] : tensor<16x28x28x64xf32> into tensor<2x8x28x28x64xf32>
# CHECK-NOT: torch.aten.convolution


@run
def fold_1x1x1_wgrad():
    print(
        explained_and_optimized(
            conv3d("fold_1x1x1_wgrad", "wgrad", [2, 256, 4, 28, 28], [128, 256, 1, 1, 1], [0] * 3, [1] * 3)
        )
    )


# A 1x1x1 stride-1 weight gradient: X and DY are reshapes (no gather), the 2-D weight gradient's
# one GEMM over 6272 positions (in chunks on AVX2), DW [128, 1, 1, 1, 256] from [128, 1, 1, 256].
# CHECK-LABEL: TEST: fold_1x1x1_wgrad
# CHECK: wgrad [conv_wgrad]: 3-D as 2-D: 1 depth tap gathered into 256 channels, batch 8 (cpu-conv-depth-fold); {{.*}}cpu-conv-wgrad-gemm
# CHECK-NOT: linalg.generic {{.*}}x1x256xf32>)
# CHECK-NOT: torch.aten.convolution_backward
# CHECK: tensor<6272x256xf32>
# CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1], [2], [3, 4]] output_shape [128, 1, 1, 1, 256] : tensor<128x1x1x256xf32> into tensor<128x1x1x1x256xf32>
# CHECK-NOT: torch.aten.convolution_backward


@run
def fold_strided_depth():
    print(
        explained_and_optimized(
            conv3d("fold_strided_depth", "fprop", [1, 16, 9, 14, 14], [32, 16, 3, 3, 3], [1] * 3, [2, 1, 1])
        )
    )


# Depth stride 2: the gather's plane index is do * 2 + t - 1 (5 output planes of 9).
# CHECK-LABEL: TEST: fold_strided_depth
# CHECK: 3-D as 2-D: 3 depth taps gathered into 48 channels, batch 5 (cpu-conv-depth-fold)
# CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x5x14x14x3x16xf32>)
# CHECK: arith.muli %{{.*}}, %c2
