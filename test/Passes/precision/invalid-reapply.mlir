// RUN: tg-opt %s -tg-precision=policy=bf16 -tg-precision=policy=fp32 -verify-diagnostics

// Applied twice with different policies: a conversion is not undone.
// expected-error @+1 {{tg-precision: the module is in precision policy 'bf16' already (tg.precision); cannot apply 'fp32' on top of it}}
module {
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}
