// RUN: tg-opt %s -tg-pipeline-split -split-input-file -verify-diagnostics

// What tg-pipeline-split refuses, on the two-layer step of split.mlir with
// one thing broken each.

// The loss must come out of an op of @forward_backward, which the last
// chunk then runs (here it is an argument).
module attributes {tg.pipeline = {stages = 2 : i64, virtual_stages = 1 : i64}} {
  // expected-error @+1 {{tg-pipeline-split: @forward_backward's loss is not computed in it}}
  func.func @forward_backward(
      %w0: tensor<8x8xf32> {tg.param = "h.0.weight"},
      %w1: tensor<8x4xf32> {tg.param = "h.1.weight"},
      %x: tensor<4x8xf32> {tg.input = "x"},
      %y: tensor<4xi64> {tg.input = "y"},
      %given: tensor<f32> {tg.input = "given_loss"})
      -> (tensor<f32> {tg.output = "loss"},
          tensor<8x8xf32> {tg.grad = "h.0.weight"},
          tensor<8x4xf32> {tg.grad = "h.1.weight"}) {
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
    return %given, %dw0, %dw1 : tensor<f32>, tensor<8x8xf32>, tensor<8x4xf32>
  }
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
  func.func @apply_gradients(
      %w0: tensor<8x8xf32> {tg.param = "h.0.weight"},
      %w1: tensor<8x4xf32> {tg.param = "h.1.weight"},
      %g0: tensor<8x8xf32> {tg.accum = "h.0.weight"},
      %g1: tensor<8x4xf32> {tg.accum = "h.1.weight"},
      %step: tensor<i64> {tg.scalar = "step"},
      %base_lr: tensor<f32> {tg.scalar = "base_lr"},
      %micro_batches: tensor<i32> {tg.scalar = "micro_batches"})
      -> (tensor<8x8xf32> {tg.update = "h.0.weight"},
          tensor<8x4xf32> {tg.update = "h.1.weight"},
          tensor<f32> {tg.metric = "lr"}) {
    %k = tg.cast %micro_batches : tensor<i32> to tensor<f32>
    %m0 = tg.div %g0, %k : tensor<8x8xf32>, tensor<f32> -> tensor<8x8xf32>
    %m1 = tg.div %g1, %k : tensor<8x4xf32>, tensor<f32> -> tensor<8x4xf32>
    %lr = tg.lr_schedule %step, %base_lr {total_steps = 10 : i64} : tensor<i64>, tensor<f32> -> tensor<f32>
    %n0 = tg.optimizer_update sgd %w0, %m0, %lr, %step : tensor<8x8xf32>, tensor<8x8xf32>, tensor<f32>, tensor<i64> -> tensor<8x8xf32>
    %n1 = tg.optimizer_update sgd %w1, %m1, %lr, %step : tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>, tensor<i64> -> tensor<8x4xf32>
    return %n0, %n1, %lr : tensor<8x8xf32>, tensor<8x4xf32>, tensor<f32>
  }
}

// -----

// @apply_gradients takes the parameters, their state, the gradient sums,
// then step, base_lr and micro_batches: without the scalars the updates
// cannot be built.
module attributes {tg.pipeline = {stages = 2 : i64, virtual_stages = 1 : i64}} {
  func.func @forward_backward(
      %w0: tensor<8x8xf32> {tg.param = "h.0.weight"},
      %w1: tensor<8x4xf32> {tg.param = "h.1.weight"},
      %x: tensor<4x8xf32> {tg.input = "x"},
      %y: tensor<4xi64> {tg.input = "y"})
      -> (tensor<f32> {tg.output = "loss"},
          tensor<8x8xf32> {tg.grad = "h.0.weight"},
          tensor<8x4xf32> {tg.grad = "h.1.weight"}) {
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
    return %loss, %dw0, %dw1 : tensor<f32>, tensor<8x8xf32>, tensor<8x4xf32>
  }
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
  // expected-error @+1 {{tg-pipeline-split: @apply_gradients has 4 arguments for 2 parameters}}
  func.func @apply_gradients(
      %w0: tensor<8x8xf32> {tg.param = "h.0.weight"},
      %w1: tensor<8x4xf32> {tg.param = "h.1.weight"},
      %g0: tensor<8x8xf32> {tg.accum = "h.0.weight"},
      %g1: tensor<8x4xf32> {tg.accum = "h.1.weight"})
      -> (tensor<8x8xf32> {tg.update = "h.0.weight"},
          tensor<8x4xf32> {tg.update = "h.1.weight"}) {
    return %g0, %g1 : tensor<8x8xf32>, tensor<8x4xf32>
  }
}
