//===- MatmulTest.cpp - cuBLASLt GEMMs and their epilogues ---------*- C++ -*-===//
//
// Against tgc::cpu::matmul (OpenBLAS), with the epilogues built from the CPU
// kernels: bias added per column, tgc::cpu::gelu (tanh) and gelu_grad.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/tests/GpuTest.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

using namespace tgc::cuda;
using namespace tgc::cuda::test;

namespace {

struct GemmCase {
  int64_t m, n, k;
  bool transA, transB;
  std::vector<int64_t> aBatch, bBatch, cBatch;

  int64_t count(const std::vector<int64_t> &batch, int64_t rows,
                int64_t cols) const {
    return std::accumulate(batch.begin(), batch.end(), rows * cols,
                           std::multiplies<int64_t>());
  }
  int64_t aSize() const { return count(aBatch, m, k); }
  int64_t bSize() const { return count(bBatch, k, n); }
  int64_t cSize() const { return count(cBatch, m, n); }
  int rank() const { return (int)cBatch.size(); }
};

std::vector<float> cpuMatmul(const GemmCase &c, const std::vector<float> &a,
                             const std::vector<float> &b) {
  std::vector<float> out(c.cSize());
  tgc::cpu::matmul(a.data(), b.data(), out.data(), c.m, c.n, c.k, c.transA,
                   c.transB, c.aBatch.data(), c.bBatch.data(),
                   c.cBatch.data(), c.rank());
  return out;
}

std::vector<GemmCase> shapes() {
  return {
      {64, 48, 96, false, false, {}, {}, {}},
      {33, 17, 29, true, false, {}, {}, {}},
      {40, 24, 16, false, true, {}, {}, {}},
      {8, 72, 40, true, true, {}, {}, {}},
      // A linear layer on [4, 16, 32]: folds into one GEMM.
      {16, 24, 32, false, true, {4}, {1}, {4}},
      // Broadcast a, full b: strided batch with a stride of 0.
      {12, 20, 28, false, false, {1}, {3}, {3}},
      // Two batch dims that broadcast differently: a host loop around a
      // strided batch.
      {10, 14, 18, true, false, {2, 3}, {1, 3}, {2, 3}},
      // Attention-like scores: [B, H, T, D] x [B, H, S, D]^T.
      {32, 48, 16, false, true, {2, 4}, {2, 4}, {2, 4}},
  };
}

TEST(CudaMatmul, Fp32MatchesCpu) {
  TGC_REQUIRE_GPU();
  for (const GemmCase &c : shapes()) {
    std::vector<float> a = randomVector(c.aSize(), 1),
                       b = randomVector(c.bSize(), 2);
    std::vector<float> want = cpuMatmul(c, a, b);
    DeviceBuffer<float> da(a), db(b), dc(c.cSize());
    matmul(da.get(), db.get(), dc.get(), c.m, c.n, c.k, c.transA, c.transB,
           c.aBatch.data(), c.bBatch.data(), c.cBatch.data(), c.rank(), {},
           nullptr);
    expectClose(dc.toHost(), want, 1e-5, 1e-5 * std::sqrt((double)c.k),
                "fp32 " + std::to_string(c.m) + "x" + std::to_string(c.n) +
                    "x" + std::to_string(c.k));
  }
}

TEST(CudaMatmul, Tf32IsClose) {
  TGC_REQUIRE_GPU();
  GemmCase c{128, 64, 256, false, true, {}, {}, {}};
  std::vector<float> a = randomVector(c.aSize(), 3),
                     b = randomVector(c.bSize(), 4);
  std::vector<float> want = cpuMatmul(c, a, b);
  DeviceBuffer<float> da(a), db(b), dc(c.cSize());
  MatmulOptions options;
  options.allowTf32 = true;
  matmul(da.get(), db.get(), dc.get(), c.m, c.n, c.k, false, true, nullptr,
         nullptr, nullptr, 0, options, nullptr);
  expectClose(dc.toHost(), want, 1e-2, 2e-2 * maxAbs(want), "tf32");
}

TEST(CudaMatmul, Bf16MatchesCpu) {
  TGC_REQUIRE_GPU();
  for (const GemmCase &c : shapes()) {
    std::vector<float> a = roundToBf16(randomVector(c.aSize(), 5)),
                       b = roundToBf16(randomVector(c.bSize(), 6));
    std::vector<float> want = cpuMatmul(c, a, b);
    DeviceBuffer<bf16> da(toBf16(a)), db(toBf16(b)), dc(c.cSize());
    DeviceBuffer<float> df(c.cSize());
    matmul(da.get(), db.get(), dc.get(), c.m, c.n, c.k, c.transA, c.transB,
           c.aBatch.data(), c.bBatch.data(), c.cBatch.data(), c.rank(), {},
           nullptr);
    matmul(da.get(), db.get(), df.get(), c.m, c.n, c.k, c.transA, c.transB,
           c.aBatch.data(), c.bBatch.data(), c.cBatch.data(), c.rank(), {},
           nullptr);
    // bf16 output: one rounding (2^-8 relative); fp32 output: the sums'.
    expectClose(toFloat(dc.toHost()), want, 8e-3, 1e-3, "bf16 out");
    expectClose(df.toHost(), want, 1e-5, 1e-5 * std::sqrt((double)c.k),
                "bf16 in, fp32 out");
  }
}

/// The CPU's version of each epilogue, on the plain product `ab`.
void cpuEpilogue(Epilogue e, std::vector<float> &c, std::vector<float> &aux,
                 const std::vector<float> &bias, int64_t n) {
  if (e == Epilogue::Bias || e == Epilogue::BiasGelu)
    for (size_t i = 0; i < c.size(); ++i)
      c[i] += bias[i % n];
  if (e == Epilogue::Gelu || e == Epilogue::BiasGelu) {
    aux = c;
    tgc::cpu::gelu(aux.data(), c.data(), (int64_t)c.size(), true);
  }
  if (e == Epilogue::GeluGrad) {
    std::vector<float> g = c;
    tgc::cpu::gelu_grad(g.data(), aux.data(), c.data(), (int64_t)c.size(),
                        true);
  }
}

TEST(CudaMatmul, Epilogues) {
  TGC_REQUIRE_GPU();
  // N = 64 lets cuBLASLt fuse every epilogue; N = 20 makes the GELU ones
  // fall back to the separate kernel. Both batched and folded.
  for (GemmCase c : {GemmCase{48, 64, 32, false, true, {3}, {1}, {3}},
                     GemmCase{24, 20, 40, false, false, {2}, {2}, {2}}}) {
    for (Epilogue e : {Epilogue::Bias, Epilogue::Gelu, Epilogue::BiasGelu,
                       Epilogue::GeluGrad}) {
      std::vector<float> a = randomVector(c.aSize(), 7),
                         b = randomVector(c.bSize(), 8),
                         bias = randomVector(c.n, 9),
                         aux = randomVector(c.cSize(), 10, -3.0f, 3.0f);
      std::vector<float> want = cpuMatmul(c, a, b), wantAux = aux;
      cpuEpilogue(e, want, wantAux, bias, c.n);
      DeviceBuffer<float> da(a), db(b), dbias(bias), daux(aux),
          dc(c.cSize());
      MatmulOptions options;
      options.epilogue = e;
      options.bias = dbias.get();
      options.geluAux = daux.get();
      matmul(da.get(), db.get(), dc.get(), c.m, c.n, c.k, c.transA, c.transB,
             c.aBatch.data(), c.bBatch.data(), c.cBatch.data(), c.rank(),
             options, nullptr);
      std::string what = "epilogue " + std::to_string((int)e) + " n " +
                         std::to_string(c.n);
      // cuBLASLt's own GELU may differ from expf's in the last bits.
      double tol = e == Epilogue::Bias ? 1e-4 : 1e-3;
      expectClose(dc.toHost(), want, tol, tol, what);
      expectClose(daux.toHost(), wantAux, 1e-4, 1e-4, what + " aux");
    }
  }
}

TEST(CudaMatmul, AccumulateAndEmpty) {
  TGC_REQUIRE_GPU();
  GemmCase c{20, 36, 24, true, false, {}, {}, {}};
  std::vector<float> a = randomVector(c.aSize(), 11),
                     b = randomVector(c.bSize(), 12),
                     c0 = randomVector(c.cSize(), 13),
                     bias = randomVector(c.n, 14);
  std::vector<float> want = cpuMatmul(c, a, b);
  for (size_t i = 0; i < want.size(); ++i)
    want[i] += c0[i] + bias[i % c.n];
  DeviceBuffer<float> da(a), db(b), dc(c0), dbias(bias);
  MatmulOptions options;
  options.epilogue = Epilogue::Bias;
  options.bias = dbias.get();
  options.accumulate = true;
  matmul(da.get(), db.get(), dc.get(), c.m, c.n, c.k, true, false, nullptr,
         nullptr, nullptr, 0, options, nullptr);
  expectClose(dc.toHost(), want, 1e-5, 1e-4, "accumulate");

  // K = 0: the empty sum.
  DeviceBuffer<float> empty(std::vector<float>(c.cSize(), 5.0f));
  matmul(da.get(), db.get(), empty.get(), c.m, c.n, 0, false, false, nullptr,
         nullptr, nullptr, 0, {}, nullptr);
  EXPECT_EQ(empty.toHost(), std::vector<float>(c.cSize(), 0.0f));
}

} // namespace
