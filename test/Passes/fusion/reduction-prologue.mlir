// RUN: tg-opt %s -split-input-file -tg-fuse | FileCheck %s
// RUN: tg-opt %s -split-input-file -tg-fuse=fusion=elementwise | FileCheck %s --check-prefix=ELEMENTWISE

// A bias gradient of a relu: the prologue that only the sum reads is
// computed as the sum reads it.
// CHECK-LABEL: func.func @relu_grad_bias_sum
// CHECK:      %[[K:.+]] = tg.kernel reduction(%{{.+}}, %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>) attributes {name = "fused_compare_select_reduce_sum"} {
// CHECK-NEXT: ^bb0(%[[X:.+]]: tensor<4x8xf32>, %[[Z:.+]]: tensor<f32>, %[[G:.+]]: tensor<4x8xf32>):
// CHECK-NEXT:   %[[P:.+]] = tg.compare gt, %[[X]], %[[Z]]
// CHECK-NEXT:   %[[S:.+]] = tg.select %[[P]], %[[G]], %[[Z]]
// CHECK-NEXT:   %[[R:.+]] = tg.reduce_sum %[[S]] {dims = array<i64: 0>}
// CHECK-NEXT:   tg.yield %[[R]] : tensor<8xf32>
// CHECK:      return %[[K]]
// ELEMENTWISE-LABEL: func.func @relu_grad_bias_sum
// ELEMENTWISE:       tg.kernel elementwise{{.*}}name = "fused_compare_select"
// ELEMENTWISE:       tg.reduce_sum
// ELEMENTWISE-NOT:   tg.kernel reduction
func.func @relu_grad_bias_sum(%x: tensor<4x8xf32>, %g: tensor<4x8xf32>) -> tensor<8xf32> {
  %zero = tg.constant dense<0.000000e+00> : tensor<f32>
  %p = tg.compare gt, %x, %zero : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xi1>
  %s = tg.select %p, %g, %zero : tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %r = tg.reduce_sum %s {dims = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// A single elementwise op is a prologue too, and a scale of the reduced
// result joins as the epilogue.
// CHECK-LABEL: func.func @square_mean_scale
// CHECK:      %[[K:.+]] = tg.kernel reduction{{.*}}name = "fused_mul_reduce_mean_mul"
// CHECK:        tg.mul %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT:   tg.reduce_mean %{{.+}} {dims = array<i64: 1>, keepdim = true}
// CHECK-NEXT:   tg.mul %{{.+}}, %{{.+}} : tensor<4x1xf32>, tensor<f32>
// CHECK-NEXT:   tg.yield
// CHECK:      return %[[K]]
func.func @square_mean_scale(%x: tensor<4x8xf32>, %c: tensor<f32>) -> tensor<4x1xf32> {
  %sq = tg.mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %m = tg.reduce_mean %sq {dims = array<i64: 1>, keepdim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %s = tg.mul %m, %c : tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
  return %s : tensor<4x1xf32>
}

// -----

// A prologue value read elsewhere is stored: the reduction stays an op and
// reads it.
// CHECK-LABEL: func.func @prologue_read_elsewhere_not_fused
// CHECK:      %[[E:.+]] = tg.kernel elementwise{{.*}}name = "fused_neg_exp"
// CHECK-NOT:  tg.kernel reduction
// CHECK:      tg.reduce_sum %[[E]]
// CHECK:      tg.matmul %[[E]]
func.func @prologue_read_elsewhere_not_fused(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<8xf32>, tensor<4x8xf32>) {
  %n = tg.neg %x : tensor<4x8xf32>
  %e = tg.exp %n : tensor<4x8xf32>
  %r = tg.reduce_sum %e {dims = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
  %m = tg.matmul %e, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  return %r, %m : tensor<8xf32>, tensor<4x8xf32>
}

// -----

// An intermediate read elsewhere is stored: it stays out of the prologue,
// which reads it, and the rest of the chain joins the reduction.
// CHECK-LABEL: func.func @prologue_intermediate_read_elsewhere
// CHECK:      %[[N:.+]] = tg.neg
// CHECK-NEXT: %[[R:.+]] = tg.kernel reduction(%[[N]] : tensor<4x8xf32>) attributes {name = "fused_exp_mul_reduce_sum"}
// CHECK-NEXT: ^bb0(%[[A:.+]]: tensor<4x8xf32>):
// CHECK-NEXT:   %[[E:.+]] = tg.exp %[[A]]
// CHECK-NEXT:   %[[M:.+]] = tg.mul %[[A]], %[[E]]
// CHECK-NEXT:   tg.reduce_sum %[[M]]
// CHECK-NEXT:   tg.yield
// CHECK:      return %[[R]], %[[N]]
func.func @prologue_intermediate_read_elsewhere(%x: tensor<4x8xf32>) -> (tensor<8xf32>, tensor<4x8xf32>) {
  %n = tg.neg %x : tensor<4x8xf32>
  %e = tg.exp %n : tensor<4x8xf32>
  %m = tg.mul %n, %e : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %r = tg.reduce_sum %m {dims = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
  return %r, %n : tensor<8xf32>, tensor<4x8xf32>
}

// -----

// Reduced dims that are not adjacent take two passes: no kernel.
// CHECK-LABEL: func.func @two_passes_not_fused
// CHECK-NOT:  tg.kernel reduction
// CHECK:      tg.reduce_sum %{{.+}} {dims = array<i64: 0, 2>}
func.func @two_passes_not_fused(%x: tensor<2x4x8xf32>) -> tensor<4xf32> {
  %e = tg.exp %x : tensor<2x4x8xf32>
  %r = tg.reduce_sum %e {dims = array<i64: 0, 2>} : tensor<2x4x8xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Size-1 dims do not split the reduced run: [4, 1, 8] over dims 0 and 2 is
// one pass.
// CHECK-LABEL: func.func @unit_dim_between
// CHECK:      tg.kernel reduction{{.*}}name = "fused_exp_reduce_max"
func.func @unit_dim_between(%x: tensor<4x1x8xf32>) -> tensor<1xf32> {
  %e = tg.exp %x : tensor<4x1x8xf32>
  %r = tg.reduce_max %e {dims = array<i64: 0, 2>} : tensor<4x1x8xf32> -> tensor<1xf32>
  return %r : tensor<1xf32>
}

// -----

// Rows of 8192 elements or more are left to the runtime, which splits them
// over threads.
// CHECK-LABEL: func.func @long_rows_not_fused
// CHECK-NOT:  tg.kernel reduction
// CHECK:      tg.reduce_sum
func.func @long_rows_not_fused(%x: tensor<2x8192xf32>) -> tensor<2xf32> {
  %e = tg.exp %x : tensor<2x8192xf32>
  %r = tg.reduce_sum %e {dims = array<i64: 1>} : tensor<2x8192xf32> -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

// The prologue is split off the end of a longer elementwise group: what
// else is read stays an elementwise kernel, which the reduction kernel reads.
// CHECK-LABEL: func.func @group_split
// CHECK:      %[[T:.+]] = tg.kernel elementwise{{.*}}name = "fused_add_tanh"
// CHECK:      %[[R:.+]] = tg.kernel reduction(%[[T]] : tensor<4x8xf32>) attributes {name = "fused_exp_mul_reduce_sum"}
// CHECK:      return %[[R]], %[[T]]
func.func @group_split(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4x8xf32>) {
  %a = tg.add %x, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %t = tg.tanh %a : tensor<4x8xf32>
  %e = tg.exp %t : tensor<4x8xf32>
  %m = tg.mul %e, %e : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %r = tg.reduce_sum %m {dims = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
  return %r, %t : tensor<4xf32>, tensor<4x8xf32>
}
