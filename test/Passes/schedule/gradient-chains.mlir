// RUN: tg-opt %s -split-input-file -tg-schedule | FileCheck %s

// The division of an accumulated gradient feeds only the all-reduce: it
// moves up to just after the gradient's producer, so the bucket (placed
// after its last gradient) starts before the rest of the backward pass.
// CHECK-LABEL: func.func @chain_moves_to_its_producer
// CHECK:       %[[G:.+]] = tg.exp %arg0
// CHECK-NEXT:  %[[S:.+]] = tg.add %[[G]], %arg1
// CHECK-NEXT:  %[[D:.+]] = tg.div %[[S]], %arg2
// CHECK-NEXT:  %[[R:.+]] = tg.all_reduce %[[D]] {bucket = 0 : i64
// CHECK-NEXT:  tg.tanh %arg3
func.func @chain_moves_to_its_producer(%x: tensor<64xf32>, %acc: tensor<64xf32>, %n: tensor<f32>, %y: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %g = tg.exp %x : tensor<64xf32>
  %t = tg.tanh %y : tensor<64xf32>
  %s = tg.add %g, %acc : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %d = tg.div %s, %n : tensor<64xf32>, tensor<f32> -> tensor<64xf32>
  %r = tg.all_reduce %d {reduction = #tg<reduction mean>} : tensor<64xf32>
  return %r, %t : tensor<64xf32>, tensor<64xf32>
}

// -----

// A value read by anything besides the all-reduce chain stays where it is.
// CHECK-LABEL: func.func @shared_value_stays
// CHECK:       tg.exp %arg0
// CHECK-NEXT:  tg.tanh %arg1
// CHECK-NEXT:  tg.neg
// CHECK-NEXT:  tg.all_reduce
func.func @shared_value_stays(%x: tensor<64xf32>, %y: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %g = tg.exp %x : tensor<64xf32>
  %t = tg.tanh %y : tensor<64xf32>
  %n = tg.neg %t : tensor<64xf32>
  %r = tg.all_reduce %n : tensor<64xf32>
  return %r, %t : tensor<64xf32>, tensor<64xf32>
}

// -----

// The micro-batch count, cast from an argument after the backward pass, is
// read only by the divisions: it moves to the top, and each division then
// follows its own gradient.
// CHECK-LABEL: func.func @argument_only_op_moves_to_the_top
// CHECK-NEXT:  %[[N:.+]] = tg.cast %arg2
// CHECK-NEXT:  %[[G0:.+]] = tg.matmul %arg0, %arg0
// CHECK-NEXT:  tg.div %[[G0]], %[[N]]
// CHECK-NEXT:  %[[G1:.+]] = tg.matmul %arg1, %arg1
// CHECK-NEXT:  tg.div %[[G1]], %[[N]]
func.func @argument_only_op_moves_to_the_top(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>, %micro: tensor<i32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %g0 = tg.matmul %x, %x : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %g1 = tg.matmul %y, %y : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %n = tg.cast %micro : tensor<i32> to tensor<f32>
  %d0 = tg.div %g0, %n : tensor<8x8xf32>, tensor<f32> -> tensor<8x8xf32>
  %d1 = tg.div %g1, %n : tensor<8x8xf32>, tensor<f32> -> tensor<8x8xf32>
  %r:2 = tg.all_reduce %d0, %d1 {reduction = #tg<reduction mean>} : tensor<8x8xf32>, tensor<8x8xf32>
  return %r#0, %r#1 : tensor<8x8xf32>, tensor<8x8xf32>
}
