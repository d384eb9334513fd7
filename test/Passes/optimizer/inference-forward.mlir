// RUN: tg-opt %s -tg-autodiff -tg-optimizer -tg-inference-forward | FileCheck %s

// Evaluation runs @forward in inference mode: its dropout is gone, while the
// training step (through @forward_backward) keeps it, forward and backward.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: tg.dropout
// CHECK: %[[H:.+]] = tg.matmul
// CHECK-NOT: tg.dropout
// CHECK: tg.reduce_sum %[[H]]
// CHECK-NOT: tg.dropout
// CHECK: return
// CHECK-LABEL: func.func @forward_backward
// CHECK: tg.dropout %{{.+}} {p = 2.500000e-01 : f64, seed = 7 : i64}
// CHECK: tg.dropout %{{.+}} {p = 2.500000e-01 : f64, seed = 7 : i64}
// CHECK-LABEL: func.func @train_step
module {
  func.func @forward(%w: tensor<4x3xf32> {tg.param = "fc.weight"},
                     %x: tensor<8x4xf32> {tg.input = "x"}) -> tensor<f32> {
    %h = tg.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
    %d = tg.dropout %h {p = 0.25 : f64, seed = 7 : i64} : tensor<8x3xf32>
    %l = tg.reduce_sum %d : tensor<8x3xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
