// tg-auto-shard on a hand-written step (one linear layer, its loss and an
// SGD update on a 2 x 2 mesh), not one tgc generated. The graph it builds
// is fixed by the IR (7 nodes, 7 edges, nothing tied); which
// sharding the solver picks may depend on its time budget, so only that
// it pinned the parameter is checked. price-current prices the plan as
// given, with no search and no pin.
// RUN: tg-opt %s --tg-auto-shard="time-limit=5" | FileCheck %s
// RUN: tg-opt %s --tg-auto-shard="price-current=true" | FileCheck %s --check-prefix=PRICE

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: tg.param = "w", tg.sharding = #tg.sharding<@mesh, {{.*}}>, tg.sharding_origin = "solver"
// CHECK: tg.auto_shard = {cluster = "cpu-local", edges = 7 : i64, {{.*}}modelled_seconds = {{[0-9.]+([eE]-?[0-9]+)?}} : f64, nodes = 7 : i64, {{.*}}tied_nodes = 0 : i64}
// PRICE-NOT: tg.sharding_origin = "solver"
// PRICE: tg.auto_shard = {cluster = "cpu-local", edges = 7 : i64, {{.*}}method = "priced: the shardings given", modelled_seconds = {{[0-9.]+([eE]-?[0-9]+)?}} : f64, nodes = 7 : i64

tg.mesh @mesh ["data" = 2, "tp" = 2]
func.func @train_step(%w: tensor<64x16xf32> {tg.param = "w"},
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
