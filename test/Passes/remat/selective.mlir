// RUN: tg-opt %s -split-input-file -tg-remat=remat=selective | FileCheck %s
// RUN: tg-opt %s -split-input-file -tg-remat | FileCheck %s --check-prefix=NONE
// RUN: not tg-opt %s -split-input-file -tg-remat=remat=everything 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not tg-opt %s -split-input-file -tg-remat="remat=auto solver=greedy" 2>&1 | FileCheck %s --check-prefix=SOLVER
// RUN: not tg-opt %s -split-input-file -tg-remat=remat=auto 2>&1 | FileCheck %s --check-prefix=BUDGET
// SOLVER: for the --solver option: 'greedy' is not one of auto, exact, min-cut
// BUDGET: tg-remat: remat=auto needs a budget (activation-budget=BYTES or peak-budget=BYTES)

// The GELU's result is read in the backward (by the weight gradient): it
// is computed again from its input, which the GELU gradient reads later
// anyway, right before that reader; the forward's copy then dies after the
// forward's matmul.
// CHECK-LABEL: func.func @gelu
// CHECK:       %[[H:.+]] = tg.matmul
// CHECK:       %[[A:.+]] = tg.gelu %[[H]]
// CHECK:       tg.matmul %[[A]]
// CHECK:       tg.cross_entropy
// CHECK:       %[[A2:.+]] = tg.gelu %[[H]]
// CHECK-NEXT:  tg.matmul %[[A2]], %{{.+}} {transpose_lhs = true}
// CHECK:       tg.gelu_grad %{{.+}}, %[[H]]
// NONE-LABEL: func.func @gelu
// NONE-COUNT-1: tg.gelu %
// NONE-NOT:   tg.gelu %
// BAD: for the --remat option: 'everything' is not one of none, selective, full, auto
func.func @gelu(%x: tensor<8x16xf32>, %w1: tensor<16x16xf32>, %w: tensor<16x4xf32>, %y: tensor<8xi64>, %dy: tensor<8x4xf32>) -> (tensor<f32> {tg.metric = "loss"}, tensor<16x4xf32>, tensor<8x16xf32>) {
  %h = tg.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  %a = tg.gelu %h {approximate = #tg<approximation tanh>} : tensor<8x16xf32>
  %z = tg.matmul %a, %w : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  %l = tg.cross_entropy %z, %y : tensor<8x4xf32>, tensor<8xi64> -> tensor<f32>
  %dw = tg.matmul %a, %dy {transpose_lhs = true} : tensor<8x16xf32>, tensor<8x4xf32> -> tensor<16x4xf32>
  %da = tg.matmul %dy, %w {transpose_rhs = true} : tensor<8x4xf32>, tensor<16x4xf32> -> tensor<8x16xf32>
  %dh = tg.gelu_grad %da, %h {approximate = #tg<approximation tanh>} : tensor<8x16xf32>
  return %l, %dw, %dh : tensor<f32>, tensor<16x4xf32>, tensor<8x16xf32>
}

// -----

// Recomputing %e would keep %x alive until the backward, which nothing
// else reads there: %e is kept instead.
// CHECK-LABEL: func.func @keeps_nothing_longer
// CHECK-COUNT-1: tg.exp
// CHECK-NOT:   tg.exp
func.func @keeps_nothing_longer(%h: tensor<8x4xf32>, %y: tensor<8xi64>) -> (tensor<f32> {tg.metric = "loss"}, tensor<8x4xf32>) {
  %x = tg.neg %h : tensor<8x4xf32>
  %e = tg.exp %x : tensor<8x4xf32>
  %l = tg.cross_entropy %e, %y : tensor<8x4xf32>, tensor<8xi64> -> tensor<f32>
  %g = tg.mul %e, %e : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  return %l, %g : tensor<f32>, tensor<8x4xf32>
}
