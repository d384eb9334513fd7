//===- Placement.cpp - Offsets for buffers with known lives -----*- C++ -*-===//
//
// Two placements, the smaller peak kept:
// - in op order: each op's results take the free block that fits them best
//   (the arena grows when none does), and a buffer's block is given back,
//   merged with its free neighbours, after its last reader; the free blocks
//   by size and by offset are ordered sets, O(log n) per buffer;
// - greedily, in four orders (largest first, as TFLite's greedy-by-size
//   arena; biggest area; longest-lived; last to die), each buffer in the
//   smallest gap that holds it among the buffers already placed whose lives
//   overlap its own, the tightest of the four: usually tighter than in op
//   order, O(n^2) (a scan of the placed buffers, kept in offset order, per
//   buffer), so only for steps of up to kMaxBuffersBySize buffers.
//
//===----------------------------------------------------------------------===//

#include "passes/memory/Placement.h"

#include <functional>
#include <map>
#include <set>
#include <tuple>

using namespace mlir;
using namespace mlir::tg;

namespace {

/// Free blocks below the arena's top, best fit, merged when given back.
class BestFitArena {
public:
  int64_t allocate(int64_t bytes) {
    auto fit = bySize.lower_bound({bytes, 0});
    if (fit == bySize.end()) {
      // Nothing fits: grow, reusing a free block that ends at the top.
      int64_t offset = top;
      if (auto last = byOffset.empty() ? byOffset.end()
                                       : std::prev(byOffset.end());
          last != byOffset.end() && last->first + last->second == top) {
        offset = last->first;
        take(last->first, last->second);
      }
      top = offset + bytes;
      peak = std::max(peak, top);
      return offset;
    }
    auto [size, offset] = *fit;
    take(offset, size);
    if (size > bytes)
      give(offset + bytes, size - bytes);
    return offset;
  }

  void release(int64_t offset, int64_t bytes) {
    // Merge with the free blocks on either side.
    auto next = byOffset.lower_bound(offset);
    if (next != byOffset.end() && next->first == offset + bytes) {
      bytes += next->second;
      take(next->first, next->second);
    }
    auto prev = byOffset.lower_bound(offset);
    if (prev != byOffset.begin()) {
      --prev;
      if (prev->first + prev->second == offset) {
        offset = prev->first;
        bytes += prev->second;
        take(prev->first, prev->second);
      }
    }
    give(offset, bytes);
  }

  int64_t peak = 0;

private:
  void give(int64_t offset, int64_t bytes) {
    byOffset[offset] = bytes;
    bySize.insert({bytes, offset});
  }
  void take(int64_t offset, int64_t bytes) {
    byOffset.erase(offset);
    bySize.erase({bytes, offset});
  }

  std::map<int64_t, int64_t> byOffset;
  std::set<std::pair<int64_t, int64_t>> bySize;
  int64_t top = 0;
};

} // namespace

ArenaPlacement mlir::tg::placeInOrder(ArrayRef<Buffer> buffers,
                                     size_t numPositions) {
  // Given back after the op at each position.
  SmallVector<SmallVector<unsigned>> releases(numPositions);
  for (auto [i, b] : llvm::enumerate(buffers))
    releases[b.lastUse].push_back(i);
  BestFitArena arena;
  ArenaPlacement placement;
  placement.offsets.assign(buffers.size(), -1);
  unsigned next = 0; // buffers are listed in the order they are defined
  for (size_t at = 0; at < numPositions; ++at) {
    for (; next < buffers.size() && buffers[next].def == (int64_t)at;
         ++next)
      placement.offsets[next] = arena.allocate(buffers[next].bytes);
    for (unsigned b : releases[at])
      arena.release(placement.offsets[b], buffers[b].bytes);
  }
  placement.peak = arena.peak;
  return placement;
}

// Its quadratic cost stays a small constant: under a millisecond at GPT-2
// 124M's 889 buffers in @train_step, where 4096 let it take 66 ms of a
// 48-layer model's 160 ms compile (issue 13). Past it, in op order comes
// within 1.004x of the bound on GPT-2 shapes (24 to 96 layers).
static constexpr size_t kMaxBuffersBySize = 1024;

/// Each buffer in `order` at the lowest offset of the smallest gap that
/// holds it among the placed buffers whose lives overlap its own.
static ArenaPlacement placeGreedily(ArrayRef<Buffer> buffers,
                                    ArrayRef<unsigned> order) {
  ArenaPlacement placement;
  placement.offsets.assign(buffers.size(), -1);
  // The buffers placed so far by [offset, end), so that the ones whose lives
  // overlap come out in offset order without sorting them for each buffer.
  struct Placed {
    int64_t start, end, def, lastUse;
  };
  SmallVector<Placed> placed;
  for (unsigned i : order) {
    const Buffer &b = buffers[i];
    // The smallest gap that holds it, else above everything.
    int64_t best = -1, bestGap = 0, cursor = 0;
    for (const Placed &o : placed) {
      if (o.def > b.lastUse || b.def > o.lastUse)
        continue;
      int64_t gap = o.start - cursor;
      if (gap >= b.bytes && (best < 0 || gap < bestGap)) {
        best = cursor;
        bestGap = gap;
      }
      cursor = std::max(cursor, o.end);
    }
    if (best < 0)
      best = cursor;
    placement.offsets[i] = best;
    placement.peak = std::max(placement.peak, best + b.bytes);
    Placed p{best, best + b.bytes, b.def, b.lastUse};
    placed.insert(llvm::upper_bound(placed, p,
                                    [](const Placed &x, const Placed &y) {
                                      return std::tie(x.start, x.end) <
                                             std::tie(y.start, y.end);
                                    }),
                  p);
  }
  return placement;
}

ArenaPlacement mlir::tg::placeBySize(ArrayRef<Buffer> buffers) {
  // Largest first, as TFLite's arena; since each greedy order misses some
  // packings, also the biggest area (bytes times life), the longest-lived
  // and the last to die first, and the tightest of them.
  auto life = [&](unsigned i) { return buffers[i].lastUse - buffers[i].def; };
  using Key = std::tuple<int64_t, int64_t, int64_t>;
  std::function<Key(unsigned)> keys[] = {
      [&](unsigned i) { return Key{buffers[i].bytes, life(i), 0}; },
      [&](unsigned i) {
        return Key{buffers[i].bytes * (life(i) + 1), buffers[i].bytes, 0};
      },
      [&](unsigned i) { return Key{life(i), buffers[i].bytes, 0}; },
      [&](unsigned i) {
        return Key{buffers[i].lastUse, buffers[i].bytes, -buffers[i].def};
      },
  };
  ArenaPlacement best;
  for (auto &key : keys) {
    SmallVector<unsigned> order(buffers.size());
    for (unsigned i = 0; i < order.size(); ++i)
      order[i] = i;
    llvm::stable_sort(order,
                      [&](unsigned a, unsigned b) { return key(a) > key(b); });
    ArenaPlacement p = placeGreedily(buffers, order);
    if (best.offsets.empty() || p.peak < best.peak)
      best = std::move(p);
  }
  return best;
}

ArenaPlacement mlir::tg::placeBuffers(ArrayRef<Buffer> buffers,
                                      size_t numPositions) {
  ArenaPlacement placement = placeInOrder(buffers, numPositions);
  if (buffers.size() <= kMaxBuffersBySize) {
    ArenaPlacement bySize = placeBySize(buffers);
    if (bySize.peak < placement.peak)
      placement = std::move(bySize);
  }
  return placement;
}
