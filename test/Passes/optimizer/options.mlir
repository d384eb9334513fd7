// RUN: tg-opt %s -tg-autodiff -tg-optimizer="optimizer=lion weight-decay=0.5 schedule=linear total-steps=50" | FileCheck %s
// RUN: not tg-opt %s -tg-autodiff -tg-optimizer="schedule=exp" 2>&1 | FileCheck %s --check-prefix=BAD

// Pass options override the training table, as tgc's flags do.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: {tg.state = "p.exp_avg"}
// CHECK: tg.lr_schedule {{.*}} {kind = #tg<schedule linear>, total_steps = 50 : i64}
// CHECK: tg.optimizer_update lion {{.*}}weight_decay = 5.000000e-01 : f64
module attributes {tg.training = {optimizer = {kind = "adamw", weight_decay = 0.1 : f64}}} {
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// An option names its kind as the table does; one that names none is an
// error that says it came from the option.
// BAD: error: tg-optimizer: option schedule: unknown value 'exp'; expected one of constant, cosine, linear, step, cyclic, wsd
