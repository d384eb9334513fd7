//===- TreeMoves.h - Exact moves over induced trees -------------*- C++ -*-===//
//
// Large moves for the problem without the memory limit (any prices already
// in the node costs): grow a tree of nodes from a root, breadth first,
// taking a node only when exactly one of its neighbours is in the tree
// already (so no edge joins two tree nodes but the tree's own), keep every
// other node fixed, and re-choose the whole tree's strategies at once by
// dynamic programming from the leaves up. The tree's best is never worse
// than what it had, and one move can turn a long chain of tied layers
// together where single-node moves stop at forbidden or costly pairs.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PLANNING_SHARDSOLVE_TREEMOVES_H
#define TGC_PLANNING_SHARDSOLVE_TREEMOVES_H

#include "planning/shardsolve/SearchGraph.h"

#include <chrono>
#include <random>

namespace tg::shardsolve {

class TreeMoves {
public:
  using Clock = std::chrono::steady_clock;

  TreeMoves(const SearchGraph &graph, uint64_t seed);

  /// Tree moves from roots in random order until a sweep (a tree from
  /// every node not yet in one of the sweep's trees) gains nothing, or
  /// `deadline`. Returns the gain.
  double descend(std::vector<int32_t> &choice, Clock::time_point deadline);
  /// One tree of at most `maxNodes` nodes from `root`, re-chosen exactly
  /// (`choice` changes only when the tree's best is better). Returns the
  /// gain (>= 0).
  double move(std::vector<int32_t> &choice, int32_t root, size_t maxNodes);

private:
  const SearchGraph &graph;
  std::mt19937_64 rng;
  /// Per node: the move that last took it into a tree, and how many of that
  /// tree's nodes neighbour it.
  std::vector<int64_t> stamp, touchStamp;
  std::vector<int32_t> treeNeighbours;
  int64_t moves = 0;
  /// The tree in breadth-first order; per place, the parent's place and
  /// the parent's arc to it (-1 at the root), the table (best cost of the
  /// subtree per strategy) and, per strategy of the parent, the best one.
  std::vector<int32_t> order;
  std::vector<int32_t> parentPosition, parentArc;
  std::vector<std::vector<double>> table;
  std::vector<std::vector<int32_t>> reply;
};

} // namespace tg::shardsolve

#endif // TGC_PLANNING_SHARDSOLVE_TREEMOVES_H
