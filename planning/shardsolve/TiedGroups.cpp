//===- TiedGroups.cpp - Strategies that fix each other ----------*- C++ -*-===//
//
// Breadth first along bijective edges from each group's first node, whose
// strategies name the group's: a node reached twice must agree with itself,
// or the group strategy that disagrees is dead.
//
//===----------------------------------------------------------------------===//

#include "planning/shardsolve/TiedGroups.h"

#include <algorithm>
#include <map>

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

std::vector<int32_t> TiedGroups::expand(llvm::ArrayRef<int32_t> byGroup) const {
  std::vector<int32_t> choice(groupOf.size());
  for (size_t i = 0; i < groupOf.size(); ++i)
    choice[i] = strategyOf[i][byGroup[groupOf[i]]];
  return choice;
}

std::vector<int32_t>
TiedGroups::contractChoice(llvm::ArrayRef<int32_t> choice) const {
  std::vector<int32_t> byGroup(numGroups(), 0);
  for (int32_t g = 0; g < numGroups(); ++g) {
    int32_t first = members[g][0];
    for (int32_t k = 0; k < numStrategies(g); ++k)
      if (strategyOf[first][k] == choice[first]) {
        byGroup[g] = k;
        break;
      }
  }
  return byGroup;
}

SearchGraph
tg::shardsolve::contractGroups(const SearchGraph &graph,
                               const TiedGroups &groups,
                               llvm::ArrayRef<double> pricePerByte) {
  auto add = [](double &to, double c) { to = std::min(to + c, kForbidden); };
  SearchGraph contracted;
  int32_t n = groups.numGroups();
  contracted.numNodes = n;
  contracted.span.assign(n, {0, 0});
  contracted.usage.resize(n);
  contracted.kept.resize(n);
  contracted.cost.resize(n);
  contracted.costScale = graph.costScale;
  for (int32_t g = 0; g < n; ++g) {
    contracted.cost[g].assign(groups.numStrategies(g), 0.0);
    contracted.usage[g].assign(groups.numStrategies(g), 0);
    for (int32_t k = 0; k < groups.numStrategies(g); ++k) {
      contracted.kept[g].push_back(k);
      if (!groups.alive[g][k])
        contracted.cost[g][k] = kForbidden;
    }
  }
  for (int32_t i = 0; i < graph.numNodes; ++i) {
    int32_t g = groups.groupOf[i];
    bool priced =
        !pricePerByte.empty() && graph.span[i].first < graph.span[i].second;
    for (int32_t k = 0; k < groups.numStrategies(g); ++k) {
      int32_t s = groups.strategyOf[i][k];
      add(contracted.cost[g][k],
          graph.cost[i][s] +
              (priced ? pricePerByte[i] * graph.usage[i][s] : 0.0));
    }
  }
  std::map<std::pair<int32_t, int32_t>, int32_t> pairOf;
  for (const SearchGraph::PairCosts &pair : graph.edges) {
    int32_t gu = groups.groupOf[pair.u], gv = groups.groupOf[pair.v];
    int32_t columns = graph.numStrategies(pair.v);
    auto costOf = [&](int32_t ku, int32_t kv) {
      return pair.costs[groups.strategyOf[pair.u][ku] * columns +
                        groups.strategyOf[pair.v][kv]];
    };
    if (gu == gv) {
      for (int32_t k = 0; k < groups.numStrategies(gu); ++k)
        add(contracted.cost[gu][k], costOf(k, k));
      continue;
    }
    bool flip = gu > gv;
    auto key = flip ? std::make_pair(gv, gu) : std::make_pair(gu, gv);
    auto [it, inserted] = pairOf.try_emplace(key, contracted.edges.size());
    int32_t rows = groups.numStrategies(key.first);
    int32_t cols = groups.numStrategies(key.second);
    if (inserted)
      contracted.edges.push_back(
          {key.first, key.second, std::vector<double>(rows * cols, 0.0)});
    std::vector<double> &costs = contracted.edges[it->second].costs;
    for (int32_t ku = 0; ku < groups.numStrategies(gu); ++ku)
      for (int32_t kv = 0; kv < groups.numStrategies(gv); ++kv)
        add(costs[flip ? kv * cols + ku : ku * cols + kv], costOf(ku, kv));
  }
  contracted.linkArcs();
  return contracted;
}
