// The elementwise rule alone (with fusion=all, a matmul or a reduction
// would take some of these chains as its epilogue or prologue: see
// gemm-epilogue.mlir and reduction-prologue.mlir).
// RUN: tg-opt %s -split-input-file -tg-fuse=fusion=elementwise | FileCheck %s
// RUN: tg-opt %s -split-input-file -tg-fuse=fusion=none | FileCheck %s --check-prefix=NONE

// A chain over one iteration space is one kernel; the smaller operand
// broadcasts into it.
// CHECK-LABEL: func.func @chain
// CHECK:      %[[K:.+]] = tg.kernel elementwise(%{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<8xf32>) attributes {name = "fused_add_relu_exp"} {
// CHECK-NEXT: ^bb0(%[[X:.+]]: tensor<4x8xf32>, %[[B:.+]]: tensor<8xf32>):
// CHECK-NEXT:   %[[S:.+]] = tg.add %[[X]], %[[B]]
// CHECK-NEXT:   %[[R:.+]] = tg.relu %[[S]]
// CHECK-NEXT:   %[[E:.+]] = tg.exp %[[R]]
// CHECK-NEXT:   tg.yield %[[E]] : tensor<4x8xf32>
// CHECK:      return %[[K]]
// NONE-LABEL: func.func @chain
// NONE-NOT:   tg.kernel
func.func @chain(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %s = tg.add %x, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %r = tg.relu %s : tensor<4x8xf32>
  %e = tg.exp %r : tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}

// -----

// Every value read after the kernel is one of its results.
// CHECK-LABEL: func.func @multi_output
// CHECK:      %[[K:.+]]:2 = tg.kernel elementwise
// CHECK:        tg.yield %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK:      tg.matmul %[[K]]#0
// CHECK:      return %{{.+}}, %[[K]]#1
func.func @multi_output(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %n = tg.neg %x : tensor<4x8xf32>
  %t = tg.tanh %n : tensor<4x8xf32>
  %m = tg.matmul %n, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  return %m, %t : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Once an op outside the group has read it, a later op cannot join: the
// kernel would have to stand after that reader, which it feeds.
// CHECK-LABEL: func.func @reader_closes_group
// CHECK:      %[[K:.+]] = tg.kernel elementwise{{.*}}name = "fused_neg_exp"
// CHECK:      %[[M:.+]] = tg.matmul %[[K]]
// CHECK:      tg.kernel elementwise(%[[K]], %[[M]]{{.*}}name = "fused_add_relu"
func.func @reader_closes_group(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %n = tg.neg %x : tensor<4x8xf32>
  %e = tg.exp %n : tensor<4x8xf32>
  %m = tg.matmul %e, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %a = tg.add %e, %m : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %r = tg.relu %a : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// Ops over different shapes are different loops; a lone op stays an op.
// CHECK-LABEL: func.func @shapes_differ
// CHECK-NOT:  tg.kernel
// CHECK:      tg.exp %{{.+}} : tensor<8xf32>
// CHECK:      tg.add
// CHECK-NOT:  tg.kernel
func.func @shapes_differ(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %e = tg.exp %b : tensor<8xf32>
  %s = tg.add %x, %e : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

// Reductions and GEMMs are not elementwise: they split chains.
// CHECK-LABEL: func.func @split_by_reduction
// CHECK:      tg.kernel elementwise{{.*}}name = "fused_mul_exp"
// CHECK:      tg.reduce_sum
// CHECK:      tg.kernel elementwise{{.*}}name = "fused_sub_exp"
func.func @split_by_reduction(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = tg.mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %e = tg.exp %m : tensor<4x8xf32>
  %s = tg.reduce_sum %e {dims = array<i64: 1>, keepdim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = tg.sub %x, %s : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %f = tg.exp %d : tensor<4x8xf32>
  return %f : tensor<4x8xf32>
}
