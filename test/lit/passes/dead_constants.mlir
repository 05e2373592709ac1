// RUN: %fusilli-opt %s --split-input-file --pass-pipeline=fusilli-dead-constants | filecheck %s
// RUN: %fusilli-opt %s --split-input-file --pass-pipeline=fusilli-dead-constants --mlir-print-debuginfo | filecheck %s --check-prefix=LOC

// Unused constants and the unused list built from them go; used ones stay.
// CHECK-LABEL: func.func @dead_list(
// CHECK-NEXT: %[[ONE:.*]] = torch.constant.int 1
// CHECK-NEXT: %[[SUM:.*]] = torch.aten.add.Scalar %arg0, %[[ONE]], %[[ONE]]
// CHECK-NEXT: return %[[SUM]]
// LOC-LABEL: func.func @dead_list(
// LOC: torch.aten.add.Scalar {{.*}} loc("add")
func.func @dead_list(%x: !torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %none = torch.constant.none
  %list = torch.prim.ListConstruct %int0, %int2 : (!torch.int, !torch.int) -> !torch.list<int>
  %0 = torch.aten.add.Scalar %x, %int1, %int1 : !torch.vtensor<[2],f32>, !torch.int, !torch.int -> !torch.vtensor<[2],f32> loc("add")
  return %0 : !torch.vtensor<[2],f32>
}

// -----

// A second module (--split-input-file): arith constants and tensor.empty too; ops with
// effects are never touched.
// CHECK: // -----
// CHECK-LABEL: func.func @builtin(
// CHECK-NOT: arith.constant 2.0
// CHECK-NOT: tensor.empty
// CHECK: %[[C:.*]] = arith.constant 1.0
// CHECK: linalg.fill ins(%[[C]] : f32)
func.func @builtin(%out: tensor<4xf32>) -> tensor<4xf32> {
  %c1 = arith.constant 1.0 : f32
  %c2 = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %0 = linalg.fill ins(%c1 : f32) outs(%out : tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
