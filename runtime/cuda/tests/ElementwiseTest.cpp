//===- ElementwiseTest.cpp - GELU, dropout, casts, DeviceMath -------*- C++ -*-===//

#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/DeviceMath.cuh"
#include "runtime/cuda/tests/GpuTest.h"

#include <gtest/gtest.h>

using namespace tgc::cuda;
using namespace tgc::cuda::test;

namespace {

// Runs everywhere: the mask is a host function too.
TEST(CudaDeviceMath, DropoutMaskIsTheCpus) {
  for (uint64_t seed : {0ull, 7ull, 0x123456789ull})
    for (int64_t step : {1, 2, 1000})
      for (int64_t stream : {0, 1, 7})
        for (float p : {0.0f, 0.1f, 0.5f, 0.9f})
          for (int64_t i = 0; i < 4096; ++i)
            ASSERT_EQ(tgc::cuda::dropout_keep(seed, step, stream, i, p),
                      tgc::cpu::dropout_keep(seed, step, stream, i, p))
                << "seed " << seed << " step " << step << " stream " << stream
                << " i " << i;
}

TEST(CudaActivation, GeluFloat) {
  TGC_REQUIRE_GPU();
  const int64_t n = 10007;
  std::vector<float> x = randomVector(n, 1, -6.0f, 6.0f);
  std::vector<float> g = randomVector(n, 2);
  DeviceBuffer<float> dx(x), dg(g), dy(n), dgrad(n);
  for (bool tanhApprox : {false, true}) {
    std::vector<float> y(n), grad(n);
    tgc::cpu::gelu(x.data(), y.data(), n, tanhApprox);
    tgc::cpu::gelu_grad(g.data(), x.data(), grad.data(), n, tanhApprox);
    gelu(dx.get(), dy.get(), n, tanhApprox, nullptr);
    gelu_grad(dg.get(), dx.get(), dgrad.get(), n, tanhApprox, nullptr);
    expectClose(dy.toHost(), y, 1e-5, 1e-6, "gelu");
    expectClose(dgrad.toHost(), grad, 1e-5, 1e-6, "gelu_grad");
  }
}

TEST(CudaActivation, GeluBf16) {
  TGC_REQUIRE_GPU();
  const int64_t n = 4099;
  std::vector<float> x = roundToBf16(randomVector(n, 3, -6.0f, 6.0f));
  std::vector<float> g = roundToBf16(randomVector(n, 4));
  DeviceBuffer<bf16> dx(toBf16(x)), dg(toBf16(g)), dy(n), dgrad(n);
  std::vector<float> y(n), grad(n);
  tgc::cpu::gelu(x.data(), y.data(), n, true);
  tgc::cpu::gelu_grad(g.data(), x.data(), grad.data(), n, true);
  gelu(dx.get(), dy.get(), n, true, nullptr);
  gelu_grad(dg.get(), dx.get(), dgrad.get(), n, true, nullptr);
  expectClose(toFloat(dy.toHost()), y, 8e-3, 1e-3, "gelu bf16");
  expectClose(toFloat(dgrad.toHost()), grad, 8e-3, 1e-3, "gelu_grad bf16");
}

TEST(CudaActivation, DropoutMatchesCpuExactly) {
  TGC_REQUIRE_GPU();
  const int64_t n = 100003;
  std::vector<float> x = randomVector(n, 5);
  DeviceBuffer<float> dx(x), dy(n);
  DeviceBuffer<int64_t> step(std::vector<int64_t>{42});
  DeviceBuffer<int64_t> stream(std::vector<int64_t>{3});
  for (float p : {0.0f, 0.1f, 0.5f}) {
    std::vector<float> y(n);
    tgc::cpu::dropout(x.data(), y.data(), n, p, 1234, 42, 3);
    dropout(dx.get(), dy.get(), n, p, 1234, step.get(), stream.get(),
            nullptr);
    EXPECT_EQ(dy.toHost(), y) << "p " << p;
  }
  // bf16: the same mask, the kept values scaled and rounded.
  std::vector<float> xb = roundToBf16(x);
  DeviceBuffer<bf16> bx(toBf16(xb)), by(n);
  std::vector<float> y(n);
  tgc::cpu::dropout(xb.data(), y.data(), n, 0.25f, 99, 42, 3);
  dropout(bx.get(), by.get(), n, 0.25f, 99, step.get(), stream.get(), nullptr);
  EXPECT_EQ(toFloat(by.toHost()), roundToBf16(y));
}

TEST(CudaActivation, Casts) {
  TGC_REQUIRE_GPU();
  const int64_t n = 1000;
  std::vector<float> x = randomVector(n, 6, -100.0f, 100.0f);
  DeviceBuffer<float> dx(x), back(n);
  DeviceBuffer<bf16> half(n);
  cast(dx.get(), half.get(), n, nullptr);
  cast(half.get(), back.get(), n, nullptr);
  EXPECT_EQ(back.toHost(), roundToBf16(x));
}

} // namespace
