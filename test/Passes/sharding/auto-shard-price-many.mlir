// RUN: tg-opt %s --tg-auto-shard="price-current=true" -o /dev/null 2>&1 | FileCheck %s
// The solver's CBC missing: said at the step, and the plan searched
// without it.
// RUN: tg-opt %s --tg-auto-shard="cbc=%t.no-such-cbc time-limit=2" 2>&1 | FileCheck %s --check-prefix=NOCBC
// NOCBC: auto-shard-price-many.mlir:{{[0-9]+}}:1: warning: tg-auto-shard: no CBC program '{{.*}}no-such-cbc' (Debian package coinor-cbc); the plan was searched without CBC
// NOCBC: tg.auto_shard = {

// price-current names the first ten nodes whose shardings no strategy of
// the solver's has, then counts them all in one warning: eleven weights
// pinned to a sharding the solver never proposes (split over both axes, tp
// major).
// CHECK-COUNT-10: warning: price-current: no strategy of the solver's gives [{"tp", "data"}, {}] for w{{[0-9]}}
// CHECK-NOT:      for w10
// CHECK:          auto-shard-price-many.mlir:{{[0-9]+}}:1: warning: price-current: 11 nodes in all have no strategy of the solver's for their shardings; each was priced at its first

tg.mesh @mesh ["data" = 2, "tp" = 2]
func.func @train_step(%w0: tensor<64x16xf32> {tg.param = "w0", tg.sharding = #tg.sharding<@mesh, [{"tp", "data"}, {}]>},
    %w1: tensor<64x16xf32> {tg.param = "w1", tg.sharding = #tg.sharding<@mesh, [{"tp", "data"}, {}]>},
    %w2: tensor<64x16xf32> {tg.param = "w2", tg.sharding = #tg.sharding<@mesh, [{"tp", "data"}, {}]>},
    %w3: tensor<64x16xf32> {tg.param = "w3", tg.sharding = #tg.sharding<@mesh, [{"tp", "data"}, {}]>},
    %w4: tensor<64x16xf32> {tg.param = "w4", tg.sharding = #tg.sharding<@mesh, [{"tp", "data"}, {}]>},
    %w5: tensor<64x16xf32> {tg.param = "w5", tg.sharding = #tg.sharding<@mesh, [{"tp", "data"}, {}]>},
    %w6: tensor<64x16xf32> {tg.param = "w6", tg.sharding = #tg.sharding<@mesh, [{"tp", "data"}, {}]>},
    %w7: tensor<64x16xf32> {tg.param = "w7", tg.sharding = #tg.sharding<@mesh, [{"tp", "data"}, {}]>},
    %w8: tensor<64x16xf32> {tg.param = "w8", tg.sharding = #tg.sharding<@mesh, [{"tp", "data"}, {}]>},
    %w9: tensor<64x16xf32> {tg.param = "w9", tg.sharding = #tg.sharding<@mesh, [{"tp", "data"}, {}]>},
    %w10: tensor<64x16xf32> {tg.param = "w10", tg.sharding = #tg.sharding<@mesh, [{"tp", "data"}, {}]>},
    %x: tensor<32x64xf32> {tg.dim_names = ["batch", ""], tg.input = "x"},
    %y: tensor<32xi64> {tg.dim_names = ["batch"], tg.input = "y"})
    -> (tensor<f32> {tg.metric = "loss"}) {
  %z0 = tg.matmul %x, %w0 : tensor<32x64xf32>, tensor<64x16xf32> -> tensor<32x16xf32>
  %z1 = tg.matmul %x, %w1 : tensor<32x64xf32>, tensor<64x16xf32> -> tensor<32x16xf32>
  %z2 = tg.matmul %x, %w2 : tensor<32x64xf32>, tensor<64x16xf32> -> tensor<32x16xf32>
  %z3 = tg.matmul %x, %w3 : tensor<32x64xf32>, tensor<64x16xf32> -> tensor<32x16xf32>
  %z4 = tg.matmul %x, %w4 : tensor<32x64xf32>, tensor<64x16xf32> -> tensor<32x16xf32>
  %z5 = tg.matmul %x, %w5 : tensor<32x64xf32>, tensor<64x16xf32> -> tensor<32x16xf32>
  %z6 = tg.matmul %x, %w6 : tensor<32x64xf32>, tensor<64x16xf32> -> tensor<32x16xf32>
  %z7 = tg.matmul %x, %w7 : tensor<32x64xf32>, tensor<64x16xf32> -> tensor<32x16xf32>
  %z8 = tg.matmul %x, %w8 : tensor<32x64xf32>, tensor<64x16xf32> -> tensor<32x16xf32>
  %z9 = tg.matmul %x, %w9 : tensor<32x64xf32>, tensor<64x16xf32> -> tensor<32x16xf32>
  %z10 = tg.matmul %x, %w10 : tensor<32x64xf32>, tensor<64x16xf32> -> tensor<32x16xf32>
  %s1 = tg.add %z0, %z1 : tensor<32x16xf32>, tensor<32x16xf32> -> tensor<32x16xf32>
  %s2 = tg.add %s1, %z2 : tensor<32x16xf32>, tensor<32x16xf32> -> tensor<32x16xf32>
  %s3 = tg.add %s2, %z3 : tensor<32x16xf32>, tensor<32x16xf32> -> tensor<32x16xf32>
  %s4 = tg.add %s3, %z4 : tensor<32x16xf32>, tensor<32x16xf32> -> tensor<32x16xf32>
  %s5 = tg.add %s4, %z5 : tensor<32x16xf32>, tensor<32x16xf32> -> tensor<32x16xf32>
  %s6 = tg.add %s5, %z6 : tensor<32x16xf32>, tensor<32x16xf32> -> tensor<32x16xf32>
  %s7 = tg.add %s6, %z7 : tensor<32x16xf32>, tensor<32x16xf32> -> tensor<32x16xf32>
  %s8 = tg.add %s7, %z8 : tensor<32x16xf32>, tensor<32x16xf32> -> tensor<32x16xf32>
  %s9 = tg.add %s8, %z9 : tensor<32x16xf32>, tensor<32x16xf32> -> tensor<32x16xf32>
  %s10 = tg.add %s9, %z10 : tensor<32x16xf32>, tensor<32x16xf32> -> tensor<32x16xf32>
  %loss = tg.cross_entropy %s10, %y : tensor<32x16xf32>, tensor<32xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
