// RUN: not %fusilli-opt %s 2>&1 | filecheck %s
// RUN: not %fusilli-opt %s.does-not-exist 2>&1 | filecheck %s --check-prefix=MISSING

// A file that is not valid MLIR is reported as such, with the parser's
// diagnostic, and no traceback.
// CHECK: fusilli-opt: INVALID_ARGUMENT: {{.*}}invalid_input.mlir is not a valid MLIR module
// CHECK: error:
// CHECK-NOT: Traceback

// MISSING: fusilli-opt: FILE_SYSTEM_FAILURE: cannot read input

func.func @broken(%x: !torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32> {
  %0 = torch.aten.relu %undefined : !torch.vtensor<[2],f32> -> !torch.vtensor<[2],f32>
  return %0 : !torch.vtensor<[2],f32>
}
