// RUN: tg-opt %s -tg-freeze="patterns=h.0.*,*.b" | FileCheck %s
// RUN: tg-opt %s -tg-freeze="patterns=h.0.*,*.b" -tg-autodiff | FileCheck %s --check-prefix=GRADS
// RUN: tg-opt %s -tg-freeze="patterns=h.1.w" -tg-freeze="patterns=h.1.*" | FileCheck %s --check-prefix=TWICE

// Layer h.0's parameters and every bias match: they are frozen, and
// tg-autodiff builds the gradient of h.1.w alone.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %arg0: tensor<4x4xf32> {tg.frozen, tg.param = "h.0.w"}
// CHECK-SAME: %arg1: tensor<4xf32> {tg.frozen, tg.param = "h.0.b"}
// CHECK-SAME: %arg2: tensor<4x4xf32> {tg.param = "h.1.w"}
// CHECK-SAME: %arg3: tensor<4xf32> {tg.frozen, tg.param = "h.1.b"}
// CHECK-SAME: %arg4: tensor<2x4xf32> {tg.input = "x"}
// GRADS-LABEL: func.func @forward_backward
// GRADS-SAME: -> (tensor<f32>, tensor<4x4xf32> {tg.grad = "h.1.w"})
// A parameter frozen already matches a pattern again.
// TWICE-LABEL: func.func @forward
// TWICE-SAME: %arg1: tensor<4xf32> {tg.param = "h.0.b"}
// TWICE-SAME: %arg2: tensor<4x4xf32> {tg.frozen, tg.param = "h.1.w"}
// TWICE-SAME: %arg3: tensor<4xf32> {tg.frozen, tg.param = "h.1.b"}
func.func @forward(%w0: tensor<4x4xf32> {tg.param = "h.0.w"}, %b0: tensor<4xf32> {tg.param = "h.0.b"},
                   %w1: tensor<4x4xf32> {tg.param = "h.1.w"}, %b1: tensor<4xf32> {tg.param = "h.1.b"},
                   %x: tensor<2x4xf32> {tg.input = "x"}) -> tensor<f32> {
  %h0 = tg.matmul %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %a0 = tg.add %h0, %b0 : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %h1 = tg.matmul %a0, %w1 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %a1 = tg.add %h1, %b1 : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %l = tg.reduce_sum %a1 : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
