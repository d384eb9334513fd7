//===- AttentionTest.cpp - attention and attention_grad ---------*- C++ -*-===//
//
// Against tgc::cpu::attention and attention_grad, causal and not, with
// T == S, T < S (a query block seeing a key prefix) and T > S (queries that
// see no key at all when causal), head dims that are and are not multiples
// of 16, grouped-query heads, additive masks of several broadcast shapes
// (with -inf entries and fully masked rows) and their gradients, and the
// backward both with the forward's out and lse and without.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/tests/GpuTest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>

using namespace tgc::cuda;
using namespace tgc::cuda::test;

namespace {

struct AttnCase {
  int64_t B, H, T, S, D, Dv;
  bool causal;
  int64_t Hkv = 0;           ///< 0: H
  AttentionMaskShape mask{}; ///< used when withMask
  bool withMask = false;
  float masked = 0.0f; ///< share of -inf mask entries

  int64_t kvHeads() const { return Hkv ? Hkv : H; }
  int64_t maskElements() const {
    return withMask ? mask.B * mask.H * mask.T * mask.S : 0;
  }
  tgc::cpu::AttentionMaskShape cpuMask() const {
    return {mask.B, mask.H, mask.T, mask.S};
  }
  std::string name() const {
    std::string n = "B" + std::to_string(B) + " H" + std::to_string(H) +
                    " Hkv" + std::to_string(kvHeads()) + " T" +
                    std::to_string(T) + " S" + std::to_string(S) + " D" +
                    std::to_string(D) + " Dv" + std::to_string(Dv) +
                    (causal ? " causal" : "");
    if (withMask)
      n += " mask " + std::to_string(mask.B) + "x" + std::to_string(mask.H) +
           "x" + std::to_string(mask.T) + "x" + std::to_string(mask.S);
    return n;
  }
};

AttnCase masked(AttnCase c, AttentionMaskShape m, float share = 0.0f) {
  c.mask = m;
  c.withMask = true;
  c.masked = share;
  return c;
}

std::vector<AttnCase> cases() {
  std::vector<AttnCase> all;
  for (bool causal : {false, true}) {
    all.push_back({2, 3, 64, 64, 64, 64, causal});
    all.push_back({1, 2, 100, 100, 64, 64, causal}); // partial tiles
    all.push_back({2, 2, 40, 150, 32, 48, causal});  // T < S
    all.push_back({1, 3, 130, 50, 40, 24, causal});  // T > S
    all.push_back({1, 1, 70, 90, 128, 128, causal});
    all.push_back({1, 2, 33, 33, 80, 96, causal});    // KD = 128, odd dims
    all.push_back({2, 4, 70, 70, 64, 64, causal, 2}); // grouped-query
    all.push_back({1, 6, 40, 90, 32, 32, causal, 1}); // multi-query
    AttnCase gqa{2, 4, 70, 90, 64, 64, causal, 2};
    all.push_back(masked(gqa, {1, 1, 70, 90}));       // [T, S]
    all.push_back(masked(gqa, {2, 1, 1, 90}, 0.3f));  // padding
    all.push_back(masked(gqa, {1, 4, 70, 90}));       // learned bias
    all.push_back(masked(gqa, {2, 4, 70, 90}, 0.2f)); // full
    all.push_back(masked({1, 2, 33, 33, 80, 96, causal}, {1, 2, 1, 33}));
  }
  return all;
}

struct Reference {
  std::vector<float> q, k, v, g, mask, out, dq, dk, dv, dmask;
};

/// Random inputs (rounded to bf16 when `bf16`) and the CPU's results.
Reference reference(const AttnCase &c, float scale, bool bf16) {
  int64_t bh = c.B * c.H, kv = c.B * c.kvHeads();
  Reference r;
  auto input = [&](int64_t n, uint32_t seed) {
    std::vector<float> x = randomVector(n, seed);
    return bf16 ? roundToBf16(x) : x;
  };
  r.q = input(bh * c.T * c.D, 1);
  r.k = input(kv * c.S * c.D, 2);
  r.v = input(kv * c.S * c.Dv, 3);
  r.g = input(bh * c.T * c.Dv, 4);
  r.mask = input(c.maskElements(), 5);
  std::vector<float> coin = randomVector(c.maskElements(), 6, 0.0f, 1.0f);
  for (size_t i = 0; i < r.mask.size(); ++i)
    if (coin[i] < c.masked)
      r.mask[i] = -INFINITY;
  r.out.resize(bh * c.T * c.Dv);
  r.dq.resize(r.q.size());
  r.dk.resize(r.k.size());
  r.dv.resize(r.v.size());
  r.dmask.resize(r.mask.size());
  const float *mask = c.withMask ? r.mask.data() : nullptr;
  tgc::cpu::attention(r.q.data(), r.k.data(), r.v.data(), mask, c.cpuMask(),
                      r.out.data(), c.B, c.H, c.kvHeads(), c.T, c.S, c.D, c.Dv,
                      c.causal, scale);
  tgc::cpu::attention_grad(r.g.data(), r.q.data(), r.k.data(), r.v.data(), mask,
                           c.cpuMask(), r.dq.data(), r.dk.data(), r.dv.data(),
                           c.withMask ? r.dmask.data() : nullptr, c.B, c.H,
                           c.kvHeads(), c.T, c.S, c.D, c.Dv, c.causal, scale);
  return r;
}

/// The log-sum-exp the forward should report, in double.
std::vector<float> referenceLse(const AttnCase &c, const Reference &r,
                                float scale) {
  std::vector<float> lse(c.B * c.H * c.T);
  int64_t group = c.H / c.kvHeads();
  const AttentionMaskShape &m = c.mask;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t hq = 0; hq < c.H; ++hq) {
      int64_t h = b * c.H + hq, kv = b * c.kvHeads() + hq / group;
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
                   r.k[(kv * c.S + j) * c.D + d];
          s[j] = dot * scale;
          if (c.withMask)
            s[j] +=
                r.mask[(((m.B > 1 ? b : 0) * m.H + (m.H > 1 ? hq : 0)) * m.T +
                        (m.T > 1 ? t : 0)) *
                           m.S +
                       (m.S > 1 ? j : 0)];
          mx = std::max(mx, s[j]);
        }
        if (mx == -INFINITY) {
          lse[h * c.T + t] = -INFINITY;
          continue;
        }
        for (double x : s)
          sum += std::exp(x - mx);
        lse[h * c.T + t] = (float)(mx + std::log(sum));
      }
    }
  return lse;
}

/// A device copy of the mask, or none.
template <typename T>
std::unique_ptr<DeviceBuffer<T>> deviceMask(const AttnCase &c,
                                            const std::vector<T> &host) {
  if (!c.withMask)
    return nullptr;
  return std::make_unique<DeviceBuffer<T>>(host);
}

TEST(CudaAttention, Fp32MatchesCpu) {
  TGC_REQUIRE_GPU();
  for (const AttnCase &c : cases()) {
    float scale = 1.0f / std::sqrt((float)c.D);
    Reference r = reference(c, scale, false);
    std::vector<float> wantLse = referenceLse(c, r, scale);
    int64_t bht = c.B * c.H * c.T;
    DeviceBuffer<float> q(r.q), k(r.k), v(r.v), g(r.g), out(r.out.size()),
        lse(bht), dq(r.dq.size()), dk(r.dk.size()), dv(r.dv.size()),
        dmask(std::max<size_t>(1, r.dmask.size()));
    auto mask = deviceMask(c, r.mask);
    const float *maskPtr = mask ? mask->get() : nullptr;
    Workspace ws(
        attention_grad_workspace_bytes(c.B, c.H, c.T, c.S, c.withMask));
    attention(q.get(), k.get(), v.get(), maskPtr, c.mask, out.get(), lse.get(),
              c.B, c.H, c.kvHeads(), c.T, c.S, c.D, c.Dv, c.causal, scale,
              nullptr);
    expectClose(out.toHost(), r.out, 1e-5, 1e-5, c.name() + " out");
    expectClose(lse.toHost(), wantLse, 1e-5, 1e-5, c.name() + " lse");
    // With the forward's out and lse, then recomputing them.
    for (bool kept : {true, false}) {
      attention_grad(g.get(), q.get(), k.get(), v.get(), maskPtr, c.mask,
                     kept ? out.get() : nullptr, kept ? lse.get() : nullptr,
                     dq.get(), dk.get(), dv.get(),
                     c.withMask ? dmask.get() : nullptr, c.B, c.H, c.kvHeads(),
                     c.T, c.S, c.D, c.Dv, c.causal, scale, ws.get(), nullptr);
      std::string what = c.name() + (kept ? " kept" : " recomputed");
      expectClose(dq.toHost(), r.dq, 1e-4, 1e-5, what + " dq");
      expectClose(dk.toHost(), r.dk, 1e-4, 1e-5, what + " dk");
      expectClose(dv.toHost(), r.dv, 1e-4, 1e-5, what + " dv");
      if (c.withMask) {
        std::vector<float> got = dmask.toHost();
        got.resize(r.dmask.size());
        expectClose(got, r.dmask, 1e-4, 1e-5, what + " dmask");
      }
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
        dv(r.dv.size()), dmask(std::max<size_t>(1, r.dmask.size()));
    DeviceBuffer<float> lse(bht);
    auto mask = deviceMask(c, toBf16(r.mask));
    const bf16 *maskPtr = mask ? mask->get() : nullptr;
    Workspace ws(
        attention_grad_workspace_bytes(c.B, c.H, c.T, c.S, c.withMask));
    attention(q.get(), k.get(), v.get(), maskPtr, c.mask, out.get(), lse.get(),
              c.B, c.H, c.kvHeads(), c.T, c.S, c.D, c.Dv, c.causal, scale,
              nullptr);
    // P is rounded to bf16 before P·V, and the outputs are bf16.
    expectClose(toFloat(out.toHost()), r.out, 2e-2, 2e-2 * maxAbs(r.out),
                c.name() + " out");
    expectClose(lse.toHost(), wantLse, 1e-4, 1e-4, c.name() + " lse");
    for (bool kept : {true, false}) {
      attention_grad(g.get(), q.get(), k.get(), v.get(), maskPtr, c.mask,
                     kept ? out.get() : nullptr, kept ? lse.get() : nullptr,
                     dq.get(), dk.get(), dv.get(),
                     c.withMask ? dmask.get() : nullptr, c.B, c.H, c.kvHeads(),
                     c.T, c.S, c.D, c.Dv, c.causal, scale, ws.get(), nullptr);
      std::string what = c.name() + (kept ? " kept" : " recomputed");
      expectClose(toFloat(dq.toHost()), r.dq, 3e-2, 3e-2 * maxAbs(r.dq),
                  what + " dq");
      expectClose(toFloat(dk.toHost()), r.dk, 3e-2, 3e-2 * maxAbs(r.dk),
                  what + " dk");
      expectClose(toFloat(dv.toHost()), r.dv, 3e-2, 3e-2 * maxAbs(r.dv),
                  what + " dv");
      if (c.withMask) {
        std::vector<float> got = toFloat(dmask.toHost());
        got.resize(r.dmask.size());
        expectClose(got, r.dmask, 3e-2, 3e-2 * maxAbs(r.dmask),
                    what + " dmask");
      }
    }
  }
}

TEST(CudaAttention, FullyMaskedRowsGiveZeros) {
  TGC_REQUIRE_GPU();
  // Batch 1's keys all -inf: its outputs and gradients are zero, not NaN.
  AttnCase c = masked({2, 2, 20, 30, 32, 32, false}, {2, 1, 1, 30});
  float scale = 0.2f;
  Reference r = reference(c, scale, false);
  std::vector<float> hostMask = r.mask;
  std::fill(hostMask.begin() + 30, hostMask.end(), -INFINITY);
  r.mask = hostMask;
  int64_t half = c.H * c.T * c.Dv;
  for (bool halfPrecision : {false, true}) {
    auto check = [&](const std::vector<float> &out,
                     const std::vector<float> &dq, const std::string &what) {
      for (int64_t i = half; i < 2 * half; ++i)
        ASSERT_EQ(out[i], 0.0f) << what << " out[" << i << "]";
      for (float x : dq)
        ASSERT_FALSE(std::isnan(x)) << what << " dq";
    };
    Workspace ws(attention_grad_workspace_bytes(c.B, c.H, c.T, c.S, true));
    if (!halfPrecision) {
      DeviceBuffer<float> q(r.q), k(r.k), v(r.v), g(r.g), mask(r.mask),
          out(r.out.size()), dq(r.dq.size()), dk(r.dk.size()), dv(r.dv.size()),
          dmask(r.mask.size());
      attention(q.get(), k.get(), v.get(), mask.get(), c.mask, out.get(),
                nullptr, c.B, c.H, c.H, c.T, c.S, c.D, c.Dv, false, scale,
                nullptr);
      attention_grad(g.get(), q.get(), k.get(), v.get(), mask.get(), c.mask,
                     nullptr, nullptr, dq.get(), dk.get(), dv.get(),
                     dmask.get(), c.B, c.H, c.H, c.T, c.S, c.D, c.Dv, false,
                     scale, ws.get(), nullptr);
      check(out.toHost(), dq.toHost(), "fp32");
    } else {
      DeviceBuffer<bf16> q(toBf16(r.q)), k(toBf16(r.k)), v(toBf16(r.v)),
          g(toBf16(r.g)), mask(toBf16(r.mask)), out(r.out.size()),
          dq(r.dq.size()), dk(r.dk.size()), dv(r.dv.size()),
          dmask(r.mask.size());
      attention(q.get(), k.get(), v.get(), mask.get(), c.mask, out.get(),
                nullptr, c.B, c.H, c.H, c.T, c.S, c.D, c.Dv, false, scale,
                nullptr);
      attention_grad(g.get(), q.get(), k.get(), v.get(), mask.get(), c.mask,
                     nullptr, nullptr, dq.get(), dk.get(), dv.get(),
                     dmask.get(), c.B, c.H, c.H, c.T, c.S, c.D, c.Dv, false,
                     scale, ws.get(), nullptr);
      check(toFloat(out.toHost()), toFloat(dq.toHost()), "bf16");
    }
  }
}

TEST(CudaAttention, RejectsHeadDimsAbove128) {
  TGC_REQUIRE_GPU();
  DeviceBuffer<float> x(4 * 256);
  EXPECT_THROW(attention(x.get(), x.get(), x.get(), nullptr, {}, x.get(),
                         nullptr, 1, 1, 1, 4, 4, 256, 256, false, 1.0f,
                         nullptr),
               tgc::Error);
}

TEST(CudaAttention, RejectsKeyValueHeadsThatDoNotDivide) {
  TGC_REQUIRE_GPU();
  DeviceBuffer<float> x(4 * 4 * 8);
  EXPECT_THROW(attention(x.get(), x.get(), x.get(), nullptr, {}, x.get(),
                         nullptr, 1, 4, 3, 4, 4, 8, 8, false, 1.0f, nullptr),
               tgc::Error);
}

} // namespace
