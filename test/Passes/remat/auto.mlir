// RUN: tg-opt %s -tg-remat="remat=auto activation-budget=200" | FileCheck %s
// RUN: tg-opt %s -tg-remat="remat=auto activation-budget=1000000" | FileCheck %s --check-prefix=ROOMY
// RUN: not tg-opt %s -tg-remat="remat=auto activation-budget=100" 2>&1 | FileCheck %s --check-prefix=TIGHT

// remat=auto on a hand-written step of two layers (tg.layer groups the
// ops; the locations, the model file's node names, only label them). The
// backward reads 320 bytes of forward values: h.0's pre-activation (128,
// for the ReLU's gradient), its activation (128, for h.1's weight
// gradient) and h.1's logits (64, for the loss gradient). Recomputing
// h.0's matmul from the input and weight (512 FLOPs) keeps 192.

// Under 200 bytes: h.0.matmul runs again right before the backward's first
// reader of it; the ReLU's gradient reads the copy.
// CHECK: tg.remat = {activation_budget = 200 : i64, added_flops = 5.120000e+02 : f64, distinct_layers = 2 : i64, kept_bytes = 192 : i64, kept_bytes_before = 320 : i64, layers = 2 : i64, min_kept_bytes = 192 : i64, policy = "auto", recomputed = ["h.0.matmul (tg.matmul)"]
// CHECK: %[[H0:.*]] = tg.matmul %arg2, %arg0
// CHECK: tg.cross_entropy_grad
// CHECK: %[[AGAIN:.*]] = tg.matmul %arg2, %arg0
// CHECK-NEXT: tg.compare gt, %[[AGAIN]]

// With room for everything nothing runs again.
// ROOMY: recomputed = [], recomputed_ops = 0 : i64
// ROOMY-SAME: solver = "none needed"

// Below the least the backward can be given: refused, with that least.
// TIGHT: error: tg-remat: activation budget 100 bytes is below the least the backward can be given: 192 bytes kept with every forward op that may run again recomputed
module {
  func.func @train_step(
      %w0: tensor<8x8xf32> {tg.param = "h.0.weight"},
      %w1: tensor<8x4xf32> {tg.param = "h.1.weight"},
      %x: tensor<4x8xf32> {tg.input = "x"},
      %y: tensor<4xi64> {tg.input = "y"},
      %step: tensor<i64> {tg.scalar = "step"},
      %base_lr: tensor<f32> {tg.scalar = "base_lr"},
      %g0: tensor<8x8xf32> {tg.accum = "h.0.weight"},
      %g1: tensor<8x4xf32> {tg.accum = "h.1.weight"},
      %micro_batches: tensor<i32> {tg.scalar = "micro_batches"})
      -> (tensor<8x8xf32> {tg.update = "h.0.weight"},
          tensor<8x4xf32> {tg.update = "h.1.weight"},
          tensor<f32> {tg.metric = "loss"},
          tensor<f32> {tg.metric = "lr"})
      attributes {tg.micro_batches = 4 : i64} {
    %zero = tg.constant dense<0.0> : tensor<f32>
    %one = tg.constant dense<1.0> : tensor<f32>
    %h0 = tg.matmul %x, %w0 {tg.layer = "h.0"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc("h.0.matmul")
    %a0 = tg.relu %h0 {tg.layer = "h.0"} : tensor<4x8xf32> loc("h.0.relu")
    %h1 = tg.matmul %a0, %w1 {tg.layer = "h.1"} : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32> loc("h.1.matmul")
    %loss = tg.cross_entropy %h1, %y {tg.layer = "loss"} : tensor<4x4xf32>, tensor<4xi64> -> tensor<f32> loc("loss")
    %dh1 = tg.cross_entropy_grad %one, %h1, %y {tg.layer = "loss"} : tensor<f32>, tensor<4x4xf32>, tensor<4xi64> -> tensor<4x4xf32> loc("loss")
    %da0 = tg.matmul %dh1, %w1 {transpose_rhs = true, tg.layer = "h.1"} : tensor<4x4xf32>, tensor<8x4xf32> -> tensor<4x8xf32> loc("h.1.matmul")
    %dw1 = tg.matmul %a0, %dh1 {transpose_lhs = true, tg.layer = "h.1"} : tensor<4x8xf32>, tensor<4x4xf32> -> tensor<8x4xf32> loc("h.1.matmul")
    %pos = tg.compare gt, %h0, %zero {tg.layer = "h.0"} : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xi1> loc("h.0.relu")
    %dh0 = tg.select %pos, %da0, %zero {tg.layer = "h.0"} : tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32> loc("h.0.relu")
    %dw0 = tg.matmul %x, %dh0 {transpose_lhs = true, tg.layer = "h.0"} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32> loc("h.0.matmul")
    %k = tg.cast %micro_batches : tensor<i32> to tensor<f32>
    %s0 = tg.add %dw0, %g0 : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
    %m0 = tg.div %s0, %k : tensor<8x8xf32>, tensor<f32> -> tensor<8x8xf32>
    %s1 = tg.add %dw1, %g1 : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
    %m1 = tg.div %s1, %k : tensor<8x4xf32>, tensor<f32> -> tensor<8x4xf32>
    %lr = tg.lr_schedule %step, %base_lr {total_steps = 10 : i64} : tensor<i64>, tensor<f32> -> tensor<f32>
    %n0 = tg.optimizer_update sgd %w0, %m0, %lr, %step : tensor<8x8xf32>, tensor<8x8xf32>, tensor<f32>, tensor<i64> -> tensor<8x8xf32>
    %n1 = tg.optimizer_update sgd %w1, %m1, %lr, %step : tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>, tensor<i64> -> tensor<8x4xf32>
    return %n0, %n1, %loss, %lr : tensor<8x8xf32>, tensor<8x4xf32>, tensor<f32>, tensor<f32>
  }
}
