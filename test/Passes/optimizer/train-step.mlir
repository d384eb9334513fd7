// RUN: tg-opt %s -tg-autodiff -tg-optimizer -split-input-file | FileCheck %s

// AdamW with warmup + cosine, clipping and no decay for biases, as the
// training table says.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[W:[^:]+]]: tensor<4x3xf32> {tg.param = "fc.weight"}
// CHECK-SAME: %[[B:[^:]+]]: tensor<3xf32> {tg.param = "fc.bias"}
// CHECK-SAME: %[[WM:[^:]+]]: tensor<4x3xf32> {tg.state = "fc.weight.exp_avg"}
// CHECK-SAME: %[[WV:[^:]+]]: tensor<4x3xf32> {tg.state = "fc.weight.exp_avg_sq"}
// CHECK-SAME: %[[BM:[^:]+]]: tensor<3xf32> {tg.state = "fc.bias.exp_avg"}
// CHECK-SAME: %[[BV:[^:]+]]: tensor<3xf32> {tg.state = "fc.bias.exp_avg_sq"}
// CHECK-SAME: %[[X:[^:]+]]: tensor<8x4xf32> {tg.input = "x"}
// CHECK-SAME: %[[STEP:[^:]+]]: tensor<i64> {tg.scalar = "step"}
// CHECK-SAME: %[[LR0:[^:]+]]: tensor<f32> {tg.scalar = "base_lr"}
// CHECK-SAME: -> (tensor<4x3xf32> {tg.update = "fc.weight"}, tensor<3xf32> {tg.update = "fc.bias"},
// CHECK-SAME: tensor<f32> {tg.metric = "loss"}, tensor<f32> {tg.metric = "grad_norm"}, tensor<f32> {tg.metric = "lr"})
// CHECK-NOT: tg.all_reduce
// CHECK: %[[NORM:.+]] = tg.global_norm %{{.+}}, %{{.+}} :
// CHECK: %[[COEF:.+]] = tg.div %{{.+}}, %{{.+}} : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK: %[[SCALE:.+]] = tg.minimum %[[COEF]]
// CHECK: %[[LR:.+]] = tg.lr_schedule %[[STEP]], %[[LR0]] {kind = #tg<schedule cosine>, total_steps = 100 : i64, warmup_steps = 10 : i64}
// CHECK: tg.optimizer_update adamw %[[W]], %{{.+}}, %[[LR]], %[[STEP]], %[[WM]], %[[WV]] {beta2 = 0.94999998807907104 : f64, weight_decay = 1.000000e-01 : f64}
// CHECK: tg.optimizer_update adamw %[[B]], %{{.+}}, %[[LR]], %[[STEP]], %[[BM]], %[[BV]] {beta2 = 0.94999998807907104 : f64}
// CHECK: return
module attributes {tg.training = {optimizer = {kind = "adamw", lr = 1.0e-3 : f64, beta2 = 0.95 : f32, weight_decay = 0.1 : f64, no_decay = ["*.bias"], clip_grad_norm = 1.0 : f64},
                                  schedule = {kind = "cosine", warmup_steps = 10 : i64, total_steps = 100 : i64}}} {
  func.func @forward(%w: tensor<4x3xf32> {tg.param = "fc.weight"}, %b: tensor<3xf32> {tg.param = "fc.bias"},
                     %x: tensor<8x4xf32> {tg.input = "x"}) -> tensor<f32> {
    %h = tg.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
    %l = tg.add %h, %b : tensor<8x3xf32>, tensor<3xf32> -> tensor<8x3xf32>
    %s = tg.reduce_mean %l : tensor<8x3xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// SGD with momentum keeps one buffer per parameter; no clipping when the
// table does not ask for it.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: {tg.state = "p.momentum_buffer"}
// CHECK-NOT: tg.minimum
// CHECK: tg.lr_schedule %{{.+}}, %{{.+}} : tensor<i64>, tensor<f32> -> tensor<f32>
// CHECK: tg.optimizer_update sgd {{.*}} {momentum = 9.000000e-01 : f64, nesterov = true}
module attributes {tg.training = {optimizer = {kind = "sgd", momentum = 0.9 : f64, nesterov = true}}} {
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// With grad_accum the step takes the gradient summed over the earlier
// micro-batches and the micro-batch count, and averages them.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[P:[^:]+]]: tensor<4xf32> {tg.param = "p"}
// CHECK-SAME: %[[STEP:[^:]+]]: tensor<i64> {tg.scalar = "step"}
// CHECK-SAME: %[[LR0:[^:]+]]: tensor<f32> {tg.scalar = "base_lr"}
// CHECK-SAME: %[[ACC:[^:]+]]: tensor<4xf32> {tg.accum = "p"}
// CHECK-SAME: %[[MB:[^:]+]]: tensor<i32> {tg.scalar = "micro_batches"}
// CHECK: %[[MBF:.+]] = tg.cast %[[MB]] : tensor<i32> to tensor<f32>
// CHECK: %[[SUM:.+]] = tg.add %{{.+}}, %[[ACC]] : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// CHECK: %[[MEAN:.+]] = tg.div %[[SUM]], %[[MBF]] : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
// CHECK: tg.global_norm %[[MEAN]]
// CHECK: tg.optimizer_update sgd %[[P]], %[[MEAN]],
module attributes {tg.training = {grad_accum = 4 : i64, optimizer = {kind = "sgd"}}} {
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}
