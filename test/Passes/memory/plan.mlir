// RUN: tg-opt %s -split-input-file -tg-plan-memory -tg-verify-memory | FileCheck %s
// RUN: tg-opt %s -split-input-file -tg-plan-memory="alignment=256 attention-statistics=true" -tg-verify-memory | FileCheck %s --check-prefix=CUDA
// RUN: not tg-opt %s -split-input-file -tg-plan-memory="alignment=3" 2>&1 | FileCheck %s --check-prefix=ALIGN
// ALIGN: error: tg-plan-memory: alignment must be a power of two, got 3

// A chain: each result takes a block, given back after its last reader;
// the reshape views its operand; constants and arguments need no arena.
// The peak meets the lower bound.
// CHECK-LABEL: func.func @chain
// CHECK-SAME:  attributes {tg.arena = #tg.arena<bytes = 4096, live = 4096, alignment = 64>}
// CHECK:       tg.constant {{.*}}: tensor<f32>
// CHECK-NOT:   tg.place
// CHECK:       tg.mul {{.*}} {tg.place = #tg.place<[0]>}
// CHECK:       tg.exp {{.*}} {tg.place = #tg.place<[2048]>}
// CHECK:       tg.reshape {{.*}} {tg.place = #tg.place<[view 0]>}
// CHECK:       tg.neg {{.*}} {tg.place = #tg.place<[0]>}
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
// CHECK-SAME:  tg.arena = #tg.arena<bytes = 6144, live = 6144, alignment = 64>
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
// CHECK:       tg.all_reduce {{.*}}tg.bucket_span = #tg.span<offset = 0, bytes = 256>, tg.place = #tg.place<[view 0]>
// CHECK:       tg.optimizer_update {{.*}}tg.place = #tg.place<[view 0, view 4]>
func.func @in_place(%p: tensor<64xf32>, %g: tensor<64xf32>, %lr: tensor<f32>, %step: tensor<i64>, %m: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %n = tg.neg %g : tensor<64xf32>
  %r = tg.all_reduce %n {reduction = #tg<reduction mean>} : tensor<64xf32>
  %new, %state = tg.optimizer_update sgd %p, %r, %lr, %step, %m {momentum = 0.9 : f64} : tensor<64xf32>, tensor<64xf32>, tensor<f32>, tensor<i64>, tensor<64xf32> -> tensor<64xf32>, tensor<64xf32>
  return %new, %state : tensor<64xf32>, tensor<64xf32>
}

// -----

// A bucket is one message: its gradients side by side, each at a multiple
// of the alignment. %a is reduced in place (computed in the bucket); %b is
// read again, so it is copied in. The bucket is taken when %a is computed
// and stays taken until the op that waits for it, though nothing reads its
// results before: %late cannot reuse its bytes.
// CHECK-LABEL: func.func @bucket
// CHECK:       %[[A:.+]] = tg.neg %arg0 {tg.place = #tg.place<{{\[}}[[A_AT:[0-9]+]]]>}
// CHECK:       tg.all_reduce %[[A]], %{{.+}} {bucket = 0 : i64, tg.bucket_span = #tg.span<offset = [[A_AT]], bytes = 384>, tg.place = #tg.place<[view 0, {{[0-9]+}}]>}
// CUDA-LABEL: func.func @bucket
// CUDA-SAME:  alignment = 256>
// CUDA:       tg.all_reduce {{.*}}tg.bucket_span = #tg.span<offset = {{[0-9]+}}, bytes = 512>
func.func @bucket(%x: tensor<64xf32>, %y: tensor<32xf32>) -> (tensor<64xf32>, tensor<32xf32>, tensor<32xf32>) {
  %a = tg.neg %x : tensor<64xf32>
  %b = tg.exp %y : tensor<32xf32>
  %r:2 = tg.all_reduce %a, %b {bucket = 0 : i64, reduction = #tg<reduction sum>} : tensor<64xf32>, tensor<32xf32>
  %late = tg.abs %b : tensor<32xf32>
  tg.await %r#0, %r#1 : tensor<64xf32>, tensor<32xf32>
  %w = tg.neg %r#0 : tensor<64xf32>
  return %w, %r#1, %late : tensor<64xf32>, tensor<32xf32>, tensor<32xf32>
}

// -----

// The classifier writes the gradient over the logits nothing else reads;
// an optimizer kernel writes over the parameter.
// CHECK-LABEL: func.func @kernels_in_place
// CHECK:       tg.kernel classifier{{.*}}tg.place = #tg.place<[{{[0-9]+}}, view 0]>
// CHECK:       tg.kernel optimizer{{.*}}tg.place = #tg.place<[view 0]>
func.func @kernels_in_place(%x: tensor<8x10xf32>, %labels: tensor<8xi64>, %p: tensor<8x10xf32>, %s: tensor<f32>, %lr: tensor<f32>, %step: tensor<i64>) -> (tensor<f32>, tensor<8x10xf32>) {
  %logits = tg.neg %x : tensor<8x10xf32>
  %one = tg.constant dense<1.0> : tensor<f32>
  %k:2 = tg.kernel classifier (%logits, %labels, %one : tensor<8x10xf32>, tensor<8xi64>, tensor<f32>) {
  ^bb0(%l: tensor<8x10xf32>, %y: tensor<8xi64>, %g: tensor<f32>):
    %loss = tg.cross_entropy %l, %y : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
    %d = tg.cross_entropy_grad %g, %l, %y : tensor<f32>, tensor<8x10xf32>, tensor<8xi64> -> tensor<8x10xf32>
    tg.yield %loss, %d : tensor<f32>, tensor<8x10xf32>
  } -> tensor<f32>, tensor<8x10xf32>
  %u = tg.kernel optimizer (%p, %k#1, %s, %lr, %step : tensor<8x10xf32>, tensor<8x10xf32>, tensor<f32>, tensor<f32>, tensor<i64>) {
  ^bb0(%q: tensor<8x10xf32>, %gr: tensor<8x10xf32>, %c: tensor<f32>, %l: tensor<f32>, %t: tensor<i64>):
    %1 = tg.optimizer_update sgd %q, %gr, %l, %t grad_scale %c : tensor<8x10xf32>, tensor<8x10xf32>, tensor<f32>, tensor<i64> -> tensor<8x10xf32>
    tg.yield %1 : tensor<8x10xf32>
  } -> tensor<8x10xf32>
  return %k#0, %u : tensor<f32>, tensor<8x10xf32>
}

// -----

// With attention-statistics (CUDA), the forward keeps its output and one
// f32 per query row (2x2x16 rows: 128 bytes, aligned to 256) until its
// gradient reads them; without, it keeps nothing.
// CHECK-LABEL: func.func @attention
// CHECK-NOT:   tg.scratch
// CUDA-LABEL: func.func @attention
// CUDA:       tg.attention {{.*}}tg.scratch = #tg.span<offset = {{[0-9]+}}, bytes = 256>
func.func @attention(%q: tensor<2x2x16x8xf32>, %g: tensor<2x2x16x8xf32>) -> (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) {
  %o = tg.attention %q, %q, %q {causal = true} : tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32> -> tensor<2x2x16x8xf32>
  %n = tg.neg %o : tensor<2x2x16x8xf32>
  %dq, %dk, %dv = tg.attention_grad %g, %q, %q, %q {causal = true} : (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) -> (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>)
  return %n, %dq : tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>
}
