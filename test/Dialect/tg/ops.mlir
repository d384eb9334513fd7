// RUN: tg-opt %s | tg-opt | FileCheck %s

// Every tg op and attribute survives printing and parsing again. Default-valued
// attributes are left out of the printed form; given values are kept.

// CHECK: module attributes {tg.model = "mlp", tg.precision = #tg<precision bf16>, tg.training = {batch_size = 32 : i64, lr = 1.000000e-03 : f64}}
module attributes {tg.model = "mlp", tg.precision = #tg<precision bf16>, tg.training = {batch_size = 32 : i64, lr = 1.0e-3 : f64}} {

//===----------------------------------------------------------------------===//
// Function argument and result attributes
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @forward_marks_params_inputs_and_outputs
// CHECK-SAME: tensor<64x10xf32> {tg.init = #tg.init<normal, std = 2.000000e-02>, tg.param = "fc.weight"}
// CHECK-SAME: tensor<10xf32> {tg.frozen, tg.init = #tg.init<zeros>, tg.param = "fc.bias"}
// CHECK-SAME: tensor<32x64xf32> {tg.dim_names = ["batch", ""], tg.input = "x"}
// CHECK-SAME: tensor<32x8xi64> {tg.dim_names = ["batch", "seq"], tg.input = "y"}
// CHECK-SAME: -> (tensor<f32> {tg.output = "loss"}, tensor<64x10xf32> {tg.grad = "fc.weight"})
func.func @forward_marks_params_inputs_and_outputs(
    %w: tensor<64x10xf32> {tg.param = "fc.weight", tg.init = #tg.init<normal, std = 0.02>},
    %b: tensor<10xf32> {tg.param = "fc.bias", tg.init = #tg.init<zeros>, tg.frozen},
    %x: tensor<32x64xf32> {tg.input = "x", tg.dim_names = ["batch", ""]},
    %y: tensor<32x8xi64> {tg.input = "y", tg.dim_names = ["batch", "seq"]},
    %loss: tensor<f32>)
    -> (tensor<f32> {tg.output = "loss"}, tensor<64x10xf32> {tg.grad = "fc.weight"}) {
  return %loss, %w : tensor<f32>, tensor<64x10xf32>
}

// CHECK-LABEL: func.func @train_step_marks_state_scalars_updates_and_metrics
// CHECK-SAME: tensor<4xf32> {tg.state = "w.exp_avg"}
// CHECK-SAME: tensor<i64> {tg.scalar = "step"}
// CHECK-SAME: tensor<f32> {tg.scalar = "base_lr"}
// CHECK-SAME: -> (tensor<4xf32> {tg.update = "w.exp_avg"}, tensor<f32> {tg.metric = "lr"})
func.func @train_step_marks_state_scalars_updates_and_metrics(
    %m: tensor<4xf32> {tg.state = "w.exp_avg"},
    %step: tensor<i64> {tg.scalar = "step"},
    %lr: tensor<f32> {tg.scalar = "base_lr"})
    -> (tensor<4xf32> {tg.update = "w.exp_avg"}, tensor<f32> {tg.metric = "lr"}) {
  return %m, %lr : tensor<4xf32>, tensor<f32>
}

//===----------------------------------------------------------------------===//
// #tg.init: every kind, with defaulted and given fields
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @init_kinds_with_default_fields
// CHECK-SAME: #tg.init<zeros>
// CHECK-SAME: #tg.init<ones>
// CHECK-SAME: #tg.init<constant>
// CHECK-SAME: #tg.init<normal>
// CHECK-SAME: #tg.init<uniform>
// CHECK-SAME: #tg.init<xavier_uniform>
// CHECK-SAME: #tg.init<xavier_normal>
// CHECK-SAME: #tg.init<kaiming_uniform>
// CHECK-SAME: #tg.init<kaiming_normal>
func.func @init_kinds_with_default_fields(
    %a: tensor<4xf32> {tg.param = "a", tg.init = #tg.init<zeros>},
    %b: tensor<4xf32> {tg.param = "b", tg.init = #tg.init<ones>},
    %c: tensor<4xf32> {tg.param = "c", tg.init = #tg.init<constant>},
    %d: tensor<4xf32> {tg.param = "d", tg.init = #tg.init<normal>},
    %e: tensor<4xf32> {tg.param = "e", tg.init = #tg.init<uniform>},
    %f: tensor<4x4xf32> {tg.param = "f", tg.init = #tg.init<xavier_uniform>},
    %g: tensor<4x4xf32> {tg.param = "g", tg.init = #tg.init<xavier_normal>},
    %h: tensor<4x4xf32> {tg.param = "h", tg.init = #tg.init<kaiming_uniform>},
    %i: tensor<4x4xf32> {tg.param = "i", tg.init = #tg.init<kaiming_normal>}) {
  return
}

// Fields equal to their default are dropped; the rest print in declaration
// order, whatever order they were written in.
// CHECK-LABEL: func.func @init_kinds_with_given_fields
// CHECK-SAME: #tg.init<constant, value = 5.000000e-01>
// CHECK-SAME: #tg.init<normal, mean = 1.000000e-01, std = 0.0123456789>
// CHECK-SAME: #tg.init<normal>
// CHECK-SAME: #tg.init<uniform, low = -2.500000e-01, high = 2.500000e-01>
// CHECK-SAME: #tg.init<xavier_uniform, gain = 2.000000e+00>
// CHECK-SAME: #tg.init<kaiming_normal, gain = 1.4142135623730951>
// CHECK-SAME: #tg.init<file, file = "gpt2.safetensors", key = "wte.weight">
func.func @init_kinds_with_given_fields(
    %a: tensor<4xf32> {tg.param = "a", tg.init = #tg.init<constant, value = 0.5>},
    %b: tensor<4xf32> {tg.param = "b", tg.init = #tg.init<normal, std = 0.0123456789, mean = 0.1>},
    %c: tensor<4xf32> {tg.param = "c", tg.init = #tg.init<normal, mean = 0.0, std = 1.0>},
    %d: tensor<4xf32> {tg.param = "d", tg.init = #tg.init<uniform, low = -0.25, high = 0.25>},
    %e: tensor<4x4xf32> {tg.param = "e", tg.init = #tg.init<xavier_uniform, gain = 2.0>},
    %f: tensor<4x4xf32> {tg.param = "f", tg.init = #tg.init<kaiming_normal, gain = 1.4142135623730951>},
    %g: tensor<4x4xf32> {tg.param = "g", tg.init = #tg.init<file, file = "gpt2.safetensors", key = "wte.weight">}) {
  return
}

//===----------------------------------------------------------------------===//
// Constants and elementwise ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @constants_of_each_element_kind
// CHECK: tg.constant dense<5.000000e-01> : tensor<f32>
// CHECK: tg.constant dense<[1, 2, 3]> : tensor<3xi64>
// CHECK: tg.constant dense<[true, false]> : tensor<2xi1>
// CHECK: tg.constant dense<1.000000e+00> : tensor<2x2xbf16>
func.func @constants_of_each_element_kind() -> (tensor<f32>, tensor<3xi64>, tensor<2xi1>, tensor<2x2xbf16>) {
  %0 = tg.constant dense<0.5> : tensor<f32>
  %1 = tg.constant dense<[1, 2, 3]> : tensor<3xi64>
  %2 = tg.constant dense<[true, false]> : tensor<2xi1>
  %3 = tg.constant dense<1.0> : tensor<2x2xbf16>
  return %0, %1, %2, %3 : tensor<f32>, tensor<3xi64>, tensor<2xi1>, tensor<2x2xbf16>
}

// CHECK-LABEL: func.func @binary_ops_broadcast
// CHECK-SAME: (%[[A:[^:]+]]: tensor<4x8xf32>, %[[B:[^:]+]]: tensor<8xf32>, %[[S:[^:]+]]: tensor<f32>)
// CHECK: %[[ADD:.+]] = tg.add %[[A]], %[[B]] : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
// CHECK: %[[SUB:.+]] = tg.sub %[[ADD]], %[[S]] : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
// CHECK: %[[MUL:.+]] = tg.mul %[[B]], %[[SUB]] : tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: %[[DIV:.+]] = tg.div %[[MUL]], %[[A]] : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: %[[POW:.+]] = tg.pow %[[DIV]], %[[S]] : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
// CHECK: %[[MAX:.+]] = tg.maximum %[[POW]], %[[B]] : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
// CHECK: %[[MIN:.+]] = tg.minimum %[[MAX]], %[[S]] : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
// CHECK: return %[[MIN]]
func.func @binary_ops_broadcast(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %s: tensor<f32>) -> tensor<4x8xf32> {
  %0 = tg.add %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %1 = tg.sub %0, %s : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %2 = tg.mul %b, %1 : tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %3 = tg.div %2, %a : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %4 = tg.pow %3, %s : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %5 = tg.maximum %4, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %6 = tg.minimum %5, %s : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  return %6 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @binary_ops_on_integers_and_low_precision_floats
// CHECK: tg.add %{{.+}}, %{{.+}} : tensor<4x1xi32>, tensor<1x3xi32> -> tensor<4x3xi32>
// CHECK: tg.mul %{{.+}}, %{{.+}} : tensor<2xf8E4M3FN>, tensor<2xf8E4M3FN> -> tensor<2xf8E4M3FN>
// CHECK: tg.sub %{{.+}}, %{{.+}} : tensor<2xf8E5M2>, tensor<2xf8E5M2> -> tensor<2xf8E5M2>
// CHECK: tg.div %{{.+}}, %{{.+}} : tensor<2xf16>, tensor<2xf16> -> tensor<2xf16>
func.func @binary_ops_on_integers_and_low_precision_floats(
    %a: tensor<4x1xi32>, %b: tensor<1x3xi32>, %c: tensor<2xf8E4M3FN>,
    %d: tensor<2xf8E5M2>, %e: tensor<2xf16>)
    -> (tensor<4x3xi32>, tensor<2xf8E4M3FN>, tensor<2xf8E5M2>, tensor<2xf16>) {
  %0 = tg.add %a, %b : tensor<4x1xi32>, tensor<1x3xi32> -> tensor<4x3xi32>
  %1 = tg.mul %c, %c : tensor<2xf8E4M3FN>, tensor<2xf8E4M3FN> -> tensor<2xf8E4M3FN>
  %2 = tg.sub %d, %d : tensor<2xf8E5M2>, tensor<2xf8E5M2> -> tensor<2xf8E5M2>
  %3 = tg.div %e, %e : tensor<2xf16>, tensor<2xf16> -> tensor<2xf16>
  return %0, %1, %2, %3 : tensor<4x3xi32>, tensor<2xf8E4M3FN>, tensor<2xf8E5M2>, tensor<2xf16>
}

// CHECK-LABEL: func.func @compare_with_each_predicate_and_select
// CHECK-SAME: (%[[A:[^:]+]]: tensor<4xf32>, %[[B:[^:]+]]: tensor<f32>)
// CHECK: %[[EQ:.+]] = tg.compare eq, %[[A]], %[[B]] : tensor<4xf32>, tensor<f32> -> tensor<4xi1>
// CHECK: tg.compare ne, %[[A]], %[[B]]
// CHECK: tg.compare lt, %[[A]], %[[B]]
// CHECK: tg.compare le, %[[A]], %[[B]]
// CHECK: tg.compare gt, %[[A]], %[[B]]
// CHECK: tg.compare ge, %[[A]], %[[B]]
// CHECK: %[[SEL:.+]] = tg.select %[[EQ]], %[[A]], %[[B]] : tensor<4xi1>, tensor<4xf32>, tensor<f32> -> tensor<4xf32>
// CHECK: return %[[SEL]]
func.func @compare_with_each_predicate_and_select(%a: tensor<4xf32>, %b: tensor<f32>) -> tensor<4xf32> {
  %eq = tg.compare eq, %a, %b : tensor<4xf32>, tensor<f32> -> tensor<4xi1>
  %ne = tg.compare ne, %a, %b : tensor<4xf32>, tensor<f32> -> tensor<4xi1>
  %lt = tg.compare lt, %a, %b : tensor<4xf32>, tensor<f32> -> tensor<4xi1>
  %le = tg.compare le, %a, %b : tensor<4xf32>, tensor<f32> -> tensor<4xi1>
  %gt = tg.compare gt, %a, %b : tensor<4xf32>, tensor<f32> -> tensor<4xi1>
  %ge = tg.compare ge, %a, %b : tensor<4xf32>, tensor<f32> -> tensor<4xi1>
  %r = tg.select %eq, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @unary_ops
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8xf32>, %[[I:[^:]+]]: tensor<4xi64>)
// CHECK: %[[NEG:.+]] = tg.neg %[[X]] : tensor<4x8xf32>
// CHECK: %[[ABS:.+]] = tg.abs %[[NEG]] : tensor<4x8xf32>
// CHECK: %[[EXP:.+]] = tg.exp %[[ABS]] : tensor<4x8xf32>
// CHECK: %[[LOG:.+]] = tg.log %[[EXP]] : tensor<4x8xf32>
// CHECK: %[[SQRT:.+]] = tg.sqrt %[[LOG]] : tensor<4x8xf32>
// CHECK: %[[RSQRT:.+]] = tg.rsqrt %[[SQRT]] : tensor<4x8xf32>
// CHECK: %[[TANH:.+]] = tg.tanh %[[RSQRT]] : tensor<4x8xf32>
// CHECK: %[[RELU:.+]] = tg.relu %[[TANH]] : tensor<4x8xf32>
// CHECK: %[[SILU:.+]] = tg.silu %[[RELU]] : tensor<4x8xf32>
// CHECK: %[[SIG:.+]] = tg.sigmoid %[[SILU]] : tensor<4x8xf32>
// CHECK: %[[INEG:.+]] = tg.neg %[[I]] : tensor<4xi64>
// CHECK: %[[IABS:.+]] = tg.abs %[[INEG]] : tensor<4xi64>
// CHECK: return %[[SIG]], %[[IABS]]
func.func @unary_ops(%x: tensor<4x8xf32>, %i: tensor<4xi64>) -> (tensor<4x8xf32>, tensor<4xi64>) {
  %0 = tg.neg %x : tensor<4x8xf32>
  %1 = tg.abs %0 : tensor<4x8xf32>
  %2 = tg.exp %1 : tensor<4x8xf32>
  %3 = tg.log %2 : tensor<4x8xf32>
  %4 = tg.sqrt %3 : tensor<4x8xf32>
  %5 = tg.rsqrt %4 : tensor<4x8xf32>
  %6 = tg.tanh %5 : tensor<4x8xf32>
  %7 = tg.relu %6 : tensor<4x8xf32>
  %8 = tg.silu %7 : tensor<4x8xf32>
  %9 = tg.sigmoid %8 : tensor<4x8xf32>
  %10 = tg.neg %i : tensor<4xi64>
  %11 = tg.abs %10 : tensor<4xi64>
  return %9, %11 : tensor<4x8xf32>, tensor<4xi64>
}

// CHECK-LABEL: func.func @sin_and_cos
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8xbf16>)
// CHECK: %[[SIN:.+]] = tg.sin %[[X]] : tensor<4x8xbf16>
// CHECK: %[[COS:.+]] = tg.cos %[[SIN]] : tensor<4x8xbf16>
// CHECK: return %[[COS]]
func.func @sin_and_cos(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %0 = tg.sin %x : tensor<4x8xbf16>
  %1 = tg.cos %0 : tensor<4x8xbf16>
  return %1 : tensor<4x8xbf16>
}

// Defaults (dimension 0, start 0, step 1) are not printed.
// CHECK-LABEL: func.func @iota_along_a_dim_with_start_and_step
// CHECK: tg.iota : tensor<64x1xf32>
// CHECK: tg.iota {dimension = -1 : i64, step = 2.000000e+00 : f64} : tensor<1x32xf32>
// CHECK: tg.iota {dimension = 1 : i64, start = -2.000000e+00 : f64, step = 3.000000e+00 : f64} : tensor<2x5xi32>
// CHECK: tg.iota : tensor<8xi64>
// CHECK: tg.iota {start = 5.000000e-01 : f64} : tensor<3x2xbf16>
func.func @iota_along_a_dim_with_start_and_step()
    -> (tensor<64x1xf32>, tensor<1x32xf32>, tensor<2x5xi32>, tensor<8xi64>, tensor<3x2xbf16>) {
  %0 = tg.iota : tensor<64x1xf32>
  %1 = tg.iota {dimension = -1 : i64, step = 2.0 : f64} : tensor<1x32xf32>
  %2 = tg.iota {dimension = 1 : i64, start = -2.0 : f64, step = 3.0 : f64} : tensor<2x5xi32>
  %3 = tg.iota {dimension = 0 : i64, start = 0.0 : f64, step = 1.0 : f64} : tensor<8xi64>
  %4 = tg.iota {start = 0.5 : f64} : tensor<3x2xbf16>
  return %0, %1, %2, %3, %4 : tensor<64x1xf32>, tensor<1x32xf32>, tensor<2x5xi32>, tensor<8xi64>, tensor<3x2xbf16>
}

// The default approximation "none" is not printed.
// CHECK-LABEL: func.func @gelu_exact_and_tanh
// CHECK: tg.gelu %{{.+}} : tensor<4xf32>
// CHECK: tg.gelu %{{.+}} : tensor<4xf32>
// CHECK: tg.gelu %{{.+}} {approximate = #tg<approximation tanh>} : tensor<4xf32>
func.func @gelu_exact_and_tanh(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = tg.gelu %x : tensor<4xf32>
  %1 = tg.gelu %x {approximate = #tg<approximation none>} : tensor<4xf32>
  %2 = tg.gelu %x {approximate = #tg<approximation tanh>} : tensor<4xf32>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @cast_between_element_types
// CHECK: %[[H:.+]] = tg.cast %{{.+}} : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK: %[[F8:.+]] = tg.cast %[[H]] : tensor<4x8xbf16> to tensor<4x8xf8E4M3FN>
// CHECK: %[[I:.+]] = tg.cast %[[F8]] : tensor<4x8xf8E4M3FN> to tensor<4x8xi32>
// CHECK: %[[B:.+]] = tg.cast %[[I]] : tensor<4x8xi32> to tensor<4x8xi1>
// CHECK: return %[[B]]
func.func @cast_between_element_types(%x: tensor<4x8xf32>) -> tensor<4x8xi1> {
  %0 = tg.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>
  %1 = tg.cast %0 : tensor<4x8xbf16> to tensor<4x8xf8E4M3FN>
  %2 = tg.cast %1 : tensor<4x8xf8E4M3FN> to tensor<4x8xi32>
  %3 = tg.cast %2 : tensor<4x8xi32> to tensor<4x8xi1>
  return %3 : tensor<4x8xi1>
}

//===----------------------------------------------------------------------===//
// Matmul and reductions
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @matmul_plain_transposed_and_batched
// CHECK: tg.matmul %{{.+}}, %{{.+}} : tensor<32x64xf32>, tensor<64x10xf32> -> tensor<32x10xf32>
// CHECK: tg.matmul %{{.+}}, %{{.+}} {transpose_lhs = true} : tensor<64x32xf32>, tensor<64x10xf32> -> tensor<32x10xf32>
// CHECK: tg.matmul %{{.+}}, %{{.+}} {transpose_rhs = true} : tensor<8x16x64xf32>, tensor<10x64xf32> -> tensor<8x16x10xf32>
// CHECK: tg.matmul %{{.+}}, %{{.+}} {transpose_lhs = true, transpose_rhs = true} : tensor<2x1x64x32xf32>, tensor<3x10x64xf32> -> tensor<2x3x32x10xf32>
// CHECK: tg.matmul %{{.+}}, %{{.+}} : tensor<32x64xf32>, tensor<64x10xf32> -> tensor<32x10xf32>
func.func @matmul_plain_transposed_and_batched(
    %a: tensor<32x64xf32>, %at: tensor<64x32xf32>, %w: tensor<64x10xf32>,
    %x: tensor<8x16x64xf32>, %wt: tensor<10x64xf32>,
    %p: tensor<2x1x64x32xf32>, %q: tensor<3x10x64xf32>) {
  %0 = tg.matmul %a, %w : tensor<32x64xf32>, tensor<64x10xf32> -> tensor<32x10xf32>
  %1 = tg.matmul %at, %w {transpose_lhs = true} : tensor<64x32xf32>, tensor<64x10xf32> -> tensor<32x10xf32>
  %2 = tg.matmul %x, %wt {transpose_rhs = true} : tensor<8x16x64xf32>, tensor<10x64xf32> -> tensor<8x16x10xf32>
  %3 = tg.matmul %p, %q {transpose_lhs = true, transpose_rhs = true} : tensor<2x1x64x32xf32>, tensor<3x10x64xf32> -> tensor<2x3x32x10xf32>
  %4 = tg.matmul %a, %w {transpose_lhs = false, transpose_rhs = false} : tensor<32x64xf32>, tensor<64x10xf32> -> tensor<32x10xf32>
  return
}

// CHECK-LABEL: func.func @reductions_over_dims
// CHECK: tg.reduce_sum %{{.+}} : tensor<4x8x2xf32> -> tensor<f32>
// CHECK: tg.reduce_sum %{{.+}} {dims = array<i64: 1>} : tensor<4x8x2xf32> -> tensor<4x2xf32>
// CHECK: tg.reduce_mean %{{.+}} {dims = array<i64: -1, 0>, keepdim = true} : tensor<4x8x2xf32> -> tensor<1x8x1xf32>
// CHECK: tg.reduce_max %{{.+}} {dims = array<i64: 2>} : tensor<4x8x2xf32> -> tensor<4x8xf32>
// CHECK: tg.reduce_sum %{{.+}} {keepdim = true} : tensor<4x8x2xi64> -> tensor<1x1x1xi64>
func.func @reductions_over_dims(%x: tensor<4x8x2xf32>, %i: tensor<4x8x2xi64>) {
  %0 = tg.reduce_sum %x : tensor<4x8x2xf32> -> tensor<f32>
  %1 = tg.reduce_sum %x {dims = array<i64: 1>} : tensor<4x8x2xf32> -> tensor<4x2xf32>
  %2 = tg.reduce_mean %x {dims = array<i64: -1, 0>, keepdim = true} : tensor<4x8x2xf32> -> tensor<1x8x1xf32>
  %3 = tg.reduce_max %x {dims = array<i64: 2>, keepdim = false} : tensor<4x8x2xf32> -> tensor<4x8xf32>
  %4 = tg.reduce_sum %i {keepdim = true} : tensor<4x8x2xi64> -> tensor<1x1x1xi64>
  return
}

// The default axis -1 is not printed.
// CHECK-LABEL: func.func @softmax_and_log_softmax
// CHECK: tg.softmax %{{.+}} : tensor<4x10xf32>
// CHECK: tg.softmax %{{.+}} {axis = 0 : i64} : tensor<4x10xf32>
// CHECK: tg.log_softmax %{{.+}} : tensor<4x10xf32>
// CHECK: tg.log_softmax %{{.+}} {axis = -2 : i64} : tensor<4x10xf32>
func.func @softmax_and_log_softmax(%x: tensor<4x10xf32>) {
  %0 = tg.softmax %x {axis = -1} : tensor<4x10xf32>
  %1 = tg.softmax %x {axis = 0} : tensor<4x10xf32>
  %2 = tg.log_softmax %x : tensor<4x10xf32>
  %3 = tg.log_softmax %x {axis = -2} : tensor<4x10xf32>
  return
}

//===----------------------------------------------------------------------===//
// Normalization, dropout, embedding, loss, attention
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @layer_norm_with_and_without_affine_params
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8x768xf32>, %[[G:[^:]+]]: tensor<768xf32>, %[[B:[^:]+]]: tensor<768xf32>)
// CHECK: tg.layer_norm %[[X]] : (tensor<8x768xf32>) -> tensor<8x768xf32>
// CHECK: tg.layer_norm %[[X]] weight %[[G]] : (tensor<8x768xf32>, tensor<768xf32>) -> tensor<8x768xf32>
// CHECK: tg.layer_norm %[[X]] bias %[[B]] : (tensor<8x768xf32>, tensor<768xf32>) -> tensor<8x768xf32>
// CHECK: tg.layer_norm %[[X]] weight %[[G]] bias %[[B]] {eps = 1.000000e-03 : f64} : (tensor<8x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<8x768xf32>
func.func @layer_norm_with_and_without_affine_params(%x: tensor<8x768xf32>, %g: tensor<768xf32>, %b: tensor<768xf32>) {
  %0 = tg.layer_norm %x : (tensor<8x768xf32>) -> tensor<8x768xf32>
  %1 = tg.layer_norm %x weight %g : (tensor<8x768xf32>, tensor<768xf32>) -> tensor<8x768xf32>
  %2 = tg.layer_norm %x bias %b {eps = 1.0e-5 : f64} : (tensor<8x768xf32>, tensor<768xf32>) -> tensor<8x768xf32>
  %3 = tg.layer_norm %x weight %g bias %b {eps = 1.0e-3 : f64} : (tensor<8x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<8x768xf32>
  return
}

// CHECK-LABEL: func.func @rms_norm_with_and_without_weight
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8x512xbf16>, %[[G:[^:]+]]: tensor<512xbf16>)
// CHECK: tg.rms_norm %[[X]] : (tensor<8x512xbf16>) -> tensor<8x512xbf16>
// CHECK: tg.rms_norm %[[X]] weight %[[G]] {eps = 1.000000e-05 : f64} : (tensor<8x512xbf16>, tensor<512xbf16>) -> tensor<8x512xbf16>
func.func @rms_norm_with_and_without_weight(%x: tensor<8x512xbf16>, %g: tensor<512xbf16>) {
  %0 = tg.rms_norm %x : (tensor<8x512xbf16>) -> tensor<8x512xbf16>
  %1 = tg.rms_norm %x weight %g {eps = 1.0e-5 : f64} : (tensor<8x512xbf16>, tensor<512xbf16>) -> tensor<8x512xbf16>
  return
}

// CHECK-LABEL: func.func @dropout_default_and_seeded
// CHECK: tg.dropout %{{.+}} : tensor<8x64xf32>
// CHECK: tg.dropout %{{.+}} {p = 5.000000e-01 : f64, seed = 7 : i64} : tensor<8x64xf32>
// CHECK: tg.dropout %{{.+}} {p = 0.000000e+00 : f64} : tensor<8x64xf32>
func.func @dropout_default_and_seeded(%x: tensor<8x64xf32>) {
  %0 = tg.dropout %x {p = 0.1 : f64, seed = 0 : i64} : tensor<8x64xf32>
  %1 = tg.dropout %x {p = 0.5 : f64, seed = 7 : i64} : tensor<8x64xf32>
  %2 = tg.dropout %x {p = 0.0 : f64} : tensor<8x64xf32>
  return
}

// CHECK-LABEL: func.func @embedding_gathers_rows
// CHECK: tg.embedding %{{.+}}, %{{.+}} : tensor<256x128xf32>, tensor<8x64xi32> -> tensor<8x64x128xf32>
// CHECK: tg.embedding %{{.+}}, %{{.+}} : tensor<256x128xf32>, tensor<i64> -> tensor<128xf32>
func.func @embedding_gathers_rows(%wte: tensor<256x128xf32>, %ids: tensor<8x64xi32>, %id: tensor<i64>) {
  %0 = tg.embedding %wte, %ids : tensor<256x128xf32>, tensor<8x64xi32> -> tensor<8x64x128xf32>
  %1 = tg.embedding %wte, %id : tensor<256x128xf32>, tensor<i64> -> tensor<128xf32>
  return
}

// CHECK-LABEL: func.func @cross_entropy_reductions
// CHECK: tg.cross_entropy %{{.+}}, %{{.+}} : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
// CHECK: tg.cross_entropy %{{.+}}, %{{.+}} {ignore_index = 0 : i64, reduction = #tg<loss_reduction sum>} : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
// CHECK: tg.cross_entropy %{{.+}}, %{{.+}} {reduction = #tg<loss_reduction none>} : tensor<32x10xf32>, tensor<32xi64> -> tensor<32xf32>
func.func @cross_entropy_reductions(%logits: tensor<32x10xf32>, %y: tensor<32xi64>) {
  %0 = tg.cross_entropy %logits, %y {reduction = #tg<loss_reduction mean>, ignore_index = -100} : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  %1 = tg.cross_entropy %logits, %y {reduction = #tg<loss_reduction sum>, ignore_index = 0} : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  %2 = tg.cross_entropy %logits, %y {reduction = #tg<loss_reduction none>} : tensor<32x10xf32>, tensor<32xi64> -> tensor<32xf32>
  return
}

// bf16 logits give an f32 loss; the loss gradient is f32, the logits' bf16.
// CHECK-LABEL: func.func @cross_entropy_on_bf16_logits
// CHECK: tg.cross_entropy %{{.+}}, %{{.+}} : tensor<32x10xbf16>, tensor<32xi64> -> tensor<f32>
// CHECK: tg.cross_entropy %{{.+}}, %{{.+}} {reduction = #tg<loss_reduction none>} : tensor<32x10xbf16>, tensor<32xi64> -> tensor<32xf32>
// CHECK: tg.cross_entropy_grad %{{.+}}, %{{.+}}, %{{.+}} : tensor<f32>, tensor<32x10xbf16>, tensor<32xi64> -> tensor<32x10xbf16>
func.func @cross_entropy_on_bf16_logits(%logits: tensor<32x10xbf16>, %y: tensor<32xi64>, %g: tensor<f32>) {
  %0 = tg.cross_entropy %logits, %y : tensor<32x10xbf16>, tensor<32xi64> -> tensor<f32>
  %1 = tg.cross_entropy %logits, %y {reduction = #tg<loss_reduction none>} : tensor<32x10xbf16>, tensor<32xi64> -> tensor<32xf32>
  %2 = tg.cross_entropy_grad %g, %logits, %y : tensor<f32>, tensor<32x10xbf16>, tensor<32xi64> -> tensor<32x10xbf16>
  return
}

// CHECK-LABEL: func.func @attention_plain_causal_and_scaled
// CHECK: tg.attention %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x4x16x32xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8x64xf32> -> tensor<2x4x16x64xf32>
// CHECK: tg.attention %{{.+}}, %{{.+}}, %{{.+}} {causal = true, scale = 1.250000e-01 : f64} : tensor<2x4x16x32xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8x64xf32> -> tensor<2x4x16x64xf32>
func.func @attention_plain_causal_and_scaled(%q: tensor<2x4x16x32xf32>, %k: tensor<2x4x8x32xf32>, %v: tensor<2x4x8x64xf32>) {
  %0 = tg.attention %q, %k, %v : tensor<2x4x16x32xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8x64xf32> -> tensor<2x4x16x64xf32>
  %1 = tg.attention %q, %k, %v {causal = true, scale = 0.125 : f64} : tensor<2x4x16x32xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8x64xf32> -> tensor<2x4x16x64xf32>
  return
}

// CHECK-LABEL: func.func @attention_grouped_query_heads
// CHECK: tg.attention %{{.+}}, %{{.+}}, %{{.+}} {causal = true} : tensor<2x8x16x32xf32>, tensor<2x2x16x32xf32>, tensor<2x2x16x32xf32> -> tensor<2x8x16x32xf32>
func.func @attention_grouped_query_heads(%q: tensor<2x8x16x32xf32>, %kv: tensor<2x2x16x32xf32>) {
  %0 = tg.attention %q, %kv, %kv {causal = true} : tensor<2x8x16x32xf32>, tensor<2x2x16x32xf32>, tensor<2x2x16x32xf32> -> tensor<2x8x16x32xf32>
  return
}

// CHECK-LABEL: func.func @attention_masks_broadcast_to_the_scores
// CHECK: tg.attention %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}} : tensor<2x4x16x32xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8x64xf32>, tensor<16x8xf32> -> tensor<2x4x16x64xf32>
// CHECK: tg.attention %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}} {causal = true} : tensor<2x4x16x32xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8x64xf32>, tensor<2x1x1x8xf32> -> tensor<2x4x16x64xf32>
// CHECK: tg.attention %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}} : tensor<2x4x16x32xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8x64xf32>, tensor<1x4x16x8xf32> -> tensor<2x4x16x64xf32>
// CHECK: tg.attention %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}} {scale = 5.000000e-01 : f64} : tensor<2x4x16x32xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8x64xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x64xf32>
func.func @attention_masks_broadcast_to_the_scores(%q: tensor<2x4x16x32xf32>, %k: tensor<2x4x8x32xf32>, %v: tensor<2x4x8x64xf32>, %ts: tensor<16x8xf32>, %pad: tensor<2x1x1x8xf32>, %bias: tensor<1x4x16x8xf32>, %full: tensor<2x4x16x8xf32>) {
  %0 = tg.attention %q, %k, %v mask %ts : tensor<2x4x16x32xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8x64xf32>, tensor<16x8xf32> -> tensor<2x4x16x64xf32>
  %1 = tg.attention %q, %k, %v mask %pad {causal = true} : tensor<2x4x16x32xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8x64xf32>, tensor<2x1x1x8xf32> -> tensor<2x4x16x64xf32>
  %2 = tg.attention %q, %k, %v mask %bias : tensor<2x4x16x32xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8x64xf32>, tensor<1x4x16x8xf32> -> tensor<2x4x16x64xf32>
  %3 = tg.attention %q, %k, %v mask %full {scale = 0.5 : f64} : tensor<2x4x16x32xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8x64xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x64xf32>
  return
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @conv2d_with_and_without_bias
// CHECK-SAME: (%[[X:[^:]+]]: tensor<32x4x8x8xf32>, %[[W:[^:]+]]: tensor<16x4x3x3xf32>, %[[B:[^:]+]]: tensor<16xf32>, %[[WG:[^:]+]]: tensor<8x2x3x3xf32>)
// CHECK: tg.conv2d %[[X]], %[[W]] : (tensor<32x4x8x8xf32>, tensor<16x4x3x3xf32>) -> tensor<32x16x6x6xf32>
// CHECK: tg.conv2d %[[X]], %[[W]], %[[B]] {padding = array<i64: 1, 1>} : (tensor<32x4x8x8xf32>, tensor<16x4x3x3xf32>, tensor<16xf32>) -> tensor<32x16x8x8xf32>
// CHECK: tg.conv2d %[[X]], %[[WG]] {dilation = array<i64: 2, 1>, groups = 2 : i64, padding = array<i64: 2, 0>, stride = array<i64: 2, 1>} : (tensor<32x4x8x8xf32>, tensor<8x2x3x3xf32>) -> tensor<32x8x4x6xf32>
func.func @conv2d_with_and_without_bias(%x: tensor<32x4x8x8xf32>, %w: tensor<16x4x3x3xf32>, %b: tensor<16xf32>, %wg: tensor<8x2x3x3xf32>) {
  %0 = tg.conv2d %x, %w : (tensor<32x4x8x8xf32>, tensor<16x4x3x3xf32>) -> tensor<32x16x6x6xf32>
  %1 = tg.conv2d %x, %w, %b {padding = array<i64: 1, 1>} : (tensor<32x4x8x8xf32>, tensor<16x4x3x3xf32>, tensor<16xf32>) -> tensor<32x16x8x8xf32>
  %2 = tg.conv2d %x, %wg {stride = array<i64: 2, 1>, padding = array<i64: 2, 0>, dilation = array<i64: 2, 1>, groups = 2} : (tensor<32x4x8x8xf32>, tensor<8x2x3x3xf32>) -> tensor<32x8x4x6xf32>
  return
}

// Without `stride` the pool steps by the kernel size.
// CHECK-LABEL: func.func @pools_with_default_and_given_stride
// CHECK: tg.max_pool2d %{{.+}} {kernel_size = array<i64: 2, 2>} : tensor<2x3x8x8xf32> -> tensor<2x3x4x4xf32>
// CHECK: tg.max_pool2d %{{.+}} {kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : tensor<2x3x8x8xf32> -> tensor<2x3x8x8xf32>
// CHECK: tg.avg_pool2d %{{.+}} {kernel_size = array<i64: 2, 4>} : tensor<2x3x8x8xf32> -> tensor<2x3x4x2xf32>
// CHECK: tg.avg_pool2d %{{.+}} {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>} : tensor<2x3x8x8xf32> -> tensor<2x3x3x3xf32>
func.func @pools_with_default_and_given_stride(%x: tensor<2x3x8x8xf32>) {
  %0 = tg.max_pool2d %x {kernel_size = array<i64: 2, 2>} : tensor<2x3x8x8xf32> -> tensor<2x3x4x4xf32>
  %1 = tg.max_pool2d %x {kernel_size = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>} : tensor<2x3x8x8xf32> -> tensor<2x3x8x8xf32>
  %2 = tg.avg_pool2d %x {kernel_size = array<i64: 2, 4>, padding = array<i64: 0, 0>} : tensor<2x3x8x8xf32> -> tensor<2x3x4x2xf32>
  %3 = tg.avg_pool2d %x {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>} : tensor<2x3x8x8xf32> -> tensor<2x3x3x3xf32>
  return
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @flatten_default_and_given_range
// CHECK: tg.flatten %{{.+}} : tensor<32x16x4x4xf32> -> tensor<32x256xf32>
// CHECK: tg.flatten %{{.+}} {end_dim = 1 : i64, start_dim = 0 : i64} : tensor<32x16x4x4xf32> -> tensor<512x4x4xf32>
// CHECK: tg.flatten %{{.+}} {start_dim = 0 : i64} : tensor<i64> -> tensor<1xi64>
func.func @flatten_default_and_given_range(%x: tensor<32x16x4x4xf32>, %s: tensor<i64>) {
  %0 = tg.flatten %x : tensor<32x16x4x4xf32> -> tensor<32x256xf32>
  %1 = tg.flatten %x {start_dim = 0, end_dim = 1} : tensor<32x16x4x4xf32> -> tensor<512x4x4xf32>
  %2 = tg.flatten %s {start_dim = 0} : tensor<i64> -> tensor<1xi64>
  return
}

// CHECK-LABEL: func.func @reshape_transpose_and_broadcast
// CHECK: %[[R:.+]] = tg.reshape %{{.+}} : tensor<8x64x768xf32> -> tensor<8x64x12x64xf32>
// CHECK: %[[T:.+]] = tg.transpose %[[R]] {perm = array<i64: 0, 2, 1, 3>} : tensor<8x64x12x64xf32> -> tensor<8x12x64x64xf32>
// CHECK: %[[B:.+]] = tg.broadcast_to %{{.+}} : tensor<64xf32> -> tensor<8x12x64x64xf32>
// CHECK: return %[[T]], %[[B]]
func.func @reshape_transpose_and_broadcast(%x: tensor<8x64x768xf32>, %b: tensor<64xf32>) -> (tensor<8x12x64x64xf32>, tensor<8x12x64x64xf32>) {
  %0 = tg.reshape %x : tensor<8x64x768xf32> -> tensor<8x64x12x64xf32>
  %1 = tg.transpose %0 {perm = array<i64: 0, 2, 1, 3>} : tensor<8x64x12x64xf32> -> tensor<8x12x64x64xf32>
  %2 = tg.broadcast_to %b : tensor<64xf32> -> tensor<8x12x64x64xf32>
  return %1, %2 : tensor<8x12x64x64xf32>, tensor<8x12x64x64xf32>
}

// CHECK-LABEL: func.func @slice_with_and_without_stride
// CHECK: tg.slice %{{.+}} {limit = array<i64: 8, 768>, start = array<i64: 0, 0>} : tensor<8x2304xf32> -> tensor<8x768xf32>
// CHECK: tg.slice %{{.+}} {limit = array<i64: 8, 2304>, start = array<i64: 1, 768>, stride = array<i64: 2, 3>} : tensor<8x2304xf32> -> tensor<4x512xf32>
func.func @slice_with_and_without_stride(%x: tensor<8x2304xf32>) {
  %0 = tg.slice %x {start = array<i64: 0, 0>, limit = array<i64: 8, 768>} : tensor<8x2304xf32> -> tensor<8x768xf32>
  %1 = tg.slice %x {start = array<i64: 1, 768>, limit = array<i64: 8, 2304>, stride = array<i64: 2, 3>} : tensor<8x2304xf32> -> tensor<4x512xf32>
  return
}

// CHECK-LABEL: func.func @concat_along_an_axis
// CHECK-SAME: (%[[A:[^:]+]]: tensor<4x2xf32>, %[[B:[^:]+]]: tensor<4x3xf32>)
// CHECK: tg.concat %[[A]], %[[B]] {axis = 1 : i64} : (tensor<4x2xf32>, tensor<4x3xf32>) -> tensor<4x5xf32>
// CHECK: tg.concat %[[A]], %[[A]] : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
// CHECK: tg.concat %[[A]] {axis = -1 : i64} : (tensor<4x2xf32>) -> tensor<4x2xf32>
func.func @concat_along_an_axis(%a: tensor<4x2xf32>, %b: tensor<4x3xf32>) {
  %0 = tg.concat %a, %b {axis = 1} : (tensor<4x2xf32>, tensor<4x3xf32>) -> tensor<4x5xf32>
  %1 = tg.concat %a, %a : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
  %2 = tg.concat %a {axis = -1} : (tensor<4x2xf32>) -> tensor<4x2xf32>
  return
}

//===----------------------------------------------------------------------===//
// Gradient ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @gelu_grad
// CHECK: tg.gelu_grad %{{.+}}, %{{.+}} : tensor<4x8xf32>
// CHECK: tg.gelu_grad %{{.+}}, %{{.+}} {approximate = #tg<approximation tanh>} : tensor<4x8xf32>
func.func @gelu_grad(%g: tensor<4x8xf32>, %x: tensor<4x8xf32>) {
  %0 = tg.gelu_grad %g, %x : tensor<4x8xf32>
  %1 = tg.gelu_grad %g, %x {approximate = #tg<approximation tanh>} : tensor<4x8xf32>
  return
}

// CHECK-LABEL: func.func @norm_grads_with_and_without_weight
// CHECK-SAME: (%[[G:[^:]+]]: tensor<8x768xf32>, %[[X:[^:]+]]: tensor<8x768xf32>, %[[W:[^:]+]]: tensor<768xf32>)
// CHECK: = tg.layer_norm_grad %[[G]], %[[X]] weight %[[W]] {eps = 1.000000e-03 : f64} : (tensor<8x768xf32>, tensor<8x768xf32>, tensor<768xf32>) -> (tensor<8x768xf32>, tensor<768xf32>, tensor<768xf32>)
// CHECK: = tg.layer_norm_grad %[[G]], %[[X]] : (tensor<8x768xf32>, tensor<8x768xf32>) -> (tensor<8x768xf32>, tensor<768xf32>, tensor<768xf32>)
// CHECK: = tg.rms_norm_grad %[[G]], %[[X]] weight %[[W]] : (tensor<8x768xf32>, tensor<8x768xf32>, tensor<768xf32>) -> (tensor<8x768xf32>, tensor<768xf32>)
// CHECK: = tg.rms_norm_grad %[[G]], %[[X]] {eps = 1.000000e-05 : f64} : (tensor<8x768xf32>, tensor<8x768xf32>) -> (tensor<8x768xf32>, tensor<768xf32>)
func.func @norm_grads_with_and_without_weight(%g: tensor<8x768xf32>, %x: tensor<8x768xf32>, %w: tensor<768xf32>) {
  %0:3 = tg.layer_norm_grad %g, %x weight %w {eps = 1.0e-3 : f64} : (tensor<8x768xf32>, tensor<8x768xf32>, tensor<768xf32>) -> (tensor<8x768xf32>, tensor<768xf32>, tensor<768xf32>)
  %1:3 = tg.layer_norm_grad %g, %x : (tensor<8x768xf32>, tensor<8x768xf32>) -> (tensor<8x768xf32>, tensor<768xf32>, tensor<768xf32>)
  %2:2 = tg.rms_norm_grad %g, %x weight %w : (tensor<8x768xf32>, tensor<8x768xf32>, tensor<768xf32>) -> (tensor<8x768xf32>, tensor<768xf32>)
  %3:2 = tg.rms_norm_grad %g, %x {eps = 1.0e-5 : f64} : (tensor<8x768xf32>, tensor<8x768xf32>) -> (tensor<8x768xf32>, tensor<768xf32>)
  return
}

// CHECK-LABEL: func.func @embedding_and_cross_entropy_grads
// CHECK: tg.embedding_grad %{{.+}}, %{{.+}} : tensor<8x64x128xf32>, tensor<8x64xi32> -> tensor<256x128xf32>
// CHECK: tg.cross_entropy_grad %{{.+}}, %{{.+}}, %{{.+}} : tensor<f32>, tensor<32x10xf32>, tensor<32xi64> -> tensor<32x10xf32>
// CHECK: tg.cross_entropy_grad %{{.+}}, %{{.+}}, %{{.+}} {ignore_index = 3 : i64, reduction = #tg<loss_reduction none>} : tensor<32xf32>, tensor<32x10xf32>, tensor<32xi64> -> tensor<32x10xf32>
func.func @embedding_and_cross_entropy_grads(%ge: tensor<8x64x128xf32>, %ids: tensor<8x64xi32>,
    %gl: tensor<f32>, %gn: tensor<32xf32>, %logits: tensor<32x10xf32>, %y: tensor<32xi64>) {
  %0 = tg.embedding_grad %ge, %ids : tensor<8x64x128xf32>, tensor<8x64xi32> -> tensor<256x128xf32>
  %1 = tg.cross_entropy_grad %gl, %logits, %y : tensor<f32>, tensor<32x10xf32>, tensor<32xi64> -> tensor<32x10xf32>
  %2 = tg.cross_entropy_grad %gn, %logits, %y {reduction = #tg<loss_reduction none>, ignore_index = 3} : tensor<32xf32>, tensor<32x10xf32>, tensor<32xi64> -> tensor<32x10xf32>
  return
}

// CHECK-LABEL: func.func @attention_grad
// CHECK: = tg.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {causal = true, scale = 5.000000e-01 : f64} : (tensor<2x4x16x64xf32>, tensor<2x4x16x32xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8x64xf32>) -> (tensor<2x4x16x32xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8x64xf32>)
func.func @attention_grad(%g: tensor<2x4x16x64xf32>, %q: tensor<2x4x16x32xf32>, %k: tensor<2x4x8x32xf32>, %v: tensor<2x4x8x64xf32>) {
  %0:3 = tg.attention_grad %g, %q, %k, %v {causal = true, scale = 0.5 : f64} : (tensor<2x4x16x64xf32>, tensor<2x4x16x32xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8x64xf32>) -> (tensor<2x4x16x32xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8x64xf32>)
  return
}

// CHECK-LABEL: func.func @attention_grad_of_a_mask_and_grouped_heads
// CHECK: = tg.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}} : (tensor<2x4x16x64xf32>, tensor<2x4x16x32xf32>, tensor<2x2x8x32xf32>, tensor<2x2x8x64xf32>, tensor<1x4x16x8xf32>) -> (tensor<2x4x16x32xf32>, tensor<2x2x8x32xf32>, tensor<2x2x8x64xf32>, tensor<1x4x16x8xf32>)
// CHECK: = tg.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}} {causal = true} : (tensor<2x4x16x64xf32>, tensor<2x4x16x32xf32>, tensor<2x2x8x32xf32>, tensor<2x2x8x64xf32>, tensor<2x1x1x8xf32>) -> (tensor<2x4x16x32xf32>, tensor<2x2x8x32xf32>, tensor<2x2x8x64xf32>)
func.func @attention_grad_of_a_mask_and_grouped_heads(%g: tensor<2x4x16x64xf32>, %q: tensor<2x4x16x32xf32>, %k: tensor<2x2x8x32xf32>, %v: tensor<2x2x8x64xf32>, %bias: tensor<1x4x16x8xf32>, %pad: tensor<2x1x1x8xf32>) {
  %0:4 = tg.attention_grad %g, %q, %k, %v mask %bias : (tensor<2x4x16x64xf32>, tensor<2x4x16x32xf32>, tensor<2x2x8x32xf32>, tensor<2x2x8x64xf32>, tensor<1x4x16x8xf32>) -> (tensor<2x4x16x32xf32>, tensor<2x2x8x32xf32>, tensor<2x2x8x64xf32>, tensor<1x4x16x8xf32>)
  %1:3 = tg.attention_grad %g, %q, %k, %v mask %pad {causal = true} : (tensor<2x4x16x64xf32>, tensor<2x4x16x32xf32>, tensor<2x2x8x32xf32>, tensor<2x2x8x64xf32>, tensor<2x1x1x8xf32>) -> (tensor<2x4x16x32xf32>, tensor<2x2x8x32xf32>, tensor<2x2x8x64xf32>)
  return
}

// CHECK-LABEL: func.func @conv2d_grads
// CHECK: tg.conv2d_grad_input %{{.+}}, %{{.+}} {padding = array<i64: 1, 1>} : (tensor<32x16x8x8xf32>, tensor<16x4x3x3xf32>) -> tensor<32x4x8x8xf32>
// CHECK: tg.conv2d_grad_weight %{{.+}}, %{{.+}} {padding = array<i64: 1, 1>} : (tensor<32x16x8x8xf32>, tensor<32x4x8x8xf32>) -> tensor<16x4x3x3xf32>
// CHECK: tg.conv2d_grad_input %{{.+}}, %{{.+}} {groups = 2 : i64, stride = array<i64: 2, 2>} : (tensor<32x8x3x3xf32>, tensor<8x2x3x3xf32>) -> tensor<32x4x8x8xf32>
func.func @conv2d_grads(%g: tensor<32x16x8x8xf32>, %w: tensor<16x4x3x3xf32>, %x: tensor<32x4x8x8xf32>,
    %gg: tensor<32x8x3x3xf32>, %wg: tensor<8x2x3x3xf32>) {
  %0 = tg.conv2d_grad_input %g, %w {padding = array<i64: 1, 1>} : (tensor<32x16x8x8xf32>, tensor<16x4x3x3xf32>) -> tensor<32x4x8x8xf32>
  %1 = tg.conv2d_grad_weight %g, %x {padding = array<i64: 1, 1>} : (tensor<32x16x8x8xf32>, tensor<32x4x8x8xf32>) -> tensor<16x4x3x3xf32>
  %2 = tg.conv2d_grad_input %gg, %wg {stride = array<i64: 2, 2>, groups = 2} : (tensor<32x8x3x3xf32>, tensor<8x2x3x3xf32>) -> tensor<32x4x8x8xf32>
  return
}

// CHECK-LABEL: func.func @pool_grads
// CHECK: tg.max_pool2d_grad %{{.+}}, %{{.+}} {kernel_size = array<i64: 2, 2>} : tensor<2x3x4x4xf32>, tensor<2x3x8x8xf32> -> tensor<2x3x8x8xf32>
// CHECK: tg.avg_pool2d_grad %{{.+}}, %{{.+}} {kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : tensor<2x3x4x4xf32>, tensor<2x3x8x8xf32> -> tensor<2x3x8x8xf32>
func.func @pool_grads(%g: tensor<2x3x4x4xf32>, %x: tensor<2x3x8x8xf32>) {
  %0 = tg.max_pool2d_grad %g, %x {kernel_size = array<i64: 2, 2>} : tensor<2x3x4x4xf32>, tensor<2x3x8x8xf32> -> tensor<2x3x8x8xf32>
  %1 = tg.avg_pool2d_grad %g, %x {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<2x3x4x4xf32>, tensor<2x3x8x8xf32> -> tensor<2x3x8x8xf32>
  return
}

// CHECK-LABEL: func.func @slice_grad
// CHECK: tg.slice_grad %{{.+}} {limit = array<i64: 8, 256>, start = array<i64: 0, 128>} : tensor<8x128xf32> -> tensor<8x384xf32>
// CHECK: tg.slice_grad %{{.+}} {limit = array<i64: 8, 384>, start = array<i64: 0, 0>, stride = array<i64: 2, 3>} : tensor<4x128xf32> -> tensor<8x384xf32>
func.func @slice_grad(%g: tensor<8x128xf32>, %h: tensor<4x128xf32>) {
  %0 = tg.slice_grad %g {start = array<i64: 0, 128>, limit = array<i64: 8, 256>} : tensor<8x128xf32> -> tensor<8x384xf32>
  %1 = tg.slice_grad %h {start = array<i64: 0, 0>, limit = array<i64: 8, 384>, stride = array<i64: 2, 3>} : tensor<4x128xf32> -> tensor<8x384xf32>
  return
}

//===----------------------------------------------------------------------===//
// Optimizer ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @lr_schedules
// CHECK-SAME: (%[[STEP:[^:]+]]: tensor<i64>, %[[BASE:[^:]+]]: tensor<f32>)
// CHECK: tg.lr_schedule %[[STEP]], %[[BASE]] : tensor<i64>, tensor<f32> -> tensor<f32>
// CHECK: tg.lr_schedule %[[STEP]], %[[BASE]] {kind = #tg<schedule cosine>, min_lr = 1.000000e-05 : f64, total_steps = 5000 : i64, warmup_steps = 100 : i64}
// CHECK: tg.lr_schedule %[[STEP]], %[[BASE]] {kind = #tg<schedule linear>, total_steps = 10 : i64}
// CHECK: tg.lr_schedule %[[STEP]], %[[BASE]] {gamma = 5.000000e-01 : f64, kind = #tg<schedule step>, step_size = 30 : i64}
// CHECK: tg.lr_schedule %[[STEP]], %[[BASE]] {kind = #tg<schedule cyclic>, max_lr = 1.000000e-02 : f64, step_size = 4 : i64}
// CHECK: tg.lr_schedule %[[STEP]], %[[BASE]] {decay_steps = 20 : i64, kind = #tg<schedule wsd>, total_steps = 100 : i64, warmup_steps = 10 : i64}
func.func @lr_schedules(%step: tensor<i64>, %base: tensor<f32>) {
  %0 = tg.lr_schedule %step, %base {kind = #tg<schedule constant>} : tensor<i64>, tensor<f32> -> tensor<f32>
  %1 = tg.lr_schedule %step, %base {kind = #tg<schedule cosine>, warmup_steps = 100 : i64, total_steps = 5000 : i64, min_lr = 1.0e-5 : f64} : tensor<i64>, tensor<f32> -> tensor<f32>
  %2 = tg.lr_schedule %step, %base {kind = #tg<schedule linear>, total_steps = 10 : i64} : tensor<i64>, tensor<f32> -> tensor<f32>
  %3 = tg.lr_schedule %step, %base {kind = #tg<schedule step>, step_size = 30 : i64, gamma = 0.5 : f64} : tensor<i64>, tensor<f32> -> tensor<f32>
  %4 = tg.lr_schedule %step, %base {kind = #tg<schedule cyclic>, step_size = 4 : i64, max_lr = 0.01 : f64} : tensor<i64>, tensor<f32> -> tensor<f32>
  %5 = tg.lr_schedule %step, %base {kind = #tg<schedule wsd>, warmup_steps = 10 : i64, total_steps = 100 : i64, decay_steps = 20 : i64} : tensor<i64>, tensor<f32> -> tensor<f32>
  return
}

// CHECK-LABEL: func.func @global_norm_over_mixed_precision
// CHECK: tg.global_norm %{{.+}}, %{{.+}} : tensor<64x128xf32>, tensor<128xbf16> -> tensor<f32>
// CHECK: tg.global_norm %{{.+}} : tensor<128xbf16> -> tensor<f32>
func.func @global_norm_over_mixed_precision(%g0: tensor<64x128xf32>, %g1: tensor<128xbf16>) {
  %0 = tg.global_norm %g0, %g1 : tensor<64x128xf32>, tensor<128xbf16> -> tensor<f32>
  %1 = tg.global_norm %g1 : tensor<128xbf16> -> tensor<f32>
  return
}

// CHECK-LABEL: func.func @optimizer_updates_with_their_state
// CHECK-SAME: (%[[P:[^:]+]]: tensor<64x10xf32>, %[[G:[^:]+]]: tensor<64x10xf32>, %[[LR:[^:]+]]: tensor<f32>, %[[STEP:[^:]+]]: tensor<i64>, %[[M:[^:]+]]: tensor<64x10xf32>, %[[V:[^:]+]]: tensor<64x10xf32>)
// CHECK: tg.optimizer_update sgd %[[P]], %[[G]], %[[LR]], %[[STEP]] : tensor<64x10xf32>, tensor<64x10xf32>, tensor<f32>, tensor<i64> -> tensor<64x10xf32>
// CHECK: tg.optimizer_update sgd %[[P]], %[[G]], %[[LR]], %[[STEP]], %[[M]] {momentum = 9.000000e-01 : f64, nesterov = true} : tensor<64x10xf32>, tensor<64x10xf32>, tensor<f32>, tensor<i64>, tensor<64x10xf32> -> tensor<64x10xf32>, tensor<64x10xf32>
// CHECK: tg.optimizer_update adamw %[[P]], %[[G]], %[[LR]], %[[STEP]], %[[M]], %[[V]] {weight_decay = 1.000000e-01 : f64} : tensor<64x10xf32>, tensor<64x10xf32>, tensor<f32>, tensor<i64>, tensor<64x10xf32>, tensor<64x10xf32> -> tensor<64x10xf32>, tensor<64x10xf32>, tensor<64x10xf32>
// CHECK: tg.optimizer_update adam %[[P]], %[[G]], %[[LR]], %[[STEP]], %[[M]], %[[V]] {beta1 = 5.000000e-01 : f64, beta2 = 7.500000e-01 : f64, eps = 2.500000e-01 : f64}
// CHECK: tg.optimizer_update lamb %[[P]], %[[G]], %[[LR]], %[[STEP]], %[[M]], %[[V]] :
// CHECK: tg.optimizer_update rmsprop %[[P]], %[[G]], %[[LR]], %[[STEP]], %[[M]] {alpha = 9.000000e-01 : f64} :
// CHECK: tg.optimizer_update rmsprop %[[P]], %[[G]], %[[LR]], %[[STEP]], %[[M]], %[[V]] {momentum = 5.000000e-01 : f64} :
// CHECK: tg.optimizer_update adagrad %[[P]], %[[G]], %[[LR]], %[[STEP]], %[[M]] :
// CHECK: tg.optimizer_update lion %[[P]], %[[G]], %[[LR]], %[[STEP]], %[[M]] :
func.func @optimizer_updates_with_their_state(%p: tensor<64x10xf32>, %g: tensor<64x10xf32>, %lr: tensor<f32>, %step: tensor<i64>, %m: tensor<64x10xf32>, %v: tensor<64x10xf32>) {
  %0 = tg.optimizer_update sgd %p, %g, %lr, %step : tensor<64x10xf32>, tensor<64x10xf32>, tensor<f32>, tensor<i64> -> tensor<64x10xf32>
  %1:2 = tg.optimizer_update sgd %p, %g, %lr, %step, %m {momentum = 0.9 : f64, nesterov = true} : tensor<64x10xf32>, tensor<64x10xf32>, tensor<f32>, tensor<i64>, tensor<64x10xf32> -> tensor<64x10xf32>, tensor<64x10xf32>
  %2:3 = tg.optimizer_update adamw %p, %g, %lr, %step, %m, %v {weight_decay = 0.1 : f64} : tensor<64x10xf32>, tensor<64x10xf32>, tensor<f32>, tensor<i64>, tensor<64x10xf32>, tensor<64x10xf32> -> tensor<64x10xf32>, tensor<64x10xf32>, tensor<64x10xf32>
  %3:3 = tg.optimizer_update adam %p, %g, %lr, %step, %m, %v {beta1 = 0.5 : f64, beta2 = 0.75 : f64, eps = 0.25 : f64} : tensor<64x10xf32>, tensor<64x10xf32>, tensor<f32>, tensor<i64>, tensor<64x10xf32>, tensor<64x10xf32> -> tensor<64x10xf32>, tensor<64x10xf32>, tensor<64x10xf32>
  %4:3 = tg.optimizer_update lamb %p, %g, %lr, %step, %m, %v : tensor<64x10xf32>, tensor<64x10xf32>, tensor<f32>, tensor<i64>, tensor<64x10xf32>, tensor<64x10xf32> -> tensor<64x10xf32>, tensor<64x10xf32>, tensor<64x10xf32>
  %5:2 = tg.optimizer_update rmsprop %p, %g, %lr, %step, %m {alpha = 0.9 : f64} : tensor<64x10xf32>, tensor<64x10xf32>, tensor<f32>, tensor<i64>, tensor<64x10xf32> -> tensor<64x10xf32>, tensor<64x10xf32>
  %6:3 = tg.optimizer_update rmsprop %p, %g, %lr, %step, %m, %v {momentum = 0.5 : f64} : tensor<64x10xf32>, tensor<64x10xf32>, tensor<f32>, tensor<i64>, tensor<64x10xf32>, tensor<64x10xf32> -> tensor<64x10xf32>, tensor<64x10xf32>, tensor<64x10xf32>
  %7:2 = tg.optimizer_update adagrad %p, %g, %lr, %step, %m : tensor<64x10xf32>, tensor<64x10xf32>, tensor<f32>, tensor<i64>, tensor<64x10xf32> -> tensor<64x10xf32>, tensor<64x10xf32>
  %8:2 = tg.optimizer_update lion %p, %g, %lr, %step, %m : tensor<64x10xf32>, tensor<64x10xf32>, tensor<f32>, tensor<i64>, tensor<64x10xf32> -> tensor<64x10xf32>, tensor<64x10xf32>
  return
}

// The kind is a #tg<optimizer ...> attribute, printed bare in the custom
// form; the quoted spelling and the generic form parse to the same op.
// CHECK-LABEL: func.func @optimizer_kind_spellings
// CHECK: tg.optimizer_update adagrad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} :
// CHECK: tg.optimizer_update rmsprop %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} :
func.func @optimizer_kind_spellings(%p: tensor<4xf32>, %lr: tensor<f32>, %step: tensor<i64>) {
  %0:2 = tg.optimizer_update "adagrad" %p, %p, %lr, %step, %p : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  %1:2 = "tg.optimizer_update"(%p, %p, %lr, %step, %p) <{kind = #tg<optimizer rmsprop>, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0>}> : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}


//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @all_reduce_keeps_each_input_type
// CHECK-SAME: (%[[A:[^:]+]]: tensor<64x10xf32>, %[[B:[^:]+]]: tensor<10xbf16>)
// CHECK: %{{.+}}:2 = tg.all_reduce %[[A]], %[[B]] {reduction = #tg<reduction mean>} : tensor<64x10xf32>, tensor<10xbf16>
// CHECK: tg.all_reduce %[[A]] {mesh_axis = "tensor"} : tensor<64x10xf32>
// CHECK: %[[R:.+]] = tg.all_reduce %[[A]] {bucket = 2 : i64} : tensor<64x10xf32>
// CHECK: tg.await %[[R]] : tensor<64x10xf32>
// CHECK: tg.neg %[[R]] : tensor<64x10xf32>
func.func @all_reduce_keeps_each_input_type(%a: tensor<64x10xf32>, %b: tensor<10xbf16>) {
  %0:2 = tg.all_reduce %a, %b {reduction = #tg<reduction mean>} : tensor<64x10xf32>, tensor<10xbf16>
  %1 = tg.all_reduce %a {reduction = #tg<reduction sum>, mesh_axis = "tensor"} : tensor<64x10xf32>
  %2 = tg.all_reduce %a {bucket = 2 : i64} : tensor<64x10xf32>
  tg.await %2 : tensor<64x10xf32>
  %3 = tg.neg %2 : tensor<64x10xf32>
  return
}

}
