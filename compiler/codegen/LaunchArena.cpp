//===- LaunchArena.cpp - Arena placement over a schedule of launches -*- C++ -*-===//
//
// A linear scan over positions with first-fit placement. The live blocks
// are kept in a treap ordered by offset whose nodes also know the largest
// free gap in their subtree, so the lowest gap that fits is found in
// O(log n): a walk over the live blocks would make the plan quadratic, as
// a deep model's forward activations all stay live until its backward.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/LaunchArena.h"

#include <algorithm>
#include <map>

using namespace mlir::tg;

namespace {

/// Non-overlapping [start, end) blocks by start, each with the free gap
/// between it and the block below (or offset 0).
class LiveBlocks {
public:
  /// The lowest offset with `bytes` free above it: the bottom of the lowest
  /// gap that is large enough, else the end of the highest block.
  int64_t firstFit(int64_t bytes) const {
    int t = root;
    if (t < 0 || nodes[t].maxGap < bytes)
      return top();
    while (true) {
      const Node &n = nodes[t];
      if (n.left >= 0 && nodes[n.left].maxGap >= bytes)
        t = n.left;
      else if (n.gap >= bytes)
        return n.start - n.gap;
      else
        t = n.right;
    }
  }

  void insert(int64_t start, int64_t end) {
    auto [below, above] = split(root, start);
    int node = newNode(start, end, start - endOf(last(below)));
    root = merge(merge(below, node), withGapBelow(above, end));
  }

  void erase(int64_t start) {
    auto [below, rest] = split(root, start);
    auto [block, above] = split(rest, start + 1);
    if (block >= 0)
      freeList.push_back(block);
    root = merge(below, withGapBelow(above, endOf(last(below))));
  }

private:
  struct Node {
    int64_t start, end, gap, maxGap;
    uint32_t priority;
    int left = -1, right = -1;
  };

  int64_t top() const { return endOf(last(root)); }
  int64_t endOf(int t) const { return t < 0 ? 0 : nodes[t].end; }
  int last(int t) const {
    while (t >= 0 && nodes[t].right >= 0)
      t = nodes[t].right;
    return t;
  }

  int newNode(int64_t start, int64_t end, int64_t gap) {
    // A fixed xorshift sequence: the same plan on every run.
    seed ^= seed << 13;
    seed ^= seed >> 17;
    seed ^= seed << 5;
    Node n{start, end, gap, gap, seed};
    if (!freeList.empty()) {
      int t = freeList.back();
      freeList.pop_back();
      nodes[t] = n;
      return t;
    }
    nodes.push_back(n);
    return static_cast<int>(nodes.size()) - 1;
  }

  void pull(int t) {
    Node &n = nodes[t];
    n.maxGap = n.gap;
    if (n.left >= 0)
      n.maxGap = std::max(n.maxGap, nodes[n.left].maxGap);
    if (n.right >= 0)
      n.maxGap = std::max(n.maxGap, nodes[n.right].maxGap);
  }

  /// Blocks starting below `key`, and the rest.
  std::pair<int, int> split(int t, int64_t key) {
    if (t < 0)
      return {-1, -1};
    if (nodes[t].start < key) {
      auto [below, above] = split(nodes[t].right, key);
      nodes[t].right = below;
      pull(t);
      return {t, above};
    }
    auto [below, above] = split(nodes[t].left, key);
    nodes[t].left = above;
    pull(t);
    return {below, t};
  }

  /// `a`'s blocks all start below `b`'s.
  int merge(int a, int b) {
    if (a < 0 || b < 0)
      return a < 0 ? b : a;
    if (nodes[a].priority > nodes[b].priority) {
      nodes[a].right = merge(nodes[a].right, b);
      pull(a);
      return a;
    }
    nodes[b].left = merge(a, nodes[b].left);
    pull(b);
    return b;
  }

  /// `t` with the gap of its lowest block measured from `end`.
  int withGapBelow(int t, int64_t end) {
    if (t < 0)
      return t;
    int lowest = t;
    while (nodes[lowest].left >= 0)
      lowest = nodes[lowest].left;
    auto [block, above] = split(t, nodes[lowest].start + 1);
    nodes[block].gap = nodes[block].start - end;
    pull(block);
    return merge(block, above);
  }

  std::vector<Node> nodes;
  std::vector<int> freeList;
  int root = -1;
  uint32_t seed = 2463534242u;
};

} // namespace

int LaunchArena::addBuffer(int64_t bytes) {
  buffers.push_back({bytes});
  return static_cast<int>(buffers.size()) - 1;
}

void LaunchArena::touch(int buffer, int64_t position) {
  Buffer &b = buffers[buffer];
  b.first = b.first < 0 ? position : std::min(b.first, position);
  b.last = std::max(b.last, position);
}

void LaunchArena::plan(int64_t alignment) {
  auto alignUp = [&](int64_t n) {
    return (std::max<int64_t>(n, 1) + alignment - 1) / alignment * alignment;
  };
  // Buffers by first and by last position.
  std::multimap<int64_t, int> starts, ends;
  for (int i = 0; i < size(); ++i)
    if (buffers[i].first >= 0) {
      starts.insert({buffers[i].first, i});
      ends.insert({buffers[i].last, i});
    }
  LiveBlocks live;
  peak = 0;
  auto startIt = starts.begin();
  auto endIt = ends.begin();
  while (startIt != starts.end() || endIt != ends.end()) {
    int64_t position = startIt != starts.end() ? startIt->first : INT64_MAX;
    if (endIt != ends.end())
      position = std::min(position, endIt->first);
    for (; startIt != starts.end() && startIt->first == position; ++startIt) {
      Buffer &b = buffers[startIt->second];
      int64_t size = alignUp(b.bytes);
      int64_t offset = live.firstFit(size);
      live.insert(offset, offset + size);
      b.offset = offset;
      peak = std::max(peak, offset + size);
    }
    for (; endIt != ends.end() && endIt->first == position; ++endIt)
      live.erase(buffers[endIt->second].offset);
  }
}
