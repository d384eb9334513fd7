//===- Matmul.cpp - Batched, broadcasting matrix product --------*- C++ -*-===//
//
// tg.matmul on OpenBLAS: one GEMM per batch matrix. A weight shared by every
// batch (a linear layer on [B, T, K]) folds the batches into the rows of one
// GEMM; many small GEMMs run side by side on OpenMP threads; large ones run
// one after another, each split over the threads (BlasThreads.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"

#include "runtime/cpu/BlasThreads.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace tgc::cpu {

void matmul(const float *a, const float *b, float *c, int64_t m, int64_t n,
            int64_t k, bool transA, bool transB, const int64_t *aBatch,
            const int64_t *bBatch, const int64_t *cBatch, int batchRank) {
  int64_t batch = 1;
  bool bShared = true, aFull = true;
  for (int i = 0; i < batchRank; ++i) {
    batch *= cBatch[i];
    bShared &= bBatch[i] == 1;
    aFull &= aBatch[i] == cBatch[i];
  }
  if (m <= 0 || n <= 0 || batch <= 0)
    return;
  if (k <= 0) {
    std::memset(c, 0, sizeof(float) * batch * m * n);
    return;
  }
  CBLAS_TRANSPOSE ta = transA ? CblasTrans : CblasNoTrans;
  CBLAS_TRANSPOSE tb = transB ? CblasTrans : CblasNoTrans;
  int64_t lda = std::max<int64_t>(1, transA ? m : k);
  int64_t ldb = std::max<int64_t>(1, transB ? k : n);

  // [batch..., M, K] · [K, N]: the batches are just more rows.
  if (bShared && aFull && !transA) {
    gemm(ta, tb, batch * m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, n);
    return;
  }

  // Matrix strides per batch dim; 0 where the operand broadcasts.
  std::vector<int64_t> aStride(batchRank), bStride(batchRank);
  int64_t as = m * k, bs = k * n;
  for (int i = batchRank - 1; i >= 0; --i) {
    aStride[i] = aBatch[i] == 1 ? 0 : as;
    bStride[i] = bBatch[i] == 1 ? 0 : bs;
    as *= aBatch[i];
    bs *= bBatch[i];
  }
  auto gemmOf = [&](int64_t bi) {
    int64_t ao = 0, bo = 0, rest = bi;
    for (int i = batchRank - 1; i >= 0; --i) {
      int64_t idx = rest % cBatch[i];
      rest /= cBatch[i];
      ao += idx * aStride[i];
      bo += idx * bStride[i];
    }
    gemm(ta, tb, m, n, k, 1.0f, a + ao, lda, b + bo, ldb, 0.0f, c + bi * m * n,
         n);
  };

  // gemm() stays on one thread below m*n*k = 2^18; above it, enough batches
  // still keep every thread busy with whole GEMMs.
  int threads = maxThreads();
  double mnk = (double)m * n * k;
  if (batch > 1 && threads > 1 && (batch >= threads || mnk <= (1 << 20))) {
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t bi = 0; bi < batch; ++bi)
      gemmOf(bi);
    return;
  }
  for (int64_t bi = 0; bi < batch; ++bi)
    gemmOf(bi);
}

} // namespace tgc::cpu
