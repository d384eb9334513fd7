// RUN: tg-opt %s --tg-auto-shard="price-current=true memory-limit=12000" -verify-diagnostics -o /dev/null
// RUN: not tg-opt %s --tg-auto-shard="cluster=dgx-9000" 2>&1 | FileCheck %s --check-prefix=CLUSTER
// RUN: rm -rf %t.nowhere
// RUN: not tg-opt %s --tg-auto-shard="time-limit=1 dump-problem=%t.nowhere/problem.json" 2>&1 | FileCheck %s --check-prefix=DUMP

// What tg-auto-shard warns of and refuses, on auto-shard-handwritten.mlir's
// step with its weight pinned to a sharding the solver never proposes
// (split over both axes, tp major).

// price-current prices the shardings given; one no strategy of the
// solver's has is priced as its first, and a plan over the memory limit
// is priced all the same, with a warning for each.

// A cluster that is neither shipped nor a file, and a problem file that
// cannot be written, are errors before anything is solved.
// CLUSTER: error: no shipped cluster spec is named 'dgx-9000' (shipped: {{.*}}; or give a JSON file's path)
// DUMP: error: {{.*}}nowhere/problem.json: cannot write: {{.*}}

tg.mesh @mesh ["data" = 2, "tp" = 2]
// expected-warning-re @+2 {{the shardings given break the solver's problem: usage {{[0-9]+}} exceeds the limit {{[0-9]+}} at time {{[0-9]+}}}}
// expected-warning @+1 {{price-current: no strategy of the solver's gives [{"tp", "data"}, {}] for w}}
func.func @train_step(%w: tensor<64x16xf32> {tg.param = "w", tg.sharding = #tg.sharding<@mesh, [{"tp", "data"}, {}]>},
                      %x: tensor<32x64xf32> {tg.dim_names = ["batch", ""], tg.input = "x"},
                      %y: tensor<32xi64> {tg.dim_names = ["batch"], tg.input = "y"},
                      %step: tensor<i64> {tg.scalar = "step"},
                      %base: tensor<f32> {tg.scalar = "base_lr"})
    -> (tensor<64x16xf32> {tg.update = "w"}, tensor<f32> {tg.metric = "loss"},
        tensor<f32> {tg.metric = "lr"}) {
  %one = tg.constant dense<1.000000e+00> : tensor<f32>
  %z = tg.matmul %x, %w : tensor<32x64xf32>, tensor<64x16xf32> -> tensor<32x16xf32>
  %loss = tg.cross_entropy %z, %y : tensor<32x16xf32>, tensor<32xi64> -> tensor<f32>
  %dz = tg.cross_entropy_grad %one, %z, %y : tensor<f32>, tensor<32x16xf32>, tensor<32xi64> -> tensor<32x16xf32>
  %dw = tg.matmul %x, %dz {transpose_lhs = true} : tensor<32x64xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  %lr = tg.lr_schedule %step, %base {kind = #tg<schedule cosine>, min_lr = 1.000000e-04 : f64, total_steps = 100 : i64, warmup_steps = 10 : i64} : tensor<i64>, tensor<f32> -> tensor<f32>
  %new = tg.optimizer_update sgd %w, %dw, %lr, %step : tensor<64x16xf32>, tensor<64x16xf32>, tensor<f32>, tensor<i64> -> tensor<64x16xf32>
  return %new, %loss, %lr : tensor<64x16xf32>, tensor<f32>, tensor<f32>
}
