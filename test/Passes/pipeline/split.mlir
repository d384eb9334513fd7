// RUN: tg-opt %s -tg-pipeline-split | FileCheck %s
// RUN: tg-opt %s -tg-pipeline-split -tg-pipeline-schedule="schedule=1f1b" | FileCheck %s --check-prefix=ONEF
// RUN: tg-opt %s -tg-pipeline-split -tg-pipeline-schedule="schedule=zb-h1" | FileCheck %s --check-prefix=ZB

// Two layers (h.0, h.1: the model file's node names, in the locations) on
// two stages, two micro-batches, plain SGD: tg-pipeline-split cuts the step
// after h.0 (the loss goes with the last chunk), gives each chunk its
// forward (F), its backward for the inputs (B) and for the weights (W),
// connects them by slots, and gives each stage the update of its
// parameters; tg-pipeline-schedule writes each stage's actions for the
// micro-batches @train_step runs (tg.micro_batches).

// The stages are a mesh axis; the slot h.0 sends forward (0) and the one
// h.1's backward sends back (4).
// CHECK: tg.pipeline_transfers = [{backward = array<i64: 4>, forward = array<i64: 0>}]
// CHECK: tg.mesh @mesh ["pp" = 2]
// h.0's forward keeps its pre-activation for the weight pass (slot 3).
// CHECK-LABEL: func.func @chunk0_forward({{.*}}tg.input = "x"{{.*}}tg.param = "h.0.weight"{{.*}} -> (tensor<4x8xf32> {tg.slot = 0 : i64}, tensor<4x8xf32> {tg.slot = 3 : i64}) attributes {tg.pipeline_role = {chunk = 0 : i64, kind = "forward"}}
// CHECK-NEXT: tg.matmul
// CHECK-NEXT: tg.relu
// Nothing comes before h.0: its backward for the inputs computes nothing.
// CHECK-LABEL: func.func @chunk0_backward() attributes {tg.pipeline_role = {chunk = 0 : i64, kind = "backward"}}
// CHECK-NEXT: return
// CHECK-LABEL: func.func @chunk0_weight({{.*}}tg.slot = 3 : i64{{.*}}tg.slot = 4 : i64{{.*}} -> (tensor<8x8xf32> {tg.grad = "h.0.weight"})
// CHECK: tg.compare
// CHECK: tg.select
// CHECK: tg.matmul {{.*}}transpose_lhs = true
// The loss goes with the last chunk.
// CHECK-LABEL: func.func @chunk1_forward({{.*}}tg.param = "h.1.weight"{{.*}}tg.slot = 0 : i64{{.*}} -> (tensor<4x4xf32> {tg.slot = 1 : i64}, tensor<f32> {tg.metric = "loss"})
// CHECK: tg.cross_entropy
// CHECK-LABEL: func.func @chunk1_backward({{.*}} -> (tensor<4x4xf32> {tg.slot = 2 : i64}, tensor<4x8xf32> {tg.slot = 4 : i64}) attributes {tg.pipeline_role = {chunk = 1 : i64, kind = "backward"}}
// CHECK: tg.cross_entropy_grad
// CHECK: tg.matmul {{.*}}transpose_rhs = true
// CHECK-LABEL: func.func @chunk1_weight({{.*}} -> (tensor<8x4xf32> {tg.grad = "h.1.weight"})
// Each stage updates its own parameters.
// CHECK-LABEL: func.func @stage0_update({{.*}}tg.param = "h.0.weight"{{.*}}tg.accum = "h.0.weight"{{.*}}attributes {tg.pipeline_role = {kind = "update", stage = 0 : i64}}
// CHECK: tg.optimizer_update sgd
// CHECK-LABEL: func.func @stage1_update({{.*}}tg.param = "h.1.weight"{{.*}}attributes {tg.pipeline_role = {kind = "update", stage = 1 : i64}}

// 1F1B: stage 0 runs P = 2 forwards before its first backward, the last
// stage alternates; a chunk whose backward has no input gradient to send
// runs B and W at once (BW).
// ONEF: tg.pipeline = {micro_batches = 4 : i64, schedule = "1f1b", stages = 2 : i64, virtual_stages = 1 : i64}
// ONEF-SAME: tg.pipeline_actions = {{\[\[}}"F0", "send-F0", "F1", "send-F1", "recv-B0", "BW0", "F2", "send-F2", "recv-B1", "BW1", "F3", "send-F3", "recv-B2", "BW2", "recv-B3", "BW3"], ["recv-F0", "F0", "BW0", "send-B0", "recv-F1", "F1", "BW1", "send-B1", "recv-F2", "F2", "BW2", "send-B2", "recv-F3", "F3", "BW3", "send-B3"]]
// ZB-H1: the last stage sends each B first and defers W into the gaps.
// ZB: schedule = "zb-h1"
// ZB-SAME: tg.pipeline_actions = {{\[\[}}"F0", "send-F0", "F1", "send-F1", "recv-B0", "B0", "W0", "F2", "send-F2", "recv-B1", "B1", "W1", "F3", "send-F3", "recv-B2", "B2", "W2", "recv-B3", "B3", "W3"], ["recv-F0", "F0", "B0", "send-B0", "recv-F1", "F1", "B1", "send-B1", "W0", "W1", "recv-F2", "F2", "B2", "send-B2", "W2", "recv-F3", "F3", "B3", "send-B3", "W3"]]
module attributes {tg.pipeline = {stages = 2 : i64, virtual_stages = 1 : i64}} {
  func.func @forward_backward(
      %w0: tensor<8x8xf32> {tg.param = "h.0.weight"},
      %w1: tensor<8x4xf32> {tg.param = "h.1.weight"},
      %x: tensor<4x8xf32> {tg.input = "x"},
      %y: tensor<4xi64> {tg.input = "y"})
      -> (tensor<f32> {tg.output = "loss"},
          tensor<8x8xf32> {tg.grad = "h.0.weight"},
          tensor<8x4xf32> {tg.grad = "h.1.weight"}) {
    %zero = tg.constant dense<0.0> : tensor<f32>
    %one = tg.constant dense<1.0> : tensor<f32>
    %h0 = tg.matmul %x, %w0 {tg.layer = "h.0"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc("h.0.matmul")
    %a0 = tg.relu %h0 {tg.layer = "h.0"} : tensor<4x8xf32> loc("h.0.relu")
    %h1 = tg.matmul %a0, %w1 {tg.layer = "h.1"} : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32> loc("h.1.matmul")
    %loss = tg.cross_entropy %h1, %y {tg.layer = "loss"} : tensor<4x4xf32>, tensor<4xi64> -> tensor<f32> loc("loss")
    %dh1 = tg.cross_entropy_grad %one, %h1, %y {tg.layer = "loss"} : tensor<f32>, tensor<4x4xf32>, tensor<4xi64> -> tensor<4x4xf32> loc("loss")
    %da0 = tg.matmul %dh1, %w1 {transpose_rhs = true, tg.layer = "h.1"} : tensor<4x4xf32>, tensor<8x4xf32> -> tensor<4x8xf32> loc("h.1.matmul")
    %dw1 = tg.matmul %a0, %dh1 {transpose_lhs = true, tg.layer = "h.1"} : tensor<4x8xf32>, tensor<4x4xf32> -> tensor<8x4xf32> loc("h.1.matmul")
    %pos = tg.compare gt, %h0, %zero {tg.layer = "h.0"} : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xi1> loc("h.0.relu")
    %dh0 = tg.select %pos, %da0, %zero {tg.layer = "h.0"} : tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32> loc("h.0.relu")
    %dw0 = tg.matmul %x, %dh0 {transpose_lhs = true, tg.layer = "h.0"} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32> loc("h.0.matmul")
    return %loss, %dw0, %dw1 : tensor<f32>, tensor<8x8xf32>, tensor<8x4xf32>
  }
  func.func @train_step(
      %w0: tensor<8x8xf32> {tg.param = "h.0.weight"},
      %w1: tensor<8x4xf32> {tg.param = "h.1.weight"},
      %x: tensor<4x8xf32> {tg.input = "x"},
      %y: tensor<4xi64> {tg.input = "y"},
      %step: tensor<i64> {tg.scalar = "step"},
      %base_lr: tensor<f32> {tg.scalar = "base_lr"},
      %g0: tensor<8x8xf32> {tg.accum = "h.0.weight"},
      %g1: tensor<8x4xf32> {tg.accum = "h.1.weight"},
      %micro_batches: tensor<i32> {tg.scalar = "micro_batches"})
      -> (tensor<8x8xf32> {tg.update = "h.0.weight"},
          tensor<8x4xf32> {tg.update = "h.1.weight"},
          tensor<f32> {tg.metric = "loss"},
          tensor<f32> {tg.metric = "lr"})
      attributes {tg.micro_batches = 4 : i64} {
    %zero = tg.constant dense<0.0> : tensor<f32>
    %one = tg.constant dense<1.0> : tensor<f32>
    %h0 = tg.matmul %x, %w0 {tg.layer = "h.0"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc("h.0.matmul")
    %a0 = tg.relu %h0 {tg.layer = "h.0"} : tensor<4x8xf32> loc("h.0.relu")
    %h1 = tg.matmul %a0, %w1 {tg.layer = "h.1"} : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32> loc("h.1.matmul")
    %loss = tg.cross_entropy %h1, %y {tg.layer = "loss"} : tensor<4x4xf32>, tensor<4xi64> -> tensor<f32> loc("loss")
    %dh1 = tg.cross_entropy_grad %one, %h1, %y {tg.layer = "loss"} : tensor<f32>, tensor<4x4xf32>, tensor<4xi64> -> tensor<4x4xf32> loc("loss")
    %da0 = tg.matmul %dh1, %w1 {transpose_rhs = true, tg.layer = "h.1"} : tensor<4x4xf32>, tensor<8x4xf32> -> tensor<4x8xf32> loc("h.1.matmul")
    %dw1 = tg.matmul %a0, %dh1 {transpose_lhs = true, tg.layer = "h.1"} : tensor<4x8xf32>, tensor<4x4xf32> -> tensor<8x4xf32> loc("h.1.matmul")
    %pos = tg.compare gt, %h0, %zero {tg.layer = "h.0"} : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xi1> loc("h.0.relu")
    %dh0 = tg.select %pos, %da0, %zero {tg.layer = "h.0"} : tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32> loc("h.0.relu")
    %dw0 = tg.matmul %x, %dh0 {transpose_lhs = true, tg.layer = "h.0"} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32> loc("h.0.matmul")
    %k = tg.cast %micro_batches : tensor<i32> to tensor<f32>
    %s0 = tg.add %dw0, %g0 : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
    %m0 = tg.div %s0, %k : tensor<8x8xf32>, tensor<f32> -> tensor<8x8xf32>
    %s1 = tg.add %dw1, %g1 : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
    %m1 = tg.div %s1, %k : tensor<8x4xf32>, tensor<f32> -> tensor<8x4xf32>
    %lr = tg.lr_schedule %step, %base_lr {total_steps = 10 : i64} : tensor<i64>, tensor<f32> -> tensor<f32>
    %n0 = tg.optimizer_update sgd %w0, %m0, %lr, %step : tensor<8x8xf32>, tensor<8x8xf32>, tensor<f32>, tensor<i64> -> tensor<8x8xf32>
    %n1 = tg.optimizer_update sgd %w1, %m1, %lr, %step : tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>, tensor<i64> -> tensor<8x4xf32>
    return %n0, %n1, %loss, %lr : tensor<8x8xf32>, tensor<8x4xf32>, tensor<f32>, tensor<f32>
  }
  func.func @apply_gradients(
      %w0: tensor<8x8xf32> {tg.param = "h.0.weight"},
      %w1: tensor<8x4xf32> {tg.param = "h.1.weight"},
      %g0: tensor<8x8xf32> {tg.accum = "h.0.weight"},
      %g1: tensor<8x4xf32> {tg.accum = "h.1.weight"},
      %step: tensor<i64> {tg.scalar = "step"},
      %base_lr: tensor<f32> {tg.scalar = "base_lr"},
      %micro_batches: tensor<i32> {tg.scalar = "micro_batches"})
      -> (tensor<8x8xf32> {tg.update = "h.0.weight"},
          tensor<8x4xf32> {tg.update = "h.1.weight"},
          tensor<f32> {tg.metric = "lr"}) {
    %k = tg.cast %micro_batches : tensor<i32> to tensor<f32>
    %m0 = tg.div %g0, %k : tensor<8x8xf32>, tensor<f32> -> tensor<8x8xf32>
    %m1 = tg.div %g1, %k : tensor<8x4xf32>, tensor<f32> -> tensor<8x4xf32>
    %lr = tg.lr_schedule %step, %base_lr {total_steps = 10 : i64} : tensor<i64>, tensor<f32> -> tensor<f32>
    %n0 = tg.optimizer_update sgd %w0, %m0, %lr, %step : tensor<8x8xf32>, tensor<8x8xf32>, tensor<f32>, tensor<i64> -> tensor<8x8xf32>
    %n1 = tg.optimizer_update sgd %w1, %m1, %lr, %step : tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>, tensor<i64> -> tensor<8x4xf32>
    return %n0, %n1, %lr : tensor<8x8xf32>, tensor<8x4xf32>, tensor<f32>
  }
}
