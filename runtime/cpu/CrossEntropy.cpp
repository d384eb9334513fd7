//===- CrossEntropy.cpp - Softmax cross-entropy and its gradient ---*- C++ -*-===//
//
// One row of logits per task: the log-sum-exp in one max sweep and one
// vectorized exp sweep, the loss lse - logit[label]. The gradient recomputes
// the softmax (softmax - onehot) scaled by the row's share of the loss
// gradient; the mean counts only rows whose label is not ignore_index.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"

#include "runtime/cpu/FastExp.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace tgc::cpu {

namespace {

constexpr int kMean = 0, kSum = 1;

float logSumExp(const float *x, int64_t n) {
  float mx = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : mx)
  for (int64_t i = 0; i < n; ++i)
    mx = std::max(mx, x[i]);
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i)
    sum += fastExp(x[i] - mx);
  return mx + (float)std::log(sum);
}

bool worthThreads(int64_t rows, int64_t classes) {
  return rows > 1 && rows * classes > 16384;
}

/// The loss (when `perRow` or the returned total is wanted), dlogits (when
/// `dlogits` is not null), or both in one sweep per row: the log-sum-exp
/// computed once. cross_entropy, cross_entropy_grad and
/// cross_entropy_with_grad are this one loop, so the fused classifier gives
/// what the two calls give, bit for bit. `g` is read only for dlogits.
template <typename Idx>
float crossEntropyRows(const float *g, const float *logits, const Idx *labels,
                       int64_t rows, int64_t classes, int64_t ignoreIndex,
                       int reduction, float *perRow, float *dlogits) {
  float shared = 0;
  if (dlogits && (reduction == kMean || reduction == kSum)) {
    int64_t counted = 0;
    for (int64_t r = 0; r < rows; ++r)
      counted += (int64_t)labels[r] != ignoreIndex;
    shared = reduction == kSum ? g[0] : (float)(g[0] / (double)counted);
  }
  double total = 0;
  int64_t counted = 0;
#pragma omp parallel for schedule(static) reduction(+ : total, counted) if (worthThreads(rows, classes))
  for (int64_t r = 0; r < rows; ++r) {
    int64_t label = (int64_t)labels[r];
    float *dx = dlogits ? dlogits + r * classes : nullptr;
    float loss = 0;
    if (label == ignoreIndex) {
      if (dx)
        std::memset(dx, 0, sizeof(float) * classes);
    } else {
      ++counted;
      const float *x = logits + r * classes;
      if (label < 0 || label >= classes) {
        loss = std::nanf("");
        if (dx)
          std::fill(dx, dx + classes, std::nanf(""));
      } else {
        float lse = logSumExp(x, classes);
        loss = lse - x[label];
        if (dx) {
          float scale =
              reduction == kMean || reduction == kSum ? shared : g[r];
#pragma omp simd
          for (int64_t c = 0; c < classes; ++c)
            dx[c] = scale * fastExp(x[c] - lse);
          dx[label] -= scale;
        }
      }
    }
    if (perRow)
      perRow[r] = loss;
    total += loss;
  }
  if (reduction == kMean)
    return (float)(total / (double)counted);
  return (float)total;
}

} // namespace

float cross_entropy_with_grad(const float *g, const float *logits,
                              const int32_t *labels, int64_t rows,
                              int64_t classes, int64_t ignoreIndex,
                              int reduction, float *perRow, float *dlogits) {
  return crossEntropyRows(g, logits, labels, rows, classes, ignoreIndex,
                            reduction, perRow, dlogits);
}
float cross_entropy_with_grad(const float *g, const float *logits,
                              const int64_t *labels, int64_t rows,
                              int64_t classes, int64_t ignoreIndex,
                              int reduction, float *perRow, float *dlogits) {
  return crossEntropyRows(g, logits, labels, rows, classes, ignoreIndex,
                            reduction, perRow, dlogits);
}

float cross_entropy(const float *logits, const int32_t *labels, int64_t rows,
                    int64_t classes, int64_t ignoreIndex, int reduction,
                    float *perRow) {
  return crossEntropyRows(nullptr, logits, labels, rows, classes,
                          ignoreIndex, reduction, perRow, nullptr);
}
float cross_entropy(const float *logits, const int64_t *labels, int64_t rows,
                    int64_t classes, int64_t ignoreIndex, int reduction,
                    float *perRow) {
  return crossEntropyRows(nullptr, logits, labels, rows, classes,
                          ignoreIndex, reduction, perRow, nullptr);
}
void cross_entropy_grad(const float *g, const float *logits,
                        const int32_t *labels, int64_t rows, int64_t classes,
                        int64_t ignoreIndex, int reduction, float *dlogits) {
  crossEntropyRows(g, logits, labels, rows, classes, ignoreIndex,
                     reduction, nullptr, dlogits);
}
void cross_entropy_grad(const float *g, const float *logits,
                        const int64_t *labels, int64_t rows, int64_t classes,
                        int64_t ignoreIndex, int reduction, float *dlogits) {
  crossEntropyRows(g, logits, labels, rows, classes, ignoreIndex,
                     reduction, nullptr, dlogits);
}

} // namespace tgc::cpu
