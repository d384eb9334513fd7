// RUN: tg-opt %s -tg-precision=policy=bf16 -split-input-file | FileCheck %s

// f32 constants that meet bf16 operands become bf16 constants, rounded to
// nearest even; the f32 original goes when nothing else reads it.

// CHECK-LABEL: func.func @forward
// CHECK: tg.cast %{{.+}} : tensor<8x4xf32> to tensor<8x4xbf16>
// CHECK-NEXT: %[[HALF:.+]] = tg.constant dense<5.000000e-01> : tensor<bf16>
// CHECK-NEXT: %[[SHIFT:.+]] = tg.constant dense<[1.000980e-01, 1.000000e+00, -3.000000e+00]> : tensor<3xbf16>
// CHECK-NEXT: tg.matmul
// CHECK-NEXT: %[[SCALED:.+]] = tg.mul %{{.+}}, %[[HALF]] : tensor<8x3xbf16>, tensor<bf16> -> tensor<8x3xbf16>
// CHECK-NEXT: tg.add %[[SCALED]], %[[SHIFT]] : tensor<8x3xbf16>, tensor<3xbf16> -> tensor<8x3xbf16>
func.func @forward(%w: tensor<4x3xf32> {tg.param = "w"}, %x: tensor<8x4xf32> {tg.input = "x"},
                   %y: tensor<8xi64> {tg.input = "y"}) -> tensor<f32> {
  %half = tg.constant dense<0.5> : tensor<f32>
  %shift = tg.constant dense<[0.1, 1.0, -3.0]> : tensor<3xf32>
  %h = tg.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %s = tg.mul %h, %half : tensor<8x3xf32>, tensor<f32> -> tensor<8x3xf32>
  %t = tg.add %s, %shift : tensor<8x3xf32>, tensor<3xf32> -> tensor<8x3xf32>
  %l = tg.cross_entropy %t, %y : tensor<8x3xf32>, tensor<8xi64> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A constant read by a bf16 op and by an f32 (scalar) op is kept for the
// f32 one and re-created once in bf16 for the bf16 ones.
// CHECK-LABEL: func.func @forward
// CHECK: %[[TWO:.+]] = tg.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[TWOH:.+]] = tg.constant dense<2.000000e+00> : tensor<bf16>
// CHECK: tg.mul %{{.+}}, %[[TWOH]] : tensor<8x3xbf16>, tensor<bf16> -> tensor<8x3xbf16>
// CHECK: tg.mul %{{.+}}, %[[TWOH]] : tensor<8x3xbf16>, tensor<bf16> -> tensor<8x3xbf16>
// CHECK: %[[CE:.+]] = tg.cross_entropy
// CHECK: tg.mul %[[CE]], %[[TWO]] : tensor<f32>, tensor<f32> -> tensor<f32>
func.func @forward(%w: tensor<4x3xf32> {tg.param = "w"}, %x: tensor<8x4xf32> {tg.input = "x"},
                   %y: tensor<8xi64> {tg.input = "y"}) -> tensor<f32> {
  %two = tg.constant dense<2.0> : tensor<f32>
  %h = tg.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %a = tg.mul %h, %two : tensor<8x3xf32>, tensor<f32> -> tensor<8x3xf32>
  %b = tg.mul %a, %two : tensor<8x3xf32>, tensor<f32> -> tensor<8x3xf32>
  %ce = tg.cross_entropy %b, %y : tensor<8x3xf32>, tensor<8xi64> -> tensor<f32>
  %l = tg.mul %ce, %two : tensor<f32>, tensor<f32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Constants that meet only f32 values stay f32, and ops on them stay f32
// until a bf16 op reads their result.
// CHECK-LABEL: func.func @forward
// CHECK: %[[BIAS:.+]] = tg.constant dense<1.000000e+00> : tensor<3xf32>
// CHECK-NEXT: %[[BIAS2:.+]] = tg.add %[[BIAS]], %[[BIAS]] : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
// CHECK-NEXT: %[[BIASH:.+]] = tg.cast %[[BIAS2]] : tensor<3xf32> to tensor<3xbf16>
// CHECK: tg.add %{{.+}}, %[[BIASH]] : tensor<8x3xbf16>, tensor<3xbf16> -> tensor<8x3xbf16>
func.func @forward(%w: tensor<4x3xf32> {tg.param = "w"}, %x: tensor<8x4xf32> {tg.input = "x"},
                   %y: tensor<8xi64> {tg.input = "y"}) -> tensor<f32> {
  %bias = tg.constant dense<1.0> : tensor<3xf32>
  %bias2 = tg.add %bias, %bias : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %h = tg.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %t = tg.add %h, %bias2 : tensor<8x3xf32>, tensor<3xf32> -> tensor<8x3xf32>
  %l = tg.cross_entropy %t, %y : tensor<8x3xf32>, tensor<8xi64> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A position table computed from tg.iota (which reads nothing, so nothing
// makes it bf16) stays f32 through the angles and their cos, as constants
// do: bf16 would hold positions exactly only up to 256. The table is cast
// where a bf16 op reads it.
// CHECK-LABEL: func.func @forward
// CHECK: %[[POS:.+]] = tg.iota : tensor<8x1xf32>
// CHECK-NEXT: %[[FREQ:.+]] = tg.iota {dimension = 1 : i64, step = 5.000000e-01 : f64} : tensor<1x3xf32>
// CHECK-NEXT: %[[ANGLE:.+]] = tg.mul %[[POS]], %[[FREQ]] : tensor<8x1xf32>, tensor<1x3xf32> -> tensor<8x3xf32>
// CHECK-NEXT: %[[COS:.+]] = tg.cos %[[ANGLE]] : tensor<8x3xf32>
// CHECK-NEXT: %[[COSH:.+]] = tg.cast %[[COS]] : tensor<8x3xf32> to tensor<8x3xbf16>
// CHECK: tg.mul %{{.+}}, %[[COSH]] : tensor<8x3xbf16>, tensor<8x3xbf16> -> tensor<8x3xbf16>
func.func @forward(%w: tensor<4x3xf32> {tg.param = "w"}, %x: tensor<8x4xf32> {tg.input = "x"},
                   %y: tensor<8xi64> {tg.input = "y"}) -> tensor<f32> {
  %pos = tg.iota : tensor<8x1xf32>
  %freq = tg.iota {dimension = 1 : i64, step = 0.5 : f64} : tensor<1x3xf32>
  %angle = tg.mul %pos, %freq : tensor<8x1xf32>, tensor<1x3xf32> -> tensor<8x3xf32>
  %cos = tg.cos %angle : tensor<8x3xf32>
  %h = tg.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %t = tg.mul %h, %cos : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<8x3xf32>
  %l = tg.cross_entropy %t, %y : tensor<8x3xf32>, tensor<8xi64> -> tensor<f32>
  return %l : tensor<f32>
}
