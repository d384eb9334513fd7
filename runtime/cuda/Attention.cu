//===- Attention.cu - Scaled dot-product attention, fwd and bwd ----*- C++ -*-===//
//
// The launchers of Kernels.h's attention. bf16 goes to the tensor-core
// kernels of FlashAttention.cu. fp32 (the small models and the tests) runs
// here, in fp32 throughout, with a warp per row:
//  - forward: a warp per query walks the visible keys in chunks of 32, one
//    key per lane (its score), with an online softmax; each lane accumulates
//    Dv / 32 output dims, the chunk's probabilities broadcast by shuffles;
//  - dq: a warp per query, the same walk, dS = P (dP - delta) per key;
//  - dk, dv: a warp per key walks the queries that see it, one per lane.
// Both backward kernels read lse and delta = rowsum(g * out) per query:
// from the forward's out and lse when the caller kept them, else from a
// forward pass that computes them instead of the output.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/Kernels.h"

#include "runtime/core/Error.h"
#include "runtime/cuda/BlockReduce.cuh"
#include "runtime/cuda/Check.h"
#include "runtime/cuda/DeviceMath.cuh"
#include "runtime/cuda/FlashAttention.h"

namespace tgc::cuda {

namespace {

constexpr int kMaxDim = (int)flash::kMaxHeadDim; // D and Dv
constexpr int kPerLane = kMaxDim / 32; // dims a lane accumulates
constexpr int kWarps = 4;              // rows per block

/// The shape of one call; each head's tensors are dense.
struct Shape {
  int64_t T, S, D, Dv;
  bool causal;
  float scale;

  /// Keys query t sees: [0, visibleKeys(t)).
  __device__ int64_t visibleKeys(int64_t t) const {
    if (!causal)
      return S;
    int64_t end = t + (S - T) + 1;
    return end < 0 ? 0 : (end > S ? S : end);
  }
  /// Queries that see key s: [firstQuery(s), T).
  __device__ int64_t firstQuery(int64_t s) const {
    int64_t first = causal ? s - (S - T) : 0;
    return first < 0 ? 0 : first;
  }
};

__device__ float dot(const float *a, const float *b, int64_t n) {
  float acc = 0.0f;
  for (int64_t i = 0; i < n; ++i)
    acc += a[i] * b[i];
  return acc;
}

/// Warp per query, kWarps per block: blockIdx.x * kWarps + warp indexes
/// (head, query) flattened. Writes out and lse (when not null), or with
/// Delta lse and delta = g · out instead of out.
template <bool Delta>
__global__ void forwardKernel(const float *q, const float *k, const float *v,
                              const float *g, float *out, float *lse,
                              float *delta, int64_t heads, Shape sh) {
  __shared__ float qs[kWarps][kMaxDim];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int64_t row = blockIdx.x * (int64_t)kWarps + warp;
  if (row >= heads * sh.T)
    return;
  int64_t head = row / sh.T, t = row % sh.T;
  const float *kh = k + head * sh.S * sh.D, *vh = v + head * sh.S * sh.Dv;
  for (int64_t d = lane; d < sh.D; d += 32)
    qs[warp][d] = q[row * sh.D + d];
  __syncwarp();

  float m = -INFINITY, l = 0.0f, acc[kPerLane] = {};
  int64_t keys = sh.visibleKeys(t);
  for (int64_t j0 = 0; j0 < keys; j0 += 32) {
    int64_t j = j0 + lane;
    float s = j < keys ? sh.scale * dot(qs[warp], kh + j * sh.D, sh.D)
                       : -INFINITY;
    float mNew = fmaxf(m, warpReduce(s, MaxOp()));
    float corr = expf(m - mNew);
    float prob = j < keys ? expf(s - mNew) : 0.0f;
    l = l * corr + warpReduce(prob, SumOp());
    for (int i = 0; i < kPerLane; ++i)
      acc[i] *= corr;
    int64_t chunk = keys - j0 < 32 ? keys - j0 : 32;
    for (int jj = 0; jj < chunk; ++jj) {
      float pj = __shfl_sync(0xffffffffu, prob, jj);
      const float *vr = vh + (j0 + jj) * sh.Dv;
      for (int i = 0; i < kPerLane; ++i) {
        int64_t dv = lane + 32 * i;
        if (dv < sh.Dv)
          acc[i] += pj * vr[dv];
      }
    }
    m = mNew;
  }
  float inv = l > 0.0f ? 1.0f / l : 0.0f;
  float partial = 0.0f;
  for (int i = 0; i < kPerLane; ++i) {
    int64_t dv = lane + 32 * i;
    if (dv >= sh.Dv)
      continue;
    if (Delta)
      partial += g[row * sh.Dv + dv] * (acc[i] * inv);
    else
      out[row * sh.Dv + dv] = acc[i] * inv;
  }
  float rowDelta = Delta ? warpReduce(partial, SumOp()) : 0.0f;
  if (lane != 0)
    return;
  if (lse)
    lse[row] = l > 0.0f ? m + logf(l) : -INFINITY;
  if (Delta)
    delta[row] = rowDelta;
}

/// Warp per query (as forwardKernel): dq = scale * sum_j dS_j k_j,
/// dS_j = P_j (g · v_j - delta).
__global__ void gradQKernel(const float *g, const float *q, const float *k,
                            const float *v, const float *lse,
                            const float *delta, float *dq, int64_t heads,
                            Shape sh) {
  __shared__ float qs[kWarps][kMaxDim], gs[kWarps][kMaxDim];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int64_t row = blockIdx.x * (int64_t)kWarps + warp;
  if (row >= heads * sh.T)
    return;
  int64_t head = row / sh.T, t = row % sh.T;
  const float *kh = k + head * sh.S * sh.D, *vh = v + head * sh.S * sh.Dv;
  for (int64_t d = lane; d < sh.D; d += 32)
    qs[warp][d] = q[row * sh.D + d];
  for (int64_t d = lane; d < sh.Dv; d += 32)
    gs[warp][d] = g[row * sh.Dv + d];
  __syncwarp();

  float rowLse = lse[row], rowDelta = delta[row], acc[kPerLane] = {};
  int64_t keys = sh.visibleKeys(t);
  for (int64_t j0 = 0; j0 < keys; j0 += 32) {
    int64_t j = j0 + lane;
    float ds = 0.0f;
    if (j < keys) {
      float prob =
          expf(sh.scale * dot(qs[warp], kh + j * sh.D, sh.D) - rowLse);
      ds = prob * (dot(gs[warp], vh + j * sh.Dv, sh.Dv) - rowDelta);
    }
    int64_t chunk = keys - j0 < 32 ? keys - j0 : 32;
    for (int jj = 0; jj < chunk; ++jj) {
      float dsj = __shfl_sync(0xffffffffu, ds, jj);
      const float *kr = kh + (j0 + jj) * sh.D;
      for (int i = 0; i < kPerLane; ++i) {
        int64_t d = lane + 32 * i;
        if (d < sh.D)
          acc[i] += dsj * kr[d];
      }
    }
  }
  for (int i = 0; i < kPerLane; ++i) {
    int64_t d = lane + 32 * i;
    if (d < sh.D)
      dq[row * sh.D + d] = sh.scale * acc[i];
  }
}

/// Warp per key, kWarps per block: dv = sum_t P_t g_t and
/// dk = scale * sum_t dS_t q_t over the queries t that see the key.
__global__ void gradKVKernel(const float *g, const float *q, const float *k,
                             const float *v, const float *lse,
                             const float *delta, float *dk, float *dv,
                             int64_t heads, Shape sh) {
  __shared__ float ks[kWarps][kMaxDim], vs[kWarps][kMaxDim];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int64_t keyRow = blockIdx.x * (int64_t)kWarps + warp;
  if (keyRow >= heads * sh.S)
    return;
  int64_t head = keyRow / sh.S, s = keyRow % sh.S;
  const float *qh = q + head * sh.T * sh.D, *gh = g + head * sh.T * sh.Dv;
  const float *lseh = lse + head * sh.T, *deltah = delta + head * sh.T;
  for (int64_t d = lane; d < sh.D; d += 32)
    ks[warp][d] = k[keyRow * sh.D + d];
  for (int64_t d = lane; d < sh.Dv; d += 32)
    vs[warp][d] = v[keyRow * sh.Dv + d];
  __syncwarp();

  float accK[kPerLane] = {}, accV[kPerLane] = {};
  for (int64_t t0 = sh.firstQuery(s); t0 < sh.T; t0 += 32) {
    int64_t t = t0 + lane;
    float prob = 0.0f, ds = 0.0f;
    if (t < sh.T) {
      prob = expf(sh.scale * dot(ks[warp], qh + t * sh.D, sh.D) - lseh[t]);
      ds = prob * (dot(vs[warp], gh + t * sh.Dv, sh.Dv) - deltah[t]);
    }
    int64_t chunk = sh.T - t0 < 32 ? sh.T - t0 : 32;
    for (int tt = 0; tt < chunk; ++tt) {
      float pj = __shfl_sync(0xffffffffu, prob, tt);
      float dsj = __shfl_sync(0xffffffffu, ds, tt);
      const float *qr = qh + (t0 + tt) * sh.D, *gr = gh + (t0 + tt) * sh.Dv;
      for (int i = 0; i < kPerLane; ++i) {
        int64_t d = lane + 32 * i;
        if (d < sh.D)
          accK[i] += dsj * qr[d];
        if (d < sh.Dv)
          accV[i] += pj * gr[d];
      }
    }
  }
  for (int i = 0; i < kPerLane; ++i) {
    int64_t d = lane + 32 * i;
    if (d < sh.D)
      dk[keyRow * sh.D + d] = sh.scale * accK[i];
    if (d < sh.Dv)
      dv[keyRow * sh.Dv + d] = accV[i];
  }
}

/// Warp per query: delta = g · out, from the forward's output.
template <typename T>
__global__ void deltaKernel(const T *g, const T *out, float *delta,
                            int64_t rows, int64_t dv) {
  int lane = threadIdx.x % 32;
  int64_t row = blockIdx.x * (int64_t)kWarps + threadIdx.x / 32;
  if (row >= rows)
    return;
  float acc = 0.0f;
  for (int64_t d = lane; d < dv; d += 32)
    acc += toFloat(g[row * dv + d]) * toFloat(out[row * dv + d]);
  acc = warpReduce(acc, SumOp());
  if (lane == 0)
    delta[row] = acc;
}

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

int64_t align256(int64_t bytes) { return (bytes + 255) / 256 * 256; }

void checkDims(int64_t D, int64_t Dv) {
  if (D > kMaxDim || Dv > kMaxDim)
    throw Error("tgc::cuda::attention: head dims up to " +
                std::to_string(kMaxDim) + " are supported, got D=" +
                std::to_string(D) + " Dv=" + std::to_string(Dv));
}

unsigned rowBlocks(int64_t rows) { return blocksFor(rows, kWarps); }

/// The workspace's delta and lse ([heads * T] fp32 each).
struct GradScratch {
  float *delta, *lse;
};

GradScratch carve(void *workspace, int64_t rows) {
  if (!workspace)
    throw Error("tgc::cuda::attention_grad: needs a workspace of "
                "attention_grad_workspace_bytes(B, H, T)");
  char *p = static_cast<char *>(workspace);
  return {reinterpret_cast<float *>(p),
          reinterpret_cast<float *>(p + align256(rows * 4))};
}

flash::Params paramsOf(const bf16 *q, const bf16 *k, const bf16 *v, int64_t T,
                       int64_t S, int64_t D, int64_t Dv, bool causal,
                       float scale) {
  flash::Params p{};
  p.q = q;
  p.k = k;
  p.v = v;
  p.T = T;
  p.S = S;
  p.D = D;
  p.Dv = Dv;
  p.causal = causal;
  p.scale = scale;
  return p;
}

} // namespace

int64_t attention_grad_workspace_bytes(int64_t B, int64_t H, int64_t T) {
  return 2 * align256(B * H * T * 4);
}

void attention(const float *q, const float *k, const float *v, float *out,
               float *lse, int64_t B, int64_t H, int64_t T, int64_t S,
               int64_t D, int64_t Dv, bool causal, float scale,
               cudaStream_t stream) {
  checkDims(D, Dv);
  int64_t heads = B * H;
  if (heads * T == 0)
    return;
  Shape sh{T, S, D, Dv, causal, scale};
  forwardKernel<false><<<rowBlocks(heads * T), kWarps * 32, 0, stream>>>(
      q, k, v, nullptr, out, lse, nullptr, heads, sh);
  TGC_CUDA_CHECK_LAUNCH();
}

void attention(const bf16 *q, const bf16 *k, const bf16 *v, bf16 *out,
               float *lse, int64_t B, int64_t H, int64_t T, int64_t S,
               int64_t D, int64_t Dv, bool causal, float scale,
               cudaStream_t stream) {
  checkDims(D, Dv);
  int64_t heads = B * H;
  if (heads * T == 0)
    return;
  flash::Params p = paramsOf(q, k, v, T, S, D, Dv, causal, scale);
  p.out = out;
  p.lse = lse;
  flash::forward(p, heads, stream);
}

void attention_grad(const float *g, const float *q, const float *k,
                    const float *v, const float *out, const float *lse,
                    float *dq, float *dk, float *dv, int64_t B, int64_t H,
                    int64_t T, int64_t S, int64_t D, int64_t Dv, bool causal,
                    float scale, void *workspace, cudaStream_t stream) {
  checkDims(D, Dv);
  int64_t heads = B * H;
  if (heads == 0)
    return;
  Shape sh{T, S, D, Dv, causal, scale};
  GradScratch ws = carve(workspace, heads * T);
  const float *rowLse = lse;
  if (out && lse) {
    deltaKernel<float><<<rowBlocks(heads * T), kWarps * 32, 0, stream>>>(
        g, out, ws.delta, heads * T, Dv);
  } else {
    forwardKernel<true><<<rowBlocks(heads * T), kWarps * 32, 0, stream>>>(
        q, k, v, g, nullptr, ws.lse, ws.delta, heads, sh);
    rowLse = ws.lse;
  }
  TGC_CUDA_CHECK_LAUNCH();
  if (heads * T > 0) {
    gradQKernel<<<rowBlocks(heads * T), kWarps * 32, 0, stream>>>(
        g, q, k, v, rowLse, ws.delta, dq, heads, sh);
    TGC_CUDA_CHECK_LAUNCH();
  }
  if (heads * S > 0) {
    gradKVKernel<<<rowBlocks(heads * S), kWarps * 32, 0, stream>>>(
        g, q, k, v, rowLse, ws.delta, dk, dv, heads, sh);
    TGC_CUDA_CHECK_LAUNCH();
  }
}

void attention_grad(const bf16 *g, const bf16 *q, const bf16 *k,
                    const bf16 *v, const bf16 *out, const float *lse,
                    bf16 *dq, bf16 *dk, bf16 *dv, int64_t B, int64_t H,
                    int64_t T, int64_t S, int64_t D, int64_t Dv, bool causal,
                    float scale, void *workspace, cudaStream_t stream) {
  checkDims(D, Dv);
  int64_t heads = B * H;
  if (heads == 0 || (T == 0 && S == 0))
    return;
  GradScratch ws = carve(workspace, heads * T);
  flash::Params p = paramsOf(q, k, v, T, S, D, Dv, causal, scale);
  p.g = g;
  p.dq = dq;
  p.dk = dk;
  p.dv = dv;
  p.delta = ws.delta;
  if (out && lse) {
    p.lse = const_cast<float *>(lse); // read only by the backward kernels
    if (T > 0) {
      deltaKernel<bf16><<<rowBlocks(heads * T), kWarps * 32, 0, stream>>>(
          g, out, ws.delta, heads * T, Dv);
      TGC_CUDA_CHECK_LAUNCH();
    }
  } else {
    p.lse = ws.lse;
    if (T > 0)
      flash::forwardDelta(p, heads, stream);
  }
  flash::backward(p, heads, stream);
}

} // namespace tgc::cuda
