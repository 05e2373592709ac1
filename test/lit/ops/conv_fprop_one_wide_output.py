# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

# Convs whose output is one position high over a padded input longer than the one window
# they read. IREE 3.13 cannot compile those (it lowers the conv to a lower-rank one that
# assumes the padded input is the window: a COMPILE_FAILURE on CPU and ROCm alike), so the
# emitter reads the window: the rows no window reads sliced off, the padding of the cut dim
# made explicit (asymmetric), and the conv unpadded along it. W (several outputs) keeps its
# own stride and padding.

import sys

from lit_helpers import emitted, print_stats, run

import fusilli as fs


def build(h, padding):
    g = fs.Graph(name=f"conv_one_wide_output_{h}_{padding[0]}")
    x = g.tensor(name="x", dim=[1, 16, h, 9], stride=fs.strides([1, 16, h, 9], "NCHW"))
    w = g.tensor(name="w", dim=[8, 16, 3, 3], stride=fs.strides([8, 16, 3, 3], "NCHW"))
    y = g.conv_fprop(x, w, padding=padding, stride=[2, 2], dilation=[1, 1], name="conv")
    y.set_output(True).set_name("y")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "stats":
    # Both compile (before: COMPILE_FAILURE).
    @run
    def stats_one_wide_output():
        print_stats(build(4, [0, 0]))
        print_stats(build(2, [1, 0]))

    # STATS-LABEL: TEST: stats_one_wide_output
    # STATS: dispatch-count: {{[1-9]}}
    # STATS: dispatch-count: {{[1-9]}}
    sys.exit(0)


# 3x3 stride 2 on 4 rows, unpadded: Ho = (4 - 3) // 2 + 1 = 1; row 3 is never read.
@run
def unread_rows():
    print(emitted(build(4, [0, 0])))


# CHECK-LABEL: TEST: unread_rows
# CHECK: func.func @main(%{{.*}}: !torch.tensor<[1,8,1,4],f32>, %[[W:[a-z0-9_]+]]: !torch.vtensor<[8,16,3,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[1,16,4,9],f32>)
# CHECK: %[[ROWS:.*]] = torch.aten.slice.Tensor %[[X]], %int2{{[_0-9]*}}, %int0{{[_0-9]*}}, %int3{{[_0-9]*}}, %int1{{[_0-9]*}} : !torch.vtensor<[1,16,4,9],f32>, {{.*}} -> !torch.vtensor<[1,16,3,9],f32>
# CHECK-NOT: torch.aten.constant_pad_nd
# CHECK: torch.aten.convolution %[[ROWS]], %[[W]], %none, {{.*}} -> !torch.vtensor<[1,8,1,4],f32>


# 3x3 stride 2 on 2 rows padded by 1: 4 padded rows, Ho = 1; the last padding row is never
# read: 1 row of padding before, none after.
@run
def unread_padding():
    print(emitted(build(2, [1, 0])))


# CHECK-LABEL: TEST: unread_padding
# CHECK: func.func @main(%{{.*}}: !torch.tensor<[1,8,1,4],f32>, %[[W:[a-z0-9_]+]]: !torch.vtensor<[8,16,3,3],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[1,16,2,9],f32>)
# CHECK-NOT: torch.aten.slice.Tensor
# CHECK: %[[PADS:.*]] = torch.prim.ListConstruct %int0{{[_0-9]*}}, %int0{{[_0-9]*}}, %int1{{[_0-9]*}}, %int0{{[_0-9]*}} :
# CHECK: %[[WIN:.*]] = torch.aten.constant_pad_nd %[[X]], %[[PADS]], %{{.*}} -> !torch.vtensor<[1,16,3,9],f32>
# CHECK: %[[PAD:.*]] = torch.prim.ListConstruct %int0{{[_0-9]*}}, %int0{{[_0-9]*}} :
# CHECK: torch.aten.convolution %[[WIN]], %[[W]], %none, %{{.*}}, %[[PAD]], {{.*}} -> !torch.vtensor<[1,8,1,4],f32>
