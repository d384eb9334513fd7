// RUN: tg-opt %s -tg-autodiff -tg-optimizer | FileCheck %s
// RUN: tg-opt %s -tg-autodiff -tg-optimizer="grad-accum=1" | FileCheck %s --check-prefix=ONE

// The table's grad_accum adds the accumulated-gradient arguments; the step
// reduces nothing over processes (that is tg-partition's, over a mesh).
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: {tg.accum = "p"}
// CHECK-NOT: tg.all_reduce
// CHECK: tg.optimizer_update adamw

// grad-accum=1 overrides the table's accumulation.
// ONE-LABEL: func.func @train_step
// ONE-NOT: tg.accum
// ONE: tg.optimizer_update adamw
module attributes {tg.training = {grad_accum = 8 : i64, optimizer = {kind = "adamw"}}} {
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}
