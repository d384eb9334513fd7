// RUN: tg-opt %s -split-input-file -tg-plan-memory -tg-verify-memory | FileCheck %s

// A chain: each result takes a block, given back after its last reader;
// the reshape views its operand; constants and arguments need no arena.
// The peak meets the lower bound.
// CHECK-LABEL: func.func @chain
// CHECK-SAME:  attributes {tg.arena_bytes = 4096 : i64, tg.live_bytes = 4096 : i64}
// CHECK:       tg.constant {{.*}}: tensor<f32>
// CHECK-NOT:   tg.offsets
// CHECK:       tg.mul {{.*}} {tg.offsets = array<i64: 0>}
// CHECK:       tg.exp {{.*}} {tg.offsets = array<i64: 2048>}
// CHECK:       tg.reshape {{.*}} {tg.offsets = array<i64: -1>, tg.views = array<i64: 0>}
// CHECK:       tg.neg {{.*}} {tg.offsets = array<i64: 0>}
func.func @chain(%x: tensor<8x64xf32>) -> tensor<512xf32> {
  %c = tg.constant dense<2.0> : tensor<f32>
  %m = tg.mul %x, %c : tensor<8x64xf32>, tensor<f32> -> tensor<8x64xf32>
  %e = tg.exp %m : tensor<8x64xf32>
  %r = tg.reshape %e : tensor<8x64xf32> -> tensor<512xf32>
  %n = tg.neg %r : tensor<512xf32>
  return %n : tensor<512xf32>
}

// -----

// A value read late keeps its block; buffers whose lives do not overlap
// share bytes, and the plan is placed by size when that is tighter.
// CHECK-LABEL: func.func @long_life
// CHECK-SAME:  tg.arena_bytes = 6144 : i64, tg.live_bytes = 6144 : i64
func.func @long_life(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %a = tg.exp %x : tensor<8x64xf32>
  %b = tg.neg %x : tensor<8x64xf32>
  %c = tg.tanh %b : tensor<8x64xf32>
  %d = tg.abs %c : tensor<8x64xf32>
  %e = tg.add %a, %d : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  return %e : tensor<8x64xf32>
}

// -----

// An all-reduce works in place when nothing else reads its input; the
// optimizer update writes over the parameter and its state.
// CHECK-LABEL: func.func @in_place
// CHECK:       tg.all_reduce {{.*}}tg.offsets = array<i64: -1>, tg.views = array<i64: 0>
// CHECK:       tg.optimizer_update {{.*}}tg.offsets = array<i64: -1, -1>, tg.views = array<i64: 0, 4>
func.func @in_place(%p: tensor<64xf32>, %g: tensor<64xf32>, %lr: tensor<f32>, %step: tensor<i64>, %m: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %n = tg.neg %g : tensor<64xf32>
  %r = tg.all_reduce %n {reduction = #tg<reduction mean>} : tensor<64xf32>
  %new, %state = tg.optimizer_update sgd %p, %r, %lr, %step, %m {momentum = 0.9 : f64} : tensor<64xf32>, tensor<64xf32>, tensor<f32>, tensor<i64>, tensor<64xf32> -> tensor<64xf32>, tensor<64xf32>
  return %new, %state : tensor<64xf32>, tensor<64xf32>
}
