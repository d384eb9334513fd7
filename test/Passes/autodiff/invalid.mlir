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
