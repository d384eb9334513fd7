//===- Ilp.h - The problem as an integer program for CBC --------*- C++ -*-===//
//
// Exact solving of a (small) search graph: binaries x[i,s] pick a strategy
// per node, continuous y[e,a,b] linearise each edge's cost (their rows sum
// to x[u,a], their columns to x[v,b]), and one memory row per time segment
// where the live set can peak. CBC (Debian's coinor-cbc) solves it.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PLANNING_SHARDSOLVE_ILP_H
#define TGC_PLANNING_SHARDSOLVE_ILP_H

#include "planning/shardsolve/SearchGraph.h"

#include <limits>

namespace tg::shardsolve {

struct IlpResult {
  /// One kept strategy per node; empty when CBC found none.
  std::vector<int32_t> choice;
  /// CBC proved `choice` optimal.
  bool optimal = false;
  /// CBC proved that no choice fits.
  bool infeasible = false;
};

/// The size of the program: its variables plus the terms of its memory rows
/// (the rows are dense where many groups are live, and CBC slows with them).
/// Counting stops a little past `countUpTo`.
size_t ilpSize(const SearchGraph &graph,
               size_t countUpTo = std::numeric_limits<size_t>::max());

/// Runs `cbcPath` on the program with a time limit, from `start` (a choice
/// CBC begins with, when given); an error when CBC is missing, fails or
/// writes no solution file.
llvm::Expected<IlpResult> solveWithCbc(const SearchGraph &graph,
                                       llvm::StringRef cbcPath, double seconds,
                                       llvm::ArrayRef<int32_t> start = {});

/// Re-solves the nodes of `region` with every other node fixed as in
/// `choice` (which fits the limit): edges to fixed nodes become node costs
/// and each memory row keeps what the fixed nodes leave. The result's choice
/// is all of `choice` with the region's strategies replaced.
llvm::Expected<IlpResult> solveRegionWithCbc(const SearchGraph &graph,
                                             llvm::ArrayRef<int32_t> choice,
                                             llvm::ArrayRef<int32_t> region,
                                             llvm::StringRef cbcPath,
                                             double seconds);

} // namespace tg::shardsolve

#endif // TGC_PLANNING_SHARDSOLVE_ILP_H
