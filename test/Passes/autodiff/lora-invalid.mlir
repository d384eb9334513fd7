// RUN: split-file %s %t
// RUN: tg-opt %t/unmatched.mlir -tg-lora="targets=attn" -verify-diagnostics
// RUN: tg-opt %t/tied.mlir -tg-lora="targets=wte" -verify-diagnostics
// RUN: tg-opt %t/conv.mlir -tg-lora="targets=conv" -verify-diagnostics
// RUN: tg-opt %t/both.mlir -tg-lora="targets=fc" -verify-diagnostics
// RUN: not tg-opt %t/unmatched.mlir -tg-lora="rank=0 targets=fc" 2>&1 | FileCheck %s --check-prefix=RANK
// RANK: error: tg-lora: the rank must be at least 1, got 0
// RUN: not tg-opt %t/unmatched.mlir -tg-lora 2>&1 | FileCheck %s --check-prefix=NONE
// NONE: error: tg-lora: no targets: name the modules whose weights get adapters (targets=c_attn,c_proj)

//--- unmatched.mlir
// A target that names no module lists those with weights.
// expected-error @+1 {{tg-lora: target 'attn' names no module with a weight (the modules: h.0.fc)}}
func.func @forward(%w: tensor<4x4xf32> {tg.param = "h.0.fc.weight"}, %x: tensor<2x4xf32> {tg.input = "x"}) -> tensor<f32> {
  %y = tg.matmul %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %s = tg.reduce_sum %y : tensor<2x4xf32> -> tensor<f32>
  return %s : tensor<f32>
}

//--- tied.mlir
// A weight something else reads too (a tied embedding's lookup).
func.func @forward(%w: tensor<8x4xf32> {tg.param = "wte.weight"}, %i: tensor<2xi32> {tg.input = "idx"}) -> tensor<f32> {
  // expected-error @+1 {{tg-lora: 'wte.weight' is read by this tg.embedding; LoRA adapts weights that only matmuls read, as their right operand (x @ W)}}
  %e = tg.embedding %w, %i : tensor<8x4xf32>, tensor<2xi32> -> tensor<2x4xf32>
  %y = tg.matmul %e, %w {transpose_rhs = true} : tensor<2x4xf32>, tensor<8x4xf32> -> tensor<2x8xf32>
  %s = tg.reduce_sum %y : tensor<2x8xf32> -> tensor<f32>
  return %s : tensor<f32>
}

//--- conv.mlir
// expected-error @+1 {{tg-lora: 'conv.weight' is 'tensor<4x1x3x3xf32>'; LoRA adapts 2-D weights}}
func.func @forward(%w: tensor<4x1x3x3xf32> {tg.param = "conv.weight"}, %x: tensor<2x4xf32> {tg.input = "x"}) -> tensor<f32> {
  %s = tg.reduce_sum %w : tensor<4x1x3x3xf32> -> tensor<f32>
  return %s : tensor<f32>
}

//--- both.mlir
// expected-error @+1 {{tg-lora: 'fc.weight' is read both as it is and transposed; its adapters would need two shapes}}
func.func @forward(%w: tensor<4x4xf32> {tg.param = "fc.weight"}, %x: tensor<2x4xf32> {tg.input = "x"}) -> tensor<f32> {
  %y = tg.matmul %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %z = tg.matmul %y, %w {transpose_rhs = true} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %s = tg.reduce_sum %z : tensor<2x4xf32> -> tensor<f32>
  return %s : tensor<f32>
}
