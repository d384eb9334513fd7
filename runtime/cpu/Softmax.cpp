//===- Softmax.cpp - Softmax and log-softmax along an axis ---------*- C++ -*-===//
//
// x is viewed as [outer, n, inner] and normalized along n. Rows (inner == 1)
// are done one per task in three vectorized sweeps: max, sum of exp, scale;
// strided axes (inner > 1) normalize a block of columns at once.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"

#include "runtime/cpu/FastExp.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tgc::cpu {

namespace {

template <bool Log>
void softmaxRow(const float *x, float *y, int64_t n) {
  float mx = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : mx)
  for (int64_t i = 0; i < n; ++i)
    mx = std::max(mx, x[i]);
  // A row of all -inf gives NaN (-inf - -inf), as in torch.
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) {
    float e = fastExp(x[i] - mx);
    if (!Log)
      y[i] = e;
    sum += e;
  }
  if (Log) {
    float lse = mx + (float)std::log(sum);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      y[i] = x[i] - lse;
  } else {
    float inv = (float)(1.0 / sum);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      y[i] *= inv;
  }
}

template <bool Log>
void softmaxColumns(const float *x, float *y, int64_t n, int64_t inner,
                    int64_t len) {
  constexpr int64_t kBlock = 64;
  float mx[kBlock], sum[kBlock];
  for (int64_t j = 0; j < len; ++j) {
    mx[j] = -std::numeric_limits<float>::infinity();
    sum[j] = 0;
  }
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < len; ++j)
      mx[j] = std::max(mx[j], x[r * inner + j]);
  for (int64_t r = 0; r < n; ++r)
#pragma omp simd
    for (int64_t j = 0; j < len; ++j) {
      float e = fastExp(x[r * inner + j] - mx[j]);
      if (!Log)
        y[r * inner + j] = e;
      sum[j] += e;
    }
  for (int64_t j = 0; j < len; ++j)
    sum[j] = Log ? mx[j] + std::log(sum[j]) : 1.0f / sum[j];
  for (int64_t r = 0; r < n; ++r)
#pragma omp simd
    for (int64_t j = 0; j < len; ++j) {
      if (Log)
        y[r * inner + j] = x[r * inner + j] - sum[j];
      else
        y[r * inner + j] *= sum[j];
    }
}

template <bool Log>
void softmaxImpl(const float *x, float *y, int64_t outer, int64_t n,
                 int64_t inner) {
  if (outer <= 0 || n <= 0 || inner <= 0)
    return;
  bool big = outer * n * inner > 16384;
  if (inner == 1) {
#pragma omp parallel for schedule(static) if (big)
    for (int64_t o = 0; o < outer; ++o)
      softmaxRow<Log>(x + o * n, y + o * n, n);
    return;
  }
  constexpr int64_t kBlock = 64;
  int64_t blocks = (inner + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (big)
  for (int64_t t = 0; t < outer * blocks; ++t) {
    int64_t o = t / blocks, j0 = (t % blocks) * kBlock;
    int64_t off = o * n * inner + j0;
    softmaxColumns<Log>(x + off, y + off, n, inner,
                        std::min(kBlock, inner - j0));
  }
}

} // namespace

void softmax(const float *x, float *y, int64_t outer, int64_t n,
             int64_t inner) {
  softmaxImpl<false>(x, y, outer, n, inner);
}

void log_softmax(const float *x, float *y, int64_t outer, int64_t n,
                 int64_t inner) {
  softmaxImpl<true>(x, y, outer, n, inner);
}

} // namespace tgc::cpu
