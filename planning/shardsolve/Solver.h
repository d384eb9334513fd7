//===- Solver.h - Solve the auto-sharding problem ---------------*- C++ -*-===//
//
// solve() picks a strategy per node within a time limit: it shrinks the
// problem (forbidden and dominated strategies, parallel edges), finds a
// valid choice with heuristics (Lagrange multipliers on memory, the priced
// problem by PBQP reductions, message passing and tree moves; iterated
// local search), then solves small problems exactly
// with CBC, and improves larger ones with CBC on regions and local search.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PLANNING_SHARDSOLVE_SOLVER_H
#define TGC_PLANNING_SHARDSOLVE_SOLVER_H

#include "planning/shardsolve/Problem.h"

namespace tg::shardsolve {

/// A choice to start the search from (a standard plan's, or a user's).
struct Start {
  /// Names it in the method of a solution that grew from it.
  std::string name;
  /// One original strategy index per node.
  std::vector<int64_t> strategies;
};

struct SolveOptions {
  double timeLimitSeconds = 60;
  uint64_t seed = 0;
  /// Debian's coinor-cbc binary; "" = no ILP.
  std::string cbcPath = "cbc";
  /// >0: progress lines on stderr.
  int verbosity = 0;
  /// Choices the search also starts from, after the least-memory one: the
  /// solution is no worse than the best of them that fits (after repair).
  std::vector<Start> starts;
};

struct Solution {
  std::vector<int64_t> strategies;
  /// Of `strategies`.
  Evaluation evaluation;
  /// Which method found it, e.g. "ilp (optimal)", "local search".
  std::string method;
  double seconds = 0;
  bool optimal = false;
  /// Why CBC could not be used, when it failed to run or to answer (the
  /// search then went on without it); empty otherwise.
  std::string cbcFailure;
};

/// Best solution found within the time limit; deterministic for a given seed
/// except where the time limit cuts a search short (a search runs for as
/// many rounds as the clock allows, and CBC stops at its time limit), so on a
/// slower or busier machine a run may end with a different, usually worse,
/// solution. When no valid solution is found, evaluation.valid is false and
/// `why` says why.
Solution solve(const Problem &problem, const SolveOptions &options);

/// Writes the JSON list of strategy indices that evaluate.py reads.
llvm::Error writeSolution(const Solution &solution, llvm::StringRef path);

/// Reads such a list, of `numNodes` indices; errors name the file (an index
/// out of a node's range is evaluate()'s to find).
llvm::Expected<std::vector<int64_t>> readSolution(llvm::StringRef path,
                                                  size_t numNodes);

} // namespace tg::shardsolve

#endif // TGC_PLANNING_SHARDSOLVE_SOLVER_H
