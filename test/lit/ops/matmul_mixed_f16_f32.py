# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

import sys

from lit_helpers import emitted, print_stats, run

import fusilli as fs


def build():
    g = fs.Graph(name="matmul_mixed_f16", io_data_type=fs.DataType.HALF)
    a = g.tensor(name="a", dim=[2, 4, 16])
    b = g.tensor(name="b", dim=[2, 16, 8])
    g.matmul(a, b, name="mm").set_output(True).set_name("c")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "stats":

    @run
    def stats_matmul_mixed_f16():
        print_stats(build())

    # The f32 accumulation and the rounding to f16 stay in the matmul's dispatch.
    # STATS-LABEL: TEST: stats_matmul_mixed_f16
    # STATS: dispatch-count: 1
else:

    @run
    def matmul_mixed_f16():
        print(emitted(build()))

    # f16 operands, f32 product (accumulation), rounded once to f16, on both targets:
    # znver4's AVX-512 widens f16 in IREE's kernel, gfx942's MFMA multiplies f16.
    # (x86-64-v3 computes through f32: test/unit/test_targets.py.)
    # CHECK-LABEL: TEST: matmul_mixed_f16
    # CHECK: %[[C:.*]] = torch.aten.matmul %{{.*}}, %{{.*}} : !torch.vtensor<[2,4,16],f16>, !torch.vtensor<[2,16,8],f16> -> !torch.vtensor<[2,4,8],f32>
    # CHECK: torch.aten.to.dtype %[[C]], {{.*}} -> !torch.vtensor<[2,4,8],f16>
