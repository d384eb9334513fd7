//===- FlashAttention.h - bf16 tensor-core attention kernels ------*- C++ -*-===//
//
// The bf16 path of tgc::cuda::attention and attention_grad (Attention.cu
// validates the arguments and owns the workspace). Internal to runtime/cuda.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CUDA_FLASHATTENTION_H
#define TGC_RUNTIME_CUDA_FLASHATTENTION_H

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace tgc::cuda::flash {

/// One attention call over BH = B * H heads, each head's tensors dense:
/// q [T, D], k [S, D], v [S, Dv], g and out [T, Dv], lse and delta [T].
struct Params {
  const __nv_bfloat16 *q, *k, *v;
  const __nv_bfloat16 *g;   ///< output gradient (backward, delta)
  __nv_bfloat16 *out;       ///< forward output (null when computing delta)
  __nv_bfloat16 *dq, *dk, *dv;
  float *lse;               ///< natural-log log-sum-exp per query, or null
  float *delta;             ///< rowsum(g * out) per query
  int64_t T, S, D, Dv;
  bool causal;
  float scale;
};

/// The largest head dim (D and Dv) the kernels take.
constexpr int64_t kMaxHeadDim = 128;

/// out (and lse when not null) of every head.
void forward(const Params &p, int64_t heads, cudaStream_t stream);
/// lse and delta = rowsum(g * out) of every head, out recomputed and never
/// stored: the backward's preparation when the forward kept nothing.
void forwardDelta(const Params &p, int64_t heads, cudaStream_t stream);
/// dk, dv (one block per 64 keys) then dq (one block per 64 queries), from
/// lse and delta.
void backward(const Params &p, int64_t heads, cudaStream_t stream);

} // namespace tgc::cuda::flash

#endif // TGC_RUNTIME_CUDA_FLASHATTENTION_H
