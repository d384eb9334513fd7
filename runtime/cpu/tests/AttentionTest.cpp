//===- AttentionTest.cpp - attention and attention_grad ---------*- C++ -*-===//
//
// Forward and backward against a naive double implementation (causal with
// S > T, S < T where early queries see no key, several query blocks, Dv != D,
// grouped-query heads, additive masks of every broadcast shape with -inf
// entries and fully masked rows, and the mask's gradient), and the backward
// against finite differences of the forward.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/tests/TestUtil.h"

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <omp.h>

using namespace tgc::cpu;
using namespace tgc::cpu::test;

namespace {

struct Dims {
  int64_t B, H, T, S, D, Dv;
  bool causal;
  int64_t Hkv = 0;           ///< 0: H (multi-head)
  AttentionMaskShape mask{}; ///< used when withMask
  bool withMask = false;

  int64_t kvHeads() const { return Hkv ? Hkv : H; }
  int64_t maskElements() const { return mask.B * mask.H * mask.T * mask.S; }
  /// Index of score (b, h, t, s) in the broadcast mask.
  int64_t maskIndex(int64_t b, int64_t h, int64_t t, int64_t s) const {
    return ((mask.B > 1 ? b : 0) * mask.H + (mask.H > 1 ? h : 0)) * mask.T *
               mask.S +
           (mask.T > 1 ? t : 0) * mask.S + (mask.S > 1 ? s : 0);
  }
};

Dims withMask(Dims d, AttentionMaskShape m) {
  d.mask = m;
  d.withMask = true;
  return d;
}

struct Tensors {
  std::vector<float> q, k, v, g, mask;
};

/// Random inputs; mask entries are -inf with probability `masked`.
Tensors makeInputs(const Dims &d, uint32_t seed, float masked = 0.0f) {
  Tensors in{randomVector(d.B * d.H * d.T * d.D, seed, -1.5f, 1.5f),
             randomVector(d.B * d.kvHeads() * d.S * d.D, seed + 1, -1.5f, 1.5f),
             randomVector(d.B * d.kvHeads() * d.S * d.Dv, seed + 2),
             randomVector(d.B * d.H * d.T * d.Dv, seed + 3),
             {}};
  if (d.withMask) {
    in.mask = randomVector(d.maskElements(), seed + 4, -2.0f, 2.0f);
    std::vector<float> coin = randomVector(d.maskElements(), seed + 5, 0, 1);
    for (int64_t i = 0; i < d.maskElements(); ++i)
      if (coin[i] < masked)
        in.mask[i] = -INFINITY;
  }
  return in;
}

struct Grads {
  std::vector<double> out, dq, dk, dv, dmask;
};

/// Naive attention and its gradients in double.
Grads naiveAttention(const Dims &d, const Tensors &in, double scale) {
  Grads r;
  r.out.assign(d.B * d.H * d.T * d.Dv, 0.0);
  r.dq.assign(in.q.size(), 0.0);
  r.dk.assign(in.k.size(), 0.0);
  r.dv.assign(in.v.size(), 0.0);
  r.dmask.assign(in.mask.size(), 0.0);
  int64_t group = d.H / d.kvHeads();
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t h = 0; h < d.H; ++h) {
      int64_t bh = b * d.H + h, kv = b * d.kvHeads() + h / group;
      const float *q = in.q.data() + bh * d.T * d.D;
      const float *k = in.k.data() + kv * d.S * d.D;
      const float *v = in.v.data() + kv * d.S * d.Dv;
      const float *g = in.g.data() + bh * d.T * d.Dv;
      double *dk = r.dk.data() + kv * d.S * d.D;
      double *dv = r.dv.data() + kv * d.S * d.Dv;
      for (int64_t t = 0; t < d.T; ++t) {
        int64_t visible =
            d.causal ? std::clamp<int64_t>(t + d.S - d.T + 1, 0, d.S) : d.S;
        std::vector<double> p(visible);
        double mx = -INFINITY, sum = 0;
        for (int64_t s = 0; s < visible; ++s) {
          double dot = 0;
          for (int64_t i = 0; i < d.D; ++i)
            dot += (double)q[t * d.D + i] * k[s * d.D + i];
          p[s] = dot * scale;
          if (d.withMask)
            p[s] += in.mask[d.maskIndex(b, h, t, s)];
          mx = std::max(mx, p[s]);
        }
        if (mx == -INFINITY)
          continue; // sees no key: zeros
        for (double &x : p)
          sum += (x = std::exp(x - mx));
        for (double &x : p)
          x /= sum;
        for (int64_t s = 0; s < visible; ++s)
          for (int64_t j = 0; j < d.Dv; ++j)
            r.out[(bh * d.T + t) * d.Dv + j] += p[s] * v[s * d.Dv + j];
        // Backward for this query row.
        std::vector<double> dp(visible, 0.0);
        for (int64_t s = 0; s < visible; ++s)
          for (int64_t j = 0; j < d.Dv; ++j) {
            dp[s] += (double)g[t * d.Dv + j] * v[s * d.Dv + j];
            dv[s * d.Dv + j] += p[s] * g[t * d.Dv + j];
          }
        double delta = 0;
        for (int64_t s = 0; s < visible; ++s)
          delta += p[s] * dp[s];
        for (int64_t s = 0; s < visible; ++s) {
          double ds = p[s] * (dp[s] - delta);
          if (d.withMask)
            r.dmask[d.maskIndex(b, h, t, s)] += ds;
          for (int64_t i = 0; i < d.D; ++i) {
            r.dq[(bh * d.T + t) * d.D + i] += ds * scale * k[s * d.D + i];
            dk[s * d.D + i] += ds * scale * q[t * d.D + i];
          }
        }
      }
    }
  return r;
}

const float *maskOf(const Dims &d, const Tensors &in) {
  return d.withMask ? in.mask.data() : nullptr;
}

void checkAgainstNaive(const Dims &d, uint32_t seed, float masked = 0.0f) {
  Tensors in = makeInputs(d, seed, masked);
  float scale = 1.0f / std::sqrt((float)d.D);
  Grads want = naiveAttention(d, in, scale);
  std::vector<float> out(want.out.size(), 9.0f), dq(in.q.size(), 9.0f),
      dk(in.k.size(), 9.0f), dv(in.v.size(), 9.0f), dmask(in.mask.size(), 9.0f);
  attention(in.q.data(), in.k.data(), in.v.data(), maskOf(d, in), d.mask,
            out.data(), d.B, d.H, d.kvHeads(), d.T, d.S, d.D, d.Dv, d.causal,
            scale);
  attention_grad(in.g.data(), in.q.data(), in.k.data(), in.v.data(),
                 maskOf(d, in), d.mask, dq.data(), dk.data(), dv.data(),
                 d.withMask ? dmask.data() : nullptr, d.B, d.H, d.kvHeads(),
                 d.T, d.S, d.D, d.Dv, d.causal, scale);
  expectClose(out, want.out, 1e-4, 1e-5, "attention out");
  expectClose(dq, want.dq, 1e-4, 1e-5, "attention dq");
  expectClose(dk, want.dk, 1e-4, 1e-5, "attention dk");
  expectClose(dv, want.dv, 1e-4, 1e-5, "attention dv");
  if (d.withMask)
    expectClose(dmask, want.dmask, 1e-4, 1e-5, "attention dmask");
}

} // namespace

TEST(Attention, MatchesNaive) {
  checkAgainstNaive({2, 3, 5, 5, 4, 4, false}, 1);
  checkAgainstNaive({2, 3, 5, 5, 4, 4, true}, 2);
  checkAgainstNaive({1, 2, 5, 9, 8, 3, true}, 3); // S > T: a kv cache
  checkAgainstNaive({1, 2, 9, 5, 8, 6, true}, 4); // S < T: early rows see none
  checkAgainstNaive({2, 2, 150, 130, 16, 8, true}, 5); // several query blocks
  checkAgainstNaive({1, 1, 70, 200, 16, 16, false}, 6);
}

TEST(Attention, SingleThreadMatchesNaive) {
  int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  checkAgainstNaive({2, 2, 100, 80, 8, 8, true}, 7);
  checkAgainstNaive(withMask({2, 4, 70, 30, 8, 8, true, 2}, {2, 1, 1, 30}), 17,
                    0.3f);
  omp_set_num_threads(saved);
}

TEST(Attention, FewHeadsUseThreadedBlas) {
  checkAgainstNaive({1, 1, 200, 200, 32, 32, true}, 8);
}

TEST(Attention, GroupedQueryHeadsMatchNaive) {
  checkAgainstNaive({2, 4, 7, 7, 4, 4, false, 2}, 20);
  checkAgainstNaive({2, 4, 7, 9, 4, 3, true, 2}, 21);
  checkAgainstNaive({1, 6, 80, 70, 8, 8, true, 3}, 22); // several blocks
  checkAgainstNaive({2, 4, 5, 6, 4, 4, false, 1}, 23);  // multi-query
}

TEST(Attention, MasksOfEveryBroadcastShapeMatchNaive) {
  Dims d{2, 4, 7, 9, 4, 3, false, 2};
  for (bool causal : {false, true}) {
    d.causal = causal;
    checkAgainstNaive(withMask(d, {1, 1, 7, 9}), 30); // [T, S]
    checkAgainstNaive(withMask(d, {2, 1, 1, 9}), 31); // padding [B,1,1,S]
    checkAgainstNaive(withMask(d, {2, 1, 7, 9}), 32); // [B, 1, T, S]
    checkAgainstNaive(withMask(d, {1, 4, 7, 9}), 33); // ALiBi, learned bias
    checkAgainstNaive(withMask(d, {2, 4, 7, 9}), 34); // the scores' shape
    checkAgainstNaive(withMask(d, {1, 4, 1, 1}), 35); // per head
    checkAgainstNaive(withMask(d, {1, 1, 7, 1}), 36); // per query
  }
  checkAgainstNaive(withMask({2, 2, 150, 130, 16, 8, true}, {1, 2, 150, 130}),
                    37);
}

TEST(Attention, MinusInfinityEntriesAndFullyMaskedRowsGiveZeros) {
  // A third of the entries -inf: some rows of the [T, S] and [B,1,1,S] masks
  // see nothing (their outputs and gradients are zeros, not NaN).
  Dims d{2, 2, 6, 4, 4, 4, false};
  checkAgainstNaive(withMask(d, {1, 1, 6, 4}), 40, 0.35f);
  checkAgainstNaive(withMask(d, {2, 1, 1, 4}), 41, 0.35f);
  d.causal = true;
  checkAgainstNaive(withMask(d, {2, 2, 6, 4}), 42, 0.35f);

  // Every key of batch 1 masked: its outputs are exactly zero.
  Dims pad = withMask({2, 2, 3, 4, 4, 4, false}, {2, 1, 1, 4});
  Tensors in = makeInputs(pad, 43);
  std::fill(in.mask.begin() + 4, in.mask.end(), -INFINITY);
  std::vector<float> out(2 * 2 * 3 * 4, 9.0f), dq(in.q.size()), dk(in.k.size()),
      dv(in.v.size()), dmask(in.mask.size());
  attention(in.q.data(), in.k.data(), in.v.data(), in.mask.data(), pad.mask,
            out.data(), 2, 2, 2, 3, 4, 4, 4, false, 0.5f);
  attention_grad(in.g.data(), in.q.data(), in.k.data(), in.v.data(),
                 in.mask.data(), pad.mask, dq.data(), dk.data(), dv.data(),
                 dmask.data(), 2, 2, 2, 3, 4, 4, 4, false, 0.5f);
  for (size_t i = out.size() / 2; i < out.size(); ++i)
    EXPECT_EQ(out[i], 0.0f) << "out[" << i << "]";
  for (float x : dq)
    EXPECT_FALSE(std::isnan(x));
  for (size_t i = dq.size() / 2; i < dq.size(); ++i)
    EXPECT_EQ(dq[i], 0.0f) << "dq[" << i << "]";
  for (size_t i = 4; i < dmask.size(); ++i)
    EXPECT_EQ(dmask[i], 0.0f) << "dmask[" << i << "]";
}

TEST(Attention, GradientsMatchFiniteDifferences) {
  for (bool causal : {false, true}) {
    Dims d = withMask({1, 4, 4, 6, 3, 2, causal, 2}, {1, 4, 4, 6});
    Tensors in = makeInputs(d, 9);
    float scale = 0.7f;
    std::vector<float> dq(in.q.size()), dk(in.k.size()), dv(in.v.size()),
        dmask(in.mask.size());
    attention_grad(in.g.data(), in.q.data(), in.k.data(), in.v.data(),
                   in.mask.data(), d.mask, dq.data(), dk.data(), dv.data(),
                   dmask.data(), d.B, d.H, d.kvHeads(), d.T, d.S, d.D, d.Dv,
                   d.causal, scale);
    auto loss = [&] {
      std::vector<float> out(d.B * d.H * d.T * d.Dv);
      attention(in.q.data(), in.k.data(), in.v.data(), in.mask.data(), d.mask,
                out.data(), d.B, d.H, d.kvHeads(), d.T, d.S, d.D, d.Dv,
                d.causal, scale);
      return weightedSum(out, in.g);
    };
    std::string tag = causal ? " causal" : "";
    expectGradientMatches(in.q, dq, loss, 1e-2, 1e-2, 1e-3, "dq" + tag);
    expectGradientMatches(in.k, dk, loss, 1e-2, 1e-2, 1e-3, "dk" + tag);
    expectGradientMatches(in.v, dv, loss, 1e-2, 1e-2, 1e-3, "dv" + tag);
    expectGradientMatches(in.mask, dmask, loss, 1e-2, 1e-2, 1e-3,
                          "dmask" + tag);
  }
}
