//===- BlockReduce.cuh - Warp and block reductions, launch sizes ---*- CUDA -*-===//
//
// The reductions the runtime's kernels share. They combine values in a fixed
// tree (butterfly shuffles within a warp, then the warps' results in warp
// order), so a result depends only on the inputs and the block shape, never
// on scheduling: that is what makes the norms, losses and gradients
// deterministic from run to run.
//
// Internal to runtime/cuda (generated code uses DeviceMath.cuh).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CUDA_BLOCKREDUCE_CUH
#define TGC_RUNTIME_CUDA_BLOCKREDUCE_CUH

#include <cuda_runtime.h>

#include <cstdint>

namespace tgc::cuda {

constexpr int kWarpSize = 32;

/// max that keeps a NaN once seen (torch.amax, tgc::cpu::reduce).
__device__ __forceinline__ float nanMax(float acc, float v) {
  return (v > acc || v != v) ? v : acc;
}

struct SumOp {
  template <typename T> __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct NanMaxOp {
  __device__ float operator()(float a, float b) const { return nanMax(a, b); }
};

/// A running softmax denominator: s = sum of exp(x - m) over the values
/// seen, m their maximum. Empty (and all -inf) is {-inf, 0}.
struct MaxSum {
  float m, s;
};

/// Adds one value to a running MaxSum. -inf values add nothing (so a row
/// that starts with masked entries does not turn into NaN); a NaN makes the
/// sum NaN for good.
__device__ __forceinline__ void addToMaxSum(MaxSum &acc, float x) {
  if (x != x) {
    acc.s = x;
    return;
  }
  float m = fmaxf(acc.m, x);
  if (m == -INFINITY)
    return;
  acc.s = acc.s * expf(acc.m - m) + expf(x - m);
  acc.m = m;
}

struct MaxSumOp {
  __device__ MaxSum operator()(MaxSum a, MaxSum b) const {
    float m = fmaxf(a.m, b.m);
    if (m == -INFINITY)
      return {m, a.s + b.s}; // 0, or NaN if either saw one
    return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
  }
};

__device__ __forceinline__ float shuffleXor(float v, int offset) {
  return __shfl_xor_sync(0xffffffffu, v, offset);
}
__device__ __forceinline__ double shuffleXor(double v, int offset) {
  return __shfl_xor_sync(0xffffffffu, v, offset);
}
__device__ __forceinline__ long long shuffleXor(long long v, int offset) {
  return __shfl_xor_sync(0xffffffffu, v, offset);
}
__device__ __forceinline__ MaxSum shuffleXor(MaxSum v, int offset) {
  return {shuffleXor(v.m, offset), shuffleXor(v.s, offset)};
}

/// Every lane gets op over the warp's 32 values.
template <typename T, typename Op>
__device__ __forceinline__ T warpReduce(T v, Op op) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    v = op(v, shuffleXor(v, offset));
  return v;
}

/// Every thread of the block gets op over the block's values. blockDim.x must
/// be a multiple of 32 (at most 1024); all threads must call it. `shared`
/// holds 32 T and is reused: calls in a row are separated by the barrier at
/// the end.
template <typename T, typename Op>
__device__ T blockReduce(T v, Op op, T *shared) {
  int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  int warps = blockDim.x / kWarpSize;
  v = warpReduce(v, op);
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  T result = shared[0];
  for (int i = 1; i < warps; ++i)
    result = op(result, shared[i]);
  __syncthreads();
  return result;
}

/// Blocks for `work` items at `perBlock` each, at least 1.
inline unsigned blocksFor(int64_t work, int64_t perBlock) {
  int64_t blocks = (work + perBlock - 1) / perBlock;
  return (unsigned)(blocks < 1 ? 1 : blocks);
}

/// A grid for a grid-stride loop over `n` items: enough blocks to fill the
/// GPU several times over, never more than the items need.
inline unsigned gridStrideBlocks(int64_t n, int threads) {
  constexpr int64_t kMaxBlocks = 132 * 32; // an H100's SMs, 32 blocks each
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks > kMaxBlocks)
    blocks = kMaxBlocks;
  return (unsigned)(blocks < 1 ? 1 : blocks);
}

} // namespace tgc::cuda

#endif // TGC_RUNTIME_CUDA_BLOCKREDUCE_CUH
