// RUN: split-file %s %t
// RUN: tg-opt %t/unmatched.mlir -tg-freeze="patterns=h.9.*" -verify-diagnostics
// RUN: tg-opt %t/no-forward.mlir -tg-freeze="patterns=w" -verify-diagnostics
// RUN: not tg-opt %t/unmatched.mlir -tg-freeze="patterns=h.[" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: tg-freeze: bad pattern 'h.[': invalid glob pattern, unmatched '['
// Freezing every parameter leaves nothing to train.
// RUN: not tg-opt %t/unmatched.mlir -tg-freeze="patterns=*" 2>&1 | FileCheck %s --check-prefix=ALL
// ALL: error: tg-freeze: every parameter of @forward is frozen (h.0.w, h.1.w); nothing would train

//--- unmatched.mlir
// A pattern that names no parameter lists them.
// expected-error @+1 {{tg-freeze: 'h.9.*' names no parameter of @forward (its parameters: h.0.w, h.1.w)}}
func.func @forward(%w0: tensor<4xf32> {tg.param = "h.0.w"}, %w1: tensor<4xf32> {tg.param = "h.1.w"}) -> tensor<f32> {
  %p = tg.mul %w0, %w1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
  return %s : tensor<f32>
}

//--- no-forward.mlir
// Without @forward there is nothing to freeze.
// expected-error @+1 {{tg-freeze: no @forward to freeze in}}
module {
  func.func @step() {
    return
  }
}
