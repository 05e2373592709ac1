# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

import sys

from lit_helpers import emitted, print_stats, run

import fusilli as fs


def build():
    g = fs.Graph(name="conv_dgrad_nhwc_krsc")
    dy = g.tensor(name="dy", dim=[2, 8, 4, 4], stride=fs.strides([2, 8, 4, 4], "NHWC"))
    w = g.tensor(name="w", dim=[8, 2, 3, 3], stride=fs.strides([8, 2, 3, 3], "NHWC"))
    out = g.conv_dgrad(dy, w, padding=[1, 1], stride=[2, 2], dilation=[1, 1], name="dgrad")
    out.set_dim([2, 4, 8, 8]).set_output(True).set_name("dx")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "stats":

    @run
    def stats_conv_dgrad_nhwc_krsc():
        print_stats(build())

    # STATS-LABEL: TEST: stats_conv_dgrad_nhwc_krsc
    # STATS: dispatch-count: 3
else:

    @run
    def conv_dgrad_nhwc_krsc():
        print(emitted(build()))

    # CHECK-LABEL: TEST: conv_dgrad_nhwc_krsc
    # CHECK: func.func @main(%{{.*}}: !torch.tensor<[2,8,8,4],f32>, %[[DY:.*]]: !torch.vtensor<[2,4,4,8],f32>, %{{.*}}: !torch.vtensor<[8,3,3,2],f32>)
    # CHECK: %[[DYL:.*]] = torch.aten.permute %[[DY]], %{{.*}} -> !torch.vtensor<[2,8,4,4],f32>
    # CHECK: %[[DX:.*]] = torch.aten.convolution %[[DYL]], %{{.*}}, %none{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %true, %{{.*}}, %int2{{.*}} :{{.*}} -> !torch.vtensor<[2,4,8,8],f32>
    # CHECK: %[[DXP:.*]] = torch.aten.permute %[[DX]], %{{.*}} -> !torch.vtensor<[2,8,8,4],f32>
    # CHECK: torch.overwrite.tensor.contents %[[DXP]] overwrites
