// tg-fuse's rules for target=cuda: what EmitCuda's generated kernels and
// cuBLASLt print. The same rules as for the CPU, taken further for data
// movement and less far for GEMM epilogues and reductions (the pass
// description lists the differences).
// RUN: tg-opt %s -split-input-file -tg-fuse=target=cuda | FileCheck %s
// RUN: tg-opt %s -split-input-file -tg-fuse=target=cpu | FileCheck %s --check-prefix=CPU

// A slice of a fused projection, split into heads and transposed: one
// kernel that reads the projection at remapped indices (the view and the
// transpose join because only they read what they move).
// CHECK-LABEL: func.func @slice_heads
// CHECK:      %[[K:.+]] = tg.kernel elementwise(%{{.+}} : tensor<2x4x24xf32>) attributes {name = "fused_slice_reshape_transpose"}
// CHECK:        tg.slice
// CHECK-NEXT:   tg.reshape
// CHECK-NEXT:   tg.transpose
// CHECK-NEXT:   tg.yield %{{.+}} : tensor<2x2x4x4xf32>
// CHECK:      return %[[K]]
// The CPU prints no data movement in its loops.
// CPU-LABEL: func.func @slice_heads
// CPU-NOT:   tg.kernel
func.func @slice_heads(%qkv: tensor<2x4x24xf32>) -> tensor<2x2x4x4xf32> {
  %q = tg.slice %qkv {start = array<i64: 0, 0, 0>, limit = array<i64: 2, 4, 8>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
  %r = tg.reshape %q : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %t = tg.transpose %r {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
  return %t : tensor<2x2x4x4xf32>
}

// -----

// A lone transpose (with a view) stays the runtime's tiled transpose.
// CHECK-LABEL: func.func @lone_transpose
// CHECK-NOT:  tg.kernel
func.func @lone_transpose(%x: tensor<8x16xf32>) -> tensor<128xf32> {
  %t = tg.transpose %x {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>
  %r = tg.reshape %t : tensor<16x8xf32> -> tensor<128xf32>
  return %r : tensor<128xf32>
}

// -----

// Three transposes that only a concat reads: the concat takes all three
// groups into one kernel.
// CHECK-LABEL: func.func @concat_of_transposes
// CHECK:      tg.kernel elementwise{{.*}}name = "fused_transpose_transpose_transpose_concat"
// CHECK-NOT:  tg.kernel
func.func @concat_of_transposes(%a: tensor<4x2xf32>, %b: tensor<4x2xf32>, %c: tensor<4x2xf32>) -> tensor<2x12xf32> {
  %ta = tg.transpose %a {perm = array<i64: 1, 0>} : tensor<4x2xf32> -> tensor<2x4xf32>
  %tb = tg.transpose %b {perm = array<i64: 1, 0>} : tensor<4x2xf32> -> tensor<2x4xf32>
  %tc = tg.transpose %c {perm = array<i64: 1, 0>} : tensor<4x2xf32> -> tensor<2x4xf32>
  %cat = tg.concat %ta, %tb, %tc {axis = 1} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x12xf32>
  return %cat : tensor<2x12xf32>
}

// -----

// A transpose whose input something else reads too: computing it inside
// the kernel would recompute that value, so the kernel starts at the
// transpose (reading the stored value at remapped indices).
// CHECK-LABEL: func.func @moved_value_read_twice
// CHECK:      %[[E:.+]] = tg.exp
// CHECK:      tg.kernel elementwise(%[[E]]{{.*}}name = "fused_transpose_neg"
func.func @moved_value_read_twice(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8x4xf32>) {
  %e = tg.exp %x : tensor<4x8xf32>
  %t = tg.transpose %e {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  %n = tg.neg %t : tensor<8x4xf32>
  return %e, %n : tensor<4x8xf32>, tensor<8x4xf32>
}

// -----

// An iota only one op reads joins its kernel at any shape: its value at a
// broadcast index is cheaper to compute than to load.
// CHECK-LABEL: func.func @iota_joins
// CHECK:      tg.kernel elementwise{{.*}}name = "fused_iota_compare_select"
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   tg.iota
// CPU-LABEL: func.func @iota_joins
// CPU:       tg.iota
// CPU-NEXT:  tg.kernel elementwise{{.*}}name = "fused_compare_select"
func.func @iota_joins(%x: tensor<4x8xf32>, %z: tensor<f32>) -> tensor<4x8xf32> {
  %i = tg.iota : tensor<8xf32>
  %m = tg.compare lt, %x, %i : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  %s = tg.select %m, %x, %z : tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

// cuBLASLt's epilogues: bias, then tanh GELU; the pre-activation, which the
// backward reads, is a second result (GELU_AUX_BIAS stores it).
// CHECK-LABEL: func.func @bias_gelu_aux
// CHECK:      %[[K:.+]]:2 = tg.kernel gemm{{.*}}epilogue = #tg<epilogue bias_gelu>, name = "fused_matmul_add_gelu"
// CHECK:        tg.yield %{{.+}}, %{{.+}} : tensor<4x16xf32>, tensor<4x16xf32>
// CHECK:      tg.gelu_grad %{{.+}}, %[[K]]#0
// CHECK:      return %[[K]]#1
// The CPU stops before the GELU: the sum has another reader.
// CPU-LABEL: func.func @bias_gelu_aux
// CPU:       tg.kernel gemm{{.*}}attributes {name = "fused_matmul_add"}
// CPU-NEXT:  ^bb0
// CPU:       tg.yield %{{.+}} : tensor<4x16xf32>
// CPU:       tg.gelu
func.func @bias_gelu_aux(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>, %dy: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %m = tg.matmul %x, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %s = tg.add %m, %b : tensor<4x16xf32>, tensor<16xf32> -> tensor<4x16xf32>
  %g = tg.gelu %s {approximate = #tg<approximation tanh>} : tensor<4x16xf32>
  %d = tg.gelu_grad %dy, %s {approximate = #tg<approximation tanh>} : tensor<4x16xf32>
  return %g, %d : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// The tanh GELU gradient of the gradient a matmul computes (DGELU).
// CHECK-LABEL: func.func @gelu_grad_epilogue
// CHECK:      tg.kernel gemm{{.*}}epilogue = #tg<epilogue gelu_grad>, name = "fused_matmul_gelu_grad"
func.func @gelu_grad_epilogue(%dy: tensor<4x8xf32>, %w: tensor<16x8xf32>, %pre: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %m = tg.matmul %dy, %w {transpose_rhs = true} : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  %d = tg.gelu_grad %m, %pre {approximate = #tg<approximation tanh>} : tensor<4x16xf32>
  return %d : tensor<4x16xf32>
}

// -----

// What cuBLASLt lacks stays out: a relu, an exact GELU, a residual add of
// a full tensor. The CPU takes them all.
// CHECK-LABEL: func.func @no_cublaslt_epilogue
// CHECK-NOT:  tg.kernel gemm
// CHECK:      tg.matmul
// CHECK:      tg.kernel elementwise{{.*}}name = "fused_relu_gelu_add"
// CPU-LABEL: func.func @no_cublaslt_epilogue
// CPU:       tg.kernel gemm{{.*}}name = "fused_matmul_relu_gelu_add"
func.func @no_cublaslt_epilogue(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %r: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %m = tg.matmul %x, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %a = tg.relu %m : tensor<4x16xf32>
  %g = tg.gelu %a : tensor<4x16xf32>
  %s = tg.add %g, %r : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  return %s : tensor<4x16xf32>
}

// -----

// No reduction kernels: the runtime reduces; its prologue is a kernel of
// its own.
// CHECK-LABEL: func.func @no_reduction_kernel
// CHECK-NOT:  tg.kernel reduction
// CHECK:      tg.kernel elementwise{{.*}}name = "fused_mul_exp"
// CHECK-NEXT: ^bb0
// CHECK:      tg.reduce_sum
// CPU-LABEL: func.func @no_reduction_kernel
// CPU:       tg.kernel reduction{{.*}}name = "fused_mul_exp_reduce_sum"
func.func @no_reduction_kernel(%x: tensor<4x8xf32>) -> tensor<8xf32> {
  %m = tg.mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %e = tg.exp %m : tensor<4x8xf32>
  %s = tg.reduce_sum %e {dims = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
  return %s : tensor<8xf32>
}

// -----

// The clip factor's multiply becomes the update's grad_scale: the update
// scales each gradient element as it reads it. Only the update reads the
// scaled gradient, else it stays (and is stored).
// CHECK-LABEL: func.func @scaled_update
// CHECK-NOT:  tg.mul
// CHECK:      %[[U:.+]] = tg.optimizer_update sgd %arg0, %arg1, %arg3, %arg4 grad_scale %arg2 :
// CHECK:      return %[[U]]
// CPU-LABEL: func.func @scaled_update
// CPU:       tg.mul
// CPU-NOT:   grad_scale
func.func @scaled_update(%p: tensor<8x4xf32>, %g: tensor<8x4xf32>, %clip: tensor<f32>, %lr: tensor<f32>, %step: tensor<i64>) -> tensor<8x4xf32> {
  %s = tg.mul %g, %clip : tensor<8x4xf32>, tensor<f32> -> tensor<8x4xf32>
  %u = tg.optimizer_update sgd %p, %s, %lr, %step : tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>, tensor<i64> -> tensor<8x4xf32>
  return %u : tensor<8x4xf32>
}

// CHECK-LABEL: func.func @scale_read_twice
// CHECK:      %[[S:.+]] = tg.mul %arg1, %arg2
// CHECK:      tg.optimizer_update sgd %arg0, %[[S]], %arg3, %arg4 :
func.func @scale_read_twice(%p: tensor<8x4xf32>, %g: tensor<8x4xf32>, %clip: tensor<f32>, %lr: tensor<f32>, %step: tensor<i64>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %s = tg.mul %g, %clip : tensor<8x4xf32>, tensor<f32> -> tensor<8x4xf32>
  %u = tg.optimizer_update sgd %p, %s, %lr, %step : tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>, tensor<i64> -> tensor<8x4xf32>
  return %u, %s : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// Updates of one kind, hyperparameters, learning rate and step are one
// multi-tensor kernel, scaled or not; weight decay makes another; a read of
// an update's result before the next update closes the kernel it is in.
// CHECK-LABEL: func.func @multi_tensor
// CHECK:      tg.optimizer_update sgd %arg2, %arg3, %arg7, %arg8 grad_scale %arg6 {weight_decay
// CHECK:      %[[A:.+]]:2 = tg.kernel optimizer({{.*}}) attributes {name = "multi_tensor_sgd_2"}
// CHECK-NEXT:   ^bb0
// CHECK-NEXT:   tg.optimizer_update sgd {{.*}} grad_scale
// CHECK-NEXT:   tg.optimizer_update sgd {{.*}}, %{{[a-z0-9]+}} :
// CHECK:      tg.neg %[[A]]#1
// CHECK-NEXT: tg.optimizer_update sgd
// CHECK-NEXT: return
// CPU-LABEL: func.func @multi_tensor
// CPU-NOT:   tg.kernel
func.func @multi_tensor(%p: tensor<8x4xf32>, %g: tensor<8x4xf32>, %q: tensor<4xf32>, %h: tensor<4xf32>, %r: tensor<4xf32>, %k: tensor<4xf32>, %clip: tensor<f32>, %lr: tensor<f32>, %step: tensor<i64>) -> (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %s = tg.mul %g, %clip : tensor<8x4xf32>, tensor<f32> -> tensor<8x4xf32>
  %u = tg.optimizer_update sgd %p, %s, %lr, %step : tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>, tensor<i64> -> tensor<8x4xf32>
  %t = tg.mul %h, %clip : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %w = tg.optimizer_update sgd %q, %t, %lr, %step {weight_decay = 0.1 : f64} : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64> -> tensor<4xf32>
  %v = tg.optimizer_update sgd %q, %h, %lr, %step : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64> -> tensor<4xf32>
  %n = tg.neg %v : tensor<4xf32>
  %x = tg.optimizer_update sgd %r, %k, %lr, %step : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64> -> tensor<4xf32>
  return %u, %w, %n, %x, %v : tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Ops over one shape whose values only one op reads merge into one kernel
// on both targets, wherever their chains started.
// CHECK-LABEL: func.func @chains_merge
// CHECK:      tg.kernel elementwise{{.*}}name = "fused_exp_neg_add"
// CHECK-NOT:  tg.kernel
// CPU-LABEL: func.func @chains_merge
// CPU:       tg.kernel elementwise{{.*}}name = "fused_exp_neg_add"
func.func @chains_merge(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tg.exp %x : tensor<4x8xf32>
  %n = tg.neg %y : tensor<4x8xf32>
  %s = tg.add %e, %n : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}
