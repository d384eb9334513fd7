//===- Attention.cpp - Scaled dot-product attention, fwd and bwd ---*- C++
//-*-===//
//
// Per (batch, head), queries go in blocks of 64 rows: the block's scores
// Q_b K^T are one GEMM into a per-thread scratch, softmax runs in place on
// the keys the block can see (a causal block stops at its last visible key,
// so about half the work is skipped), and P V is a second GEMM. Nothing is
// saved for the backward: it recomputes P per block and accumulates
//   dV += P^T dO,  dS = P * (dO V^T - rowsum(P * dO V^T)),
//   dQ_b = scale dS K,  dK += scale dS^T Q_b.
// The forward runs (head, block) tasks in parallel, the backward whole heads
// (dK and dV of a head collect every block); with too few tasks for the
// threads (fewer than half), the tasks run in turn and their GEMMs are
// split over the threads instead.
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

/// P = softmax(scale Q_b K^T) for query rows [t0, t0 + tb) over keys
/// [0, sl), sl = visibleKeys(t0 + tb - 1) > 0; row-major tb x sl. Masked
/// entries (and rows that see nothing) are 0.
void blockProbabilities(const float *qb, const float *k,
                        const AttentionShape &s, int64_t t0, int64_t tb,
                        int64_t sl, float *p) {
  int64_t ld = std::max<int64_t>(1, s.D);
  gemm(CblasNoTrans, CblasTrans, tb, sl, s.D, s.scale, qb, ld, k, ld, 0.0f, p,
       sl);
  for (int64_t i = 0; i < tb; ++i) {
    float *row = p + i * sl;
    int64_t visible = std::min(sl, s.visibleKeys(t0 + i));
    float mx = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : mx)
    for (int64_t j = 0; j < visible; ++j)
      mx = std::max(mx, row[j]);
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < visible; ++j) {
      float e = fastExp(row[j] - mx);
      row[j] = e;
      sum += e;
    }
    float inv = visible > 0 ? (float)(1.0 / sum) : 0.0f;
#pragma omp simd
    for (int64_t j = 0; j < visible; ++j)
      row[j] *= inv;
    std::fill(row + visible, row + sl, 0.0f);
  }
}

void forwardBlock(const float *q, const float *k, const float *v, float *out,
                  const AttentionShape &s, int64_t t0) {
  int64_t tb = std::min(kQueryBlock, s.T - t0);
  int64_t sl = s.visibleKeys(t0 + tb - 1);
  float *ob = out + t0 * s.Dv;
  if (sl == 0) {
    std::memset(ob, 0, sizeof(float) * tb * s.Dv);
    return;
  }
  float *p = threadScratch(0, (size_t)tb * sl);
  blockProbabilities(q + t0 * s.D, k, s, t0, tb, sl, p);
  gemm(CblasNoTrans, CblasNoTrans, tb, s.Dv, sl, 1.0f, p, sl, v,
       std::max<int64_t>(1, s.Dv), 0.0f, ob, std::max<int64_t>(1, s.Dv));
}

void backwardHead(const float *g, const float *q, const float *k,
                  const float *v, float *dq, float *dk, float *dv,
                  const AttentionShape &s) {
  std::memset(dk, 0, sizeof(float) * s.S * s.D);
  std::memset(dv, 0, sizeof(float) * s.S * s.Dv);
  int64_t ldk = std::max<int64_t>(1, s.D), ldv = std::max<int64_t>(1, s.Dv);
  for (int64_t t0 = 0; t0 < s.T; t0 += kQueryBlock) {
    int64_t tb = std::min(kQueryBlock, s.T - t0);
    int64_t sl = s.visibleKeys(t0 + tb - 1);
    const float *qb = q + t0 * s.D, *gb = g + t0 * s.Dv;
    float *dqb = dq + t0 * s.D;
    if (sl == 0) {
      std::memset(dqb, 0, sizeof(float) * tb * s.D);
      continue;
    }
    float *p = threadScratch(0, (size_t)tb * sl);
    float *dp = threadScratch(1, (size_t)tb * sl);
    blockProbabilities(qb, k, s, t0, tb, sl, p);
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
    }
    gemm(CblasNoTrans, CblasNoTrans, tb, s.D, sl, s.scale, dp, sl, k, ldk, 0.0f,
         dqb, ldk);
    gemm(CblasTrans, CblasNoTrans, sl, s.D, tb, s.scale, dp, sl, qb, ldk, 1.0f,
         dk, ldk);
  }
}

} // namespace

void attention(const float *q, const float *k, const float *v, float *out,
               int64_t B, int64_t H, int64_t T, int64_t S, int64_t D,
               int64_t Dv, bool causal, float scale) {
  if (B * H * T * Dv == 0)
    return;
  AttentionShape s{T, S, D, Dv, causal, scale};
  int64_t blocks = (T + kQueryBlock - 1) / kQueryBlock;
  int64_t tasks = B * H * blocks;
  auto run = [&](int64_t task) {
    int64_t bh = task / blocks, t0 = (task % blocks) * kQueryBlock;
    forwardBlock(q + bh * T * D, k + bh * S * D, v + bh * S * Dv,
                 out + bh * T * Dv, s, t0);
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
                    const float *v, float *dq, float *dk, float *dv,
                    int64_t B, int64_t H, int64_t T, int64_t S, int64_t D,
                    int64_t Dv, bool causal, float scale) {
  AttentionShape s{T, S, D, Dv, causal, scale};
  int64_t heads = B * H;
  auto run = [&](int64_t bh) {
    backwardHead(g + bh * T * Dv, q + bh * T * D, k + bh * S * D,
                 v + bh * S * Dv, dq + bh * T * D, dk + bh * S * D,
                 dv + bh * S * Dv, s);
  };
  int threads = maxThreads();
  if (threads > 1 && heads > 1 && 2 * heads >= threads) {
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t bh = 0; bh < heads; ++bh)
      run(bh);
    return;
  }
  for (int64_t bh = 0; bh < heads; ++bh)
    run(bh);
}

} // namespace tgc::cpu
