// RUN: tg-opt %s -tg-precision=policy=bf16 -tg-precision=policy=bf16 | FileCheck %s
// RUN: tg-opt %s -tg-precision=policy=bf16 | tg-opt -tg-precision | FileCheck %s

// A converted module keeps its policy: the same policy again, or the pass
// without an option (even where the table says fp32: an earlier option
// overrode it), changes nothing, and each value is cast once.
// CHECK-LABEL: module attributes {tg.precision = #tg<precision bf16>, tg.training = {precision = "fp32"}}
// CHECK-COUNT-2: tg.cast
// CHECK-NOT: tg.cast
// CHECK: tg.matmul %{{.+}}, %{{.+}} : tensor<8x4xbf16>, tensor<4x3xbf16> -> tensor<8x3xbf16>
// CHECK-NOT: tg.cast
module attributes {tg.training = {precision = "fp32"}} {
  func.func @forward(%w: tensor<4x3xf32> {tg.param = "w"}, %x: tensor<8x4xf32> {tg.input = "x"},
                     %y: tensor<8xi64> {tg.input = "y"}) -> tensor<f32> {
    %h = tg.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
    %l = tg.cross_entropy %h, %y : tensor<8x3xf32>, tensor<8xi64> -> tensor<f32>
    return %l : tensor<f32>
  }
}
