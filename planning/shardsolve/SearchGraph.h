//===- SearchGraph.h - The problem as the searches see it -------*- C++ -*-===//
//
// buildSearchGraph() shrinks a Problem before any search: it drops forbidden
// strategies (a forbidden node cost, or no allowed partner on some edge),
// dominated and duplicate strategies, folds self-loops and separable edges
// into node costs, merges parallel edges, and compresses the time axis to
// the segments between interval ends, where the live set is constant.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PLANNING_SHARDSOLVE_SEARCHGRAPH_H
#define TGC_PLANNING_SHARDSOLVE_SEARCHGRAPH_H

#include "planning/shardsolve/Problem.h"

namespace tg::shardsolve {

struct SearchGraph {
  /// One end of an edge, seen from a node.
  struct Arc {
    int32_t edge;
    int32_t other;
    /// This node is the edge's u (its strategy picks the row).
    bool isU;
  };
  struct PairCosts {
    int32_t u, v;
    /// |S_u| x |S_v| over the kept strategies, row-major.
    std::vector<double> costs;
  };

  int32_t numNodes = 0;
  /// Per node, the original index of each kept strategy.
  std::vector<std::vector<int32_t>> kept;
  /// Per node, per original strategy, the kept strategy that stands in for
  /// it: itself, the one that dominates it, or -1 where it is forbidden.
  std::vector<std::vector<int32_t>> standIn;
  std::vector<std::vector<double>> cost;
  std::vector<std::vector<int64_t>> usage;
  /// Per node, its live segments [first, last); empty when first == last.
  std::vector<std::pair<int32_t, int32_t>> span;
  int32_t numSegments = 0;
  std::optional<int64_t> limit;
  /// Per segment, the memory left for these nodes when it differs by
  /// segment (a region of a larger problem, the rest fixed); empty = `limit`
  /// everywhere.
  std::vector<int64_t> segmentLimit;
  std::vector<PairCosts> edges;
  std::vector<std::vector<Arc>> arcs;
  /// A typical magnitude of the costs: tolerances are relative to it.
  double costScale = 1;
  /// Why no valid choice exists (a node left without strategies); else empty.
  std::string infeasible;

  int32_t numStrategies(int32_t node) const { return cost[node].size(); }
  double arcCost(const Arc &arc, int32_t mine, int32_t theirs) const {
    const PairCosts &pair = edges[arc.edge];
    return arc.isU ? pair.costs[mine * cost[arc.other].size() + theirs]
                   : pair.costs[theirs * cost[pair.v].size() + mine];
  }
  /// The original strategy indices of a choice of kept strategies.
  std::vector<int64_t> expand(llvm::ArrayRef<int32_t> choice) const;
  /// A choice of original strategies as kept ones, each dropped strategy
  /// by its stand-in (no worse), a forbidden one by the first kept; the
  /// number of forbidden ones in `forbidden`.
  std::vector<int32_t> shrink(llvm::ArrayRef<int64_t> strategies,
                              int64_t &forbidden) const;
  /// Node plus edge costs of a choice (a forbidden entry counts its cost).
  double costOf(llvm::ArrayRef<int32_t> choice) const;
  /// Fills `arcs` from `edges`, both ends of each.
  void linkArcs();
};

/// Shrinks `problem` (which verifyProblem accepts) for the searches.
SearchGraph buildSearchGraph(const Problem &problem);

} // namespace tg::shardsolve

#endif // TGC_PLANNING_SHARDSOLVE_SEARCHGRAPH_H
