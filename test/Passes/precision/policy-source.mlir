// RUN: tg-opt %s -tg-precision -split-input-file | FileCheck %s --check-prefix=TABLE
// RUN: tg-opt %s -tg-precision=policy=bf16 -split-input-file | FileCheck %s --check-prefix=BF16
// RUN: tg-opt %s -tg-precision=policy=fp32 -split-input-file | FileCheck %s --check-prefix=FP32

// The policy is the option, else the training table's precision, else fp32.

// The table asks for bf16: applied without an option, and under
// policy=bf16; policy=fp32 overrides it.
// TABLE-LABEL: module attributes {tg.precision = #tg<precision bf16>, tg.training = {precision = "bf16"}}
// TABLE: tg.matmul %{{.+}}, %{{.+}} : tensor<8x4xbf16>, tensor<4x3xbf16> -> tensor<8x3xbf16>
// BF16-LABEL: module attributes {tg.precision = #tg<precision bf16>, tg.training = {precision = "bf16"}}
// BF16: tg.matmul %{{.+}}, %{{.+}} : tensor<8x4xbf16>, tensor<4x3xbf16> -> tensor<8x3xbf16>
// FP32-LABEL: module attributes {tg.training = {precision = "bf16"}}
// FP32: tg.matmul %{{.+}}, %{{.+}} : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
module attributes {tg.training = {precision = "bf16"}} {
  func.func @forward(%w: tensor<4x3xf32> {tg.param = "w"}, %x: tensor<8x4xf32> {tg.input = "x"},
                     %y: tensor<8xi64> {tg.input = "y"}) -> tensor<f32> {
    %h = tg.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
    %l = tg.cross_entropy %h, %y : tensor<8x3xf32>, tensor<8xi64> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// The table asks for fp32: nothing changes unless policy=bf16 overrides it.
// TABLE-LABEL: module attributes {tg.training = {precision = "fp32"}}
// TABLE: tg.matmul %{{.+}}, %{{.+}} : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
// BF16-LABEL: module attributes {tg.precision = #tg<precision bf16>, tg.training = {precision = "fp32"}}
// BF16: tg.matmul %{{.+}}, %{{.+}} : tensor<8x4xbf16>, tensor<4x3xbf16> -> tensor<8x3xbf16>
// FP32-LABEL: module attributes {tg.training = {precision = "fp32"}}
// FP32: tg.matmul %{{.+}}, %{{.+}} : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
module attributes {tg.training = {precision = "fp32"}} {
  func.func @forward(%w: tensor<4x3xf32> {tg.param = "w"}, %x: tensor<8x4xf32> {tg.input = "x"},
                     %y: tensor<8xi64> {tg.input = "y"}) -> tensor<f32> {
    %h = tg.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
    %l = tg.cross_entropy %h, %y : tensor<8x3xf32>, tensor<8xi64> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// tg.precision = #tg<precision fp32> marks a module that was never converted.
// TABLE-LABEL: module attributes {tg.precision = #tg<precision bf16>, tg.training = {precision = "bf16"}}
// TABLE: tg.matmul %{{.+}}, %{{.+}} : tensor<8x4xbf16>, tensor<4x3xbf16> -> tensor<8x3xbf16>
// BF16-LABEL: module attributes {tg.precision = #tg<precision bf16>, tg.training = {precision = "bf16"}}
// BF16: tg.matmul %{{.+}}, %{{.+}} : tensor<8x4xbf16>, tensor<4x3xbf16> -> tensor<8x3xbf16>
// FP32-LABEL: module attributes {tg.precision = #tg<precision fp32>, tg.training = {precision = "bf16"}}
// FP32: tg.matmul %{{.+}}, %{{.+}} : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
module attributes {tg.precision = #tg<precision fp32>, tg.training = {precision = "bf16"}} {
  func.func @forward(%w: tensor<4x3xf32> {tg.param = "w"}, %x: tensor<8x4xf32> {tg.input = "x"},
                     %y: tensor<8xi64> {tg.input = "y"}) -> tensor<f32> {
    %h = tg.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
    %l = tg.cross_entropy %h, %y : tensor<8x3xf32>, tensor<8xi64> -> tensor<f32>
    return %l : tensor<f32>
  }
}
