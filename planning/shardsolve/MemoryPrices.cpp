//===- MemoryPrices.cpp - Lagrange multipliers of memory --------*- C++ -*-===//
//
// Loads per segment come from a difference array over segments; node prices
// from prefix sums of the segment prices.
//
//===----------------------------------------------------------------------===//

#include "planning/shardsolve/MemoryPrices.h"

#include <algorithm>

using namespace tg::shardsolve;

MemoryPrices::MemoryPrices(const SearchGraph &graph)
    : graph(graph), segmentPrices(graph.numSegments, 0.0) {}

std::vector<double> MemoryPrices::nodePrices() const {
  std::vector<double> prefix(graph.numSegments + 1, 0.0);
  for (int32_t t = 0; t < graph.numSegments; ++t)
    prefix[t + 1] = prefix[t] + segmentPrices[t];
  std::vector<double> prices(graph.numNodes);
  for (int32_t i = 0; i < graph.numNodes; ++i)
    prices[i] = prefix[graph.span[i].second] - prefix[graph.span[i].first];
  return prices;
}

std::vector<int64_t> MemoryPrices::loads(llvm::ArrayRef<int32_t> choice) const {
  std::vector<int64_t> load(graph.numSegments + 1, 0);
  for (int32_t i = 0; i < graph.numNodes; ++i) {
    int64_t usage = graph.usage[i][choice[i]];
    load[graph.span[i].first] += usage;
    load[graph.span[i].second] -= usage;
  }
  for (int32_t t = 1; t <= graph.numSegments; ++t)
    load[t] += load[t - 1];
  load.pop_back();
  return load;
}

double MemoryPrices::dualValue(llvm::ArrayRef<int32_t> choice) const {
  std::vector<double> prices = nodePrices();
  double value = 0;
  for (int32_t i = 0; i < graph.numNodes; ++i)
    value += graph.cost[i][choice[i]] + prices[i] * graph.usage[i][choice[i]];
  for (const SearchGraph::PairCosts &pair : graph.edges)
    value += pair.costs[choice[pair.u] * graph.numStrategies(pair.v) +
                        choice[pair.v]];
  if (graph.limit)
    for (double price : segmentPrices)
      value -= price * static_cast<double>(*graph.limit);
  return value;
}

bool MemoryPrices::step(llvm::ArrayRef<int32_t> choice, double target,
                        double dual, double scale) {
  if (!graph.limit)
    return false;
  std::vector<int64_t> load = loads(choice);
  std::vector<double> gradient(graph.numSegments);
  double norm = 0;
  for (int32_t t = 0; t < graph.numSegments; ++t) {
    double g = static_cast<double>(load[t] - *graph.limit);
    if (segmentPrices[t] <= 0 && g < 0)
      g = 0; // the price stays at zero
    gradient[t] = g;
    norm += g * g;
  }
  if (norm == 0)
    return false;
  double length = scale * std::max(target - dual, 0.0) / norm;
  for (int32_t t = 0; t < graph.numSegments; ++t)
    segmentPrices[t] = std::max(0.0, segmentPrices[t] + length * gradient[t]);
  return true;
}

bool MemoryPrices::adapt(llvm::ArrayRef<int32_t> choice, double raise,
                         double lower) {
  if (!graph.limit)
    return true;
  std::vector<int64_t> load = loads(choice);
  double sum = 0;
  int64_t positive = 0;
  for (double price : segmentPrices)
    if (price > 0) {
      sum += price;
      ++positive;
    }
  // With no price yet, a typical cost per byte of the whole limit.
  double floor = positive
                     ? sum / positive
                     : graph.costScale / std::max<double>(1.0, *graph.limit);
  // A price past which the whole limit would cost kForbidden / 1000 is
  // past any real trade-off; raising further would only overflow when no
  // priced choice fits.
  double ceiling = kForbidden / 1000 / std::max<double>(1.0, *graph.limit);
  bool fits = true;
  for (int32_t t = 0; t < graph.numSegments; ++t)
    if (load[t] > *graph.limit) {
      fits = false;
      segmentPrices[t] =
          std::min(std::max(segmentPrices[t], floor) * raise, ceiling);
    }
  if (fits)
    for (double &price : segmentPrices)
      price *= lower;
  return fits;
}
