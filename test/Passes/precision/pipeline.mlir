// RUN: tg-opt %s -tg-precision -tg-autodiff -tg-optimizer -split-input-file | FileCheck %s
// RUN: tg-opt %s -tgc-training -split-input-file | FileCheck %s --check-prefix=PIPELINE

// tg-precision before tg-autodiff: the backward runs in bf16 and each
// parameter's gradient comes back through its cast as f32, so the optimizer
// updates read and write f32 parameters, gradients and state.
// CHECK-LABEL: func.func @forward_backward
// CHECK-SAME: (%[[W:[^:]+]]: tensor<4x3xf32> {tg.param = "fc.weight"}, %[[B:[^:]+]]: tensor<3xf32> {tg.param = "fc.bias"}, %[[X:[^:]+]]: tensor<8x4xf32> {tg.input = "x"}, %[[Y:[^:]+]]: tensor<8xi64> {tg.input = "y"})
// CHECK-SAME: -> (tensor<f32> {tg.output = "loss"}, tensor<4x3xf32> {tg.grad = "fc.weight"}, tensor<3xf32> {tg.grad = "fc.bias"})
// CHECK: %[[WH:.+]] = tg.cast %[[W]] {tg.layer = "fc"} : tensor<4x3xf32> to tensor<4x3xbf16>
// CHECK: %[[BH:.+]] = tg.cast %[[B]] {tg.layer = "fc"} : tensor<3xf32> to tensor<3xbf16>
// CHECK: %[[XH:.+]] = tg.cast %[[X]] {tg.layer = "x"} : tensor<8x4xf32> to tensor<8x4xbf16>
// CHECK: %[[LOGITS:.+]] = tg.add %{{.+}}, %[[BH]] : tensor<8x3xbf16>, tensor<3xbf16> -> tensor<8x3xbf16>
// CHECK: %[[LOSS:.+]] = tg.cross_entropy %[[LOGITS]], %[[Y]] : tensor<8x3xbf16>, tensor<8xi64> -> tensor<f32>
// CHECK: %[[ONE:.+]] = tg.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[G:.+]] = tg.cross_entropy_grad %[[ONE]], %[[LOGITS]], %[[Y]] : tensor<f32>, tensor<8x3xbf16>, tensor<8xi64> -> tensor<8x3xbf16>
// CHECK: %[[GBH:.+]] = tg.reduce_sum %[[G]] {dims = array<i64: 0>} : tensor<8x3xbf16> -> tensor<3xbf16>
// CHECK: %[[GWH:.+]] = tg.matmul %[[XH]], %[[G]] {transpose_lhs = true} : tensor<8x4xbf16>, tensor<8x3xbf16> -> tensor<4x3xbf16>
// CHECK: %[[GB:.+]] = tg.cast %[[GBH]] {tg.layer = "fc"} : tensor<3xbf16> to tensor<3xf32>
// CHECK: %[[GW:.+]] = tg.cast %[[GWH]] {tg.layer = "fc"} : tensor<4x3xbf16> to tensor<4x3xf32>
// CHECK: return %[[LOSS]], %[[GW]], %[[GB]] : tensor<f32>, tensor<4x3xf32>, tensor<3xf32>
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[TW:[^:]+]]: tensor<4x3xf32> {tg.param = "fc.weight"}
// CHECK-SAME: %[[TB:[^:]+]]: tensor<3xf32> {tg.param = "fc.bias"}
// CHECK-SAME: tensor<4x3xf32> {tg.state = "fc.weight.exp_avg"}
// CHECK-SAME: -> (tensor<4x3xf32> {tg.update = "fc.weight"}, tensor<3xf32> {tg.update = "fc.bias"}
// CHECK: tg.global_norm %[[GW:.+]], %[[GB:.+]] : tensor<4x3xf32>, tensor<3xf32> -> tensor<f32>
// CHECK: tg.optimizer_update adamw %[[TW]], %[[GW]], {{.*}} : tensor<4x3xf32>, tensor<4x3xf32>, tensor<f32>, tensor<i64>, tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>
// CHECK: tg.optimizer_update adamw %[[TB]], %[[GB]], {{.*}} : tensor<3xf32>, tensor<3xf32>, tensor<f32>, tensor<i64>, tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
// CHECK-NOT: bf16
// CHECK: return

// The registered pipeline reads the table's precision as well.
// PIPELINE-LABEL: module attributes {tg.precision = #tg<precision bf16>
// PIPELINE-LABEL: func.func @train_step
// PIPELINE: tg.cross_entropy %{{.+}}, %{{.+}} : tensor<8x3xbf16>, tensor<8xi64> -> tensor<f32>
// PIPELINE: tg.optimizer_update adamw %{{.+}} : tensor<4x3xf32>, tensor<4x3xf32>,
module attributes {tg.training = {precision = "bf16", optimizer = {kind = "adamw"}}} {
  func.func @forward(%w: tensor<4x3xf32> {tg.param = "fc.weight"}, %b: tensor<3xf32> {tg.param = "fc.bias"},
                     %x: tensor<8x4xf32> {tg.input = "x"}, %y: tensor<8xi64> {tg.input = "y"})
      -> (tensor<f32> {tg.output = "loss"}) {
    %h = tg.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
    %l = tg.add %h, %b : tensor<8x3xf32>, tensor<3xf32> -> tensor<8x3xf32>
    %loss = tg.cross_entropy %l, %y : tensor<8x3xf32>, tensor<8xi64> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A loss reduced in f32: its gradient is f32 until the cast back to the bf16
// value the reduction read.
// CHECK-LABEL: func.func @forward_backward
// CHECK: %[[SQ:.+]] = tg.mul %{{.+}}, %{{.+}} : tensor<8x2xbf16>, tensor<8x2xbf16> -> tensor<8x2xbf16>
// CHECK: %[[SQF:.+]] = tg.cast %[[SQ]] : tensor<8x2xbf16> to tensor<8x2xf32>
// CHECK: tg.reduce_mean %[[SQF]] : tensor<8x2xf32> -> tensor<f32>
// CHECK: %[[GF:.+]] = tg.mul %{{.+}}, %{{.+}} : tensor<8x2xf32>, tensor<f32> -> tensor<8x2xf32>
// CHECK: %[[GH:.+]] = tg.cast %[[GF]] : tensor<8x2xf32> to tensor<8x2xbf16>
// CHECK: %[[GW:.+]] = tg.cast %{{.+}} : tensor<4x2xbf16> to tensor<4x2xf32>
// CHECK: return %{{.+}}, %[[GW]] : tensor<f32>, tensor<4x2xf32>
// CHECK-LABEL: func.func @train_step
// CHECK: tg.optimizer_update sgd %{{.+}} : tensor<4x2xf32>, tensor<4x2xf32>, tensor<f32>, tensor<i64> -> tensor<4x2xf32>
// PIPELINE-LABEL: module attributes {tg.precision = #tg<precision bf16>
// PIPELINE: tg.reduce_mean %{{.+}} : tensor<8x2xf32> -> tensor<f32>
module attributes {tg.training = {precision = "bf16", optimizer = {kind = "sgd"}}} {
  func.func @forward(%w: tensor<4x2xf32> {tg.param = "w"}, %x: tensor<8x4xf32> {tg.input = "x"},
                     %y: tensor<8x2xf32> {tg.input = "y"}) -> tensor<f32> {
    %p = tg.matmul %x, %w : tensor<8x4xf32>, tensor<4x2xf32> -> tensor<8x2xf32>
    %d = tg.sub %p, %y : tensor<8x2xf32>, tensor<8x2xf32> -> tensor<8x2xf32>
    %sq = tg.mul %d, %d : tensor<8x2xf32>, tensor<8x2xf32> -> tensor<8x2xf32>
    %l = tg.reduce_mean %sq : tensor<8x2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
