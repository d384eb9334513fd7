//===- ConvPoolTest.cpp - conv2d and pooling, fwd and bwd ----------*- C++ -*-===//
//
// conv2d against a direct convolution over stride, padding, dilation and
// groups (and the 1x1 fast path); pools against naive windows with padding;
// all gradients against finite differences.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/tests/TestUtil.h"

#include <cmath>
#include <gtest/gtest.h>
#include <limits>
#include <limits>
#include <omp.h>

using namespace tgc::cpu;
using namespace tgc::cpu::test;

namespace {

Conv2dDims convDims(int64_t n, int64_t c, int64_t h, int64_t w, int64_t o,
                    int64_t kh, int64_t kw, int64_t s, int64_t p, int64_t dil,
                    int64_t groups) {
  int64_t oh = (h + 2 * p - dil * (kh - 1) - 1) / s + 1;
  int64_t ow = (w + 2 * p - dil * (kw - 1) - 1) / s + 1;
  return {n, c, h, w, o, kh, kw, oh, ow, s, s, p, p, dil, dil, groups};
}

std::vector<double> naiveConv(const std::vector<float> &x,
                              const std::vector<float> &w, const float *bias,
                              const Conv2dDims &d) {
  int64_t cg = d.c / d.groups, og = d.o / d.groups;
  std::vector<double> y(d.n * d.o * d.oh * d.ow);
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t o = 0; o < d.o; ++o)
      for (int64_t oy = 0; oy < d.oh; ++oy)
        for (int64_t ox = 0; ox < d.ow; ++ox) {
          double s = bias ? bias[o] : 0.0;
          int64_t gi = o / og;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t ki = 0; ki < d.kh; ++ki)
              for (int64_t kj = 0; kj < d.kw; ++kj) {
                int64_t iy = oy * d.strideH - d.padH + ki * d.dilH;
                int64_t ix = ox * d.strideW - d.padW + kj * d.dilW;
                if (iy < 0 || iy >= d.h || ix < 0 || ix >= d.w)
                  continue;
                s += (double)x[((n * d.c + gi * cg + c) * d.h + iy) * d.w + ix] *
                     w[((o * cg + c) * d.kh + ki) * d.kw + kj];
              }
          y[((n * d.o + o) * d.oh + oy) * d.ow + ox] = s;
        }
  return y;
}

void checkConv(const Conv2dDims &d, bool withBias, bool gradients,
               uint32_t seed) {
  std::vector<float> x = randomVector(d.n * d.c * d.h * d.w, seed);
  std::vector<float> w =
      randomVector(d.o * (d.c / d.groups) * d.kh * d.kw, seed + 1);
  std::vector<float> bias = randomVector(d.o, seed + 2);
  const float *b = withBias ? bias.data() : nullptr;
  std::vector<float> y(d.n * d.o * d.oh * d.ow, 9.0f);
  conv2d(x.data(), w.data(), b, y.data(), d);
  expectClose(y, naiveConv(x, w, b, d), 1e-5, 1e-5, "conv2d");
  if (!gradients)
    return;
  std::vector<float> g = randomVector(y.size(), seed + 3);
  std::vector<float> dx(x.size(), 9.0f), dw(w.size(), 9.0f);
  conv2d_grad_input(g.data(), w.data(), dx.data(), d);
  conv2d_grad_weight(g.data(), x.data(), dw.data(), d);
  auto loss = [&] {
    conv2d(x.data(), w.data(), b, y.data(), d);
    return weightedSum(y, g);
  };
  // The forward is linear in x and in w: only rounding separates them.
  expectGradientMatches(x, dx, loss, 1e-1, 1e-3, 1e-4, "conv2d_grad_input");
  expectGradientMatches(w, dw, loss, 1e-1, 1e-3, 1e-4, "conv2d_grad_weight");
}

} // namespace

TEST(Conv2d, Basic) { checkConv(convDims(2, 3, 6, 7, 4, 3, 3, 1, 0, 1, 1), true, true, 1); }

TEST(Conv2d, StridePaddingDilation) {
  checkConv(convDims(2, 2, 7, 8, 3, 3, 2, 2, 1, 1, 1), true, true, 2);
  checkConv(convDims(1, 2, 9, 9, 2, 3, 3, 1, 2, 2, 1), false, true, 3);
  checkConv(convDims(3, 2, 8, 7, 2, 2, 3, 3, 1, 2, 1), true, true, 4);
}

TEST(Conv2d, Groups) {
  checkConv(convDims(2, 4, 6, 6, 6, 3, 3, 1, 1, 1, 2), true, true, 5);
  checkConv(convDims(1, 4, 5, 5, 4, 3, 3, 2, 1, 1, 4), false, true, 6); // depthwise
}

TEST(Conv2d, PointwiseUsesImageAsColumns) {
  checkConv(convDims(2, 5, 4, 6, 3, 1, 1, 1, 0, 1, 1), true, true, 7);
  checkConv(convDims(2, 4, 4, 6, 4, 1, 1, 1, 0, 1, 2), false, true, 8);
  checkConv(convDims(2, 4, 5, 5, 3, 1, 1, 2, 0, 1, 1), false, true, 9);
}

TEST(Conv2d, LargerBatchAndSingleThread) {
  checkConv(convDims(8, 8, 16, 16, 16, 3, 3, 1, 1, 1, 1), true, false, 10);
  int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  checkConv(convDims(3, 2, 6, 6, 2, 3, 3, 1, 1, 1, 1), true, true, 11);
  omp_set_num_threads(saved);
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

namespace {

Pool2dDims poolDims(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k,
                    int64_t s, int64_t p) {
  return {n, c, h, w, (h + 2 * p - k) / s + 1, (w + 2 * p - k) / s + 1,
          k, k, s, s, p, p};
}

std::vector<double> naivePool(const std::vector<float> &x, const Pool2dDims &d,
                              bool isMax) {
  std::vector<double> y(d.n * d.c * d.oh * d.ow);
  for (int64_t p = 0; p < d.n * d.c; ++p)
    for (int64_t oy = 0; oy < d.oh; ++oy)
      for (int64_t ox = 0; ox < d.ow; ++ox) {
        double acc = isMax ? -INFINITY : 0.0;
        int64_t count = 0;
        for (int64_t ki = 0; ki < d.kh; ++ki)
          for (int64_t kj = 0; kj < d.kw; ++kj) {
            int64_t iy = oy * d.strideH - d.padH + ki;
            int64_t ix = ox * d.strideW - d.padW + kj;
            if (iy < 0 || iy >= d.h || ix < 0 || ix >= d.w)
              continue;
            double v = x[(p * d.h + iy) * d.w + ix];
            acc = isMax ? std::max(acc, v) : acc + v;
            ++count;
          }
        y[(p * d.oh + oy) * d.ow + ox] = isMax ? acc : acc / count;
      }
  return y;
}

/// Naive pool gradients: max routes to the window's first maximum, average
/// spreads over the real elements.
std::vector<double> naivePoolGrad(const std::vector<float> &g,
                                  const std::vector<float> &x,
                                  const Pool2dDims &d, bool isMax) {
  std::vector<double> dx(x.size(), 0.0);
  for (int64_t p = 0; p < d.n * d.c; ++p)
    for (int64_t oy = 0; oy < d.oh; ++oy)
      for (int64_t ox = 0; ox < d.ow; ++ox) {
        std::vector<int64_t> window;
        for (int64_t ki = 0; ki < d.kh; ++ki)
          for (int64_t kj = 0; kj < d.kw; ++kj) {
            int64_t iy = oy * d.strideH - d.padH + ki;
            int64_t ix = ox * d.strideW - d.padW + kj;
            if (iy >= 0 && iy < d.h && ix >= 0 && ix < d.w)
              window.push_back((p * d.h + iy) * d.w + ix);
          }
        double gv = g[(p * d.oh + oy) * d.ow + ox];
        if (isMax) {
          int64_t best = window[0];
          for (int64_t i : window)
            if (x[i] > x[best])
              best = i;
          dx[best] += gv;
        } else {
          for (int64_t i : window)
            dx[i] += gv / window.size();
        }
      }
  return dx;
}

void checkPools(const Pool2dDims &d, uint32_t seed,
                bool finiteDifferences = true) {
  std::vector<float> x = distinctVector(d.n * d.c * d.h * d.w, seed);
  std::vector<float> y(d.n * d.c * d.oh * d.ow);
  max_pool2d(x.data(), y.data(), d);
  expectClose(y, naivePool(x, d, true), 0, 0, "max_pool2d");
  avg_pool2d(x.data(), y.data(), d);
  expectClose(y, naivePool(x, d, false), 1e-5, 1e-6, "avg_pool2d");

  std::vector<float> g = randomVector(y.size(), seed + 1);
  std::vector<float> dx(x.size(), 9.0f);
  max_pool2d_grad(g.data(), x.data(), dx.data(), d);
  expectClose(dx, naivePoolGrad(g, x, d, true), 1e-6, 1e-6, "max_pool2d_grad");
  avg_pool2d_grad(g.data(), dx.data(), d);
  expectClose(dx, naivePoolGrad(g, x, d, false), 1e-5, 1e-6,
              "avg_pool2d_grad");
  if (!finiteDifferences)
    return;
  max_pool2d_grad(g.data(), x.data(), dx.data(), d);
  // A step below half the gap between values keeps every argmax in place.
  expectGradientMatches(
      x, dx,
      [&] {
        max_pool2d(x.data(), y.data(), d);
        return weightedSum(y, g);
      },
      1e-2, 1e-3, 1e-4, "max_pool2d_grad");
  avg_pool2d_grad(g.data(), dx.data(), d);
  expectGradientMatches(
      x, dx,
      [&] {
        avg_pool2d(x.data(), y.data(), d);
        return weightedSum(y, g);
      },
      1e-2, 1e-3, 1e-4, "avg_pool2d_grad");
}

} // namespace

/// Ties go to the window's first maximum in row-major order; a NaN is the
/// maximum (the first NaN, as in torch), both in unpadded 2x2 windows and in
/// general ones.
TEST(Pool2d, TiesAndNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // 4x4 plane: window (0,0) ties at 5, window (0,1) holds a NaN after its
  // maximum, window (1,0) two NaNs, window (1,1) plain.
  std::vector<float> x = {1,   5,   2,   9, //
                          5,   3,   nan, 4, //
                          nan, 0,   1,   2, //
                          7,   nan, 3,   8};
  for (const Pool2dDims &d : {poolDims(1, 1, 4, 4, 2, 2, 0),
                              Pool2dDims{1, 1, 4, 4, 2, 2, 3, 3, 2, 2, 1, 1}}) {
    std::vector<float> y(d.oh * d.ow), g(d.oh * d.ow, 1.0f), dx(16);
    max_pool2d(x.data(), y.data(), d);
    max_pool2d_grad(g.data(), x.data(), dx.data(), d);
    std::vector<int64_t> hits;
    for (int64_t i = 0; i < 16; ++i)
      if (dx[i] != 0)
        hits.push_back(i);
    if (d.kh == 2) {
      EXPECT_EQ(y[0], 5.0f);
      EXPECT_TRUE(std::isnan(y[1]) && std::isnan(y[2]));
      EXPECT_EQ(y[3], 8.0f);
      // 1 (first 5), 6 (NaN), 8 (first NaN), 15 (8).
      EXPECT_EQ(hits, (std::vector<int64_t>{1, 6, 8, 15}));
    } else {
      // 3x3 windows over a padded plane, stride 2: 2x2 outputs; window
      // (0,0) covers rows 0-1 and columns 0-1, (0,1) rows 0-1 and columns
      // 1-3 (NaN at 6), (1,0) rows 1-3 and columns 0-1 (first NaN at 8),
      // (1,1) rows 1-3 and columns 1-3 (first NaN at 6).
      EXPECT_EQ(y[0], 5.0f);
      EXPECT_TRUE(std::isnan(y[1]) && std::isnan(y[2]) && std::isnan(y[3]));
      EXPECT_EQ(dx[1], 1.0f);
      EXPECT_EQ(dx[6], 2.0f);
      EXPECT_EQ(dx[8], 1.0f);
      EXPECT_EQ(hits, (std::vector<int64_t>{1, 6, 8}));
    }
  }
}

TEST(Pool2d, NonOverlapping) { checkPools(poolDims(2, 3, 6, 6, 2, 2, 0), 1); }

TEST(Pool2d, PaddingCountsOnlyRealElements) {
  checkPools(poolDims(2, 2, 7, 5, 3, 2, 1), 2);
  checkPools(poolDims(1, 2, 5, 5, 3, 1, 1), 3); // overlapping windows
}

TEST(Pool2d, LargeThreaded) {
  checkPools(poolDims(4, 16, 16, 16, 3, 2, 1), 4, /*finiteDifferences=*/false);
}

TEST(Pool2d, MaxGradientGoesToFirstMaximum) {
  std::vector<float> x{1, 1, 1, 1};
  Pool2dDims d = poolDims(1, 1, 2, 2, 2, 2, 0);
  std::vector<float> g{5}, dx(4);
  max_pool2d_grad(g.data(), x.data(), dx.data(), d);
  EXPECT_EQ(dx, (std::vector<float>{5, 0, 0, 0}));
}
