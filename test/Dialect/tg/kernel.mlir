// RUN: tg-opt %s | tg-opt | FileCheck %s

// CHECK-LABEL: func.func @bias_relu
// CHECK:      %[[Y:.+]] = tg.kernel elementwise(%{{.+}}, %{{.+}} : tensor<32x128xf32>, tensor<128xf32>) attributes {name = "fused_add_relu"} {
// CHECK-NEXT: ^bb0(%[[X:.+]]: tensor<32x128xf32>, %[[B:.+]]: tensor<128xf32>):
// CHECK-NEXT:   %[[S:.+]] = tg.add %[[X]], %[[B]]
// CHECK-NEXT:   %[[R:.+]] = tg.relu %[[S]]
// CHECK-NEXT:   tg.yield %[[S]], %[[R]] : tensor<32x128xf32>, tensor<32x128xf32>
// CHECK-NEXT: } -> tensor<32x128xf32>, tensor<32x128xf32>
func.func @bias_relu(%h: tensor<32x128xf32>, %b: tensor<128xf32>) -> tensor<32x128xf32> {
  %y:2 = tg.kernel elementwise (%h, %b : tensor<32x128xf32>, tensor<128xf32>) attributes {name = "fused_add_relu"} {
  ^bb0(%x: tensor<32x128xf32>, %bias: tensor<128xf32>):
    %s = tg.add %x, %bias : tensor<32x128xf32>, tensor<128xf32> -> tensor<32x128xf32>
    %r = tg.relu %s : tensor<32x128xf32>
    tg.yield %s, %r : tensor<32x128xf32>, tensor<32x128xf32>
  } -> tensor<32x128xf32>, tensor<32x128xf32>
  return %y#1 : tensor<32x128xf32>
}

// CHECK-LABEL: func.func @gemm_bias_gelu
// CHECK:      %[[Y:.+]] = tg.kernel gemm(%{{.+}}, %{{.+}}, %{{.+}} : tensor<32x128xf32>, tensor<64x128xf32>, tensor<64xf32>) attributes {name = "fused_matmul_add_gelu"} {
// CHECK-NEXT: ^bb0(%[[X:.+]]: tensor<32x128xf32>, %[[W:.+]]: tensor<64x128xf32>, %[[B:.+]]: tensor<64xf32>):
// CHECK-NEXT:   %[[M:.+]] = tg.matmul %[[X]], %[[W]] {transpose_rhs = true}
// CHECK-NEXT:   %[[S:.+]] = tg.add %[[M]], %[[B]]
// CHECK-NEXT:   %[[G:.+]] = tg.gelu %[[S]]
// CHECK-NEXT:   tg.yield %[[G]] : tensor<32x64xf32>
// CHECK-NEXT: } -> tensor<32x64xf32>
func.func @gemm_bias_gelu(%h: tensor<32x128xf32>, %w: tensor<64x128xf32>, %b: tensor<64xf32>) -> tensor<32x64xf32> {
  %y = tg.kernel gemm (%h, %w, %b : tensor<32x128xf32>, tensor<64x128xf32>, tensor<64xf32>) attributes {name = "fused_matmul_add_gelu"} {
  ^bb0(%x: tensor<32x128xf32>, %m: tensor<64x128xf32>, %c: tensor<64xf32>):
    %p = tg.matmul %x, %m {transpose_rhs = true} : tensor<32x128xf32>, tensor<64x128xf32> -> tensor<32x64xf32>
    %s = tg.add %p, %c : tensor<32x64xf32>, tensor<64xf32> -> tensor<32x64xf32>
    %g = tg.gelu %s : tensor<32x64xf32>
    tg.yield %g : tensor<32x64xf32>
  } -> tensor<32x64xf32>
  return %y : tensor<32x64xf32>
}

// CHECK-LABEL: func.func @reduction_prologue_epilogue
// CHECK:      %[[Y:.+]] = tg.kernel reduction(%{{.+}}, %{{.+}}, %{{.+}} : tensor<32x128xf32>, tensor<32x128xf32>, tensor<f32>) attributes {name = "fused_mul_reduce_sum_mul"} {
// CHECK-NEXT: ^bb0(%[[A:.+]]: tensor<32x128xf32>, %[[B:.+]]: tensor<32x128xf32>, %[[K:.+]]: tensor<f32>):
// CHECK-NEXT:   %[[P:.+]] = tg.mul %[[A]], %[[B]]
// CHECK-NEXT:   %[[S:.+]] = tg.reduce_sum %[[P]] {dims = array<i64: 0>}
// CHECK-NEXT:   %[[Q:.+]] = tg.mul %[[S]], %[[K]]
// CHECK-NEXT:   tg.yield %[[Q]] : tensor<128xf32>
// CHECK-NEXT: } -> tensor<128xf32>
func.func @reduction_prologue_epilogue(%g: tensor<32x128xf32>, %x: tensor<32x128xf32>, %k: tensor<f32>) -> tensor<128xf32> {
  %y = tg.kernel reduction (%g, %x, %k : tensor<32x128xf32>, tensor<32x128xf32>, tensor<f32>) attributes {name = "fused_mul_reduce_sum_mul"} {
  ^bb0(%a: tensor<32x128xf32>, %b: tensor<32x128xf32>, %c: tensor<f32>):
    %p = tg.mul %a, %b : tensor<32x128xf32>, tensor<32x128xf32> -> tensor<32x128xf32>
    %s = tg.reduce_sum %p {dims = array<i64: 0>} : tensor<32x128xf32> -> tensor<128xf32>
    %q = tg.mul %s, %c : tensor<128xf32>, tensor<f32> -> tensor<128xf32>
    tg.yield %q : tensor<128xf32>
  } -> tensor<128xf32>
  return %y : tensor<128xf32>
}

// -----

// An elementwise kernel with data movement (target=cuda's), a gemm kernel
// that stores its pre-activation too, an optimizer kernel.
// CHECK-LABEL: func.func @cuda_kernels
// CHECK:      tg.kernel elementwise
// CHECK:        tg.transpose
// CHECK:        tg.neg
// CHECK:      tg.kernel gemm
// CHECK:        tg.yield %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK:      tg.kernel optimizer
// CHECK:        tg.optimizer_update sgd %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} grad_scale %{{.+}} :
func.func @cuda_kernels(%h: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>, %s: tensor<f32>, %lr: tensor<f32>, %step: tensor<i64>) -> (tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>) {
  %t = tg.kernel elementwise (%h : tensor<4x8xf32>) {
  ^bb0(%x: tensor<4x8xf32>):
    %0 = tg.transpose %x {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
    %1 = tg.neg %0 : tensor<8x4xf32>
    tg.yield %1 : tensor<8x4xf32>
  } -> tensor<8x4xf32>
  %g:2 = tg.kernel gemm (%h, %w, %b : tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) {
  ^bb0(%x: tensor<4x8xf32>, %m: tensor<8x8xf32>, %c: tensor<8xf32>):
    %0 = tg.matmul %x, %m : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %1 = tg.add %0, %c : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    %2 = tg.gelu %1 {approximate = #tg<approximation tanh>} : tensor<4x8xf32>
    tg.yield %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>
  } -> tensor<4x8xf32>, tensor<4x8xf32>
  %u = tg.kernel optimizer (%w, %w, %s, %lr, %step : tensor<8x8xf32>, tensor<8x8xf32>, tensor<f32>, tensor<f32>, tensor<i64>) {
  ^bb0(%p: tensor<8x8xf32>, %q: tensor<8x8xf32>, %c: tensor<f32>, %l: tensor<f32>, %k: tensor<i64>):
    %1 = tg.optimizer_update sgd %p, %q, %l, %k grad_scale %c : tensor<8x8xf32>, tensor<8x8xf32>, tensor<f32>, tensor<i64> -> tensor<8x8xf32>
    tg.yield %1 : tensor<8x8xf32>
  } -> tensor<8x8xf32>
  return %t, %g#0, %g#1, %u : tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>
}

// A multi-tensor update: lanes of one kind and hyperparameters, each with
// its gradient scale or without.
// CHECK-LABEL: func.func @optimizer_lanes
// CHECK:      tg.kernel optimizer
// CHECK:        tg.optimizer_update adamw {{.*}} grad_scale
// CHECK-NEXT:   tg.optimizer_update adamw {{.*}}, %{{[a-z0-9]+}} :
func.func @optimizer_lanes(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %q: tensor<4xf32>, %h: tensor<4xf32>, %n: tensor<4xf32>, %w: tensor<4xf32>, %c: tensor<f32>, %lr: tensor<f32>, %step: tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %y:6 = tg.kernel optimizer (%p, %g, %m, %v, %q, %h, %n, %w, %c, %lr, %step : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<i64>) {
  ^bb0(%a: tensor<8xf32>, %b: tensor<8xf32>, %a1: tensor<8xf32>, %a2: tensor<8xf32>, %d: tensor<4xf32>, %e: tensor<4xf32>, %d1: tensor<4xf32>, %d2: tensor<4xf32>, %s: tensor<f32>, %l: tensor<f32>, %k: tensor<i64>):
    %1:3 = tg.optimizer_update adamw %a, %b, %l, %k, %a1, %a2 grad_scale %s : tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<i64>, tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
    %2:3 = tg.optimizer_update adamw %d, %e, %l, %k, %d1, %d2 : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
    tg.yield %1#0, %1#1, %1#2, %2#0, %2#1, %2#2 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  } -> tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  return %y#0, %y#1, %y#2, %y#3, %y#4, %y#5 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// A gemm kernel names the cuBLASLt epilogue its body is.
// CHECK-LABEL: func.func @named_epilogue
// CHECK:      tg.kernel gemm({{.*}}) attributes {epilogue = #tg<epilogue bias_gelu>, name = "fused_matmul_add_gelu"}
func.func @named_epilogue(%h: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %y = tg.kernel gemm (%h, %w, %b : tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) attributes {epilogue = #tg<epilogue bias_gelu>, name = "fused_matmul_add_gelu"} {
  ^bb0(%x: tensor<4x8xf32>, %m: tensor<8x8xf32>, %c: tensor<8xf32>):
    %p = tg.matmul %x, %m : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %s = tg.add %p, %c : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    %g = tg.gelu %s {approximate = #tg<approximation tanh>} : tensor<4x8xf32>
    tg.yield %g : tensor<4x8xf32>
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
