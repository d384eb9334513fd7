//===- Attention.cpp - Scaled dot-product attention, fwd and bwd ---*- C++ -*-===//
//
// Per (batch, head), queries go in blocks of 64 rows: the block's scores
// Q_b K^T are one GEMM into a per-thread scratch, the mask's rows are added,
// softmax runs in place on the keys the block can see (a causal block stops
// at its last visible key, so about half the work is skipped), and P V is a
// second GEMM. Nothing is saved for the backward: it recomputes P per block
// and accumulates
//   dV += P^T dO,  dS = P * (dO V^T - rowsum(P * dO V^T)),
//   dQ_b = scale dS K,  dK += scale dS^T Q_b.
// The forward runs (head, block) tasks in parallel, the backward whole
// key/value heads (dK and dV of a head collect every block of every query
// head of its group); with too few tasks for the threads (fewer than half),
// the tasks run in turn and their GEMMs are split over the threads instead.
//
// Grouped-query attention only changes which key/value head a query head
// reads. A mask's gradient is dS summed over the dims the mask broadcasts
// along: the backward keeps dS of every head (in the mask's own buffer when
// the mask has the scores' shape, else in a scratch) and sums it afterwards
// per mask row, in a fixed order, so the result does not depend on the
// threads.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"

#include "runtime/cpu/BlasThreads.h"
#include "runtime/cpu/FastExp.h"
#include "runtime/cpu/ThreadScratch.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace tgc::cpu {

namespace {

constexpr int64_t kQueryBlock = 64;

struct AttentionShape {
  int64_t T, S, D, Dv;
  bool causal;
  float scale;

  /// The keys query t sees are [0, visibleKeys(t)).
  int64_t visibleKeys(int64_t t) const {
    if (!causal)
      return S;
    return std::clamp<int64_t>(t + (S - T) + 1, 0, S);
  }
};

/// The mask of one (batch, head): query t's row starts at
/// rows + t * rowStride and key s is s * keyStride further (strides are 0
/// along broadcast dims). Null rows: no mask.
struct HeadMask {
  const float *rows = nullptr;
  int64_t rowStride = 0, keyStride = 0;

  const float *row(int64_t t) const { return rows + t * rowStride; }
};

/// A broadcast mask [B', H', T', S'] as strides over the scores' indices.
struct MaskLayout {
  const float *data = nullptr;
  int64_t batchStride = 0, headStride = 0, rowStride = 0, keyStride = 0;

  MaskLayout(const float *mask, AttentionMaskShape m) : data(mask) {
    if (!mask)
      return;
    batchStride = m.B > 1 ? m.H * m.T * m.S : 0;
    headStride = m.H > 1 ? m.T * m.S : 0;
    rowStride = m.T > 1 ? m.S : 0;
    keyStride = m.S > 1 ? 1 : 0;
  }
  HeadMask head(int64_t b, int64_t h) const {
    if (!data)
      return {};
    return {data + b * batchStride + h * headStride, rowStride, keyStride};
  }
};

/// P = softmax(scale Q_b K^T + mask) for query rows [t0, t0 + tb) over keys
/// [0, sl), sl = visibleKeys(t0 + tb - 1) > 0; row-major tb x sl. Causally
/// hidden entries are 0, and so is every entry of a row whose scores are all
/// -inf (rather than the NaN of 0 / 0).
void blockProbabilities(const float *qb, const float *k, const HeadMask &mask,
                        const AttentionShape &s, int64_t t0, int64_t tb,
                        int64_t sl, float *p) {
  int64_t ld = std::max<int64_t>(1, s.D);
  gemm(CblasNoTrans, CblasTrans, tb, sl, s.D, s.scale, qb, ld, k, ld, 0.0f, p,
       sl);
  for (int64_t i = 0; i < tb; ++i) {
    float *row = p + i * sl;
    int64_t visible = std::min(sl, s.visibleKeys(t0 + i));
    if (mask.rows) {
      const float *m = mask.row(t0 + i);
      if (mask.keyStride) {
#pragma omp simd
        for (int64_t j = 0; j < visible; ++j)
          row[j] += m[j];
      } else {
        float bias = m[0];
#pragma omp simd
        for (int64_t j = 0; j < visible; ++j)
          row[j] += bias;
      }
    }
    float mx = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : mx)
    for (int64_t j = 0; j < visible; ++j)
      mx = std::max(mx, row[j]);
    if (mx == -std::numeric_limits<float>::infinity()) {
      std::fill(row, row + sl, 0.0f);
      continue;
    }
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < visible; ++j) {
      float e = fastExp(row[j] - mx);
      row[j] = e;
      sum += e;
    }
    float inv = (float)(1.0 / sum);
#pragma omp simd
    for (int64_t j = 0; j < visible; ++j)
      row[j] *= inv;
    std::fill(row + visible, row + sl, 0.0f);
  }
}

void forwardBlock(const float *q, const float *k, const float *v,
                  const HeadMask &mask, float *out, const AttentionShape &s,
                  int64_t t0) {
  int64_t tb = std::min(kQueryBlock, s.T - t0);
  int64_t sl = s.visibleKeys(t0 + tb - 1);
  float *ob = out + t0 * s.Dv;
  if (sl == 0) {
    std::memset(ob, 0, sizeof(float) * tb * s.Dv);
    return;
  }
  float *p = threadScratch(0, (size_t)tb * sl);
  blockProbabilities(q + t0 * s.D, k, mask, s, t0, tb, sl, p);
  gemm(CblasNoTrans, CblasNoTrans, tb, s.Dv, sl, 1.0f, p, sl, v,
       std::max<int64_t>(1, s.Dv), 0.0f, ob, std::max<int64_t>(1, s.Dv));
}

/// One query head's gradients: writes dq, adds into dk and dv (shared by the
/// query heads of a group), and writes dS [T, S] into `ds` when not null.
void backwardHead(const float *g, const float *q, const float *k,
                  const float *v, const HeadMask &mask, float *dq, float *dk,
                  float *dv, float *ds, const AttentionShape &s) {
  int64_t ldk = std::max<int64_t>(1, s.D), ldv = std::max<int64_t>(1, s.Dv);
  for (int64_t t0 = 0; t0 < s.T; t0 += kQueryBlock) {
    int64_t tb = std::min(kQueryBlock, s.T - t0);
    int64_t sl = s.visibleKeys(t0 + tb - 1);
    const float *qb = q + t0 * s.D, *gb = g + t0 * s.Dv;
    float *dqb = dq + t0 * s.D;
    if (sl == 0) {
      std::memset(dqb, 0, sizeof(float) * tb * s.D);
      if (ds)
        std::memset(ds + t0 * s.S, 0, sizeof(float) * tb * s.S);
      continue;
    }
    float *p = threadScratch(0, (size_t)tb * sl);
    float *dp = threadScratch(1, (size_t)tb * sl);
    blockProbabilities(qb, k, mask, s, t0, tb, sl, p);
    gemm(CblasTrans, CblasNoTrans, sl, s.Dv, tb, 1.0f, p, sl, gb, ldv, 1.0f, dv,
         ldv);
    gemm(CblasNoTrans, CblasTrans, tb, sl, s.Dv, 1.0f, gb, ldv, v, ldv, 0.0f,
         dp, sl);
    for (int64_t i = 0; i < tb; ++i) {
      const float *pr = p + i * sl;
      float *dr = dp + i * sl;
      double delta = 0;
#pragma omp simd reduction(+ : delta)
      for (int64_t j = 0; j < sl; ++j)
        delta += pr[j] * dr[j];
      float dl = (float)delta;
#pragma omp simd
      for (int64_t j = 0; j < sl; ++j)
        dr[j] = pr[j] * (dr[j] - dl);
      if (ds) {
        float *out = ds + (t0 + i) * s.S;
        std::memcpy(out, dr, sizeof(float) * sl);
        std::fill(out + sl, out + s.S, 0.0f);
      }
    }
    gemm(CblasNoTrans, CblasNoTrans, tb, s.D, sl, s.scale, dp, sl, k, ldk, 0.0f,
         dqb, ldk);
    gemm(CblasTrans, CblasNoTrans, sl, s.D, tb, s.scale, dp, sl, qb, ldk, 1.0f,
         dk, ldk);
  }
}

/// dmask = ds [B, H, T, S] summed over the dims the mask broadcasts along,
/// one mask row per task and the sum always in (b, h, t) order.
void reduceMaskGrad(const float *ds, float *dmask, AttentionMaskShape m,
                    int64_t B, int64_t H, int64_t T, int64_t S) {
  int64_t rows = m.B * m.H * m.T;
  auto range = [](int64_t maskDim, int64_t index, int64_t full) {
    return maskDim == 1 ? std::pair<int64_t, int64_t>{0, full}
                        : std::pair<int64_t, int64_t>{index, index + 1};
  };
  auto run = [&](int64_t row) {
    int64_t mt = row % m.T, mh = (row / m.T) % m.H, mb = row / (m.T * m.H);
    auto [b0, b1] = range(m.B, mb, B);
    auto [h0, h1] = range(m.H, mh, H);
    auto [r0, r1] = range(m.T, mt, T);
    float *out = dmask + row * m.S;
    std::fill(out, out + m.S, 0.0f);
    for (int64_t b = b0; b < b1; ++b)
      for (int64_t h = h0; h < h1; ++h)
        for (int64_t t = r0; t < r1; ++t) {
          const float *in = ds + ((b * H + h) * T + t) * S;
          if (m.S == S) {
#pragma omp simd
            for (int64_t j = 0; j < S; ++j)
              out[j] += in[j];
          } else {
            double sum = 0;
            for (int64_t j = 0; j < S; ++j)
              sum += in[j];
            out[0] += (float)sum;
          }
        }
  };
  if (maxThreads() > 1 && rows > 1) {
#pragma omp parallel for schedule(static)
    for (int64_t row = 0; row < rows; ++row)
      run(row);
    return;
  }
  for (int64_t row = 0; row < rows; ++row)
    run(row);
}

} // namespace

void attention(const float *q, const float *k, const float *v,
               const float *mask, AttentionMaskShape maskShape, float *out,
               int64_t B, int64_t H, int64_t Hkv, int64_t T, int64_t S,
               int64_t D, int64_t Dv, bool causal, float scale) {
  if (B * H * T * Dv == 0)
    return;
  AttentionShape s{T, S, D, Dv, causal, scale};
  MaskLayout layout(mask, maskShape);
  int64_t group = H / Hkv;
  int64_t blocks = (T + kQueryBlock - 1) / kQueryBlock;
  int64_t tasks = B * H * blocks;
  auto run = [&](int64_t task) {
    int64_t bh = task / blocks, t0 = (task % blocks) * kQueryBlock;
    int64_t b = bh / H, h = bh % H, kv = b * Hkv + h / group;
    forwardBlock(q + bh * T * D, k + kv * S * D, v + kv * S * Dv,
                 layout.head(b, h), out + bh * T * Dv, s, t0);
  };
  int threads = maxThreads();
  if (threads > 1 && tasks > 1 && 2 * tasks >= threads) {
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task)
      run(task);
    return;
  }
  for (int64_t task = 0; task < tasks; ++task)
    run(task);
}

void attention_grad(const float *g, const float *q, const float *k,
                    const float *v, const float *mask,
                    AttentionMaskShape maskShape, float *dq, float *dk,
                    float *dv, float *dmask, int64_t B, int64_t H, int64_t Hkv,
                    int64_t T, int64_t S, int64_t D, int64_t Dv, bool causal,
                    float scale) {
  AttentionShape s{T, S, D, Dv, causal, scale};
  MaskLayout layout(mask, maskShape);
  // dS of every query head, for dmask: written straight into dmask when the
  // mask has the scores' shape.
  bool fullMask = maskShape.B == B && maskShape.H == H && maskShape.T == T &&
                  maskShape.S == S;
  float *ds = nullptr;
  if (dmask)
    ds = fullMask ? dmask : threadScratch(2, (size_t)(B * H * T * S));
  int64_t kvHeads = B * Hkv;
  int64_t group = Hkv > 0 ? H / Hkv : 0;
  auto run = [&](int64_t kv) {
    int64_t b = kv / Hkv, first = (kv % Hkv) * group;
    float *dkh = dk + kv * S * D, *dvh = dv + kv * S * Dv;
    std::memset(dkh, 0, sizeof(float) * S * D);
    std::memset(dvh, 0, sizeof(float) * S * Dv);
    for (int64_t h = first; h < first + group; ++h) {
      int64_t bh = b * H + h;
      backwardHead(g + bh * T * Dv, q + bh * T * D, k + kv * S * D,
                   v + kv * S * Dv, layout.head(b, h), dq + bh * T * D, dkh,
                   dvh, ds ? ds + bh * T * S : nullptr, s);
    }
  };
  int threads = maxThreads();
  if (threads > 1 && kvHeads > 1 && 2 * kvHeads >= threads) {
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t kv = 0; kv < kvHeads; ++kv)
      run(kv);
  } else {
    for (int64_t kv = 0; kv < kvHeads; ++kv)
      run(kv);
  }
  if (dmask && !fullMask)
    reduceMaskGrad(ds, dmask, maskShape, B, H, T, S);
}

} // namespace tgc::cpu
