// RUN: tg-opt %s -tg-optimizer -verify-diagnostics

// The step is built on the backward tg-autodiff writes.
// expected-error @+1 {{tg-optimizer: no @forward_backward; run tg-autodiff first}}
module {
  func.func @forward(%p: tensor<f32> {tg.param = "p"}) -> tensor<f32> {
    return %p : tensor<f32>
  }
}
