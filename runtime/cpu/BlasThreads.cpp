//===- BlasThreads.cpp - GEMMs on OpenMP's threads ----------------*- C++ -*-===//
//
// A large GEMM is cut into blocks of C along its longer side, multiples of
// 16 rows or columns (OpenBLAS's kernels work on such panels), and the
// blocks are shared among the OpenMP threads. The cut depends on the shape
// alone, never on the thread count: OpenBLAS picks its kernels (its small-
// matrix path among them) by the shape of each call, and those kernels
// round differently, so only the same calls give the same bits. One thread
// or sixteen, a step's results are identical.
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

/// A large GEMM is cut into at most this many blocks, whatever the thread
/// count (at least one block per core of the machines tgc targets).
constexpr int64_t kGemmBlocks = 16;
/// Blocks are at least this many rows or columns: OpenBLAS runs thin calls
/// well below its peak (9% slower steps for gpt2-tiny on one thread with
/// blocks of 128 rows).
constexpr int64_t kMinBlock = 256;

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
  int64_t blocks = (double)m * n * k < kThreadedGemmWork
                       ? 1
                       : std::clamp<int64_t>(side / kMinBlock, 1, kGemmBlocks);
  if (blocks <= 1) {
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c,
                ldc);
    return;
  }
  int64_t block = ((side + blocks - 1) / blocks + 15) / 16 * 16;
  blocks = (side + block - 1) / block;
  auto run = [&](int64_t p) {
    int64_t lo = p * block, len = std::min(side, lo + block) - lo;
    if (splitRows)
      cblas_sgemm(CblasRowMajor, ta, tb, len, n, k, alpha,
                  ta == CblasNoTrans ? a + lo * lda : a + lo, lda, b, ldb, beta,
                  c + lo * ldc, ldc);
    else
      cblas_sgemm(CblasRowMajor, ta, tb, m, len, k, alpha, a, lda,
                  tb == CblasNoTrans ? b + lo : b + lo * ldb, ldb, beta, c + lo,
                  ldc);
  };
  // Inside a parallel region (a GEMM per head, say) the blocks run on this
  // thread, in the same calls.
  int threads = omp_in_parallel() ? 1 : (int)std::min<int64_t>(maxThreads(),
                                                                blocks);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (int64_t p = 0; p < blocks; ++p)
    run(p);
}

} // namespace tgc::cpu
