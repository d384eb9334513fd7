// An elastic data axis (--mesh=data=auto) takes its size at launch, so the
// plan may only all-reduce over it: a pin that moves the batch's split to
// another dimension needs a gather over it, which tg-partition refuses,
// naming the op, the reshard and what to use instead.
// RUN: not tgc %s --emit=cpp -o %t.cpp 2>&1 | FileCheck %s
// CHECK: partition-elastic.mlir:[[@LINE+4]]:10: error: the plan needs tg.all_gather over the elastic mesh axis "data" (tg.matmul for a sharding pin: [{data}, {}] -> [{}, {data}]); an elastic axis (--mesh=data=auto) may only be all-reduced over: use --shard=dp, tp or sp, or a fixed --mesh=data=N
module attributes {tg.model = "m"} {
  tg.mesh @mesh ["data" = 2 elastic]
  func.func @forward(%w: tensor<4x4xf32> {tg.param = "w"}, %x: tensor<2x4xf32> {tg.input = "x", tg.dim_names = ["batch", ""]}) -> (tensor<f32> {tg.output = "loss"}) {
    %h = tg.matmul %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %p = tg.sharding_constraint %h <@mesh, [{}, {"data"}]> : tensor<2x4xf32>
    %q = tg.matmul %p, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %l = tg.reduce_sum %q : tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
