// RUN: env FUSILLI_CONV_LOWERING=linalg %fusilli-opt %s --pass-pipeline=fusilli-conv-layout | filecheck %s
// RUN: %fusilli-opt %s --pass-pipeline=fusilli-conv-layout | filecheck %s --check-prefix=AUTO

// A padded 3x3 conv on NHWC input/filter/output: the NCHW torch convolution
// with permutes around becomes linalg.conv_2d_nhwc_hwcf on the NHWC input
// (tensor.pad, fill), the filter transposed to HWCF; no activation permute.
// By default (FUSILLI_CONV_LOWERING=auto) this small padded conv is instead one
// reduction generic reading the unpadded input (fusilli/passes/conv_direct.py).
// AUTO-LABEL: func.func @conv3x3_nhwc(
// AUTO-NOT: tensor.pad
// AUTO: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%{{.*}} : tensor<3x3x4x16xf32>) outs(%{{.*}} : tensor<1x8x8x16xf32>)
// AUTO: tensor.extract %{{.*}} : tensor<1x8x8x4xf32>
// AUTO-NOT: tensor.pad
// AUTO-LABEL: func.func @strided_dilated(
// CHECK-LABEL: func.func @conv3x3_nhwc(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: !torch.vtensor<[1,8,8,4],f32>, %[[W:[a-z0-9_]+]]: !torch.vtensor<[16,3,3,4],f32>
// CHECK: %[[WP:.*]] = torch.aten.permute %[[W]], %{{.*}} -> !torch.vtensor<[3,3,4,16],f32>
// CHECK-DAG: %[[XB:.*]] = torch_c.to_builtin_tensor %[[X]] : !torch.vtensor<[1,8,8,4],f32> -> tensor<1x8x8x4xf32>
// CHECK-DAG: %[[WB:.*]] = torch_c.to_builtin_tensor %[[WP]] : !torch.vtensor<[3,3,4,16],f32> -> tensor<3x3x4x16xf32>
// CHECK: %[[PAD:.*]] = tensor.pad %[[XB]] low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK: } : tensor<1x8x8x4xf32> to tensor<1x10x10x4xf32>
// CHECK: %[[INIT:.*]] = linalg.fill
// CHECK: %[[C:.*]] = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%[[PAD]], %[[WB]] : tensor<1x10x10x4xf32>, tensor<3x3x4x16xf32>) outs(%[[INIT]] : tensor<1x8x8x16xf32>)
// CHECK: %[[Y:.*]] = torch_c.from_builtin_tensor %[[C]] : tensor<1x8x8x16xf32> -> !torch.vtensor<[1,8,8,16],f32>
// CHECK-NOT: torch.aten.permute
// CHECK-NOT: torch.aten.convolution
// CHECK: return %[[Y]]
func.func @conv3x3_nhwc(%x: !torch.vtensor<[1,8,8,4],f32>, %w: !torch.vtensor<[16,3,3,4],f32>) -> !torch.vtensor<[1,8,8,16],f32> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int3 = torch.constant.int 3
  %to_nchw = torch.prim.ListConstruct %int0, %int3, %int1, %int2 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %to_nhwc = torch.prim.ListConstruct %int0, %int2, %int3, %int1 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %xl = torch.aten.permute %x, %to_nchw : !torch.vtensor<[1,8,8,4],f32>, !torch.list<int> -> !torch.vtensor<[1,4,8,8],f32>
  %wl = torch.aten.permute %w, %to_nchw : !torch.vtensor<[16,3,3,4],f32>, !torch.list<int> -> !torch.vtensor<[16,4,3,3],f32>
  %none = torch.constant.none
  %false = torch.constant.bool false
  %ones = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %empty = torch.prim.ListConstruct : () -> !torch.list<int>
  %y = torch.aten.convolution %xl, %wl, %none, %ones, %ones, %ones, %false, %empty, %int1 : !torch.vtensor<[1,4,8,8],f32>, !torch.vtensor<[16,4,3,3],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[1,16,8,8],f32>
  %yp = torch.aten.permute %y, %to_nhwc : !torch.vtensor<[1,16,8,8],f32>, !torch.list<int> -> !torch.vtensor<[1,8,8,16],f32>
  return %yp : !torch.vtensor<[1,8,8,16],f32>
}

// Strides and dilations carry over; no padding means no tensor.pad.
// CHECK-LABEL: func.func @strided_dilated(
// CHECK-NOT: tensor.pad
// CHECK: linalg.conv_2d_nhwc_hwcf {dilations = dense<[2, 1]> : tensor<2xi64>, strides = dense<[2, 3]> : tensor<2xi64>} ins(%{{.*}}, %{{.*}} : tensor<1x11x10x4xf32>, tensor<3x3x4x8xf32>) outs(%{{.*}} : tensor<1x4x3x8xf32>)
// CHECK-NOT: torch.aten.convolution
func.func @strided_dilated(%x: !torch.vtensor<[1,11,10,4],f32>, %w: !torch.vtensor<[8,3,3,4],f32>) -> !torch.vtensor<[1,4,3,8],f32> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int3 = torch.constant.int 3
  %to_nchw = torch.prim.ListConstruct %int0, %int3, %int1, %int2 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %to_nhwc = torch.prim.ListConstruct %int0, %int2, %int3, %int1 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %xl = torch.aten.permute %x, %to_nchw : !torch.vtensor<[1,11,10,4],f32>, !torch.list<int> -> !torch.vtensor<[1,4,11,10],f32>
  %wl = torch.aten.permute %w, %to_nchw : !torch.vtensor<[8,3,3,4],f32>, !torch.list<int> -> !torch.vtensor<[8,4,3,3],f32>
  %none = torch.constant.none
  %false = torch.constant.bool false
  %stride = torch.prim.ListConstruct %int2, %int3 : (!torch.int, !torch.int) -> !torch.list<int>
  %pad = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %dil = torch.prim.ListConstruct %int2, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %empty = torch.prim.ListConstruct : () -> !torch.list<int>
  %y = torch.aten.convolution %xl, %wl, %none, %stride, %pad, %dil, %false, %empty, %int1 : !torch.vtensor<[1,4,11,10],f32>, !torch.vtensor<[8,4,3,3],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[1,8,4,3],f32>
  %yp = torch.aten.permute %y, %to_nhwc : !torch.vtensor<[1,8,4,3],f32>, !torch.list<int> -> !torch.vtensor<[1,4,3,8],f32>
  return %yp : !torch.vtensor<[1,4,3,8],f32>
}

// A 1x1 stride-1 unpadded conv is a matmul over [N*H*W, C] x [C, K].
// CHECK-LABEL: func.func @conv1x1(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,5,4,16],f32>
// CHECK: %[[A:.*]] = torch.aten.view %[[X]], %{{.*}} -> !torch.vtensor<[40,16],f32>
// CHECK: %[[B:.*]] = torch.aten.view %{{.*}} -> !torch.vtensor<[16,8],f32>
// CHECK: %[[M:.*]] = torch.aten.mm %[[A]], %[[B]] : {{.*}} -> !torch.vtensor<[40,8],f32>
// CHECK: %[[Y:.*]] = torch.aten.view %[[M]], %{{.*}} -> !torch.vtensor<[2,5,4,8],f32>
// CHECK-NOT: torch.aten.permute
// CHECK: return %[[Y]]
func.func @conv1x1(%x: !torch.vtensor<[2,5,4,16],f32>, %w: !torch.vtensor<[8,1,1,16],f32>) -> !torch.vtensor<[2,5,4,8],f32> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int3 = torch.constant.int 3
  %to_nchw = torch.prim.ListConstruct %int0, %int3, %int1, %int2 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %to_nhwc = torch.prim.ListConstruct %int0, %int2, %int3, %int1 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %xl = torch.aten.permute %x, %to_nchw : !torch.vtensor<[2,5,4,16],f32>, !torch.list<int> -> !torch.vtensor<[2,16,5,4],f32>
  %wl = torch.aten.permute %w, %to_nchw : !torch.vtensor<[8,1,1,16],f32>, !torch.list<int> -> !torch.vtensor<[8,16,1,1],f32>
  %none = torch.constant.none
  %false = torch.constant.bool false
  %ones = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %zeros = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %empty = torch.prim.ListConstruct : () -> !torch.list<int>
  %y = torch.aten.convolution %xl, %wl, %none, %ones, %zeros, %ones, %false, %empty, %int1 : !torch.vtensor<[2,16,5,4],f32>, !torch.vtensor<[8,16,1,1],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[2,8,5,4],f32>
  %yp = torch.aten.permute %y, %to_nhwc : !torch.vtensor<[2,8,5,4],f32>, !torch.list<int> -> !torch.vtensor<[2,5,4,8],f32>
  return %yp : !torch.vtensor<[2,5,4,8],f32>
}

// f16: the conv computes in f32 (inputs cast), the result is rounded once.
// CHECK-LABEL: func.func @conv_f16(
// CHECK: torch.aten.to.dtype {{.*}} -> !torch.vtensor<[1,8,8,4],f32>
// CHECK: torch.aten.to.dtype {{.*}} -> !torch.vtensor<[16,3,3,4],f32>
// CHECK: torch.aten.permute {{.*}} -> !torch.vtensor<[3,3,4,16],f32>
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}} outs(%{{.*}} : tensor<1x8x8x16xf32>)
// CHECK: %[[Y:.*]] = torch.aten.to.dtype {{.*}} -> !torch.vtensor<[1,8,8,16],f16>
// CHECK: return %[[Y]]
func.func @conv_f16(%x: !torch.vtensor<[1,8,8,4],f16>, %w: !torch.vtensor<[16,3,3,4],f16>) -> !torch.vtensor<[1,8,8,16],f16> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int3 = torch.constant.int 3
  %to_nchw = torch.prim.ListConstruct %int0, %int3, %int1, %int2 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %to_nhwc = torch.prim.ListConstruct %int0, %int2, %int3, %int1 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %xl = torch.aten.permute %x, %to_nchw : !torch.vtensor<[1,8,8,4],f16>, !torch.list<int> -> !torch.vtensor<[1,4,8,8],f16>
  %wl = torch.aten.permute %w, %to_nchw : !torch.vtensor<[16,3,3,4],f16>, !torch.list<int> -> !torch.vtensor<[16,4,3,3],f16>
  %none = torch.constant.none
  %false = torch.constant.bool false
  %ones = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %empty = torch.prim.ListConstruct : () -> !torch.list<int>
  %y = torch.aten.convolution %xl, %wl, %none, %ones, %ones, %ones, %false, %empty, %int1 : !torch.vtensor<[1,4,8,8],f16>, !torch.vtensor<[16,4,3,3],f16>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[1,16,8,8],f16>
  %yp = torch.aten.permute %y, %to_nhwc : !torch.vtensor<[1,16,8,8],f16>, !torch.list<int> -> !torch.vtensor<[1,8,8,16],f16>
  return %yp : !torch.vtensor<[1,8,8,16],f16>
}

// NCHW input: left as torch.aten.convolution (a rewrite would add transposes).
// CHECK-LABEL: func.func @nchw_untouched(
// CHECK: torch.aten.convolution
// CHECK-NOT: linalg.conv_2d_nhwc_hwcf
// CHECK: return
func.func @nchw_untouched(%x: !torch.vtensor<[1,4,8,8],f32>, %w: !torch.vtensor<[16,4,3,3],f32>) -> !torch.vtensor<[1,16,8,8],f32> {
  %int1 = torch.constant.int 1
  %none = torch.constant.none
  %false = torch.constant.bool false
  %ones = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %empty = torch.prim.ListConstruct : () -> !torch.list<int>
  %y = torch.aten.convolution %x, %w, %none, %ones, %ones, %ones, %false, %empty, %int1 : !torch.vtensor<[1,4,8,8],f32>, !torch.vtensor<[16,4,3,3],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[1,16,8,8],f32>
  return %y : !torch.vtensor<[1,16,8,8],f32>
}

// A grouped NHWC f16 conv computes in f32: inputs cast, the conv (cpu-conv-grouped-direct's generic
// over its taps on a host with AVX2 or AVX-512, else a torch convolution), its result rounded once.
// CHECK-LABEL: func.func @grouped_f16(
// CHECK: torch.aten.to.dtype {{.*}} -> !torch.vtensor<[1,6,6,8],f32>
// CHECK: torch.aten.to.dtype {{.*}} -> !torch.vtensor<[8,3,3,4],f32>
// CHECK: {{linalg.generic .* outs\(.* : tensor<6x6x2x4xf32>\)|torch.aten.convolution .* -> !torch.vtensor<\[1,8,6,6\],f32>}}
// CHECK: torch.aten.to.dtype {{.*}} -> !torch.vtensor<[1,{{6,6,8|8,6,6}}],f16>
// CHECK-NOT: linalg.conv_2d_nhwc_hwcf
func.func @grouped_f16(%x: !torch.vtensor<[1,6,6,8],f16>, %w: !torch.vtensor<[8,3,3,4],f16>) -> !torch.vtensor<[1,6,6,8],f16> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int3 = torch.constant.int 3
  %to_nchw = torch.prim.ListConstruct %int0, %int3, %int1, %int2 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %to_nhwc = torch.prim.ListConstruct %int0, %int2, %int3, %int1 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %xl = torch.aten.permute %x, %to_nchw : !torch.vtensor<[1,6,6,8],f16>, !torch.list<int> -> !torch.vtensor<[1,8,6,6],f16>
  %wl = torch.aten.permute %w, %to_nchw : !torch.vtensor<[8,3,3,4],f16>, !torch.list<int> -> !torch.vtensor<[8,4,3,3],f16>
  %none = torch.constant.none
  %false = torch.constant.bool false
  %ones = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %empty = torch.prim.ListConstruct : () -> !torch.list<int>
  %y = torch.aten.convolution %xl, %wl, %none, %ones, %ones, %ones, %false, %empty, %int2 : !torch.vtensor<[1,8,6,6],f16>, !torch.vtensor<[8,4,3,3],f16>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[1,8,6,6],f16>
  %yp = torch.aten.permute %y, %to_nhwc : !torch.vtensor<[1,8,6,6],f16>, !torch.list<int> -> !torch.vtensor<[1,6,6,8],f16>
  return %yp : !torch.vtensor<[1,6,6,8],f16>
}
