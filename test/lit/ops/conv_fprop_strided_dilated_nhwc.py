# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU
# RUN: %python %s linalg | filecheck %s --check-prefix=LINALG

# Strided, dilated and asymmetric-per-dim convolution, channels-last: the
# stride, padding and dilation lists carry each spatial dim's own value.

import sys

from lit_helpers import emitted, run

import fusilli as fs


def build():
    g = fs.Graph(name="conv_strided_dilated")
    x = g.tensor(name="x", dim=[1, 4, 11, 10], stride=fs.strides([1, 4, 11, 10], "NHWC"))
    w = g.tensor(name="w", dim=[8, 4, 3, 3], stride=fs.strides([8, 4, 3, 3], "NHWC"))
    y = g.conv_fprop(x, w, padding=[1, 0], stride=[2, 3], dilation=[2, 1], name="conv")
    y.set_output(True).set_name("y")
    return g


# H: (11 + 2*1 - 2*(3-1) - 1) // 2 + 1 = 5;  W: (10 + 0 - 1*(3-1) - 1) // 3 + 1 = 3
if len(sys.argv) > 1 and sys.argv[1] == "linalg":

    @run
    def linalg_conv_strided_dilated():
        print(build().mlir("input"))

    # LINALG-LABEL: TEST: linalg_conv_strided_dilated
    # fusilli-conv-layout runs it natively in NHWC with an HWCF filter; being small and
    # padded, as one reduction generic reading the unpadded input (no tensor.pad).
    # LINALG-NOT: tensor.pad
    # LINALG: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%{{.*}} : tensor<3x3x4x8xf32>) outs(%{{.*}} : tensor<1x5x3x8xf32>)
    # Row tap: oh * 2 + r * 2 - 1 (stride 2, dilation 2, padding 1).
    # LINALG: %[[ROW:.*]] = arith.muli %{{.*}}, %c2{{.*}} : index
    # LINALG: tensor.extract %{{.*}} : tensor<1x11x10x4xf32>
else:

    @run
    def conv_strided_dilated_nhwc():
        print(emitted(build()))

    # CHECK-LABEL: TEST: conv_strided_dilated_nhwc
    # CHECK: func.func @main(%[[Y:[a-z0-9_]+]]: !torch.tensor<[1,5,3,8],f32>, %{{.*}}: !torch.vtensor<[8,3,3,4],f32>, %{{.*}}: !torch.vtensor<[1,11,10,4],f32>)
    # CHECK: %[[STRIDE:.*]] = torch.prim.ListConstruct %int2{{[_0-9]*}}, %int3{{[_0-9]*}} :
    # CHECK: %[[PAD:.*]] = torch.prim.ListConstruct %int1{{[_0-9]*}}, %int0{{[_0-9]*}} :
    # CHECK: %[[DIL:.*]] = torch.prim.ListConstruct %int2{{[_0-9]*}}, %int1{{[_0-9]*}} :
    # CHECK: %[[CONV:.*]] = torch.aten.convolution %{{.*}}, %{{.*}}, %none, %[[STRIDE]], %[[PAD]], %[[DIL]], %false, {{.*}} -> !torch.vtensor<[1,8,5,3],f32>
    # CHECK: %[[YP:.*]] = torch.aten.permute %[[CONV]], {{.*}} -> !torch.vtensor<[1,5,3,8],f32>
    # CHECK: torch.overwrite.tensor.contents %[[YP]] overwrites %[[Y]]
