// RUN: tg-opt %s -tg-autodiff -tg-optimizer -split-input-file -verify-diagnostics

// The table's kinds are strings, as in the model file: one that names no
// kind is reported with the model file's field and the kinds there are.
// expected-error @+1 {{tg-optimizer: training.optimizer.kind: unknown value 'adamax'; expected one of sgd, adam, adamw, rmsprop, adagrad, lamb, lion}}
module attributes {tg.training = {optimizer = {kind = "adamax"}}} {
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// expected-error @+1 {{tg-optimizer: training.schedule.kind: unknown value 'exp'; expected one of constant, cosine, linear, step, cyclic, wsd}}
module attributes {tg.training = {schedule = {kind = "exp"}}} {
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

// -----

// A no_decay pattern that is no glob is named with the table's field.
// expected-error @+1 {{tg-optimizer: bad no_decay pattern '[bias'}}
module attributes {tg.training = {optimizer = {kind = "adamw", no_decay = ["[bias"]}}} {
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// The optimizer builds @train_step once: a module that has one already is
// not built again over it.
// expected-error @+1 {{tg-optimizer: @train_step exists already}}
module {
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
  func.func @train_step(%p: tensor<4xf32>) -> tensor<4xf32> {
    return %p : tensor<4xf32>
  }
}
