# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,GEMM,SMALLPHASES
# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64-v3 %python %s | filecheck %s --check-prefixes=CHECK,GEMM,SMALLPHASES
# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64 %python %s | filecheck %s --check-prefixes=CHECK,TILED,SMALLTILED
# RUN: env FUSILLI_LIT_TARGET=cpu:sapphirerapids %python %s | filecheck %s --check-prefixes=CHECK,GEMM,SMALLGEMM

# Convs lowered by cpu-conv-im2col-gemm (AVX2, AVX-512): bias + relu add no
# dispatch. The 1x1 conv is the filter's HWCF copy + the GEMM with its epilogue
# (2 dispatches with or without bias + relu); the strided 3x3 adds the patch
# gather (3 with or without). Without a tuned ISA (x86-64) the same convs take IREE's im2col +
# data tiling, where the bias costs an encode dispatch of its own (1x1: 3 -> 4,
# 3x3 s2: 4 -> 5).

from lit_helpers import TARGET_ARCH, run

import fusilli as fs
from fusilli.backend.cache import Artifact


def build(name, kernel, stride, padding, epilogue, n=4):
    g = fs.Graph(name=name)
    c, h, w, k = 64, 32, 32, 32
    x = g.tensor(name="x", dim=[n, c, h, w], stride=fs.strides([n, c, h, w], "NHWC"))
    wt = g.tensor(name="w", dim=[k, c, kernel, kernel], stride=fs.strides([k, c, kernel, kernel], "NHWC"))
    y = g.conv_fprop(x, wt, padding=[padding] * 2, stride=[stride] * 2, dilation=[1, 1], name="conv")
    if epilogue:
        b = g.tensor(name="b", dim=[1, k, 1, 1], stride=fs.strides([1, k, 1, 1], "NHWC"))
        y = g.relu(g.add(y, b, name="bias"), name="relu")
    y.set_output(True).set_name("y")
    return g


def print_dispatches(g):
    # Compiled ahead of time, not loaded: a znver4 artifact cannot run on an Intel host.
    artifact = Artifact.from_bytes(g.compile_to_artifact(fs.Backend.CPU, arch=TARGET_ARCH))
    print(f"dispatch-count: {artifact.stats.dispatch_count}")


@run
def conv1x1():
    print_dispatches(build("gemm_1x1", 1, 1, 0, False))
    print_dispatches(build("gemm_1x1_bias_relu", 1, 1, 0, True))


# CHECK-LABEL: TEST: conv1x1
# GEMM: dispatch-count: 2
# GEMM-NEXT: dispatch-count: 2
# TILED: dispatch-count: 3
# TILED-NEXT: dispatch-count: 4


# 80 images of 32x32 -> 16x16: 20480 GEMM rows, above the strided threshold (4096 rows), and
# 5120 2x2 tiles whose transformed data (49 MB) is above the phases' Winograd limit (40 MiB).
@run
def conv3x3_s2():
    print_dispatches(build("gemm_3x3s2", 3, 2, 1, False, n=80))
    print_dispatches(build("gemm_3x3s2_bias_relu", 3, 2, 1, True, n=80))


# CHECK-LABEL: TEST: conv3x3_s2
# GEMM: dispatch-count: 3
# GEMM-NEXT: dispatch-count: 3
# TILED: dispatch-count: 4
# TILED-NEXT: dispatch-count: 5


# 4 images: 1024 GEMM rows, 576 deep: below the strided threshold on generic targets (data
# tiling: the bias costs a dispatch), above the Intel one (512 rows). On AVX2 and AMD AVX-512
# its 256 2x2 output tiles (2.4 MB transformed) make it Winograd over the input's phases
# (cpu-conv-winograd-strided), where bias + relu fuse into the output transform (no dispatch).
@run
def conv3x3_s2_1024_rows():
    print_dispatches(build("gemm_3x3s2_small", 3, 2, 1, False))
    print_dispatches(build("gemm_3x3s2_small_bias_relu", 3, 2, 1, True))


# CHECK-LABEL: TEST: conv3x3_s2_1024_rows
# SMALLGEMM: dispatch-count: 3
# SMALLGEMM-NEXT: dispatch-count: 3
# SMALLPHASES: dispatch-count: [[N:[0-9]+]]
# SMALLPHASES-NEXT: dispatch-count: [[N]]
# SMALLTILED: dispatch-count: 4
# SMALLTILED-NEXT: dispatch-count: 5
