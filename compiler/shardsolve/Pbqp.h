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
//
//===----------------------------------------------------------------------===//

#ifndef TGC_COMPILER_SHARDSOLVE_PBQP_H
#define TGC_COMPILER_SHARDSOLVE_PBQP_H

#include "compiler/shardsolve/SearchGraph.h"
#include "compiler/shardsolve/TiedGroups.h"

namespace tg::shardsolve {

/// A choice of kept strategies minimising node costs (plus `pricePerByte[i]`
/// times the usage of node i's strategy, when given) and edge costs,
/// ignoring the memory limit; exact when no RN step was needed.
std::vector<int32_t> solvePbqp(const SearchGraph &graph,
                               llvm::ArrayRef<double> pricePerByte = {});

/// The same over tied groups: each group of `groups` (TiedGroups.h)
/// contracted into one node whose strategies are the group's, its members'
/// costs and the edges inside it summed into the group's costs, and the
/// edges between groups summed per pair. A stack of identical layers tied
/// together reduces as one layer does, where node by node it would take RN
/// steps against the ties' forbidden pairs. Returns a choice per node.
std::vector<int32_t>
solvePbqpOverGroups(const SearchGraph &graph, const TiedGroups &groups,
                    llvm::ArrayRef<double> pricePerByte = {});

} // namespace tg::shardsolve

#endif // TGC_COMPILER_SHARDSOLVE_PBQP_H
