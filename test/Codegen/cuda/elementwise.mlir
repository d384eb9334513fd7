// Elementwise ops become generated kernels named after their ops, each with a
// comment naming the tg op and its model-file node; tg-fuse's elementwise
// kernels (test/Passes/fusion) become one generated kernel each, storing
// every result; broadcast operands are indexed with constant strides;
// one-value constants are literals.
// RUN: tgc %s --emit=cuda --precision=fp32 -o %t
// RUN: FileCheck %s --input-file=%t/elementwise.cu

module attributes {tg.model = "elementwise", tg.training = {batch_size = 4 : i64, optimizer = {kind = "sgd", lr = 1.0e-01 : f64}, schedule = {kind = "constant"}}} {
  func.func @forward(%w: tensor<8x6xf32> {tg.param = "w", tg.init = #tg.init<normal, std = 2.0e-02>},
                     %b: tensor<6xf32> {tg.param = "b", tg.init = #tg.init<ones>},
                     %x: tensor<4x8xf32> {tg.input = "x", tg.dim_names = ["batch", ""]},
                     %y: tensor<4xi64> {tg.input = "y", tg.dim_names = ["batch"]})
      -> (tensor<f32> {tg.output = "loss"}) {
    %h = tg.matmul %x, %w : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32> loc("proj")
    %t = tg.tanh %h : tensor<4x6xf32> loc("squash")
    %s = tg.mul %t, %b : tensor<4x6xf32>, tensor<6xf32> -> tensor<4x6xf32> loc("scale")
    %e = tg.exp %s : tensor<4x6xf32> loc("grow")
    %loss = tg.cross_entropy %e, %y : tensor<4x6xf32>, tensor<4xi64> -> tensor<f32> loc("loss")
    return %loss : tensor<f32>
  }
}

// tg-fuse's kernels (target cuda). The forward chain is one kernel; tanh's
// value is read again by the backward, so the kernel stores it as well as
// the exponential: one kernel, two results. The bias [6] broadcasts over
// [4, 6]: index i % 6.
// CHECK-LABEL: // Generated kernels
// CHECK:      /// tg.tanh (squash) + tg.mul (scale) + tg.exp (grow)
// CHECK-NEXT: __global__ void __launch_bounds__(256) [[$FWD:fused_tanh_mul_exp_k[0-9]+]](const float *__restrict__ x0, const float *__restrict__ x1, float *__restrict__ y0, float *__restrict__ y1, int64_t n) {
// CHECK:        float [[X:l[0-9]+]] = toFloat(x0[i]);
// CHECK-NEXT:   float [[T:t[0-9]+]] = tanhf([[X]]);
// CHECK-NEXT:   const int64_t [[J:j[0-9]+]] = (i % 6);
// CHECK-NEXT:   float [[B:l[0-9]+]] = toFloat(x1[[[J]]]);
// CHECK-NEXT:   float [[P:t[0-9]+]] = [[T]] * [[B]];
// CHECK-NEXT:   float [[E:t[0-9]+]] = expf([[P]]);
// CHECK-NEXT:   y0[i] = fromFloat<float>([[T]]);
// CHECK-NEXT:   y1[i] = fromFloat<float>([[E]]);

// The backward's multiplies of one gradient: one kernel, named after the
// kinds of op it computes, each once.
// CHECK:      /// tg.mul (grow) + tg.mul (scale) + tg.mul (scale)
// CHECK-NEXT: __global__ void __launch_bounds__(256) fused_mul_k{{[0-9]+}}(

// The constant 1 of tanh's derivative is a literal.
// CHECK:      /// tg.mul (squash) + tg.sub (squash) + tg.mul (squash)
// CHECK-NEXT: __global__ void __launch_bounds__(256) fused_mul_sub_k{{[0-9]+}}(
// CHECK:        float [[SQ:t[0-9]+]] = [[T2:l[0-9]+]] * [[T2]];
// CHECK-NEXT:   float t{{[0-9]+}} = 1.000000000e+00f - [[SQ]];

// @forward alone: nothing reads tanh again, so the kernel stores one value.
// CHECK:      /// tg.tanh (squash) + tg.mul (scale) + tg.exp (grow)
// CHECK-NEXT: __global__ void __launch_bounds__(256) [[$CHAIN:fused_tanh_mul_exp_k[0-9]+]](const float *__restrict__ x0, const float *__restrict__ x1, float *__restrict__ y, int64_t n) {

// The launches: one block of 256 threads for 24 elements, on the compute
// stream, each between its profiling events; one kernel serves both steps
// with the same code.
// CHECK-LABEL: static void train_step_launches(
// CHECK:      // tg.tanh (squash)
// CHECK-NEXT: // tg.mul (scale)
// CHECK-NEXT: // tg.exp (grow)
// CHECK:      t.begin([[T:[0-9]+]], stream);
// CHECK-NEXT: [[$FWD]]<<<1, 256, 0, stream>>>(v{{[0-9]+}}, a{{[0-9]+}}, v{{[0-9]+}}, v{{[0-9]+}}, 24);
// CHECK-NEXT: TGC_CUDA_CHECK_LAUNCH();
// CHECK-NEXT: t.end([[T]], stream);
// CHECK-LABEL: static void eval_step_launches(
// CHECK:      // tg.tanh (squash)
// CHECK-NEXT: // tg.mul (scale)
// CHECK-NEXT: // tg.exp (grow)
// CHECK:      [[$CHAIN]]<<<1, 256, 0, stream>>>(
// CHECK-LABEL: static void grad_step_launches(
// CHECK:      [[$FWD]]<<<1, 256, 0, stream>>>(
