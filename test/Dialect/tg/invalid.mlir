// RUN: tg-opt %s -split-input-file -verify-diagnostics

// Every diagnostic the tg dialect emits, one broken input per case. Ops whose
// result type is inferred report the shape rule that failed and then
// "failed to infer returned types".

//===----------------------------------------------------------------------===//
// Types the ops accept
//===----------------------------------------------------------------------===//

func.func @dynamic_dims_are_rejected(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{'tg.relu' op operand #0 must be statically shaped tensor}}
  %0 = tg.relu %x : tensor<?x4xf32>
  return
}

// -----

func.func @float_op_rejects_integers(%x: tensor<4xi32>) {
  // expected-error @+1 {{'tg.exp' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type values, but got 'tensor<4xi32>'}}
  %0 = tg.exp %x : tensor<4xi32>
  return
}

// -----

func.func @arithmetic_rejects_booleans(%x: tensor<4xi1>) {
  // expected-error @+1 {{'tg.add' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi1>'}}
  %0 = tg.add %x, %x : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  return
}

// -----

func.func @f64_is_not_a_tg_element_type(%x: tensor<4xf64>) {
  // expected-error @+1 {{'tg.neg' op operand #0 must be statically shaped tensor}}
  %0 = tg.neg %x : tensor<4xf64>
  return
}

// -----

func.func @embedding_indices_must_be_integers(%t: tensor<8x4xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{'tg.embedding' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<3xf32>'}}
  %0 = tg.embedding %t, %i : tensor<8x4xf32>, tensor<3xf32> -> tensor<3x4xf32>
  return
}

// -----

func.func @lr_schedule_step_must_be_a_scalar_i64(%s: tensor<i32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'tg.lr_schedule' op operand #0 must be 0D tensor of 64-bit signless integer values, but got 'tensor<i32>'}}
  %0 = tg.lr_schedule %s, %lr : tensor<i32>, tensor<f32> -> tensor<f32>
  return
}

// -----

func.func @inferred_type_must_match_the_declared_one(%x: tensor<4xf32>) {
  // expected-error @+2 {{'tg.add' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4xf16>'}}
  // expected-error @+1 {{'tg.add' op failed to infer returned types}}
  %0 = tg.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf16>
  return
}

// -----

func.func @constant_type_must_match_its_value() {
  // expected-error @+1 {{'tg.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "tg.constant"() {value = dense<1.0> : tensor<4xf32>} : () -> tensor<2x2xf32>
  return
}

// -----

func.func @iota_dimension_must_be_in_range() {
  // expected-error @+1 {{'tg.iota' op dimension 2 is out of range for rank 2}}
  %0 = tg.iota {dimension = 2 : i64} : tensor<4x8xf32>
  return
}

// -----

func.func @iota_negative_dimension_must_be_in_range() {
  // expected-error @+1 {{'tg.iota' op dimension -3 is out of range for rank 2}}
  %0 = tg.iota {dimension = -3 : i64} : tensor<4x8xf32>
  return
}

// -----

func.func @iota_of_a_scalar_has_no_dimension() {
  // expected-error @+1 {{'tg.iota' op dimension 0 is out of range for rank 0}}
  %0 = tg.iota : tensor<f32>
  return
}

// -----

func.func @iota_start_must_be_finite() {
  // expected-error @+1 {{'tg.iota' op start must be finite, got inf}}
  %0 = tg.iota {start = 0x7FF0000000000000 : f64} : tensor<4xf32>
  return
}

// -----

func.func @iota_step_must_be_finite() {
  // expected-error @+1 {{'tg.iota' op step must be finite, got nan}}
  %0 = tg.iota {step = 0x7FF8000000000000 : f64} : tensor<4xf32>
  return
}

// -----

func.func @integer_iota_counts_in_whole_numbers() {
  // expected-error @+1 {{'tg.iota' op step must be a whole number for a 'i64' result, got 0.5}}
  %0 = tg.iota {step = 0.5 : f64} : tensor<4xi64>
  return
}

// -----

func.func @integer_iota_values_must_fit() {
  // expected-error @+1 {{'tg.iota' op value 3000000001 does not fit 'i32'}}
  %0 = tg.iota {start = 1.0 : f64, step = 1.0e9 : f64} : tensor<4xi32>
  return
}

// -----

func.func @iota_has_no_boolean_form() {
  // expected-error @+1 {{'tg.iota' op result #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or f8E4M3FN type or f8E5M2 type or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi1>'}}
  %0 = tg.iota : tensor<4xi1>
  return
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

// -----

func.func @binary_shapes_must_broadcast(%a: tensor<4x3xf32>, %b: tensor<5xf32>) {
  // expected-error @+2 {{'tg.mul' op operand shapes do not broadcast: 4x3 and 5}}
  // expected-error @+1 {{'tg.mul' op failed to infer returned types}}
  %0 = tg.mul %a, %b : tensor<4x3xf32>, tensor<5xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @binary_element_types_must_match(%a: tensor<4xf32>, %b: tensor<4xbf16>) {
  // expected-error @+2 {{'tg.sub' op element types differ: lhs has 'f32', rhs has 'bf16'}}
  // expected-error @+1 {{'tg.sub' op failed to infer returned types}}
  %0 = tg.sub %a, %b : tensor<4xf32>, tensor<4xbf16> -> tensor<4xf32>
  return
}

// -----

func.func @compare_predicate_must_be_known(%a: tensor<4xf32>) {
  // expected-error @+2 {{expected ::mlir::tg::ComparePredicate to be one of: eq, ne, lt, le, gt, ge}}
  // expected-error @+1 {{failed to parse Tg_ComparePredicateAttr parameter 'value' which is to be a `::mlir::tg::ComparePredicate`}}
  %0 = tg.compare lte, %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
  return
}

// -----

func.func @compare_element_types_must_match(%a: tensor<4xi32>, %b: tensor<4xi64>) {
  // expected-error @+2 {{'tg.compare' op element types differ: lhs has 'i32', rhs has 'i64'}}
  // expected-error @+1 {{'tg.compare' op failed to infer returned types}}
  %0 = tg.compare eq, %a, %b : tensor<4xi32>, tensor<4xi64> -> tensor<4xi1>
  return
}

// -----

func.func @compare_shapes_must_broadcast(%a: tensor<4xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'tg.compare' op operand shapes do not broadcast: 4 and 3}}
  // expected-error @+1 {{'tg.compare' op failed to infer returned types}}
  %0 = tg.compare eq, %a, %b : tensor<4xf32>, tensor<3xf32> -> tensor<4xi1>
  return
}

// -----

func.func @select_branches_must_share_an_element_type(%m: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+2 {{'tg.select' op element types differ: on_true has 'f32', on_false has 'f16'}}
  // expected-error @+1 {{'tg.select' op failed to infer returned types}}
  %0 = tg.select %m, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<4xf16> -> tensor<4xf32>
  return
}

// -----

func.func @select_mask_must_broadcast(%m: tensor<3xi1>, %a: tensor<4xf32>) {
  // expected-error @+2 {{'tg.select' op operand shapes do not broadcast: 3 and 4}}
  // expected-error @+1 {{'tg.select' op failed to infer returned types}}
  %0 = tg.select %m, %a, %a : tensor<3xi1>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @unary_result_type_must_match(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.tanh' op requires the same type for all operands and results}}
  %0 = "tg.tanh"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

func.func @gelu_approximation_must_be_known(%x: tensor<4xf32>) {
  // expected-error @+2 {{expected ::mlir::tg::GeluApproximation to be one of: none, tanh}}
  // expected-error @+1 {{failed to parse Tg_GeluApproximationAttr parameter 'value' which is to be a `::mlir::tg::GeluApproximation`}}
  %0 = tg.gelu %x {approximate = #tg<approximation erf>} : tensor<4xf32>
  return
}

// -----

func.func @cast_keeps_the_shape(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.cast' op requires the same shape for all operands and results}}
  %0 = tg.cast %x : tensor<4xf32> to tensor<2x2xf16>
  return
}

//===----------------------------------------------------------------------===//
// Matmul and reductions
//===----------------------------------------------------------------------===//

// -----

func.func @matmul_needs_matrices(%a: tensor<4xf32>, %b: tensor<4x2xf32>) {
  // expected-error @+2 {{'tg.matmul' op operands must have rank >= 2, got lhs rank 1 and rhs rank 2}}
  // expected-error @+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b : tensor<4xf32>, tensor<4x2xf32> -> tensor<2xf32>
  return
}

// -----

func.func @matmul_element_types_must_match(%a: tensor<2x4xf32>, %b: tensor<4x2xbf16>) {
  // expected-error @+2 {{'tg.matmul' op element types differ: lhs has 'f32', rhs has 'bf16'}}
  // expected-error @+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b : tensor<2x4xf32>, tensor<4x2xbf16> -> tensor<2x2xf32>
  return
}

// -----

func.func @matmul_contracting_dims_must_agree(%a: tensor<8x768xf32>, %b: tensor<3072x768xf32>) {
  // expected-error @+2 {{'tg.matmul' op contracting dims differ: lhs has 768, rhs has 3072}}
  // expected-error @+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b : tensor<8x768xf32>, tensor<3072x768xf32> -> tensor<8x768xf32>
  return
}

// -----

func.func @matmul_transpose_flags_pick_the_contracting_dims(%a: tensor<8x768xf32>, %b: tensor<3072x768xf32>) {
  // expected-error @+2 {{'tg.matmul' op contracting dims differ: lhs has 8, rhs has 768}}
  // expected-error @+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b {transpose_lhs = true, transpose_rhs = true} : tensor<8x768xf32>, tensor<3072x768xf32> -> tensor<768x3072xf32>
  return
}

// -----

func.func @matmul_batch_dims_must_broadcast(%a: tensor<3x2x4xf32>, %b: tensor<5x4x2xf32>) {
  // expected-error @+2 {{'tg.matmul' op batch dims do not broadcast: 3 and 5}}
  // expected-error @+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b : tensor<3x2x4xf32>, tensor<5x4x2xf32> -> tensor<3x2x2xf32>
  return
}

// -----

func.func @reduce_dim_must_be_in_range(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'tg.reduce_sum' op dim 2 is out of range for rank 2}}
  // expected-error @+1 {{'tg.reduce_sum' op failed to infer returned types}}
  %0 = tg.reduce_sum %x {dims = array<i64: 2>} : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_dim_listed_twice(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'tg.reduce_mean' op dim 1 is listed twice}}
  // expected-error @+1 {{'tg.reduce_mean' op failed to infer returned types}}
  %0 = tg.reduce_mean %x {dims = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_dims_naming_one_dim_twice(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'tg.reduce_max' op dims 1 and -1 both name dim 1}}
  // expected-error @+1 {{'tg.reduce_max' op failed to infer returned types}}
  %0 = tg.reduce_max %x {dims = array<i64: 1, -1>} : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @softmax_axis_must_be_in_range(%x: tensor<4x10xf32>) {
  // expected-error @+1 {{'tg.softmax' op axis 2 is out of range for rank 2}}
  %0 = tg.softmax %x {axis = 2} : tensor<4x10xf32>
  return
}

// -----

func.func @log_softmax_needs_a_dim(%x: tensor<f32>) {
  // expected-error @+1 {{'tg.log_softmax' op axis -1 is out of range for rank 0}}
  %0 = tg.log_softmax %x : tensor<f32>
  return
}

//===----------------------------------------------------------------------===//
// Normalization, dropout, embedding, loss, attention
//===----------------------------------------------------------------------===//

// -----

func.func @layer_norm_needs_a_dim(%x: tensor<f32>) {
  // expected-error @+1 {{'tg.layer_norm' op x must have rank >= 1}}
  %0 = tg.layer_norm %x : (tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func @layer_norm_result_is_x_type(%x: tensor<8x768xf32>) {
  // expected-error @+1 {{'tg.layer_norm' op result type 'tensor<8x768xbf16>' must match x type 'tensor<8x768xf32>'}}
  %0 = tg.layer_norm %x : (tensor<8x768xf32>) -> tensor<8x768xbf16>
  return
}

// -----

func.func @layer_norm_eps_must_be_positive(%x: tensor<8x768xf32>) {
  // expected-error @+1 {{'tg.layer_norm' op eps must be positive, got 0}}
  %0 = tg.layer_norm %x {eps = 0.0 : f64} : (tensor<8x768xf32>) -> tensor<8x768xf32>
  return
}

// -----

func.func @layer_norm_weight_covers_the_last_dim(%x: tensor<8x768xf32>, %w: tensor<512xf32>) {
  // expected-error @+1 {{'tg.layer_norm' op weight must have shape 768 (the last dim of x), got 512}}
  %0 = tg.layer_norm %x weight %w : (tensor<8x768xf32>, tensor<512xf32>) -> tensor<8x768xf32>
  return
}

// -----

func.func @layer_norm_bias_has_the_x_element_type(%x: tensor<8x768xf32>, %b: tensor<768xbf16>) {
  // expected-error @+1 {{'tg.layer_norm' op bias has element type 'bf16', x has 'f32'}}
  %0 = tg.layer_norm %x bias %b : (tensor<8x768xf32>, tensor<768xbf16>) -> tensor<8x768xf32>
  return
}

// -----

func.func @rms_norm_weight_is_one_dimensional(%x: tensor<8x512xf32>, %w: tensor<1x512xf32>) {
  // expected-error @+1 {{'tg.rms_norm' op weight must have shape 512 (the last dim of x), got 1x512}}
  %0 = tg.rms_norm %x weight %w : (tensor<8x512xf32>, tensor<1x512xf32>) -> tensor<8x512xf32>
  return
}

// -----

func.func @rms_norm_eps_must_be_positive(%x: tensor<8x512xf32>) {
  // expected-error @+1 {{'tg.rms_norm' op eps must be positive, got -1e-05}}
  %0 = tg.rms_norm %x {eps = -1.0e-5 : f64} : (tensor<8x512xf32>) -> tensor<8x512xf32>
  return
}

// -----

func.func @dropout_probability_below_one(%x: tensor<8xf32>) {
  // expected-error @+1 {{'tg.dropout' op p must be in [0, 1), got 1}}
  %0 = tg.dropout %x {p = 1.0 : f64} : tensor<8xf32>
  return
}

// -----

func.func @embedding_table_is_a_matrix(%t: tensor<256xf32>, %i: tensor<4xi32>) {
  // expected-error @+2 {{'tg.embedding' op table must have rank 2, got rank 1}}
  // expected-error @+1 {{'tg.embedding' op failed to infer returned types}}
  %0 = tg.embedding %t, %i : tensor<256xf32>, tensor<4xi32> -> tensor<4xf32>
  return
}

// -----

func.func @cross_entropy_logits_need_a_class_dim(%l: tensor<f32>, %y: tensor<i64>) {
  // expected-error @+2 {{'tg.cross_entropy' op logits must have rank >= 1}}
  // expected-error @+1 {{'tg.cross_entropy' op failed to infer returned types}}
  %0 = tg.cross_entropy %l, %y : tensor<f32>, tensor<i64> -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_labels_match_the_leading_dims(%l: tensor<32x10xf32>, %y: tensor<16xi64>) {
  // expected-error @+2 {{'tg.cross_entropy' op labels shape 16 must be the logits shape 32x10 without its last dim}}
  // expected-error @+1 {{'tg.cross_entropy' op failed to infer returned types}}
  %0 = tg.cross_entropy %l, %y : tensor<32x10xf32>, tensor<16xi64> -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_reduction_must_be_known(%l: tensor<32x10xf32>, %y: tensor<32xi64>) {
  // expected-error @+2 {{expected ::mlir::tg::LossReduction to be one of: mean, sum, none}}
  // expected-error @+1 {{failed to parse Tg_LossReductionAttr parameter 'value' which is to be a `::mlir::tg::LossReduction`}}
  %0 = tg.cross_entropy %l, %y {reduction = #tg<loss_reduction max>} : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  return
}

// -----

// A loss is not reduced by a collective's Reduction, nor by a string.
func.func @cross_entropy_reduction_is_a_loss_reduction(%l: tensor<32x10xf32>, %y: tensor<32xi64>) {
  // expected-error @+1 {{'tg.cross_entropy' op attribute 'reduction' failed to satisfy constraint: how tg.cross_entropy combines its per-label losses}}
  %0 = tg.cross_entropy %l, %y {reduction = #tg<reduction sum>} : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_reduction_is_not_a_string(%l: tensor<32x10xf32>, %y: tensor<32xi64>) {
  // expected-error @+1 {{'tg.cross_entropy' op attribute 'reduction' failed to satisfy constraint: how tg.cross_entropy combines its per-label losses}}
  %0 = tg.cross_entropy %l, %y {reduction = "sum"} : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  return
}

// -----

// A bf16 loss would be rounded to 3 significant digits: the loss is f32.
func.func @cross_entropy_loss_is_f32_for_bf16_logits(%l: tensor<4x10xbf16>, %y: tensor<4xi64>) {
  // expected-error @+2 {{'tg.cross_entropy' op inferred type(s) 'tensor<f32>' are incompatible with return type(s) of operation 'tensor<bf16>'}}
  // expected-error @+1 {{'tg.cross_entropy' op failed to infer returned types}}
  %0 = tg.cross_entropy %l, %y : tensor<4x10xbf16>, tensor<4xi64> -> tensor<bf16>
  return
}

// -----

func.func @attention_operands_are_four_dimensional(%q: tensor<4x16x32xf32>) {
  // expected-error @+2 {{'tg.attention' op query, key and value must have rank 4 [B, H, T, D], got ranks 3, 3 and 3}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %0 = tg.attention %q, %q, %q : tensor<4x16x32xf32>, tensor<4x16x32xf32>, tensor<4x16x32xf32> -> tensor<4x16x32xf32>
  return
}

// -----

func.func @attention_element_types_must_match(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xbf16>) {
  // expected-error @+2 {{'tg.attention' op element types differ: query has 'f32', key has 'bf16', value has 'f32'}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %0 = tg.attention %q, %k, %q : tensor<1x2x4x8xf32>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  return
}

// -----

func.func @attention_batch_dims_must_match(%q: tensor<1x2x4x8xf32>, %k: tensor<3x2x4x8xf32>) {
  // expected-error @+2 {{'tg.attention' op batch dims differ: query 1x2x4x8, key 3x2x4x8, value 1x2x4x8}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %0 = tg.attention %q, %k, %q : tensor<1x2x4x8xf32>, tensor<3x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  return
}

// -----

func.func @attention_key_and_value_heads_must_match(%q: tensor<1x4x4x8xf32>, %k: tensor<1x2x4x8xf32>) {
  // expected-error @+2 {{'tg.attention' op key and value head counts differ: key has 2, value has 4}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %0 = tg.attention %q, %k, %q : tensor<1x4x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
  return
}

// -----

// Grouped-query attention: each key/value head serves H / Hkv query heads.
func.func @attention_key_value_heads_must_divide_query_heads(%q: tensor<1x8x4x8xf32>, %kv: tensor<1x3x4x8xf32>) {
  // expected-error @+2 {{'tg.attention' op query has 8 heads, which 3 key/value heads do not divide}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %0 = tg.attention %q, %kv, %kv : tensor<1x8x4x8xf32>, tensor<1x3x4x8xf32>, tensor<1x3x4x8xf32> -> tensor<1x8x4x8xf32>
  return
}

// -----

func.func @attention_mask_must_broadcast_to_the_scores(%q: tensor<2x4x6x8xf32>, %k: tensor<2x4x5x8xf32>, %mask: tensor<6x6xf32>) {
  // expected-error @+2 {{'tg.attention' op mask shape 6x6 does not broadcast to the scores [B, H, T, S] = 2x4x6x5}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %0 = tg.attention %q, %k, %k mask %mask : tensor<2x4x6x8xf32>, tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>, tensor<6x6xf32> -> tensor<2x4x6x8xf32>
  return
}

// -----

func.func @attention_mask_has_at_most_the_scores_rank(%q: tensor<2x4x6x8xf32>, %mask: tensor<1x2x4x6x6xf32>) {
  // expected-error @+2 {{'tg.attention' op mask shape 1x2x4x6x6 does not broadcast to the scores [B, H, T, S] = 2x4x6x6}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %0 = tg.attention %q, %q, %q mask %mask : tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>, tensor<1x2x4x6x6xf32> -> tensor<2x4x6x8xf32>
  return
}

// -----

func.func @attention_mask_has_the_query_element_type(%q: tensor<1x2x4x8xf32>, %mask: tensor<4x4xbf16>) {
  // expected-error @+2 {{'tg.attention' op element types differ: query has 'f32', mask has 'bf16'}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %0 = tg.attention %q, %q, %q mask %mask : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<4x4xbf16> -> tensor<1x2x4x8xf32>
  return
}

// -----

func.func @attention_head_dims_must_match(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x16xf32>) {
  // expected-error @+2 {{'tg.attention' op head dims differ: query has 8, key has 16}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %0 = tg.attention %q, %k, %k : tensor<1x2x4x8xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32> -> tensor<1x2x4x16xf32>
  return
}

// -----

func.func @attention_key_and_value_lengths_must_match(%q: tensor<1x2x4x8xf32>, %v: tensor<1x2x6x8xf32>) {
  // expected-error @+2 {{'tg.attention' op key and value lengths differ: key has 4, value has 6}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %0 = tg.attention %q, %q, %v : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x6x8xf32> -> tensor<1x2x4x8xf32>
  return
}

// -----

func.func @attention_scale_must_be_positive(%q: tensor<1x2x4x8xf32>) {
  // expected-error @+2 {{'tg.attention' op scale must be positive, got -0.5}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %0 = tg.attention %q, %q, %q {scale = -0.5 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

// -----

func.func @conv2d_is_nchw_and_oihw(%x: tensor<1x8x8xf32>, %w: tensor<4x1x3x3xf32>) {
  // expected-error @+2 {{'tg.conv2d' op input and weight must have rank 4 (NCHW, OIHW), got ranks 3 and 4}}
  // expected-error @+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w : (tensor<1x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv2d_element_types_must_match(%x: tensor<1x1x8x8xf32>, %w: tensor<4x1x3x3xf16>) {
  // expected-error @+2 {{'tg.conv2d' op element types differ: input has 'f32', weight has 'f16'}}
  // expected-error @+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w : (tensor<1x1x8x8xf32>, tensor<4x1x3x3xf16>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv2d_stride_has_two_values(%x: tensor<1x1x8x8xf32>, %w: tensor<4x1x3x3xf32>) {
  // expected-error @+2 {{'tg.conv2d' op stride must have 2 values, got 1}}
  // expected-error @+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w {stride = array<i64: 2>} : (tensor<1x1x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x3x3xf32>
  return
}

// -----

func.func @conv2d_padding_is_not_negative(%x: tensor<1x1x8x8xf32>, %w: tensor<4x1x3x3xf32>) {
  // expected-error @+2 {{'tg.conv2d' op padding values must be >= 0, got -1}}
  // expected-error @+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w {padding = array<i64: -1, 0>} : (tensor<1x1x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x4x6xf32>
  return
}

// -----

func.func @conv2d_dilation_is_positive(%x: tensor<1x1x8x8xf32>, %w: tensor<4x1x3x3xf32>) {
  // expected-error @+2 {{'tg.conv2d' op dilation values must be >= 1, got 0}}
  // expected-error @+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w {dilation = array<i64: 1, 0>} : (tensor<1x1x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv2d_groups_divide_the_channels(%x: tensor<1x6x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+2 {{'tg.conv2d' op groups 3 must divide input channels 6 and output channels 4}}
  // expected-error @+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w {groups = 3} : (tensor<1x6x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv2d_weight_channels_per_group(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+2 {{'tg.conv2d' op weight has 4 input channels per group, input has 4 channels in 2 groups}}
  // expected-error @+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w {groups = 2} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv2d_bias_has_one_value_per_output_channel(%x: tensor<1x1x8x8xf32>, %w: tensor<4x1x3x3xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{'tg.conv2d' op bias must have shape 4 (the output channels), got 8}}
  // expected-error @+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w, %b : (tensor<1x1x8x8xf32>, tensor<4x1x3x3xf32>, tensor<8xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv2d_bias_has_the_input_element_type(%x: tensor<1x1x8x8xf32>, %w: tensor<4x1x3x3xf32>, %b: tensor<4xbf16>) {
  // expected-error @+2 {{'tg.conv2d' op element types differ: input has 'f32', bias has 'bf16'}}
  // expected-error @+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w, %b : (tensor<1x1x8x8xf32>, tensor<4x1x3x3xf32>, tensor<4xbf16>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv2d_kernel_must_fit(%x: tensor<1x1x2x2xf32>, %w: tensor<4x1x3x3xf32>) {
  // expected-error @+2 {{'tg.conv2d' op kernel 3x3 with dilation 1x1 does not fit the input 2x2 padded by 0x0}}
  // expected-error @+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w : (tensor<1x1x2x2xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x1x1xf32>
  return
}

// -----

// A window that does not fit must not be rounded up to one output by a
// large stride.
func.func @conv2d_kernel_must_fit_whatever_the_stride(%x: tensor<1x1x3x3xf32>, %w: tensor<4x1x4x4xf32>) {
  // expected-error @+2 {{'tg.conv2d' op kernel 4x4 with dilation 1x1 does not fit the input 3x3 padded by 0x0}}
  // expected-error @+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w {stride = array<i64: 2, 2>} : (tensor<1x1x3x3xf32>, tensor<4x1x4x4xf32>) -> tensor<1x4x1x1xf32>
  return
}

// -----

func.func @conv2d_huge_padding_does_not_overflow(%x: tensor<1x1x3x3xf32>, %w: tensor<4x1x3x3xf32>) {
  // expected-error @+2 {{'tg.conv2d' op kernel 3x3 with dilation 1x1 does not fit the input 3x3 padded by 4611686018427387904x0}}
  // expected-error @+1 {{'tg.conv2d' op failed to infer returned types}}
  %0 = tg.conv2d %x, %w {padding = array<i64: 4611686018427387904, 0>} : (tensor<1x1x3x3xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x1x1xf32>
  return
}

// -----

func.func @pool_input_is_nchw(%x: tensor<8x8xf32>) {
  // expected-error @+2 {{'tg.max_pool2d' op input must have rank 4 (NCHW), got rank 2}}
  // expected-error @+1 {{'tg.max_pool2d' op failed to infer returned types}}
  %0 = tg.max_pool2d %x {kernel_size = array<i64: 2, 2>} : tensor<8x8xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @pool_needs_a_kernel_size(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'tg.max_pool2d' op requires attribute 'kernel_size'}}
  %0 = tg.max_pool2d %x : tensor<1x1x8x8xf32> -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @pool_kernel_size_has_two_values(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+2 {{'tg.avg_pool2d' op kernel_size must have 2 values, got 3}}
  // expected-error @+1 {{'tg.avg_pool2d' op failed to infer returned types}}
  %0 = tg.avg_pool2d %x {kernel_size = array<i64: 2, 2, 2>} : tensor<1x1x8x8xf32> -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @pool_stride_is_positive(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+2 {{'tg.avg_pool2d' op stride values must be >= 1, got 0}}
  // expected-error @+1 {{'tg.avg_pool2d' op failed to infer returned types}}
  %0 = tg.avg_pool2d %x {kernel_size = array<i64: 2, 2>, stride = array<i64: 0, 1>} : tensor<1x1x8x8xf32> -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @pool_padding_at_most_half_the_kernel(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+2 {{'tg.max_pool2d' op padding 2 must be at most half the kernel size 3}}
  // expected-error @+1 {{'tg.max_pool2d' op failed to infer returned types}}
  %0 = tg.max_pool2d %x {kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 2>} : tensor<1x1x8x8xf32> -> tensor<1x1x3x3xf32>
  return
}

// -----

func.func @pool_kernel_must_fit(%x: tensor<1x1x2x8xf32>) {
  // expected-error @+2 {{'tg.max_pool2d' op kernel 3x3 does not fit the input 2x8 padded by 0x0}}
  // expected-error @+1 {{'tg.max_pool2d' op failed to infer returned types}}
  %0 = tg.max_pool2d %x {kernel_size = array<i64: 3, 3>} : tensor<1x1x2x8xf32> -> tensor<1x1x1x2xf32>
  return
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

// -----

func.func @flatten_range_must_be_ordered(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{'tg.flatten' op start_dim 2 and end_dim 1 do not name a dim range of rank 3}}
  // expected-error @+1 {{'tg.flatten' op failed to infer returned types}}
  %0 = tg.flatten %x {start_dim = 2, end_dim = 1} : tensor<2x3x4xf32> -> tensor<24xf32>
  return
}

// -----

func.func @reshape_keeps_the_element_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tg.reshape' op element types differ: input has 'f32', result has 'f16'}}
  %0 = tg.reshape %x : tensor<4x8xf32> -> tensor<32xf16>
  return
}

// -----

func.func @reshape_keeps_the_element_count(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tg.reshape' op element counts differ: input 4x8 has 32, result 4x4 has 16}}
  %0 = tg.reshape %x : tensor<4x8xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @transpose_needs_a_perm(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tg.transpose' op requires attribute 'perm'}}
  %0 = tg.transpose %x : tensor<4x8xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @transpose_perm_has_one_entry_per_dim(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'tg.transpose' op perm has 3 entries for rank 2}}
  // expected-error @+1 {{'tg.transpose' op failed to infer returned types}}
  %0 = tg.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<4x8xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @transpose_perm_is_a_permutation(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'tg.transpose' op perm [1, 1] is not a permutation of 0..1}}
  // expected-error @+1 {{'tg.transpose' op failed to infer returned types}}
  %0 = tg.transpose %x {perm = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<8x8xf32>
  return
}

// -----

func.func @slice_needs_one_bound_per_dim(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'tg.slice' op start, limit and stride need 2 entries (the rank), got 1, 2 and 2}}
  // expected-error @+1 {{'tg.slice' op failed to infer returned types}}
  %0 = tg.slice %x {start = array<i64: 0>, limit = array<i64: 4, 8>} : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @slice_stays_within_the_input(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'tg.slice' op dim 1: slice [2:9:1] is not within size 8}}
  // expected-error @+1 {{'tg.slice' op failed to infer returned types}}
  %0 = tg.slice %x {start = array<i64: 0, 2>, limit = array<i64: 4, 9>} : tensor<4x8xf32> -> tensor<4x7xf32>
  return
}

// -----

func.func @slice_stride_is_positive(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'tg.slice' op dim 0: slice [0:4:0] is not within size 4}}
  // expected-error @+1 {{'tg.slice' op failed to infer returned types}}
  %0 = tg.slice %x {start = array<i64: 0, 0>, limit = array<i64: 4, 8>, stride = array<i64: 0, 1>} : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @concat_needs_an_input() {
  // expected-error @+2 {{'tg.concat' op needs at least one input}}
  // expected-error @+1 {{'tg.concat' op failed to infer returned types}}
  %0 = "tg.concat"() : () -> tensor<4xf32>
  return
}

// -----

func.func @concat_axis_must_be_in_range(%a: tensor<4xf32>) {
  // expected-error @+2 {{'tg.concat' op axis 1 is out of range for rank 1}}
  // expected-error @+1 {{'tg.concat' op failed to infer returned types}}
  %0 = tg.concat %a, %a {axis = 1} : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @concat_of_scalars_has_no_axis(%a: tensor<f32>) {
  // expected-error @+2 {{'tg.concat' op axis 0 is out of range for rank 0}}
  // expected-error @+1 {{'tg.concat' op failed to infer returned types}}
  %0 = tg.concat %a, %a : (tensor<f32>, tensor<f32>) -> tensor<2xf32>
  return
}

// -----

func.func @concat_inputs_share_an_element_type(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+2 {{'tg.concat' op input 1 has element type 'f16', input 0 has 'f32'}}
  // expected-error @+1 {{'tg.concat' op failed to infer returned types}}
  %0 = tg.concat %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<8xf32>
  return
}

// -----

func.func @concat_inputs_share_a_rank(%a: tensor<4xf32>, %b: tensor<4x1xf32>) {
  // expected-error @+2 {{'tg.concat' op input 1 has rank 2, input 0 has 1}}
  // expected-error @+1 {{'tg.concat' op failed to infer returned types}}
  %0 = tg.concat %a, %b : (tensor<4xf32>, tensor<4x1xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @concat_inputs_agree_off_the_axis(%a: tensor<4x2xf32>, %b: tensor<3x2xf32>) {
  // expected-error @+2 {{'tg.concat' op input 1 has size 3 in dim 0, input 0 has 4}}
  // expected-error @+1 {{'tg.concat' op failed to infer returned types}}
  %0 = tg.concat %a, %b {axis = 1} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @broadcast_to_keeps_the_element_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.broadcast_to' op element types differ: input has 'f32', result has 'bf16'}}
  %0 = tg.broadcast_to %x : tensor<4xf32> -> tensor<2x4xbf16>
  return
}

// -----

func.func @broadcast_to_only_grows(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{'tg.broadcast_to' op input shape 2x4 does not broadcast to 4}}
  %0 = tg.broadcast_to %x : tensor<2x4xf32> -> tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// Gradient ops
//===----------------------------------------------------------------------===//

// -----

func.func @gelu_grad_approximation_must_be_known(%g: tensor<4xf32>) {
  // expected-error @+2 {{expected ::mlir::tg::GeluApproximation to be one of: none, tanh}}
  // expected-error @+1 {{failed to parse Tg_GeluApproximationAttr parameter 'value' which is to be a `::mlir::tg::GeluApproximation`}}
  %0 = tg.gelu_grad %g, %g {approximate = #tg<approximation erf>} : tensor<4xf32>
  return
}

// -----

func.func @layer_norm_grad_needs_a_dim(%g: tensor<f32>) {
  // expected-error @+1 {{'tg.layer_norm_grad' op x must have rank >= 1}}
  %0:3 = tg.layer_norm_grad %g, %g : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<f32>)
  return
}

// -----

func.func @layer_norm_grad_eps_must_be_positive(%g: tensor<2x4xf32>) {
  // expected-error @+1 {{'tg.layer_norm_grad' op eps must be positive, got 0}}
  %0:3 = tg.layer_norm_grad %g, %g {eps = 0.0 : f64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @layer_norm_grad_grad_is_shaped_like_x(%g: tensor<2x4xf32>, %x: tensor<4x4xf32>) {
  // expected-error @+1 {{'tg.layer_norm_grad' op grad must have type 'tensor<4x4xf32>', got 'tensor<2x4xf32>'}}
  %0:3 = tg.layer_norm_grad %g, %x : (tensor<2x4xf32>, tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @layer_norm_grad_dx_is_shaped_like_x(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{'tg.layer_norm_grad' op dx must have type 'tensor<2x4xf32>', got 'tensor<2x4xbf16>'}}
  %0:3 = tg.layer_norm_grad %x, %x : (tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xbf16>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @layer_norm_grad_weight_covers_the_last_dim(%x: tensor<2x4xf32>, %w: tensor<2xf32>) {
  // expected-error @+1 {{'tg.layer_norm_grad' op weight must have type 'tensor<4xf32>', got 'tensor<2xf32>'}}
  %0:3 = tg.layer_norm_grad %x, %x weight %w : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @layer_norm_grad_dweight_covers_the_last_dim(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{'tg.layer_norm_grad' op dweight must have type 'tensor<4xf32>', got 'tensor<2xf32>'}}
  %0:3 = tg.layer_norm_grad %x, %x : (tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2xf32>, tensor<4xf32>)
  return
}

// -----

func.func @layer_norm_grad_dbias_covers_the_last_dim(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{'tg.layer_norm_grad' op dbias must have type 'tensor<4xf32>', got 'tensor<2x4xf32>'}}
  %0:3 = tg.layer_norm_grad %x, %x : (tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @rms_norm_grad_needs_a_dim(%g: tensor<f32>) {
  // expected-error @+1 {{'tg.rms_norm_grad' op x must have rank >= 1}}
  %0:2 = tg.rms_norm_grad %g, %g : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return
}

// -----

func.func @rms_norm_grad_weight_covers_the_last_dim(%x: tensor<2x4xf32>, %w: tensor<4xf16>) {
  // expected-error @+1 {{'tg.rms_norm_grad' op weight must have type 'tensor<4xf32>', got 'tensor<4xf16>'}}
  %0:2 = tg.rms_norm_grad %x, %x weight %w : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf16>) -> (tensor<2x4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @rms_norm_grad_dweight_covers_the_last_dim(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{'tg.rms_norm_grad' op dweight must have type 'tensor<4xf32>', got 'tensor<2xf32>'}}
  %0:2 = tg.rms_norm_grad %x, %x : (tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2xf32>)
  return
}

// -----

func.func @embedding_grad_result_is_a_table(%g: tensor<4x8xf32>, %i: tensor<4xi32>) {
  // expected-error @+1 {{'tg.embedding_grad' op result must have rank 2, got rank 1}}
  %0 = tg.embedding_grad %g, %i : tensor<4x8xf32>, tensor<4xi32> -> tensor<8xf32>
  return
}

// -----

func.func @embedding_grad_keeps_the_element_type(%g: tensor<4x8xbf16>, %i: tensor<4xi32>) {
  // expected-error @+1 {{'tg.embedding_grad' op element types differ: grad has 'bf16', result has 'f32'}}
  %0 = tg.embedding_grad %g, %i : tensor<4x8xbf16>, tensor<4xi32> -> tensor<16x8xf32>
  return
}

// -----

func.func @embedding_grad_grad_is_indices_plus_a_row(%g: tensor<4x8xf32>, %i: tensor<4xi32>) {
  // expected-error @+1 {{'tg.embedding_grad' op grad shape 4x8 must be the indices shape plus the row size, 4x16}}
  %0 = tg.embedding_grad %g, %i : tensor<4x8xf32>, tensor<4xi32> -> tensor<32x16xf32>
  return
}

// -----

func.func @cross_entropy_grad_result_is_shaped_like_logits(%g: tensor<f32>, %l: tensor<4x10xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'tg.cross_entropy_grad' op result must have type 'tensor<4x10xf32>', got 'tensor<4x5xf32>'}}
  %0 = tg.cross_entropy_grad %g, %l, %y : tensor<f32>, tensor<4x10xf32>, tensor<4xi64> -> tensor<4x5xf32>
  return
}

// -----

func.func @cross_entropy_grad_logits_need_a_class_dim(%g: tensor<f32>, %y: tensor<i64>) {
  // expected-error @+1 {{'tg.cross_entropy_grad' op logits must have rank >= 1}}
  %0 = tg.cross_entropy_grad %g, %g, %y : tensor<f32>, tensor<f32>, tensor<i64> -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_grad_labels_match_the_leading_dims(%g: tensor<f32>, %l: tensor<4x10xf32>, %y: tensor<10xi64>) {
  // expected-error @+1 {{'tg.cross_entropy_grad' op labels shape 10 must be the logits shape 4x10 without its last dim}}
  %0 = tg.cross_entropy_grad %g, %l, %y : tensor<f32>, tensor<4x10xf32>, tensor<10xi64> -> tensor<4x10xf32>
  return
}

// -----

// The loss is f32 whatever the logits' type, and so is its gradient.
func.func @cross_entropy_grad_takes_the_f32_loss_gradient(%g: tensor<bf16>, %l: tensor<4x10xbf16>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'tg.cross_entropy_grad' op grad must have element type f32 (the loss's), got 'bf16'}}
  %0 = tg.cross_entropy_grad %g, %l, %y : tensor<bf16>, tensor<4x10xbf16>, tensor<4xi64> -> tensor<4x10xbf16>
  return
}

// -----

func.func @cross_entropy_grad_result_keeps_the_logits_type(%g: tensor<f32>, %l: tensor<4x10xbf16>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'tg.cross_entropy_grad' op result must have type 'tensor<4x10xbf16>', got 'tensor<4x10xf32>'}}
  %0 = tg.cross_entropy_grad %g, %l, %y : tensor<f32>, tensor<4x10xbf16>, tensor<4xi64> -> tensor<4x10xf32>
  return
}

// -----

func.func @cross_entropy_grad_unreduced_grad_is_per_label(%g: tensor<f32>, %l: tensor<4x10xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'tg.cross_entropy_grad' op grad shape scalar must be the labels shape 4 for reduction "none"}}
  %0 = tg.cross_entropy_grad %g, %l, %y {reduction = #tg<loss_reduction none>} : tensor<f32>, tensor<4x10xf32>, tensor<4xi64> -> tensor<4x10xf32>
  return
}

// -----

func.func @cross_entropy_grad_reduced_grad_is_a_scalar(%g: tensor<4xf32>, %l: tensor<4x10xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'tg.cross_entropy_grad' op grad must be a scalar for reduction "sum", got shape 4}}
  %0 = tg.cross_entropy_grad %g, %l, %y {reduction = #tg<loss_reduction sum>} : tensor<4xf32>, tensor<4x10xf32>, tensor<4xi64> -> tensor<4x10xf32>
  return
}

// -----

func.func @cross_entropy_grad_reduction_must_be_known(%g: tensor<f32>, %l: tensor<4x10xf32>, %y: tensor<4xi64>) {
  // expected-error @+2 {{expected ::mlir::tg::LossReduction to be one of: mean, sum, none}}
  // expected-error @+1 {{failed to parse Tg_LossReductionAttr parameter 'value' which is to be a `::mlir::tg::LossReduction`}}
  %0 = tg.cross_entropy_grad %g, %l, %y {reduction = #tg<loss_reduction avg>} : tensor<f32>, tensor<4x10xf32>, tensor<4xi64> -> tensor<4x10xf32>
  return
}

// -----

// The gradient ops check their operands with the forward op's shape rule, and
// say so under their own name.
func.func @attention_grad_operands_form_an_attention(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x16xf32>) {
  // expected-error @+1 {{'tg.attention_grad' op head dims differ: query has 8, key has 16}}
  %0:3 = tg.attention_grad %q, %q, %k, %k : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>)
  return
}

// -----

func.func @attention_grad_checks_the_mask_with_the_forward_rule(%q: tensor<1x2x4x8xf32>, %mask: tensor<3x4xf32>) {
  // expected-error @+1 {{'tg.attention_grad' op mask shape 3x4 does not broadcast to the scores [B, H, T, S] = 1x2x4x4}}
  %0:3 = tg.attention_grad %q, %q, %q, %q mask %mask : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<3x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @attention_grad_dmask_is_shaped_like_the_mask(%q: tensor<1x2x4x8xf32>, %mask: tensor<1x1x4x4xf32>) {
  // expected-error @+1 {{'tg.attention_grad' op dmask must have type 'tensor<1x1x4x4xf32>', got 'tensor<1x2x4x4xf32>'}}
  %0:4 = tg.attention_grad %q, %q, %q, %q mask %mask : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>)
  return
}

// -----

func.func @attention_grad_dmask_needs_a_mask(%q: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{'tg.attention_grad' op has a dmask result but no mask operand}}
  %0:4 = tg.attention_grad %q, %q, %q, %q : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>)
  return
}

// -----

func.func @attention_grad_grad_is_shaped_like_the_output(%g: tensor<1x2x4x4xf32>, %q: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{'tg.attention_grad' op grad must have type 'tensor<1x2x4x8xf32>', got 'tensor<1x2x4x4xf32>'}}
  %0:3 = tg.attention_grad %g, %q, %q, %q : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @attention_grad_dquery_is_shaped_like_query(%q: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{'tg.attention_grad' op dquery must have type 'tensor<1x2x4x8xf32>', got 'tensor<1x2x8x4xf32>'}}
  %0:3 = tg.attention_grad %q, %q, %q, %q : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @attention_grad_dkey_is_shaped_like_key(%q: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{'tg.attention_grad' op dkey must have type 'tensor<1x2x4x8xf32>', got 'tensor<1x2x4x8xf16>'}}
  %0:3 = tg.attention_grad %q, %q, %q, %q : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @attention_grad_dvalue_is_shaped_like_value(%q: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{'tg.attention_grad' op dvalue must have type 'tensor<1x2x4x8xf32>', got 'tensor<1x2x4x4xf32>'}}
  %0:3 = tg.attention_grad %q, %q, %q, %q : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>)
  return
}

// -----

func.func @conv2d_grad_input_operands_form_a_conv(%g: tensor<1x4x6x6xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'tg.conv2d_grad_input' op weight has 3 input channels per group, input has 1 channels in 1 groups}}
  %0 = tg.conv2d_grad_input %g, %w : (tensor<1x4x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<1x1x8x8xf32>
  return
}

// -----

func.func @conv2d_grad_input_grad_is_shaped_like_the_output(%g: tensor<1x4x8x8xf32>, %w: tensor<4x1x3x3xf32>) {
  // expected-error @+1 {{'tg.conv2d_grad_input' op grad must have type 'tensor<1x4x6x6xf32>', got 'tensor<1x4x8x8xf32>'}}
  %0 = tg.conv2d_grad_input %g, %w : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x1x8x8xf32>
  return
}

// -----

func.func @conv2d_grad_weight_grad_is_shaped_like_the_output(%g: tensor<1x4x6x6xf32>, %x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'tg.conv2d_grad_weight' op grad must have type 'tensor<1x4x8x8xf32>', got 'tensor<1x4x6x6xf32>'}}
  %0 = tg.conv2d_grad_weight %g, %x {padding = array<i64: 1, 1>} : (tensor<1x4x6x6xf32>, tensor<1x1x8x8xf32>) -> tensor<4x1x3x3xf32>
  return
}

// -----

func.func @max_pool2d_grad_result_is_shaped_like_input(%g: tensor<1x1x4x4xf32>, %x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'tg.max_pool2d_grad' op result must have type 'tensor<1x1x8x8xf32>', got 'tensor<1x1x4x4xf32>'}}
  %0 = tg.max_pool2d_grad %g, %x {kernel_size = array<i64: 2, 2>} : tensor<1x1x4x4xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @max_pool2d_grad_operands_form_a_pool(%g: tensor<1x1x4x4xf32>, %x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'tg.max_pool2d_grad' op kernel_size values must be >= 1, got 0}}
  %0 = tg.max_pool2d_grad %g, %x {kernel_size = array<i64: 0, 2>} : tensor<1x1x4x4xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  return
}

// -----

func.func @avg_pool2d_grad_grad_is_shaped_like_the_output(%g: tensor<1x1x4x4xf32>, %x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'tg.avg_pool2d_grad' op grad must have type 'tensor<1x1x2x2xf32>', got 'tensor<1x1x4x4xf32>'}}
  %0 = tg.avg_pool2d_grad %g, %x {kernel_size = array<i64: 4, 4>} : tensor<1x1x4x4xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  return
}

// -----

func.func @slice_grad_bounds_fit_the_result(%g: tensor<4x4xf32>) {
  // expected-error @+1 {{'tg.slice_grad' op dim 1: slice [0:5:1] is not within size 4}}
  %0 = tg.slice_grad %g {start = array<i64: 0, 0>, limit = array<i64: 4, 5>} : tensor<4x4xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @slice_grad_grad_is_shaped_like_the_slice(%g: tensor<4x4xf32>) {
  // expected-error @+1 {{'tg.slice_grad' op grad must have type 'tensor<4x2xf32>', got 'tensor<4x4xf32>'}}
  %0 = tg.slice_grad %g {start = array<i64: 0, 2>, limit = array<i64: 4, 4>} : tensor<4x4xf32> -> tensor<4x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// Optimizer ops
//===----------------------------------------------------------------------===//

// -----

func.func @lr_schedule_kind_must_be_known(%s: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+2 {{expected ::mlir::tg::ScheduleKind to be one of: constant, cosine, linear, step, cyclic, wsd}}
  // expected-error @+1 {{failed to parse Tg_ScheduleKindAttr parameter 'value' which is to be a `::mlir::tg::ScheduleKind`}}
  %0 = tg.lr_schedule %s, %lr {kind = #tg<schedule exp>} : tensor<i64>, tensor<f32> -> tensor<f32>
  return
}

// -----

func.func @lr_schedule_step_counts_are_not_negative(%s: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'tg.lr_schedule' op warmup_steps must not be negative, got -5}}
  %0 = tg.lr_schedule %s, %lr {warmup_steps = -5 : i64} : tensor<i64>, tensor<f32> -> tensor<f32>
  return
}

// -----

func.func @lr_schedule_decay_needs_steps_after_warmup(%s: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'tg.lr_schedule' op schedule "cosine" needs total_steps (100) > warmup_steps (100)}}
  %0 = tg.lr_schedule %s, %lr {kind = #tg<schedule cosine>, warmup_steps = 100 : i64, total_steps = 100 : i64} : tensor<i64>, tensor<f32> -> tensor<f32>
  return
}

// -----

func.func @lr_schedule_step_needs_a_step_size(%s: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'tg.lr_schedule' op schedule "step" needs step_size >= 1, got 0}}
  %0 = tg.lr_schedule %s, %lr {kind = #tg<schedule step>} : tensor<i64>, tensor<f32> -> tensor<f32>
  return
}

// -----

func.func @lr_schedule_wsd_decays_within_the_run(%s: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'tg.lr_schedule' op schedule "wsd" needs 1 <= decay_steps <= total_steps - warmup_steps, got 95}}
  %0 = tg.lr_schedule %s, %lr {kind = #tg<schedule wsd>, warmup_steps = 10 : i64, total_steps = 100 : i64, decay_steps = 95 : i64} : tensor<i64>, tensor<f32> -> tensor<f32>
  return
}

// -----

func.func @global_norm_needs_an_input() {
  // expected-error @+1 {{'tg.global_norm' op needs at least one input}}
  %0 = "tg.global_norm"() : () -> tensor<f32>
  return
}

// -----

func.func @optimizer_kind_must_be_known(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+2 {{custom op 'tg.optimizer_update' expected ::mlir::tg::OptimizerKind to be one of: sgd, adam, adamw, rmsprop, adagrad, lamb, lion}}
  // expected-error @+1 {{custom op 'tg.optimizer_update' failed to parse Tg_OptimizerKindAttr parameter 'value' which is to be a `::mlir::tg::OptimizerKind`}}
  %0 = tg.optimizer_update adamax %p, %p, %lr, %s : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64> -> tensor<4xf32>
  return
}

// -----

func.func @optimizer_needs_its_state(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.optimizer_update' op optimizer "adamw" needs 2 state tensors, got 1}}
  %0:2 = tg.optimizer_update adamw %p, %p, %lr, %s, %p : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @optimizer_momentum_adds_a_state_slot(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.optimizer_update' op optimizer "sgd" needs 1 state tensors, got 0}}
  %0 = tg.optimizer_update sgd %p, %p, %lr, %s {momentum = 0.5 : f64} : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64> -> tensor<4xf32>
  return
}

// -----

func.func @optimizer_grad_matches_the_param(%p: tensor<4xf32>, %g: tensor<4xbf16>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.optimizer_update' op grad type 'tensor<4xbf16>' differs from param type 'tensor<4xf32>'}}
  %0 = tg.optimizer_update sgd %p, %g, %lr, %s : tensor<4xf32>, tensor<4xbf16>, tensor<f32>, tensor<i64> -> tensor<4xf32>
  return
}

// -----

func.func @optimizer_state_matches_the_param(%p: tensor<4xf32>, %m: tensor<2xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.optimizer_update' op state 1 (exp_avg_sq) has type 'tensor<2xf32>', param has 'tensor<4xf32>'}}
  %0:3 = tg.optimizer_update adam %p, %p, %lr, %s, %p, %m : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<2xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @optimizer_returns_the_param_and_each_state(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.optimizer_update' op needs 2 results (the param and its state), got 1}}
  %0 = tg.optimizer_update lion %p, %p, %lr, %s, %p : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @optimizer_results_have_the_param_type(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.optimizer_update' op result 1 has type 'tensor<4xbf16>', param has 'tensor<4xf32>'}}
  %0:2 = tg.optimizer_update adagrad %p, %p, %lr, %s, %p : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<4xf32> -> tensor<4xf32>, tensor<4xbf16>
  return
}

// -----

func.func @optimizer_betas_are_below_one(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.optimizer_update' op beta2 must be in [0, 1), got 1}}
  %0:3 = tg.optimizer_update adam %p, %p, %lr, %s, %p, %p {beta2 = 1.0 : f64} : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @optimizer_weight_decay_is_not_negative(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.optimizer_update' op weight_decay must not be negative, got -0.01}}
  %0:3 = tg.optimizer_update adamw %p, %p, %lr, %s, %p, %p {weight_decay = -0.01 : f64} : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @optimizer_nesterov_needs_momentum(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.optimizer_update' op nesterov needs momentum > 0, got 0}}
  %0 = tg.optimizer_update sgd %p, %p, %lr, %s {nesterov = true} : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64> -> tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// #tg.init
//===----------------------------------------------------------------------===//

// -----

// expected-error @+2 {{expected one of [zeros, ones, constant, normal, uniform, xavier_uniform, xavier_normal, kaiming_uniform, kaiming_normal, file] for parameter initializer kind, got: gaussian}}
// expected-error @+1 {{failed to parse Tg_InitializerAttr parameter 'kind'}}
func.func @init_kind_must_be_known(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<gaussian>}) {
  return
}

// -----

// expected-error @+1 {{duplicate or unknown struct parameter name: sigma}}
func.func @init_field_must_be_known(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<normal, sigma = 1.0>}) {
  return
}

// -----

// expected-error @+1 {{normal initializer needs std >= 0, got -0.02}}
func.func @init_normal_std_is_not_negative(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<normal, std = -0.02>}) {
  return
}

// -----

// Hex float literals can spell infinities and NaN.
// expected-error @+1 {{normal initializer needs a finite mean, got nan}}
func.func @init_normal_mean_is_finite(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<normal, mean = 0x7FF8000000000000>}) {
  return
}

// -----

// expected-error @+1 {{uniform initializer needs low <= high, got low 0.5 and high -0.5}}
func.func @init_uniform_bounds_are_ordered(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<uniform, low = 0.5, high = -0.5>}) {
  return
}

// -----

// expected-error @+1 {{uniform initializer needs a finite high, got inf}}
func.func @init_uniform_bounds_are_finite(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<uniform, high = 0x7FF0000000000000>}) {
  return
}

// -----

// expected-error @+1 {{kaiming_uniform initializer needs gain > 0, got 0}}
func.func @init_gain_is_positive(%w: tensor<4x4xf32> {tg.param = "w", tg.init = #tg.init<kaiming_uniform, gain = 0.0>}) {
  return
}

// -----

// expected-error @+1 {{xavier_normal initializer needs a finite gain, got inf}}
func.func @init_gain_is_finite(%w: tensor<4x4xf32> {tg.param = "w", tg.init = #tg.init<xavier_normal, gain = 0x7FF0000000000000>}) {
  return
}

// -----

// expected-error @+1 {{constant initializer needs a finite value, got nan}}
func.func @init_constant_is_finite(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<constant, value = 0x7FF8000000000000>}) {
  return
}

// -----

// expected-error @+1 {{file initializer needs both 'file' and 'key'}}
func.func @init_file_names_file_and_key(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<file, file = "gpt2.safetensors">}) {
  return
}

//===----------------------------------------------------------------------===//
// Argument, result and module attributes
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{'tg.param' must be a non-empty string}}
func.func @param_name_is_not_empty(%w: tensor<4xf32> {tg.param = ""}) {
  return
}

// -----

// expected-error @+1 {{'tg.input' must be a non-empty string}}
func.func @input_name_is_a_string(%x: tensor<4xf32> {tg.input = 1 : i64}) {
  return
}

// -----

// expected-error @+1 {{'tg.state' must be a non-empty string}}
func.func @state_name_is_a_string(%m: tensor<4xf32> {tg.state = ["w", "exp_avg"]}) {
  return
}

// -----

// expected-error @+1 {{'tg.scalar' must be "step", "base_lr" or "micro_batches"}}
func.func @scalar_is_step_base_lr_or_micro_batches(%s: tensor<i64> {tg.scalar = "epoch"}) {
  return
}

// -----

// expected-error @+1 {{'tg.init' on argument 0 must be a #tg.init attribute}}
func.func @init_is_a_tg_init(%w: tensor<4xf32> {tg.param = "w", tg.init = "normal"}) {
  return
}

// -----

// expected-error @+1 {{'tg.frozen' must be a unit attribute}}
func.func @frozen_is_a_unit_attribute(%w: tensor<4xf32> {tg.param = "w", tg.frozen = true}) {
  return
}

// -----

// expected-error @+1 {{'tg.file_shape' on argument 0 must be an array of 1 to 8 positive sizes}}
func.func @file_shape_is_positive(%w: tensor<4x3x4xf32> {tg.param = "w", tg.file_shape = array<i64: 4, 0>}) {
  return
}

// -----

// expected-error @+1 {{'tg.file_shape' on argument 0 has 48 elements, its tensor 36}}
func.func @file_shape_is_a_view(%w: tensor<4x3x3xf32> {tg.param = "w", tg.file_shape = array<i64: 4, 12>}) {
  return
}

// -----

// expected-error @+1 {{'tg.file_shape' on argument 0 must be an array of 1 to 8 positive sizes}}
func.func @file_shape_is_an_array(%w: tensor<4x3x4xf32> {tg.param = "w", tg.file_shape = "4x12"}) {
  return
}

// -----

// expected-error @+1 {{'tg.dim_names' must be an array of strings}}
func.func @dim_names_are_strings(%x: tensor<4xf32> {tg.input = "x", tg.dim_names = [0]}) {
  return
}

// -----

// expected-error @+1 {{'tg.dim_names' on argument 0 has 1 names for a tensor of rank 2}}
func.func @dim_names_name_every_dim(%x: tensor<4x8xf32> {tg.input = "x", tg.dim_names = ["batch"]}) {
  return
}

// -----

// expected-error @+1 {{'tg.dim_names' entries must be "batch", "seq" or "", got "time"}}
func.func @dim_names_are_batch_or_seq(%x: tensor<4x8xf32> {tg.input = "x", tg.dim_names = ["batch", "time"]}) {
  return
}

// -----

// expected-error @+1 {{unknown tg argument attribute 'tg.parameter'}}
func.func @unknown_argument_attribute(%w: tensor<4xf32> {tg.parameter = "w"}) {
  return
}

// -----

// expected-error @+1 {{'tg.output' must be a non-empty string}}
func.func @output_name_is_not_empty(%x: tensor<f32>) -> (tensor<f32> {tg.output = ""}) {
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{'tg.grad' must be a non-empty string}}
func.func @grad_names_a_param(%x: tensor<f32>) -> (tensor<f32> {tg.grad}) {
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{'tg.update' must be a non-empty string}}
func.func @update_names_a_param_or_state(%x: tensor<f32>) -> (tensor<f32> {tg.update = 0 : i64}) {
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{'tg.metric' must be a non-empty string}}
func.func @metric_has_a_name(%x: tensor<f32>) -> (tensor<f32> {tg.metric = ""}) {
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{unknown tg result attribute 'tg.param'}}
func.func @param_is_not_a_result_attribute(%x: tensor<f32>) -> (tensor<f32> {tg.param = "w"}) {
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{'tg.model' must be a non-empty string}}
module attributes {tg.model = ""} {
}

// -----

// expected-error @+1 {{'tg.training' must be a dictionary}}
module attributes {tg.model = "mlp", tg.training = [32]} {
}

// -----

// The precision policy tg-precision applied: one it knows (an enum: another
// name is a parse error that lists them).
// expected-error @+2 {{expected ::mlir::tg::PrecisionPolicy to be one of: fp32, bf16}}
// expected-error @+1 {{failed to parse Tg_PrecisionPolicyAttr parameter 'value'}}
module attributes {tg.precision = #tg<precision fp16>} {
}

// -----

// expected-error @+1 {{'tg.precision' must be #tg<precision fp32|bf16>, got 16 : i64}}
module attributes {tg.precision = 16} {
}

// -----

// expected-error @+1 {{'tg.precision' must be #tg<precision fp32|bf16>, got "bf16"}}
module attributes {tg.precision = "bf16"} {
}

// -----

// The phase tgc recorded: one of its phases, as the enum.
// expected-error @+2 {{expected ::mlir::tg::IrPhase to be one of: import, precision, autodiff, optimizer, sharding, partition, pipeline, fusion, schedule, memory, layers}}
// expected-error @+1 {{failed to parse Tg_IrPhaseAttr parameter 'value'}}
module attributes {tg.phase = #tg<phase codegen>} {
}

// -----

// expected-error @+1 {{'tg.phase' must be #tg<phase NAME> (import, precision, autodiff, optimizer, sharding, partition, pipeline, fusion, schedule, memory or layers), got "layers"}}
module attributes {tg.phase = "layers"} {
}

// -----

// A parameter's own preset: one of tg-propagate-sharding's.
// expected-error @+2 {{expected ::mlir::tg::ShardPreset to be one of: dp, zero1, zero2, zero3, tp, sp, megatron}}
// expected-error @+1 {{failed to parse Tg_ShardPresetAttr parameter 'value'}}
func.func @preset_unknown(%w: tensor<4xf32> {tg.param = "w", tg.shard = #tg<shard fsdp>}) {
  return
}

// -----

// expected-error @+1 {{'tg.shard' must be #tg<shard dp|zero1|zero2|zero3|tp|sp|megatron>, got "zero3"}}
func.func @preset_string(%w: tensor<4xf32> {tg.param = "w", tg.shard = "zero3"}) {
  return
}

// -----

func.func @precision_belongs_on_the_module(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.precision' belongs on the module, not on 'tg.relu'}}
  %0 = tg.relu %x {tg.precision = #tg<precision bf16>} : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{unknown tg attribute 'tg.param' on 'builtin.module'}}
module attributes {tg.param = "w"} {
}

// -----

func.func @model_attributes_belong_on_the_module(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.model' belongs on the module, not on 'tg.relu'}}
  %0 = tg.relu %x {tg.model = "mlp"} : tensor<4xf32>
  return
}

// -----

func.func @unknown_op_attribute(%x: tensor<4xf32>) {
  // expected-error @+1 {{unknown tg attribute 'tg.fused' on 'tg.relu'}}
  %0 = tg.relu %x {tg.fused} : tensor<4xf32>
  return
}

// -----

func.func @all_reduce_needs_an_input() {
  // expected-error @+1 {{'tg.all_reduce' op needs at least one input}}
  "tg.all_reduce"() : () -> ()
  return
}

// -----

func.func @all_reduce_reduction_must_be_known(%g: tensor<4xf32>) {
  // expected-error @+2 {{expected ::mlir::tg::Reduction to be one of: sum, mean}}
  // expected-error @+1 {{failed to parse Tg_ReductionAttr parameter 'value' which is to be a `::mlir::tg::Reduction`}}
  %0 = tg.all_reduce %g {reduction = #tg<reduction max>} : tensor<4xf32>
  return
}

// -----

func.func @all_reduce_needs_a_mesh_axis(%g: tensor<4xf32>) {
  // expected-error @+1 {{'tg.all_reduce' op needs a mesh axis}}
  %0 = tg.all_reduce %g {mesh_axis = ""} : tensor<4xf32>
  return
}

// -----

func.func @all_reduce_results_match_the_inputs(%g: tensor<4xf32>) {
  // expected-error @+2 {{'tg.all_reduce' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<5xf32>'}}
  // expected-error @+1 {{'tg.all_reduce' op failed to infer returned types}}
  %0 = "tg.all_reduce"(%g) : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @all_reduce_bucket_is_not_negative(%g: tensor<4xf32>) {
  // expected-error @+1 {{'tg.all_reduce' op attribute 'bucket' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %0 = tg.all_reduce %g {bucket = -1 : i64} : tensor<4xf32>
  return
}

// -----

func.func @await_needs_a_bucket(%g: tensor<4xf32>) {
  %r = tg.all_reduce %g : tensor<4xf32>
  // expected-error @+1 {{'tg.await' op must wait for the results of a tg.all_reduce bucket (one with `bucket`)}}
  tg.await %r : tensor<4xf32>
  return
}

// -----

func.func @await_names_every_result(%g: tensor<4xf32>, %h: tensor<8xf32>) {
  %r:2 = tg.all_reduce %g, %h {bucket = 0 : i64} : tensor<4xf32>, tensor<8xf32>
  // expected-error @+1 {{'tg.await' op must name every result of bucket 0, in order (2)}}
  tg.await %r#1, %r#0 : tensor<8xf32>, tensor<4xf32>
  return
}

// -----

func.func @await_before_readers(%g: tensor<4xf32>) -> tensor<4xf32> {
  %r = tg.all_reduce %g {bucket = 3 : i64} : tensor<4xf32>
  %n = tg.neg %r : tensor<4xf32>
  // expected-error @+1 {{'tg.await' op comes after 'tg.neg', which reads bucket 3 before the step waits for it}}
  tg.await %r : tensor<4xf32>
  return %n : tensor<4xf32>
}

// -----

func.func @bucket_awaited_once(%g: tensor<4xf32>) {
  // expected-error @+1 {{'tg.all_reduce' op is bucket 1, which no tg.await waits for; a bucket has exactly one (tg-schedule places it)}}
  %r = tg.all_reduce %g {bucket = 1 : i64} : tensor<4xf32>
  return
}

// -----

func.func @bucket_awaited_twice(%g: tensor<4xf32>) {
  // expected-error @+1 {{'tg.all_reduce' op is bucket 1, which several tg.await wait for; a bucket has exactly one (tg-schedule places it)}}
  %r = tg.all_reduce %g {bucket = 1 : i64} : tensor<4xf32>
  tg.await %r : tensor<4xf32>
  tg.await %r : tensor<4xf32>
  return
}

// -----

// The micro-batches a step was built for: a count on a function.
// expected-error @+1 {{'tg.micro_batches' must be a count of at least 1 on a function}}
func.func @no_micro_batches() attributes {tg.micro_batches = 0 : i64} {
  return
}

// -----

func.func @micro_batches_belong_on_a_function(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.micro_batches' must be a count of at least 1 on a function}}
  %0 = tg.relu %x {tg.micro_batches = 2 : i64} : tensor<4xf32>
  return
}

// -----

// Pipeline stages a plan is priced with: on the module, both counts at
// least 1.
// expected-error @+1 {{'tg.pipeline' must be {stages = P, virtual_stages = V} with P and V at least 1 (and after tg-pipeline-schedule its schedule = "name" and micro_batches = M), got {stages = 0 : i64, virtual_stages = 1 : i64}}}
module attributes {tg.pipeline = {stages = 0 : i64, virtual_stages = 1 : i64}} {
}

// -----

// expected-error @+1 {{'tg.pipeline' must be {stages = P, virtual_stages = V} with P and V at least 1 (and after tg-pipeline-schedule its schedule = "name" and micro_batches = M), got {stages = 4 : i64}}}
module attributes {tg.pipeline = {stages = 4 : i64}} {
}

// -----

// expected-error @+1 {{'tg.pipeline' belongs on the module, not on 'func.func'}}
func.func @pipeline_belongs_on_the_module() attributes {tg.pipeline = {stages = 2 : i64, virtual_stages = 1 : i64}} {
  return
}
