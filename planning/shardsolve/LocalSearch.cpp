//===- LocalSearch.cpp - Iterated local search under a limit ----*- C++ -*-===//
//
// Moves are scored incrementally over a node's incident edges; the memory
// check is one range-max query on the usage profile. Rounds of the iterated
// search are undone through a log of moves when they end worse.
//
//===----------------------------------------------------------------------===//

#include "planning/shardsolve/LocalSearch.h"

#include <algorithm>
#include <deque>
#include <limits>

using namespace tg::shardsolve;

LocalSearch::LocalSearch(const SearchGraph &graph, uint64_t seed)
    : graph(graph), rng(seed), profile(graph.numSegments),
      tolerance(1e-9 * graph.costScale) {
  marked.assign(graph.numNodes, 0);
  byStart.resize(graph.numNodes);
  for (int32_t i = 0; i < graph.numNodes; ++i)
    byStart[i] = i;
  std::stable_sort(byStart.begin(), byStart.end(), [&](int32_t a, int32_t b) {
    return graph.span[a].first < graph.span[b].first;
  });
}

void LocalSearch::reset(std::vector<int32_t> choice) {
  current = std::move(choice);
  profile = UsageProfile(graph.numSegments);
  totalCost = 0;
  forbidden = 0;
  for (int32_t i = 0; i < graph.numNodes; ++i) {
    totalCost += graph.cost[i][current[i]];
    profile.add(graph.span[i].first, graph.span[i].second,
                graph.usage[i][current[i]]);
  }
  for (const SearchGraph::PairCosts &pair : graph.edges) {
    double c = pair.costs[current[pair.u] * graph.numStrategies(pair.v) +
                          current[pair.v]];
    if (c >= kForbidden)
      ++forbidden;
    else
      totalCost += c;
  }
  log.clear();
}

MoveDelta LocalSearch::delta(int32_t node, int32_t strategy) const {
  int32_t old = current[node];
  MoveDelta result;
  result.cost = graph.cost[node][strategy] - graph.cost[node][old];
  for (const SearchGraph::Arc &arc : graph.arcs[node]) {
    int32_t theirs = current[arc.other];
    double before = graph.arcCost(arc, old, theirs);
    double after = graph.arcCost(arc, strategy, theirs);
    if (before >= kForbidden)
      --result.forbidden;
    else
      result.cost -= before;
    if (after >= kForbidden)
      ++result.forbidden;
    else
      result.cost += after;
  }
  return result;
}

bool LocalSearch::fits(int32_t node, int32_t strategy) const {
  if (!graph.limit)
    return true;
  int64_t grow = graph.usage[node][strategy] - graph.usage[node][current[node]];
  if (grow <= 0)
    return true;
  auto [first, last] = graph.span[node];
  return first == last || profile.max(first, last) + grow <= *graph.limit;
}

void LocalSearch::apply(int32_t node, int32_t strategy) {
  int32_t old = current[node];
  if (old == strategy)
    return;
  MoveDelta change = delta(node, strategy);
  totalCost += change.cost;
  forbidden += change.forbidden;
  profile.add(graph.span[node].first, graph.span[node].second,
              graph.usage[node][strategy] - graph.usage[node][old]);
  current[node] = strategy;
  if (logging)
    log.push_back({node, old});
}

void LocalSearch::undo(size_t mark) {
  bool wasLogging = logging;
  logging = false;
  while (log.size() > mark) {
    auto [node, old] = log.back();
    log.pop_back();
    apply(node, old);
  }
  logging = wasLogging;
}

void LocalSearch::descend(std::vector<int32_t> worklist) {
  std::vector<char> queued(graph.numNodes, 0);
  std::deque<int32_t> queue;
  for (int32_t node : worklist)
    if (!queued[node]) {
      queued[node] = 1;
      queue.push_back(node);
    }
  while (!queue.empty()) {
    int32_t node = queue.front();
    queue.pop_front();
    queued[node] = 0;
    int32_t best = -1;
    MoveDelta bestDelta;
    for (int32_t s = 0; s < graph.numStrategies(node); ++s) {
      if (s == current[node])
        continue;
      MoveDelta d = delta(node, s);
      bool improves = d.forbidden < bestDelta.forbidden ||
                      (d.forbidden == bestDelta.forbidden &&
                       d.cost < bestDelta.cost - tolerance);
      if (improves && better(d) && fits(node, s)) {
        best = s;
        bestDelta = d;
      }
    }
    if (best < 0)
      continue;
    apply(node, best);
    for (const SearchGraph::Arc &arc : graph.arcs[node])
      if (!queued[arc.other]) {
        queued[arc.other] = 1;
        queue.push_back(arc.other);
      }
    if (!queued[node]) {
      queued[node] = 1;
      queue.push_back(node);
    }
  }
}

bool LocalSearch::descendGroups(const TiedGroups &groups,
                                Clock::time_point deadline) {
  bool wasLogging = logging;
  logging = true;
  bool movedAny = false, moved = true;
  while (moved) {
    moved = false;
    for (int32_t g = 0; g < groups.numGroups(); ++g) {
      const std::vector<int32_t> &members = groups.members[g];
      if (members.size() < 2)
        continue; // single nodes are descend()'s
      if (g % 64 == 0 && Clock::now() >= deadline) {
        moved = false;
        break;
      }
      int32_t first = members[0];
      int32_t now = -1;
      for (int32_t k = 0; k < groups.numStrategies(g) && now < 0; ++k)
        if (groups.strategyOf[first][k] == current[first])
          now = k;
      double bestCost = totalCost - tolerance;
      int64_t forbiddenBefore = forbidden;
      int32_t best = -1;
      size_t mark = log.size();
      for (int32_t k = 0; k < groups.numStrategies(g); ++k) {
        if (k == now || !groups.alive[g][k])
          continue;
        for (int32_t node : members)
          apply(node, groups.strategyOf[node][k]);
        if (forbidden <= forbiddenBefore && fitsLimit() &&
            totalCost < bestCost) {
          best = k;
          bestCost = totalCost;
        }
        undo(mark);
      }
      if (best < 0)
        continue;
      for (int32_t node : members)
        apply(node, groups.strategyOf[node][best]);
      moved = movedAny = true;
    }
  }
  if (!wasLogging)
    log.clear();
  logging = wasLogging;
  return movedAny;
}

bool LocalSearch::repair() {
  if (!graph.limit)
    return true;
  struct Cut {
    int64_t forbidden;
    double ratio; // cost per byte saved
    int32_t node, strategy;
  };
  std::vector<Cut> cuts;
  while (profile.peak() > *graph.limit) {
    // All cuts at the peak segment, cheapest per byte first, until that
    // segment fits; then the next peak.
    int32_t segment = profile.peakSegment();
    cuts.clear();
    forEachLiveAt(segment, [&](int32_t node) {
      int64_t usage = graph.usage[node][current[node]];
      for (int32_t s = 0; s < graph.numStrategies(node); ++s) {
        int64_t saved = usage - graph.usage[node][s];
        if (saved <= 0)
          continue;
        MoveDelta d = delta(node, s);
        d.cost += price(node, s) - price(node, current[node]);
        cuts.push_back({d.forbidden, d.cost / saved, node, s});
      }
    });
    if (cuts.empty())
      return false;
    std::sort(cuts.begin(), cuts.end(), [](const Cut &a, const Cut &b) {
      return a.forbidden != b.forbidden ? a.forbidden < b.forbidden
                                        : a.ratio < b.ratio;
    });
    std::vector<int32_t> moved;
    for (const Cut &cut : cuts) {
      if (profile.max(segment, segment + 1) <= *graph.limit)
        break;
      if (marked[cut.node])
        continue;
      apply(cut.node, cut.strategy);
      marked[cut.node] = 1;
      moved.push_back(cut.node);
    }
    for (int32_t node : moved)
      marked[node] = 0;
  }
  return true;
}

bool LocalSearch::repairGroups(const TiedGroups &groups,
                               const SearchGraph &contracted) {
  if (!graph.limit)
    return true;
  std::vector<int32_t> byGroup = groups.contractChoice(current);
  // Per group with a member live at the peak: its slot in `atPeak`, the
  // usage there per group strategy.
  std::vector<int32_t> slot(groups.numGroups(), -1);
  std::vector<int32_t> live;
  std::vector<std::vector<int64_t>> atPeak;
  // A cut may raise another segment over the limit; each group moves at
  // most a few times before the repair gives up.
  int64_t budget = 4 * static_cast<int64_t>(groups.numGroups()) + 16;
  while (profile.peak() > *graph.limit) {
    if (--budget < 0)
      return false;
    int32_t segment = profile.peakSegment();
    live.clear();
    forEachLiveAt(segment, [&](int32_t node) {
      int32_t g = groups.groupOf[node];
      if (slot[g] < 0) {
        slot[g] = live.size();
        live.push_back(g);
        if (atPeak.size() < live.size())
          atPeak.resize(live.size());
        atPeak[slot[g]].assign(groups.numStrategies(g), 0);
      }
      std::vector<int64_t> &usage = atPeak[slot[g]];
      for (int32_t k = 0; k < groups.numStrategies(g); ++k)
        usage[k] += graph.usage[node][groups.strategyOf[node][k]];
    });
    double bestRatio = std::numeric_limits<double>::infinity();
    int32_t bestGroup = -1, bestStrategy = -1;
    for (int32_t g : live) {
      const std::vector<int64_t> &usage = atPeak[slot[g]];
      int32_t now = byGroup[g];
      for (int32_t k = 0; k < groups.numStrategies(g); ++k) {
        int64_t saved = usage[now] - usage[k];
        if (saved <= 0 || !groups.alive[g][k])
          continue;
        double change = contracted.cost[g][k] - contracted.cost[g][now];
        for (const SearchGraph::Arc &arc : contracted.arcs[g])
          change += contracted.arcCost(arc, k, byGroup[arc.other]) -
                    contracted.arcCost(arc, now, byGroup[arc.other]);
        if (change >= kForbidden / 2)
          continue;
        double ratio = change / saved;
        if (ratio < bestRatio) {
          bestRatio = ratio;
          bestGroup = g;
          bestStrategy = k;
        }
      }
    }
    for (int32_t g : live)
      slot[g] = -1;
    if (bestGroup < 0)
      return false;
    byGroup[bestGroup] = bestStrategy;
    for (int32_t node : groups.members[bestGroup])
      apply(node, groups.strategyOf[node][bestStrategy]);
  }
  return true;
}

bool LocalSearch::chainMove(int32_t node, int32_t strategy, size_t cap,
                            std::vector<int32_t> &moved) {
  size_t first = moved.size();
  apply(node, strategy);
  marked[node] = 1;
  moved.push_back(node);
  bool fits = true;
  for (size_t k = first; k < moved.size() && fits; ++k) {
    int32_t from = moved[k];
    for (const SearchGraph::Arc &arc : graph.arcs[from]) {
      int32_t other = arc.other;
      if (marked[other] ||
          graph.arcCost(arc, current[from], current[other]) < kForbidden)
        continue;
      if (moved.size() - first >= cap) {
        fits = false;
        break;
      }
      int32_t pick = current[other];
      MoveDelta best;
      for (int32_t s = 0; s < graph.numStrategies(other); ++s) {
        MoveDelta d = delta(other, s);
        d.cost += price(other, s) - price(other, current[other]);
        if (d.forbidden < best.forbidden ||
            (d.forbidden == best.forbidden && d.cost < best.cost)) {
          best = d;
          pick = s;
        }
      }
      apply(other, pick);
      marked[other] = 1;
      moved.push_back(other);
    }
  }
  for (size_t k = first; k < moved.size(); ++k)
    marked[moved[k]] = 0;
  return fits;
}

void LocalSearch::perturb(int32_t root, int32_t size,
                          std::vector<int32_t> &touched) {
  // A connected region around `root`, in breadth-first order.
  std::vector<int32_t> region{root};
  for (size_t k = 0; k < region.size() && (int32_t)region.size() < size; ++k)
    for (const SearchGraph::Arc &arc : graph.arcs[region[k]]) {
      if ((int32_t)region.size() >= size)
        break;
      if (std::find(region.begin(), region.end(), arc.other) == region.end())
        region.push_back(arc.other);
    }
  // Each picks its cheapest strategy (memory priced, limit ignored) given
  // its neighbours, sometimes a random one.
  std::uniform_real_distribution<double> coin(0, 1);
  for (int32_t node : region) {
    int32_t count = graph.numStrategies(node);
    int32_t pick = current[node];
    if (coin(rng) < 0.3) {
      pick = std::uniform_int_distribution<int32_t>(0, count - 1)(rng);
    } else {
      // Staying is a zero change; a strategy must beat it.
      MoveDelta bestDelta;
      for (int32_t s = 0; s < count; ++s) {
        MoveDelta d = delta(node, s);
        d.cost += price(node, s) - price(node, current[node]);
        if (d.forbidden < bestDelta.forbidden ||
            (d.forbidden == bestDelta.forbidden &&
             d.cost < bestDelta.cost - tolerance)) {
          pick = s;
          bestDelta = d;
        }
      }
    }
    apply(node, pick);
    touched.push_back(node);
    for (const SearchGraph::Arc &arc : graph.arcs[node])
      touched.push_back(arc.other);
  }
}

std::vector<int32_t> LocalSearch::iterate(Clock::time_point deadline,
                                          int64_t maxStall) {
  std::vector<int32_t> best;
  double bestCost = std::numeric_limits<double>::infinity();
  if (valid()) {
    best = current;
    bestCost = totalCost;
  }
  if (graph.numNodes == 0)
    return best;
  logging = true;
  int64_t stall = 0;
  std::vector<int32_t> touched;
  while (stall < maxStall && Clock::now() < deadline) {
    ++stall;
    log.clear();
    double before = totalCost;
    int64_t forbiddenBefore = forbidden;
    bool validBefore = valid();
    int32_t root =
        std::uniform_int_distribution<int32_t>(0, graph.numNodes - 1)(rng);
    touched.clear();
    if (rng() % 2) {
      int32_t size = std::uniform_int_distribution<int32_t>(1, 8)(rng);
      perturb(root, size, touched);
    } else {
      int32_t count = graph.numStrategies(root);
      int32_t to = std::uniform_int_distribution<int32_t>(0, count - 1)(rng);
      if (!chainMove(root, to, graph.numNodes, touched)) {
        undo(0);
        continue;
      }
      for (size_t k = 0, moved = touched.size(); k < moved; ++k)
        for (const SearchGraph::Arc &arc : graph.arcs[touched[k]])
          touched.push_back(arc.other);
    }
    std::vector<int32_t> repaired;
    if (!repair()) {
      undo(0);
      continue;
    }
    for (auto [node, old] : log)
      repaired.push_back(node);
    touched.insert(touched.end(), repaired.begin(), repaired.end());
    descend(touched);
    bool keep;
    if (!valid())
      keep = !validBefore && forbidden < forbiddenBefore;
    else
      keep = !validBefore || totalCost <= before + tolerance;
    if (!keep) {
      undo(0);
      continue;
    }
    if (valid() && totalCost < bestCost - tolerance) {
      best = current;
      bestCost = totalCost;
      stall = 0;
    }
  }
  logging = false;
  log.clear();
  return best;
}
