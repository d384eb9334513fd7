// RUN: tg-opt %s -split-input-file -tg-fuse | FileCheck %s
// RUN: tg-opt %s -split-input-file -tg-fuse=fusion=elementwise | FileCheck %s --check-prefix=ELEMENTWISE

// A linear layer's bias add and activation run in the GEMM's epilogue.
// CHECK-LABEL: func.func @bias_gelu
// CHECK:      %[[K:.+]] = tg.kernel gemm(%{{.+}}, %{{.+}}, %{{.+}} : tensor<4x16xf32>, tensor<16x8xf32>, tensor<8xf32>) attributes {name = "fused_matmul_add_gelu"} {
// CHECK-NEXT: ^bb0(%[[X:.+]]: tensor<4x16xf32>, %[[W:.+]]: tensor<16x8xf32>, %[[B:.+]]: tensor<8xf32>):
// CHECK-NEXT:   %[[M:.+]] = tg.matmul %[[X]], %[[W]]
// CHECK-NEXT:   %[[S:.+]] = tg.add %[[M]], %[[B]]
// CHECK-NEXT:   %[[G:.+]] = tg.gelu %[[S]]
// CHECK-NEXT:   tg.yield %[[G]] : tensor<4x8xf32>
// CHECK:      return %[[K]]
// ELEMENTWISE-LABEL: func.func @bias_gelu
// ELEMENTWISE-NOT:   tg.kernel gemm
// ELEMENTWISE:       tg.matmul
// ELEMENTWISE:       tg.kernel elementwise{{.*}}name = "fused_add_gelu"
func.func @bias_gelu(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %m = tg.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  %s = tg.add %m, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %g = tg.gelu %s : tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}

// -----

// Transposes and batch dims stay on the matmul; a residual of the output
// shape and a scale by a constant join the epilogue.
// CHECK-LABEL: func.func @batched_transposed_residual_scale
// CHECK:      %[[C:.+]] = tg.constant
// CHECK:      %[[K:.+]] = tg.kernel gemm(%{{.+}}, %{{.+}}, %[[C]], %{{.+}} : {{.*}}) attributes {name = "fused_matmul_mul_add"}
// CHECK:        tg.matmul %{{.+}}, %{{.+}} {transpose_rhs = true} : tensor<2x4x16xf32>, tensor<8x16xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT:   tg.mul
// CHECK-NEXT:   tg.add
// CHECK-NEXT:   tg.yield
// CHECK:      return %[[K]]
func.func @batched_transposed_residual_scale(%x: tensor<2x4x16xf32>, %w: tensor<8x16xf32>, %r: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %c = tg.constant dense<5.000000e-01> : tensor<f32>
  %m = tg.matmul %x, %w {transpose_rhs = true} : tensor<2x4x16xf32>, tensor<8x16xf32> -> tensor<2x4x8xf32>
  %s = tg.mul %m, %c : tensor<2x4x8xf32>, tensor<f32> -> tensor<2x4x8xf32>
  %a = tg.add %s, %r : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return %a : tensor<2x4x8xf32>
}

// -----

// A matmul result with two readers is stored: no epilogue joins it, and its
// readers form their own elementwise kernel.
// CHECK-LABEL: func.func @two_readers_not_fused
// CHECK-NOT:  tg.kernel gemm
// CHECK:      %[[M:.+]] = tg.matmul
// CHECK-NOT:  tg.kernel gemm
// CHECK:      tg.kernel elementwise(%[[M]]
func.func @two_readers_not_fused(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %m = tg.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  %r = tg.relu %m : tensor<4x8xf32>
  %a = tg.add %r, %m : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %a : tensor<4x8xf32>
}

// -----

// The epilogue stops at a value read twice: the relu joins, the ops reading
// its result form an elementwise kernel after the gemm kernel.
// CHECK-LABEL: func.func @epilogue_stops_at_shared_value
// CHECK:      %[[K:.+]] = tg.kernel gemm{{.*}}name = "fused_matmul_relu"
// CHECK:      tg.kernel elementwise(%[[K]]{{.*}}name = "fused_exp_add"
func.func @epilogue_stops_at_shared_value(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %m = tg.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  %r = tg.relu %m : tensor<4x8xf32>
  %e = tg.exp %r : tensor<4x8xf32>
  %a = tg.add %e, %r : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %a : tensor<4x8xf32>
}

// -----

// An op over another shape is not an epilogue.
// CHECK-LABEL: func.func @other_shape_not_epilogue
// CHECK-NOT:  tg.kernel
// CHECK:      tg.matmul
// CHECK:      tg.add %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
func.func @other_shape_not_epilogue(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>, %y: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %m = tg.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  %a = tg.add %m, %y : tensor<4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return %a : tensor<2x4x8xf32>
}

// -----

// A lone matmul stays an op.
// CHECK-LABEL: func.func @lone_matmul
// CHECK-NOT:  tg.kernel
// CHECK:      tg.matmul
// CHECK-NOT:  tg.kernel
func.func @lone_matmul(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %m = tg.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  return %m : tensor<4x8xf32>
}
