// RUN: tg-opt %s -tg-raise -split-input-file | FileCheck %s

// nanoGPT's attention as an export writes it: k^T as one transpose of
// [B, T, H, D], the scale 1/sqrt(D), the causal mask as select(hidden,
// -inf, scores). It becomes tg.attention {causal} of q, k as [B, H, T, D]
// and v; the written-out ops are gone.
// CHECK-LABEL: func.func @select_causal
// CHECK: %[[K:.*]] = tg.transpose %arg1 {perm = array<i64: 0, 2, 1, 3>}
// CHECK: tg.attention %arg0, %[[K]], %arg2 {causal = true}
// CHECK-NOT: tg.softmax
// CHECK-NOT: tg.select
func.func @select_causal(%q: tensor<1x2x3x4xf32>, %kx: tensor<1x3x2x4xf32>, %v: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %kt = tg.transpose %kx {perm = array<i64: 0, 2, 3, 1>} : tensor<1x3x2x4xf32> -> tensor<1x2x4x3xf32>
  %s = tg.matmul %q, %kt : tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32> -> tensor<1x2x3x3xf32>
  %c = tg.constant dense<0.5> : tensor<f32>
  %scaled = tg.mul %s, %c : tensor<1x2x3x3xf32>, tensor<f32> -> tensor<1x2x3x3xf32>
  %hidden = tg.constant dense<[[[[false, true, true], [false, false, true], [false, false, false]]]]> : tensor<1x1x3x3xi1>
  %inf = tg.constant dense<0xFF800000> : tensor<f32>
  %m = tg.select %hidden, %inf, %scaled : tensor<1x1x3x3xi1>, tensor<f32>, tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
  %p = tg.softmax %m : tensor<1x2x3x3xf32>
  %y = tg.matmul %p, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  return %y : tensor<1x2x3x4xf32>
}

// -----

// Llama's: divided by sqrt(D) = 2, an additive causal mask, and key and
// value repeated for grouped-query attention (2 query heads per key/value
// head), which tg.attention reads unrepeated.
// CHECK-LABEL: func.func @additive_gqa
// CHECK: tg.attention %arg0, %arg1, %arg2 {causal = true} : tensor<1x4x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32> -> tensor<1x4x3x4xf32>
// CHECK-NOT: tg.broadcast_to
func.func @additive_gqa(%q: tensor<1x4x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>) -> tensor<1x4x3x4xf32> {
  %k5 = tg.reshape %k : tensor<1x2x3x4xf32> -> tensor<1x2x1x3x4xf32>
  %kb = tg.broadcast_to %k5 : tensor<1x2x1x3x4xf32> -> tensor<1x2x2x3x4xf32>
  %kr = tg.reshape %kb : tensor<1x2x2x3x4xf32> -> tensor<1x4x3x4xf32>
  %v5 = tg.reshape %v : tensor<1x2x3x4xf32> -> tensor<1x2x1x3x4xf32>
  %vb = tg.broadcast_to %v5 : tensor<1x2x1x3x4xf32> -> tensor<1x2x2x3x4xf32>
  %vr = tg.reshape %vb : tensor<1x2x2x3x4xf32> -> tensor<1x4x3x4xf32>
  %kt = tg.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : tensor<1x4x3x4xf32> -> tensor<1x4x4x3xf32>
  %s = tg.matmul %q, %kt : tensor<1x4x3x4xf32>, tensor<1x4x4x3xf32> -> tensor<1x4x3x3xf32>
  %two = tg.constant dense<2.0> : tensor<f32>
  %scaled = tg.div %s, %two : tensor<1x4x3x3xf32>, tensor<f32> -> tensor<1x4x3x3xf32>
  %mask = tg.constant dense<[[0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0]]> : tensor<3x3xf32>
  %m = tg.add %scaled, %mask : tensor<1x4x3x3xf32>, tensor<3x3xf32> -> tensor<1x4x3x3xf32>
  %p = tg.softmax %m {axis = 3 : i64} : tensor<1x4x3x3xf32>
  %y = tg.matmul %p, %vr : tensor<1x4x3x3xf32>, tensor<1x4x3x4xf32> -> tensor<1x4x3x4xf32>
  return %y : tensor<1x4x3x4xf32>
}

// -----

// Another additive mask (here a bias) is the mask operand; a scale other
// than 1/sqrt(D) is kept; k read transposed by the matmul itself.
// CHECK-LABEL: func.func @bias_mask
// CHECK: tg.attention %arg0, %arg1, %arg2 mask %arg3 {scale = 2.500000e-01 : f64}
func.func @bias_mask(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %bias: tensor<1x2x3x3xf32>) -> tensor<1x2x3x4xf32> {
  %s = tg.matmul %q, %k {transpose_rhs = true} : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x3xf32>
  %c = tg.constant dense<0.25> : tensor<f32>
  %scaled = tg.mul %c, %s : tensor<f32>, tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
  %m = tg.add %scaled, %bias : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
  %p = tg.softmax %m : tensor<1x2x3x3xf32>
  %y = tg.matmul %p, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  return %y : tensor<1x2x3x4xf32>
}

// -----

// Not raised: the probabilities are read elsewhere too, and a select mask
// that is not causal.
// CHECK-LABEL: func.func @probabilities_read
// CHECK-NOT: tg.attention
// CHECK: tg.softmax
func.func @probabilities_read(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x3xf32>) {
  %s = tg.matmul %q, %k {transpose_rhs = true} : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x3xf32>
  %p = tg.softmax %s : tensor<1x2x3x3xf32>
  %y = tg.matmul %p, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  return %y, %p : tensor<1x2x3x4xf32>, tensor<1x2x3x3xf32>
}
// CHECK-LABEL: func.func @not_causal
// CHECK-NOT: tg.attention
// CHECK: tg.select
func.func @not_causal(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %s = tg.matmul %q, %k {transpose_rhs = true} : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x3xf32>
  %hidden = tg.constant dense<[[false, false, true], [false, false, true], [false, false, true]]> : tensor<3x3xi1>
  %inf = tg.constant dense<0xFF800000> : tensor<f32>
  %m = tg.select %hidden, %inf, %s : tensor<3x3xi1>, tensor<f32>, tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
  %p = tg.softmax %m : tensor<1x2x3x3xf32>
  %y = tg.matmul %p, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  return %y : tensor<1x2x3x4xf32>
}

// -----

// GELU's tanh form as torch exports it: x * x * x, the products with the
// constants on either side, 0.5 last.
// CHECK-LABEL: func.func @gelu_tanh
// CHECK: %[[G:.*]] = tg.gelu %arg0 {approximate = #tg<approximation tanh>}
// CHECK-NEXT: return %[[G]]
func.func @gelu_tanh(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %sq = tg.mul %x, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %cube = tg.mul %x, %sq : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %c1 = tg.constant dense<0.044715> : tensor<f32>
  %t1 = tg.mul %c1, %cube : tensor<f32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %sum = tg.add %x, %t1 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %c2 = tg.constant dense<0.797884583> : tensor<f32>
  %arg = tg.mul %c2, %sum : tensor<f32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %t = tg.tanh %arg : tensor<2x8xf32>
  %one = tg.constant dense<1.0> : tensor<f32>
  %onep = tg.add %one, %t : tensor<f32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %xp = tg.mul %x, %onep : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %half = tg.constant dense<0.5> : tensor<f32>
  %g = tg.mul %half, %xp : tensor<f32>, tensor<2x8xf32> -> tensor<2x8xf32>
  return %g : tensor<2x8xf32>
}

// -----

// x^3 by pow and 0.5 * x first; and a wrong constant is left alone.
// CHECK-LABEL: func.func @gelu_pow
// CHECK: tg.gelu %arg0 {approximate = #tg<approximation tanh>}
// CHECK-LABEL: func.func @not_gelu
// CHECK-NOT: tg.gelu
// CHECK: tg.tanh
func.func @gelu_pow(%x: tensor<8xf32>) -> tensor<8xf32> {
  %three = tg.constant dense<3.0> : tensor<f32>
  %cube = tg.pow %x, %three : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %c1 = tg.constant dense<0.044715> : tensor<f32>
  %t1 = tg.mul %cube, %c1 : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %sum = tg.add %t1, %x : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %c2 = tg.constant dense<0.797884583> : tensor<f32>
  %arg = tg.mul %sum, %c2 : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %t = tg.tanh %arg : tensor<8xf32>
  %one = tg.constant dense<1.0> : tensor<f32>
  %onep = tg.add %t, %one : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %half = tg.constant dense<0.5> : tensor<f32>
  %hx = tg.mul %x, %half : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %g = tg.mul %hx, %onep : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  return %g : tensor<8xf32>
}
func.func @not_gelu(%x: tensor<8xf32>) -> tensor<8xf32> {
  %three = tg.constant dense<3.0> : tensor<f32>
  %cube = tg.pow %x, %three : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %c1 = tg.constant dense<0.05> : tensor<f32>
  %t1 = tg.mul %cube, %c1 : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %sum = tg.add %t1, %x : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %c2 = tg.constant dense<0.797884583> : tensor<f32>
  %arg = tg.mul %sum, %c2 : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %t = tg.tanh %arg : tensor<8xf32>
  %one = tg.constant dense<1.0> : tensor<f32>
  %onep = tg.add %t, %one : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %half = tg.constant dense<0.5> : tensor<f32>
  %hx = tg.mul %x, %half : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %g = tg.mul %hx, %onep : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  return %g : tensor<8xf32>
}
