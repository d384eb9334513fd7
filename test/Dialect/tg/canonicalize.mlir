// RUN: tg-opt %s -split-input-file -canonicalize | FileCheck %s

// The tg folders. Each removes an op only when the result is bit for bit the
// operand for every input, NaN, infinities and signed zeros included, and
// only when the types agree (an identity that broadcasts still changes the
// shape).

// x + (-0.0) is x for every x; x + (+0.0) is not (-0.0 + 0.0 is +0.0).
// CHECK-LABEL: func.func @add_negative_zero_folds
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4xf32>)
// CHECK-NOT: tg.add
// CHECK: return %[[X]], %[[X]] : tensor<4xf32>, tensor<4xf32>
func.func @add_negative_zero_folds(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %zero = tg.constant dense<-0.0> : tensor<4xf32>
  %0 = tg.add %x, %zero : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = tg.add %zero, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @add_positive_zero_keeps_float_add
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4xf32>)
// CHECK: %[[ZERO:.+]] = tg.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK: %[[SUM:.+]] = tg.add %[[X]], %[[ZERO]]
// CHECK: return %[[SUM]]
func.func @add_positive_zero_keeps_float_add(%x: tensor<4xf32>) -> tensor<4xf32> {
  %zero = tg.constant dense<0.0> : tensor<4xf32>
  %0 = tg.add %x, %zero : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Integers have one zero.
// CHECK-LABEL: func.func @add_integer_zero_folds
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4xi64>)
// CHECK-NOT: tg.add
// CHECK: return %[[X]], %[[X]] : tensor<4xi64>, tensor<4xi64>
func.func @add_integer_zero_folds(%x: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>) {
  %zero = tg.constant dense<0> : tensor<4xi64>
  %0 = tg.add %x, %zero : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  %1 = tg.add %zero, %x : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  return %0, %1 : tensor<4xi64>, tensor<4xi64>
}

// -----

// A scalar zero broadcasts without changing x's shape, so it still folds.
// CHECK-LABEL: func.func @add_scalar_zero_folds
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3xi32>)
// CHECK-NOT: tg.add
// CHECK: return %[[X]]
func.func @add_scalar_zero_folds(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %zero = tg.constant dense<0> : tensor<i32>
  %0 = tg.add %x, %zero : tensor<2x3xi32>, tensor<i32> -> tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}

// -----

// Adding a zero that broadcasts x to a larger shape is not x.
// CHECK-LABEL: func.func @add_zero_that_broadcasts_x_stays
// CHECK: %[[SUM:.+]] = tg.add %{{.+}}, %{{.+}} : tensor<4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
// CHECK: return %[[SUM]]
func.func @add_zero_that_broadcasts_x_stays(%x: tensor<4xf32>) -> tensor<3x4xf32> {
  %zero = tg.constant dense<-0.0> : tensor<3x4xf32>
  %0 = tg.add %x, %zero : tensor<4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// A constant that is not a splat, or a splat of another value, is no identity.
// CHECK-LABEL: func.func @add_non_identity_constants_stay
// CHECK-COUNT-2: tg.add
func.func @add_non_identity_constants_stay(%x: tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>) {
  %mixed = tg.constant dense<[0, 1]> : tensor<2xi32>
  %one = tg.constant dense<1> : tensor<2xi32>
  %0 = tg.add %x, %mixed : tensor<2xi32>, tensor<2xi32> -> tensor<2xi32>
  %1 = tg.add %x, %one : tensor<2xi32>, tensor<2xi32> -> tensor<2xi32>
  return %0, %1 : tensor<2xi32>, tensor<2xi32>
}

// -----

// x - (+0.0) is x for every x.
// CHECK-LABEL: func.func @sub_positive_zero_folds
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4xf32>)
// CHECK-NOT: tg.sub
// CHECK: return %[[X]]
func.func @sub_positive_zero_folds(%x: tensor<4xf32>) -> tensor<4xf32> {
  %zero = tg.constant dense<0.0> : tensor<f32>
  %0 = tg.sub %x, %zero : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// x - (-0.0) turns -0.0 into +0.0, and 0 - x is not x.
// CHECK-LABEL: func.func @sub_negative_zero_and_zero_minus_x_stay
// CHECK-COUNT-2: tg.sub
func.func @sub_negative_zero_and_zero_minus_x_stay(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %neg = tg.constant dense<-0.0> : tensor<4xf32>
  %pos = tg.constant dense<0.0> : tensor<4xf32>
  %0 = tg.sub %x, %neg : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = tg.sub %pos, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @sub_integer_zero_folds
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4xi32>)
// CHECK-NOT: tg.sub
// CHECK: return %[[X]]
func.func @sub_integer_zero_folds(%x: tensor<4xi32>) -> tensor<4xi32> {
  %zero = tg.constant dense<0> : tensor<4xi32>
  %0 = tg.sub %x, %zero : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// x - x is not 0 when x is NaN or infinite.
// CHECK-LABEL: func.func @sub_self_stays
// CHECK: tg.sub
func.func @sub_self_stays(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tg.sub %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @mul_one_on_either_side_folds
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x4xbf16>)
// CHECK-NOT: tg.mul
// CHECK: return %[[X]], %[[X]] : tensor<2x4xbf16>, tensor<2x4xbf16>
func.func @mul_one_on_either_side_folds(%x: tensor<2x4xbf16>) -> (tensor<2x4xbf16>, tensor<2x4xbf16>) {
  %one = tg.constant dense<1.0> : tensor<4xbf16>
  %0 = tg.mul %x, %one : tensor<2x4xbf16>, tensor<4xbf16> -> tensor<2x4xbf16>
  %1 = tg.mul %one, %x : tensor<4xbf16>, tensor<2x4xbf16> -> tensor<2x4xbf16>
  return %0, %1 : tensor<2x4xbf16>, tensor<2x4xbf16>
}

// -----

// CHECK-LABEL: func.func @mul_integer_one_folds
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4xi32>)
// CHECK-NOT: tg.mul
// CHECK: return %[[X]]
func.func @mul_integer_one_folds(%x: tensor<4xi32>) -> tensor<4xi32> {
  %one = tg.constant dense<1> : tensor<i32>
  %0 = tg.mul %one, %x : tensor<i32>, tensor<4xi32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// x * 0 is not 0 when x is NaN or infinite; x * 1 that broadcasts x is not x.
// CHECK-LABEL: func.func @mul_zero_and_broadcasting_one_stay
// CHECK: tg.mul %{{.+}}, %{{.+}} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// CHECK: tg.mul %{{.+}}, %{{.+}} : tensor<4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
func.func @mul_zero_and_broadcasting_one_stay(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<2x4xf32>) {
  %zero = tg.constant dense<0.0> : tensor<4xf32>
  %one = tg.constant dense<1.0> : tensor<2x4xf32>
  %0 = tg.mul %x, %zero : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = tg.mul %x, %one : tensor<4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %0, %1 : tensor<4xf32>, tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func.func @div_by_one_folds
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4xf16>)
// CHECK-NOT: tg.div
// CHECK: return %[[X]]
func.func @div_by_one_folds(%x: tensor<4xf16>) -> tensor<4xf16> {
  %one = tg.constant dense<1.0> : tensor<f16>
  %0 = tg.div %x, %one : tensor<4xf16>, tensor<f16> -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// 1 / x is not x.
// CHECK-LABEL: func.func @one_divided_by_x_stays
// CHECK: tg.div
func.func @one_divided_by_x_stays(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = tg.constant dense<1.0> : tensor<4xf32>
  %0 = tg.div %one, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @double_negation_folds
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4xf32>)
// CHECK: %[[NEG:.+]] = tg.neg %[[X]]
// CHECK-NOT: tg.neg
// CHECK: return %[[X]], %[[NEG]]
func.func @double_negation_folds(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = tg.neg %x : tensor<4xf32>
  %1 = tg.neg %0 : tensor<4xf32>
  %2 = tg.neg %1 : tensor<4xf32>
  return %1, %2 : tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @cast_to_the_same_type_folds
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4xf32>)
// CHECK-NOT: tg.cast
// CHECK: return %[[X]]
func.func @cast_to_the_same_type_folds(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tg.cast %x : tensor<4xf32> to tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Widening and narrowing back gives x: every bf16 is an f32, every i32 an i64.
// CHECK-LABEL: func.func @cast_round_trip_through_a_wider_type_folds
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4xbf16>, %[[I:[^:]+]]: tensor<4xi32>, %[[E:[^:]+]]: tensor<4xf8E4M3FN>)
// CHECK-NOT: tg.cast
// CHECK: return %[[X]], %[[I]], %[[E]]
func.func @cast_round_trip_through_a_wider_type_folds(%x: tensor<4xbf16>, %i: tensor<4xi32>, %e: tensor<4xf8E4M3FN>)
    -> (tensor<4xbf16>, tensor<4xi32>, tensor<4xf8E4M3FN>) {
  %0 = tg.cast %x : tensor<4xbf16> to tensor<4xf32>
  %1 = tg.cast %0 : tensor<4xf32> to tensor<4xbf16>
  %2 = tg.cast %i : tensor<4xi32> to tensor<4xi64>
  %3 = tg.cast %2 : tensor<4xi64> to tensor<4xi32>
  %4 = tg.cast %e : tensor<4xf8E4M3FN> to tensor<4xf16>
  %5 = tg.cast %4 : tensor<4xf16> to tensor<4xf8E4M3FN>
  return %1, %3, %5 : tensor<4xbf16>, tensor<4xi32>, tensor<4xf8E4M3FN>
}

// -----

// Rounding through a narrower or differently shaped type loses information:
// f32 -> bf16 -> f32 rounds, bf16 -> f16 -> bf16 overflows (f16 tops out at
// 65504), i64 -> i32 -> i64 truncates, f32 -> i32 -> f32 drops fractions.
// CHECK-LABEL: func.func @cast_round_trip_through_a_lossy_type_stays
// CHECK-COUNT-8: tg.cast
func.func @cast_round_trip_through_a_lossy_type_stays(%x: tensor<4xf32>, %b: tensor<4xbf16>, %i: tensor<4xi64>)
    -> (tensor<4xf32>, tensor<4xbf16>, tensor<4xi64>, tensor<4xf32>) {
  %0 = tg.cast %x : tensor<4xf32> to tensor<4xbf16>
  %1 = tg.cast %0 : tensor<4xbf16> to tensor<4xf32>
  %2 = tg.cast %b : tensor<4xbf16> to tensor<4xf16>
  %3 = tg.cast %2 : tensor<4xf16> to tensor<4xbf16>
  %4 = tg.cast %i : tensor<4xi64> to tensor<4xi32>
  %5 = tg.cast %4 : tensor<4xi32> to tensor<4xi64>
  %6 = tg.cast %x : tensor<4xf32> to tensor<4xi32>
  %7 = tg.cast %6 : tensor<4xi32> to tensor<4xf32>
  return %1, %3, %5, %7 : tensor<4xf32>, tensor<4xbf16>, tensor<4xi64>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_to_the_same_type_folds
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8xf32>)
// CHECK-NOT: tg.reshape
// CHECK: return %[[X]]
func.func @reshape_to_the_same_type_folds(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tg.reshape %x : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_chain_becomes_one_reshape
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8xf32>)
// CHECK: %[[R:.+]] = tg.reshape %[[X]] : tensor<4x8xf32> -> tensor<2x16xf32>
// CHECK-NOT: tg.reshape
// CHECK: return %[[R]]
func.func @reshape_chain_becomes_one_reshape(%x: tensor<4x8xf32>) -> tensor<2x16xf32> {
  %0 = tg.reshape %x : tensor<4x8xf32> -> tensor<32xf32>
  %1 = tg.reshape %0 : tensor<32xf32> -> tensor<8x4xf32>
  %2 = tg.reshape %1 : tensor<8x4xf32> -> tensor<2x16xf32>
  return %2 : tensor<2x16xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_there_and_back_folds
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8xf32>)
// CHECK-NOT: tg.reshape
// CHECK: return %[[X]]
func.func @reshape_there_and_back_folds(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tg.reshape %x : tensor<4x8xf32> -> tensor<32xf32>
  %1 = tg.reshape %0 : tensor<32xf32> -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// Reshaping a constant is a constant, splat or not.
// CHECK-LABEL: func.func @reshape_of_a_constant_is_a_constant
// CHECK-DAG: %[[C:.+]] = tg.constant dense<{{\[}}[1, 2], [3, 4]]> : tensor<2x2xi32>
// CHECK-DAG: %[[S:.+]] = tg.constant dense<5.000000e-01> : tensor<2x2xf32>
// CHECK-NOT: tg.reshape
// CHECK: return %[[C]], %[[S]]
func.func @reshape_of_a_constant_is_a_constant() -> (tensor<2x2xi32>, tensor<2x2xf32>) {
  %c = tg.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %s = tg.constant dense<0.5> : tensor<4xf32>
  %0 = tg.reshape %c : tensor<4xi32> -> tensor<2x2xi32>
  %1 = tg.reshape %s : tensor<4xf32> -> tensor<2x2xf32>
  return %0, %1 : tensor<2x2xi32>, tensor<2x2xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_by_the_identity_folds
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3x4xf32>)
// CHECK-NOT: tg.transpose
// CHECK: return %[[X]]
func.func @transpose_by_the_identity_folds(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = tg.transpose %x {perm = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// transpose(transpose(x, p), q) is transpose(x, p[q[i]]).
// CHECK-LABEL: func.func @transpose_chain_composes
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3x4xf32>)
// CHECK: %[[T:.+]] = tg.transpose %[[X]] {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NOT: tg.transpose
// CHECK: return %[[T]]
func.func @transpose_chain_composes(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = tg.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %1 = tg.transpose %0 {perm = array<i64: 2, 1, 0>} : tensor<3x2x4xf32> -> tensor<4x2x3xf32>
  return %1 : tensor<4x2x3xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_there_and_back_folds
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3x4xf32>)
// CHECK-NOT: tg.transpose
// CHECK: return %[[X]]
func.func @transpose_there_and_back_folds(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = tg.transpose %x {perm = array<i64: 1, 2, 0>} : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %1 = tg.transpose %0 {perm = array<i64: 2, 0, 1>} : tensor<3x4x2xf32> -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// Transposing, slicing or broadcasting a splat gives a splat of the new shape.
// CHECK-LABEL: func.func @shape_ops_on_a_splat_give_a_splat
// CHECK-DAG: %[[T:.+]] = tg.constant dense<2.000000e+00> : tensor<3x2xf32>
// CHECK-DAG: %[[S:.+]] = tg.constant dense<2.000000e+00> : tensor<1x2xf32>
// CHECK-DAG: %[[B:.+]] = tg.constant dense<2.000000e+00> : tensor<4x2x3xf32>
// CHECK-NOT: tg.transpose
// CHECK-NOT: tg.slice
// CHECK-NOT: tg.broadcast_to
// CHECK: return %[[T]], %[[S]], %[[B]]
func.func @shape_ops_on_a_splat_give_a_splat() -> (tensor<3x2xf32>, tensor<1x2xf32>, tensor<4x2x3xf32>) {
  %c = tg.constant dense<2.0> : tensor<2x3xf32>
  %0 = tg.transpose %c {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %1 = tg.slice %c {start = array<i64: 0, 1>, limit = array<i64: 1, 3>} : tensor<2x3xf32> -> tensor<1x2xf32>
  %2 = tg.broadcast_to %c : tensor<2x3xf32> -> tensor<4x2x3xf32>
  return %0, %1, %2 : tensor<3x2xf32>, tensor<1x2xf32>, tensor<4x2x3xf32>
}

// -----

// A transpose of a constant that is not a splat stays (folding it would copy
// the data).
// CHECK-LABEL: func.func @transpose_of_a_non_splat_constant_stays
// CHECK: tg.transpose
func.func @transpose_of_a_non_splat_constant_stays() -> tensor<2x1xi32> {
  %c = tg.constant dense<[[1, 2]]> : tensor<1x2xi32>
  %0 = tg.transpose %c {perm = array<i64: 1, 0>} : tensor<1x2xi32> -> tensor<2x1xi32>
  return %0 : tensor<2x1xi32>
}

// -----

// CHECK-LABEL: func.func @slice_of_everything_folds
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8xf32>)
// CHECK-NOT: tg.slice
// CHECK: return %[[X]]
func.func @slice_of_everything_folds(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tg.slice %x {start = array<i64: 0, 0>, limit = array<i64: 4, 8>, stride = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @slice_of_a_part_stays
// CHECK: tg.slice
func.func @slice_of_a_part_stays(%x: tensor<4x8xf32>) -> tensor<4x4xf32> {
  %0 = tg.slice %x {start = array<i64: 0, 4>, limit = array<i64: 4, 8>} : tensor<4x8xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// CHECK-LABEL: func.func @concat_of_one_input_folds
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8xf32>)
// CHECK-NOT: tg.concat
// CHECK: return %[[X]]
func.func @concat_of_one_input_folds(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tg.concat %x {axis = 1} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_to_the_same_type_folds
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8xf32>)
// CHECK-NOT: tg.broadcast_to
// CHECK: return %[[X]]
func.func @broadcast_to_the_same_type_folds(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tg.broadcast_to %x : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_chain_becomes_one_broadcast
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8xf32>)
// CHECK: %[[B:.+]] = tg.broadcast_to %[[X]] : tensor<8xf32> -> tensor<2x4x8xf32>
// CHECK-NOT: tg.broadcast_to
// CHECK: return %[[B]]
func.func @broadcast_chain_becomes_one_broadcast(%x: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %0 = tg.broadcast_to %x : tensor<8xf32> -> tensor<4x8xf32>
  %1 = tg.broadcast_to %0 : tensor<4x8xf32> -> tensor<2x4x8xf32>
  return %1 : tensor<2x4x8xf32>
}

// -----

// Constants fold to their value and equal constants are merged.
// CHECK-LABEL: func.func @equal_constants_merge
// CHECK: %[[C:.+]] = tg.constant dense<3> : tensor<2xi64>
// CHECK-NOT: tg.constant
// CHECK: return %[[C]], %[[C]]
func.func @equal_constants_merge() -> (tensor<2xi64>, tensor<2xi64>) {
  %0 = tg.constant dense<3> : tensor<2xi64>
  %1 = tg.constant dense<3> : tensor<2xi64>
  return %0, %1 : tensor<2xi64>, tensor<2xi64>
}

// -----

// Ops whose results are unused are erased (they are all Pure).
// CHECK-LABEL: func.func @unused_ops_are_erased
// CHECK-NEXT: return
func.func @unused_ops_are_erased(%x: tensor<4x8xf32>) {
  %0 = tg.exp %x : tensor<4x8xf32>
  %1 = tg.softmax %0 : tensor<4x8xf32>
  %2 = tg.dropout %1 {p = 0.5 : f64, seed = 3 : i64} : tensor<4x8xf32>
  return
}

// -----

// The backward of a fused QKV projection: three slice_grads of adjacent
// slices and two full-size adds become one concat; the slice_grad that
// then covers the whole tensor folds away.
// CHECK-LABEL: func.func @adjacent_slice_grads_become_a_concat
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x4xf32>, %[[K:[^:]+]]: tensor<2x4xf32>, %[[V:[^:]+]]: tensor<2x4xf32>)
// CHECK-NOT: tg.add
// CHECK-NOT: tg.slice_grad
// CHECK: %[[QKV:.+]] = tg.concat %[[Q]], %[[K]], %[[V]] {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x12xf32>
// CHECK: return %[[QKV]]
func.func @adjacent_slice_grads_become_a_concat(%q: tensor<2x4xf32>, %k: tensor<2x4xf32>, %v: tensor<2x4xf32>) -> tensor<2x12xf32> {
  %dv = tg.slice_grad %v {start = array<i64: 0, 8>, limit = array<i64: 2, 12>} : tensor<2x4xf32> -> tensor<2x12xf32>
  %dk = tg.slice_grad %k {start = array<i64: 0, 4>, limit = array<i64: 2, 8>} : tensor<2x4xf32> -> tensor<2x12xf32>
  %dq = tg.slice_grad %q {start = array<i64: 0, 0>, limit = array<i64: 2, 4>} : tensor<2x4xf32> -> tensor<2x12xf32>
  %0 = tg.add %dv, %dk : tensor<2x12xf32>, tensor<2x12xf32> -> tensor<2x12xf32>
  %1 = tg.add %0, %dq : tensor<2x12xf32>, tensor<2x12xf32> -> tensor<2x12xf32>
  return %1 : tensor<2x12xf32>
}

// -----

// Slices that are not adjacent, overlap, stride, or differ in more than
// one axis keep their adds.
// CHECK-LABEL: func.func @other_slice_grads_stay
// CHECK-COUNT-3: tg.add
// CHECK-NOT: tg.concat
func.func @other_slice_grads_stay(%a: tensor<2x4xf32>, %b: tensor<1x4xf32>, %c: tensor<2x2xf32>) -> (tensor<2x12xf32>, tensor<2x12xf32>, tensor<2x12xf32>) {
  %gap0 = tg.slice_grad %a {start = array<i64: 0, 0>, limit = array<i64: 2, 4>} : tensor<2x4xf32> -> tensor<2x12xf32>
  %gap1 = tg.slice_grad %a {start = array<i64: 0, 8>, limit = array<i64: 2, 12>} : tensor<2x4xf32> -> tensor<2x12xf32>
  %0 = tg.add %gap0, %gap1 : tensor<2x12xf32>, tensor<2x12xf32> -> tensor<2x12xf32>
  %two0 = tg.slice_grad %a {start = array<i64: 0, 0>, limit = array<i64: 2, 4>} : tensor<2x4xf32> -> tensor<2x12xf32>
  %two1 = tg.slice_grad %b {start = array<i64: 1, 4>, limit = array<i64: 2, 8>} : tensor<1x4xf32> -> tensor<2x12xf32>
  %1 = tg.add %two0, %two1 : tensor<2x12xf32>, tensor<2x12xf32> -> tensor<2x12xf32>
  %st0 = tg.slice_grad %c {start = array<i64: 0, 0>, limit = array<i64: 2, 4>, stride = array<i64: 1, 2>} : tensor<2x2xf32> -> tensor<2x12xf32>
  %st1 = tg.slice_grad %a {start = array<i64: 0, 4>, limit = array<i64: 2, 8>} : tensor<2x4xf32> -> tensor<2x12xf32>
  %2 = tg.add %st0, %st1 : tensor<2x12xf32>, tensor<2x12xf32> -> tensor<2x12xf32>
  return %0, %1, %2 : tensor<2x12xf32>, tensor<2x12xf32>, tensor<2x12xf32>
}

// -----

// A mask nothing trains (a padding mask from the batch) leaves dmask unread:
// the gradient op is rebuilt without it, so the kernels skip the reduction.
// CHECK-LABEL: func.func @attention_grad_drops_an_unread_dmask
// CHECK: %[[DQ:.+]], %[[DK:.+]], %[[DV:.+]] = tg.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}} {causal = true} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x1x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>)
// CHECK: return %[[DQ]], %[[DK]], %[[DV]]
func.func @attention_grad_drops_an_unread_dmask(%g: tensor<1x2x4x8xf32>, %q: tensor<1x2x4x8xf32>, %kv: tensor<1x1x4x8xf32>, %pad: tensor<1x1x1x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) {
  %0:4 = tg.attention_grad %g, %q, %kv, %kv mask %pad {causal = true} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x1x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x1x4xf32>)
  return %0#0, %0#1, %0#2 : tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>
}

// -----

// CHECK-LABEL: func.func @attention_grad_keeps_a_read_dmask
// CHECK: %[[DQ:.+]], %{{.+}}, %{{.+}}, %[[DMASK:.+]] = tg.attention_grad
// CHECK: return %[[DQ]], %[[DMASK]]
func.func @attention_grad_keeps_a_read_dmask(%g: tensor<1x2x4x8xf32>, %q: tensor<1x2x4x8xf32>, %bias: tensor<1x2x4x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>) {
  %0:4 = tg.attention_grad %g, %q, %q, %q mask %bias : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>)
  return %0#0, %0#3 : tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>
}
