// An element type the GPU backend lacks is an error at the first op that
// touches it, naming the op and the types it has.
// RUN: not tgc %s --emit=cuda --precision=fp32 -o %t 2>&1 | FileCheck %s

module attributes {tg.model = "half", tg.training = {batch_size = 4 : i64, optimizer = {kind = "sgd", lr = 1.0e-01 : f64}, schedule = {kind = "constant"}}} {
  func.func @forward(%w: tensor<8x6xf16> {tg.param = "w", tg.init = #tg.init<normal, std = 2.0e-02>},
                     %x: tensor<4x8xf16> {tg.input = "x", tg.dim_names = ["batch", ""]},
                     %y: tensor<4xi64> {tg.input = "y", tg.dim_names = ["batch"]})
      -> (tensor<f32> {tg.output = "loss"}) {
    // CHECK: unsupported-type.mlir:[[@LINE+1]]:10: error: cuda backend: tg.matmul has element type 'f16', which the GPU backend does not support (f32, bf16, i32, i64 and i1 are)
    %h = tg.matmul %x, %w : tensor<4x8xf16>, tensor<8x6xf16> -> tensor<4x6xf16>
    %l = tg.cross_entropy %h, %y : tensor<4x6xf16>, tensor<4xi64> -> tensor<f32>
    return %l : tensor<f32>
  }
}
