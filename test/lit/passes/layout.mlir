// RUN: %fusilli-opt %s --pass-pipeline=fusilli-layout | filecheck %s

// An NHWC -> NCHW permute followed by its inverse is folded away.
// CHECK-LABEL: func.func @inverse_pair(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,4,5,3],f32>
// CHECK-NOT: torch.aten.permute
// CHECK: return %[[X]] : !torch.vtensor<[2,4,5,3],f32>
func.func @inverse_pair(%x: !torch.vtensor<[2,4,5,3],f32>) -> !torch.vtensor<[2,4,5,3],f32> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int3 = torch.constant.int 3
  %to_nchw = torch.prim.ListConstruct %int0, %int3, %int1, %int2 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %to_nhwc = torch.prim.ListConstruct %int0, %int2, %int3, %int1 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %0 = torch.aten.permute %x, %to_nchw : !torch.vtensor<[2,4,5,3],f32>, !torch.list<int> -> !torch.vtensor<[2,3,4,5],f32>
  %1 = torch.aten.permute %0, %to_nhwc : !torch.vtensor<[2,3,4,5],f32>, !torch.list<int> -> !torch.vtensor<[2,4,5,3],f32>
  return %1 : !torch.vtensor<[2,4,5,3],f32>
}

// A permute by the identity is dropped.
// CHECK-LABEL: func.func @identity_permute(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3,4],f32>
// CHECK-NOT: torch.aten.permute
// CHECK: %[[R:.*]] = torch.aten.relu %[[X]]
// CHECK: return %[[R]]
func.func @identity_permute(%x: !torch.vtensor<[2,3,4],f32>) -> !torch.vtensor<[2,3,4],f32> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %id = torch.prim.ListConstruct %int0, %int1, %int2 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %0 = torch.aten.permute %x, %id : !torch.vtensor<[2,3,4],f32>, !torch.list<int> -> !torch.vtensor<[2,3,4],f32>
  %1 = torch.aten.relu %0 : !torch.vtensor<[2,3,4],f32> -> !torch.vtensor<[2,3,4],f32>
  return %1 : !torch.vtensor<[2,3,4],f32>
}

// Two permutes that are not inverses compose into one:
// permute(permute(x, [1, 0, 2]), [0, 2, 1]) == permute(x, [1, 2, 0]).
// CHECK-LABEL: func.func @compose_chain(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: !torch.vtensor<[2,3,4],f32>
// CHECK: %[[P:.*]] = torch.prim.ListConstruct %int1{{[_0-9]*}}, %int2{{[_0-9]*}}, %int0{{[_0-9]*}} :
// CHECK: %[[Y:.*]] = torch.aten.permute %[[X]], %[[P]] : !torch.vtensor<[2,3,4],f32>, !torch.list<int> -> !torch.vtensor<[3,4,2],f32>
// CHECK-NOT: torch.aten.permute
// CHECK: return %[[Y]]
func.func @compose_chain(%x: !torch.vtensor<[2,3,4],f32>) -> !torch.vtensor<[3,4,2],f32> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %p0 = torch.prim.ListConstruct %int1, %int0, %int2 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %p1 = torch.prim.ListConstruct %int0, %int2, %int1 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %0 = torch.aten.permute %x, %p0 : !torch.vtensor<[2,3,4],f32>, !torch.list<int> -> !torch.vtensor<[3,2,4],f32>
  %1 = torch.aten.permute %0, %p1 : !torch.vtensor<[3,2,4],f32>, !torch.list<int> -> !torch.vtensor<[3,4,2],f32>
  return %1 : !torch.vtensor<[3,4,2],f32>
}

// Permutes sink below an elementwise chain whose operands are all permuted the
// same way (a one-element scalar is layout-free), then meet the inverse
// permute of the result and cancel: the chain runs in physical (NHWC) order.
// CHECK-LABEL: func.func @sink_through_elementwise(
// CHECK-SAME: %[[A:[a-z0-9_]+]]: !torch.vtensor<[2,4,5,3],f32>, %[[B:[a-z0-9_]+]]: !torch.vtensor<[2,4,5,3],f32>
// CHECK-NOT: torch.aten.permute
// CHECK: %[[ADD:.*]] = torch.aten.add.Tensor %[[A]], %[[B]], %{{.*}} -> !torch.vtensor<[2,4,5,3],f32>
// CHECK: %[[MUL:.*]] = torch.aten.mul.Tensor %[[ADD]], %{{.*}} : !torch.vtensor<[2,4,5,3],f32>, !torch.vtensor<[1],f32> -> !torch.vtensor<[2,4,5,3],f32>
// CHECK: %[[R:.*]] = torch.aten.relu %[[MUL]] : !torch.vtensor<[2,4,5,3],f32> -> !torch.vtensor<[2,4,5,3],f32>
// CHECK-NOT: torch.aten.permute
// CHECK: return %[[R]]
func.func @sink_through_elementwise(%a: !torch.vtensor<[2,4,5,3],f32>, %b: !torch.vtensor<[2,4,5,3],f32>) -> !torch.vtensor<[2,4,5,3],f32> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int3 = torch.constant.int 3
  %to_nchw = torch.prim.ListConstruct %int0, %int3, %int1, %int2 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %to_nhwc = torch.prim.ListConstruct %int0, %int2, %int3, %int1 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %scale = torch.vtensor.literal(dense<2.000000e+00> : tensor<1xf32>) : !torch.vtensor<[1],f32>
  %0 = torch.aten.permute %a, %to_nchw : !torch.vtensor<[2,4,5,3],f32>, !torch.list<int> -> !torch.vtensor<[2,3,4,5],f32>
  %1 = torch.aten.permute %b, %to_nchw : !torch.vtensor<[2,4,5,3],f32>, !torch.list<int> -> !torch.vtensor<[2,3,4,5],f32>
  %2 = torch.aten.add.Tensor %0, %1, %int1 : !torch.vtensor<[2,3,4,5],f32>, !torch.vtensor<[2,3,4,5],f32>, !torch.int -> !torch.vtensor<[2,3,4,5],f32>
  %3 = torch.aten.mul.Tensor %2, %scale : !torch.vtensor<[2,3,4,5],f32>, !torch.vtensor<[1],f32> -> !torch.vtensor<[2,3,4,5],f32>
  %4 = torch.aten.relu %3 : !torch.vtensor<[2,3,4,5],f32> -> !torch.vtensor<[2,3,4,5],f32>
  %5 = torch.aten.permute %4, %to_nhwc : !torch.vtensor<[2,3,4,5],f32>, !torch.list<int> -> !torch.vtensor<[2,4,5,3],f32>
  return %5 : !torch.vtensor<[2,4,5,3],f32>
}

// Operands permuted differently (or not at all) keep the op where it is.
// CHECK-LABEL: func.func @no_sink_mixed_layouts(
// CHECK-SAME: %[[A:[a-z0-9_]+]]: !torch.vtensor<[2,4,5,3],f32>, %[[B:[a-z0-9_]+]]: !torch.vtensor<[2,3,4,5],f32>
// CHECK: %[[AL:.*]] = torch.aten.permute %[[A]], %{{.*}} -> !torch.vtensor<[2,3,4,5],f32>
// CHECK: %[[ADD:.*]] = torch.aten.add.Tensor %[[AL]], %[[B]], %{{.*}} -> !torch.vtensor<[2,3,4,5],f32>
// CHECK: return %[[ADD]]
func.func @no_sink_mixed_layouts(%a: !torch.vtensor<[2,4,5,3],f32>, %b: !torch.vtensor<[2,3,4,5],f32>) -> !torch.vtensor<[2,3,4,5],f32> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int3 = torch.constant.int 3
  %to_nchw = torch.prim.ListConstruct %int0, %int3, %int1, %int2 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %0 = torch.aten.permute %a, %to_nchw : !torch.vtensor<[2,4,5,3],f32>, !torch.list<int> -> !torch.vtensor<[2,3,4,5],f32>
  %1 = torch.aten.add.Tensor %0, %b, %int1 : !torch.vtensor<[2,3,4,5],f32>, !torch.vtensor<[2,3,4,5],f32>, !torch.int -> !torch.vtensor<[2,3,4,5],f32>
  return %1 : !torch.vtensor<[2,3,4,5],f32>
}
