//===- ShapeTest.cpp - transpose, slice, slice_grad, concat --------*- C++ -*-===//

#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/tests/GpuTest.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace tgc::cuda;
using namespace tgc::cuda::test;

namespace {

int64_t product(const std::vector<int64_t> &shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1},
                         std::multiplies<int64_t>());
}

TEST(CudaShape, TransposeMatchesCpu) {
  TGC_REQUIRE_GPU();
  struct Case {
    std::vector<int64_t> shape, perm;
  };
  std::vector<Case> cases = {
      {{8, 64, 12, 64}, {0, 2, 1, 3}}, // head split: innermost stays
      {{37, 53}, {1, 0}},              // innermost moves: tiled
      {{3, 33, 65}, {2, 0, 1}},
      {{2, 3, 4, 5, 6}, {4, 2, 0, 3, 1}},
      {{1, 7, 1, 9}, {3, 2, 1, 0}},
      {{5}, {0}},
  };
  for (const Case &c : cases) {
    int64_t n = product(c.shape);
    int rank = (int)c.shape.size();
    std::vector<float> x = randomVector(n, 7);
    std::vector<float> want(n);
    tgc::cpu::transpose(x.data(), c.shape.data(), rank, c.perm.data(),
                        want.data());
    DeviceBuffer<float> dx(x), dy(n);
    transpose(dx.get(), c.shape.data(), rank, c.perm.data(), dy.get(), nullptr);
    EXPECT_EQ(dy.toHost(), want) << "rank " << rank;

    // 8-byte and 1-byte elements take the same paths.
    std::vector<int64_t> xi = randomIndices(n, 8, -1000, 1000), wanti(n);
    tgc::cpu::transpose(xi.data(), c.shape.data(), rank, c.perm.data(),
                        wanti.data());
    DeviceBuffer<int64_t> di(xi), yi(n);
    transpose_bytes(di.get(), 8, c.shape.data(), rank, c.perm.data(), yi.get(),
                    nullptr);
    EXPECT_EQ(yi.toHost(), wanti);
    std::vector<uint8_t> xb(n), wantb(n);
    for (int64_t i = 0; i < n; ++i)
      xb[i] = (uint8_t)(i * 7);
    tgc::cpu::transpose_bytes(xb.data(), 1, c.shape.data(), rank,
                              c.perm.data(), wantb.data());
    DeviceBuffer<uint8_t> db(xb), yb(n);
    transpose_bytes(db.get(), 1, c.shape.data(), rank, c.perm.data(), yb.get(),
                    nullptr);
    EXPECT_EQ(yb.toHost(), wantb);
  }
}

TEST(CudaShape, SliceAndGradMatchCpu) {
  TGC_REQUIRE_GPU();
  std::vector<int64_t> shape = {6, 10, 7}, start = {1, 2, 0},
                       stride = {2, 3, 1}, out = {3, 3, 7};
  int64_t n = product(shape), m = product(out);
  std::vector<float> x = randomVector(n, 9);
  std::vector<float> want(m);
  tgc::cpu::slice(x.data(), shape.data(), 3, start.data(), stride.data(),
                  want.data(), out.data());
  DeviceBuffer<float> dx(x), dy(m);
  slice(dx.get(), shape.data(), 3, start.data(), stride.data(), dy.get(),
        out.data(), nullptr);
  EXPECT_EQ(dy.toHost(), want);

  std::vector<float> g = randomVector(m, 10), wantGrad(n);
  tgc::cpu::slice_grad(g.data(), out.data(), 3, start.data(), stride.data(),
                       wantGrad.data(), shape.data());
  DeviceBuffer<float> dg(g), dgx(n);
  slice_grad(dg.get(), out.data(), 3, start.data(), stride.data(), dgx.get(),
             shape.data(), nullptr);
  EXPECT_EQ(dgx.toHost(), wantGrad);

  // bf16 through the 2-byte path.
  std::vector<float> xb = roundToBf16(x);
  DeviceBuffer<bf16> bx(toBf16(xb)), by(m);
  std::vector<float> wantb(m);
  tgc::cpu::slice(xb.data(), shape.data(), 3, start.data(), stride.data(),
                  wantb.data(), out.data());
  slice(bx.get(), shape.data(), 3, start.data(), stride.data(), by.get(),
        out.data(), nullptr);
  EXPECT_EQ(toFloat(by.toHost()), wantb);
}

TEST(CudaShape, ConcatMatchesCpu) {
  TGC_REQUIRE_GPU();
  std::vector<int64_t> s0 = {4, 3, 5}, s1 = {4, 1, 5}, s2 = {4, 6, 5};
  std::vector<float> a = randomVector(product(s0), 11),
                     b = randomVector(product(s1), 12),
                     c = randomVector(product(s2), 13);
  int64_t n = product(s0) + product(s1) + product(s2);
  std::vector<float> want(n);
  const float *inputs[] = {a.data(), b.data(), c.data()};
  const int64_t *shapes[] = {s0.data(), s1.data(), s2.data()};
  tgc::cpu::concat(inputs, shapes, 3, 3, 1, want.data());
  DeviceBuffer<float> da(a), db(b), dc(c), dout(n);
  const float *dinputs[] = {da.get(), db.get(), dc.get()};
  concat(dinputs, shapes, 3, 3, 1, dout.get(), nullptr);
  EXPECT_EQ(dout.toHost(), want);
}

} // namespace
