//===- Frontier.h - Layers solved once, then combined -----------*- C++ -*-===//
//
// What leaves a layer is kept (RematGraph), so each layer's choice is its
// own and the whole step's problem is one per layer (and one for the ops
// outside layers), coupled only by the budget. Each distinct layer (by the
// ops it holds, their attributes and types: GPT-2's twelve are one) is
// solved once, for its frontier: the least FLOPs it adds for each number
// of bytes it keeps. The frontiers are then combined, layer after layer,
// into the step's (the sums, without the dominated ones), and the budget
// picks the point.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_REMAT_FRONTIER_H
#define TGC_PASSES_REMAT_FRONTIER_H

#include "passes/remat/RematGraph.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::tg {

/// One choice of a layer: what it keeps and adds, and its ops to run again
/// (a bit per node of the layer's graph).
struct FrontierPoint {
  int64_t bytes;
  double flops;
  llvm::BitVector recompute;
};

/// A layer's choices, none dominated: bytes falling, FLOPs rising.
using Frontier = SmallVector<FrontierPoint>;

/// What makes two groups of nodes (two layers) the same problem: each op's
/// name, attributes (but tg.layer) and types, and where its operands come from
/// (an earlier node of the group, by number, or from outside).
std::string layerSignature(const RematGraph &graph, ArrayRef<int> nodes);

/// Each layer's nodes, in the graph's order (graph.layers' order).
SmallVector<SmallVector<int>> nodesByLayer(const RematGraph &graph);

/// How many of the graph's layers are distinct problems by layerSignature
/// (GPT-2's twelve blocks are one).
int countDistinctLayers(const RematGraph &graph);

/// The choices of `points` that no other beats in both bytes and FLOPs.
Frontier paretoFilter(SmallVector<FrontierPoint> points);

/// The problem of the nodes `nodes` (indices into `graph`, in order) alone:
/// what they read from other nodes is at hand.
RematGraph subgraph(const RematGraph &graph, ArrayRef<int> nodes);

/// The ops to run again for at most `budget` kept bytes, layer by layer:
/// `frontierOf` gives a layer's frontier; layers with the same ops ask it
/// once. Sets `distinctLayers` to the number asked. When the least the
/// layers keep together exceeds the budget, the choice that keeps least.
llvm::BitVector
recomputeByLayers(const RematGraph &graph, int64_t budget,
                  llvm::function_ref<Frontier(const RematGraph &)> frontierOf,
                  int &distinctLayers);

} // namespace mlir::tg

#endif // TGC_PASSES_REMAT_FRONTIER_H
