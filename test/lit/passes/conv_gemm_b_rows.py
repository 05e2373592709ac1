# RUN: env FUSILLI_LIT_TARGET=cpu:znver5 %python %s | filecheck %s --check-prefixes=CHECK,PAD
# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64-v3 %python %s | filecheck %s --check-prefixes=CHECK,PAD
# RUN: env FUSILLI_LIT_TARGET=cpu:x86-64 %python %s | filecheck %s --check-prefixes=CHECK,GENERIC

# A conv GEMM's filter matrix B[depth, columns] is read a row per reduction step; rows a multiple of
# 2 KiB apart (512 f32 columns and multiples) fall in the same one or two of L1's 64 sets. Where the
# GEMM is tuned (AVX-512 and AVX2), fusilli-conv-layout (_materialized_b) writes the filter 64 bytes
# longer per row (tensor.pad, fused into the forward filter's transposition as a [K, R*S*C] matrix), behind the compute
# barrier, and the GEMM reads the [depth, columns] slice of it (gemm_config.padded_b_columns). A
# dgrad's filter is B as it is: padded (a copy) only from 128 GEMM rows. x86-64 keeps IREE's path.

from lit_helpers import explained_and_optimized, run

import fusilli as fs


def conv_graph(name: str, n: int, c: int, hw: int, k: int) -> fs.Graph:
    g = fs.Graph(name=name)
    x = g.tensor(name="x", dim=[n, c, hw, hw], stride=fs.strides([n, c, hw, hw], "NHWC"))
    w = g.tensor(name="w", dim=[k, c, 1, 1], stride=fs.strides([k, c, 1, 1], "NHWC"))
    b = g.tensor(name="b", dim=[1, k, 1, 1], stride=fs.strides([1, k, 1, 1], "NHWC"))
    y = g.conv_fprop(x, w, padding=[0, 0], stride=[1, 1], dilation=[1, 1], name="conv")
    g.relu(g.add(y, b, name="bias"), name="relu").set_output(True).set_name("y")
    return g


def dgrad_graph(name: str, n: int, k: int, hw: int, c: int) -> fs.Graph:
    g = fs.Graph(name=name)
    dy = g.tensor(name="dy", dim=[n, k, hw, hw], stride=fs.strides([n, k, hw, hw], "NHWC"))
    w = g.tensor(name="w", dim=[k, c, 1, 1], stride=fs.strides([k, c, 1, 1], "NHWC"))
    dx = g.conv_dgrad(dy, w, padding=[0, 0], stride=[1, 1], dilation=[1, 1], name="dgrad")
    dx.set_dim([n, c, hw, hw]).set_output(True).set_name("dx")
    return g


@run
def fprop_1x1_512_columns():
    print(explained_and_optimized(conv_graph("fprop_1x1_512_columns", 2, 32, 16, 512)))


# CHECK-LABEL: TEST: fprop_1x1_512_columns
# PAD: cpu-conv-im2col-gemm (1x1, 512 GEMM rows >= 49, 32 channels <= 2048, {{.*}}, the filter written in rows of 528 (512 would alias in L1))
# PAD: %[[KRSC:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2, 3]] : tensor<512x1x1x32xf32> into tensor<512x32xf32>
# PAD: %[[W:.*]] = linalg.transpose ins(%[[KRSC]] : tensor<512x32xf32>) outs(%{{.*}} : tensor<32x512xf32>) permutation = [1, 0]
# PAD: %[[PADDED:.*]] = tensor.pad %[[W]] low[0, 0] high[0, 16]
# PAD: } : tensor<32x512xf32> to tensor<32x528xf32>
# PAD: %[[ROWS:.*]] = iree_tensor_ext.compute_barrier.start %[[PADDED]] : tensor<32x528xf32>
# PAD: %[[B:.*]] = tensor.extract_slice %[[ROWS]][0, 0] [32, 512] [1, 1] : tensor<32x528xf32> to tensor<32x512xf32>
# PAD: linalg.matmul {compilation_info = {{.*}}} ins(%{{.*}}, %[[B]] : tensor<512x32xf32>, tensor<32x512xf32>)
# PAD: arith.maximumf
# GENERIC-NOT: would alias in L1
# GENERIC-NOT: tensor.pad
# GENERIC: torch.aten.mm


@run
def fprop_1x1_256_columns():
    print(explained_and_optimized(conv_graph("fprop_1x1_256_columns", 2, 32, 16, 256)))


# 1 KiB rows: the filter as the transposition writes it.
# CHECK-LABEL: TEST: fprop_1x1_256_columns
# PAD-NOT: would alias in L1
# PAD: %[[W:.*]] = linalg.transpose ins(%{{.*}} : tensor<256x32xf32>) outs(%{{.*}} : tensor<32x256xf32>) permutation = [1, 0]
# PAD-NOT: tensor.pad
# PAD: %[[B:.*]] = iree_tensor_ext.compute_barrier.start %[[W]] : tensor<32x256xf32>
# PAD: linalg.matmul {compilation_info = {{.*}}} ins(%{{.*}}, %[[B]] : tensor<512x32xf32>, tensor<32x256xf32>)


@run
def dgrad_1x1_512_columns():
    print(explained_and_optimized(dgrad_graph("dgrad_1x1_512_columns", 2, 32, 16, 512)))


# The dgrad's filter is B as it is ([K, C] = [32, 512]): the pad is its copy.
# CHECK-LABEL: TEST: dgrad_1x1_512_columns
# PAD: (1x1 dgrad, 512 GEMM rows: DY x the forward filter as it is, {{.*}}, the filter written in rows of 528 (512 would alias in L1))
# PAD: %[[PADDED:.*]] = tensor.pad %{{.*}} low[0, 0] high[0, 16]
# PAD: } : tensor<32x512xf32> to tensor<32x528xf32>
# PAD: %[[ROWS:.*]] = iree_tensor_ext.compute_barrier.start %[[PADDED]] : tensor<32x528xf32>
# PAD: %[[B:.*]] = tensor.extract_slice %[[ROWS]][0, 0] [32, 512] [1, 1]
# PAD: linalg.matmul {compilation_info = {{.*}}} ins(%{{.*}}, %[[B]] : tensor<512x32xf32>, tensor<32x512xf32>)


@run
def dgrad_1x1_few_rows():
    print(explained_and_optimized(dgrad_graph("dgrad_1x1_few_rows", 1, 32, 8, 512)))


# 64 GEMM rows: too few to pay for copying the filter.
# CHECK-LABEL: TEST: dgrad_1x1_few_rows
# PAD-NOT: would alias in L1
# PAD-NOT: tensor.pad
# PAD: %[[B:.*]] = iree_tensor_ext.compute_barrier.start %{{.*}} : tensor<32x512xf32>
# PAD: linalg.matmul {compilation_info = {{.*}}} ins(%{{.*}}, %[[B]] : tensor<64x32xf32>, tensor<32x512xf32>)
