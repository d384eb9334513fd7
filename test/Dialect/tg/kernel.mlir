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
