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

/// Where score (batch, head, query, key) finds its additive mask element:
/// the dot product of these strides with the indices, 0 along the dims the
/// mask broadcasts along.
struct MaskStrides {
  int64_t batch, head, row, key;
};

/// One attention call over BH = B * H query heads, each head's tensors
/// dense: q [T, D], g and out [T, Dv], lse and delta [T], and of its
/// key/value head k [S, D], v [S, Dv].
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

/// The rest of a call, a kernel argument of its own: with these fields in
/// it, Params would pass 128 bytes, and past that ptxas (CUDA 13, sm_90)
/// spills registers in the dk/dv kernel, which needs over 240 of its 255.
struct HeadsAndMask {
  /// Query and key/value heads per batch: query head h reads key/value head
  /// h / (H / Hkv).
  int64_t H, Hkv;
  const __nv_bfloat16 *mask; ///< added to the scaled scores, or null
  MaskStrides maskStrides;
  float *dscores; ///< dS [BH, T, S] for the mask's gradient, or null
};

/// The largest head dim (D and Dv) the kernels take.
constexpr int64_t kMaxHeadDim = 128;

/// out (and lse when not null) of every head.
void forward(const Params &p, const HeadsAndMask &hm, int64_t heads,
             cudaStream_t stream);
/// lse and delta = rowsum(g * out) of every head, out recomputed and never
/// stored: the backward's preparation when the forward kept nothing.
void forwardDelta(const Params &p, const HeadsAndMask &hm, int64_t heads,
                  cudaStream_t stream);
/// dk, dv (one block per key/value head and 64 keys, over the query heads
/// of its group) then dq (one block per 64 queries), from lse and delta;
/// dq's kernel also writes dscores when it is not null (keys no query of a
/// block sees are left as they are: the caller zeroes them).
void backward(const Params &p, const HeadsAndMask &hm, int64_t heads,
              cudaStream_t stream);

} // namespace tgc::cuda::flash

#endif // TGC_RUNTIME_CUDA_FLASHATTENTION_H
