// RUN: %fusilli-opt %s --pass-pipeline=fusilli-layout,cse,fusilli-epilogue-fusion --print-ir-after-all | filecheck %s
// RUN: %fusilli-opt %s --pass-pipeline=default | filecheck %s --check-prefix=DEFAULT
// RUN: not %fusilli-opt %s --pass-pipeline=fusilli-layout,no-such-pass 2>&1 | filecheck %s --check-prefix=UNKNOWN

// fusilli passes and upstream MLIR passes mix in one pipeline; each one's
// result is dumped (to stdout, so it interleaves in order) before the final IR.

// CHECK-LABEL: // -----// IR Dump After fusilli-layout //----- //
// CHECK: func.func @nhwc_relu(%[[X:[a-z0-9_]+]]: !torch.vtensor<[1,2,2,3],f32>)
// CHECK-NOT: torch.aten.permute
// CHECK: torch.aten.relu %[[X]]
// CHECK-LABEL: // -----// IR Dump After cse //----- //
// CHECK: torch.aten.relu
// CHECK-LABEL: // -----// IR Dump After fusilli-epilogue-fusion //----- //
// CHECK-NOT: torch.aten.relu
// CHECK: linalg.generic
// CHECK: arith.maximumf
// The final module follows the last dump.
// CHECK: module {
// CHECK: linalg.generic
// CHECK-NOT: IR Dump After

// DEFAULT-NOT: IR Dump After
// DEFAULT-NOT: torch.aten.permute
// DEFAULT: linalg.generic {{.*}} ins(%{{.*}} : tensor<1x2x2x3xf32>) outs(%{{.*}} : tensor<1x2x2x3xf32>)

// UNKNOWN: fusilli-opt: INVALID_ARGUMENT: unknown pass or bad pipeline 'no-such-pass'

func.func @nhwc_relu(%x: !torch.vtensor<[1,2,2,3],f32>) -> !torch.vtensor<[1,2,2,3],f32> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int3 = torch.constant.int 3
  %to_nchw = torch.prim.ListConstruct %int0, %int3, %int1, %int2 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %to_nhwc = torch.prim.ListConstruct %int0, %int2, %int3, %int1 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %0 = torch.aten.permute %x, %to_nchw : !torch.vtensor<[1,2,2,3],f32>, !torch.list<int> -> !torch.vtensor<[1,3,2,2],f32>
  %1 = torch.aten.relu %0 : !torch.vtensor<[1,3,2,2],f32> -> !torch.vtensor<[1,3,2,2],f32>
  %2 = torch.aten.permute %1, %to_nhwc : !torch.vtensor<[1,3,2,2],f32>, !torch.list<int> -> !torch.vtensor<[1,2,2,3],f32>
  return %2 : !torch.vtensor<[1,2,2,3],f32>
}
