//===- Embedding.cpp - Row gather and its scatter-add gradient -----*- C++ -*-===//
//
// The gradient groups the positions by table row first (a counting sort), so
// that each row is summed by one thread, in position order: no atomics, no
// per-thread copies of the table, and the same result at any thread count.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"

#include <cstring>
#include <vector>

namespace tgc::cpu {

namespace {

template <typename Idx>
void embeddingImpl(const float *table, int64_t rows, int64_t d,
                   const Idx *indices, int64_t n, float *out) {
#pragma omp parallel for schedule(static) if (n * d > 16384)
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = (int64_t)indices[i];
    if (row >= 0 && row < rows)
      std::memcpy(out + i * d, table + row * d, sizeof(float) * d);
    else
      std::memset(out + i * d, 0, sizeof(float) * d);
  }
}

template <typename Idx>
void embeddingGradImpl(const float *g, const Idx *indices, int64_t n,
                       int64_t rows, int64_t d, float *dtable) {
  // start[r]..start[r + 1] index the positions of row r in `order`.
  std::vector<int64_t> start(rows + 1, 0), order(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = (int64_t)indices[i];
    if (row >= 0 && row < rows)
      ++start[row + 1];
  }
  for (int64_t r = 0; r < rows; ++r)
    start[r + 1] += start[r];
  {
    std::vector<int64_t> next(start.begin(), start.end() - 1);
    for (int64_t i = 0; i < n; ++i) {
      int64_t row = (int64_t)indices[i];
      if (row >= 0 && row < rows)
        order[next[row]++] = i;
    }
  }
#pragma omp parallel for schedule(dynamic, 64) if (rows * d > 16384)
  for (int64_t r = 0; r < rows; ++r) {
    float *dst = dtable + r * d;
    std::memset(dst, 0, sizeof(float) * d);
    for (int64_t p = start[r]; p < start[r + 1]; ++p) {
      const float *src = g + order[p] * d;
#pragma omp simd
      for (int64_t j = 0; j < d; ++j)
        dst[j] += src[j];
    }
  }
}

} // namespace

void embedding(const float *table, int64_t rows, int64_t d,
               const int32_t *indices, int64_t n, float *out) {
  embeddingImpl(table, rows, d, indices, n, out);
}
void embedding(const float *table, int64_t rows, int64_t d,
               const int64_t *indices, int64_t n, float *out) {
  embeddingImpl(table, rows, d, indices, n, out);
}
void embedding_grad(const float *g, const int32_t *indices, int64_t n,
                    int64_t rows, int64_t d, float *dtable) {
  embeddingGradImpl(g, indices, n, rows, d, dtable);
}
void embedding_grad(const float *g, const int64_t *indices, int64_t n,
                    int64_t rows, int64_t d, float *dtable) {
  embeddingGradImpl(g, indices, n, rows, d, dtable);
}

} // namespace tgc::cpu
