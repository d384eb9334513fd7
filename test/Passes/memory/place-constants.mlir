// RUN: tg-opt %s -split-input-file -tg-place-constants | FileCheck %s
// RUN: tg-opt %s -split-input-file -tg-place-constants=alignment=64 | FileCheck %s --check-prefix=A64
// RUN: not tg-opt %s -split-input-file -tg-place-constants=alignment=48 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: tg-place-constants: alignment must be a power of two, got 48

// What a launch reads as a literal takes no place: one value read by an
// elementwise op or kernel, the unit seed of a classifier kernel. What it
// reads from memory does, in module order, each at a multiple of the
// alignment: a table a GEMM reads, a table an elementwise kernel reads,
// a seed that is not one, a constant returned, a view of a constant.

// CHECK: module attributes {tg.constants = #tg.constants<bytes = 1280, alignment = 256>}
// CHECK-LABEL: func.func @step
// A64: module attributes {tg.constants = #tg.constants<bytes = 320, alignment = 64>}
// A64-COUNT-5: tg.constant_offset = {{0|64|128|192|256}} : i64
// CHECK: tg.constant dense<2.000000e+00> : tensor<f32>
// CHECK: tg.constant dense<1.000000e+00> : tensor<f32>
// CHECK: tg.constant {tg.constant_offset = 0 : i64} dense<5.000000e-01> : tensor<f32>
// CHECK: tg.constant {tg.constant_offset = 256 : i64} dense<1.000000e+00> : tensor<4x4xf32>
// CHECK: tg.constant {tg.constant_offset = 512 : i64} dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK: tg.constant dense<3.000000e+00> : tensor<4xf32>
// CHECK: tg.constant dense<[5.000000e+00, 6.000000e+00, 7.000000e+00, 8.000000e+00]> : tensor<4xf32>
// CHECK-LABEL: func.func @returns
// CHECK: tg.constant {tg.constant_offset = 768 : i64} dense<1.000000e+00> : tensor<2xf32>
// CHECK: tg.constant {tg.constant_offset = 1024 : i64} dense<0.000000e+00> : tensor<2x2xf32>
func.func @step(%x: tensor<4x4xf32>, %l: tensor<8x10xf32>, %y: tensor<8xi64>) -> (tensor<4x4xf32>, tensor<8x10xf32>, tensor<8x10xf32>, tensor<4xf32>) {
  %two = tg.constant dense<2.0> : tensor<f32>
  %one = tg.constant dense<1.0> : tensor<f32>
  %half = tg.constant dense<0.5> : tensor<f32>
  %w = tg.constant dense<1.0> : tensor<4x4xf32>
  %table = tg.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %three = tg.constant dense<3.0> : tensor<4xf32>
  %unread = tg.constant dense<[5.0, 6.0, 7.0, 8.0]> : tensor<4xf32>
  %s = tg.mul %x, %two : tensor<4x4xf32>, tensor<f32> -> tensor<4x4xf32>
  %h = tg.matmul %s, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %e = tg.kernel elementwise (%three, %table, %unread : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>):
    %p = tg.mul %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    tg.yield %p : tensor<4xf32>
  } -> tensor<4xf32>
  %d1 = tg.kernel classifier (%l, %y, %one : tensor<8x10xf32>, tensor<8xi64>, tensor<f32>) {
  ^bb0(%a: tensor<8x10xf32>, %labels: tensor<8xi64>, %seed: tensor<f32>):
    %loss = tg.cross_entropy %a, %labels : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
    %grad = tg.cross_entropy_grad %seed, %a, %labels : tensor<f32>, tensor<8x10xf32>, tensor<8xi64> -> tensor<8x10xf32>
    tg.yield %grad : tensor<8x10xf32>
  } -> tensor<8x10xf32>
  %d2 = tg.kernel classifier (%l, %y, %half : tensor<8x10xf32>, tensor<8xi64>, tensor<f32>) {
  ^bb0(%a: tensor<8x10xf32>, %labels: tensor<8xi64>, %seed: tensor<f32>):
    %loss = tg.cross_entropy %a, %labels : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
    %grad = tg.cross_entropy_grad %seed, %a, %labels : tensor<f32>, tensor<8x10xf32>, tensor<8xi64> -> tensor<8x10xf32>
    tg.yield %grad : tensor<8x10xf32>
  } -> tensor<8x10xf32>
  return %h, %d1, %d2, %e : tensor<4x4xf32>, tensor<8x10xf32>, tensor<8x10xf32>, tensor<4xf32>
}

func.func @returns() -> (tensor<2xf32>, tensor<4xf32>) {
  %c = tg.constant dense<1.0> : tensor<2xf32>
  %z = tg.constant dense<0.0> : tensor<2x2xf32>
  %v = tg.reshape %z : tensor<2x2xf32> -> tensor<4xf32>
  return %c, %v : tensor<2xf32>, tensor<4xf32>
}

// -----

// In a pipelined module the runtime runs the pipeline's functions (and the
// layer bodies): the whole step's functions keep their constants unplaced.

// CHECK: module attributes {tg.constants = #tg.constants<bytes = 256, alignment = 256>
// CHECK-LABEL: func.func @train_step
// CHECK-NEXT: tg.constant dense<1.000000e+00> : tensor<4x4xf32>
// CHECK-LABEL: func.func @chunk0_forward
// CHECK-NEXT: tg.constant {tg.constant_offset = 0 : i64} dense<1.000000e+00> : tensor<4x4xf32>
module attributes {tg.pipeline_actions = []} {
  func.func @train_step(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %w = tg.constant dense<1.0> : tensor<4x4xf32>
    %h = tg.matmul %x, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    return %h : tensor<4x4xf32>
  }
  func.func @chunk0_forward(%x: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {tg.pipeline_role = {kind = "forward", chunk = 0 : i64}} {
    %w = tg.constant dense<1.0> : tensor<4x4xf32>
    %h = tg.matmul %x, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    return %h : tensor<4x4xf32>
  }
}
