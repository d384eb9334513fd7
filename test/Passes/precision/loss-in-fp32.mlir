// RUN: tg-opt %s -tg-precision=policy=bf16 -split-input-file | FileCheck %s

// What stays f32 under bf16: ops whose results are scalars (the loss and the
// reductions that produce it, regularizers, metrics). A full reduction casts
// its bf16 input to f32, so the loss is not rounded to bf16.

// A mean squared error: the regression target is a float input and is cast
// like x; the difference and its square are bf16; the mean over everything
// is the loss and runs in f32.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[W:[^:]+]]: tensor<4x2xf32> {tg.param = "w"}, %[[X:[^:]+]]: tensor<8x4xf32> {tg.input = "x"}, %[[Y:[^:]+]]: tensor<8x2xf32> {tg.input = "y"})
// CHECK-NEXT: %[[WH:.+]] = tg.cast %[[W]] {tg.layer = "w"} : tensor<4x2xf32> to tensor<4x2xbf16>
// CHECK-NEXT: %[[XH:.+]] = tg.cast %[[X]] {tg.layer = "x"} : tensor<8x4xf32> to tensor<8x4xbf16>
// CHECK-NEXT: %[[YH:.+]] = tg.cast %[[Y]] {tg.layer = "y"} : tensor<8x2xf32> to tensor<8x2xbf16>
// CHECK-NEXT: %[[P:.+]] = tg.matmul %[[XH]], %[[WH]] : tensor<8x4xbf16>, tensor<4x2xbf16> -> tensor<8x2xbf16>
// CHECK-NEXT: %[[D:.+]] = tg.sub %[[P]], %[[YH]] : tensor<8x2xbf16>, tensor<8x2xbf16> -> tensor<8x2xbf16>
// CHECK-NEXT: %[[SQ:.+]] = tg.mul %[[D]], %[[D]] : tensor<8x2xbf16>, tensor<8x2xbf16> -> tensor<8x2xbf16>
// CHECK-NEXT: %[[SQF:.+]] = tg.cast %[[SQ]] : tensor<8x2xbf16> to tensor<8x2xf32>
// CHECK-NEXT: %[[L:.+]] = tg.reduce_mean %[[SQF]] : tensor<8x2xf32> -> tensor<f32>
// CHECK-NEXT: return %[[L]] : tensor<f32>
func.func @forward(%w: tensor<4x2xf32> {tg.param = "w"}, %x: tensor<8x4xf32> {tg.input = "x"},
                   %y: tensor<8x2xf32> {tg.input = "y"}) -> tensor<f32> {
  %p = tg.matmul %x, %w : tensor<8x4xf32>, tensor<4x2xf32> -> tensor<8x2xf32>
  %d = tg.sub %p, %y : tensor<8x2xf32>, tensor<8x2xf32> -> tensor<8x2xf32>
  %sq = tg.mul %d, %d : tensor<8x2xf32>, tensor<8x2xf32> -> tensor<8x2xf32>
  %l = tg.reduce_mean %sq : tensor<8x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A weight penalty added to the loss: w * w is bf16 (parameter-sized), its
// sum and everything after it on scalars are f32, the constant included.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[W:[^:]+]]: tensor<4x3xf32> {tg.param = "w"}, %[[X:[^:]+]]: tensor<8x4xf32> {tg.input = "x"}, %[[Y:[^:]+]]: tensor<8xi64> {tg.input = "y"})
// CHECK: %[[WH:.+]] = tg.cast %[[W]] {tg.layer = "w"} : tensor<4x3xf32> to tensor<4x3xbf16>
// CHECK: %[[CE:.+]] = tg.cross_entropy %{{.+}}, %[[Y]] : tensor<8x3xbf16>, tensor<8xi64> -> tensor<f32>
// CHECK: %[[W2:.+]] = tg.mul %[[WH]], %[[WH]] : tensor<4x3xbf16>, tensor<4x3xbf16> -> tensor<4x3xbf16>
// CHECK: %[[W2F:.+]] = tg.cast %[[W2]] : tensor<4x3xbf16> to tensor<4x3xf32>
// CHECK: %[[S:.+]] = tg.reduce_sum %[[W2F]] : tensor<4x3xf32> -> tensor<f32>
// CHECK: %[[C:.+]] = tg.constant dense<0.00999999977> : tensor<f32>
// CHECK: %[[P:.+]] = tg.mul %[[S]], %[[C]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK: %[[L:.+]] = tg.add %[[CE]], %[[P]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK: return %[[L]] : tensor<f32>
func.func @forward(%w: tensor<4x3xf32> {tg.param = "w"}, %x: tensor<8x4xf32> {tg.input = "x"},
                   %y: tensor<8xi64> {tg.input = "y"}) -> tensor<f32> {
  %h = tg.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %ce = tg.cross_entropy %h, %y : tensor<8x3xf32>, tensor<8xi64> -> tensor<f32>
  %w2 = tg.mul %w, %w : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  %s = tg.reduce_sum %w2 : tensor<4x3xf32> -> tensor<f32>
  %c = tg.constant dense<0.01> : tensor<f32>
  %p = tg.mul %s, %c : tensor<f32>, tensor<f32> -> tensor<f32>
  %l = tg.add %ce, %p : tensor<f32>, tensor<f32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Partial reductions keep bf16 storage (the kernels accumulate in f32): a
// mean over the sequence is bf16 and feeds a bf16 classifier.
// CHECK-LABEL: func.func @forward
// CHECK: %[[POOL:.+]] = tg.reduce_mean %{{.+}} {dims = array<i64: 1>} : tensor<2x16x8xbf16> -> tensor<2x8xbf16>
// CHECK-NEXT: %[[LOGITS:.+]] = tg.matmul %[[POOL]], %{{.+}} : tensor<2x8xbf16>, tensor<8x5xbf16> -> tensor<2x5xbf16>
// CHECK-NEXT: tg.cross_entropy %[[LOGITS]], %{{.+}} : tensor<2x5xbf16>, tensor<2xi64> -> tensor<f32>
func.func @forward(%w: tensor<8x5xf32> {tg.param = "head"}, %x: tensor<2x16x8xf32> {tg.input = "x"},
                   %y: tensor<2xi64> {tg.input = "y"}) -> tensor<f32> {
  %pool = tg.reduce_mean %x {dims = array<i64: 1>} : tensor<2x16x8xf32> -> tensor<2x8xf32>
  %logits = tg.matmul %pool, %w : tensor<2x8xf32>, tensor<8x5xf32> -> tensor<2x5xf32>
  %l = tg.cross_entropy %logits, %y : tensor<2x5xf32>, tensor<2xi64> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Per-token losses come out of tg.cross_entropy in f32; their mean needs no
// cast.
// CHECK-LABEL: func.func @forward
// CHECK: %[[PER:.+]] = tg.cross_entropy %{{.+}}, %{{.+}} {reduction = #tg<loss_reduction none>} : tensor<2x4x16xbf16>, tensor<2x4xi64> -> tensor<2x4xf32>
// CHECK-NEXT: %[[L:.+]] = tg.reduce_mean %[[PER]] : tensor<2x4xf32> -> tensor<f32>
// CHECK-NEXT: return %[[L]]
func.func @forward(%w: tensor<8x16xf32> {tg.param = "w"}, %x: tensor<2x4x8xf32> {tg.input = "x"},
                   %y: tensor<2x4xi64> {tg.input = "y"}) -> tensor<f32> {
  %logits = tg.matmul %x, %w : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32>
  %per = tg.cross_entropy %logits, %y {reduction = #tg<loss_reduction none>} : tensor<2x4x16xf32>, tensor<2x4xi64> -> tensor<2x4xf32>
  %l = tg.reduce_mean %per : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The maximum of bf16 values is one of them: a full tg.reduce_max stays bf16
// and only its scalar result is widened for the f32 sum.
// CHECK-LABEL: func.func @forward
// CHECK: %[[CE:.+]] = tg.cross_entropy %[[LOGITS:.+]], %{{.+}} : tensor<8x3xbf16>, tensor<8xi64> -> tensor<f32>
// CHECK-NEXT: %[[MAX:.+]] = tg.reduce_max %[[LOGITS]] : tensor<8x3xbf16> -> tensor<bf16>
// CHECK-NEXT: %[[MAXF:.+]] = tg.cast %[[MAX]] : tensor<bf16> to tensor<f32>
// CHECK-NEXT: tg.add %[[CE]], %[[MAXF]] : tensor<f32>, tensor<f32> -> tensor<f32>
func.func @forward(%w: tensor<4x3xf32> {tg.param = "w"}, %x: tensor<8x4xf32> {tg.input = "x"},
                   %y: tensor<8xi64> {tg.input = "y"}) -> tensor<f32> {
  %h = tg.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %ce = tg.cross_entropy %h, %y : tensor<8x3xf32>, tensor<8xi64> -> tensor<f32>
  %m = tg.reduce_max %h : tensor<8x3xf32> -> tensor<f32>
  %l = tg.add %ce, %m : tensor<f32>, tensor<f32> -> tensor<f32>
  return %l : tensor<f32>
}
