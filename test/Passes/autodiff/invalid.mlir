// RUN: tg-opt %s -tg-autodiff -split-input-file -verify-diagnostics

// expected-error @+1 {{tg-autodiff: the loss (result 0) must be a float scalar tensor, got 'tensor<4xf32>'}}
func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<4xf32> {
  return %p : tensor<4xf32>
}

// -----

// expected-error @+1 {{tg-autodiff: no function @forward to differentiate}}
module {
  func.func @model(%p: tensor<4xf32>) -> tensor<4xf32> {
    return %p : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{tg-autodiff: @forward returns no loss}}
func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) {
  return
}

// -----

// expected-error @+1 {{tg-autodiff: trainable parameter "ids" must be a float tensor, got 'tensor<4xi32>'}}
func.func @forward(%p: tensor<4xi32> {tg.param = "ids"}) -> tensor<f32> {
  %c = tg.constant dense<0.0> : tensor<f32>
  return %c : tensor<f32>
}

// -----

// An op without a gradient rule between a parameter and the loss (here a
// gradient op of the forward's own making) is named, not skipped.
func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
  // expected-error @+1 {{'tg.gelu_grad' op has no gradient rule, but a trainable parameter reaches the loss through it}}
  %g = tg.gelu_grad %p, %p : tensor<4xf32>
  %s = tg.reduce_sum %g : tensor<4xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// The backward would overwrite a function of the module.
// expected-error @+1 {{tg-autodiff: @forward_backward exists already}}
module {
  func.func @forward(%p: tensor<f32> {tg.param = "p"}) -> tensor<f32> {
    return %p : tensor<f32>
  }
  func.func @forward_backward() {
    return
  }
}

// -----

// A function of two blocks (the second unreachable) is not differentiated.
// expected-error @+1 {{tg-autodiff: @forward must have a single block}}
func.func @forward(%p: tensor<f32> {tg.param = "p"}) -> tensor<f32> {
  return %p : tensor<f32>
^bb1:
  return %p : tensor<f32>
}
