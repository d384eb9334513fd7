//===- BlasThreads.h - GEMMs on OpenMP's threads ----------------*- C++ -*-===//
//
// OpenBLAS (the pthread build Debian ships) keeps a thread pool of its own,
// and libgomp's idle threads spin after every parallel region: with both
// pools awake, each steals the cores the other is working on (bench/cpu
// measured gpt2-tiny slower on 2 threads than on one). So OpenBLAS runs on
// the calling thread only, and gemm() spreads one large GEMM over OpenMP's
// threads by blocks of rows or columns of C: one pool, the one
// omp_set_num_threads() sizes.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CPU_BLASTHREADS_H
#define TGC_RUNTIME_CPU_BLASTHREADS_H

#include <cblas.h>
#include <cstdint>

namespace tgc::cpu {

/// Row-major C = alpha op(A) op(B) + beta C, as cblas_sgemm. Outside a
/// parallel region a GEMM of at least 2^18 multiply-adds is split over
/// omp_get_max_threads() threads; inside one (kernels running many small
/// GEMMs side by side) it runs on the calling thread.
void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n,
          int64_t k, float alpha, const float *a, int64_t lda, const float *b,
          int64_t ldb, float beta, float *c, int64_t ldc);

/// The thread count kernels plan their work for (omp_get_max_threads()).
int maxThreads();

} // namespace tgc::cpu

#endif // TGC_RUNTIME_CPU_BLASTHREADS_H
