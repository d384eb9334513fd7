//===- LocalSearch.h - Iterated local search under a limit ------*- C++ -*-===//
//
// A choice of kept strategies with its cost, its count of forbidden edge
// pairs and its memory profile, kept up to date move by move. On it:
// descent (the best single-node move that fits the limit, until none
// improves), repair (cheapest memory cuts at the peak until the limit
// holds), and iterated local search (perturb a connected region, repair,
// descend, keep the result when it is no worse).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PLANNING_SHARDSOLVE_LOCALSEARCH_H
#define TGC_PLANNING_SHARDSOLVE_LOCALSEARCH_H

#include "planning/shardsolve/SearchGraph.h"
#include "planning/shardsolve/TiedGroups.h"
#include "planning/shardsolve/UsageProfile.h"

#include <chrono>
#include <random>

namespace tg::shardsolve {

/// What a move changes: forbidden edge pairs first, then cost.
struct MoveDelta {
  int64_t forbidden = 0;
  double cost = 0;
};

class LocalSearch {
public:
  using Clock = std::chrono::steady_clock;

  LocalSearch(const SearchGraph &graph, uint64_t seed);

  /// Starts from `choice` (one kept strategy per node).
  void reset(std::vector<int32_t> choice);
  const std::vector<int32_t> &choice() const { return current; }
  /// The cost of the allowed node and edge costs chosen.
  double cost() const { return totalCost; }
  int64_t forbiddenPairs() const { return forbidden; }
  int64_t peak() const { return profile.peak(); }
  bool fitsLimit() const { return !graph.limit || peak() <= *graph.limit; }
  bool valid() const { return forbidden == 0 && fitsLimit(); }

  /// Per-node prices per byte of usage, added to node costs by the
  /// perturbation's and the repair's choices (Lagrange multipliers of the
  /// memory rows); empty = none.
  void setPrices(std::vector<double> perNode) { prices = std::move(perNode); }

  /// Moves of whole tied groups (every member at once, so no forbidden pair
  /// inside a group), the best strategy per group, while one improves and
  /// fits the limit, until `deadline`. Returns whether any group moved.
  bool descendGroups(const TiedGroups &groups, Clock::time_point deadline);
  /// Single-node moves, best first, while one improves and fits the limit.
  void descend(std::vector<int32_t> worklist);
  /// Cheapest memory cuts (cost per byte) at the peak until the limit holds.
  /// Returns false when no cut is left.
  bool repair();
  /// The same by whole tied groups: at the peak segment, the group move
  /// with the least cost per byte it frees there, priced on `contracted`
  /// (contractGroups() of the graph, with or without prices), until the
  /// limit holds. Keeps groups whole, where repair() may split one and
  /// leave forbidden pairs. Returns false when no cut is left.
  bool repairGroups(const TiedGroups &groups, const SearchGraph &contracted);
  /// Iterated local search until `deadline` or `maxStall` rounds without a
  /// better valid choice; returns the best valid choice seen (empty if none).
  std::vector<int32_t> iterate(Clock::time_point deadline, int64_t maxStall);

  /// Moves `node` to `strategy`, then every neighbour the move leaves in a
  /// forbidden pair to its best strategy given what has moved, and so on
  /// (an ejection chain: forbidden pairs tie strategies along long chains of
  /// a training graph, so one node alone rarely can move). False when more
  /// than `cap` nodes would move; the moves stay, for the caller to undo.
  bool chainMove(int32_t node, int32_t strategy, size_t cap,
                 std::vector<int32_t> &moved);

  MoveDelta delta(int32_t node, int32_t strategy) const;
  bool fits(int32_t node, int32_t strategy) const;
  void apply(int32_t node, int32_t strategy);

private:
  bool better(const MoveDelta &delta) const {
    return delta.forbidden < 0 ||
           (delta.forbidden == 0 && delta.cost < -tolerance);
  }
  double price(int32_t node, int32_t strategy) const {
    return prices.empty() ? 0 : prices[node] * graph.usage[node][strategy];
  }
  void perturb(int32_t root, int32_t size, std::vector<int32_t> &touched);
  /// Calls `visit` with each node live in `segment`.
  template <typename Visit> void forEachLiveAt(int32_t segment, Visit visit) {
    for (int32_t node : byStart) {
      auto [first, last] = graph.span[node];
      if (first > segment)
        break;
      if (last > segment)
        visit(node);
    }
  }
  void undo(size_t mark);

  const SearchGraph &graph;
  std::mt19937_64 rng;
  std::vector<int32_t> current;
  double totalCost = 0;
  int64_t forbidden = 0;
  UsageProfile profile;
  double tolerance;
  std::vector<double> prices;
  /// (node, previous strategy) of every move since the last accepted round.
  std::vector<std::pair<int32_t, int32_t>> log;
  bool logging = false;
  /// Nodes by first live segment, for finding the nodes live at a segment.
  std::vector<int32_t> byStart;
  /// Scratch: nodes already cut in this round of repair.
  std::vector<char> marked;
};

} // namespace tg::shardsolve

#endif // TGC_PLANNING_SHARDSOLVE_LOCALSEARCH_H
