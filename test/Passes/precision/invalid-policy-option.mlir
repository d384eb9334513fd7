// RUN: tg-opt %s -tg-precision=policy=int4 -verify-diagnostics

// An unknown policy in the option; the option wins over the table.
// expected-error @+1 {{tg-precision: unknown policy 'int4' (option); expected "fp32" or "bf16"}}
module attributes {tg.training = {precision = "bf16"}} {
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}
