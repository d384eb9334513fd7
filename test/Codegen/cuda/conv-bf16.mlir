// runtime/cuda convolves and pools in f32 only: tgc keeps those ops in f32
// under bf16 (tg-precision's fp32-ops), and IR that has them in bf16 anyway
// is an error naming the op.
// RUN: not tgc %s --emit=cuda -o %t 2>&1 | FileCheck %s
// RUN: tgc %examples/cnn.json --emit=cuda --precision=bf16 -o %t/cnn
// RUN: FileCheck %s --check-prefix=CNN --input-file=%t/cnn/cnn.cu

module attributes {tg.model = "conv", tg.precision = #tg<precision bf16>, tg.training = {batch_size = 2 : i64, optimizer = {kind = "sgd", lr = 1.0e-01 : f64}, schedule = {kind = "constant"}}} {
  func.func @forward(%w: tensor<4x1x3x3xf32> {tg.param = "conv.weight", tg.init = #tg.init<normal, std = 2.0e-02>},
                     %x: tensor<2x1x8x8xf32> {tg.input = "x", tg.dim_names = ["batch", "", "", ""]},
                     %y: tensor<2xi64> {tg.input = "y", tg.dim_names = ["batch"]})
      -> (tensor<f32> {tg.output = "loss"}) {
    %wb = tg.cast %w : tensor<4x1x3x3xf32> to tensor<4x1x3x3xbf16>
    %xb = tg.cast %x : tensor<2x1x8x8xf32> to tensor<2x1x8x8xbf16>
    // CHECK: conv-bf16.mlir:[[@LINE+1]]:10: error: cuda backend: tg.conv2d runs in f32 only on the GPU, got 'bf16' (compile with --precision=fp32, or keep this op in f32)
    %c = tg.conv2d %xb, %wb {padding = array<i64: 1, 1>} : (tensor<2x1x8x8xbf16>, tensor<4x1x3x3xbf16>) -> tensor<2x4x8x8xbf16>
    %f = tg.flatten %c : tensor<2x4x8x8xbf16> -> tensor<2x256xbf16>
    %l = tg.cross_entropy %f, %y : tensor<2x256xbf16>, tensor<2xi64> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// The convolutions read f32 data and weights; the classifier head is bf16.
// CNN: model "cnn" (CUDA, bf16)
// CNN-LABEL: static void train_step_launches(
// CNN:       float *[[X:a[0-9]+]] = (float *)io.inputs[0]; // x
// CNN:       tgc::cuda::conv2d([[X]], a{{[0-9]+}}, a{{[0-9]+}}, v{{[0-9]+}}, tgc::cuda::Conv2dDims{32, 1, 8, 8, 16,
// CNN:       tgc::cuda::max_pool2d(
// CNN:       bf16 *[[FEAT:v[0-9]+]] = (bf16 *)(work + {{[0-9]+}});
// CNN:       tgc::cuda::matmul([[FEAT]], v{{[0-9]+}}, v{{[0-9]+}}, 32, 10, 128,
