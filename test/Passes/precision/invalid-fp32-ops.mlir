// RUN: tg-opt %s -tg-precision="policy=bf16 fp32-ops=conv2d" -verify-diagnostics

// fp32-ops names tg ops with their dialect prefix.
// expected-error @+1 {{tg-precision: fp32-ops names 'conv2d', which is not a tg op (ops are spelt 'tg.conv2d')}}
module {
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}
