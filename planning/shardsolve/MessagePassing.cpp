//===- MessagePassing.cpp - Messages for the priced problem -----*- C++ -*-===//
//
// Messages are kept normalised (least entry zero), so forbidden costs
// (kForbidden) stay apart from allowed ones without overflowing.
//
//===----------------------------------------------------------------------===//

#include "planning/shardsolve/MessagePassing.h"

#include <algorithm>
#include <limits>

using namespace tg::shardsolve;

MessagePassing::MessagePassing(const SearchGraph &graph)
    : weight(graph.numNodes, 1.0) {
  size_t total = 0;
  for (const SearchGraph::PairCosts &pair : graph.edges) {
    offset.push_back(total);
    ends.push_back({pair.u, pair.v});
    total += graph.numStrategies(pair.u) + graph.numStrategies(pair.v);
  }
  messages.assign(total, 0.0);
  for (int32_t i = 0; i < graph.numNodes; ++i) {
    int32_t before = 0, after = 0;
    for (const SearchGraph::Arc &arc : graph.arcs[i])
      (arc.other < i ? before : after) += 1;
    weight[i] = 1.0 / std::max({before, after, 1});
  }
}

bool MessagePassing::fits(const SearchGraph &graph) const {
  if (graph.numNodes != static_cast<int32_t>(weight.size()) ||
      graph.edges.size() != ends.size())
    return false;
  for (size_t e = 0; e < ends.size(); ++e)
    if (ends[e] != std::make_pair(graph.edges[e].u, graph.edges[e].v) ||
        offset[e] + graph.numStrategies(graph.edges[e].u) +
                graph.numStrategies(graph.edges[e].v) !=
            (e + 1 < ends.size() ? offset[e + 1] : messages.size()))
      return false;
  return true;
}

double *MessagePassing::incoming(const SearchGraph &graph,
                                 const SearchGraph::Arc &arc) {
  const SearchGraph::PairCosts &pair = graph.edges[arc.edge];
  size_t at = offset[arc.edge];
  // This node is u: the message to u sits after the one to v.
  return &messages[arc.isU ? at + graph.numStrategies(pair.v) : at];
}

double *MessagePassing::outgoing(const SearchGraph &graph,
                                 const SearchGraph::Arc &arc) {
  const SearchGraph::PairCosts &pair = graph.edges[arc.edge];
  size_t at = offset[arc.edge];
  return &messages[arc.isU ? at : at + graph.numStrategies(pair.v)];
}

void MessagePassing::visit(const SearchGraph &graph, int32_t node, bool forward,
                           std::vector<int32_t> *choice) {
  int32_t count = graph.numStrategies(node);
  belief.assign(graph.cost[node].begin(), graph.cost[node].end());
  for (const SearchGraph::Arc &arc : graph.arcs[node]) {
    const double *in = incoming(graph, arc);
    for (int32_t k = 0; k < count; ++k)
      belief[k] += in[k];
  }
  if (choice) {
    // The node's best given the choices before it and the messages from
    // after it.
    double best = std::numeric_limits<double>::infinity();
    int32_t pick = 0;
    for (int32_t k = 0; k < count; ++k) {
      double total = graph.cost[node][k];
      for (const SearchGraph::Arc &arc : graph.arcs[node])
        total += arc.other < node ? graph.arcCost(arc, k, (*choice)[arc.other])
                                  : incoming(graph, arc)[k];
      if (total < best) {
        best = total;
        pick = k;
      }
    }
    (*choice)[node] = pick;
  }
  reweighted.resize(count);
  for (const SearchGraph::Arc &arc : graph.arcs[node]) {
    if ((arc.other > node) != forward)
      continue;
    const double *in = incoming(graph, arc);
    for (int32_t k = 0; k < count; ++k)
      reweighted[k] = weight[node] * belief[k] - in[k];
    double *out = outgoing(graph, arc);
    int32_t theirs = graph.numStrategies(arc.other);
    double least = std::numeric_limits<double>::infinity();
    for (int32_t t = 0; t < theirs; ++t) {
      double best = std::numeric_limits<double>::infinity();
      for (int32_t k = 0; k < count; ++k)
        best = std::min(best, reweighted[k] + graph.arcCost(arc, k, t));
      out[t] = best;
      least = std::min(least, best);
    }
    for (int32_t t = 0; t < theirs; ++t)
      out[t] -= least;
  }
}

std::vector<int32_t> MessagePassing::run(const SearchGraph &graph,
                                         int iterations,
                                         Clock::time_point deadline) {
  std::vector<int32_t> choice(graph.numNodes, 0), best;
  double bestCost = std::numeric_limits<double>::infinity();
  for (int iteration = 0; iteration < iterations; ++iteration) {
    if (iteration > 0 && Clock::now() >= deadline)
      break;
    for (int32_t i = 0; i < graph.numNodes; ++i)
      visit(graph, i, /*forward=*/true, &choice);
    double total = graph.costOf(choice);
    if (best.empty() || total < bestCost) {
      bestCost = total;
      best = choice;
    }
    for (int32_t i = graph.numNodes; i-- > 0;)
      visit(graph, i, /*forward=*/false, nullptr);
  }
  return best;
}
