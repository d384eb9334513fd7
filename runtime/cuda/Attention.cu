//===- Attention.cu - Scaled dot-product attention, fwd and bwd ----*- C++ -*-===//
//
// The launchers of Kernels.h's attention. bf16 goes to the tensor-core
// kernels of FlashAttention.cu. fp32 (the small models and the tests) runs
// here, in fp32 throughout, with a warp per row:
//  - forward: a warp per query walks the visible keys in chunks of 32, one
//    key per lane (its score), with an online softmax; each lane accumulates
//    Dv / 32 output dims; the chunk's scores and probabilities go through
//    the warp's rows of shared memory, each lane reading them all for the
//    chunk's maximum, sum and output (a __syncwarp after each write rather
//    than a shuffle a key: ten times fewer warp collectives for the host
//    emulation, runtime/cuda/simt, to schedule; not yet timed on a GPU
//    against the shuffles);
//  - dq: a warp per query, the same walk, dS = P (dP - delta) per key;
//  - dk, dv: a warp per key walks the queries that see it, one per lane.
// Both backward kernels read lse and delta = rowsum(g * out) per query:
// from the forward's out and lse when the caller kept them, else from a
// forward pass that computes them instead of the output.
//
// Both paths take grouped-query heads (a query head reads the key/value
// head of its group; dk and dv sum over the group) and the additive mask,
// read where the scores are formed, broadcast dims at stride 0. A mask's
// gradient: the dq kernel stores dS of every head in fp32 in the workspace,
// and maskGradKernel sums it over the mask's broadcast dims, one thread per
// mask element in a fixed order (no atomics, as everywhere in runtime/cuda).
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
  int64_t H, Hkv, T, S, D, Dv;
  bool causal;
  float scale;
  const float *mask; ///< or null
  flash::MaskStrides maskStrides;

  /// The key/value head that query head `head` (over the batch) reads.
  __device__ int64_t kvHead(int64_t head) const {
    return head / H * Hkv + head % H / (H / Hkv);
  }
  /// Query t's mask row in query head `head`; null without a mask.
  __device__ const float *maskRow(int64_t head, int64_t t) const {
    if (!mask)
      return nullptr;
    return mask + head / H * maskStrides.batch + head % H * maskStrides.head +
           t * maskStrides.row;
  }
  /// Key s on a mask row; 0 without a mask.
  __device__ float maskAt(const float *row, int64_t s) const {
    return row ? row[s * maskStrides.key] : 0.0f;
  }

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
  __shared__ float qs[kWarps][kMaxDim], ss[kWarps][32], ps[kWarps][32];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int64_t row = blockIdx.x * (int64_t)kWarps + warp;
  if (row >= heads * sh.T)
    return;
  int64_t head = row / sh.T, t = row % sh.T, kv = sh.kvHead(head);
  const float *kh = k + kv * sh.S * sh.D, *vh = v + kv * sh.S * sh.Dv;
  const float *maskRow = sh.maskRow(head, t);
  for (int64_t d = lane; d < sh.D; d += 32)
    qs[warp][d] = q[row * sh.D + d];
  __syncwarp();

  float m = -INFINITY, l = 0.0f, acc[kPerLane] = {};
  int64_t keys = sh.visibleKeys(t);
  for (int64_t j0 = 0; j0 < keys; j0 += 32) {
    int64_t j = j0 + lane;
    float s = j < keys ? sh.scale * dot(qs[warp], kh + j * sh.D, sh.D) +
                             sh.maskAt(maskRow, j)
                       : -INFINITY;
    // The chunk's maximum and (below) its sum, each lane over the chunk's
    // row in shared memory, in the same order in every lane.
    ss[warp][lane] = s;
    __syncwarp();
    float mNew = m;
    for (int jj = 0; jj < 32; ++jj)
      mNew = fmaxf(mNew, ss[warp][jj]);
    // While every score so far is -inf (masked), exponentiate against 0:
    // -inf - -inf would be NaN.
    float base = mNew == -INFINITY ? 0.0f : mNew;
    float corr = expf(m - base);
    float prob = j < keys ? expf(s - base) : 0.0f;
    for (int i = 0; i < kPerLane; ++i)
      acc[i] *= corr;
    int64_t chunk = keys - j0 < 32 ? keys - j0 : 32;
    ps[warp][lane] = prob;
    __syncwarp();
    float sum = 0.0f;
    for (int jj = 0; jj < chunk; ++jj) {
      float pj = ps[warp][jj];
      sum += pj;
      const float *vr = vh + (j0 + jj) * sh.Dv;
      for (int i = 0; i < kPerLane; ++i) {
        int64_t dv = lane + 32 * i;
        if (dv < sh.Dv)
          acc[i] += pj * vr[dv];
      }
    }
    l = l * corr + sum;
    __syncwarp(); // every lane has read ss and ps before the next chunk
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
/// dS_j = P_j (g · v_j - delta); dS also into `dscores` [heads, T, S] when
/// not null (zeroed by the caller: the keys a query does not see are left
/// alone).
__global__ void gradQKernel(const float *g, const float *q, const float *k,
                            const float *v, const float *lse,
                            const float *delta, float *dq, float *dscores,
                            int64_t heads, Shape sh) {
  __shared__ float qs[kWarps][kMaxDim], gs[kWarps][kMaxDim], dss[kWarps][32];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int64_t row = blockIdx.x * (int64_t)kWarps + warp;
  if (row >= heads * sh.T)
    return;
  int64_t head = row / sh.T, t = row % sh.T, kv = sh.kvHead(head);
  const float *kh = k + kv * sh.S * sh.D, *vh = v + kv * sh.S * sh.Dv;
  const float *maskRow = sh.maskRow(head, t);
  for (int64_t d = lane; d < sh.D; d += 32)
    qs[warp][d] = q[row * sh.D + d];
  for (int64_t d = lane; d < sh.Dv; d += 32)
    gs[warp][d] = g[row * sh.Dv + d];
  __syncwarp();

  float rowLse = lse[row], rowDelta = delta[row], acc[kPerLane] = {};
  // lse = -inf: the query sees no key (every score masked), P = 0.
  int64_t keys = rowLse == -INFINITY ? 0 : sh.visibleKeys(t);
  for (int64_t j0 = 0; j0 < keys; j0 += 32) {
    int64_t j = j0 + lane;
    float ds = 0.0f;
    if (j < keys) {
      float prob = expf(sh.scale * dot(qs[warp], kh + j * sh.D, sh.D) +
                        sh.maskAt(maskRow, j) - rowLse);
      ds = prob * (dot(gs[warp], vh + j * sh.Dv, sh.Dv) - rowDelta);
      if (dscores)
        dscores[row * sh.S + j] = ds;
    }
    int64_t chunk = keys - j0 < 32 ? keys - j0 : 32;
    dss[warp][lane] = ds;
    __syncwarp();
    for (int jj = 0; jj < chunk; ++jj) {
      float dsj = dss[warp][jj];
      const float *kr = kh + (j0 + jj) * sh.D;
      for (int i = 0; i < kPerLane; ++i) {
        int64_t d = lane + 32 * i;
        if (d < sh.D)
          acc[i] += dsj * kr[d];
      }
    }
    __syncwarp(); // every lane has read dss before the next chunk writes it
  }
  for (int i = 0; i < kPerLane; ++i) {
    int64_t d = lane + 32 * i;
    if (d < sh.D)
      dq[row * sh.D + d] = sh.scale * acc[i];
  }
}

/// Warp per key of a key/value head, kWarps per block: dv = sum_t P_t g_t
/// and dk = scale * sum_t dS_t q_t over the queries t that see the key, in
/// every query head of the group.
__global__ void gradKVKernel(const float *g, const float *q, const float *k,
                             const float *v, const float *lse,
                             const float *delta, float *dk, float *dv,
                             int64_t kvHeads, Shape sh) {
  __shared__ float ks[kWarps][kMaxDim], vs[kWarps][kMaxDim];
  __shared__ float ps[kWarps][32], dss[kWarps][32];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int64_t keyRow = blockIdx.x * (int64_t)kWarps + warp;
  if (keyRow >= kvHeads * sh.S)
    return;
  int64_t kv = keyRow / sh.S, s = keyRow % sh.S;
  int64_t group = sh.H / sh.Hkv;
  int64_t firstHead = kv / sh.Hkv * sh.H + kv % sh.Hkv * group;
  for (int64_t d = lane; d < sh.D; d += 32)
    ks[warp][d] = k[keyRow * sh.D + d];
  for (int64_t d = lane; d < sh.Dv; d += 32)
    vs[warp][d] = v[keyRow * sh.Dv + d];
  __syncwarp();

  float accK[kPerLane] = {}, accV[kPerLane] = {};
  for (int64_t head = firstHead; head < firstHead + group; ++head) {
    const float *qh = q + head * sh.T * sh.D, *gh = g + head * sh.T * sh.Dv;
    const float *lseh = lse + head * sh.T, *deltah = delta + head * sh.T;
    for (int64_t t0 = sh.firstQuery(s); t0 < sh.T; t0 += 32) {
      int64_t t = t0 + lane;
      float prob = 0.0f, ds = 0.0f;
      // lse = -inf: the query sees no key (every score masked), P = 0.
      if (t < sh.T && lseh[t] != -INFINITY) {
        prob = expf(sh.scale * dot(ks[warp], qh + t * sh.D, sh.D) +
                    sh.maskAt(sh.maskRow(head, t), s) - lseh[t]);
        ds = prob * (dot(vs[warp], gh + t * sh.Dv, sh.Dv) - deltah[t]);
      }
      int64_t chunk = sh.T - t0 < 32 ? sh.T - t0 : 32;
      ps[warp][lane] = prob;
      dss[warp][lane] = ds;
      __syncwarp();
      for (int tt = 0; tt < chunk; ++tt) {
        float pj = ps[warp][tt], dsj = dss[warp][tt];
        const float *qr = qh + (t0 + tt) * sh.D, *gr = gh + (t0 + tt) * sh.Dv;
        for (int i = 0; i < kPerLane; ++i) {
          int64_t d = lane + 32 * i;
          if (d < sh.D)
            accK[i] += dsj * qr[d];
          if (d < sh.Dv)
            accV[i] += pj * gr[d];
        }
      }
      __syncwarp(); // every lane has read ps and dss before they change
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

/// Thread per mask element: dS [B, H, T, S] summed over the dims the mask
/// broadcasts along, always in (b, h, t, s) order.
template <typename Elem>
__global__ void maskGradKernel(const float *ds, Elem *dmask,
                               AttentionMaskShape m, int64_t B, int64_t H,
                               int64_t T, int64_t S) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= m.B * m.H * m.T * m.S)
    return;
  int64_t ms = i % m.S, mt = i / m.S % m.T, mh = i / (m.S * m.T) % m.H,
          mb = i / (m.S * m.T * m.H);
  // Each mask dim is 1 (summed over the scores' whole dim) or the scores'.
  int64_t b0 = m.B == 1 ? 0 : mb, b1 = m.B == 1 ? B : mb + 1;
  int64_t h0 = m.H == 1 ? 0 : mh, h1 = m.H == 1 ? H : mh + 1;
  int64_t t0 = m.T == 1 ? 0 : mt, t1 = m.T == 1 ? T : mt + 1;
  int64_t s0 = m.S == 1 ? 0 : ms, s1 = m.S == 1 ? S : ms + 1;
  float acc = 0.0f;
  for (int64_t b = b0; b < b1; ++b)
    for (int64_t h = h0; h < h1; ++h)
      for (int64_t t = t0; t < t1; ++t)
        for (int64_t s = s0; s < s1; ++s)
          acc += ds[((b * H + h) * T + t) * S + s];
  dmask[i] = fromFloat<Elem>(acc);
}

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

int64_t align256(int64_t bytes) { return (bytes + 255) / 256 * 256; }

void checkShape(int64_t H, int64_t Hkv, int64_t D, int64_t Dv) {
  if (D > kMaxDim || Dv > kMaxDim)
    throw Error("tgc::cuda::attention: head dims up to " +
                std::to_string(kMaxDim) + " are supported, got D=" +
                std::to_string(D) + " Dv=" + std::to_string(Dv));
  if (Hkv <= 0 ? H != 0 : H % Hkv != 0)
    throw Error("tgc::cuda::attention: " + std::to_string(Hkv) +
                " key/value heads do not divide " + std::to_string(H) +
                " query heads");
}

unsigned rowBlocks(int64_t rows) { return blocksFor(rows, kWarps); }

flash::MaskStrides stridesOf(const void *mask, AttentionMaskShape m) {
  if (!mask)
    return {0, 0, 0, 0};
  return {m.B > 1 ? m.H * m.T * m.S : 0, m.H > 1 ? m.T * m.S : 0,
          m.T > 1 ? m.S : 0, m.S > 1 ? 1 : 0};
}

Shape shapeOf(int64_t H, int64_t Hkv, int64_t T, int64_t S, int64_t D,
              int64_t Dv, bool causal, float scale, const float *mask,
              AttentionMaskShape maskShape) {
  return {H, Hkv, T, S, D, Dv, causal, scale, mask, stridesOf(mask, maskShape)};
}

/// The workspace's delta and lse ([heads * T] fp32 each), then dS
/// ([heads * T * S] fp32) for the mask's gradient.
struct GradScratch {
  float *delta, *lse, *dscores;
};

GradScratch carve(void *workspace, int64_t heads, int64_t T, bool maskGrad) {
  if (!workspace)
    throw Error("tgc::cuda::attention_grad: needs a workspace of "
                "attention_grad_workspace_bytes(B, H, T, S, maskGrad)");
  char *p = static_cast<char *>(workspace);
  int64_t rowBytes = align256(heads * T * 4);
  return {reinterpret_cast<float *>(p), reinterpret_cast<float *>(p + rowBytes),
          maskGrad ? reinterpret_cast<float *>(p + 2 * rowBytes) : nullptr};
}

/// Sums the dS of `ws` into dmask (when wanted); the dq kernels wrote it
/// into the zeroed scratch.
template <typename Elem>
void reduceMaskGrad(const GradScratch &ws, Elem *dmask, AttentionMaskShape m,
                    int64_t B, int64_t H, int64_t T, int64_t S,
                    cudaStream_t stream) {
  if (!dmask)
    return;
  int64_t elements = m.B * m.H * m.T * m.S;
  if (elements == 0)
    return;
  maskGradKernel<Elem><<<blocksFor(elements, 256), 256, 0, stream>>>(
      ws.dscores, dmask, m, B, H, T, S);
  TGC_CUDA_CHECK_LAUNCH();
}

void zeroScores(const GradScratch &ws, int64_t heads, int64_t T, int64_t S,
                cudaStream_t stream) {
  if (ws.dscores && heads * T * S > 0)
    TGC_CUDA_CHECK(cudaMemsetAsync(ws.dscores, 0, heads * T * S * 4, stream));
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

flash::HeadsAndMask headsAndMaskOf(int64_t H, int64_t Hkv, const bf16 *mask,
                                   AttentionMaskShape maskShape) {
  return {H, Hkv, mask, stridesOf(mask, maskShape), nullptr};
}

} // namespace

int64_t attention_grad_workspace_bytes(int64_t B, int64_t H, int64_t T,
                                       int64_t S, bool maskGrad) {
  int64_t bytes = 2 * align256(B * H * T * 4);
  return maskGrad ? bytes + align256(B * H * T * S * 4) : bytes;
}

void attention(const float *q, const float *k, const float *v,
               const float *mask, AttentionMaskShape maskShape, float *out,
               float *lse, int64_t B, int64_t H, int64_t Hkv, int64_t T,
               int64_t S, int64_t D, int64_t Dv, bool causal, float scale,
               cudaStream_t stream) {
  checkShape(H, Hkv, D, Dv);
  int64_t heads = B * H;
  if (heads * T == 0)
    return;
  Shape sh = shapeOf(H, Hkv, T, S, D, Dv, causal, scale, mask, maskShape);
  forwardKernel<false><<<rowBlocks(heads * T), kWarps * 32, 0, stream>>>(
      q, k, v, nullptr, out, lse, nullptr, heads, sh);
  TGC_CUDA_CHECK_LAUNCH();
}

void attention(const bf16 *q, const bf16 *k, const bf16 *v, const bf16 *mask,
               AttentionMaskShape maskShape, bf16 *out, float *lse, int64_t B,
               int64_t H, int64_t Hkv, int64_t T, int64_t S, int64_t D,
               int64_t Dv, bool causal, float scale, cudaStream_t stream) {
  checkShape(H, Hkv, D, Dv);
  int64_t heads = B * H;
  if (heads * T == 0)
    return;
  flash::Params p = paramsOf(q, k, v, T, S, D, Dv, causal, scale);
  p.out = out;
  p.lse = lse;
  flash::forward(p, headsAndMaskOf(H, Hkv, mask, maskShape), heads, stream);
}

void attention_grad(const float *g, const float *q, const float *k,
                    const float *v, const float *mask,
                    AttentionMaskShape maskShape, const float *out,
                    const float *lse, float *dq, float *dk, float *dv,
                    float *dmask, int64_t B, int64_t H, int64_t Hkv, int64_t T,
                    int64_t S, int64_t D, int64_t Dv, bool causal, float scale,
                    void *workspace, cudaStream_t stream) {
  checkShape(H, Hkv, D, Dv);
  int64_t heads = B * H;
  if (heads == 0)
    return;
  Shape sh = shapeOf(H, Hkv, T, S, D, Dv, causal, scale, mask, maskShape);
  GradScratch ws = carve(workspace, heads, T, dmask != nullptr);
  zeroScores(ws, heads, T, S, stream);
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
        g, q, k, v, rowLse, ws.delta, dq, ws.dscores, heads, sh);
    TGC_CUDA_CHECK_LAUNCH();
  }
  int64_t kvHeads = B * Hkv;
  if (kvHeads * S > 0) {
    gradKVKernel<<<rowBlocks(kvHeads * S), kWarps * 32, 0, stream>>>(
        g, q, k, v, rowLse, ws.delta, dk, dv, kvHeads, sh);
    TGC_CUDA_CHECK_LAUNCH();
  }
  reduceMaskGrad(ws, dmask, maskShape, B, H, T, S, stream);
}

void attention_grad(const bf16 *g, const bf16 *q, const bf16 *k, const bf16 *v,
                    const bf16 *mask, AttentionMaskShape maskShape,
                    const bf16 *out, const float *lse, bf16 *dq, bf16 *dk,
                    bf16 *dv, bf16 *dmask, int64_t B, int64_t H, int64_t Hkv,
                    int64_t T, int64_t S, int64_t D, int64_t Dv, bool causal,
                    float scale, void *workspace, cudaStream_t stream) {
  checkShape(H, Hkv, D, Dv);
  int64_t heads = B * H;
  if (heads == 0 || (T == 0 && S == 0))
    return;
  GradScratch ws = carve(workspace, heads, T, dmask != nullptr);
  zeroScores(ws, heads, T, S, stream);
  flash::Params p = paramsOf(q, k, v, T, S, D, Dv, causal, scale);
  p.g = g;
  p.dq = dq;
  p.dk = dk;
  p.dv = dv;
  p.delta = ws.delta;
  flash::HeadsAndMask hm = headsAndMaskOf(H, Hkv, mask, maskShape);
  hm.dscores = ws.dscores;
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
      flash::forwardDelta(p, hm, heads, stream);
  }
  flash::backward(p, hm, heads, stream);
  reduceMaskGrad(ws, dmask, maskShape, B, H, T, S, stream);
}

} // namespace tgc::cuda
