//===- CopyBoxTest.cpp - Box copies of sharded checkpoints ------*- C++ -*-===//
//
// copyBox moves the intersection of two boxes of one tensor (a piece in a
// shard file, a process's piece or the whole) between their dense buffers.
// Random shapes, pieces and boxes (scalars, empty intersections and
// single-element runs included) against a reference that walks every
// element of the tensor.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/ShardedCheckpoint.h"

#include <gtest/gtest.h>
#include <random>
#include <vector>

namespace {

using Dims = std::vector<int64_t>;

/// The index of `at` (whole-tensor coordinates) in the dense box at
/// `offset` of `shape`, or -1 outside it.
int64_t indexIn(const Dims &at, const Dims &offset, const Dims &shape) {
  int64_t index = 0;
  for (size_t d = 0; d < at.size(); ++d) {
    if (at[d] < offset[d] || at[d] >= offset[d] + shape[d])
      return -1;
    index = index * shape[d] + (at[d] - offset[d]);
  }
  return index;
}

/// A random box of `whole`: offset and shape per dim.
void randomBox(std::mt19937 &rng, const Dims &whole, Dims &offset,
               Dims &shape) {
  offset.clear();
  shape.clear();
  for (int64_t size : whole) {
    int64_t lo = std::uniform_int_distribution<int64_t>(0, size - 1)(rng);
    int64_t n = std::uniform_int_distribution<int64_t>(1, size - lo)(rng);
    offset.push_back(lo);
    shape.push_back(n);
  }
}

int64_t volume(const Dims &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

TEST(CopyBox, MatchesElementWalk) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    int rank = std::uniform_int_distribution<int>(0, 4)(rng);
    Dims whole;
    for (int d = 0; d < rank; ++d)
      whole.push_back(std::uniform_int_distribution<int64_t>(1, 6)(rng));
    Dims srcOffset, srcShape, dstOffset, dstShape;
    randomBox(rng, whole, srcOffset, srcShape);
    randomBox(rng, whole, dstOffset, dstShape);
    std::vector<int32_t> src(volume(srcShape)), dst(volume(dstShape), -1);
    for (size_t i = 0; i < src.size(); ++i)
      src[i] = static_cast<int32_t>(i);
    std::vector<int32_t> want = dst;
    // Every element of the tensor: copied where both boxes hold it.
    Dims at(rank, 0);
    for (int64_t e = 0; e < volume(whole); ++e) {
      int64_t rest = e;
      for (int d = rank - 1; d >= 0; --d) {
        at[d] = rest % whole[d];
        rest /= whole[d];
      }
      int64_t s = indexIn(at, srcOffset, srcShape);
      int64_t t = indexIn(at, dstOffset, dstShape);
      if (s >= 0 && t >= 0)
        want[t] = src[s];
    }
    tgc::copyBox(src.data(), srcOffset, srcShape, dst.data(), dstOffset,
                 dstShape, sizeof(int32_t));
    ASSERT_EQ(dst, want) << "trial " << trial << ", rank " << rank;
  }
}

} // namespace
