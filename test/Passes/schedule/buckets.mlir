// RUN: tg-opt %s -split-input-file -tg-schedule | FileCheck %s
// RUN: tg-opt %s -split-input-file -tg-schedule="bucket-bytes=0" | FileCheck %s --check-prefix=EACH

// Gradients of 4 KiB each (f32 32x32) against buckets of 25 MiB: one bucket,
// right after the last gradient is produced, not where the all-reduce stood;
// its first reader waits for it.
// CHECK-LABEL: func.func @one_bucket_after_last_gradient
// CHECK:       %[[G2:.+]] = tg.neg %arg1
// CHECK:       %[[G1:.+]] = tg.exp %arg0
// CHECK-NEXT:  %[[R:.+]]:2 = tg.all_reduce %[[G2]], %[[G1]] {bucket = 0 : i64, reduction = #tg<reduction mean>}
// CHECK-NEXT:  tg.tanh %arg2
// CHECK:       tg.await %[[R]]#0, %[[R]]#1 :
// CHECK-NEXT:  tg.add %[[R]]#1, %[[R]]#0 :

// bucket-bytes=0: each gradient is its own bucket, reduced as soon as it is
// produced, in the order they are produced.
// EACH-LABEL: func.func @one_bucket_after_last_gradient
// EACH:       %[[G2:.+]] = tg.neg %arg1
// EACH-NEXT:  %[[R0:.+]] = tg.all_reduce %[[G2]] {bucket = 0 : i64
// EACH-NEXT:  %[[G1:.+]] = tg.exp %arg0
// EACH-NEXT:  %[[R1:.+]] = tg.all_reduce %[[G1]] {bucket = 1 : i64
// EACH:       tg.await %[[R0]] :
// EACH-NEXT:  tg.await %[[R1]] :
// EACH-NEXT:  tg.add %[[R1]], %[[R0]] :
func.func @one_bucket_after_last_gradient(%a: tensor<32x32xf32>, %b: tensor<32x32xf32>, %c: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %g2 = tg.neg %b : tensor<32x32xf32>
  %g1 = tg.exp %a : tensor<32x32xf32>
  %t = tg.tanh %c : tensor<32x32xf32>
  %r:2 = tg.all_reduce %g1, %g2 {reduction = #tg<reduction mean>} : tensor<32x32xf32>, tensor<32x32xf32>
  %s = tg.add %r#0, %r#1 : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
  %u = tg.add %s, %t : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
  return %u : tensor<32x32xf32>
}

// -----

// A bucket closes once it holds bucket-bytes: 25 MiB buckets of 16 MiB
// gradients take two each.
// CHECK-LABEL: func.func @buckets_close_at_the_cap
// CHECK:       tg.all_reduce %{{.+}}, %{{.+}} {bucket = 0 : i64
// CHECK:       tg.all_reduce %{{.+}} {bucket = 1 : i64
// CHECK-NOT:   tg.all_reduce
func.func @buckets_close_at_the_cap(%a: tensor<4096x1024xf32>) -> (tensor<4096x1024xf32>, tensor<4096x1024xf32>, tensor<4096x1024xf32>) {
  %g0 = tg.neg %a : tensor<4096x1024xf32>
  %g1 = tg.exp %a : tensor<4096x1024xf32>
  %g2 = tg.tanh %a : tensor<4096x1024xf32>
  %r:3 = tg.all_reduce %g0, %g1, %g2 : tensor<4096x1024xf32>, tensor<4096x1024xf32>, tensor<4096x1024xf32>
  return %r#0, %r#1, %r#2 : tensor<4096x1024xf32>, tensor<4096x1024xf32>, tensor<4096x1024xf32>
}

// -----

// One message holds one element type: a bf16 gradient starts a bucket of its
// own. A result only returned makes the return wait.
// CHECK-LABEL: func.func @element_types_split_buckets
// CHECK:       tg.all_reduce %{{.+}} {bucket = 0 : i64{{.*}} : tensor<8xf32>
// CHECK:       tg.all_reduce %{{.+}} {bucket = 1 : i64{{.*}} : tensor<8xbf16>
// CHECK:       tg.await %[[F:.+]] : tensor<8xf32>
// CHECK-NEXT:  tg.await %[[B:.+]] : tensor<8xbf16>
// CHECK-NEXT:  return %[[F]], %[[B]] :
func.func @element_types_split_buckets(%a: tensor<8xf32>, %b: tensor<8xbf16>) -> (tensor<8xf32>, tensor<8xbf16>) {
  %g0 = tg.neg %a : tensor<8xf32>
  %g1 = tg.neg %b : tensor<8xbf16>
  %r:2 = tg.all_reduce %g0, %g1 : tensor<8xf32>, tensor<8xbf16>
  return %r#0, %r#1 : tensor<8xf32>, tensor<8xbf16>
}

// -----

// An all-reduce that already is a bucket stays as it is; new buckets are
// numbered after it.
// CHECK-LABEL: func.func @existing_buckets_kept
// CHECK:       tg.all_reduce %arg0 {bucket = 3 : i64
// CHECK:       tg.all_reduce %{{.+}} {bucket = 4 : i64
func.func @existing_buckets_kept(%a: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %r0 = tg.all_reduce %a {bucket = 3 : i64} : tensor<8xf32>
  tg.await %r0 : tensor<8xf32>
  %g = tg.neg %r0 : tensor<8xf32>
  %r1 = tg.all_reduce %g : tensor<8xf32>
  return %r0, %r1 : tensor<8xf32>, tensor<8xf32>
}
