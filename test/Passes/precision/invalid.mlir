// RUN: tg-opt %s -tg-precision -split-input-file -verify-diagnostics -allow-unregistered-dialect

// Policies from the training table that the pass does not apply.

// expected-error @+1 {{tg-precision: unknown policy 'int4' (training table); expected "fp32" or "bf16"}}
module attributes {tg.training = {precision = "int4"}} {
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// expected-error @+1 {{tg-precision: policy 'fp16' (training table) is not supported yet: it needs loss scaling; use "bf16" or "fp32"}}
module attributes {tg.training = {precision = "fp16"}} {
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// expected-error @+1 {{tg-precision: policy 'fp8' (training table) is not supported yet: it needs per-tensor scales; use "bf16" or "fp32"}}
module attributes {tg.training = {precision = "fp8"}} {
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// expected-error @+1 {{tg-precision: the training table's precision must be a string, got 16 : i64}}
module attributes {tg.training = {precision = 16}} {
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// After tg-autodiff is too late: the gradients would not see the casts.
// expected-error @+1 {{tg-precision: @forward_backward exists: policy 'bf16' must be applied to @forward before tg-autodiff differentiates it}}
module attributes {tg.training = {precision = "bf16"}} {
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
  func.func @forward_backward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// expected-error @+1 {{tg-precision: no function @forward to apply policy 'bf16' to}}
module attributes {tg.training = {precision = "bf16"}} {
  func.func @model(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

module attributes {tg.training = {precision = "bf16"}} {
  // expected-error @+1 {{tg-precision: @forward must have a single block}}
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    "test.br"() [^next] : () -> ()
  ^next:
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

module attributes {tg.training = {precision = "bf16"}} {
  // expected-error @+1 {{tg-precision: @forward is a declaration: there is nothing to convert}}
  func.func private @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32>
}

// -----

// Only tg ops have precision rules.
module attributes {tg.training = {precision = "bf16"}} {
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    // expected-error @+1 {{tg-precision: cannot compute 'test.scale' in 'bf16': only tg ops have precision rules}}
    %q = "test.scale"(%p) : (tensor<4xf32>) -> tensor<4xf32>
    %s = tg.reduce_sum %q : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// A tg op whose operand types are fixed (the learning rate is f32) has no
// bf16 form.
module attributes {tg.training = {precision = "bf16"}} {
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}, %lr: tensor<f32> {tg.input = "lr"},
                     %step: tensor<i64> {tg.input = "step"}) -> tensor<f32> {
    // expected-error @+2 {{'tg.optimizer_update' op operand #2 must be 0D tensor of 32-bit float values, but got 'tensor<bf16>'}}
    // expected-error @+1 {{tg-precision: no type rule makes 'tg.optimizer_update' valid in 'bf16'}}
    %q = tg.optimizer_update sgd %p, %p, %lr, %step : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64> -> tensor<4xf32>
    %s = tg.reduce_sum %q : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}
