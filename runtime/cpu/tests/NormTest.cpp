//===- NormTest.cpp - layer_norm and rms_norm ----------------------*- C++ -*-===//
//
// Forward against a double reference; every gradient (x, weight, bias)
// against central differences of the forward kernel.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/tests/TestUtil.h"

#include <cmath>
#include <gtest/gtest.h>

using namespace tgc::cpu;
using namespace tgc::cpu::test;

namespace {

std::vector<double> naiveLayerNorm(const std::vector<float> &x,
                                   const float *w, const float *b,
                                   int64_t rows, int64_t d, double eps,
                                   bool rms) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x.data() + r * d;
    double mean = 0, var = 0;
    if (!rms) {
      for (int64_t j = 0; j < d; ++j)
        mean += xr[j];
      mean /= d;
    }
    for (int64_t j = 0; j < d; ++j)
      var += (xr[j] - mean) * (xr[j] - mean);
    var /= d;
    for (int64_t j = 0; j < d; ++j) {
      double v = (xr[j] - mean) / std::sqrt(var + eps);
      y[r * d + j] = v * (w ? w[j] : 1.0) + (b ? b[j] : 0.0);
    }
  }
  return y;
}

} // namespace

TEST(LayerNorm, ForwardMatchesReference) {
  for (auto [rows, d] : {std::pair<int64_t, int64_t>{5, 7}, {300, 96}}) {
    std::vector<float> x = randomVector(rows * d, 1, -2, 3);
    std::vector<float> w = randomVector(d, 2), b = randomVector(d, 3);
    std::vector<float> y(x.size());
    layer_norm(x.data(), w.data(), b.data(), y.data(), rows, d, 1e-5f);
    expectClose(y, naiveLayerNorm(x, w.data(), b.data(), rows, d, 1e-5, false),
                1e-5, 1e-5, "layer_norm");
    layer_norm(x.data(), nullptr, nullptr, y.data(), rows, d, 1e-5f);
    expectClose(y, naiveLayerNorm(x, nullptr, nullptr, rows, d, 1e-5, false),
                1e-5, 1e-5, "layer_norm without affine");
  }
}

TEST(LayerNorm, GradientsMatchFiniteDifferences) {
  const int64_t rows = 4, d = 6;
  const float eps = 1e-5f;
  std::vector<float> x = randomVector(rows * d, 4, -2, 2);
  std::vector<float> w = randomVector(d, 5, 0.5f, 1.5f),
                     b = randomVector(d, 6);
  std::vector<float> g = randomVector(rows * d, 7);
  std::vector<float> dx(x.size()), dw(d, 9.0f), db(d, 9.0f);
  layer_norm_grad(g.data(), x.data(), w.data(), dx.data(), dw.data(),
                  db.data(), rows, d, eps);
  auto loss = [&] {
    std::vector<float> y(x.size());
    layer_norm(x.data(), w.data(), b.data(), y.data(), rows, d, eps);
    return weightedSum(y, g);
  };
  expectGradientMatches(x, dx, loss, 1e-2, 1e-2, 2e-3, "layer_norm dx");
  expectGradientMatches(w, dw, loss, 1e-2, 1e-2, 2e-3, "layer_norm dw");
  expectGradientMatches(b, db, loss, 1e-2, 1e-2, 2e-3, "layer_norm db");

  // Without a weight: the unscaled norm; outputs may be skipped.
  std::vector<float> dx2(x.size());
  layer_norm_grad(g.data(), x.data(), nullptr, dx2.data(), nullptr, nullptr,
                  rows, d, eps);
  auto loss2 = [&] {
    std::vector<float> y(x.size());
    layer_norm(x.data(), nullptr, nullptr, y.data(), rows, d, eps);
    return weightedSum(y, g);
  };
  expectGradientMatches(x, dx2, loss2, 1e-2, 1e-2, 2e-3,
                        "layer_norm dx without weight");
}

TEST(LayerNorm, ThreadedWeightGradientIsColumnSum) {
  const int64_t rows = 517, d = 64;
  std::vector<float> x = randomVector(rows * d, 8), g = randomVector(rows * d, 9);
  std::vector<float> dw(d), db(d);
  layer_norm_grad(g.data(), x.data(), nullptr, nullptr, dw.data(), db.data(),
                  rows, d, 1e-5f);
  std::vector<double> xhat = naiveLayerNorm(x, nullptr, nullptr, rows, d,
                                            1e-5, false);
  std::vector<double> wantW(d, 0.0), wantB(d, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < d; ++j) {
      wantW[j] += g[r * d + j] * xhat[r * d + j];
      wantB[j] += g[r * d + j];
    }
  expectClose(dw, wantW, 1e-5, 1e-5, "dw");
  expectClose(db, wantB, 1e-5, 1e-5, "db");
}

TEST(RmsNorm, ForwardMatchesReference) {
  const int64_t rows = 9, d = 33;
  std::vector<float> x = randomVector(rows * d, 10, -2, 3), w = randomVector(d, 11);
  std::vector<float> y(x.size());
  rms_norm(x.data(), w.data(), y.data(), rows, d, 1e-6f);
  expectClose(y, naiveLayerNorm(x, w.data(), nullptr, rows, d, 1e-6, true),
              1e-5, 1e-6, "rms_norm");
  rms_norm(x.data(), nullptr, y.data(), rows, d, 1e-6f);
  expectClose(y, naiveLayerNorm(x, nullptr, nullptr, rows, d, 1e-6, true),
              1e-5, 1e-6, "rms_norm without weight");
}

TEST(RmsNorm, GradientsMatchFiniteDifferences) {
  const int64_t rows = 3, d = 8;
  std::vector<float> x = randomVector(rows * d, 12, -2, 2);
  std::vector<float> w = randomVector(d, 13, 0.5f, 1.5f);
  std::vector<float> g = randomVector(rows * d, 14);
  std::vector<float> dx(x.size()), dw(d, 9.0f);
  rms_norm_grad(g.data(), x.data(), w.data(), dx.data(), dw.data(), rows, d,
                1e-6f);
  auto loss = [&] {
    std::vector<float> y(x.size());
    rms_norm(x.data(), w.data(), y.data(), rows, d, 1e-6f);
    return weightedSum(y, g);
  };
  expectGradientMatches(x, dx, loss, 1e-2, 1e-2, 2e-3, "rms_norm dx");
  expectGradientMatches(w, dw, loss, 1e-2, 1e-2, 2e-3, "rms_norm dw");
}
