//===- Reduce.cpp - Sum, mean and max over dims; sum of squares ---*- C++ -*-===//
//
// A reduction over any set of dims is done as a few passes of one shape,
// [outer, red, inner] -> [outer, inner]: size-1 dims are dropped, runs of
// adjacent reduced (or kept) dims are merged, and the reduced runs are then
// removed one at a time from the innermost. The common cases (last dims, or
// leading dims as in a bias gradient) take a single pass.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"

#include "runtime/cpu/BlasThreads.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace tgc::cpu {

namespace {

/// max that keeps a NaN once seen, as torch.amax does.
inline float nanMax(float acc, float v) {
  return (v > acc || v != v) ? v : acc;
}

/// Sum or max of a contiguous run, sums in double.
float reduceRun(bool isMax, const float *x, int64_t n) {
  if (isMax) {
    float acc = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < n; ++i)
      acc = nanMax(acc, x[i]);
    return acc;
  }
  double acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i)
    acc += x[i];
  return (float)acc;
}

/// dst[o, j] = scale * reduce_r src[o, r, j].
void reducePass(bool isMax, const float *src, int64_t outer, int64_t red,
                int64_t inner, float *dst, float scale) {
  int threads = maxThreads();
  if (inner == 1) {
    // Few long rows: split each row so that every thread has work.
    int64_t splits = 1;
    if (outer < threads && red >= 8192)
      splits = std::min<int64_t>((threads + outer - 1) / outer, red / 4096);
    if (splits == 1) {
#pragma omp parallel for schedule(static) if (outer * red > 32768)
      for (int64_t o = 0; o < outer; ++o)
        dst[o] = reduceRun(isMax, src + o * red, red) * scale;
      return;
    }
    std::vector<float> partial(outer * splits);
    int64_t chunk = (red + splits - 1) / splits;
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < outer * splits; ++t) {
      int64_t o = t / splits, s = t % splits;
      int64_t begin = std::min(red, s * chunk),
              end = std::min(red, begin + chunk);
      partial[t] = reduceRun(isMax, src + o * red + begin, end - begin);
    }
    for (int64_t o = 0; o < outer; ++o) {
      if (isMax) {
        float acc = -std::numeric_limits<float>::infinity();
        for (int64_t s = 0; s < splits; ++s)
          acc = nanMax(acc, partial[o * splits + s]);
        dst[o] = acc;
      } else {
        double acc = 0;
        for (int64_t s = 0; s < splits; ++s)
          acc += partial[o * splits + s];
        dst[o] = (float)acc * scale;
      }
    }
    return;
  }

  // Column reduction over blocks of the inner dim, accumulated on the stack.
  constexpr int64_t kBlock = 64;
  int64_t blocks = (inner + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (outer * red * inner > 32768)
  for (int64_t t = 0; t < outer * blocks; ++t) {
    int64_t o = t / blocks, j0 = (t % blocks) * kBlock;
    int64_t len = std::min(kBlock, inner - j0);
    const float *base = src + o * red * inner + j0;
    float *out = dst + o * inner + j0;
    if (isMax) {
      float acc[kBlock];
      for (int64_t j = 0; j < len; ++j)
        acc[j] = -std::numeric_limits<float>::infinity();
      for (int64_t r = 0; r < red; ++r)
        for (int64_t j = 0; j < len; ++j)
          acc[j] = nanMax(acc[j], base[r * inner + j]);
      for (int64_t j = 0; j < len; ++j)
        out[j] = acc[j];
    } else {
      double acc[kBlock] = {};
      for (int64_t r = 0; r < red; ++r) {
        const float *row = base + r * inner;
#pragma omp simd
        for (int64_t j = 0; j < len; ++j)
          acc[j] += row[j];
      }
      for (int64_t j = 0; j < len; ++j)
        out[j] = (float)acc[j] * scale;
    }
  }
}

} // namespace

void reduce(ReduceKind kind, const float *x, const int64_t *shape, int rank,
            const int64_t *dims, int numDims, float *out) {
  bool isMax = kind == ReduceKind::Max;
  std::vector<bool> reduced(rank, false);
  for (int i = 0; i < numDims; ++i)
    reduced[dims[i]] = true;
  int64_t keptCount = 1, redCount = 1;
  for (int i = 0; i < rank; ++i)
    (reduced[i] ? redCount : keptCount) *= shape[i];
  if (keptCount == 0)
    return;
  if (redCount == 0) {
    float identity = kind == ReduceKind::Sum    ? 0.0f
                     : kind == ReduceKind::Mean ? std::nanf("")
                                                : -std::numeric_limits<float>::infinity();
    std::fill(out, out + keptCount, identity);
    return;
  }
  float meanScale = kind == ReduceKind::Mean ? (float)(1.0 / redCount) : 1.0f;

  // Runs of adjacent dims with the same role, size-1 dims dropped.
  std::vector<int64_t> sizes;
  std::vector<bool> isRed;
  for (int i = 0; i < rank; ++i) {
    if (shape[i] == 1)
      continue;
    if (!sizes.empty() && isRed.back() == reduced[i]) {
      sizes.back() *= shape[i];
      continue;
    }
    sizes.push_back(shape[i]);
    isRed.push_back(reduced[i]);
  }
  int passes = (int)std::count(isRed.begin(), isRed.end(), true);
  if (passes == 0) {
    std::memcpy(out, x, sizeof(float) * keptCount);
    return;
  }

  std::vector<float> bufA, bufB;
  const float *src = x;
  while (passes > 0) {
    int j = (int)sizes.size() - 1;
    while (!isRed[j])
      --j;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < j; ++i)
      outer *= sizes[i];
    for (int i = j + 1; i < (int)sizes.size(); ++i)
      inner *= sizes[i];
    float *dst = out;
    if (passes > 1) {
      std::vector<float> &buf = src == bufA.data() ? bufB : bufA;
      buf.resize(outer * inner);
      dst = buf.data();
    }
    reducePass(isMax, src, outer, sizes[j], inner, dst,
               passes == 1 ? meanScale : 1.0f);
    src = dst;
    --passes;
    // Drop the run and merge its kept neighbours.
    sizes.erase(sizes.begin() + j);
    isRed.erase(isRed.begin() + j);
    if (j > 0 && j < (int)sizes.size() && isRed[j - 1] == isRed[j]) {
      sizes[j - 1] *= sizes[j];
      sizes.erase(sizes.begin() + j);
      isRed.erase(isRed.begin() + j);
    }
  }
}

double sum_squares(const float *x, int64_t n) {
  double acc = 0;
#pragma omp parallel for simd schedule(static) reduction(+ : acc) if (n > 32768)
  for (int64_t i = 0; i < n; ++i)
    acc += (double)x[i] * x[i];
  return acc;
}

void bind_result(void *target, const void *value, int64_t bytes) {
  if (target != value)
    std::memcpy(target, value, bytes);
}

void accumulate_grad(void *sum, const float *grad, int64_t n, bool first) {
  if (first)
    std::memcpy(sum, grad, n * sizeof(float));
  else
    add_into(sum, grad, n);
}

void add_into(void *sum, const float *part, int64_t n) {
  float *s = static_cast<float *>(sum);
  for (int64_t i = 0; i < n; ++i)
    s[i] += part[i];
}

} // namespace tgc::cpu
