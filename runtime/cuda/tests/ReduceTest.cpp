//===- ReduceTest.cpp - reduce, softmax, global_norm, clip_factor --*- C++ -*-===//

#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/tests/GpuTest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

using namespace tgc::cuda;
using namespace tgc::cuda::test;

namespace {

TEST(CudaReduce, MatchesCpu) {
  TGC_REQUIRE_GPU();
  struct Case {
    std::vector<int64_t> shape, dims;
  };
  std::vector<Case> cases = {
      {{64, 768}, {1}},         // rows
      {{8, 64, 768}, {0, 1}},   // a bias gradient: leading dims
      {{4, 5, 6, 7}, {0, 2}},   // two passes through the workspace
      {{4, 5, 6, 7}, {1, 3}},
      {{3, 1, 9}, {1}},         // size-1 reduced dim: a copy
      {{2, 3, 4}, {0, 1, 2}},   // everything
      {{5, 0, 3}, {1}},         // empty reduction: the identity
  };
  for (const Case &c : cases) {
    int rank = (int)c.shape.size(), numDims = (int)c.dims.size();
    int64_t n = std::accumulate(c.shape.begin(), c.shape.end(), int64_t{1},
                                std::multiplies<int64_t>());
    int64_t kept = 1;
    for (int i = 0; i < rank; ++i)
      if (std::find(c.dims.begin(), c.dims.end(), i) == c.dims.end())
        kept *= c.shape[i];
    std::vector<float> x = randomVector(n, 1);
    DeviceBuffer<float> dx(x), dout(kept);
    DeviceBuffer<bf16> bx(toBf16(x)), bout(kept);
    Workspace ws(reduce_workspace_bytes(c.shape.data(), rank, c.dims.data(),
                                        numDims));
    std::vector<float> xb = roundToBf16(x);
    for (tgc::cpu::ReduceKind kind :
         {tgc::cpu::ReduceKind::Sum, tgc::cpu::ReduceKind::Mean,
          tgc::cpu::ReduceKind::Max}) {
      std::vector<float> want(kept), wantB(kept);
      tgc::cpu::reduce(kind, x.data(), c.shape.data(), rank, c.dims.data(),
                       numDims, want.data());
      tgc::cpu::reduce(kind, xb.data(), c.shape.data(), rank, c.dims.data(),
                       numDims, wantB.data());
      ReduceKind k = (ReduceKind)kind;
      reduce(k, dx.get(), c.shape.data(), rank, c.dims.data(), numDims,
             dout.get(), ws.get(), nullptr);
      reduce(k, bx.get(), c.shape.data(), rank, c.dims.data(), numDims,
             bout.get(), ws.get(), nullptr);
      std::string what = "rank " + std::to_string(rank) + " kind " +
                         std::to_string((int)kind);
      expectClose(dout.toHost(), want, 1e-6, 1e-6, what);
      expectClose(toFloat(bout.toHost()), roundToBf16(wantB), 4e-3, 1e-6,
                  what + " bf16");
    }
  }
}

TEST(CudaReduce, MaxKeepsNaN) {
  TGC_REQUIRE_GPU();
  std::vector<float> x = randomVector(64, 2);
  x[10] = NAN;
  std::vector<int64_t> shape = {2, 32}, dims = {1};
  DeviceBuffer<float> dx(x), out(2);
  reduce(ReduceKind::Max, dx.get(), shape.data(), 2, dims.data(), 1, out.get(),
         nullptr, nullptr);
  std::vector<float> got = out.toHost();
  EXPECT_TRUE(std::isnan(got[0]));
  EXPECT_FALSE(std::isnan(got[1]));
}

TEST(CudaSoftmax, MatchesCpu) {
  TGC_REQUIRE_GPU();
  struct Case {
    int64_t outer, n, inner;
  };
  for (Case c : {Case{37, 50257, 1}, Case{100, 64, 1}, Case{6, 33, 17}}) {
    int64_t total = c.outer * c.n * c.inner;
    std::vector<float> x = randomVector(total, 3, -8.0f, 8.0f);
    x[5] = -INFINITY; // a masked entry
    std::vector<float> want(total), wantLog(total);
    tgc::cpu::softmax(x.data(), want.data(), c.outer, c.n, c.inner);
    tgc::cpu::log_softmax(x.data(), wantLog.data(), c.outer, c.n, c.inner);
    DeviceBuffer<float> dx(x), dy(total);
    softmax(dx.get(), dy.get(), c.outer, c.n, c.inner, nullptr);
    expectClose(dy.toHost(), want, 1e-5, 1e-7, "softmax");
    log_softmax(dx.get(), dy.get(), c.outer, c.n, c.inner, nullptr);
    expectClose(dy.toHost(), wantLog, 1e-5, 1e-5, "log_softmax");

    std::vector<float> xb = roundToBf16(x);
    tgc::cpu::softmax(xb.data(), want.data(), c.outer, c.n, c.inner);
    DeviceBuffer<bf16> bx(toBf16(xb)), by(total);
    softmax(bx.get(), by.get(), c.outer, c.n, c.inner, nullptr);
    expectClose(toFloat(by.toHost()), want, 8e-3, 1e-6, "softmax bf16");
  }
}

TEST(CudaGlobalNorm, MatchesCpuAndClips) {
  TGC_REQUIRE_GPU();
  // More tensors than one launch takes, of mixed types and sizes (one
  // empty).
  std::vector<std::vector<float>> tensors;
  for (int i = 0; i < 40; ++i)
    tensors.push_back(randomVector(i == 7 ? 0 : 1000 * (i % 5) + 13 * i + 1,
                                   100 + i));
  tensors.push_back(randomVector(1 << 20, 99));
  double sum = 0;
  std::vector<std::unique_ptr<DeviceBuffer<float>>> f32;
  std::vector<std::unique_ptr<DeviceBuffer<bf16>>> b16;
  std::vector<NormInput> inputs;
  for (size_t i = 0; i < tensors.size(); ++i) {
    bool half = i % 3 == 1;
    std::vector<float> t = half ? roundToBf16(tensors[i]) : tensors[i];
    sum += tgc::cpu::sum_squares(t.data(), (int64_t)t.size());
    if (half) {
      b16.push_back(std::make_unique<DeviceBuffer<bf16>>(toBf16(t)));
      inputs.push_back({b16.back()->get(), tgc::DType::BF16,
                        (int64_t)t.size()});
    } else {
      f32.push_back(std::make_unique<DeviceBuffer<float>>(t));
      inputs.push_back({f32.back()->get(), tgc::DType::F32,
                        (int64_t)t.size()});
    }
  }
  Workspace ws(global_norm_workspace_bytes(inputs.data(), (int)inputs.size()));
  DeviceBuffer<float> norm(1), scale(1);
  global_norm(inputs.data(), (int)inputs.size(), norm.get(), ws.get(),
              nullptr);
  float want = (float)std::sqrt(sum);
  expectClose(norm.toHost(), {want}, 1e-6, 0.0, "global norm");

  // torch's clip coefficient, fp32 as tg-optimizer builds it.
  for (float maxNorm : {1.0f, 1e6f}) {
    clip_factor(norm.get(), maxNorm, scale.get(), nullptr);
    float coef = maxNorm / (norm.toHost()[0] + 1e-6f);
    EXPECT_EQ(scale.toHost()[0], std::min(coef, 1.0f)) << maxNorm;
  }
}

} // namespace
