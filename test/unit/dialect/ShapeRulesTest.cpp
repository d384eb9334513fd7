//===- ShapeRulesTest.cpp - The tg dialect's shared shape rules ---*- C++ -*-===//
//
// broadcastShapes, normalizeAxis, formatShape and formatDouble are used by
// the verifiers, the importer and the passes alike, so their edge cases
// (scalars, size-0 dims, negative axes, rank 0) are pinned down here.
//
//===----------------------------------------------------------------------===//

#include "dialects/tg/IR/TgOps.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::tg;

namespace {

/// The broadcast shape, or {-1} when the shapes do not broadcast, so that a
/// failure and a shape compare in one EXPECT_EQ.
SmallVector<int64_t> broadcast(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  FailureOr<SmallVector<int64_t>> shape = broadcastShapes(a, b);
  return failed(shape) ? SmallVector<int64_t>{-1} : *shape;
}

using Shape = SmallVector<int64_t>;

//===----------------------------------------------------------------------===//
// broadcastShapes
//===----------------------------------------------------------------------===//

TEST(BroadcastShapes, EqualShapesAreKept) {
  EXPECT_EQ(broadcast({4, 8}, {4, 8}), Shape({4, 8}));
}

TEST(BroadcastShapes, ScalarsBroadcastToAnything) {
  EXPECT_EQ(broadcast({}, {}), Shape({}));
  EXPECT_EQ(broadcast({}, {4, 8}), Shape({4, 8}));
  EXPECT_EQ(broadcast({4, 8}, {}), Shape({4, 8}));
}

TEST(BroadcastShapes, DimsAlignFromTheRight) {
  EXPECT_EQ(broadcast({2, 4, 8}, {8}), Shape({2, 4, 8}));
  EXPECT_EQ(broadcast({8}, {2, 4, 8}), Shape({2, 4, 8}));
}

TEST(BroadcastShapes, SizeOneStretchesOnEitherSide) {
  EXPECT_EQ(broadcast({4, 1}, {1, 3}), Shape({4, 3}));
  EXPECT_EQ(broadcast({1, 3}, {4, 1}), Shape({4, 3}));
  EXPECT_EQ(broadcast({5, 1, 7}, {6, 1}), Shape({5, 6, 7}));
}

TEST(BroadcastShapes, SizeZeroBroadcastsOnlyAgainstOneOrZero) {
  EXPECT_EQ(broadcast({0, 3}, {1, 3}), Shape({0, 3}));
  EXPECT_EQ(broadcast({1}, {0}), Shape({0}));
  EXPECT_EQ(broadcast({0}, {0}), Shape({0}));
  EXPECT_EQ(broadcast({0}, {3}), Shape({-1}));
}

TEST(BroadcastShapes, MismatchedDimsFail) {
  EXPECT_EQ(broadcast({4, 3}, {5}), Shape({-1}));
  EXPECT_EQ(broadcast({2, 4}, {3, 4}), Shape({-1}));
  EXPECT_EQ(broadcast({3, 2, 4}, {3, 4}), Shape({-1}));
}

//===----------------------------------------------------------------------===//
// normalizeAxis
//===----------------------------------------------------------------------===//

TEST(NormalizeAxis, NonNegativeAxesInRangeAreKept) {
  EXPECT_EQ(*normalizeAxis(0, 3), 0);
  EXPECT_EQ(*normalizeAxis(2, 3), 2);
}

TEST(NormalizeAxis, NegativeAxesCountFromTheBack) {
  EXPECT_EQ(*normalizeAxis(-1, 3), 2);
  EXPECT_EQ(*normalizeAxis(-3, 3), 0);
  EXPECT_EQ(*normalizeAxis(-1, 1), 0);
}

TEST(NormalizeAxis, AxesOutOfRangeFail) {
  EXPECT_TRUE(failed(normalizeAxis(3, 3)));
  EXPECT_TRUE(failed(normalizeAxis(-4, 3)));
  EXPECT_TRUE(failed(normalizeAxis(std::numeric_limits<int64_t>::max(), 3)));
  EXPECT_TRUE(failed(normalizeAxis(std::numeric_limits<int64_t>::min(), 3)));
}

TEST(NormalizeAxis, ScalarsHaveNoAxis) {
  EXPECT_TRUE(failed(normalizeAxis(0, 0)));
  EXPECT_TRUE(failed(normalizeAxis(-1, 0)));
}

//===----------------------------------------------------------------------===//
// formatShape and formatDouble
//===----------------------------------------------------------------------===//

TEST(FormatShape, DimsJoinWithX) {
  EXPECT_EQ(formatShape({4, 8}), "4x8");
  EXPECT_EQ(formatShape({8, 64, 768}), "8x64x768");
  EXPECT_EQ(formatShape({7}), "7");
  EXPECT_EQ(formatShape({0, 3}), "0x3");
}

TEST(FormatShape, RankZeroIsScalar) { EXPECT_EQ(formatShape({}), "scalar"); }

TEST(FormatDouble, ShortestDecimalThatReadsBack) {
  EXPECT_EQ(formatDouble(0.02), "0.02");
  EXPECT_EQ(formatDouble(-1.0), "-1");
  EXPECT_EQ(formatDouble(0.0), "0");
  EXPECT_EQ(formatDouble(1.0e-5), "1e-05");
  EXPECT_EQ(formatDouble(0.1 + 0.2), "0.30000000000000004");
}

TEST(FormatDouble, NonFiniteValuesAreNamed) {
  EXPECT_EQ(formatDouble(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(formatDouble(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(formatDouble(std::nan("")), "nan");
}

} // namespace
