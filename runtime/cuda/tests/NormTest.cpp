//===- NormTest.cpp - layer_norm and rms_norm, forward and backward -*- C++ -*-===//

#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/tests/GpuTest.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tgc::cuda;
using namespace tgc::cuda::test;

namespace {

struct NormCase {
  int64_t rows, d;
  bool weight, bias;
};

// Row counts that do not fill the last block; widths that are (768) and
// are not (37, odd) a multiple of the pack size.
std::vector<NormCase> cases() {
  return {{100, 768, true, true}, {9, 37, true, false}, {130, 64, false, false}};
}

TEST(CudaNorm, LayerNormFp32) {
  TGC_REQUIRE_GPU();
  const float eps = 1e-5f;
  for (const NormCase &c : cases()) {
    int64_t n = c.rows * c.d;
    std::vector<float> x = randomVector(n, 1, -2.0f, 3.0f),
                       g = randomVector(n, 2), w = randomVector(c.d, 3),
                       b = randomVector(c.d, 4);
    const float *wp = c.weight ? w.data() : nullptr;
    const float *bp = c.bias ? b.data() : nullptr;
    std::vector<float> y(n), dx(n), dw(c.d), db(c.d);
    tgc::cpu::layer_norm(x.data(), wp, bp, y.data(), c.rows, c.d, eps);
    tgc::cpu::layer_norm_grad(g.data(), x.data(), wp, dx.data(), dw.data(),
                              db.data(), c.rows, c.d, eps);

    DeviceBuffer<float> gx(x), gg(g), gw(w), gb(b), gy(n), gdx(n), gdw(c.d),
        gdb(c.d);
    Workspace ws(layer_norm_grad_workspace_bytes(c.rows, c.d));
    layer_norm(gx.get(), c.weight ? gw.get() : nullptr,
               c.bias ? gb.get() : nullptr, gy.get(), c.rows, c.d, eps,
               nullptr);
    layer_norm_grad(gg.get(), gx.get(), c.weight ? gw.get() : nullptr,
                    gdx.get(), gdw.get(), gdb.get(), c.rows, c.d, eps,
                    ws.get(), nullptr);
    std::string what = "d " + std::to_string(c.d);
    expectClose(gy.toHost(), y, 1e-5, 1e-5, "layer_norm " + what);
    expectClose(gdx.toHost(), dx, 1e-4, 1e-4, "layer_norm dx " + what);
    double atol = 1e-5 * std::sqrt((double)c.rows);
    expectClose(gdw.toHost(), dw, 1e-5, atol, "layer_norm dw " + what);
    expectClose(gdb.toHost(), db, 1e-5, atol, "layer_norm db " + what);
  }
}

TEST(CudaNorm, LayerNormBf16) {
  TGC_REQUIRE_GPU();
  const int64_t rows = 64, d = 768;
  const float eps = 1e-5f;
  int64_t n = rows * d;
  std::vector<float> x = roundToBf16(randomVector(n, 5, -2.0f, 3.0f)),
                     g = roundToBf16(randomVector(n, 6)),
                     w = roundToBf16(randomVector(d, 7)),
                     b = roundToBf16(randomVector(d, 8));
  std::vector<float> y(n), dx(n), dw(d), db(d);
  tgc::cpu::layer_norm(x.data(), w.data(), b.data(), y.data(), rows, d, eps);
  tgc::cpu::layer_norm_grad(g.data(), x.data(), w.data(), dx.data(), dw.data(),
                            db.data(), rows, d, eps);
  DeviceBuffer<bf16> gx(toBf16(x)), gg(toBf16(g)), gw(toBf16(w)),
      gb(toBf16(b)), gy(n), gdx(n), gdw(d), gdb(d);
  Workspace ws(layer_norm_grad_workspace_bytes(rows, d));
  layer_norm(gx.get(), gw.get(), gb.get(), gy.get(), rows, d, eps, nullptr);
  layer_norm_grad(gg.get(), gx.get(), gw.get(), gdx.get(), gdw.get(),
                  gdb.get(), rows, d, eps, ws.get(), nullptr);
  expectClose(toFloat(gy.toHost()), y, 1e-2, 1e-2, "layer_norm bf16");
  expectClose(toFloat(gdx.toHost()), dx, 1e-2, 1e-2 * maxAbs(dx), "dx bf16");
  expectClose(toFloat(gdw.toHost()), dw, 1e-2, 1e-2 * maxAbs(dw), "dw bf16");
  expectClose(toFloat(gdb.toHost()), db, 1e-2, 1e-2 * maxAbs(db), "db bf16");
}

TEST(CudaNorm, RmsNorm) {
  TGC_REQUIRE_GPU();
  const float eps = 1e-6f;
  for (const NormCase &c : cases()) {
    int64_t n = c.rows * c.d;
    std::vector<float> x = randomVector(n, 9), g = randomVector(n, 10),
                       w = randomVector(c.d, 11);
    const float *wp = c.weight ? w.data() : nullptr;
    std::vector<float> y(n), dx(n), dw(c.d);
    tgc::cpu::rms_norm(x.data(), wp, y.data(), c.rows, c.d, eps);
    tgc::cpu::rms_norm_grad(g.data(), x.data(), wp, dx.data(), dw.data(),
                            c.rows, c.d, eps);
    DeviceBuffer<float> gx(x), gg(g), gw(w), gy(n), gdx(n), gdw(c.d);
    Workspace ws(rms_norm_grad_workspace_bytes(c.rows, c.d));
    rms_norm(gx.get(), c.weight ? gw.get() : nullptr, gy.get(), c.rows, c.d,
             eps, nullptr);
    rms_norm_grad(gg.get(), gx.get(), c.weight ? gw.get() : nullptr,
                  gdx.get(), gdw.get(), c.rows, c.d, eps, ws.get(), nullptr);
    std::string what = "d " + std::to_string(c.d);
    expectClose(gy.toHost(), y, 1e-5, 1e-5, "rms_norm " + what);
    expectClose(gdx.toHost(), dx, 1e-4, 1e-4, "rms_norm dx " + what);
    expectClose(gdw.toHost(), dw, 1e-5, 1e-5 * std::sqrt((double)c.rows),
                "rms_norm dw " + what);
  }
  // bf16, and a dx-only call (no workspace needed).
  const int64_t rows = 33, d = 512;
  std::vector<float> x = roundToBf16(randomVector(rows * d, 12)),
                     g = roundToBf16(randomVector(rows * d, 13)),
                     w = roundToBf16(randomVector(d, 14));
  std::vector<float> y(rows * d), dx(rows * d);
  tgc::cpu::rms_norm(x.data(), w.data(), y.data(), rows, d, eps);
  tgc::cpu::rms_norm_grad(g.data(), x.data(), w.data(), dx.data(), nullptr,
                          rows, d, eps);
  DeviceBuffer<bf16> gx(toBf16(x)), gg(toBf16(g)), gw(toBf16(w)),
      gy(rows * d), gdx(rows * d);
  rms_norm(gx.get(), gw.get(), gy.get(), rows, d, eps, nullptr);
  rms_norm_grad(gg.get(), gx.get(), gw.get(), gdx.get(), nullptr, rows, d, eps,
                nullptr, nullptr);
  expectClose(toFloat(gy.toHost()), y, 1e-2, 1e-2, "rms_norm bf16");
  expectClose(toFloat(gdx.toHost()), dx, 1e-2, 1e-2 * maxAbs(dx),
              "rms_norm dx bf16");
}

TEST(CudaNorm, WeightGradIsDeterministic) {
  TGC_REQUIRE_GPU();
  const int64_t rows = 4096, d = 768;
  std::vector<float> x = randomVector(rows * d, 15),
                     g = randomVector(rows * d, 16);
  DeviceBuffer<float> gx(x), gg(g), gdw(d), gdb(d);
  Workspace ws(layer_norm_grad_workspace_bytes(rows, d));
  std::vector<float> first;
  for (int run = 0; run < 3; ++run) {
    layer_norm_grad(gg.get(), gx.get(), nullptr, nullptr, gdw.get(), gdb.get(),
                    rows, d, 1e-5f, ws.get(), nullptr);
    std::vector<float> dw = gdw.toHost();
    if (run == 0)
      first = dw;
    else
      EXPECT_EQ(dw, first) << "run " << run;
  }
}

} // namespace
