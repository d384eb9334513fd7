//===- Pbqp.cpp - Solve without the memory limit ----------------*- C++ -*-===//
//
// The reduction works on its own copy of the graph: cost vectors that grow
// as neighbours fold into them, and edge matrices in a map per node, so that
// an R2 step finds an existing edge between its two neighbours and adds to
// it rather than creating a parallel one.
//
//===----------------------------------------------------------------------===//

#include "planning/shardsolve/Pbqp.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <unordered_map>

using namespace tg::shardsolve;

namespace {

/// R2 folds cost |S_i| x |S_j| x |S_k|; above this the node takes RN.
constexpr double kMostR2Work = 4e6;

class Reducer {
public:
  explicit Reducer(const SearchGraph &graph);
  std::vector<int32_t> run();
  /// When set, the nodes left once no R0/R1/R2 applies (the core) are
  /// chosen together by this instead of one by one by RN.
  std::function<std::vector<int32_t>(const SearchGraph &)> solveCore;

private:
  struct Matrix {
    int32_t a, b;
    std::vector<double> costs; // |S_a| x |S_b|
  };
  /// A node removed by R0, R1 or R2: what back-propagation needs.
  struct Removed {
    int32_t node;
    std::vector<double> cost;
    /// Per neighbour then: the matrix oriented node x neighbour.
    std::vector<std::pair<int32_t, std::vector<double>>> neighbours;
  };

  int32_t size(int32_t node) const { return cost[node].size(); }
  /// The matrix of edge `e` oriented from `node` to its other end.
  std::vector<double> oriented(int32_t e, int32_t node) const;
  void detach(int32_t node);
  void touched(int32_t node);
  void reduceR0R1(int32_t node);
  void reduceR2(int32_t node);
  void reduceRN(int32_t node);
  void decideCore();

  std::vector<std::vector<double>> cost;
  std::vector<Matrix> edges;
  std::vector<std::unordered_map<int32_t, int32_t>> adjacent;
  std::vector<char> gone;
  std::vector<int32_t> choice;
  std::vector<Removed> stack;
  std::vector<int32_t> small;
  /// RN takes the node with the most neighbours first (on the contest's
  /// instances the fewest first left forbidden pairs on the largest).
  std::priority_queue<std::pair<size_t, int32_t>> byDegree;
};

} // namespace

Reducer::Reducer(const SearchGraph &graph)
    : cost(graph.cost), adjacent(graph.numNodes), gone(graph.numNodes, 0),
      choice(graph.numNodes, -1) {
  for (const SearchGraph::PairCosts &pair : graph.edges) {
    int32_t e = edges.size();
    edges.push_back({pair.u, pair.v, pair.costs});
    adjacent[pair.u][pair.v] = e;
    adjacent[pair.v][pair.u] = e;
  }
  for (int32_t i = 0; i < graph.numNodes; ++i)
    touched(i);
}

std::vector<double> Reducer::oriented(int32_t e, int32_t node) const {
  const Matrix &matrix = edges[e];
  if (matrix.a == node)
    return matrix.costs;
  int32_t rows = size(matrix.a), columns = size(matrix.b);
  std::vector<double> result(matrix.costs.size());
  for (int32_t s = 0; s < rows; ++s)
    for (int32_t t = 0; t < columns; ++t)
      result[t * rows + s] = matrix.costs[s * columns + t];
  return result;
}

void Reducer::touched(int32_t node) {
  if (gone[node])
    return;
  if (adjacent[node].size() <= 2)
    small.push_back(node);
  else
    byDegree.push({adjacent[node].size(), node});
}

/// Removes `node` and its edges; its neighbours' degrees drop.
void Reducer::detach(int32_t node) {
  gone[node] = 1;
  for (auto [other, e] : adjacent[node]) {
    adjacent[other].erase(node);
    touched(other);
  }
  adjacent[node].clear();
}

void Reducer::reduceR0R1(int32_t node) {
  Removed removed{node, cost[node], {}};
  for (auto [other, e] : adjacent[node]) {
    std::vector<double> matrix = oriented(e, node);
    int32_t columns = size(other);
    for (int32_t t = 0; t < columns; ++t) {
      double best = std::numeric_limits<double>::infinity();
      for (int32_t s = 0; s < size(node); ++s)
        best = std::min(best, cost[node][s] + matrix[s * columns + t]);
      cost[other][t] += best;
    }
    removed.neighbours.push_back({other, std::move(matrix)});
  }
  stack.push_back(std::move(removed));
  detach(node);
}

void Reducer::reduceR2(int32_t node) {
  Removed removed{node, cost[node], {}};
  for (auto [other, e] : adjacent[node])
    removed.neighbours.push_back({other, oriented(e, node)});
  auto &[j, toJ] = removed.neighbours[0];
  auto &[k, toK] = removed.neighbours[1];
  int32_t sj = size(j), sk = size(k);
  std::vector<double> folded(sj * sk);
  for (int32_t t = 0; t < sj; ++t)
    for (int32_t u = 0; u < sk; ++u) {
      double best = std::numeric_limits<double>::infinity();
      for (int32_t s = 0; s < size(node); ++s)
        best =
            std::min(best, cost[node][s] + toJ[s * sj + t] + toK[s * sk + u]);
      folded[t * sk + u] = best;
    }
  auto existing = adjacent[j].find(k);
  if (existing != adjacent[j].end()) {
    Matrix &matrix = edges[existing->second];
    for (int32_t t = 0; t < sj; ++t)
      for (int32_t u = 0; u < sk; ++u)
        matrix.costs[matrix.a == j ? t * sk + u : u * sj + t] +=
            folded[t * sk + u];
  } else {
    int32_t e = edges.size();
    edges.push_back({j, k, std::move(folded)});
    adjacent[j][k] = e;
    adjacent[k][j] = e;
  }
  stack.push_back(std::move(removed));
  detach(node);
}

void Reducer::reduceRN(int32_t node) {
  // The strategy that is best counting each neighbour's best reply.
  std::vector<std::pair<int32_t, std::vector<double>>> neighbours;
  for (auto [other, e] : adjacent[node])
    neighbours.push_back({other, oriented(e, node)});
  double bestTotal = std::numeric_limits<double>::infinity();
  int32_t best = 0;
  for (int32_t s = 0; s < size(node); ++s) {
    double total = cost[node][s];
    for (const auto &[other, matrix] : neighbours) {
      double reply = std::numeric_limits<double>::infinity();
      for (int32_t t = 0; t < size(other); ++t)
        reply = std::min(reply, matrix[s * size(other) + t] + cost[other][t]);
      total += reply;
    }
    if (total < bestTotal) {
      bestTotal = total;
      best = s;
    }
  }
  choice[node] = best;
  for (const auto &[other, matrix] : neighbours)
    for (int32_t t = 0; t < size(other); ++t)
      cost[other][t] += matrix[best * size(other) + t];
  detach(node);
}

void Reducer::decideCore() {
  std::vector<int32_t> nodes, index(cost.size(), -1);
  for (int32_t i = 0; i < static_cast<int32_t>(cost.size()); ++i)
    if (!gone[i]) {
      index[i] = nodes.size();
      nodes.push_back(i);
    }
  if (nodes.empty())
    return;
  SearchGraph core;
  core.numNodes = nodes.size();
  core.span.assign(nodes.size(), {0, 0});
  core.usage.resize(nodes.size());
  core.kept.resize(nodes.size());
  for (int32_t node : nodes) {
    core.cost.push_back(cost[node]);
    core.usage[index[node]].assign(size(node), 0);
  }
  for (int32_t node : nodes)
    for (auto [other, e] : adjacent[node])
      if (index[other] > index[node])
        core.edges.push_back({index[node], index[other], oriented(e, node)});
  core.linkArcs();
  std::vector<int32_t> picked = solveCore(core);
  for (int32_t node : nodes) {
    choice[node] = picked[index[node]];
    gone[node] = 1;
  }
}

std::vector<int32_t> Reducer::run() {
  while (true) {
    if (!small.empty()) {
      int32_t node = small.back();
      small.pop_back();
      if (gone[node] || adjacent[node].size() > 2)
        continue;
      if (adjacent[node].size() < 2) {
        reduceR0R1(node);
        continue;
      }
      auto it = adjacent[node].begin();
      double work = static_cast<double>(size(node)) * size(it->first) *
                    size(std::next(it)->first);
      if (work <= kMostR2Work)
        reduceR2(node);
      else if (!solveCore)
        reduceRN(node);
      continue;
    }
    if (solveCore) {
      decideCore();
      break;
    }
    if (byDegree.empty())
      break;
    auto [degree, node] = byDegree.top();
    byDegree.pop();
    if (gone[node] || adjacent[node].size() != degree)
      continue;
    reduceRN(node);
  }
  // Back-propagation: every neighbour a node had when it went was removed
  // later, so its strategy is known by now.
  for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
    double bestTotal = std::numeric_limits<double>::infinity();
    int32_t best = 0;
    for (int32_t s = 0; s < static_cast<int32_t>(it->cost.size()); ++s) {
      double total = it->cost[s];
      for (const auto &[other, matrix] : it->neighbours)
        total += matrix[s * size(other) + choice[other]];
      if (total < bestTotal) {
        bestTotal = total;
        best = s;
      }
    }
    choice[it->node] = best;
  }
  return choice;
}

std::vector<int32_t> tg::shardsolve::solvePbqp(const SearchGraph &graph) {
  return Reducer(graph).run();
}

std::vector<int32_t> tg::shardsolve::solvePbqpWithCore(
    const SearchGraph &graph,
    std::function<std::vector<int32_t>(const SearchGraph &)> solveCore) {
  Reducer reducer(graph);
  reducer.solveCore = std::move(solveCore);
  return reducer.run();
}
