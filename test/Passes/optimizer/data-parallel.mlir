// RUN: tg-opt %s -tg-autodiff -tg-optimizer | FileCheck %s
// RUN: tg-opt %s -tg-autodiff -tg-optimizer="data-parallel=false grad-accum=1" | FileCheck %s --check-prefix=LOCAL

// By default the gradients are averaged over the data-parallel replicas, and
// the table's grad_accum adds the accumulated-gradient arguments.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: {tg.accum = "p"}
// CHECK: tg.all_reduce

// data-parallel=false leaves the gradients to this process alone;
// grad-accum=1 overrides the table's accumulation.
// LOCAL-LABEL: func.func @train_step
// LOCAL-NOT: tg.accum
// LOCAL-NOT: tg.all_reduce
// LOCAL: tg.optimizer_update adamw
module attributes {tg.training = {grad_accum = 8 : i64, optimizer = {kind = "adamw"}}} {
  func.func @forward(%p: tensor<4xf32> {tg.param = "p"}) -> tensor<f32> {
    %s = tg.reduce_sum %p : tensor<4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}
