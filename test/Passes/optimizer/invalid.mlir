// RUN: tg-opt %s -tg-autodiff -tg-optimizer -split-input-file -verify-diagnostics

// expected-error @+1 {{tg-optimizer: unknown optimizer 'adamax'; expected sgd, adam, adamw, rmsprop, adagrad, lamb or lion}}
module attributes {tg.training = {optimizer = {kind = "adamax"}}} {
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

module attributes {tg.training = {schedule = {kind = "cosine"}}} {
  // expected-error @+1 {{'tg.lr_schedule' op schedule "cosine" needs total_steps (0) > warmup_steps (0)}}
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// expected-error @+1 {{tg-optimizer: grad_accum must be >= 1, got 0}}
module attributes {tg.training = {grad_accum = 0 : i64}} {
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}
