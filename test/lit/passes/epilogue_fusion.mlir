// RUN: %fusilli-opt %s --pass-pipeline=fusilli-epilogue-fusion | filecheck %s

// Affine maps print at the top of the module, before every function.
// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[ID4:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[BIAS:.*]] = affine_map<(d0, d1, d2, d3) -> (0, d3, 0, 0)>
// CHECK-DAG: #[[NCHW:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>
// CHECK-DAG: #[[ID2:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[T:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (0, d1)>

// An add -> mul -> relu chain becomes one linalg.generic whose body mirrors
// the torch ops in order.
// CHECK-LABEL: func.func @chain_add_mul_relu(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3,4],f32>, %[[Y:[a-z0-9_]+]]: !torch.vtensor<[2,3,4],f32>, %[[Z:[a-z0-9_]+]]: !torch.vtensor<[2,3,4],f32>
// CHECK-NOT: torch.aten.add.Tensor
// CHECK-DAG: %[[XB:.*]] = torch_c.to_builtin_tensor %[[X]]
// CHECK-DAG: %[[YB:.*]] = torch_c.to_builtin_tensor %[[Y]]
// CHECK-DAG: %[[ZB:.*]] = torch_c.to_builtin_tensor %[[Z]]
// CHECK: %[[G:.*]] = linalg.generic {indexing_maps = [#[[ID3]], #[[ID3]], #[[ID3]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[XB]], %[[YB]], %[[ZB]] :
// CHECK-NEXT: ^bb0(%[[IX:[a-z0-9_]+]]: f32, %[[IY:[a-z0-9_]+]]: f32, %[[IZ:[a-z0-9_]+]]: f32, %{{.*}}: f32):
// CHECK: %[[S:.*]] = arith.addf %[[IX]], %[[IY]] : f32
// CHECK: %[[P:.*]] = arith.mulf %[[S]], %[[IZ]] : f32
// CHECK: %[[R:.*]] = arith.maximumf %[[P]], %{{.*}} : f32
// CHECK: linalg.yield %[[R]] : f32
// CHECK: %[[OUT:.*]] = torch_c.from_builtin_tensor %[[G]] : tensor<2x3x4xf32> -> !torch.vtensor<[2,3,4],f32>
// CHECK-NOT: linalg.generic
// CHECK: return %[[OUT]]
func.func @chain_add_mul_relu(%x: !torch.vtensor<[2,3,4],f32>, %y: !torch.vtensor<[2,3,4],f32>, %z: !torch.vtensor<[2,3,4],f32>) -> !torch.vtensor<[2,3,4],f32> {
  %int1 = torch.constant.int 1
  %0 = torch.aten.add.Tensor %x, %y, %int1 : !torch.vtensor<[2,3,4],f32>, !torch.vtensor<[2,3,4],f32>, !torch.int -> !torch.vtensor<[2,3,4],f32>
  %1 = torch.aten.mul.Tensor %0, %z : !torch.vtensor<[2,3,4],f32>, !torch.vtensor<[2,3,4],f32> -> !torch.vtensor<[2,3,4],f32>
  %2 = torch.aten.relu %1 : !torch.vtensor<[2,3,4],f32> -> !torch.vtensor<[2,3,4],f32>
  return %2 : !torch.vtensor<[2,3,4],f32>
}

// Conv + bias + relu in NCHW, stored NHWC: the bias leaf gets a broadcast
// map (constant 0 in its unit dims), and the trailing NCHW -> NHWC permute is
// absorbed: the generic iterates in the stored NHWC order (channels innermost,
// so it vectorizes along memory and fuses into a producer iterating the same
// way) and reads the NCHW operands through permuted maps.
// CHECK-LABEL: func.func @bias_relu_trailing_permute(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3,4,5],f32>, %[[W:[a-z0-9_]+]]: !torch.vtensor<[6,3,1,1],f32>, %[[B:[a-z0-9_]+]]: !torch.vtensor<[1,6,1,1],f32>
// CHECK: %[[CONV:.*]] = torch.aten.convolution %[[X]], %[[W]]
// CHECK-DAG: %[[CB:.*]] = torch_c.to_builtin_tensor %[[CONV]]
// CHECK-DAG: %[[BB:.*]] = torch_c.to_builtin_tensor %[[B]]
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<2x4x5x6xf32>
// CHECK: %[[G:.*]] = linalg.generic {indexing_maps = [#[[NCHW]], #[[BIAS]], #[[ID4]]]
// CHECK-SAME: ins(%[[CB]], %[[BB]] : tensor<2x6x4x5xf32>, tensor<1x6x1x1xf32>) outs(%[[INIT]] : tensor<2x4x5x6xf32>)
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: %[[OUT:.*]] = torch_c.from_builtin_tensor %[[G]] : tensor<2x4x5x6xf32> -> !torch.vtensor<[2,4,5,6],f32>
// CHECK-NOT: torch.aten.permute
// CHECK: return %[[OUT]]
func.func @bias_relu_trailing_permute(%x: !torch.vtensor<[2,3,4,5],f32>, %w: !torch.vtensor<[6,3,1,1],f32>, %b: !torch.vtensor<[1,6,1,1],f32>) -> !torch.vtensor<[2,4,5,6],f32> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int3 = torch.constant.int 3
  %none = torch.constant.none
  %false = torch.constant.bool false
  %ones = torch.prim.ListConstruct %int1, %int1 : (!torch.int, !torch.int) -> !torch.list<int>
  %zeros = torch.prim.ListConstruct %int0, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %empty = torch.prim.ListConstruct  : () -> !torch.list<int>
  %0 = torch.aten.convolution %x, %w, %none, %ones, %zeros, %ones, %false, %empty, %int1 : !torch.vtensor<[2,3,4,5],f32>, !torch.vtensor<[6,3,1,1],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, !torch.int -> !torch.vtensor<[2,6,4,5],f32>
  %1 = torch.aten.add.Tensor %0, %b, %int1 : !torch.vtensor<[2,6,4,5],f32>, !torch.vtensor<[1,6,1,1],f32>, !torch.int -> !torch.vtensor<[2,6,4,5],f32>
  %2 = torch.aten.relu %1 : !torch.vtensor<[2,6,4,5],f32> -> !torch.vtensor<[2,6,4,5],f32>
  %to_nhwc = torch.prim.ListConstruct %int0, %int2, %int3, %int1 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %3 = torch.aten.permute %2, %to_nhwc : !torch.vtensor<[2,6,4,5],f32>, !torch.list<int> -> !torch.vtensor<[2,4,5,6],f32>
  return %3 : !torch.vtensor<[2,4,5,6],f32>
}

// Leaf permutes and expands are absorbed as indexing maps: a transposed leaf
// reads through a permuted map, an expanded [1, 3] leaf through a broadcast map.
// CHECK-LABEL: func.func @absorb_leaf_permute_and_expand(
// CHECK-SAME: %[[A:[a-z0-9_]+]]: !torch.vtensor<[3,2],f32>, %[[B:[a-z0-9_]+]]: !torch.vtensor<[1,3],f32>
// CHECK-NOT: torch.aten.permute
// CHECK-NOT: torch.aten.expand
// CHECK-DAG: %[[AB:.*]] = torch_c.to_builtin_tensor %[[A]] : !torch.vtensor<[3,2],f32> -> tensor<3x2xf32>
// CHECK-DAG: %[[BB:.*]] = torch_c.to_builtin_tensor %[[B]] : !torch.vtensor<[1,3],f32> -> tensor<1x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[T]], #[[ROW]], #[[ID2]]]
// CHECK-SAME: ins(%[[AB]], %[[BB]] : tensor<3x2xf32>, tensor<1x3xf32>) outs(%{{.*}} : tensor<2x3xf32>)
// CHECK: arith.subf
func.func @absorb_leaf_permute_and_expand(%a: !torch.vtensor<[3,2],f32>, %b: !torch.vtensor<[1,3],f32>) -> !torch.vtensor<[2,3],f32> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int3 = torch.constant.int 3
  %false = torch.constant.bool false
  %t = torch.prim.ListConstruct %int1, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  %sizes = torch.prim.ListConstruct %int2, %int3 : (!torch.int, !torch.int) -> !torch.list<int>
  %0 = torch.aten.permute %a, %t : !torch.vtensor<[3,2],f32>, !torch.list<int> -> !torch.vtensor<[2,3],f32>
  %1 = torch.aten.expand %b, %sizes, %false : !torch.vtensor<[1,3],f32>, !torch.list<int>, !torch.bool -> !torch.vtensor<[2,3],f32>
  %2 = torch.aten.sub.Tensor %0, %1, %int1 : !torch.vtensor<[2,3],f32>, !torch.vtensor<[2,3],f32>, !torch.int -> !torch.vtensor<[2,3],f32>
  return %2 : !torch.vtensor<[2,3],f32>
}

// An intermediate with a use outside the chain is not fused across: the add
// (also returned) and the relu end up in separate generics.
// CHECK-LABEL: func.func @multi_use_not_fused(
// CHECK: %[[G1:.*]] = linalg.generic
// CHECK: arith.addf
// CHECK-NOT: arith.maximumf
// CHECK: linalg.yield
// CHECK: %[[SUM:.*]] = torch_c.from_builtin_tensor %[[G1]]
// CHECK: %[[SUMB:.*]] = torch_c.to_builtin_tensor %[[SUM]]
// CHECK: %[[G2:.*]] = linalg.generic {{.*}} ins(%[[SUMB]] :
// CHECK-NOT: arith.addf
// CHECK: arith.maximumf
// CHECK: %[[R:.*]] = torch_c.from_builtin_tensor %[[G2]]
// CHECK: return %[[R]], %[[SUM]]
func.func @multi_use_not_fused(%x: !torch.vtensor<[4],f32>, %y: !torch.vtensor<[4],f32>) -> (!torch.vtensor<[4],f32>, !torch.vtensor<[4],f32>) {
  %int1 = torch.constant.int 1
  %0 = torch.aten.add.Tensor %x, %y, %int1 : !torch.vtensor<[4],f32>, !torch.vtensor<[4],f32>, !torch.int -> !torch.vtensor<[4],f32>
  %1 = torch.aten.relu %0 : !torch.vtensor<[4],f32> -> !torch.vtensor<[4],f32>
  return %1, %0 : !torch.vtensor<[4],f32>, !torch.vtensor<[4],f32>
}

// A diamond (the intermediate feeds two ops, both inside the chain) is fused
// into one generic: every use of the add is in the region.
// CHECK-LABEL: func.func @diamond_fused(
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: arith.mulf
// CHECK: linalg.yield
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @diamond_fused(%x: !torch.vtensor<[4],f32>, %y: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> {
  %int1 = torch.constant.int 1
  %0 = torch.aten.add.Tensor %x, %y, %int1 : !torch.vtensor<[4],f32>, !torch.vtensor<[4],f32>, !torch.int -> !torch.vtensor<[4],f32>
  %1 = torch.aten.relu %0 : !torch.vtensor<[4],f32> -> !torch.vtensor<[4],f32>
  %2 = torch.aten.mul.Tensor %1, %0 : !torch.vtensor<[4],f32>, !torch.vtensor<[4],f32> -> !torch.vtensor<[4],f32>
  return %2 : !torch.vtensor<[4],f32>
}
