//===- MatmulReduceTest.cpp - matmul, reduce, softmax, sum_squares -*- C++ -*-===//
//
// Against naive double-precision references on small random shapes,
// including broadcast batch dims and every transpose combination.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"

#include "runtime/cpu/BlasThreads.h"
#include "runtime/cpu/tests/TestUtil.h"

#include <array>
#include <cmath>
#include <gtest/gtest.h>
#include <limits>
#include <omp.h>

using namespace tgc::cpu;
using namespace tgc::cpu::test;

namespace {

struct MatmulCase {
  int64_t m, n, k;
  bool transA, transB;
  std::vector<int64_t> aBatch, bBatch, cBatch;
};

std::vector<double> naiveMatmul(const std::vector<float> &a,
                                const std::vector<float> &b,
                                const MatmulCase &c) {
  int rank = (int)c.cBatch.size();
  int64_t batch = product(c.cBatch);
  std::vector<double> out(batch * c.m * c.n);
  for (int64_t bi = 0; bi < batch; ++bi) {
    // Broadcast batch index into a and b.
    int64_t ai = 0, bj = 0, rest = bi, aMul = 1, bMul = 1;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t idx = rest % c.cBatch[d];
      rest /= c.cBatch[d];
      ai += (c.aBatch[d] == 1 ? 0 : idx) * aMul;
      bj += (c.bBatch[d] == 1 ? 0 : idx) * bMul;
      aMul *= c.aBatch[d];
      bMul *= c.bBatch[d];
    }
    const float *A = a.data() + ai * c.m * c.k;
    const float *B = b.data() + bj * c.k * c.n;
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < c.k; ++p) {
          double av = c.transA ? A[p * c.m + i] : A[i * c.k + p];
          double bv = c.transB ? B[j * c.k + p] : B[p * c.n + j];
          s += av * bv;
        }
        out[(bi * c.m + i) * c.n + j] = s;
      }
  }
  return out;
}

void checkMatmul(const MatmulCase &c, uint32_t seed) {
  std::vector<float> a = randomVector(product(c.aBatch) * c.m * c.k, seed);
  std::vector<float> b = randomVector(product(c.bBatch) * c.k * c.n, seed + 1);
  std::vector<float> out(product(c.cBatch) * c.m * c.n, -7.0f);
  matmul(a.data(), b.data(), out.data(), c.m, c.n, c.k, c.transA, c.transB,
         c.aBatch.data(), c.bBatch.data(), c.cBatch.data(),
         (int)c.cBatch.size());
  expectClose(out, naiveMatmul(a, b, c), 1e-5, 1e-5, "matmul");
}

} // namespace

TEST(Matmul, PlainAndTransposed) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      checkMatmul({5, 7, 3, ta, tb, {}, {}, {}}, 1);
}

TEST(Matmul, BroadcastBatches) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      checkMatmul({4, 6, 5, ta, tb, {2, 1, 3}, {1, 4, 3}, {2, 4, 3}}, 2);
      checkMatmul({3, 2, 4, ta, tb, {1, 1}, {2, 3}, {2, 3}}, 3);
      checkMatmul({3, 2, 4, ta, tb, {2, 3}, {2, 3}, {2, 3}}, 4);
    }
}

TEST(Matmul, SharedWeightFoldsBatches) {
  checkMatmul({5, 6, 7, false, true, {2, 3}, {1, 1}, {2, 3}}, 5);
  checkMatmul({5, 6, 7, false, false, {4}, {1}, {4}}, 6);
}

TEST(Matmul, LargeEnoughForThreadedBlas) {
  checkMatmul({96, 80, 130, false, false, {2}, {2}, {2}}, 7);
  checkMatmul({200, 150, 64, true, true, {}, {}, {}}, 8);
}

/// gemm() splits a large GEMM into blocks of rows (or of columns, when C is
/// wider than tall) over the OpenMP threads; every transpose and both
/// splits, with blocks that do not divide evenly, give what one thread gives.
TEST(Matmul, ThreadedGemmMatchesOneThread) {
  int saved = omp_get_max_threads();
  for (auto [m, n, k] : {std::array<int64_t, 3>{601, 67, 45},
                         std::array<int64_t, 3>{53, 790, 61}})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        std::vector<float> a = randomVector(m * k, 21),
                           b = randomVector(k * n, 22);
        std::vector<float> one(m * n, 1.0f), split(m * n, 1.0f);
        int64_t lda = ta ? m : k, ldb = tb ? k : n;
        CBLAS_TRANSPOSE opA = ta ? CblasTrans : CblasNoTrans;
        CBLAS_TRANSPOSE opB = tb ? CblasTrans : CblasNoTrans;
        omp_set_num_threads(1);
        gemm(opA, opB, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 2.0f,
             one.data(), n);
        omp_set_num_threads(3);
        gemm(opA, opB, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 2.0f,
             split.data(), n);
        omp_set_num_threads(saved);
        EXPECT_EQ(one, split)
            << m << "x" << n << "x" << k << " ta " << ta << " tb " << tb;
      }
}

TEST(Matmul, EmptyContractionGivesZeros) {
  MatmulCase c{3, 4, 0, false, false, {2}, {2}, {2}};
  std::vector<float> out(24, 5.0f);
  matmul(nullptr, nullptr, out.data(), 3, 4, 0, false, false, c.aBatch.data(),
         c.bBatch.data(), c.cBatch.data(), 1);
  for (float v : out)
    EXPECT_EQ(v, 0.0f);
}

TEST(Matmul, RespectsThreadCount) {
  int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  checkMatmul({4, 6, 5, false, true, {2, 1, 3}, {1, 4, 3}, {2, 4, 3}}, 9);
  checkMatmul({128, 128, 128, false, false, {}, {}, {}}, 10);
  omp_set_num_threads(saved);
  checkMatmul({128, 128, 128, false, false, {}, {}, {}}, 11);
}

//===----------------------------------------------------------------------===//
// reduce
//===----------------------------------------------------------------------===//

namespace {

std::vector<double> naiveReduce(ReduceKind kind, const std::vector<float> &x,
                                const std::vector<int64_t> &shape,
                                const std::vector<int64_t> &dims) {
  int rank = (int)shape.size();
  std::vector<bool> red(rank, false);
  for (int64_t d : dims)
    red[d] = true;
  int64_t outSize = 1, count = 1;
  for (int i = 0; i < rank; ++i)
    (red[i] ? count : outSize) *= shape[i];
  std::vector<double> out(outSize, kind == ReduceKind::Max
                                       ? -std::numeric_limits<double>::infinity()
                                       : 0.0);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t flat = 0; flat < (int64_t)x.size(); ++flat) {
    int64_t rest = flat;
    for (int i = rank - 1; i >= 0; --i) {
      idx[i] = rest % shape[i];
      rest /= shape[i];
    }
    int64_t o = 0;
    for (int i = 0; i < rank; ++i)
      if (!red[i])
        o = o * shape[i] + idx[i];
    if (kind == ReduceKind::Max)
      out[o] = std::max(out[o], (double)x[flat]);
    else
      out[o] += x[flat];
  }
  if (kind == ReduceKind::Mean)
    for (double &v : out)
      v /= count;
  return out;
}

void checkReduce(const std::vector<int64_t> &shape,
                 const std::vector<int64_t> &dims, uint32_t seed) {
  std::vector<float> x = randomVector(product(shape), seed);
  for (ReduceKind kind : {ReduceKind::Sum, ReduceKind::Mean, ReduceKind::Max}) {
    std::vector<double> want = naiveReduce(kind, x, shape, dims);
    std::vector<float> out(want.size(), -3.0f);
    reduce(kind, x.data(), shape.data(), (int)shape.size(), dims.data(),
           (int)dims.size(), out.data());
    expectClose(out, want, 1e-5, 1e-5,
                "reduce kind " + std::to_string((int)kind));
  }
}

} // namespace

TEST(Reduce, LastDims) {
  checkReduce({4, 8}, {1}, 1);
  checkReduce({3, 4, 5}, {1, 2}, 2);
  checkReduce({3, 4, 5}, {2}, 3);
}

TEST(Reduce, LeadingDims) {
  checkReduce({4, 8}, {0}, 4);
  checkReduce({6, 5, 70}, {0, 1}, 5); // a bias gradient, inner > one block
}

TEST(Reduce, InterleavedDimsTakeSeveralPasses) {
  checkReduce({3, 4, 5, 6}, {0, 2}, 6);
  checkReduce({3, 4, 5, 6}, {1, 3}, 7);
  checkReduce({2, 3, 4, 5, 3}, {0, 2, 4}, 8);
  checkReduce({3, 1, 4, 1, 5}, {1, 2}, 9); // size-1 dims, reduced or kept
}

TEST(Reduce, AllAndNoDims) {
  checkReduce({3, 4, 5}, {0, 1, 2}, 10);
  checkReduce({3, 4, 5}, {}, 11);
  checkReduce({}, {}, 12);
}

TEST(Reduce, LongRowIsSplitAcrossThreads) {
  checkReduce({100003}, {0}, 13);
  checkReduce({2, 50000}, {1}, 14);
}

TEST(Reduce, EmptyReducedDim) {
  std::vector<int64_t> shape{3, 0}, dims{1};
  std::vector<float> out(3, 1.0f);
  reduce(ReduceKind::Sum, nullptr, shape.data(), 2, dims.data(), 1, out.data());
  EXPECT_EQ(out[0], 0.0f);
  reduce(ReduceKind::Max, nullptr, shape.data(), 2, dims.data(), 1, out.data());
  EXPECT_EQ(out[0], -std::numeric_limits<float>::infinity());
}

TEST(Reduce, MaxPropagatesNan) {
  std::vector<float> x{1, NAN, 3, 4, 5, 6};
  std::vector<int64_t> shape{2, 3}, dims{1};
  std::vector<float> out(2);
  reduce(ReduceKind::Max, x.data(), shape.data(), 2, dims.data(), 1, out.data());
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(out[1], 6.0f);
}

TEST(SumSquares, MatchesDouble) {
  for (int64_t n : {0, 1, 17, 100000}) {
    std::vector<float> x = randomVector(n, 15);
    double want = 0;
    for (float v : x)
      want += (double)v * v;
    EXPECT_NEAR(sum_squares(x.data(), n), want, 1e-9 * (1 + want));
  }
}

//===----------------------------------------------------------------------===//
// softmax / log_softmax
//===----------------------------------------------------------------------===//

namespace {

void checkSoftmax(int64_t outer, int64_t n, int64_t inner, float scale,
                  uint32_t seed) {
  std::vector<float> x = randomVector(outer * n * inner, seed, -scale, scale);
  std::vector<double> soft(x.size()), logSoft(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t r) { return (o * n + r) * inner + j; };
      double mx = -INFINITY, sum = 0;
      for (int64_t r = 0; r < n; ++r)
        mx = std::max(mx, (double)x[at(r)]);
      for (int64_t r = 0; r < n; ++r)
        sum += std::exp(x[at(r)] - mx);
      for (int64_t r = 0; r < n; ++r) {
        soft[at(r)] = std::exp(x[at(r)] - mx) / sum;
        logSoft[at(r)] = x[at(r)] - mx - std::log(sum);
      }
    }
  std::vector<float> y(x.size());
  softmax(x.data(), y.data(), outer, n, inner);
  expectClose(y, soft, 1e-5, 1e-7, "softmax");
  log_softmax(x.data(), y.data(), outer, n, inner);
  expectClose(y, logSoft, 1e-5, 1e-5, "log_softmax");
}

} // namespace

TEST(Softmax, Rows) {
  checkSoftmax(7, 13, 1, 3.0f, 1);
  checkSoftmax(300, 100, 1, 10.0f, 2); // threaded
}

TEST(Softmax, StridedAxis) {
  checkSoftmax(3, 5, 7, 3.0f, 3);
  checkSoftmax(2, 9, 130, 3.0f, 4); // more than one column block
}

TEST(Softmax, LargeLogitsStayFinite) {
  checkSoftmax(4, 10, 1, 80.0f, 5);
  std::vector<float> x{1000.0f, 0.0f, -1000.0f}, y(3);
  softmax(x.data(), y.data(), 1, 3, 1);
  EXPECT_FLOAT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[2], 0.0f);
}

TEST(Softmax, MinusInfinityIsMasked) {
  std::vector<float> x{-INFINITY, 0.0f, -INFINITY, 0.0f}, y(4);
  softmax(x.data(), y.data(), 1, 4, 1);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_FLOAT_EQ(y[1], 0.5f);
  log_softmax(x.data(), y.data(), 1, 4, 1);
  EXPECT_EQ(y[0], -INFINITY);
  EXPECT_NEAR(y[1], -std::log(2.0f), 1e-6);
}
