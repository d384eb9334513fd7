// RUN: tg-opt %s -tg-remat=remat=full -verify-diagnostics

// remat=full recomputes each layer's activations; a step whose ops belong
// to no layer (here: no node names at all) has nothing to recompute, which
// is worth a warning rather than a silent no-op.
module {
  // expected-warning @+1 {{tg-remat: remat=full found no layers}}
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
    %h0 = tg.matmul %x, %w0 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %a0 = tg.relu %h0 : tensor<4x8xf32>
    %h1 = tg.matmul %a0, %w1 : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
    %loss = tg.cross_entropy %h1, %y : tensor<4x4xf32>, tensor<4xi64> -> tensor<f32>
    %dh1 = tg.cross_entropy_grad %one, %h1, %y : tensor<f32>, tensor<4x4xf32>, tensor<4xi64> -> tensor<4x4xf32>
    %da0 = tg.matmul %dh1, %w1 {transpose_rhs = true} : tensor<4x4xf32>, tensor<8x4xf32> -> tensor<4x8xf32>
    %dw1 = tg.matmul %a0, %dh1 {transpose_lhs = true} : tensor<4x8xf32>, tensor<4x4xf32> -> tensor<8x4xf32>
    %pos = tg.compare gt, %h0, %zero : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xi1>
    %dh0 = tg.select %pos, %da0, %zero : tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
    %dw0 = tg.matmul %x, %dh0 {transpose_lhs = true} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
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
