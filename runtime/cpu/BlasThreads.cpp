//===- BlasThreads.cpp - GEMMs on OpenMP's threads ----------------*- C++
//-*-===//
//
// Blocks of C are multiples of 16 rows or columns (OpenBLAS's kernels work
// on such panels), split along the longer side. Each element of C is still
// one cblas_sgemm's dot product over all of K, so the split changes no
// result.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/BlasThreads.h"

#include <algorithm>
#include <mutex>
#include <omp.h>

namespace tgc::cpu {

namespace {

/// Below this many multiply-adds a GEMM stays on one thread (OpenBLAS's own
/// threshold for threading).
constexpr double kThreadedGemmWork = 1 << 18;

void keepBlasSerial() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

} // namespace

int maxThreads() { return omp_get_max_threads(); }

void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n,
          int64_t k, float alpha, const float *a, int64_t lda, const float *b,
          int64_t ldb, float beta, float *c, int64_t ldc) {
  keepBlasSerial();
  bool splitRows = m >= n;
  int64_t side = splitRows ? m : n;
  int64_t parts = omp_in_parallel() ? 1 : maxThreads();
  if ((double)m * n * k < kThreadedGemmWork)
    parts = 1;
  parts = std::min<int64_t>(parts, (side + 15) / 16);
  if (parts <= 1) {
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c,
                ldc);
    return;
  }
  int64_t block = ((side + parts - 1) / parts + 15) / 16 * 16;
#pragma omp parallel for schedule(static, 1) num_threads(parts)
  for (int64_t p = 0; p < parts; ++p) {
    int64_t lo = p * block, len = std::min(side, lo + block) - lo;
    if (len <= 0)
      continue;
    if (splitRows)
      cblas_sgemm(CblasRowMajor, ta, tb, len, n, k, alpha,
                  ta == CblasNoTrans ? a + lo * lda : a + lo, lda, b, ldb, beta,
                  c + lo * ldc, ldc);
    else
      cblas_sgemm(CblasRowMajor, ta, tb, m, len, k, alpha, a, lda,
                  tb == CblasNoTrans ? b + lo : b + lo * ldb, ldb, beta, c + lo,
                  ldc);
  }
}

} // namespace tgc::cpu
