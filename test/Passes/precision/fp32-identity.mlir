// RUN: tg-opt %s -tg-precision=policy=fp32 -split-input-file > %t.policy
// RUN: tg-opt %s -tg-precision -split-input-file > %t.default
// RUN: tg-opt %s -split-input-file > %t.none
// RUN: diff %t.none %t.policy
// RUN: diff %t.none %t.default
// RUN: FileCheck %s < %t.policy

// Policy fp32, asked for or the default (the training table's precision,
// else fp32), changes nothing: no casts, no bf16, no tg.precision.

// CHECK-LABEL: module attributes {tg.training = {precision = "fp32"}}
// CHECK-NOT: tg.precision
// CHECK-NOT: tg.cast
// CHECK-NOT: bf16
// CHECK: tg.cross_entropy %{{.+}}, %{{.+}} : tensor<8x3xf32>, tensor<8xi64> -> tensor<f32>
module attributes {tg.training = {precision = "fp32"}} {
  func.func @forward(%w: tensor<4x3xf32> {tg.param = "w"}, %x: tensor<8x4xf32> {tg.input = "x"},
                     %y: tensor<8xi64> {tg.input = "y"}) -> tensor<f32> {
    %h = tg.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
    %l = tg.cross_entropy %h, %y : tensor<8x3xf32>, tensor<8xi64> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Without a training table.
// CHECK-LABEL: func.func @forward(%arg0: tensor<4xf32> {tg.param = "p"})
// CHECK-NOT: tg.cast
// CHECK-NOT: bf16
// CHECK: tg.reduce_sum %{{.+}} : tensor<4xf32> -> tensor<f32>
func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
  %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
  return %s : tensor<f32>
}
