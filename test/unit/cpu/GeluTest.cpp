//===- GeluTest.cpp - fastExp and GELU against double precision ---*- C++ -*-===//
//
// The inline formulas of runtime/cpu/FastExp.h and Kernels.h (gelu_scalar,
// gelu_grad_scalar) that the runtime's loops and generated fused loops both
// compile: their accuracy against double-precision exp, erfc and tanh over
// the whole float range that matters (large negative x included, where GELU
// is tiny and only a relative error means anything), their ends (NaN,
// infinities), and that a vectorized loop, a scalar loop and the runtime's
// gelu()/gelu_grad() give the very same bits.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <gtest/gtest.h>
#include <vector>

using namespace tgc::cpu;

namespace {

/// The fastExp of commit 807c5a8, with selects: the masks of FastExp.h must
/// give the same bits.
float fastExpWithSelects(float x) {
  float xc = x > -87.33654f ? x : -87.33654f;
  xc = xc < 88.0f ? xc : 88.0f;
  float fx = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = xc - fx * 0.693359375f;
  r = r + fx * 2.12194440e-4f;
  float r2 = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r2 + r + 1.0f;
  int32_t bits = ((int32_t)fx + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  float result = p * scale;
  result = x < -87.33654f ? 0.0f : result;
  result = x > 88.72283f ? INFINITY : result;
  return x != x ? x : result;
}

uint32_t bitsOf(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof(b));
  return b;
}

/// x from lo to hi in steps of `step`, plus the special values.
std::vector<float> sweep(float lo, float hi, float step) {
  std::vector<float> xs;
  for (double x = lo; x <= hi; x += step)
    xs.push_back((float)x);
  for (float x : {0.0f, -0.0f, FLT_MIN, -FLT_MIN, 1e-30f, -1e-30f, 1e-7f,
                  -1e-7f})
    xs.push_back(x);
  return xs;
}

double geluExact(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
double geluTanh(double x) {
  // 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)), without cancellation.
  double u = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
  return x / (1 + std::exp(-2 * u));
}
/// gelu'(x) and the sum of the magnitudes of its two terms (the scale of
/// its rounding: gelu' crosses zero near x = -0.75, where no float formula
/// has a small relative error).
void geluExactGrad(double x, double &grad, double &scale) {
  double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
  double pdf = std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
  grad = cdf + x * pdf;
  scale = cdf + std::fabs(x * pdf);
}
void geluTanhGrad(double x, double &grad, double &scale) {
  double u = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
  double du = std::sqrt(2 / M_PI) * (1 + 3 * 0.044715 * x * x);
  double s = 1 / (1 + std::exp(-2 * u));
  double e = std::exp(-2 * u);
  grad = s + x * s * (e * s) * 2 * du;
  scale = s + std::fabs(x * s * (e * s) * 2 * du);
  if (std::isinf(e))
    grad = scale = 0;
}

/// The worst relative error of got against want where |want| is above
/// `floor`, and checks the absolute error below that (where exp(-2u) or
/// exp(-x^2/2) under- or overflows, or a factor such as sigmoid(2u) is a
/// denormal).
double worstRelative(const std::vector<float> &xs, const std::vector<float> &got,
                     const std::vector<double> &want,
                     const std::vector<double> &scale, double floor,
                     float *worstX) {
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    double err = std::fabs((double)got[i] - want[i]);
    if (scale[i] < floor) {
      EXPECT_LE(err, floor) << "x = " << xs[i];
      continue;
    }
    double rel = err / scale[i];
    if (rel > worst) {
      worst = rel;
      *worstX = xs[i];
    }
  }
  return worst;
}

// One loop per formula, vectorized where the compiler can (it must, see
// ExpectVectorizedLoopsSeeFastExpH in the file comment of FastExp.h) and one
// kept scalar: the same bits either way.
void geluLoop(const float *x, float *y, int64_t n, bool tanhApprox) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = gelu_scalar(x[i], tanhApprox);
}
void geluGradLoop(const float *g, const float *x, float *y, int64_t n,
                  bool tanhApprox) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = gelu_grad_scalar(g[i], x[i], tanhApprox);
}
__attribute__((optimize("no-tree-vectorize"))) void
geluGradScalarLoop(const float *g, const float *x, float *y, int64_t n,
                   bool tanhApprox) {
  for (int64_t i = 0; i < n; ++i) {
    y[i] = gelu_grad_scalar(g[i], x[i], tanhApprox);
    asm volatile("" ::: "memory"); // one element at a time
  }
}
__attribute__((optimize("no-tree-vectorize"))) void
geluScalarLoop(const float *x, float *y, int64_t n, bool tanhApprox) {
  for (int64_t i = 0; i < n; ++i) {
    y[i] = gelu_scalar(x[i], tanhApprox);
    asm volatile("" ::: "memory");
  }
}

} // namespace

TEST(FastExp, SameBitsAsTheFormWithSelects) {
  // Every 251st float (all exponents, signs, NaNs and infinities).
  int64_t checked = 0;
  for (uint64_t b = 0; b < (1ull << 32); b += 251) {
    float x;
    uint32_t u = (uint32_t)b;
    std::memcpy(&x, &u, sizeof(x));
    ASSERT_EQ(bitsOf(fastExp(x)), bitsOf(fastExpWithSelects(x))) << "x = " << x;
    ++checked;
  }
  for (float x : {-87.33654f, 88.0f, 88.72283f, -INFINITY, INFINITY, NAN})
    EXPECT_EQ(bitsOf(fastExp(x)), bitsOf(fastExpWithSelects(x))) << x;
  EXPECT_GT(checked, 17000000);
}

TEST(FastExp, SplitArgumentKeepsRelativeAccuracy) {
  // exp(-x^2 / 2) for large x: x^2 / 2 rounded to float alone would be off
  // by up to 4e-6 of the result.
  double worst = 0;
  for (double x = 0; x < 13.2; x += 1.0 / 4096) {
    float xf = (float)x;
    double half = -0.5 * (double)xf * (double)xf;
    float hi = (float)half, lo = (float)(half - hi);
    double want = std::exp(half);
    if (want < 1e-36)
      continue;
    worst = std::max(worst, std::fabs(fastExpSplit(hi, lo) - want) / want);
  }
  EXPECT_LT(worst, 4e-7);
  EXPECT_EQ(fastExpSplit(-INFINITY, NAN), 0.0f);
  EXPECT_EQ(fastExpSplit(INFINITY, -INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(fastExpSplit(NAN, 0.0f)));
}

TEST(GeluFormula, AccurateAgainstDoublePrecision) {
  // Large negative x is where GELU is tiny (1e-36 at x = -12.8 exactly,
  // x = -10 with tanh) and a scalar float formula loses it.
  std::vector<float> xs = sweep(-14.0f, 14.0f, 1.0f / 1024);
  for (float x : {30.0f, 100.0f, 1e4f, 1e20f})
    xs.push_back(x);
  const int64_t n = (int64_t)xs.size();
  for (bool tanhApprox : {false, true}) {
    std::vector<float> y(n), dx(n), ones(n, 1.0f);
    gelu(xs.data(), y.data(), n, tanhApprox);
    gelu_grad(ones.data(), xs.data(), dx.data(), n, tanhApprox);
    std::vector<double> want(n), wantGrad(n), scale(n), gradScale(n);
    for (int64_t i = 0; i < n; ++i) {
      want[i] = tanhApprox ? geluTanh(xs[i]) : geluExact(xs[i]);
      scale[i] = std::fabs(want[i]);
      if (tanhApprox)
        geluTanhGrad(xs[i], wantGrad[i], gradScale[i]);
      else
        geluExactGrad(xs[i], wantGrad[i], gradScale[i]);
    }
    const char *form = tanhApprox ? "tanh" : "erf";
    float worstX = 0;
    double worst = worstRelative(xs, y, want, scale, 1e-36, &worstX);
    EXPECT_LT(worst, 1e-6) << form << " gelu, worst at x = " << worstX;
    std::printf("%s gelu: worst relative error %.2e at x = %g\n", form, worst,
                worstX);
    // The tanh form's s(2u) is a denormal from x = -10 on, where x u' is
    // still 200: its gradient is relative to 1e-34.
    worst = worstRelative(xs, dx, wantGrad, gradScale, 1e-34, &worstX);
    EXPECT_LT(worst, 1e-6) << form << " gelu_grad, worst at x = " << worstX;
    std::printf("%s gelu_grad: worst relative error %.2e at x = %g\n", form,
                worst, worstX);
  }
}

TEST(GeluFormula, EndsOfTheRange) {
  for (bool tanhApprox : {false, true}) {
    EXPECT_EQ(gelu_scalar(0.0f, tanhApprox), 0.0f);
    EXPECT_EQ(gelu_scalar(INFINITY, tanhApprox), INFINITY);
    EXPECT_TRUE(std::isnan(gelu_scalar(NAN, tanhApprox)));
    // -inf * Phi(-inf) = -inf * 0, as PyTorch computes it.
    EXPECT_TRUE(std::isnan(gelu_scalar(-INFINITY, tanhApprox)));
    EXPECT_TRUE(std::isnan(gelu_grad_scalar(1.0f, NAN, tanhApprox)));
    EXPECT_EQ(gelu_grad_scalar(2.0f, 0.0f, tanhApprox), 1.0f);
    EXPECT_EQ(gelu_grad_scalar(1.0f, 50.0f, tanhApprox), 1.0f);
    EXPECT_LE(std::fabs(gelu_scalar(-50.0f, tanhApprox)), 1e-38f);
    EXPECT_LE(std::fabs(gelu_grad_scalar(1.0f, -50.0f, tanhApprox)), 1e-35f);
  }
}

TEST(GeluFormula, LoopsAndRuntimeGiveTheSameBits) {
  // What makes a fused GEMM epilogue (an inline gelu_grad_scalar in
  // generated code) and the unfused gelu_grad() agree bit for bit: the
  // formula has no data-dependent branches, so vector lanes and the scalar
  // path run the same operations.
  std::vector<float> xs = sweep(-16.0f, 16.0f, 1.0f / 4096);
  xs.push_back(NAN);
  xs.push_back(INFINITY);
  xs.push_back(-INFINITY);
  const int64_t n = (int64_t)xs.size();
  std::vector<float> g(n);
  for (int64_t i = 0; i < n; ++i)
    g[i] = 0.25f + (float)(i % 13) * 0.125f;
  for (bool tanhApprox : {false, true}) {
    std::vector<float> a(n), b(n), c(n);
    gelu(xs.data(), a.data(), n, tanhApprox);
    geluLoop(xs.data(), b.data(), n, tanhApprox);
    geluScalarLoop(xs.data(), c.data(), n, tanhApprox);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(bitsOf(a[i]), bitsOf(b[i])) << "gelu x = " << xs[i];
      ASSERT_EQ(bitsOf(a[i]), bitsOf(c[i])) << "gelu x = " << xs[i];
    }
    gelu_grad(g.data(), xs.data(), a.data(), n, tanhApprox);
    geluGradLoop(g.data(), xs.data(), b.data(), n, tanhApprox);
    geluGradScalarLoop(g.data(), xs.data(), c.data(), n, tanhApprox);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(bitsOf(a[i]), bitsOf(b[i])) << "gelu_grad x = " << xs[i];
      ASSERT_EQ(bitsOf(a[i]), bitsOf(c[i])) << "gelu_grad x = " << xs[i];
    }
  }
}
