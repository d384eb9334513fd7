// RUN: tg-opt %s -tg-remat="remat=auto peak-budget=26000" | FileCheck %s
// RUN: tg-opt %s -tg-remat="remat=auto peak-budget=30000" | FileCheck %s --check-prefix=ROOMY
// RUN: tg-opt %s -tg-remat="remat=auto activation-budget=4608 solver=min-cut" -tg-plan-memory | FileCheck %s --check-prefix=BY-BYTES
// RUN: not tg-opt %s -tg-remat="remat=auto peak-budget=20000" 2>&1 | FileCheck %s --check-prefix=TIGHT
// RUN: tg-opt %s -tg-remat="remat=auto peak-budget=20000 least-peak-over-budget=true" | FileCheck %s --check-prefix=LEAST
// RUN: tg-opt %s -tg-remat="remat=auto peak-budget=26000" -tg-plan-memory | FileCheck %s --check-prefix=PLANNED
// RUN: not tg-opt %s -tg-remat="remat=auto peak-budget=26000 activation-budget=100" 2>&1 | FileCheck %s --check-prefix=BOTH
// RUN: not tg-opt %s -tg-remat="remat=full peak-budget=26000" 2>&1 | FileCheck %s --check-prefix=BOTH
// RUN: tg-opt %s -tg-remat="remat=auto peak-budget=26000 solver=min-cut" | FileCheck %s --check-prefix=MINCUT
// RUN: tg-opt %s -tg-remat="remat=auto peak-budget=26000 solver=exact" | FileCheck %s --check-prefix=EXACT
// RUN: not tg-opt %s -tg-remat="remat=auto peak-budget=26000 alignment=48" 2>&1 | FileCheck %s --check-prefix=ALIGN
// RUN: not tg-opt %s -tg-remat="remat=auto peak-budget=26000 bucket-bytes=-1" 2>&1 | FileCheck %s --check-prefix=BUCKET
// RUN: not tg-opt %s -tg-remat="remat=auto" 2>&1 | FileCheck %s --check-prefix=NONE

// remat=auto judged by the planned peak, on a hand-written step: a layer
// h.0 (16 -> 64 -> 16) and a head outside layers whose logits (8x256,
// 8 kB) the loss's gradient reads first thing in the backward. Without
// recomputation the backward keeps h.0's pre-activation and activation
// (2 kB each), its output (512 B) and the logits; tg-plan-memory plans
// 29760 bytes, at the head's backward, where the logits, their gradient
// and the head's weight gradient (16 kB) live with everything h.0 keeps.
//
// By the bytes kept (activation-budget=4608), the least FLOPs recompute the
// logits (65536 FLOPs): they are the biggest value, but their copy is made
// right where the backward starts, beside the gradients that peak there, so
// the peak stays 29760.
// BY-BYTES: #tg.arena<bytes = 29760,
// BY-BYTES-SAME: recomputed = ["head (tg.matmul)"]
//
// By the peak, h.0's matmul and ReLU run again instead (16896 FLOPs): their
// copies are made after the head's backward, so the peak falls by their
// 4 kB, to 25664. A graph of at most 10 moves (an op, or the same op of
// every layer that is the same problem) has every choice planned, the
// optimum by peak; the search (solver=min-cut) finds the same here.
// CHECK: tg.remat = {added_flops = 1.689600e+04 : f64, distinct_layers = 1 : i64, fits = true, kept_bytes = 8704 : i64, kept_bytes_before = 12800 : i64, layers = 1 : i64, min_kept_bytes = 512 : i64, objective = "peak", peak_budget = 26000 : i64, planned_peak = 25664 : i64, planned_peak_before = 29760 : i64, plans = {{[0-9]+}} : i64, policy = "auto", recomputed = ["h.0.fc (tg.matmul)", "h.0.relu (tg.relu)"]
// CHECK-SAME: solver = "every choice by peak"
// EXACT: added_flops = 1.689600e+04 : f64, {{.*}}fits = true
// EXACT-SAME: planned_peak = 25664 : i64
// EXACT-SAME: solver = "every choice by peak"
// MINCUT: added_flops = 1.689600e+04 : f64, {{.*}}fits = true
// MINCUT-SAME: planned_peak = 25664 : i64
// MINCUT-SAME: solver = "min-cut by peak"
// CHECK: tg.cross_entropy_grad
// CHECK: %[[FC:.*]] = tg.matmul %arg3, %arg0
// CHECK-NEXT: %[[RELU:.*]] = tg.relu %[[FC]]
// CHECK-NEXT: tg.matmul %[[RELU]]
// The planned peak tg-remat reports is tg-plan-memory's.
// PLANNED: #tg.arena<bytes = 25664,

// Within the budget nothing runs again.
// ROOMY: added_flops = 0.000000e+00 : f64, {{.*}}fits = true
// ROOMY-SAME: recomputed = []

// Below every peak it finds: an error with the smallest and its cost, or,
// when asked, that choice with fits = false.
// TIGHT: error: tg-remat: peak budget 20000 bytes is below the smallest planned peak found: 25664 bytes, adding 1.690e+04 FLOPs (5.51% of the step) (without recomputation 29760 bytes)
// LEAST: fits = false
// LEAST-SAME: planned_peak = 25664

// Options that do not go together.
// BOTH: error: tg-remat: peak-budget is remat=auto's other budget: give it with remat=auto and without activation-budget
// ALIGN: error: tg-remat: alignment must be a power of two, got 48
// BUCKET: error: tg-remat: bucket-bytes must be 0 or more, got -1
// NONE: error: tg-remat: remat=auto needs a budget (activation-budget=BYTES or peak-budget=BYTES)
module {
  func.func @train_step(
      %w0: tensor<16x64xf32> {tg.param = "h.0.weight"},
      %w1: tensor<64x16xf32> {tg.param = "h.1.weight"},
      %wh: tensor<16x256xf32> {tg.param = "head.weight"},
      %x: tensor<8x16xf32> {tg.input = "x"},
      %y: tensor<8xi64> {tg.input = "y"},
      %step: tensor<i64> {tg.scalar = "step"},
      %base_lr: tensor<f32> {tg.scalar = "base_lr"})
      -> (tensor<16x64xf32> {tg.update = "h.0.weight"},
          tensor<64x16xf32> {tg.update = "h.1.weight"},
          tensor<16x256xf32> {tg.update = "head.weight"},
          tensor<f32> {tg.metric = "loss"},
          tensor<f32> {tg.metric = "lr"}) {
    %zero = tg.constant dense<0.0> : tensor<f32>
    %one = tg.constant dense<1.0> : tensor<f32>
    %h0 = tg.matmul %x, %w0 {tg.layer = "h.0"} : tensor<8x16xf32>, tensor<16x64xf32> -> tensor<8x64xf32> loc("h.0.fc")
    %a0 = tg.relu %h0 {tg.layer = "h.0"} : tensor<8x64xf32> loc("h.0.relu")
    %h1 = tg.matmul %a0, %w1 {tg.layer = "h.0"} : tensor<8x64xf32>, tensor<64x16xf32> -> tensor<8x16xf32> loc("h.0.proj")
    %logits = tg.matmul %h1, %wh : tensor<8x16xf32>, tensor<16x256xf32> -> tensor<8x256xf32> loc("head")
    %loss = tg.cross_entropy %logits, %y : tensor<8x256xf32>, tensor<8xi64> -> tensor<f32> loc("loss")
    %dl = tg.cross_entropy_grad %one, %logits, %y : tensor<f32>, tensor<8x256xf32>, tensor<8xi64> -> tensor<8x256xf32> loc("loss")
    %dh1 = tg.matmul %dl, %wh {transpose_rhs = true} : tensor<8x256xf32>, tensor<16x256xf32> -> tensor<8x16xf32> loc("head")
    %dwh = tg.matmul %h1, %dl {transpose_lhs = true} : tensor<8x16xf32>, tensor<8x256xf32> -> tensor<16x256xf32> loc("head")
    %lr = tg.lr_schedule %step, %base_lr {total_steps = 10 : i64} : tensor<i64>, tensor<f32> -> tensor<f32>
    %nh = tg.optimizer_update sgd %wh, %dwh, %lr, %step : tensor<16x256xf32>, tensor<16x256xf32>, tensor<f32>, tensor<i64> -> tensor<16x256xf32>
    %da0 = tg.matmul %dh1, %w1 {transpose_rhs = true, tg.layer = "h.0"} : tensor<8x16xf32>, tensor<64x16xf32> -> tensor<8x64xf32> loc("h.0.proj")
    %dw1 = tg.matmul %a0, %dh1 {transpose_lhs = true, tg.layer = "h.0"} : tensor<8x64xf32>, tensor<8x16xf32> -> tensor<64x16xf32> loc("h.0.proj")
    %pos = tg.compare gt, %h0, %zero {tg.layer = "h.0"} : tensor<8x64xf32>, tensor<f32> -> tensor<8x64xi1> loc("h.0.relu")
    %dh0 = tg.select %pos, %da0, %zero {tg.layer = "h.0"} : tensor<8x64xi1>, tensor<8x64xf32>, tensor<f32> -> tensor<8x64xf32> loc("h.0.relu")
    %dw0 = tg.matmul %x, %dh0 {transpose_lhs = true, tg.layer = "h.0"} : tensor<8x16xf32>, tensor<8x64xf32> -> tensor<16x64xf32> loc("h.0.fc")
    %n1 = tg.optimizer_update sgd %w1, %dw1, %lr, %step : tensor<64x16xf32>, tensor<64x16xf32>, tensor<f32>, tensor<i64> -> tensor<64x16xf32>
    %n0 = tg.optimizer_update sgd %w0, %dw0, %lr, %step : tensor<16x64xf32>, tensor<16x64xf32>, tensor<f32>, tensor<i64> -> tensor<16x64xf32>
    return %n0, %n1, %nh, %loss, %lr : tensor<16x64xf32>, tensor<64x16xf32>, tensor<16x256xf32>, tensor<f32>, tensor<f32>
  }
}
