//===- MessagePassing.h - Messages for the priced problem -------*- C++ -*-===//
//
// Sequential tree-reweighted message passing (TRW-S, Kolmogorov 2006) for
// the problem without the memory limit (any prices already in the node
// costs), a pairwise min-sum problem over the graph. Nodes are visited in
// index order, forward then backward; each pass sends, along every edge to a
// later (earlier) node, the least over the sender's strategies of its
// reweighted costs plus the edge. A choice is read off in every forward
// pass: each node takes its best strategy given the choices before it and
// the messages from after it. On loopy graphs this reaches choices that
// single-node, tree and PBQP moves stop short of, and the messages carry
// over from one set of prices to the next, so a Lagrangian round starts
// where the last one ended.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PLANNING_SHARDSOLVE_MESSAGEPASSING_H
#define TGC_PLANNING_SHARDSOLVE_MESSAGEPASSING_H

#include "planning/shardsolve/SearchGraph.h"

#include <chrono>

namespace tg::shardsolve {

class MessagePassing {
public:
  using Clock = std::chrono::steady_clock;

  /// Messages for `graph`'s nodes and edges, all zero.
  explicit MessagePassing(const SearchGraph &graph);

  /// Up to `iterations` forward and backward passes over `graph` (the same
  /// nodes and edges as the constructor's, costs may differ), from the
  /// messages the last run left, until `deadline`. Returns the best choice
  /// read off a forward pass (by `graph`'s costs).
  std::vector<int32_t> run(const SearchGraph &graph, int iterations,
                           Clock::time_point deadline);
  /// Whether `graph` has the nodes and edges these messages were made for.
  bool fits(const SearchGraph &graph) const;

private:
  /// Sends from `node` along its arcs to later (`forward`) or earlier
  /// nodes; with `choice`, also picks the node's strategy there.
  void visit(const SearchGraph &graph, int32_t node, bool forward,
             std::vector<int32_t> *choice);
  /// The message along `arc` into the node whose arc it is, and out of it.
  double *incoming(const SearchGraph &graph, const SearchGraph::Arc &arc);
  double *outgoing(const SearchGraph &graph, const SearchGraph::Arc &arc);

  /// Per edge: the message to v (|S_v| entries), then the one to u.
  std::vector<size_t> offset;
  std::vector<double> messages;
  /// Per node: 1 / the larger of its neighbour counts before and after it.
  std::vector<double> weight;
  /// Per edge: its two ends (to tell whether a graph fits).
  std::vector<std::pair<int32_t, int32_t>> ends;
  std::vector<double> belief, reweighted;
};

} // namespace tg::shardsolve

#endif // TGC_PLANNING_SHARDSOLVE_MESSAGEPASSING_H
