//===- Activation.cpp - GELU and its derivative; dropout ----------*- C++ -*-===//
//
// The loops over gelu_scalar and gelu_grad_scalar (runtime/cpu/Kernels.h,
// where the formulas are, inline for the generated fused loops); both forms
// vectorize (no libm calls, no branches).
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"

#include <cmath>

namespace tgc::cpu {

namespace {
constexpr int64_t kParallelMin = 16384;
} // namespace

void gelu(const float *x, float *y, int64_t n, bool tanhApprox) {
  if (tanhApprox) {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i)
      y[i] = gelu_scalar(x[i], true);
    return;
  }
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i)
    y[i] = gelu_scalar(x[i], false);
}

void gelu_grad(const float *g, const float *x, float *dx, int64_t n,
               bool tanhApprox) {
  if (tanhApprox) {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i)
      dx[i] = gelu_grad_scalar(g[i], x[i], true);
    return;
  }
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i)
    dx[i] = gelu_grad_scalar(g[i], x[i], false);
}

void dropout(const float *x, float *y, int64_t n, float p, uint64_t seed,
             int64_t step, int64_t stream) {
  float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i)
    y[i] = dropout_keep(seed, step, stream, i, p) ? x[i] * scale : 0.0f;
}

} // namespace tgc::cpu
