//===- PlacementTest.cpp - Arena placement on made-up lives ---------------===//
//
// Whatever the lives, no two buffers live at once share a byte, offsets
// keep the alignment, the peak covers every buffer and is never below the
// most bytes live at once; on lives whose best arena is known, the
// placement finds it.
//
//===----------------------------------------------------------------------===//

#include "passes/memory/Placement.h"

#include <gtest/gtest.h>

#include <random>

using namespace mlir;
using namespace mlir::tg;

namespace {

constexpr int64_t kAlign = 64;

Buffer buffer(int64_t bytes, int64_t def, int64_t lastUse) {
  return Buffer{Value(), nullptr, bytes, def, lastUse};
}

/// The most bytes live at any position.
int64_t liveBound(ArrayRef<Buffer> buffers, size_t positions) {
  std::vector<int64_t> live(positions + 1, 0);
  for (const Buffer &b : buffers) {
    live[b.def] += b.bytes;
    live[b.lastUse + 1] -= b.bytes;
  }
  int64_t bytes = 0, most = 0;
  for (size_t i = 0; i < positions; ++i)
    most = std::max(most, bytes += live[i]);
  return most;
}

/// Checks what every placement must hold; returns its peak.
int64_t checkPlacement(ArrayRef<Buffer> buffers, size_t positions,
                       const ArenaPlacement &p) {
  EXPECT_EQ(p.offsets.size(), buffers.size());
  for (auto [i, b] : llvm::enumerate(buffers)) {
    EXPECT_GE(p.offsets[i], 0);
    EXPECT_EQ(p.offsets[i] % kAlign, 0) << "buffer " << i;
    EXPECT_LE(p.offsets[i] + b.bytes, p.peak) << "buffer " << i;
  }
  for (size_t i = 0; i < buffers.size(); ++i)
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      const Buffer &a = buffers[i], &b = buffers[j];
      bool liveTogether = a.def <= b.lastUse && b.def <= a.lastUse;
      bool shareBytes = p.offsets[i] < p.offsets[j] + b.bytes &&
                        p.offsets[j] < p.offsets[i] + a.bytes;
      EXPECT_FALSE(liveTogether && shareBytes)
          << "buffers " << i << " and " << j << " are live at once at ["
          << p.offsets[i] << ", " << p.offsets[i] + a.bytes << ") and ["
          << p.offsets[j] << ", " << p.offsets[j] + b.bytes << ")";
    }
  EXPECT_GE(p.peak, liveBound(buffers, positions));
  return p.peak;
}

/// `count` buffers over `positions` positions, listed by def, each living
/// up to `span` positions, of 1 to 64 aligned blocks.
std::vector<Buffer> randomLives(unsigned seed, size_t count, int64_t positions,
                                int64_t span) {
  std::mt19937 rng(seed);
  std::vector<int64_t> defs(count);
  for (int64_t &d : defs)
    d = std::uniform_int_distribution<int64_t>(0, positions - 1)(rng);
  std::sort(defs.begin(), defs.end());
  std::vector<Buffer> buffers;
  for (int64_t def : defs) {
    int64_t last =
        std::min(positions - 1,
                 def + std::uniform_int_distribution<int64_t>(0, span)(rng));
    int64_t blocks = std::uniform_int_distribution<int64_t>(1, 64)(rng);
    buffers.push_back(buffer(blocks * kAlign, def, last));
  }
  return buffers;
}

TEST(ArenaPlacement, RandomLivesNeverOverlap) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    // Short lives (activations freed soon) and long ones (kept for the
    // backward pass).
    std::vector<Buffer> buffers =
        randomLives(seed, 300, 200, seed % 2 ? 8 : 150);
    SCOPED_TRACE("seed " + std::to_string(seed));
    int64_t inOrder = checkPlacement(buffers, 200, placeInOrder(buffers, 200));
    int64_t bySize = checkPlacement(buffers, 200, placeBySize(buffers));
    int64_t best = checkPlacement(buffers, 200, placeBuffers(buffers, 200));
    EXPECT_EQ(best, std::min(inOrder, bySize));
  }
}

TEST(ArenaPlacement, ManyBuffersTakeTheLinearPlacement) {
  // Past a thousand buffers only the O(n log n) placement runs.
  std::vector<Buffer> buffers = randomLives(7, 3000, 2000, 40);
  ArenaPlacement p = placeBuffers(buffers, 2000);
  checkPlacement(buffers, 2000, p);
  EXPECT_EQ(p.peak, placeInOrder(buffers, 2000).peak);
}

TEST(ArenaPlacement, AChainReusesTheFreedBlock) {
  // a -> b -> c, each read only by the next: two blocks at a time.
  std::vector<Buffer> buffers = {buffer(1024, 0, 1), buffer(1024, 1, 2),
                                 buffer(1024, 2, 3)};
  ArenaPlacement p = placeBuffers(buffers, 4);
  EXPECT_EQ(checkPlacement(buffers, 4, p), 2048);
  EXPECT_EQ(p.offsets[0], p.offsets[2]);
}

TEST(ArenaPlacement, AResultNeverTakesItsOperandsBytes) {
  // b is computed at the position where a is last read: both live there.
  std::vector<Buffer> buffers = {buffer(512, 0, 1), buffer(512, 1, 1)};
  EXPECT_EQ(checkPlacement(buffers, 2, placeBuffers(buffers, 2)), 1024);
}

TEST(ArenaPlacement, BySizeFillsTheGapInOrderLeaves) {
  // In op order, the small early buffer takes the bottom and the large
  // late one cannot reuse the freed block below the long-lived one; by
  // size the arena meets the bound.
  std::vector<Buffer> buffers = {buffer(256, 0, 0), buffer(256, 0, 3),
                                 buffer(512, 1, 2)};
  EXPECT_GT(checkPlacement(buffers, 4, placeInOrder(buffers, 4)),
            liveBound(buffers, 4));
  ArenaPlacement p = placeBuffers(buffers, 4);
  EXPECT_EQ(checkPlacement(buffers, 4, p), liveBound(buffers, 4));
}

} // namespace
