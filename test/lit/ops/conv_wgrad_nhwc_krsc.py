# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

import sys

from lit_helpers import emitted, print_stats, run

import fusilli as fs


def build():
    g = fs.Graph(name="conv_wgrad_nhwc_krsc")
    dy = g.tensor(name="dy", dim=[2, 8, 4, 4], stride=fs.strides([2, 8, 4, 4], "NHWC"))
    x = g.tensor(name="x", dim=[2, 4, 8, 8], stride=fs.strides([2, 4, 8, 8], "NHWC"))
    out = g.conv_wgrad(dy, x, padding=[1, 1], stride=[2, 2], dilation=[1, 1], name="wgrad")
    out.set_dim([8, 2, 3, 3]).set_output(True).set_name("dw")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "stats":

    @run
    def stats_conv_wgrad_nhwc_krsc():
        print_stats(build(), arch="znver4")

    # A grouped weight gradient on an AVX-512 CPU (cpu-conv-grouped-wgrad): two gathers, one
    # contraction generic per phase of X (stride 2: four), the chunks' sum (IREE's
    # convolution_backward: 2; this one ran 7 -> 5 us, 1x64x28x28 g8 1.68 -> 0.065 ms: BENCHMARKS.md,
    # "twenty-third session").
    # STATS-LABEL: TEST: stats_conv_wgrad_nhwc_krsc
    # STATS: dispatch-count: 7
else:

    @run
    def conv_wgrad_nhwc_krsc():
        print(emitted(build()))

    # CHECK-LABEL: TEST: conv_wgrad_nhwc_krsc
    # CHECK: func.func @main(%{{.*}}: !torch.tensor<[8,3,3,2],f32>, %[[DY:.*]]: !torch.vtensor<[2,4,4,8],f32>, %[[X:.*]]: !torch.vtensor<[2,8,8,4],f32>)
    # CHECK: %[[EMPTY:.*]] = torch.aten.empty.memory_format %{{.*}}, %int6{{.*}} -> !torch.vtensor<[8,2,3,3],f32>
    # CHECK: %[[MASK:.*]] = torch.prim.ListConstruct %false{{.*}}, %true, %false{{.*}} : (!torch.bool, !torch.bool, !torch.bool) -> !torch.list<bool>
    # CHECK: %{{.*}}, %[[DW:.*]], %{{.*}} = torch.aten.convolution_backward %{{.*}}, %{{.*}}, %[[EMPTY]], {{.*}}, %[[MASK]] :{{.*}} -> !torch.vtensor<[2,4,8,8],f32>, !torch.vtensor<[8,2,3,3],f32>, !torch.vtensor<[8],f32>
    # CHECK: %[[DWP:.*]] = torch.aten.permute %[[DW]], %{{.*}} -> !torch.vtensor<[8,3,3,2],f32>
    # CHECK: torch.overwrite.tensor.contents %[[DWP]] overwrites
