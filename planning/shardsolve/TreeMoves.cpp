//===- TreeMoves.cpp - Exact moves over induced trees -----------*- C++ -*-===//
//
// The tables live per position in the tree's breadth-first order, so one
// move's buffers serve the next. A node's table is its own cost plus the
// edges to fixed neighbours at their strategies plus, per child, the
// child's best reply; the root's least entry is the tree's best.
//
//===----------------------------------------------------------------------===//

#include "planning/shardsolve/TreeMoves.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

using namespace tg::shardsolve;

/// The most nodes in one tree of descend(): a tree as large as the graph
/// re-chooses everything each move, while a few hundred nodes reach as far
/// on the contest's graphs at a fraction of the work.
constexpr size_t kMostTreeNodes = 256;

TreeMoves::TreeMoves(const SearchGraph &graph, uint64_t seed)
    : graph(graph), rng(seed ^ 0x5851f42d4c957f2dULL),
      stamp(graph.numNodes, -1), touchStamp(graph.numNodes, -1),
      treeNeighbours(graph.numNodes, 0) {}

double TreeMoves::move(std::vector<int32_t> &choice, int32_t root,
                       size_t maxNodes) {
  int64_t id = moves++;
  order.clear();
  parentPosition.clear();
  parentArc.clear();
  auto take = [&](int32_t node, int32_t parent, int32_t arc) {
    stamp[node] = id;
    order.push_back(node);
    parentPosition.push_back(parent);
    parentArc.push_back(arc);
    for (const SearchGraph::Arc &next : graph.arcs[node]) {
      if (touchStamp[next.other] != id) {
        touchStamp[next.other] = id;
        treeNeighbours[next.other] = 0;
      }
      ++treeNeighbours[next.other];
    }
  };
  take(root, -1, -1);
  // Breadth first; arcs from a random offset so that trees differ.
  for (size_t k = 0; k < order.size() && order.size() < maxNodes; ++k) {
    const std::vector<SearchGraph::Arc> &arcs = graph.arcs[order[k]];
    if (arcs.empty())
      continue;
    size_t offset =
        std::uniform_int_distribution<size_t>(0, arcs.size() - 1)(rng);
    for (size_t a = 0; a < arcs.size() && order.size() < maxNodes; ++a) {
      size_t index = (a + offset) % arcs.size();
      int32_t other = arcs[index].other;
      if (stamp[other] != id && treeNeighbours[other] == 1)
        take(other, static_cast<int32_t>(k), static_cast<int32_t>(index));
    }
  }
  size_t size = order.size();
  if (table.size() < size) {
    table.resize(size);
    reply.resize(size);
  }
  for (size_t p = 0; p < size; ++p)
    table[p].assign(graph.numStrategies(order[p]), 0.0);
  // Leaves up: each node's table, then its best reply to each strategy of
  // its parent, added into the parent's table.
  double before = 0;
  for (size_t p = size; p-- > 0;) {
    int32_t node = order[p];
    int32_t count = graph.numStrategies(node);
    std::vector<double> &mine = table[p];
    for (int32_t k = 0; k < count; ++k)
      mine[k] += graph.cost[node][k];
    before += graph.cost[node][choice[node]];
    for (const SearchGraph::Arc &arc : graph.arcs[node]) {
      if (stamp[arc.other] == id)
        continue; // the parent's or a child's edge: the reply counts it
      int32_t theirs = choice[arc.other];
      for (int32_t k = 0; k < count; ++k)
        mine[k] += graph.arcCost(arc, k, theirs);
      before += graph.arcCost(arc, choice[node], theirs);
    }
    if (p == 0)
      break;
    int32_t parentAt = parentPosition[p];
    int32_t parent = order[parentAt];
    const SearchGraph::Arc &down = graph.arcs[parent][parentArc[p]];
    before += graph.arcCost(down, choice[parent], choice[node]);
    int32_t parentCount = graph.numStrategies(parent);
    std::vector<int32_t> &best = reply[p];
    best.assign(parentCount, 0);
    for (int32_t kp = 0; kp < parentCount; ++kp) {
      double least = std::numeric_limits<double>::infinity();
      for (int32_t k = 0; k < count; ++k) {
        double total = graph.arcCost(down, kp, k) + mine[k];
        if (total < least) {
          least = total;
          best[kp] = k;
        }
      }
      table[parentAt][kp] += least;
    }
  }
  const std::vector<double> &top = table[0];
  int32_t rootStrategy = std::min_element(top.begin(), top.end()) - top.begin();
  double after = top[rootStrategy];
  double tolerance = 1e-12 * std::max(std::fabs(before), graph.costScale);
  if (!(after < before - tolerance))
    return 0;
  choice[root] = rootStrategy;
  for (size_t p = 1; p < size; ++p)
    choice[order[p]] = reply[p][choice[order[parentPosition[p]]]];
  return before - after;
}

double TreeMoves::descend(std::vector<int32_t> &choice,
                          Clock::time_point deadline) {
  std::vector<int32_t> roots(graph.numNodes);
  std::iota(roots.begin(), roots.end(), 0);
  std::vector<char> covered(graph.numNodes);
  double gained = 0;
  double total = std::fabs(graph.costOf(choice));
  while (true) {
    std::shuffle(roots.begin(), roots.end(), rng);
    std::fill(covered.begin(), covered.end(), 0);
    double sweep = 0;
    for (int32_t root : roots) {
      if (covered[root])
        continue;
      if (Clock::now() >= deadline)
        return gained + sweep;
      sweep += move(choice, root, kMostTreeNodes);
      for (int32_t node : order)
        covered[node] = 1;
    }
    gained += sweep;
    // Sweeps that gain next to nothing end it (costs are doubles).
    if (sweep <= 1e-9 * total)
      return gained;
  }
}
