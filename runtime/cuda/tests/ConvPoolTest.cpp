//===- ConvPoolTest.cpp - conv2d and pooling, forward and backward -*- C++ -*-===//

#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/tests/GpuTest.h"

#include <gtest/gtest.h>

using namespace tgc::cuda;
using namespace tgc::cuda::test;

namespace {

tgc::cpu::Conv2dDims cpuDims(const Conv2dDims &d) {
  return {d.n,       d.c,       d.h,    d.w,    d.o,    d.kh,
          d.kw,      d.oh,      d.ow,   d.strideH, d.strideW, d.padH,
          d.padW,    d.dilH,    d.dilW, d.groups};
}

Conv2dDims convDims(int64_t n, int64_t c, int64_t h, int64_t w, int64_t o,
                    int64_t k, int64_t stride, int64_t pad, int64_t dil,
                    int64_t groups) {
  int64_t oh = (h + 2 * pad - dil * (k - 1) - 1) / stride + 1;
  int64_t ow = (w + 2 * pad - dil * (k - 1) - 1) / stride + 1;
  return {n, c, h, w, o, k, k, oh, ow, stride, stride, pad, pad, dil, dil,
          groups};
}

TEST(CudaConv, MatchesCpu) {
  TGC_REQUIRE_GPU();
  for (Conv2dDims d : {convDims(4, 1, 8, 8, 16, 3, 1, 1, 1, 1),
                       convDims(2, 6, 11, 9, 4, 3, 2, 1, 1, 2),
                       convDims(3, 4, 10, 10, 8, 3, 1, 2, 2, 1),
                       convDims(2, 8, 7, 7, 8, 1, 1, 0, 1, 1),
                       // Over 2048 output positions: a block per weight's
                       // gradient (fewer: a warp).
                       convDims(40, 2, 8, 8, 3, 3, 1, 1, 1, 1)}) {
    int64_t xs = d.n * d.c * d.h * d.w, ws = d.o * (d.c / d.groups) * d.kh * d.kw,
            ys = d.n * d.o * d.oh * d.ow;
    std::vector<float> x = randomVector(xs, 1), w = randomVector(ws, 2),
                       b = randomVector(d.o, 3), g = randomVector(ys, 4);
    std::vector<float> y(ys), dx(xs), dw(ws);
    tgc::cpu::Conv2dDims cd = cpuDims(d);
    tgc::cpu::conv2d(x.data(), w.data(), b.data(), y.data(), cd);
    tgc::cpu::conv2d_grad_input(g.data(), w.data(), dx.data(), cd);
    tgc::cpu::conv2d_grad_weight(g.data(), x.data(), dw.data(), cd);
    DeviceBuffer<float> gx(x), gw(w), gb(b), gg(g), gy(ys), gdx(xs), gdw(ws);
    conv2d(gx.get(), gw.get(), gb.get(), gy.get(), d, nullptr);
    conv2d_grad_input(gg.get(), gw.get(), gdx.get(), d, nullptr);
    conv2d_grad_weight(gg.get(), gx.get(), gdw.get(), d, nullptr);
    expectClose(gy.toHost(), y, 1e-5, 1e-5, "conv2d");
    expectClose(gdx.toHost(), dx, 1e-5, 1e-5, "conv2d_grad_input");
    expectClose(gdw.toHost(), dw, 1e-5, 1e-4, "conv2d_grad_weight");
  }
}

TEST(CudaPool, MatchesCpu) {
  TGC_REQUIRE_GPU();
  // 2x2 stride 2; 3x3 stride 2 pad 1 (overlapping, clipped windows).
  for (Pool2dDims d : {Pool2dDims{4, 3, 8, 8, 4, 4, 2, 2, 2, 2, 0, 0},
                       Pool2dDims{2, 2, 9, 7, 5, 4, 3, 3, 2, 2, 1, 1}}) {
    tgc::cpu::Pool2dDims cd{d.n,  d.c,  d.h,       d.w,       d.oh,   d.ow,
                            d.kh, d.kw, d.strideH, d.strideW, d.padH, d.padW};
    int64_t xs = d.n * d.c * d.h * d.w, ys = d.n * d.c * d.oh * d.ow;
    // Distinct values so the maxima are unique; then a repeated maximum to
    // check "first maximum".
    std::vector<float> x = randomVector(xs, 5);
    x[1] = x[0] = 5.0f;
    std::vector<float> g = randomVector(ys, 6);
    DeviceBuffer<float> gx(x), gg(g), gy(ys), gdx(xs);
    for (bool isMax : {true, false}) {
      std::vector<float> y(ys), dx(xs);
      if (isMax) {
        tgc::cpu::max_pool2d(x.data(), y.data(), cd);
        tgc::cpu::max_pool2d_grad(g.data(), x.data(), dx.data(), cd);
        max_pool2d(gx.get(), gy.get(), d, nullptr);
        max_pool2d_grad(gg.get(), gx.get(), gdx.get(), d, nullptr);
      } else {
        tgc::cpu::avg_pool2d(x.data(), y.data(), cd);
        tgc::cpu::avg_pool2d_grad(g.data(), dx.data(), cd);
        avg_pool2d(gx.get(), gy.get(), d, nullptr);
        avg_pool2d_grad(gg.get(), gdx.get(), d, nullptr);
      }
      // Same arithmetic in the same order: exact.
      EXPECT_EQ(gy.toHost(), y) << (isMax ? "max" : "avg");
      EXPECT_EQ(gdx.toHost(), dx) << (isMax ? "max grad" : "avg grad");
    }
  }
}

} // namespace
