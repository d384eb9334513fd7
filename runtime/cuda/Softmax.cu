//===- Softmax.cu - Softmax and log-softmax along an axis -----------*- C++ -*-===//
//
// x is viewed as [outer, n, inner] and normalized along n.
//  - inner == 1 (the last axis): one block per row. One sweep keeps a
//    running max and sum of exponentials per thread (an online softmax), the
//    block combines them, and a second sweep writes the result.
//  - inner > 1: one thread per column (outer, j), walking down n with
//    stride inner; neighbouring threads read neighbouring columns, so the
//    reads coalesce.
// Statistics are fp32; the result is written in x's type.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/Kernels.h"

#include "runtime/cuda/BlockReduce.cuh"
#include "runtime/cuda/Check.h"
#include "runtime/cuda/RowAccess.cuh"

namespace tgc::cuda {

namespace {

/// Block per row; blockDim.x a multiple of 32.
template <typename T, bool Log>
__global__ void softmaxRowsKernel(const T *x, T *y, int64_t n) {
  __shared__ MaxSum shared[kWarpSize];
  const T *xr = x + blockIdx.x * n;
  T *yr = y + blockIdx.x * n;
  MaxSum acc{-INFINITY, 0.0f};
  forRowElements(xr, n, threadIdx.x, blockDim.x,
                 [&](int64_t, float v) { addToMaxSum(acc, v); });
  MaxSum row = blockReduce(acc, MaxSumOp(), shared);
  // A row of all -inf has m = -inf and s = 0, and gives NaN as in torch.
  float inv = 1.0f / row.s, lse = row.m + logf(row.s);
  transformRow(xr, yr, n, threadIdx.x, blockDim.x, [&](int64_t, float v) {
    return Log ? v - lse : expf(v - row.m) * inv;
  });
}

/// Thread per column of [outer, n, inner].
template <typename T, bool Log>
__global__ void softmaxColumnsKernel(const T *x, T *y, int64_t outer,
                                     int64_t n, int64_t inner) {
  int64_t col = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (col >= outer * inner)
    return;
  int64_t base = (col / inner) * n * inner + col % inner;
  MaxSum acc{-INFINITY, 0.0f};
  for (int64_t r = 0; r < n; ++r)
    addToMaxSum(acc, toFloat(x[base + r * inner]));
  float inv = 1.0f / acc.s, lse = acc.m + logf(acc.s);
  for (int64_t r = 0; r < n; ++r) {
    float v = toFloat(x[base + r * inner]);
    y[base + r * inner] = fromFloat<T>(Log ? v - lse : expf(v - acc.m) * inv);
  }
}

template <typename T, bool Log>
void softmaxImpl(const T *x, T *y, int64_t outer, int64_t n, int64_t inner,
                 cudaStream_t stream) {
  if (outer <= 0 || n <= 0 || inner <= 0)
    return;
  if (inner == 1) {
    // About 8 elements per thread, 32 to 512 threads.
    int threads = 32;
    while (threads < 512 && (int64_t)threads * 8 < n)
      threads *= 2;
    softmaxRowsKernel<T, Log><<<(unsigned)outer, threads, 0, stream>>>(x, y, n);
  } else {
    constexpr int kThreads = 256;
    softmaxColumnsKernel<T, Log>
        <<<blocksFor(outer * inner, kThreads), kThreads, 0, stream>>>(
            x, y, outer, n, inner);
  }
  TGC_CUDA_CHECK_LAUNCH();
}

} // namespace

void softmax(const float *x, float *y, int64_t outer, int64_t n,
             int64_t inner, cudaStream_t stream) {
  softmaxImpl<float, false>(x, y, outer, n, inner, stream);
}
void softmax(const bf16 *x, bf16 *y, int64_t outer, int64_t n, int64_t inner,
             cudaStream_t stream) {
  softmaxImpl<bf16, false>(x, y, outer, n, inner, stream);
}
void log_softmax(const float *x, float *y, int64_t outer, int64_t n,
                 int64_t inner, cudaStream_t stream) {
  softmaxImpl<float, true>(x, y, outer, n, inner, stream);
}
void log_softmax(const bf16 *x, bf16 *y, int64_t outer, int64_t n,
                 int64_t inner, cudaStream_t stream) {
  softmaxImpl<bf16, true>(x, y, outer, n, inner, stream);
}

} // namespace tgc::cuda
