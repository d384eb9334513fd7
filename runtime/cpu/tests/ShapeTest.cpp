//===- ShapeTest.cpp - transpose, slice, slice_grad, concat --------*- C++ -*-===//

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/tests/TestUtil.h"

#include <gtest/gtest.h>
#include <numeric>

using namespace tgc::cpu;
using namespace tgc::cpu::test;

namespace {

/// Multi-index of `flat` in `shape`.
std::vector<int64_t> unflatten(int64_t flat, const std::vector<int64_t> &shape) {
  std::vector<int64_t> idx(shape.size());
  for (int i = (int)shape.size() - 1; i >= 0; --i) {
    idx[i] = flat % shape[i];
    flat /= shape[i];
  }
  return idx;
}

int64_t flatten(const std::vector<int64_t> &idx,
                const std::vector<int64_t> &shape) {
  int64_t flat = 0;
  for (size_t i = 0; i < shape.size(); ++i)
    flat = flat * shape[i] + idx[i];
  return flat;
}

template <typename T>
std::vector<T> naiveTranspose(const std::vector<T> &x,
                              const std::vector<int64_t> &shape,
                              const std::vector<int64_t> &perm) {
  std::vector<int64_t> outShape(shape.size());
  for (size_t i = 0; i < perm.size(); ++i)
    outShape[i] = shape[perm[i]];
  std::vector<T> y(x.size());
  for (int64_t o = 0; o < (int64_t)y.size(); ++o) {
    std::vector<int64_t> oi = unflatten(o, outShape), ii(shape.size());
    for (size_t i = 0; i < perm.size(); ++i)
      ii[perm[i]] = oi[i];
    y[o] = x[flatten(ii, shape)];
  }
  return y;
}

template <typename T>
std::vector<T> iota(int64_t n) {
  std::vector<T> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = (T)(i * 3 + 1);
  return v;
}

void checkTranspose(const std::vector<int64_t> &shape,
                    const std::vector<int64_t> &perm) {
  int rank = (int)shape.size();
  int64_t n = product(shape);
  {
    std::vector<float> x = randomVector(n, 1), y(n);
    transpose(x.data(), shape.data(), rank, perm.data(), y.data());
    EXPECT_EQ(y, naiveTranspose(x, shape, perm));
  }
  {
    std::vector<int32_t> x = iota<int32_t>(n), y(n);
    transpose(x.data(), shape.data(), rank, perm.data(), y.data());
    EXPECT_EQ(y, naiveTranspose(x, shape, perm));
  }
  {
    std::vector<int64_t> x = iota<int64_t>(n), y(n);
    transpose(x.data(), shape.data(), rank, perm.data(), y.data());
    EXPECT_EQ(y, naiveTranspose(x, shape, perm));
  }
  {
    std::vector<uint16_t> x = iota<uint16_t>(n), y(n);
    transpose_bytes(x.data(), 2, shape.data(), rank, perm.data(), y.data());
    EXPECT_EQ(y, naiveTranspose(x, shape, perm));
  }
  {
    std::vector<uint8_t> x = iota<uint8_t>(n), y(n);
    transpose_bytes(x.data(), 1, shape.data(), rank, perm.data(), y.data());
    EXPECT_EQ(y, naiveTranspose(x, shape, perm));
  }
}

} // namespace

TEST(Transpose, MatrixAndHeads) {
  checkTranspose({5, 7}, {1, 0});
  checkTranspose({70, 45}, {1, 0}); // several tiles, ragged
  checkTranspose({2, 6, 3, 4}, {0, 2, 1, 3}); // [B,T,H,D] -> [B,H,T,D]
  checkTranspose({2, 6, 3, 4}, {0, 2, 3, 1});
}

TEST(Transpose, GeneralPermutations) {
  checkTranspose({3, 4, 5}, {2, 0, 1});
  checkTranspose({3, 4, 5}, {1, 2, 0});
  checkTranspose({3, 4, 5}, {0, 1, 2});
  checkTranspose({2, 3, 4, 5, 3}, {4, 2, 0, 3, 1});
  checkTranspose({1, 4, 1, 5}, {3, 2, 1, 0}); // size-1 dims
  checkTranspose({}, {});
  checkTranspose({64, 128, 9}, {1, 0, 2}); // threaded row copies
  checkTranspose({8, 130, 70}, {0, 2, 1}); // threaded tiles
}

TEST(Slice, StridedBoxes) {
  std::vector<int64_t> shape{5, 6, 7}, start{1, 0, 2}, stride{2, 1, 3},
      outShape{2, 6, 2};
  std::vector<float> x = randomVector(product(shape), 2);
  std::vector<float> y(product(outShape));
  slice(x.data(), shape.data(), 3, start.data(), stride.data(), y.data(),
        outShape.data());
  for (int64_t o = 0; o < (int64_t)y.size(); ++o) {
    std::vector<int64_t> idx = unflatten(o, outShape);
    for (int i = 0; i < 3; ++i)
      idx[i] = start[i] + idx[i] * stride[i];
    EXPECT_EQ(y[o], x[flatten(idx, shape)]);
  }

  std::vector<int32_t> xi = iota<int32_t>(product(shape)), yi(y.size());
  slice_bytes(xi.data(), 4, shape.data(), 3, start.data(), stride.data(),
              yi.data(), outShape.data());
  for (int64_t o = 0; o < (int64_t)y.size(); ++o) {
    std::vector<int64_t> idx = unflatten(o, outShape);
    for (int i = 0; i < 3; ++i)
      idx[i] = start[i] + idx[i] * stride[i];
    EXPECT_EQ(yi[o], xi[flatten(idx, shape)]);
  }
}

TEST(Slice, GradientPlacesIntoZeros) {
  std::vector<int64_t> shape{4, 9}, start{1, 2}, stride{1, 3}, outShape{3, 3};
  std::vector<float> x = randomVector(product(shape), 3);
  std::vector<float> g = randomVector(product(outShape), 4);
  std::vector<float> dx(x.size(), 9.0f);
  slice_grad(g.data(), outShape.data(), 2, start.data(), stride.data(),
             dx.data(), shape.data());
  auto loss = [&] {
    std::vector<float> y(g.size());
    slice(x.data(), shape.data(), 2, start.data(), stride.data(), y.data(),
          outShape.data());
    return weightedSum(y, g);
  };
  expectGradientMatches(x, dx, loss, 1e-2, 1e-4, 1e-5, "slice_grad");
}

TEST(Slice, LargeContiguousRows) {
  std::vector<int64_t> shape{8, 64, 2304}, start{0, 0, 768}, stride{1, 1, 1},
      outShape{8, 64, 768};
  std::vector<float> x = randomVector(product(shape), 5);
  std::vector<float> y(product(outShape));
  slice(x.data(), shape.data(), 3, start.data(), stride.data(), y.data(),
        outShape.data());
  for (int64_t r = 0; r < 8 * 64; ++r)
    for (int64_t j = 0; j < 768; j += 97)
      ASSERT_EQ(y[r * 768 + j], x[r * 2304 + 768 + j]);
}

TEST(Concat, EveryAxis) {
  std::vector<int64_t> a{2, 3, 4}, b{2, 3, 4};
  for (int axis = 0; axis < 3; ++axis) {
    std::vector<int64_t> sa = a, sb = b;
    sb[axis] = axis + 1; // a different extent along the axis
    std::vector<float> xa = randomVector(product(sa), 6 + axis);
    std::vector<float> xb = randomVector(product(sb), 9 + axis);
    std::vector<int64_t> so = sa;
    so[axis] += sb[axis];
    std::vector<float> out(product(so));
    const float *inputs[] = {xa.data(), xb.data()};
    const int64_t *shapes[] = {sa.data(), sb.data()};
    concat(inputs, shapes, 2, 3, axis, out.data());
    for (int64_t o = 0; o < (int64_t)out.size(); ++o) {
      std::vector<int64_t> idx = unflatten(o, so);
      float want;
      if (idx[axis] < sa[axis]) {
        want = xa[flatten(idx, sa)];
      } else {
        idx[axis] -= sa[axis];
        want = xb[flatten(idx, sb)];
      }
      ASSERT_EQ(out[o], want) << "axis " << axis << " at " << o;
    }
  }
}
