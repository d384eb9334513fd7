//===- SearchGraph.cpp - Shrink the problem before searching ----*- C++ -*-===//
//
// Every reduction here keeps an optimal choice: a dropped strategy is
// forbidden or no better than one kept (no more cost, no more memory, no
// more on any edge), and folded edges add the same cost to every choice.
//
//===----------------------------------------------------------------------===//

#include "planning/shardsolve/SearchGraph.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <map>

using namespace tg::shardsolve;

std::vector<int64_t> SearchGraph::expand(llvm::ArrayRef<int32_t> choice) const {
  std::vector<int64_t> result(choice.size());
  for (size_t i = 0; i < choice.size(); ++i)
    result[i] = kept[i][choice[i]];
  return result;
}

std::vector<int32_t> SearchGraph::shrink(llvm::ArrayRef<int64_t> strategies,
                                         int64_t &forbidden) const {
  std::vector<int32_t> result(numNodes, 0);
  forbidden = 0;
  for (int32_t i = 0; i < numNodes && i < (int32_t)strategies.size(); ++i) {
    int64_t s = strategies[i];
    int32_t k = s >= 0 && s < (int64_t)standIn[i].size() ? standIn[i][s] : -1;
    if (k < 0)
      ++forbidden;
    result[i] = std::max(k, 0);
  }
  return result;
}

double SearchGraph::costOf(llvm::ArrayRef<int32_t> choice) const {
  double total = 0;
  for (int32_t i = 0; i < numNodes; ++i)
    total += cost[i][choice[i]];
  for (const PairCosts &pair : edges)
    total +=
        pair.costs[choice[pair.u] * numStrategies(pair.v) + choice[pair.v]];
  return total;
}

void SearchGraph::linkArcs() {
  arcs.assign(numNodes, {});
  for (size_t k = 0; k < edges.size(); ++k) {
    arcs[edges[k].u].push_back({static_cast<int32_t>(k), edges[k].v, true});
    arcs[edges[k].v].push_back({static_cast<int32_t>(k), edges[k].u, false});
  }
}

namespace {

/// The original problem with a mask of allowed strategies per node.
struct Allowed {
  const Problem &problem;
  std::vector<std::vector<char>> ok;
  std::vector<std::vector<double>> cost; // with self-loops folded in

  double edgeCost(const Edge &edge, int64_t a, int64_t b) const {
    return edge.costs[a * problem.nodeCosts[edge.v].size() + b];
  }
};

/// Drops node strategies that are forbidden, then, until nothing changes,
/// strategies with no allowed partner on some edge.
void dropForbidden(Allowed &allowed, const std::vector<const Edge *> &edges) {
  size_t n = allowed.problem.numNodes();
  for (size_t i = 0; i < n; ++i)
    for (size_t s = 0; s < allowed.cost[i].size(); ++s)
      if (allowed.cost[i][s] >= kForbidden)
        allowed.ok[i][s] = 0;
  bool changed = true;
  while (changed) {
    changed = false;
    for (const Edge *edge : edges) {
      auto &okU = allowed.ok[edge->u], &okV = allowed.ok[edge->v];
      std::vector<char> supportedV(okV.size(), 0);
      for (size_t a = 0; a < okU.size(); ++a) {
        if (!okU[a])
          continue;
        bool supported = false;
        for (size_t b = 0; b < okV.size(); ++b)
          if (okV[b] && allowed.edgeCost(*edge, a, b) < kForbidden) {
            supported = true;
            supportedV[b] = 1;
          }
        if (!supported) {
          okU[a] = 0;
          changed = true;
        }
      }
      for (size_t b = 0; b < okV.size(); ++b)
        if (okV[b] && !supportedV[b]) {
          okV[b] = 0;
          changed = true;
        }
    }
  }
}

/// True when strategy `b` of `node` is no worse than `a` in cost, memory and
/// every incident edge (so `a` can go).
bool noWorse(const Allowed &allowed,
             const std::vector<std::vector<std::pair<const Edge *, bool>>> &inc,
             size_t node, size_t b, size_t a, bool live) {
  const Problem &problem = allowed.problem;
  if (allowed.cost[node][b] > allowed.cost[node][a])
    return false;
  if (live && problem.usages[node][b] > problem.usages[node][a])
    return false;
  for (auto [edge, isU] : inc[node]) {
    int64_t other = isU ? edge->v : edge->u;
    for (size_t t = 0; t < allowed.ok[other].size(); ++t) {
      if (!allowed.ok[other][t])
        continue;
      double cb =
          isU ? allowed.edgeCost(*edge, b, t) : allowed.edgeCost(*edge, t, b);
      double ca =
          isU ? allowed.edgeCost(*edge, a, t) : allowed.edgeCost(*edge, t, a);
      if (cb > ca)
        return false;
    }
  }
  return true;
}

/// Drops every strategy another kept strategy is no worse than (of two equal
/// ones, the later goes), noting in `by` which one.
void dropDominated(
    Allowed &allowed,
    const std::vector<std::vector<std::pair<const Edge *, bool>>> &inc,
    std::vector<std::vector<int32_t>> &by) {
  const Problem &problem = allowed.problem;
  for (size_t i = 0; i < problem.numNodes(); ++i) {
    bool live = problem.intervals[i].second > problem.intervals[i].first;
    auto &ok = allowed.ok[i];
    for (size_t a = 0; a < ok.size(); ++a) {
      if (!ok[a])
        continue;
      for (size_t b = 0; b < ok.size() && ok[a]; ++b)
        if (b != a && ok[b] && noWorse(allowed, inc, i, b, a, live) &&
            (b < a || !noWorse(allowed, inc, i, a, b, live))) {
          ok[a] = 0;
          by[i][a] = b;
        }
    }
  }
}

} // namespace

SearchGraph tg::shardsolve::buildSearchGraph(const Problem &problem) {
  SearchGraph graph;
  size_t n = problem.numNodes();
  graph.numNodes = n;
  graph.limit = problem.usageLimit;

  Allowed allowed{problem, {}, problem.nodeCosts};
  allowed.ok.resize(n);
  for (size_t i = 0; i < n; ++i)
    allowed.ok[i].assign(problem.nodeCosts[i].size(), 1);
  std::vector<const Edge *> edges;
  std::vector<std::vector<std::pair<const Edge *, bool>>> inc(n);
  for (const Edge &edge : problem.edges) {
    if (edge.u == edge.v) { // a self-loop is a node cost
      size_t count = problem.nodeCosts[edge.u].size();
      for (size_t s = 0; s < count; ++s)
        allowed.cost[edge.u][s] += edge.costs[s * count + s];
      continue;
    }
    edges.push_back(&edge);
    inc[edge.u].push_back({&edge, true});
    inc[edge.v].push_back({&edge, false});
  }
  dropForbidden(allowed, edges);
  for (size_t i = 0; i < n; ++i)
    if (std::none_of(allowed.ok[i].begin(), allowed.ok[i].end(),
                     [](char ok) { return ok; })) {
      graph.infeasible = llvm::formatv(
          "node {0} has no strategy that is allowed with its neighbours'", i);
      return graph;
    }
  std::vector<std::vector<int32_t>> by(n);
  for (size_t i = 0; i < n; ++i)
    by[i].assign(allowed.ok[i].size(), -1);
  dropDominated(allowed, inc, by);

  graph.kept.resize(n);
  graph.cost.resize(n);
  graph.usage.resize(n);
  graph.standIn.resize(n);
  for (size_t i = 0; i < n; ++i) {
    std::vector<int32_t> index(allowed.ok[i].size(), -1);
    for (size_t s = 0; s < allowed.ok[i].size(); ++s)
      if (allowed.ok[i][s]) {
        index[s] = graph.kept[i].size();
        graph.kept[i].push_back(s);
        graph.cost[i].push_back(allowed.cost[i][s]);
        graph.usage[i].push_back(problem.usages[i][s]);
      }
    // A dominated strategy's stand-in is its dominator's, which may have
    // gone to a third (dominance is transitive; the chain ends kept).
    graph.standIn[i].resize(index.size());
    for (size_t s = 0; s < index.size(); ++s) {
      int32_t k = s;
      while (index[k] < 0 && by[i][k] >= 0)
        k = by[i][k];
      graph.standIn[i][s] = index[k];
    }
  }

  // Parallel edges merge into one matrix over the kept strategies.
  std::map<std::pair<int64_t, int64_t>, int32_t> pairIndex;
  for (const Edge *edge : edges) {
    int64_t u = std::min(edge->u, edge->v), v = std::max(edge->u, edge->v);
    auto [it, inserted] =
        pairIndex.insert({{u, v}, static_cast<int32_t>(graph.edges.size())});
    if (inserted)
      graph.edges.push_back(
          {static_cast<int32_t>(u), static_cast<int32_t>(v),
           std::vector<double>(graph.kept[u].size() * graph.kept[v].size())});
    SearchGraph::PairCosts &pair = graph.edges[it->second];
    size_t columns = graph.kept[v].size();
    for (size_t a = 0; a < graph.kept[u].size(); ++a)
      for (size_t b = 0; b < columns; ++b) {
        int64_t su = graph.kept[u][a], sv = graph.kept[v][b];
        pair.costs[a * columns + b] += edge->u == u
                                           ? allowed.edgeCost(*edge, su, sv)
                                           : allowed.edgeCost(*edge, sv, su);
      }
  }

  // An edge whose cost is a row term plus a column term is two node costs.
  std::vector<SearchGraph::PairCosts> coupled;
  for (SearchGraph::PairCosts &pair : graph.edges) {
    size_t rows = graph.kept[pair.u].size(),
           columns = graph.kept[pair.v].size();
    const auto &c = pair.costs;
    bool separable = true;
    for (size_t a = 0; a < rows && separable; ++a)
      for (size_t b = 0; b < columns && separable; ++b)
        separable = c[a * columns + b] < kForbidden &&
                    c[a * columns + b] - c[a * columns] == c[b] - c[0];
    if (!separable) {
      coupled.push_back(std::move(pair));
      continue;
    }
    for (size_t a = 0; a < rows; ++a)
      graph.cost[pair.u][a] += c[a * columns];
    for (size_t b = 0; b < columns; ++b)
      graph.cost[pair.v][b] += c[b] - c[0];
  }
  graph.edges = std::move(coupled);
  graph.linkArcs();

  // Time: segments between consecutive interval ends of live nodes.
  std::vector<int64_t> points;
  for (auto [start, end] : problem.intervals)
    if (end > start) {
      points.push_back(start);
      points.push_back(end);
    }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  graph.numSegments = points.empty() ? 0 : points.size() - 1;
  graph.span.resize(n, {0, 0});
  auto index = [&](int64_t t) {
    return static_cast<int32_t>(
        std::lower_bound(points.begin(), points.end(), t) - points.begin());
  };
  for (size_t i = 0; i < n; ++i) {
    auto [start, end] = problem.intervals[i];
    if (end > start)
      graph.span[i] = {index(start), index(end)};
  }

  double sum = 0;
  size_t count = 0;
  for (const auto &costs : graph.cost)
    for (double c : costs)
      if (c != 0 && c < kForbidden) {
        sum += std::fabs(c);
        ++count;
      }
  graph.costScale = count ? sum / count : 1;
  return graph;
}
