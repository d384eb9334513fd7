//===- AttentionTest.cpp - attention and attention_grad ------------*- C++ -*-===//
//
// Forward and backward against a naive double implementation (causal with
// S > T, S < T where early queries see no key, several query blocks, Dv != D),
// and the backward against finite differences of the forward.
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
};

struct Tensors {
  std::vector<float> q, k, v, g;
};

Tensors makeInputs(const Dims &d, uint32_t seed) {
  return {randomVector(d.B * d.H * d.T * d.D, seed, -1.5f, 1.5f),
          randomVector(d.B * d.H * d.S * d.D, seed + 1, -1.5f, 1.5f),
          randomVector(d.B * d.H * d.S * d.Dv, seed + 2),
          randomVector(d.B * d.H * d.T * d.Dv, seed + 3)};
}

/// Naive attention and its gradients in double.
void naiveAttention(const Dims &d, const Tensors &in, double scale,
                    std::vector<double> &out, std::vector<double> &dq,
                    std::vector<double> &dk, std::vector<double> &dv) {
  out.assign(d.B * d.H * d.T * d.Dv, 0.0);
  dq.assign(in.q.size(), 0.0);
  dk.assign(in.k.size(), 0.0);
  dv.assign(in.v.size(), 0.0);
  for (int64_t bh = 0; bh < d.B * d.H; ++bh) {
    const float *q = in.q.data() + bh * d.T * d.D;
    const float *k = in.k.data() + bh * d.S * d.D;
    const float *v = in.v.data() + bh * d.S * d.Dv;
    const float *g = in.g.data() + bh * d.T * d.Dv;
    for (int64_t t = 0; t < d.T; ++t) {
      int64_t visible = d.causal ? std::clamp<int64_t>(t + d.S - d.T + 1, 0, d.S)
                                 : d.S;
      if (visible == 0)
        continue;
      std::vector<double> p(visible);
      double mx = -INFINITY, sum = 0;
      for (int64_t s = 0; s < visible; ++s) {
        double dot = 0;
        for (int64_t i = 0; i < d.D; ++i)
          dot += (double)q[t * d.D + i] * k[s * d.D + i];
        p[s] = dot * scale;
        mx = std::max(mx, p[s]);
      }
      for (double &x : p)
        sum += (x = std::exp(x - mx));
      for (double &x : p)
        x /= sum;
      for (int64_t s = 0; s < visible; ++s)
        for (int64_t j = 0; j < d.Dv; ++j)
          out[(bh * d.T + t) * d.Dv + j] += p[s] * v[s * d.Dv + j];
      // Backward for this query row.
      std::vector<double> dp(visible, 0.0);
      for (int64_t s = 0; s < visible; ++s)
        for (int64_t j = 0; j < d.Dv; ++j) {
          dp[s] += (double)g[t * d.Dv + j] * v[s * d.Dv + j];
          dv[(bh * d.S + s) * d.Dv + j] += p[s] * g[t * d.Dv + j];
        }
      double delta = 0;
      for (int64_t s = 0; s < visible; ++s)
        delta += p[s] * dp[s];
      for (int64_t s = 0; s < visible; ++s) {
        double ds = p[s] * (dp[s] - delta) * scale;
        for (int64_t i = 0; i < d.D; ++i) {
          dq[(bh * d.T + t) * d.D + i] += ds * k[s * d.D + i];
          dk[(bh * d.S + s) * d.D + i] += ds * q[t * d.D + i];
        }
      }
    }
  }
}

void checkAgainstNaive(const Dims &d, uint32_t seed) {
  Tensors in = makeInputs(d, seed);
  float scale = 1.0f / std::sqrt((float)d.D);
  std::vector<double> wantOut, wantDq, wantDk, wantDv;
  naiveAttention(d, in, scale, wantOut, wantDq, wantDk, wantDv);
  std::vector<float> out(wantOut.size(), 9.0f), dq(in.q.size(), 9.0f),
      dk(in.k.size(), 9.0f), dv(in.v.size(), 9.0f);
  attention(in.q.data(), in.k.data(), in.v.data(), out.data(), d.B, d.H, d.T,
            d.S, d.D, d.Dv, d.causal, scale);
  attention_grad(in.g.data(), in.q.data(), in.k.data(), in.v.data(),
                 dq.data(), dk.data(), dv.data(), d.B, d.H, d.T, d.S, d.D,
                 d.Dv, d.causal, scale);
  expectClose(out, wantOut, 1e-4, 1e-5, "attention out");
  expectClose(dq, wantDq, 1e-4, 1e-5, "attention dq");
  expectClose(dk, wantDk, 1e-4, 1e-5, "attention dk");
  expectClose(dv, wantDv, 1e-4, 1e-5, "attention dv");
}

} // namespace

TEST(Attention, MatchesNaive) {
  checkAgainstNaive({2, 3, 5, 5, 4, 4, false}, 1);
  checkAgainstNaive({2, 3, 5, 5, 4, 4, true}, 2);
  checkAgainstNaive({1, 2, 5, 9, 8, 3, true}, 3);   // S > T: a kv cache
  checkAgainstNaive({1, 2, 9, 5, 8, 6, true}, 4);   // S < T: early rows see none
  checkAgainstNaive({2, 2, 150, 130, 16, 8, true}, 5); // several query blocks
  checkAgainstNaive({1, 1, 70, 200, 16, 16, false}, 6);
}

TEST(Attention, SingleThreadMatchesNaive) {
  int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  checkAgainstNaive({2, 2, 100, 80, 8, 8, true}, 7);
  omp_set_num_threads(saved);
}

TEST(Attention, FewHeadsUseThreadedBlas) {
  checkAgainstNaive({1, 1, 200, 200, 32, 32, true}, 8);
}

TEST(Attention, GradientsMatchFiniteDifferences) {
  for (bool causal : {false, true}) {
    Dims d{1, 2, 4, 6, 3, 2, causal};
    Tensors in = makeInputs(d, 9);
    float scale = 0.7f;
    std::vector<float> dq(in.q.size()), dk(in.k.size()), dv(in.v.size());
    attention_grad(in.g.data(), in.q.data(), in.k.data(), in.v.data(),
                   dq.data(), dk.data(), dv.data(), d.B, d.H, d.T, d.S, d.D,
                   d.Dv, d.causal, scale);
    auto loss = [&] {
      std::vector<float> out(d.B * d.H * d.T * d.Dv);
      attention(in.q.data(), in.k.data(), in.v.data(), out.data(), d.B, d.H,
                d.T, d.S, d.D, d.Dv, d.causal, scale);
      return weightedSum(out, in.g);
    };
    std::string tag = causal ? " causal" : "";
    expectGradientMatches(in.q, dq, loss, 1e-2, 1e-2, 1e-3, "dq" + tag);
    expectGradientMatches(in.k, dk, loss, 1e-2, 1e-2, 1e-3, "dk" + tag);
    expectGradientMatches(in.v, dv, loss, 1e-2, 1e-2, 1e-3, "dv" + tag);
  }
}
