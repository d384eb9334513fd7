//===- ElementwiseTest.cpp - gelu, gelu_grad, dropout --------------*- C++ -*-===//

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/tests/TestUtil.h"

#include <cmath>
#include <gtest/gtest.h>

using namespace tgc::cpu;
using namespace tgc::cpu::test;

namespace {

/// In forms without cancellation: 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u))
/// and 0.5 (1 + erf(z)) = 0.5 erfc(-z).
double geluRef(double x, bool tanhApprox) {
  if (tanhApprox) {
    double u = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
    return x / (1 + std::exp(-2 * u));
  }
  return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
}

} // namespace

TEST(Gelu, BothFormsMatchReference) {
  std::vector<float> x = randomVector(50000, 1, -8, 8);
  x.push_back(0.0f);
  x.push_back(-30.0f);
  x.push_back(30.0f);
  for (bool tanhApprox : {false, true}) {
    std::vector<double> want(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      want[i] = geluRef(x[i], tanhApprox);
    std::vector<float> y(x.size());
    gelu(x.data(), y.data(), (int64_t)x.size(), tanhApprox);
    // Relative accuracy even where gelu is tiny (large negative x).
    expectClose(y, want, 2e-5, 1e-30, tanhApprox ? "gelu tanh" : "gelu erf");
  }
}

TEST(Gelu, GradientMatchesFiniteDifferences) {
  std::vector<float> x = randomVector(64, 2, -4, 4);
  std::vector<float> g = randomVector(64, 3);
  for (bool tanhApprox : {false, true}) {
    std::vector<float> dx(x.size());
    gelu_grad(g.data(), x.data(), dx.data(), (int64_t)x.size(), tanhApprox);
    auto loss = [&] {
      std::vector<float> y(x.size());
      gelu(x.data(), y.data(), (int64_t)x.size(), tanhApprox);
      return weightedSum(y, g);
    };
    expectGradientMatches(x, dx, loss, 1e-2, 1e-2, 1e-3,
                          tanhApprox ? "gelu_grad tanh" : "gelu_grad erf");
  }
}

TEST(Dropout, MaskIsPureFunctionOfSeedStepStreamIndex) {
  const int64_t n = 100000;
  const float p = 0.3f;
  std::vector<float> x(n, 1.0f), y1(n), y2(n), y3(n), y4(n), y5(n), y6(n);
  dropout(x.data(), y1.data(), n, p, 42, 5, 0);
  dropout(x.data(), y2.data(), n, p, 42, 5, 0);
  dropout(x.data(), y3.data(), n, p, 42, 6, 0);
  dropout(x.data(), y4.data(), n, p, 43, 5, 0);
  dropout(x.data(), y5.data(), n, p, 42, 5, 1); // the next micro-batch
  dropout(x.data(), y6.data(), n, p, 42, 4, 1); // not step 5's stream 0
  EXPECT_EQ(y1, y2);
  int64_t kept = 0, sameStep = 0, sameSeed = 0, sameStream = 0, shifted = 0;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(y1[i] == 0.0f || std::fabs(y1[i] - 1 / (1 - p)) < 1e-6);
    kept += y1[i] != 0;
    sameStep += (y1[i] != 0) == (y3[i] != 0);
    sameSeed += (y1[i] != 0) == (y4[i] != 0);
    sameStream += (y1[i] != 0) == (y5[i] != 0);
    shifted += (y1[i] != 0) == (y6[i] != 0);
    EXPECT_EQ(y1[i] != 0, dropout_keep(42, 5, 0, i, p));
    EXPECT_EQ(y5[i] != 0, dropout_keep(42, 5, 1, i, p));
  }
  EXPECT_NEAR((double)kept / n, 1 - p, 0.01);
  // Independent masks agree on about p^2 + (1-p)^2 of the elements.
  double agree = p * p + (1 - p) * (1 - p);
  EXPECT_NEAR((double)sameStep / n, agree, 0.01);
  EXPECT_NEAR((double)sameSeed / n, agree, 0.01);
  EXPECT_NEAR((double)sameStream / n, agree, 0.01);
  EXPECT_NEAR((double)shifted / n, agree, 0.01);
}

TEST(Dropout, EdgeProbabilities) {
  std::vector<float> x = randomVector(1000, 4), y(1000);
  dropout(x.data(), y.data(), 1000, 0.0f, 1, 1, 3);
  EXPECT_EQ(x, y);
  dropout(x.data(), y.data(), 1000, 1.0f, 1, 1, 3);
  for (float v : y)
    EXPECT_EQ(v, 0.0f);
}
