// RUN: env FUSILLI_CONV_LOWERING=im2col %fusilli-opt %s --backend cpu --arch znver4 --pass-pipeline=fusilli-conv-layout | filecheck %s
// RUN: env FUSILLI_CONV_LOWERING=auto %fusilli-opt %s --backend cpu --arch znver4 --pass-pipeline=fusilli-conv-layout | filecheck %s --check-prefix=AUTO
// RUN: env FUSILLI_CONV_LOWERING=auto %fusilli-opt %s --backend cpu --arch sapphirerapids --pass-pipeline=fusilli-conv-layout | filecheck %s --check-prefix=INTEL

// With FUSILLI_CONV_LOWERING=im2col (by default: bf16 convs of at least
// conv_layout.IM2COL_MIN_FLOPS, 2**20) channels-last convs become an
// explicit im2col: a linalg.generic gathering the (padded) NHWC input into
// [N, Ho, Wo, R, S, C] patches, collapsed to [N*Ho*Wo, R*S*C], then a
// linalg.matmul against the KRSC filter collapsed to [K, R*S*C] (read
// transposed by its indexing maps, so a channels-last filter needs no permute)
// with an f32 accumulator. bf16 operands stay bf16 (znver4 has avx512bf16); f16 operands are widened to
// f32 first; the result is rounded once. No activation or filter permute remains.

// CHECK-DAG: #[[GATHER:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1 + d3, d2 + d4, d5)>
// CHECK-DAG: #[[ID6:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[BT:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[GATHER_S2:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1 * 2 + d3, d2 * 2 + d4, d5)>
// By default (on AMD Zen 4, AVX-512) the heavy 3x3 stride-1 conv is a Winograd conv
// computed in f32 (cpu-conv-winograd), the strided 3x3 f32 conv (196 2x2 output tiles) Winograd
// over the input's four phases (cpu-conv-winograd-strided: 25 GEMMs of 196 tiles), and the
// 1x1 one (3136 rows) an explicit-config GEMM (cpu-conv-im2col-gemm). An Intel core (the
// strided rule is not measured there) takes the strided conv as an explicit-config GEMM too
// (784 GEMM rows: its strided threshold is 512 rows at any depth).
// INTEL-LABEL: func.func @im2col_strided_f32(
// INTEL: linalg.matmul {compilation_info
// INTEL-SAME: tensor<784x1152xf32>, tensor<1152x256xf32>
// INTEL-LABEL: func.func @im2col_1x1_f16(
// INTEL: linalg.matmul {compilation_info
// AUTO-LABEL: func.func @im2col_3x3_bf16(
// AUTO: linalg.batch_matmul {{.*}} ins(%{{.*}}, %{{.*}} : tensor<36x256x64xf32>, tensor<36x64x64xf32>)
// AUTO-LABEL: func.func @im2col_strided_f32(
// AUTO: linalg.batch_matmul {compilation_info
// AUTO-SAME: tensor<25x196x128xf32>, tensor<25x128x256xf32>
// AUTO-LABEL: func.func @im2col_1x1_f16(
// AUTO: linalg.matmul {compilation_info
// CHECK-LABEL: func.func @im2col_3x3_bf16(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: !torch.vtensor<[4,32,32,64],bf16>, %[[W:[a-z0-9_]+]]: !torch.vtensor<[64,3,3,64],bf16>
// CHECK-NOT: torch.aten.permute
// CHECK-DAG: %[[XB:.*]] = torch_c.to_builtin_tensor %[[X]] : !torch.vtensor<[4,32,32,64],bf16> -> tensor<4x32x32x64xbf16>
// CHECK-DAG: %[[WB:.*]] = torch_c.to_builtin_tensor %[[W]] : !torch.vtensor<[64,3,3,64],bf16> -> tensor<64x3x3x64xbf16>
// CHECK: %[[PAD:.*]] = tensor.pad %[[XB]] low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK: } : tensor<4x32x32x64xbf16> to tensor<4x34x34x64xbf16>
// CHECK: %[[P:.*]] = linalg.generic {indexing_maps = [#[[GATHER]], #[[ID6]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%[[PAD]] : tensor<4x34x34x64xbf16>) outs(%{{.*}} : tensor<4x32x32x3x3x64xbf16>)
// CHECK: %[[P2:.*]] = tensor.collapse_shape %[[P]] {{\[}}[0, 1, 2], [3, 4, 5]] : tensor<4x32x32x3x3x64xbf16> into tensor<4096x576xbf16>
// CHECK: %[[W2:.*]] = tensor.collapse_shape %[[WB]] {{\[}}[0], [1, 2, 3]] : tensor<64x3x3x64xbf16> into tensor<64x576xbf16>
// CHECK: %[[INIT:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4096x64xf32>)
// CHECK: %[[MM:.*]] = linalg.matmul indexing_maps = [#[[A]], #[[BT]], #[[C]]] ins(%[[P2]], %[[W2]] : tensor<4096x576xbf16>, tensor<64x576xbf16>) outs(%[[INIT]] : tensor<4096x64xf32>)
// CHECK: %[[Y4:.*]] = tensor.expand_shape %[[MM]] {{\[}}[0, 1, 2], [3]] output_shape [4, 32, 32, 64] : tensor<4096x64xf32> into tensor<4x32x32x64xf32>
// CHECK: %[[Y:.*]] = torch_c.from_builtin_tensor %[[Y4]]
// CHECK: %[[R:.*]] = torch.aten.to.dtype %[[Y]], %int15{{.*}} -> !torch.vtensor<[4,32,32,64],bf16>
// CHECK-NOT: torch.aten.permute
// CHECK-NOT: torch.aten.convolution
// CHECK: return %[[R]]
func.func @im2col_3x3_bf16(%x: !torch.vtensor<[4,32,32,64],bf16>, %w: !torch.vtensor<[64,3,3,64],bf16>) -> !torch.vtensor<[4,32,32,64],bf16> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int3 = torch.constant.int 3
  %to_nchw = torch.prim.ListConstruct %int0, %int3, %int1, %int2 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %to_nhwc = torch.prim.ListConstruct %int0, %int2, %int3, %int1 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %xl = torch.aten.permute %x, %to_nchw : !torch.vtensor<[4,32,32,64],bf16>, !torch.list<int> -> !torch.vtensor<[4,64,32,32],bf16>
  %wl = torch.aten.permute %w, %to_nchw : !torch.vtensor<[64,3,3,64],bf16>, !torch.list<int> -> !torch.vtensor<[64,64,3,3],bf16>
  %none = torch.constant.none
  %false = torch.constant.bool false
  %ones = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %empty = torch.prim.ListConstruct : () -> !torch.list<int>
  %y = torch.aten.convolution %xl, %wl, %none, %ones, %ones, %ones, %false, %empty, %int1 : !torch.vtensor<[4,64,32,32],bf16>, !torch.vtensor<[64,64,3,3],bf16>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[4,64,32,32],bf16>
  %yp = torch.aten.permute %y, %to_nhwc : !torch.vtensor<[4,64,32,32],bf16>, !torch.list<int> -> !torch.vtensor<[4,32,32,64],bf16>
  return %yp : !torch.vtensor<[4,32,32,64],bf16>
}

// Strides carry into the gather map; the matmul is f32 x f32 -> f32.
// CHECK-LABEL: func.func @im2col_strided_f32(
// CHECK-NOT: torch.aten.permute
// CHECK: tensor.pad %{{.*}} low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK: linalg.generic {indexing_maps = [#[[GATHER_S2]], #[[ID6]]]{{.*}} ins(%{{.*}} : tensor<4x30x30x128xf32>) outs(%{{.*}} : tensor<4x14x14x3x3x128xf32>)
// CHECK: linalg.matmul indexing_maps = [#[[A]], #[[BT]], #[[C]]] ins(%{{.*}}, %{{.*}} : tensor<784x1152xf32>, tensor<256x1152xf32>) outs(%{{.*}} : tensor<784x256xf32>)
// CHECK-NOT: torch.aten.permute
// CHECK-NOT: torch.aten.convolution
// CHECK: return
func.func @im2col_strided_f32(%x: !torch.vtensor<[4,28,28,128],f32>, %w: !torch.vtensor<[256,3,3,128],f32>) -> !torch.vtensor<[4,14,14,256],f32> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int3 = torch.constant.int 3
  %to_nchw = torch.prim.ListConstruct %int0, %int3, %int1, %int2 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %to_nhwc = torch.prim.ListConstruct %int0, %int2, %int3, %int1 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %xl = torch.aten.permute %x, %to_nchw : !torch.vtensor<[4,28,28,128],f32>, !torch.list<int> -> !torch.vtensor<[4,128,28,28],f32>
  %wl = torch.aten.permute %w, %to_nchw : !torch.vtensor<[256,3,3,128],f32>, !torch.list<int> -> !torch.vtensor<[256,128,3,3],f32>
  %none = torch.constant.none
  %false = torch.constant.bool false
  %twos = torch.prim.ListConstruct %int2, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %ones = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %empty = torch.prim.ListConstruct : () -> !torch.list<int>
  %y = torch.aten.convolution %xl, %wl, %none, %twos, %ones, %ones, %false, %empty, %int1 : !torch.vtensor<[4,128,28,28],f32>, !torch.vtensor<[256,128,3,3],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[4,256,14,14],f32>
  %yp = torch.aten.permute %y, %to_nhwc : !torch.vtensor<[4,256,14,14],f32>, !torch.list<int> -> !torch.vtensor<[4,14,14,256],f32>
  return %yp : !torch.vtensor<[4,14,14,256],f32>
}

// 1x1 unit-stride unpadded: the patch matrix is a reshape (no gather); f16 is widened.
// CHECK-LABEL: func.func @im2col_1x1_f16(
// CHECK-NOT: torch.aten.permute
// CHECK: torch.aten.to.dtype %{{.*}} -> !torch.vtensor<[4,28,28,256],f32>
// CHECK: torch.aten.to.dtype %{{.*}} -> !torch.vtensor<[128,1,1,256],f32>
// CHECK-NOT: linalg.generic
// CHECK-NOT: tensor.pad
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1, 2], [3]] : tensor<4x28x28x256xf32> into tensor<3136x256xf32>
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2, 3]] : tensor<128x1x1x256xf32> into tensor<128x256xf32>
// CHECK: linalg.matmul indexing_maps = [#[[A]], #[[BT]], #[[C]]] ins(%{{.*}}, %{{.*}} : tensor<3136x256xf32>, tensor<128x256xf32>) outs(%{{.*}} : tensor<3136x128xf32>)
// CHECK: torch.aten.to.dtype %{{.*}} -> !torch.vtensor<[4,28,28,128],f16>
// CHECK-NOT: torch.aten.permute
// CHECK-NOT: torch.aten.convolution
// CHECK: return
func.func @im2col_1x1_f16(%x: !torch.vtensor<[4,28,28,256],f16>, %w: !torch.vtensor<[128,1,1,256],f16>) -> !torch.vtensor<[4,28,28,128],f16> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int3 = torch.constant.int 3
  %to_nchw = torch.prim.ListConstruct %int0, %int3, %int1, %int2 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %to_nhwc = torch.prim.ListConstruct %int0, %int2, %int3, %int1 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %xl = torch.aten.permute %x, %to_nchw : !torch.vtensor<[4,28,28,256],f16>, !torch.list<int> -> !torch.vtensor<[4,256,28,28],f16>
  %wl = torch.aten.permute %w, %to_nchw : !torch.vtensor<[128,1,1,256],f16>, !torch.list<int> -> !torch.vtensor<[128,256,1,1],f16>
  %none = torch.constant.none
  %false = torch.constant.bool false
  %ones = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %zeros = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %empty = torch.prim.ListConstruct : () -> !torch.list<int>
  %y = torch.aten.convolution %xl, %wl, %none, %ones, %zeros, %ones, %false, %empty, %int1 : !torch.vtensor<[4,256,28,28],f16>, !torch.vtensor<[128,256,1,1],f16>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[4,128,28,28],f16>
  %yp = torch.aten.permute %y, %to_nhwc : !torch.vtensor<[4,128,28,28],f16>, !torch.list<int> -> !torch.vtensor<[4,28,28,128],f16>
  return %yp : !torch.vtensor<[4,28,28,128],f16>
}
