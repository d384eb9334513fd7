//===- TestUtil.cpp - Shared helpers of the CPU kernel tests -------*- C++ -*-===//

#include "runtime/cpu/tests/TestUtil.h"

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <numeric>
#include <random>

namespace tgc::cpu::test {

std::vector<float> randomVector(int64_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

std::vector<float> distinctVector(int64_t n, uint32_t seed, float gap) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = (float)(i - n / 2) * gap;
  std::mt19937 gen(seed);
  std::shuffle(v.begin(), v.end(), gen);
  return v;
}

int64_t product(const std::vector<int64_t> &shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1},
                         std::multiplies<int64_t>());
}

void expectClose(const std::vector<float> &got, const std::vector<double> &want,
                 double rtol, double atol, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    bool bothNan = std::isnan(got[i]) && std::isnan(want[i]);
    bool sameInf = std::isinf(want[i]) && got[i] == want[i];
    if (bothNan || sameInf)
      continue;
    double tol = atol + rtol * std::fabs(want[i]);
    if (!(std::fabs(got[i] - want[i]) <= tol)) {
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want "
                    << want[i] << " (tolerance " << tol << ")";
      if (++failures >= 10)
        return;
    }
  }
}

void expectClose(const std::vector<float> &got, const std::vector<float> &want,
                 double rtol, double atol, const std::string &what) {
  expectClose(got, std::vector<double>(want.begin(), want.end()), rtol, atol,
              what);
}

void expectGradientMatches(std::vector<float> &x,
                           const std::vector<float> &analytic,
                           const std::function<double()> &loss, double h,
                           double rtol, double atol, const std::string &what) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  std::vector<double> numeric(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    float saved = x[i];
    float up = (float)(saved + h), down = (float)(saved - h);
    x[i] = up;
    double lossUp = loss();
    x[i] = down;
    double lossDown = loss();
    x[i] = saved;
    numeric[i] = (lossUp - lossDown) / ((double)up - (double)down);
  }
  expectClose(analytic, numeric, rtol, atol, what + " vs finite differences");
}

double weightedSum(const std::vector<float> &y,
                   const std::vector<float> &weights) {
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i)
    s += (double)y[i] * weights[i];
  return s;
}

} // namespace tgc::cpu::test
