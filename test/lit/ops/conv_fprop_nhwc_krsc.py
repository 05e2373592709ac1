# RUN: %python %s | filecheck %s
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

import sys

import fusilli as fs
from lit_helpers import print_stats, run


def build(padding):
    g = fs.Graph(name="conv_nhwc_krsc")
    n, c, h, w, k = 2, 8, 8, 8, 16
    x = g.tensor(name="x", dim=[n, c, h, w], stride=fs.strides([n, c, h, w], "NHWC"))
    wt = g.tensor(name="w", dim=[k, c, 3, 3], stride=fs.strides([k, c, 3, 3], "NHWC"))
    y = g.conv_fprop(x, wt, padding=padding, stride=[1, 1], dilation=[1, 1], name="conv")
    y.set_output(True).set_name("y")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "stats":

    @run
    def stats_unpadded():
        print_stats(build([0, 0]))

    # STATS-LABEL: TEST: stats_unpadded
    # STATS: dispatch-count: 1
else:

    @run
    def conv_nhwc_krsc():
        print(build([1, 1]).emit_mlir())

    # CHECK-LABEL: TEST: conv_nhwc_krsc
    # CHECK: func.func @main(%{{.*}}: !torch.tensor<[2,8,8,16],f32>, %{{.*}}: !torch.vtensor<[16,3,3,8],f32>, %[[X:.*]]: !torch.vtensor<[2,8,8,8],f32>)
    # CHECK: %[[XL:.*]] = torch.aten.permute %[[X]], %{{.*}} -> !torch.vtensor<[2,8,8,8],f32>
    # CHECK: %[[Y:.*]] = torch.aten.convolution %[[XL]], %{{.*}} -> !torch.vtensor<[2,16,8,8],f32>
    # CHECK: %[[YP:.*]] = torch.aten.permute %[[Y]], %{{.*}} -> !torch.vtensor<[2,8,8,16],f32>
    # CHECK: torch.overwrite.tensor.contents %[[YP]] overwrites
