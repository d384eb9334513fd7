//===- Activation.cpp - GELU and its derivative; dropout ----------*- C++ -*-===//
//
// The exact GELU uses erfc so that x * Phi(x) keeps its relative accuracy for
// large negative x. The tanh form is written as x * sigmoid(2u), which equals
// 0.5 x (1 + tanh(u)) without the cancellation of 1 + tanh(u) near -1, and
// vectorizes through fastExp.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"

#include "runtime/cpu/FastExp.h"

#include <cmath>

namespace tgc::cpu {

namespace {
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kInvSqrt2 = 0.7071067811865476f;
constexpr float kInvSqrt2Pi = 0.3989422804014327f;
constexpr float kCubic = 0.044715f;
constexpr int64_t kParallelMin = 16384;
} // namespace

void gelu(const float *x, float *y, int64_t n, bool tanhApprox) {
  if (tanhApprox) {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i) {
      float v = x[i];
      float u = kSqrt2OverPi * (v + kCubic * v * v * v);
      y[i] = v / (1.0f + fastExp(-2.0f * u));
    }
    return;
  }
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[i] * 0.5f * std::erfc(-x[i] * kInvSqrt2);
}

void gelu_grad(const float *g, const float *x, float *dx, int64_t n,
               bool tanhApprox) {
  if (tanhApprox) {
    // d/dx [x s(2u)] = s + x s (1 - s) 2 u'.
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i) {
      float v = x[i];
      float u = kSqrt2OverPi * (v + kCubic * v * v * v);
      float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * v * v);
      float s = 1.0f / (1.0f + fastExp(-2.0f * u));
      dx[i] = g[i] * (s + v * s * (1.0f - s) * 2.0f * du);
    }
    return;
  }
  // d/dx [x Phi(x)] = Phi(x) + x phi(x).
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    float cdf = 0.5f * std::erfc(-v * kInvSqrt2);
    float pdf = kInvSqrt2Pi * std::exp(-0.5f * v * v);
    dx[i] = g[i] * (cdf + v * pdf);
  }
}

void dropout(const float *x, float *y, int64_t n, float p, uint64_t seed,
             int64_t step, int64_t stream) {
  float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i)
    y[i] = dropout_keep(seed, step, stream, i, p) ? x[i] * scale : 0.0f;
}

} // namespace tgc::cpu
