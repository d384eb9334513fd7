//===- MinCut.cpp - tg-remat's choice as a minimum cut ----------*- C++ -*-===//
//
// The cut graph, for a value v computed by node p(v) and a node n:
//   X_v  "the backward has v"      Y_n  "n runs again"
//   source -> X_v, infinite, for v the backward reads   (must have it)
//   Y_n -> X_u, infinite, for u that n reads            (to run, needs u)
//   X_v -> Y_p(v), price * bytes(v)   (has v without running p(v): kept)
//   Y_n -> sink, FLOPs(n)             (runs again)
// An assignment is the source side of a cut: the infinite edges forbid what
// is not allowed, and the finite edges cut are exactly its cost. Dinic's
// algorithm finds the maximum flow; the source side of the residual graph
// is the smallest optimal assignment.
//
//===----------------------------------------------------------------------===//

#include "passes/remat/MinCut.h"

#include <cmath>
#include <limits>
#include <queue>

using namespace mlir;
using namespace mlir::tg;

namespace {

constexpr double kInfinite = std::numeric_limits<double>::infinity();

/// Maximum flow by Dinic's algorithm: shortest augmenting paths in phases.
class FlowGraph {
public:
  explicit FlowGraph(int numNodes) : first(numNodes, -1) {}

  void addEdge(int from, int to, double capacity) {
    if (capacity <= 0)
      return;
    // Crumbs that rounding leaves of a full edge are not capacity: below
    // a billionth of the edge's own (an infinite edge's flow is exact).
    double crumb = std::isinf(capacity) ? 0 : 1e-9 * capacity;
    edges.push_back({to, first[from], capacity, crumb});
    first[from] = edges.size() - 1;
    edges.push_back({from, first[to], 0, crumb});
    first[to] = edges.size() - 1;
  }

  void maxFlow(int source, int sink) {
    while (levelGraph(source, sink)) {
      next = first;
      while (push(source, sink, kInfinite) > 0) {
      }
    }
  }

  /// Nodes the source still reaches: the source side of a minimum cut.
  llvm::BitVector sourceSide(int source) const {
    llvm::BitVector seen(first.size());
    SmallVector<int> work{source};
    seen.set(source);
    while (!work.empty()) {
      int u = work.pop_back_val();
      for (int e = first[u]; e >= 0; e = edges[e].next)
        if (residual(e) && !seen.test(edges[e].to)) {
          seen.set(edges[e].to);
          work.push_back(edges[e].to);
        }
    }
    return seen;
  }

private:
  struct Edge {
    int to, next;
    double capacity, crumb;
  };
  SmallVector<Edge> edges;
  std::vector<int> first, next, level;

  bool residual(int e) const { return edges[e].capacity > edges[e].crumb; }

  bool levelGraph(int source, int sink) {
    level.assign(first.size(), -1);
    std::queue<int> queue;
    level[source] = 0;
    queue.push(source);
    while (!queue.empty()) {
      int u = queue.front();
      queue.pop();
      for (int e = first[u]; e >= 0; e = edges[e].next)
        if (residual(e) && level[edges[e].to] < 0) {
          level[edges[e].to] = level[u] + 1;
          queue.push(edges[e].to);
        }
    }
    return level[sink] >= 0;
  }

  double push(int u, int sink, double limit) {
    if (u == sink)
      return limit;
    for (int &e = next[u]; e >= 0; e = edges[e].next) {
      int v = edges[e].to;
      if (!residual(e) || level[v] != level[u] + 1)
        continue;
      double pushed = push(v, sink, std::min(limit, edges[e].capacity));
      if (pushed > 0) {
        edges[e].capacity -= pushed;
        edges[e ^ 1].capacity += pushed;
        return pushed;
      }
    }
    return 0;
  }
};

} // namespace

llvm::BitVector mlir::tg::recomputeAtPrice(const RematGraph &graph,
                                           double price) {
  int numValues = graph.values.size(), numNodes = graph.nodes.size();
  int source = numValues + numNodes, sink = source + 1;
  auto x = [](int v) { return v; };
  auto y = [&](int n) { return numValues + n; };
  FlowGraph flow(sink + 1);
  for (auto [v, value] : llvm::enumerate(graph.values)) {
    if (value.needed)
      flow.addEdge(source, x(v), kInfinite);
    flow.addEdge(x(v), y(value.node),
                 value.mayKeep ? price * value.bytes : kInfinite);
  }
  for (auto [n, node] : llvm::enumerate(graph.nodes)) {
    for (int u : node.operands)
      flow.addEdge(y(n), x(u), kInfinite);
    // One FLOP more per op: of two choices equal in FLOPs, the one that
    // runs fewer ops again (data movement counts no FLOPs).
    flow.addEdge(y(n), sink, node.mayRecompute ? node.flops + 1 : kInfinite);
  }
  flow.maxFlow(source, sink);
  llvm::BitVector side = flow.sourceSide(source);
  llvm::BitVector recompute(numNodes);
  for (int n = 0; n < numNodes; ++n)
    if (side.test(y(n)))
      recompute.set(n);
  return recompute;
}

llvm::BitVector mlir::tg::recomputeForBudget(const RematGraph &graph,
                                             int64_t budget) {
  llvm::BitVector none(graph.nodes.size());
  if (evaluate(graph, none).keptBytes <= budget)
    return none;
  if (!graph.layers.empty()) {
    int distinct = 0;
    return improveLocally(
        graph, budget,
        recomputeByLayers(graph, budget, layerFrontier, distinct));
  }
  // Above this price a byte kept costs more than running the whole forward
  // again: the choice keeps the least there is.
  double total = 1;
  for (const RematGraph::Node &node : graph.nodes)
    total += node.flops + 1;
  double hi = total, lo = 0;
  llvm::BitVector fits = recomputeAtPrice(graph, hi), over = none;
  // Every price's choice, for the layers to mix below.
  SmallVector<llvm::BitVector> seen{fits};
  if (evaluate(graph, fits).keptBytes > budget)
    return fits;
  // Bisection on the price, in its logarithm while far apart.
  for (int i = 0; i < 64 && hi - lo > 1e-12 * hi; ++i) {
    double mid = lo > 0 && hi / lo > 4  ? std::sqrt(lo * hi)
                 : lo == 0 && hi > 1e-9 ? hi / 64
                                        : (lo + hi) / 2;
    llvm::BitVector choice = recomputeAtPrice(graph, mid);
    if (llvm::find(seen, choice) == seen.end())
      seen.push_back(choice);
    if (evaluate(graph, choice).keptBytes <= budget) {
      hi = mid;
      fits = std::move(choice);
    } else {
      lo = mid;
      over = std::move(choice);
    }
  }

  // Between two prices the optimum mixes their choices: layers may take
  // different ones. Starting from the cheapest price that fits, move one
  // layer (or the ops outside layers) at a time to another price's choice
  // for that layer, the move that saves the most FLOPs per byte it adds
  // first, while it fits.
  RematCost best = evaluate(graph, fits);
  int numGroups = graph.layers.size() + 1;
  auto groupOf = [&](int n) {
    int layer = graph.nodes[n].layer;
    return layer < 0 ? numGroups - 1 : layer;
  };
  llvm::BitVector current = fits;
  while (true) {
    double pickRate = 0;
    llvm::BitVector pickChoice;
    RematCost pickCost;
    for (int g = 0; g < numGroups; ++g)
      for (const llvm::BitVector &other : seen) {
        llvm::BitVector trial = current;
        for (int n = 0, e = graph.nodes.size(); n < e; ++n)
          if (groupOf(n) == g)
            trial[n] = other.test(n);
        if (trial == current)
          continue;
        RematCost cost = evaluate(graph, trial);
        if (cost.keptBytes > budget || !cost.allowed ||
            cost.addedFlops >= best.addedFlops)
          continue;
        double rate = (best.addedFlops - cost.addedFlops) /
                      std::max<int64_t>(1, cost.keptBytes - best.keptBytes);
        if (pickChoice.empty() || rate > pickRate) {
          pickRate = rate;
          pickChoice = std::move(trial);
          pickCost = std::move(cost);
        }
      }
    if (pickChoice.empty())
      break;
    current = std::move(pickChoice);
    best = std::move(pickCost);
  }

  return improveLocally(graph, budget, std::move(current));
}

llvm::BitVector mlir::tg::improveLocally(const RematGraph &graph,
                                         int64_t budget,
                                         llvm::BitVector current) {
  RematCost best = evaluate(graph, current);
  if (best.keptBytes > budget)
    return current;
  int numGroups = graph.layers.size() + 1;
  auto groupOf = [&](int n) {
    int layer = graph.nodes[n].layer;
    return layer < 0 ? numGroups - 1 : layer;
  };
  // Local search: stop running one op again (its results then kept), or
  // that while running another op of its layer again for the bytes, where
  // it fits and adds fewer FLOPs; the best move first, until none helps.
  // Moves within a layer: what one layer recomputes reads only what its
  // own layer computes or keeps.
  SmallVector<SmallVector<int>> members(numGroups);
  for (int n = 0, e = graph.nodes.size(); n < e; ++n)
    if (graph.nodes[n].mayRecompute)
      members[groupOf(n)].push_back(n);
  for (int round = 0; round < 4 * (int)graph.nodes.size(); ++round) {
    llvm::BitVector moveChoice;
    RematCost moveCost = best;
    auto consider = [&](llvm::BitVector trial) {
      RematCost cost = evaluate(graph, trial);
      if (cost.keptBytes <= budget && cost.allowed &&
          cost.addedFlops < moveCost.addedFlops) {
        moveCost = std::move(cost);
        moveChoice = std::move(trial);
      }
    };
    for (const SmallVector<int> &group : members)
      for (int drop : group) {
        if (!best.recomputed.test(drop))
          continue;
        llvm::BitVector trial = current;
        trial.reset(drop);
        consider(trial);
        for (int add : group)
          if (!current.test(add)) {
            llvm::BitVector swap = trial;
            swap.set(add);
            consider(std::move(swap));
          }
      }
    if (moveChoice.empty())
      break;
    current = std::move(moveChoice);
    best = std::move(moveCost);
  }
  return current;
}

Frontier mlir::tg::hullFrontier(const RematGraph &graph) {
  // Prices from where keeping a byte costs more than the whole forward
  // down, halving; between two prices whose choices differ, bisection
  // finds the choices in between.
  double total = 1;
  for (const RematGraph::Node &node : graph.nodes)
    total += node.flops + 1;
  SmallVector<std::pair<double, llvm::BitVector>> byPrice;
  for (double price = total; price > total * 1e-15; price /= 2)
    byPrice.push_back({price, recomputeAtPrice(graph, price)});
  SmallVector<FrontierPoint> points;
  auto add = [&](const llvm::BitVector &choice) {
    RematCost cost = evaluate(graph, choice);
    if (cost.allowed)
      points.push_back({cost.keptBytes, cost.addedFlops, cost.recomputed});
  };
  for (size_t i = 0; i < byPrice.size(); ++i) {
    add(byPrice[i].second);
    if (i + 1 == byPrice.size() || byPrice[i].second == byPrice[i + 1].second)
      continue;
    // Bisection for the choices of the prices in between: an interval
    // whose ends choose differently may hold more.
    struct Interval {
      double lo, hi;
      llvm::BitVector atLo, atHi;
    };
    SmallVector<Interval> work{{byPrice[i + 1].first, byPrice[i].first,
                                byPrice[i + 1].second, byPrice[i].second}};
    for (int cuts = 0; !work.empty() && cuts < 64; ++cuts) {
      Interval in = work.pop_back_val();
      if (in.hi - in.lo <= 1e-9 * in.hi)
        continue;
      double mid = (in.lo + in.hi) / 2;
      llvm::BitVector choice = recomputeAtPrice(graph, mid);
      bool newChoice = choice != in.atLo && choice != in.atHi;
      if (newChoice)
        add(choice);
      if (choice != in.atLo)
        work.push_back({in.lo, mid, in.atLo, choice});
      if (choice != in.atHi)
        work.push_back({mid, in.hi, choice, in.atHi});
    }
  }
  return paretoFilter(std::move(points));
}

/// `start` with ops added to run again until it keeps at most `budget`
/// bytes (or nothing more frees bytes): each time an op with what it needs
/// that is not at hand, the one that alone gets there at the fewest FLOPs,
/// else the one that adds the fewest FLOPs per byte it frees.
static llvm::BitVector shrinkToBudget(const RematGraph &graph, int64_t budget,
                                      llvm::BitVector current) {
  RematCost cost = evaluate(graph, current);
  while (cost.keptBytes > budget) {
    int pick = -1, last = -1;
    double pickRate = 0;
    RematCost pickCost, lastCost;
    llvm::BitVector pickChoice, lastChoice;
    for (int n = 0, e = graph.nodes.size(); n < e; ++n) {
      if (current.test(n) || !graph.nodes[n].mayRecompute)
        continue;
      // n with what it needs that the backward does not have yet, run
      // again in turn (rather than kept), so that no value is newly kept.
      llvm::BitVector with = current;
      SmallVector<int> work{n};
      while (!work.empty()) {
        int m = work.pop_back_val();
        if (with.test(m) || !graph.nodes[m].mayRecompute)
          continue;
        with.set(m);
        for (int u : graph.nodes[m].operands)
          if (!cost.available.test(u))
            work.push_back(graph.values[u].node);
      }
      RematCost trial = evaluate(graph, with);
      int64_t freed = cost.keptBytes - trial.keptBytes;
      if (freed <= 0 || !trial.allowed)
        continue;
      if (trial.keptBytes <= budget) {
        if (last < 0 || trial.addedFlops < lastCost.addedFlops) {
          last = n;
          lastCost = trial;
          lastChoice = with;
        }
        continue;
      }
      double rate = (trial.addedFlops - cost.addedFlops) / freed;
      if (pick < 0 || rate < pickRate) {
        pick = n;
        pickRate = rate;
        pickCost = std::move(trial);
        pickChoice = with;
      }
    }
    if (last >= 0 && (pick < 0 || lastCost.addedFlops <= pickCost.addedFlops)) {
      pick = last;
      pickCost = std::move(lastCost);
      pickChoice = std::move(lastChoice);
    }
    if (pick < 0)
      break;
    current = std::move(pickChoice);
    cost = std::move(pickCost);
  }
  return current;
}

Frontier mlir::tg::layerFrontier(const RematGraph &graph) {
  Frontier hull = hullFrontier(graph);
  // Between two neighbours on the hull the frontier may bend below the
  // line that joins them (equal FLOPs per byte make ties the cut settles
  // all one way): from the smaller, local moves under a budget just below
  // the larger find a point, then just below that one, and so on down.
  SmallVector<FrontierPoint> points(hull.begin(), hull.end());
  constexpr int kPerGap = 64;
  for (size_t i = 0; i + 1 < hull.size(); ++i) {
    int64_t budget = hull[i].bytes - 1;
    for (int k = 0; k < kPerGap && budget > hull[i + 1].bytes; ++k) {
      // Two starts: the smaller neighbour, improved; the larger, cut down
      // to the budget at the fewest FLOPs per byte, then improved.
      RematCost cost =
          evaluate(graph, improveLocally(graph, budget, hull[i + 1].recompute));
      RematCost down = evaluate(
          graph,
          improveLocally(graph, budget,
                         shrinkToBudget(graph, budget, hull[i].recompute)));
      if (down.allowed && down.keptBytes <= budget &&
          down.addedFlops < cost.addedFlops)
        cost = std::move(down);
      if (!cost.allowed || cost.keptBytes > budget ||
          cost.keptBytes <= hull[i + 1].bytes)
        break;
      points.push_back({cost.keptBytes, cost.addedFlops, cost.recomputed});
      budget = cost.keptBytes - 1;
    }
  }
  return paretoFilter(std::move(points));
}
