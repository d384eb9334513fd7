//===- RowAccess.cuh - Cooperative, vectorized passes over a row ---*- CUDA -*-===//
//
// Row kernels (softmax, cross-entropy, norms) have a group of threads (a warp
// or a block) sweep one row several times. These helpers do one sweep with
// 16-byte accesses wherever the row allows: the elements before the row's
// first 16-byte boundary and after its last one go one at a time, the rest
// in packs, so any row length and offset works and aligned rows of
// GPT-2-like widths run almost entirely in packs.
//
// Which thread sees which element depends only on the row's address, length
// and the group size, so per-thread partial results combined in a fixed tree
// stay deterministic.
//
// Internal to runtime/cuda.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CUDA_ROWACCESS_CUH
#define TGC_RUNTIME_CUDA_ROWACCESS_CUH

#include "runtime/cuda/DeviceMath.cuh"

#include <cstdint>

namespace tgc::cuda {

/// Elements of T before the first 16-byte boundary at or after `p`.
template <typename T> __device__ __forceinline__ int64_t headElements(const T *p) {
  return (int64_t)(((16u - (reinterpret_cast<uintptr_t>(p) & 15u)) & 15u) /
                   sizeof(T));
}

/// Calls f(i, x[i] as float) for the elements of x[0, n) owned by thread
/// `tid` of `threads`.
template <typename T, typename F>
__device__ __forceinline__ void forRowElements(const T *x, int64_t n, int tid,
                                               int threads, F f) {
  constexpr int kVec = Pack16<T>::kSize;
  int64_t head = min(headElements(x), n);
  for (int64_t i = tid; i < head; i += threads)
    f(i, toFloat(x[i]));
  int64_t packs = (n - head) / kVec;
  for (int64_t p = tid; p < packs; p += threads) {
    int64_t i0 = head + p * kVec;
    Pack16<T> pack = Pack16<T>::load(x + i0);
#pragma unroll
    for (int e = 0; e < kVec; ++e)
      f(i0 + e, toFloat(pack.v[e]));
  }
  for (int64_t i = head + packs * kVec + tid; i < n; i += threads)
    f(i, toFloat(x[i]));
}

/// y[i] = f(i, x[i] as float) for the elements of [0, n) owned by thread
/// `tid` of `threads`. y may be x. Packs are used only when x and y sit at
/// the same offset from a 16-byte boundary.
template <typename T, typename F>
__device__ __forceinline__ void transformRow(const T *x, T *y, int64_t n,
                                             int tid, int threads, F f) {
  constexpr int kVec = Pack16<T>::kSize;
  bool packed = ((reinterpret_cast<uintptr_t>(x) ^
                  reinterpret_cast<uintptr_t>(y)) & 15u) == 0;
  int64_t head = packed ? min(headElements(x), n) : n;
  for (int64_t i = tid; i < head; i += threads)
    y[i] = fromFloat<T>(f(i, toFloat(x[i])));
  int64_t packs = (n - head) / kVec;
  for (int64_t p = tid; p < packs; p += threads) {
    int64_t i0 = head + p * kVec;
    Pack16<T> pack = Pack16<T>::load(x + i0);
#pragma unroll
    for (int e = 0; e < kVec; ++e)
      pack.v[e] = fromFloat<T>(f(i0 + e, toFloat(pack.v[e])));
    pack.store(y + i0);
  }
  for (int64_t i = head + packs * kVec + tid; i < n; i += threads)
    y[i] = fromFloat<T>(f(i, toFloat(x[i])));
}

} // namespace tgc::cuda

#endif // TGC_RUNTIME_CUDA_ROWACCESS_CUH
