// RUN: tg-opt %s -split-input-file -tg-fuse | FileCheck %s
// RUN: tg-opt %s -split-input-file -tg-fuse=fusion=elementwise | FileCheck %s --check-prefix=ELEMENTWISE

// The loss and its gradient on the same logits: one classifier kernel where
// the gradient stood, yielding both.
// CHECK-LABEL: func.func @loss_and_gradient
// CHECK:      %[[K:.+]]:2 = tg.kernel classifier(%arg0, %arg1, %[[ONE:.+]] : tensor<8x10xf32>, tensor<8xi64>, tensor<f32>) attributes {name = "fused_cross_entropy_cross_entropy_grad"} {
// CHECK-NEXT: ^bb0(%[[X:.+]]: tensor<8x10xf32>, %[[Y:.+]]: tensor<8xi64>, %[[G:.+]]: tensor<f32>):
// CHECK-NEXT:   %[[L:.+]] = tg.cross_entropy %[[X]], %[[Y]]
// CHECK-NEXT:   %[[D:.+]] = tg.cross_entropy_grad %[[G]], %[[X]], %[[Y]]
// CHECK-NEXT:   tg.yield %[[L]], %[[D]] : tensor<f32>, tensor<8x10xf32>
// CHECK:      return %[[K]]#0, %[[K]]#1
// ELEMENTWISE-LABEL: func.func @loss_and_gradient
// ELEMENTWISE-NOT:   tg.kernel
func.func @loss_and_gradient(%logits: tensor<8x10xf32>, %labels: tensor<8xi64>) -> (tensor<f32>, tensor<8x10xf32>) {
  %one = tg.constant dense<1.0> : tensor<f32>
  %l = tg.cross_entropy %logits, %labels : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
  %d = tg.cross_entropy_grad %one, %logits, %labels : tensor<f32>, tensor<8x10xf32>, tensor<8xi64> -> tensor<8x10xf32>
  return %l, %d : tensor<f32>, tensor<8x10xf32>
}

// -----

// Something reads the loss before the gradient, whose seed is known before
// the loss (an argument here, a constant for a scaled loss): the kernel
// stands where the loss stood.
// CHECK-LABEL: func.func @loss_read_in_between
// CHECK:       %[[K:.+]]:2 = tg.kernel classifier
// CHECK:       tg.neg %[[K]]#0
// CHECK:       return %{{.+}}, %[[K]]#1
func.func @loss_read_in_between(%logits: tensor<8x10xf32>, %labels: tensor<8xi64>, %g: tensor<f32>) -> (tensor<f32>, tensor<8x10xf32>) {
  %l = tg.cross_entropy %logits, %labels : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
  %n = tg.neg %l : tensor<f32>
  %d = tg.cross_entropy_grad %g, %logits, %labels : tensor<f32>, tensor<8x10xf32>, tensor<8xi64> -> tensor<8x10xf32>
  return %n, %d : tensor<f32>, tensor<8x10xf32>
}

// -----

// The loss is read before the gradient and the seed computed after the
// loss: the kernel could stand neither where the loss stood nor where the
// gradient stands, so both stay ops.
// CHECK-LABEL: func.func @seed_after_loss_read
// CHECK-NOT:   tg.kernel classifier
// CHECK:       tg.cross_entropy
// CHECK:       tg.neg
// CHECK:       tg.cross_entropy_grad
func.func @seed_after_loss_read(%logits: tensor<8x10xf32>, %labels: tensor<8xi64>, %g: tensor<f32>) -> (tensor<f32>, tensor<8x10xf32>) {
  %l = tg.cross_entropy %logits, %labels : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
  %n = tg.neg %l : tensor<f32>
  %s = tg.exp %g : tensor<f32>
  %d = tg.cross_entropy_grad %s, %logits, %labels : tensor<f32>, tensor<8x10xf32>, tensor<8xi64> -> tensor<8x10xf32>
  return %n, %d : tensor<f32>, tensor<8x10xf32>
}

// -----

// Another reduction, or other labels: not the same loss, no kernel.
// CHECK-LABEL: func.func @different_reduction_or_labels
// CHECK-NOT:   tg.kernel classifier
func.func @different_reduction_or_labels(%logits: tensor<8x10xf32>, %labels: tensor<8xi64>, %other: tensor<8xi64>, %g: tensor<f32>) -> (tensor<f32>, tensor<8x10xf32>, tensor<8x10xf32>) {
  %l = tg.cross_entropy %logits, %labels : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
  %d = tg.cross_entropy_grad %g, %logits, %labels {reduction = #tg<loss_reduction sum>} : tensor<f32>, tensor<8x10xf32>, tensor<8xi64> -> tensor<8x10xf32>
  %e = tg.cross_entropy_grad %g, %logits, %other : tensor<f32>, tensor<8x10xf32>, tensor<8xi64> -> tensor<8x10xf32>
  return %l, %d, %e : tensor<f32>, tensor<8x10xf32>, tensor<8x10xf32>
}

// -----

// The loss alone (evaluation) stays an op.
// CHECK-LABEL: func.func @loss_alone
// CHECK-NOT:   tg.kernel
// CHECK:       tg.cross_entropy
func.func @loss_alone(%logits: tensor<8x10xf32>, %labels: tensor<8xi64>) -> tensor<f32> {
  %l = tg.cross_entropy %logits, %labels : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
  return %l : tensor<f32>
}
