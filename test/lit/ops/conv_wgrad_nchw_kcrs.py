# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

import sys

from lit_helpers import emitted, print_stats, run

import fusilli as fs


def build():
    g = fs.Graph(name="conv_wgrad_nchw_kcrs")
    dy = g.tensor(name="dy", dim=[2, 8, 4, 4], stride=fs.strides([2, 8, 4, 4], "NCHW"))
    x = g.tensor(name="x", dim=[2, 4, 8, 8], stride=fs.strides([2, 4, 8, 8], "NCHW"))
    out = g.conv_wgrad(dy, x, padding=[1, 1], stride=[2, 2], dilation=[1, 1], name="wgrad")
    out.set_dim([8, 2, 3, 3]).set_output(True).set_name("dw")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "stats":

    @run
    def stats_conv_wgrad_nchw_kcrs():
        print_stats(build())

    # STATS-LABEL: TEST: stats_conv_wgrad_nchw_kcrs
    # STATS: dispatch-count: 2
else:

    @run
    def conv_wgrad_nchw_kcrs():
        print(emitted(build()))

    # CHECK-LABEL: TEST: conv_wgrad_nchw_kcrs
    # CHECK: func.func @main(%{{.*}}: !torch.tensor<[8,2,3,3],f32>, %[[DY:.*]]: !torch.vtensor<[2,8,4,4],f32>, %[[X:.*]]: !torch.vtensor<[2,4,8,8],f32>)
    # CHECK: %[[EMPTY:.*]] = torch.aten.empty.memory_format %{{.*}}, %int6{{.*}} -> !torch.vtensor<[8,2,3,3],f32>
    # CHECK: %[[MASK:.*]] = torch.prim.ListConstruct %false{{.*}}, %true, %false{{.*}} : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
    # CHECK: %{{.*}}, %[[DW:.*]], %{{.*}} = torch.aten.convolution_backward %{{.*}}, %{{.*}}, %[[EMPTY]], {{.*}}, %[[MASK]] :{{.*}} -> !torch.vtensor<[2,4,8,8],f32>, !torch.vtensor<[8,2,3,3],f32>, !torch.vtensor<[8],f32>
    # CHECK: torch.overwrite.tensor.contents %[[DW]] overwrites
