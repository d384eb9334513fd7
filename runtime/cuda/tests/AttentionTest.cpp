//===- AttentionTest.cpp - attention and attention_grad ------------*- C++ -*-===//
//
// Against tgc::cpu::attention and attention_grad, causal and not, with
// T == S, T < S (a query block seeing a key prefix) and T > S (queries that
// see no key at all when causal), head dims that are and are not multiples
// of 16, and the backward both with the forward's out and lse and without.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/tests/GpuTest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace tgc::cuda;
using namespace tgc::cuda::test;

namespace {

struct AttnCase {
  int64_t B, H, T, S, D, Dv;
  bool causal;

  std::string name() const {
    return "B" + std::to_string(B) + " H" + std::to_string(H) + " T" +
           std::to_string(T) + " S" + std::to_string(S) + " D" +
           std::to_string(D) + " Dv" + std::to_string(Dv) +
           (causal ? " causal" : "");
  }
};

std::vector<AttnCase> cases() {
  std::vector<AttnCase> all;
  for (bool causal : {false, true}) {
    all.push_back({2, 3, 64, 64, 64, 64, causal});
    all.push_back({1, 2, 100, 100, 64, 64, causal}); // partial tiles
    all.push_back({2, 2, 40, 150, 32, 48, causal});  // T < S
    all.push_back({1, 3, 130, 50, 40, 24, causal});  // T > S
    all.push_back({1, 1, 70, 90, 128, 128, causal});
    all.push_back({1, 2, 33, 33, 80, 96, causal});   // KD = 128, odd dims
  }
  return all;
}

struct Reference {
  std::vector<float> q, k, v, g, out, dq, dk, dv;
};

/// Random inputs (rounded to bf16 when `bf16`) and the CPU's results.
Reference reference(const AttnCase &c, float scale, bool bf16) {
  int64_t bh = c.B * c.H;
  Reference r;
  auto input = [&](int64_t n, uint32_t seed) {
    std::vector<float> x = randomVector(n, seed);
    return bf16 ? roundToBf16(x) : x;
  };
  r.q = input(bh * c.T * c.D, 1);
  r.k = input(bh * c.S * c.D, 2);
  r.v = input(bh * c.S * c.Dv, 3);
  r.g = input(bh * c.T * c.Dv, 4);
  r.out.resize(bh * c.T * c.Dv);
  r.dq.resize(r.q.size());
  r.dk.resize(r.k.size());
  r.dv.resize(r.v.size());
  tgc::cpu::attention(r.q.data(), r.k.data(), r.v.data(), r.out.data(), c.B,
                      c.H, c.T, c.S, c.D, c.Dv, c.causal, scale);
  tgc::cpu::attention_grad(r.g.data(), r.q.data(), r.k.data(), r.v.data(),
                           r.dq.data(), r.dk.data(), r.dv.data(), c.B, c.H,
                           c.T, c.S, c.D, c.Dv, c.causal, scale);
  return r;
}

/// The log-sum-exp the forward should report, in double.
std::vector<float> referenceLse(const AttnCase &c, const Reference &r,
                                float scale) {
  std::vector<float> lse(c.B * c.H * c.T);
  for (int64_t h = 0; h < c.B * c.H; ++h)
    for (int64_t t = 0; t < c.T; ++t) {
      int64_t keys =
          c.causal ? std::min(std::max<int64_t>(t + c.S - c.T + 1, 0), c.S)
                   : c.S;
      double mx = -INFINITY, sum = 0;
      std::vector<double> s(keys);
      for (int64_t j = 0; j < keys; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < c.D; ++d)
          dot += (double)r.q[(h * c.T + t) * c.D + d] *
                 r.k[(h * c.S + j) * c.D + d];
        s[j] = dot * scale;
        mx = std::max(mx, s[j]);
      }
      for (double x : s)
        sum += std::exp(x - mx);
      lse[h * c.T + t] = keys ? (float)(mx + std::log(sum)) : -INFINITY;
    }
  return lse;
}

TEST(CudaAttention, Fp32MatchesCpu) {
  TGC_REQUIRE_GPU();
  for (const AttnCase &c : cases()) {
    float scale = 1.0f / std::sqrt((float)c.D);
    Reference r = reference(c, scale, false);
    std::vector<float> wantLse = referenceLse(c, r, scale);
    int64_t bht = c.B * c.H * c.T;
    DeviceBuffer<float> q(r.q), k(r.k), v(r.v), g(r.g), out(r.out.size()),
        lse(bht), dq(r.dq.size()), dk(r.dk.size()), dv(r.dv.size());
    Workspace ws(attention_grad_workspace_bytes(c.B, c.H, c.T));
    attention(q.get(), k.get(), v.get(), out.get(), lse.get(), c.B, c.H, c.T,
              c.S, c.D, c.Dv, c.causal, scale, nullptr);
    expectClose(out.toHost(), r.out, 1e-5, 1e-5, c.name() + " out");
    expectClose(lse.toHost(), wantLse, 1e-5, 1e-5, c.name() + " lse");
    // With the forward's out and lse, then recomputing them.
    for (bool kept : {true, false}) {
      attention_grad(g.get(), q.get(), k.get(), v.get(),
                     kept ? out.get() : nullptr, kept ? lse.get() : nullptr,
                     dq.get(), dk.get(), dv.get(), c.B, c.H, c.T, c.S, c.D,
                     c.Dv, c.causal, scale, ws.get(), nullptr);
      std::string what = c.name() + (kept ? " kept" : " recomputed");
      expectClose(dq.toHost(), r.dq, 1e-4, 1e-5, what + " dq");
      expectClose(dk.toHost(), r.dk, 1e-4, 1e-5, what + " dk");
      expectClose(dv.toHost(), r.dv, 1e-4, 1e-5, what + " dv");
    }
  }
}

TEST(CudaAttention, Bf16MatchesCpu) {
  TGC_REQUIRE_GPU();
  for (const AttnCase &c : cases()) {
    float scale = 1.0f / std::sqrt((float)c.D);
    Reference r = reference(c, scale, true);
    std::vector<float> wantLse = referenceLse(c, r, scale);
    int64_t bht = c.B * c.H * c.T;
    DeviceBuffer<bf16> q(toBf16(r.q)), k(toBf16(r.k)), v(toBf16(r.v)),
        g(toBf16(r.g)), out(r.out.size()), dq(r.dq.size()), dk(r.dk.size()),
        dv(r.dv.size());
    DeviceBuffer<float> lse(bht);
    Workspace ws(attention_grad_workspace_bytes(c.B, c.H, c.T));
    attention(q.get(), k.get(), v.get(), out.get(), lse.get(), c.B, c.H, c.T,
              c.S, c.D, c.Dv, c.causal, scale, nullptr);
    // P is rounded to bf16 before P·V, and the outputs are bf16.
    expectClose(toFloat(out.toHost()), r.out, 2e-2, 2e-2 * maxAbs(r.out),
                c.name() + " out");
    expectClose(lse.toHost(), wantLse, 1e-4, 1e-4, c.name() + " lse");
    for (bool kept : {true, false}) {
      attention_grad(g.get(), q.get(), k.get(), v.get(),
                     kept ? out.get() : nullptr, kept ? lse.get() : nullptr,
                     dq.get(), dk.get(), dv.get(), c.B, c.H, c.T, c.S, c.D,
                     c.Dv, c.causal, scale, ws.get(), nullptr);
      std::string what = c.name() + (kept ? " kept" : " recomputed");
      expectClose(toFloat(dq.toHost()), r.dq, 3e-2, 3e-2 * maxAbs(r.dq),
                  what + " dq");
      expectClose(toFloat(dk.toHost()), r.dk, 3e-2, 3e-2 * maxAbs(r.dk),
                  what + " dk");
      expectClose(toFloat(dv.toHost()), r.dv, 3e-2, 3e-2 * maxAbs(r.dv),
                  what + " dv");
    }
  }
}

TEST(CudaAttention, RejectsHeadDimsAbove128) {
  TGC_REQUIRE_GPU();
  DeviceBuffer<float> x(4 * 256);
  EXPECT_THROW(attention(x.get(), x.get(), x.get(), x.get(), nullptr, 1, 1, 4,
                         4, 256, 256, false, 1.0f, nullptr),
               tgc::Error);
}

} // namespace
