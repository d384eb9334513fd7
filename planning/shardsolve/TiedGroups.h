//===- TiedGroups.h - Strategies that fix each other ------------*- C++ -*-===//
//
// On the contest's graphs every edge with forbidden pairs is a bijection:
// each strategy of one end allows exactly one of the other (the same
// sharding on both sides of an op). Such edges tie their nodes into groups
// where one node's strategy fixes all the others', so a group is one
// variable with a few strategies, however many nodes it has. The integer
// program is written over groups, and regions for CBC take groups whole.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PLANNING_SHARDSOLVE_TIEDGROUPS_H
#define TGC_PLANNING_SHARDSOLVE_TIEDGROUPS_H

#include "planning/shardsolve/SearchGraph.h"

namespace tg::shardsolve {

struct TiedGroups {
  std::vector<int32_t> groupOf;
  std::vector<std::vector<int32_t>> members;
  /// Per node, per strategy of its group: the node's kept strategy.
  std::vector<std::vector<int32_t>> strategyOf;
  /// Per group, per group strategy: consistent around every cycle of ties.
  std::vector<std::vector<char>> alive;

  int32_t numGroups() const { return members.size(); }
  int32_t numStrategies(int32_t group) const { return alive[group].size(); }

  /// Each node's kept strategy under one strategy per group.
  std::vector<int32_t> expand(llvm::ArrayRef<int32_t> byGroup) const;
  /// Each group's strategy in `choice`, read off its first member (the
  /// other members agree when `choice` has no forbidden pair in a group).
  std::vector<int32_t> contractChoice(llvm::ArrayRef<int32_t> choice) const;
};

/// The graph with each group of `groups` contracted into one node whose
/// strategies are the group's: its members' costs (plus `pricePerByte[i]`
/// times node i's usage, when given) and the edges inside it summed into
/// the group's costs, dead group strategies forbidden, and the edges
/// between two groups summed into one. No usages or live spans: a search
/// over it sees prices, not the limit.
SearchGraph contractGroups(const SearchGraph &graph, const TiedGroups &groups,
                           llvm::ArrayRef<double> pricePerByte = {});

/// Groups the nodes of `graph` along its bijective edges.
TiedGroups findTiedGroups(const SearchGraph &graph);

} // namespace tg::shardsolve

#endif // TGC_PLANNING_SHARDSOLVE_TIEDGROUPS_H
