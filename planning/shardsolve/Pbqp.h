//===- Pbqp.h - Solve without the memory limit ------------------*- C++ -*-===//
//
// Without the memory limit the problem is PBQP (partitioned boolean
// quadratic programming). solvePbqp() removes nodes one by one: degree 0
// (R0) and 1 (R1: fold into the neighbour's costs) and 2 (R2: fold into an
// edge between the two neighbours) exactly; when every node left has a
// higher degree, the one with the most neighbours picks its locally best
// strategy (RN, a heuristic) and is removed with its edges folded into its
// neighbours. Back-propagation then picks the reduced nodes' strategies in
// reverse order. Chains and trees, most of a training graph, reduce exactly.
// solvePbqpWithCore() hands the nodes left for RN (the core) to a solver of
// the caller's instead, all at once; the Lagrangian rounds use message
// passing there. Prices on memory enter through the node costs
// (contractGroups() in TiedGroups.h).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PLANNING_SHARDSOLVE_PBQP_H
#define TGC_PLANNING_SHARDSOLVE_PBQP_H

#include "planning/shardsolve/SearchGraph.h"

#include <functional>

namespace tg::shardsolve {

/// A choice of kept strategies minimising node and edge costs, ignoring
/// the memory limit; exact when no RN step was needed.
std::vector<int32_t> solvePbqp(const SearchGraph &graph);

/// The same with the core (the nodes left when no R0/R1/R2 applies, with
/// the costs and edges the reductions folded into them) chosen together by
/// `solveCore` instead of node by node by RN.
std::vector<int32_t> solvePbqpWithCore(
    const SearchGraph &graph,
    std::function<std::vector<int32_t>(const SearchGraph &)> solveCore);

} // namespace tg::shardsolve

#endif // TGC_PLANNING_SHARDSOLVE_PBQP_H
