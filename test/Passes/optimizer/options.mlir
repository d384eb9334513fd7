// RUN: tg-opt %s -tg-autodiff -tg-optimizer="optimizer=lion weight-decay=0.5 schedule=linear total-steps=50" | FileCheck %s

// Pass options override the training table, as tgc's flags do.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: {tg.state = "p.exp_avg"}
// CHECK: tg.lr_schedule {{.*}} {kind = "linear", total_steps = 50 : i64}
// CHECK: tg.optimizer_update "lion" {{.*}}weight_decay = 5.000000e-01 : f64
module attributes {tg.training = {optimizer = {kind = "adamw", weight_decay = 0.1 : f64}}} {
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

