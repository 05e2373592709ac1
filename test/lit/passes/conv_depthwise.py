# RUN: %python %s > %t.json
# RUN: %fusilli-opt %t.json --backend cpu --arch znver4 --pass-pipeline=default | filecheck %s
# RUN: %fusilli-opt %t.json --backend cpu --arch x86-64-v3 --pass-pipeline=default | filecheck %s

# A channels-last depthwise conv (groups = input channels = output channels, one filter per
# channel; rules.CPU_CONV_DEPTHWISE) becomes linalg.depthwise_conv_2d_nhwc_hwc (fusilli-conv-layout's
# _rewrite_depthwise): the NHWC input padded, the filter [R, S, C] behind a compute barrier (folded
# into the conv it is read with a stride of R*S along the vectorized channels), the bias + relu
# epilogue an elementwise consumer of the conv. A grouped conv of several channels per group is not
# depthwise (test/lit/passes/conv_grouped.py: a generic over its taps).

import fusilli as fs

g = fs.Graph(name="conv_depthwise")
n, c, hw = 2, 32, 14
x = g.tensor(name="x", dim=[n, c, hw, hw], stride=fs.strides([n, c, hw, hw], "NHWC"))
w = g.tensor(name="w", dim=[c, 1, 3, 3], stride=fs.strides([c, 1, 3, 3], "NHWC"))
b = g.tensor(name="b", dim=[1, c, 1, 1], stride=fs.strides([1, c, 1, 1], "NHWC"))
y = g.conv_fprop(x, w, padding=[1, 1], stride=[2, 2], dilation=[1, 1], name="dw")
y = g.relu(g.add(y, b, name="bias"), name="relu")
y.set_output(True).set_name("y")
wg = g.tensor(name="wg", dim=[32, 4, 3, 3], stride=fs.strides([32, 4, 3, 3], "NHWC"))
z = g.conv_fprop(x, wg, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="grouped")
z.set_output(True).set_name("z")
print(g.to_json())

# CHECK-LABEL: func.func @main(
# CHECK: %[[FILTER:.*]] = iree_tensor_ext.compute_barrier.start %{{.*}} : tensor<3x3x32xf32>
# CHECK: %[[PADDED:.*]] = tensor.pad %{{.*}} low[0, 1, 1, 0] high[0, 1, 1, 0]
# CHECK: } : tensor<2x14x14x32xf32> to tensor<2x16x16x32xf32>
# CHECK: linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%[[PADDED]], %[[FILTER]] : tensor<2x16x16x32xf32>, tensor<3x3x32xf32>) outs(%{{.*}} : tensor<2x7x7x32xf32>)
# CHECK: arith.maximumf
# CHECK-NOT: depthwise_conv
# CHECK: linalg.generic {{.*}}outs(%{{.*}} : tensor<2x14x14x8x4xf32>)
