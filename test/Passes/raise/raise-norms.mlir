// RUN: tg-opt %s -tg-raise -split-input-file | FileCheck %s

// RMSNorm as a Llama export writes it: x^2, a kept mean over the last dim,
// + eps, sqrt, 1 / that, times x, times the weight.
// CHECK-LABEL: func.func @rms_norm
// CHECK: %[[N:.*]] = tg.rms_norm %arg0 weight %arg1 {eps = 9.9999999747524271E-7 : f64}
// CHECK-NEXT: return %[[N]]
func.func @rms_norm(%x: tensor<2x3x8xf32>, %w: tensor<8xf32>) -> tensor<2x3x8xf32> {
  %two = tg.constant dense<2.0> : tensor<f32>
  %sq = tg.pow %x, %two : tensor<2x3x8xf32>, tensor<f32> -> tensor<2x3x8xf32>
  %ms = tg.reduce_mean %sq {dims = array<i64: 2>, keepdim = true} : tensor<2x3x8xf32> -> tensor<2x3x1xf32>
  %eps = tg.constant dense<1.0e-6> : tensor<f32>
  %v = tg.add %ms, %eps : tensor<2x3x1xf32>, tensor<f32> -> tensor<2x3x1xf32>
  %r = tg.sqrt %v : tensor<2x3x1xf32>
  %one = tg.constant dense<1.0> : tensor<f32>
  %inv = tg.div %one, %r : tensor<f32>, tensor<2x3x1xf32> -> tensor<2x3x1xf32>
  %n = tg.mul %x, %inv : tensor<2x3x8xf32>, tensor<2x3x1xf32> -> tensor<2x3x8xf32>
  %y = tg.mul %w, %n : tensor<8xf32>, tensor<2x3x8xf32> -> tensor<2x3x8xf32>
  return %y : tensor<2x3x8xf32>
}

// -----

// Layer norm written out: centered, its mean square, divided by the root,
// scaled and shifted.
// CHECK-LABEL: func.func @layer_norm
// CHECK: %[[N:.*]] = tg.layer_norm %arg0 weight %arg1 bias %arg2 {eps = 9.9999997473787516E-6 : f64}
// CHECK-NEXT: return %[[N]]
func.func @layer_norm(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %m = tg.reduce_mean %x {dims = array<i64: 1>, keepdim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = tg.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %sq = tg.mul %d, %d : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %var = tg.reduce_mean %sq {dims = array<i64: 1>, keepdim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %eps = tg.constant dense<1.0e-5> : tensor<f32>
  %ve = tg.add %var, %eps : tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
  %r = tg.sqrt %ve : tensor<4x1xf32>
  %n = tg.div %d, %r : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %s = tg.mul %n, %w : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %y = tg.add %s, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// SiLU, x * sigmoid(x); and what is not a norm stays: a mean over another
// dim, and the mean square read elsewhere.
// CHECK-LABEL: func.func @silu
// CHECK: tg.silu %arg0
// CHECK-NOT: tg.sigmoid
func.func @silu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = tg.sigmoid %x : tensor<4x8xf32>
  %y = tg.mul %s, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
// CHECK-LABEL: func.func @not_last_dim
// CHECK-NOT: tg.rms_norm
// CHECK: tg.reduce_mean
func.func @not_last_dim(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %sq = tg.mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %ms = tg.reduce_mean %sq {dims = array<i64: 0>, keepdim = true} : tensor<4x8xf32> -> tensor<1x8xf32>
  %eps = tg.constant dense<1.0e-6> : tensor<f32>
  %v = tg.add %ms, %eps : tensor<1x8xf32>, tensor<f32> -> tensor<1x8xf32>
  %r = tg.rsqrt %v : tensor<1x8xf32>
  %n = tg.mul %x, %r : tensor<4x8xf32>, tensor<1x8xf32> -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}
// CHECK-LABEL: func.func @mean_square_read
// CHECK-NOT: tg.rms_norm
func.func @mean_square_read(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  %sq = tg.mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %ms = tg.reduce_mean %sq {dims = array<i64: 1>, keepdim = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %eps = tg.constant dense<1.0e-6> : tensor<f32>
  %v = tg.add %ms, %eps : tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
  %r = tg.rsqrt %v : tensor<4x1xf32>
  %n = tg.mul %x, %r : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %n, %ms : tensor<4x8xf32>, tensor<4x1xf32>
}
