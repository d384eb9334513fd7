// The CPU printing of tg-fuse's gemm and reduction kernels. A gemm kernel is
// the GEMM call writing straight into its result, then one loop applying the
// epilogue in place; a reduction kernel is the runtime's one-pass reduction
// as one loop nest that computes the prologue where it reads and the
// epilogue where it stores (rows: a double simd reduction per row; columns:
// blocks of 64 along the kept inner dim; max keeps NaN). The same model
// trains with the same losses fused and unfused (Integration/fusion.test).
// RUN: tgc %s --emit=cpp -o %t.cpp
// RUN: FileCheck %s < %t.cpp

module attributes {tg.model = "rms_mlp", tg.training = {batch_size = 32 : i64, optimizer = {kind = "sgd", lr = 1.0e-01 : f64}, schedule = {kind = "constant"}}} {
  func.func @forward(%w1: tensor<64x48xf32> {tg.param = "fc1.weight", tg.init = #tg.init<normal, std = 1.0e-01>},
                     %b1: tensor<48xf32> {tg.param = "fc1.bias", tg.init = #tg.init<zeros>},
                     %w2: tensor<48x10xf32> {tg.param = "fc2.weight", tg.init = #tg.init<normal, std = 1.0e-01>},
                     %x: tensor<32x64xf32> {tg.input = "x", tg.dim_names = ["batch", ""]},
                     %y: tensor<32xi64> {tg.input = "y", tg.dim_names = ["batch"]})
      -> (tensor<f32> {tg.output = "loss"}) {
    %h = tg.matmul %x, %w1 : tensor<32x64xf32>, tensor<64x48xf32> -> tensor<32x48xf32> loc("fc1")
    %a = tg.add %h, %b1 : tensor<32x48xf32>, tensor<48xf32> -> tensor<32x48xf32> loc("fc1.bias")
    %t = tg.tanh %a : tensor<32x48xf32> loc("act")
    %sq = tg.mul %t, %t : tensor<32x48xf32>, tensor<32x48xf32> -> tensor<32x48xf32> loc("norm.square")
    %ms = tg.reduce_mean %sq {dims = array<i64: 1>, keepdim = true} : tensor<32x48xf32> -> tensor<32x1xf32> loc("norm.mean")
    %eps = tg.constant dense<1.0e-05> : tensor<f32>
    %v = tg.add %ms, %eps : tensor<32x1xf32>, tensor<f32> -> tensor<32x1xf32> loc("norm.eps")
    %r = tg.rsqrt %v : tensor<32x1xf32> loc("norm.rsqrt")
    %n = tg.mul %t, %r : tensor<32x48xf32>, tensor<32x1xf32> -> tensor<32x48xf32> loc("norm")
    %mu = tg.reduce_mean %n {dims = array<i64: 0>} : tensor<32x48xf32> -> tensor<48xf32> loc("center.mean")
    %c = tg.sub %n, %mu : tensor<32x48xf32>, tensor<48xf32> -> tensor<32x48xf32> loc("center")
    %ac = tg.abs %c : tensor<32x48xf32> loc("scale.abs")
    %mx = tg.reduce_max %ac {dims = array<i64: 1>, keepdim = true} : tensor<32x48xf32> -> tensor<32x1xf32> loc("scale.max")
    %one = tg.constant dense<1.0> : tensor<f32>
    %den = tg.add %mx, %one : tensor<32x1xf32>, tensor<f32> -> tensor<32x1xf32> loc("scale.den")
    %cs = tg.div %c, %den : tensor<32x48xf32>, tensor<32x1xf32> -> tensor<32x48xf32> loc("scale")
    %logits = tg.matmul %cs, %w2 : tensor<32x48xf32>, tensor<48x10xf32> -> tensor<32x10xf32> loc("fc2")
    %loss = tg.cross_entropy %logits, %y : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32> loc("loss")
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: static void train_step(
// CHECK:      // tg.kernel fused_matmul_add_tanh (act)
// CHECK-NEXT: float *[[H:v[0-9]+]] = (float *)(arena + {{[0-9]+}});
// CHECK-NEXT: {
// CHECK-NEXT:   static const int64_t aBatch[] = {0}, bBatch[] = {0}, cBatch[] = {0};
// CHECK-NEXT:   tgc::cpu::matmul([[X:a[0-9]+]], [[W:a[0-9]+]], [[H]], 32, 48, 64, false, false, aBatch, bBatch, cBatch, 0);
// CHECK-NEXT: }
// CHECK-NEXT: #pragma omp parallel for if(1536 > 32768)
// CHECK-NEXT: for (int64_t o = 0; o < 32; ++o) {
// CHECK-NEXT:   #pragma omp simd
// CHECK-NEXT:   for (int64_t j = 0; j < 48; ++j) {
// CHECK-NEXT:     float t0 = [[H]][o * 48 + j] + [[B:a[0-9]+]][j];
// CHECK-NEXT:     float t1 = std::tanh(t0);
// CHECK-NEXT:     [[H]][o * 48 + j] = t1;
// CHECK-NEXT:   }
// CHECK-NEXT: }

// A column sum (the gradient of the centering's mean) with its prologue.
// CHECK:      // tg.kernel fused_neg_reduce_sum (center)
// CHECK-NEXT: float *[[S:v[0-9]+]] = (float *)(arena + {{[0-9]+}});
// CHECK-NEXT: #pragma omp parallel for schedule(static) if(1536 > 32768)
// CHECK-NEXT: for (int64_t blk = 0; blk < 1; ++blk) {
// CHECK-NEXT:   int64_t o = blk / 1, j0 = (blk % 1) * 64;
// CHECK-NEXT:   int64_t len = std::min<int64_t>(64, 48 - j0);
// CHECK-NEXT:   double acc[64] = {};
// CHECK-NEXT:   for (int64_t r = 0; r < 32; ++r) {
// CHECK-NEXT:     #pragma omp simd
// CHECK-NEXT:     for (int64_t j = 0; j < len; ++j) {
// CHECK-NEXT:       int64_t i = (o * 32 + r) * 48 + j0 + j;
// CHECK-NEXT:       float t0 = -[[G:v[0-9]+]][i];
// CHECK-NEXT:       acc[j] += t0;
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   for (int64_t j = 0; j < len; ++j) {
// CHECK-NEXT:     int64_t k = o * 48 + j0 + j;
// CHECK-NEXT:     float t1 = (float)acc[j];
// CHECK-NEXT:     [[S]][k] = t1;
// CHECK-NEXT:   }
// CHECK-NEXT: }

// A row mean with its prologue (the square, kept only in evaluation) and
// epilogue (+ eps, rsqrt).
// CHECK-LABEL: static void eval_step(
// CHECK:      // tg.kernel fused_mul_reduce_mean_add_rsqrt (norm.rsqrt)
// CHECK-NEXT: float *[[R:v[0-9]+]] = (float *)(arena + {{[0-9]+}});
// CHECK-NEXT: #pragma omp parallel for schedule(static) if(1536 > 32768)
// CHECK-NEXT: for (int64_t o = 0; o < 32; ++o) {
// CHECK-NEXT:   double acc = 0;
// CHECK-NEXT:   #pragma omp simd reduction(+ : acc)
// CHECK-NEXT:   for (int64_t r = 0; r < 48; ++r) {
// CHECK-NEXT:     int64_t i = o * 48 + r;
// CHECK-NEXT:     float t0 = [[T:v[0-9]+]][i] * [[T]][i];
// CHECK-NEXT:     acc += t0;
// CHECK-NEXT:   }
// CHECK-NEXT:   int64_t k = o;
// CHECK-NEXT:   float t1 = (float)acc * 2.083333395e-02f;
// CHECK-NEXT:   float t2 = t1 + (float)9.999999747e-06f;
// CHECK-NEXT:   float t3 = 1.0f / std::sqrt(t2);
// CHECK-NEXT:   [[R]][k] = t3;
// CHECK-NEXT: }

// A row max keeps a NaN as the runtime's does.
// CHECK:      // tg.kernel fused_abs_reduce_max_add (scale.den)
// CHECK:        float acc = -INFINITY;
// CHECK-NEXT:   for (int64_t r = 0; r < 48; ++r) {
// CHECK-NEXT:     int64_t i = o * 48 + r;
// CHECK-NEXT:     float t0 = std::fabs([[C:v[0-9]+]][i]);
// CHECK-NEXT:     acc = (t0 > acc || t0 != t0) ? t0 : acc;
// CHECK-NEXT:   }
// CHECK-NEXT:   int64_t k = o;
// CHECK-NEXT:   float t1 = acc;
// CHECK-NEXT:   float t2 = t1 + (float)1.000000000e+00f;
