// RUN: tg-opt %s -tg-optimizer -verify-diagnostics

// @forward_backward from elsewhere (hand-written, or edited) whose gradient
// names no parameter of @forward: there is nothing for it to update.
module {
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
  // expected-error @+1 {{tg-optimizer: gradient of unknown parameter 'q'}}
  func.func @forward_backward(%p: tensor<4xf32> {tg.param = "p"}) -> (tensor<f32> {tg.output = "loss"}, tensor<4xf32> {tg.grad = "q"}) {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s, %p : tensor<f32>, tensor<4xf32>
  }
}
