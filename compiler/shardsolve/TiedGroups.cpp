//===- TiedGroups.cpp - Strategies that fix each other ----------*- C++ -*-===//
//
// Breadth first along bijective edges from each group's first node, whose
// strategies name the group's: a node reached twice must agree with itself,
// or the group strategy that disagrees is dead.
//
//===----------------------------------------------------------------------===//

#include "compiler/shardsolve/TiedGroups.h"

#include <algorithm>

using namespace tg::shardsolve;

/// For a bijective edge, the partner of each strategy of `node` across
/// `arc`; empty when the edge is not a bijection.
static std::vector<int32_t> partners(const SearchGraph &graph, int32_t node,
                                     const SearchGraph::Arc &arc) {
  int32_t mine = graph.numStrategies(node);
  int32_t theirs = graph.numStrategies(arc.other);
  if (mine != theirs)
    return {};
  std::vector<int32_t> partner(mine, -1);
  std::vector<int32_t> taken(theirs, 0);
  for (int32_t s = 0; s < mine; ++s)
    for (int32_t t = 0; t < theirs; ++t)
      if (graph.arcCost(arc, s, t) < kForbidden) {
        if (partner[s] >= 0 || taken[t]++)
          return {};
        partner[s] = t;
      }
  for (int32_t s = 0; s < mine; ++s)
    if (partner[s] < 0)
      return {};
  return partner;
}

TiedGroups tg::shardsolve::findTiedGroups(const SearchGraph &graph) {
  TiedGroups groups;
  int32_t n = graph.numNodes;
  groups.groupOf.assign(n, -1);
  groups.strategyOf.resize(n);
  // Per node, per arc: the bijection across it (empty: not one).
  std::vector<std::vector<std::vector<int32_t>>> ties(n);
  for (int32_t i = 0; i < n; ++i)
    for (const SearchGraph::Arc &arc : graph.arcs[i])
      ties[i].push_back(std::any_of(graph.edges[arc.edge].costs.begin(),
                                    graph.edges[arc.edge].costs.end(),
                                    [](double c) { return c >= kForbidden; })
                            ? partners(graph, i, arc)
                            : std::vector<int32_t>());
  for (int32_t root = 0; root < n; ++root) {
    if (groups.groupOf[root] >= 0)
      continue;
    int32_t group = groups.members.size();
    int32_t count = graph.numStrategies(root);
    groups.members.push_back({root});
    groups.alive.emplace_back(count, 1);
    groups.groupOf[root] = group;
    for (int32_t k = 0; k < count; ++k)
      groups.strategyOf[root].push_back(k);
    std::vector<int32_t> &members = groups.members.back();
    std::vector<char> &alive = groups.alive.back();
    for (size_t m = 0; m < members.size(); ++m) {
      int32_t node = members[m];
      for (size_t a = 0; a < graph.arcs[node].size(); ++a) {
        const std::vector<int32_t> &partner = ties[node][a];
        if (partner.empty())
          continue;
        int32_t other = graph.arcs[node][a].other;
        if (groups.groupOf[other] < 0) {
          groups.groupOf[other] = group;
          members.push_back(other);
          for (int32_t k = 0; k < count; ++k)
            groups.strategyOf[other].push_back(
                partner[groups.strategyOf[node][k]]);
          continue;
        }
        for (int32_t k = 0; k < count; ++k)
          if (groups.strategyOf[other][k] !=
              partner[groups.strategyOf[node][k]])
            alive[k] = 0;
      }
    }
  }
  return groups;
}
