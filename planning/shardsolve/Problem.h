//===- Problem.h - The auto-sharding problem --------------------*- C++ -*-===//
//
// The problem tg-auto-shard hands to the solver, in the form of the
// ASPLOS/EuroSys 2025 IOPDDL contest: pick one strategy per node so that the
// node costs plus the edge (resharding) costs are least while the memory
// live at every time step stays under a limit. evaluate() scores a choice
// exactly as the contest's evaluate.py does.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PLANNING_SHARDSOLVE_PROBLEM_H
#define TGC_PLANNING_SHARDSOLVE_PROBLEM_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tg::shardsolve {

/// Costs >= this are forbidden choices.
constexpr double kForbidden = 1e18;

/// A resharding cost between the strategies of two nodes.
struct Edge {
  int64_t u, v;
  /// |S_u| x |S_v|, row-major: costs[s_u * |S_v| + s_v].
  std::vector<double> costs;
};

struct Problem {
  std::string name;
  /// Per node, the half-open interval [start, end) of time steps where the
  /// node's memory is live; empty when end <= start.
  std::vector<std::pair<int64_t, int64_t>> intervals;
  /// Per node, per strategy.
  std::vector<std::vector<double>> nodeCosts;
  /// Per node, per strategy: memory added at each live time step.
  std::vector<std::vector<int64_t>> usages;
  std::vector<Edge> edges;
  /// The most memory live at any one time step; none = unlimited.
  std::optional<int64_t> usageLimit;
  size_t numNodes() const { return nodeCosts.size(); }
};

/// Checks shapes (usages/intervals per node, edge matrix sizes, node ids in
/// range, >= 1 strategy).
llvm::Error verifyProblem(const Problem &problem);

/// Reads the contest's JSON format, plain or gzip'd (.json.gz); errors name
/// the file and the JSON path.
llvm::Expected<Problem> readProblem(llvm::StringRef path);

/// Writes the contest's JSON format (gzip'd when `path` ends in .gz).
llvm::Error writeProblem(const Problem &problem, llvm::StringRef path);

struct Evaluation {
  bool valid = false;
  /// Node plus edge costs of the chosen strategies.
  double cost = 0;
  /// The most memory live at one time step.
  int64_t peakUsage = 0;
  /// Why the choice is invalid; empty when it is valid.
  std::string why;
};

/// Scores one strategy per node with evaluate.py's semantics: invalid when the
/// list has the wrong length, an index is out of range, a chosen node or edge
/// cost is forbidden, or the usage limit is exceeded at some time step.
Evaluation evaluate(const Problem &problem, llvm::ArrayRef<int64_t> strategies);

} // namespace tg::shardsolve

#endif // TGC_PLANNING_SHARDSOLVE_PROBLEM_H
