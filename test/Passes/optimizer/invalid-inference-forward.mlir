// RUN: tg-opt %s -tg-inference-forward -split-input-file -verify-diagnostics

// Before tg-autodiff the model would lose its dropout in training too.
module {
  // expected-error @+1 {{tg-inference-forward: run tg-autodiff first; it differentiates @forward with its dropout into @forward_backward}}
  func.func @forward(%x: tensor<8x4xf32> {tg.input = "x"}) -> tensor<f32> {
    %d = tg.dropout %x {p = 0.25 : f64, seed = 7 : i64} : tensor<8x4xf32>
    %l = tg.reduce_sum %d : tensor<8x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Inference needs the forward pass it copies.
// expected-error @+1 {{tg-inference-forward: the module has no @forward}}
module {
  func.func @step(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
