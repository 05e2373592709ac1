# RUN: env FUSILLI_LIT_TARGET=cpu:znver4 %python %s | filecheck %s --check-prefixes=CHECK,CPU
# RUN: env FUSILLI_LIT_TARGET=amdgpu:gfx942 %python %s | filecheck %s --check-prefixes=CHECK,AMDGPU
# RUN: %python %s linalg | filecheck %s --check-prefix=LINALG
# RUN: %python %s stats | filecheck %s --check-prefix=STATS

# 2-D forward convolution with channels-last input, filter and output. The
# emitter permutes X and W to logical (NCHW / KCRS) order and the result back;
# fusilli-conv-layout then runs the conv natively in NHWC
# (linalg.conv_2d_nhwc_hwcf): only the filter is transposed, to HWCF.

import sys

from lit_helpers import emitted, optimized, print_stats, run

import fusilli as fs


def build(padding, epilogue=False, dtype=fs.DataType.FLOAT):
    g = fs.Graph(name="conv_nhwc_krsc", io_data_type=dtype, compute_data_type=fs.DataType.FLOAT)
    n, c, h, w, k = 2, 8, 8, 8, 16
    x = g.tensor(name="x", dim=[n, c, h, w], stride=fs.strides([n, c, h, w], "NHWC"))
    wt = g.tensor(name="w", dim=[k, c, 3, 3], stride=fs.strides([k, c, 3, 3], "NHWC"))
    y = g.conv_fprop(x, wt, padding=padding, stride=[1, 1], dilation=[1, 1], name="conv")
    if epilogue:
        b = g.tensor(name="b", dim=[1, k, 1, 1], stride=fs.strides([1, k, 1, 1], "NHWC"))
        y = g.relu(g.add(y, b, name="bias"), name="relu")
    y.set_output(True).set_name("y")
    return g


if len(sys.argv) > 1 and sys.argv[1] == "stats":

    @run
    def stats_unpadded():
        print_stats(build([0, 0]))

    # STATS-LABEL: TEST: stats_unpadded
    # STATS: dispatch-count: 1
elif len(sys.argv) > 1 and sys.argv[1] == "linalg":

    @run
    def linalg_conv_nhwc_krsc():
        print(build([0, 0]).mlir("input"))

    # LINALG-LABEL: TEST: linalg_conv_nhwc_krsc
    # LINALG-NOT: permutation = [0, 3, 1, 2]
    # LINALG: %[[WT:.*]] = linalg.transpose ins(%{{.*}} : tensor<16x3x3x8xf32>) outs(%{{.*}} : tensor<3x3x8x16xf32>) permutation = [1, 2, 3, 0]
    # LINALG: linalg.conv_2d_nhwc_hwcf {{.*}} ins(%{{.*}}, %[[WT]] : tensor<2x8x8x8xf32>, tensor<3x3x8x16xf32>) {{.*}} -> tensor<2x6x6x16xf32>
    # LINALG-NOT: linalg.transpose
else:

    @run
    def conv_nhwc_krsc():
        print(emitted(build([1, 1])))

    # CHECK-LABEL: TEST: conv_nhwc_krsc
    # CHECK: func.func @main(%{{.*}}: !torch.tensor<[2,8,8,16],f32>, %[[W:[a-z0-9_]+]]: !torch.vtensor<[16,3,3,8],f32>, %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,8,8,8],f32>)
    # CHECK: %[[TO_NCHW:.*]] = torch.prim.ListConstruct %int0{{[_0-9]*}}, %int3{{[_0-9]*}}, %int1{{[_0-9]*}}, %int2{{[_0-9]*}} :
    # CHECK: %[[XL:.*]] = torch.aten.permute %[[X]], %[[TO_NCHW]] : {{.*}} -> !torch.vtensor<[2,8,8,8],f32>
    # CHECK: %[[WL:.*]] = torch.aten.permute %[[W]], %{{.*}} -> !torch.vtensor<[16,8,3,3],f32>
    # CHECK: %[[Y:.*]] = torch.aten.convolution %[[XL]], %[[WL]], {{.*}} -> !torch.vtensor<[2,16,8,8],f32>
    # CHECK: %[[TO_NHWC:.*]] = torch.prim.ListConstruct %int0{{[_0-9]*}}, %int2{{[_0-9]*}}, %int3{{[_0-9]*}}, %int1{{[_0-9]*}} :
    # CHECK: %[[YP:.*]] = torch.aten.permute %[[Y]], %[[TO_NHWC]] : {{.*}} -> !torch.vtensor<[2,8,8,16],f32>
    # CHECK: torch.overwrite.tensor.contents %[[YP]] overwrites

    @run
    def conv_nhwc_krsc_bias_relu_optimized():
        print(optimized(build([1, 1], epilogue=True)))

    # On the CPU the conv runs natively in NHWC (rule cpu-conv-channels-last-linalg). It is
    # small (below the im2col size), so it is one reduction generic reading the unpadded
    # input through clamped tensor.extract with the padding taps zeroed
    # (fusilli/passes/conv_direct.py): no tensor.pad. The bias add and relu become one
    # linalg.generic iterating NHWC, with the bias broadcast. On gfx942 (rule
    # amdgpu-conv-upstream) the conv stays torch.aten.convolution on permuted operands, as
    # upstream Fusilli emits it, for IREE's GPU pipeline to propagate the transposes; the
    # epilogue still fuses.
    # CHECK-LABEL: TEST: conv_nhwc_krsc_bias_relu_optimized
    # AMDGPU-NOT: linalg.conv_2d
    # AMDGPU: %[[Y:.*]] = torch.aten.convolution {{.*}} -> !torch.vtensor<[2,16,8,8],f32>
    # AMDGPU: %[[YB:.*]] = torch_c.to_builtin_tensor %[[Y]]
    # AMDGPU: linalg.generic {{.*}} ins(%[[YB]], %{{.*}} : tensor<2x16x8x8xf32>, tensor<1x16x1x1xf32>) outs(%{{.*}} : tensor<2x8x8x16xf32>)
    # CPU-DAG: #[[HWCF:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>
    # CPU-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
    # CPU-DAG: #[[NHWC:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
    # CPU-DAG: #[[BIAS:.*]] = affine_map<(d0, d1, d2, d3) -> (0, d3, 0, 0)>
    # CPU: torch.aten.permute %{{.*}} -> !torch.vtensor<[3,3,8,16],f32>
    # CPU-NOT: tensor.pad
    # CPU: %[[CONV:.*]] = linalg.generic {indexing_maps = [#[[HWCF]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%{{.*}} : tensor<3x3x8x16xf32>) outs(%{{.*}} : tensor<2x8x8x16xf32>)
    # CPU: arith.cmpi ult
    # CPU: tensor.extract %{{.*}} : tensor<2x8x8x8xf32>
    # CPU: arith.select
    # CPU: math.fma
    # CPU: %[[Y:.*]] = torch_c.from_builtin_tensor %[[CONV]]
    # CPU: %[[YB:.*]] = torch_c.to_builtin_tensor %[[Y]]
    # CPU: %[[G:.*]] = linalg.generic {indexing_maps = [#[[NHWC]], #[[BIAS]], #[[NHWC]]]
    # CPU-SAME: ins(%[[YB]], %{{.*}} : tensor<2x8x8x16xf32>, tensor<1x16x1x1xf32>) outs(%{{.*}} : tensor<2x8x8x16xf32>)
    # CPU: arith.addf
    # CPU: arith.maximumf
    # CPU: %[[R:.*]] = torch_c.from_builtin_tensor %[[G]]
    # CPU-NOT: torch.aten.permute
    # CPU: torch.overwrite.tensor.contents %[[R]] overwrites

    @run
    def conv_nhwc_krsc_f16_optimized():
        print(optimized(build([1, 1], dtype=fs.DataType.HALF)))

    # f16: on the CPU computed in f32 (rule cpu-conv-low-precision-in-f32), widened
    # once and rounded once; on gfx942 in f16 (MFMA), no f32 conv.
    # CHECK-LABEL: TEST: conv_nhwc_krsc_f16_optimized
    # CPU: arith.extf %{{.*}} : f16 to f32
    # CPU: linalg.generic {{.*}} ins(%{{.*}} : tensor<3x3x8x16xf32>) outs(%{{.*}} : tensor<2x8x8x16xf32>)
    # CPU: tensor.extract %{{.*}} : tensor<2x8x8x8xf32>
    # CPU: arith.truncf %{{.*}} : f32 to f16
    # AMDGPU-NOT: f32>
    # AMDGPU: torch.aten.convolution {{.*}} : !torch.vtensor<[2,8,8,8],f16>, !torch.vtensor<[16,8,3,3],f16>, {{.*}} -> !torch.vtensor<[2,16,8,8],f16>
