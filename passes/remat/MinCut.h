//===- MinCut.h - tg-remat's choice as a minimum cut ------------*- C++ -*-===//
//
// For a price on kept bytes, the choice of ops to run again that minimizes
// added FLOPs + price * kept bytes is a minimum cut (every constraint is an
// implication, every cost a pairwise term that a cut can charge), so it is
// found exactly by a maximum flow. Under a budget on kept bytes the best
// price is found by bisection; its choice is optimal for the bytes it keeps,
// and the slack to the budget is spent layer by layer on the choice of the
// next lower price.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_REMAT_MINCUT_H
#define TGC_PASSES_REMAT_MINCUT_H

#include "passes/remat/Frontier.h"

namespace mlir::tg {

/// The ops to run again at `price` FLOPs per kept byte (a bit per node).
llvm::BitVector recomputeAtPrice(const RematGraph &graph, double price);

/// Every choice some price makes optimal (the lower convex hull of the
/// graph's bytes-FLOPs frontier), none dominated.
Frontier hullFrontier(const RematGraph &graph);

/// The hull and, between each two neighbours on it, what improveLocally
/// finds from the smaller under budgets in between: the frontier the
/// min-cut solver gives each distinct layer.
Frontier layerFrontier(const RematGraph &graph);

/// `start` improved by local moves while it keeps at most `budget` bytes:
/// stop running one op again, or that and run another of its layer again,
/// the move that saves the most FLOPs first.
llvm::BitVector improveLocally(const RematGraph &graph, int64_t budget,
                               llvm::BitVector start);

/// The ops to run again so that at most `budget` bytes are kept at the
/// least added FLOPs this method finds: layer by layer (Frontier.h) on the
/// hull of each, or on a graph without layers bisection on the price and
/// the mix of the two nearest prices' choices; then improveLocally. When
/// no choice keeps that little, the choice that keeps the least.
llvm::BitVector recomputeForBudget(const RematGraph &graph, int64_t budget);

} // namespace mlir::tg

#endif // TGC_PASSES_REMAT_MINCUT_H
