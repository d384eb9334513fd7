// RUN: tg-opt %s -tg-autodiff -split-input-file | FileCheck %s

// The gradient of a linear layer: one GEMM per operand, the bias gradient a
// sum over the batch; the integer labels get none.
// CHECK-LABEL: func.func @forward_backward
// CHECK-SAME: (%[[W:.+]]: tensor<4x3xf32> {tg.param = "w"}, %[[B:.+]]: tensor<3xf32> {tg.param = "b"}, %[[X:.+]]: tensor<8x4xf32> {tg.input = "x"}, %[[Y:.+]]: tensor<8xi64> {tg.input = "y"})
// CHECK-SAME: -> (tensor<f32>, tensor<4x3xf32> {tg.grad = "w"}, tensor<3xf32> {tg.grad = "b"})
// CHECK: %[[H:.+]] = tg.matmul %[[X]], %[[W]]
// CHECK: %[[L:.+]] = tg.add %[[H]], %[[B]]
// CHECK: %[[LOSS:.+]] = tg.cross_entropy %[[L]], %[[Y]]
// CHECK: %[[ONE:.+]] = tg.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[G:.+]] = tg.cross_entropy_grad %[[ONE]], %[[L]], %[[Y]]
// CHECK: %[[GB:.+]] = tg.reduce_sum %[[G]] {dims = array<i64: 0>} : tensor<8x3xf32> -> tensor<3xf32>
// CHECK: %[[GW:.+]] = tg.matmul %[[X]], %[[G]] {transpose_lhs = true} : tensor<8x4xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
// CHECK: return %[[LOSS]], %[[GW]], %[[GB]]
func.func @forward(%w: tensor<4x3xf32> {tg.param = "w"}, %b: tensor<3xf32> {tg.param = "b"},
                   %x: tensor<8x4xf32> {tg.input = "x"}, %y: tensor<8xi64> {tg.input = "y"}) -> tensor<f32> {
  %h = tg.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %l = tg.add %h, %b : tensor<8x3xf32>, tensor<3xf32> -> tensor<8x3xf32>
  %loss = tg.cross_entropy %l, %y : tensor<8x3xf32>, tensor<8xi64> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A frozen parameter gets no gradient, and nothing is computed for it.
// CHECK-LABEL: func.func @forward_backward
// CHECK-SAME: -> (tensor<f32>, tensor<4xf32> {tg.grad = "trained"})
// CHECK-NOT: tg.grad = "fixed"
// CHECK: %[[P:.+]] = tg.mul %arg0, %arg1
// CHECK-NOT: tg.mul %{{.*}}, %arg0
// CHECK: return
func.func @forward(%trained: tensor<4xf32> {tg.param = "trained"},
                   %fixed: tensor<4xf32> {tg.param = "fixed", tg.frozen}) -> tensor<f32> {
  %p = tg.mul %trained, %fixed : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A value used twice sums its two gradients.
// CHECK-LABEL: func.func @forward_backward
// CHECK: %[[SQ:.+]] = tg.mul %arg0, %arg0
// CHECK: %[[A:.+]] = tg.mul %{{.+}}, %arg0
// CHECK: %[[B:.+]] = tg.mul %{{.+}}, %arg0
// CHECK: %[[SUM:.+]] = tg.add %[[A]], %[[B]]
// CHECK: return %{{.+}}, %[[SUM]]
func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
  %sq = tg.mul %p, %p : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %s = tg.reduce_sum %sq : tensor<4xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A parameter that does not reach the loss has a zero gradient.
// CHECK-LABEL: func.func @forward_backward
// CHECK: %[[Z:.+]] = tg.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK: return %{{.+}}, %{{.+}}, %[[Z]]
func.func @forward(%used: tensor<4xf32> {tg.param = "used"},
                   %unused: tensor<2xf32> {tg.param = "unused"}) -> tensor<f32> {
  %s = tg.reduce_sum %used : tensor<4xf32> -> tensor<f32>
  return %s : tensor<f32>
}
