// RUN: tg-opt %s -tg-lora="rank=2 alpha=4 targets=fc" | FileCheck %s
// RUN: tg-opt %s -tg-lora="rank=2 alpha=4 targets=h.1.fc" -tg-autodiff | FileCheck %s --check-prefix=GRADS

// Each layer's fc weight gets A ([in, r], uniform in 1/sqrt(16)) and B
// ([r, out], zeros) after the last parameter; every other parameter is
// frozen; x @ W becomes x @ W + (x @ A) @ B * alpha / r, in the layer of
// the matmul, named after it.
// The module records each weight's adapters, which --merge-lora reads.
// CHECK: module attributes {tg.lora = [#tg.lora<base = "h.0.fc.weight", a = "h.0.fc.lora_A", b = "h.0.fc.lora_B", scale = 2.000000e+00, transposed = false>, #tg.lora<base = "h.1.fc.weight", a = "h.1.fc.lora_A", b = "h.1.fc.lora_B", scale = 2.000000e+00, transposed = false>]}
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %arg0: tensor<16x4xf32> {tg.frozen, tg.param = "h.0.fc.weight"}
// CHECK-SAME: %arg1: tensor<4xf32> {tg.frozen, tg.param = "h.0.fc.bias"}
// CHECK-SAME: %arg2: tensor<4x4xf32> {tg.frozen, tg.param = "h.1.fc.weight"}
// CHECK-SAME: %arg3: tensor<16x2xf32> {tg.init = #tg.init<uniform, low = -2.500000e-01, high = 2.500000e-01>, tg.param = "h.0.fc.lora_A"}
// CHECK-SAME: %arg4: tensor<2x4xf32> {tg.init = #tg.init<zeros>, tg.param = "h.0.fc.lora_B"}
// CHECK-SAME: %arg5: tensor<4x2xf32> {tg.init = #tg.init<uniform, low = -5.000000e-01, high = 5.000000e-01>, tg.param = "h.1.fc.lora_A"}
// CHECK-SAME: %arg6: tensor<2x4xf32> {tg.init = #tg.init<zeros>, tg.param = "h.1.fc.lora_B"}
// CHECK-SAME: %arg7: tensor<8x16xf32> {tg.input = "x"}
// CHECK:      %[[Y0:.+]] = tg.matmul %arg7, %arg0 {tg.layer = "h.0"}
// CHECK-NEXT: %[[XA:.+]] = tg.matmul %arg7, %arg3 {tg.layer = "h.0"} : tensor<8x16xf32>, tensor<16x2xf32> -> tensor<8x2xf32>
// CHECK-NEXT: %[[XAB:.+]] = tg.matmul %[[XA]], %arg4 {tg.layer = "h.0"} : tensor<8x2xf32>, tensor<2x4xf32> -> tensor<8x4xf32>
// CHECK-NEXT: %[[S:.+]] = tg.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[M:.+]] = tg.mul %[[XAB]], %[[S]] {tg.layer = "h.0"}
// CHECK-NEXT: %[[Y:.+]] = tg.add %[[Y0]], %[[M]] {tg.layer = "h.0"}
// CHECK-NEXT: tg.add %[[Y]], %arg1
// CHECK:      tg.matmul {{.*}}, %arg2 {tg.layer = "h.1"}
// CHECK:      tg.matmul {{.*}}, %arg5 {tg.layer = "h.1"}
// The adapters alone train.
// GRADS-LABEL: func.func @forward_backward
// GRADS-SAME: -> (tensor<f32>, tensor<4x2xf32> {tg.grad = "h.1.fc.lora_A"}, tensor<2x4xf32> {tg.grad = "h.1.fc.lora_B"})
func.func @forward(%w0: tensor<16x4xf32> {tg.param = "h.0.fc.weight"}, %b0: tensor<4xf32> {tg.param = "h.0.fc.bias"},
                   %w1: tensor<4x4xf32> {tg.param = "h.1.fc.weight"},
                   %x: tensor<8x16xf32> {tg.input = "x"}) -> tensor<f32> {
  %y0 = tg.matmul %x, %w0 {tg.layer = "h.0"} : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32> loc("h.0.fc")
  %a0 = tg.add %y0, %b0 {tg.layer = "h.0"} : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xf32> loc("h.0.fc.bias_add")
  %y1 = tg.matmul %a0, %w1 {tg.layer = "h.1"} : tensor<8x4xf32>, tensor<4x4xf32> -> tensor<8x4xf32> loc("h.1.fc")
  %l = tg.reduce_sum %y1 : tensor<8x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
