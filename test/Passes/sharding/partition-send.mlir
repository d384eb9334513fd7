// A point-to-point op in a model's own IR goes through tg-partition (which
// has no value of it to describe) to the backend, which says it cannot
// print it: an error that names the op, not a crash.
// RUN: not tgc %s --emit=cpp -o %t.cpp 2>&1 | FileCheck %s
// CHECK: partition-send.mlir:[[@LINE+5]]:5: error: cpu backend: no lowering for 'tg.send'
module attributes {tg.model = "m"} {
  tg.mesh @mesh ["data" = 2]
  func.func @forward(%w: tensor<4x4xf32> {tg.param = "w"}, %x: tensor<2x4xf32> {tg.input = "x"}) -> (tensor<f32> {tg.output = "loss"}) {
    %h = tg.matmul %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    tg.send %h {mesh_axis = "data", offset = 1, tag = 0} : tensor<2x4xf32>
    %l = tg.reduce_sum %h : tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
