// RUN: %fusilli-opt %s --pass-pipeline=fusilli-epilogue-fusion | filecheck %s

// Scalar-operand torch ops the lowerings emit join fused regions: the norms'
// `var + eps` (torch.aten.add.Scalar) used to stop fusion before the rsqrt.
// CHECK-LABEL: func.func @var_plus_eps(
// CHECK-NOT: torch.aten.add.Scalar
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[IN:[a-z0-9_]+]]: f32, %{{.*}}: f32):
// CHECK: %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
// CHECK: %[[SUM:.*]] = arith.addf %[[IN]], %[[EPS]] : f32
// CHECK: %[[R:.*]] = math.rsqrt %[[SUM]] : f32
// CHECK: linalg.yield %[[R]] : f32
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @var_plus_eps(%var: !torch.vtensor<[2,1],f32>) -> !torch.vtensor<[2,1],f32> {
  %eps = torch.constant.float 1.000000e-05
  %int1 = torch.constant.int 1
  %0 = torch.aten.add.Scalar %var, %eps, %int1 : !torch.vtensor<[2,1],f32>, !torch.float, !torch.int -> !torch.vtensor<[2,1],f32>
  %1 = torch.aten.rsqrt %0 : !torch.vtensor<[2,1],f32> -> !torch.vtensor<[2,1],f32>
  return %1 : !torch.vtensor<[2,1],f32>
}

// SDPA's causal row index (r + offset) % Sq: integer add.Scalar (other * alpha
// folded) and remainder.Scalar with Python's sign rule (a negative remainder
// of a positive divisor moves up by one divisor).
// CHECK-LABEL: func.func @causal_rows(
// CHECK-NOT: torch.aten.remainder.Scalar
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[IN:[a-z0-9_]+]]: i64, %{{.*}}: i64):
// CHECK: %[[OFF:.*]] = arith.constant 6 : i64
// CHECK: %[[SUM:.*]] = arith.addi %[[IN]], %[[OFF]] : i64
// CHECK: %[[SQ:.*]] = arith.constant 4 : i64
// CHECK: %[[REM:.*]] = arith.remsi %[[SUM]], %[[SQ]] : i64
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK: %[[NEG:.*]] = arith.cmpi slt, %[[REM]], %[[ZERO]] : i64
// CHECK: %[[UP:.*]] = arith.addi %[[REM]], %[[SQ]] : i64
// CHECK: %[[R:.*]] = arith.select %[[NEG]], %[[UP]], %[[REM]] : i64
// CHECK: linalg.yield %[[R]] : i64
func.func @causal_rows(%r: !torch.vtensor<[8],si64>) -> !torch.vtensor<[8],si64> {
  %int3 = torch.constant.int 3
  %int2 = torch.constant.int 2
  %int4 = torch.constant.int 4
  %0 = torch.aten.add.Scalar %r, %int3, %int2 : !torch.vtensor<[8],si64>, !torch.int, !torch.int -> !torch.vtensor<[8],si64>
  %1 = torch.aten.remainder.Scalar %0, %int4 : !torch.vtensor<[8],si64>, !torch.int -> !torch.vtensor<[8],si64>
  return %1 : !torch.vtensor<[8],si64>
}

// Float remainder: x - floor(x / d) * d, then the relu in the same region.
// CHECK-LABEL: func.func @float_remainder(
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[IN:[a-z0-9_]+]]: f32, %{{.*}}: f32):
// CHECK: %[[D:.*]] = arith.constant 2.500000e+00 : f32
// CHECK: %[[Q:.*]] = arith.divf %[[IN]], %[[D]] : f32
// CHECK: %[[F:.*]] = math.floor %[[Q]] : f32
// CHECK: %[[M:.*]] = arith.mulf %[[F]], %[[D]] : f32
// CHECK: %[[REM:.*]] = arith.subf %[[IN]], %[[M]] : f32
// CHECK: arith.maximumf %[[REM]]
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @float_remainder(%x: !torch.vtensor<[8],f32>) -> !torch.vtensor<[8],f32> {
  %d = torch.constant.float 2.500000e+00
  %0 = torch.aten.remainder.Scalar %x, %d : !torch.vtensor<[8],f32>, !torch.float -> !torch.vtensor<[8],f32>
  %1 = torch.aten.relu %0 : !torch.vtensor<[8],f32> -> !torch.vtensor<[8],f32>
  return %1 : !torch.vtensor<[8],f32>
}
