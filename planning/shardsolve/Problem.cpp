//===- Problem.cpp - Check and score an auto-sharding problem ---*- C++ -*-===//
//
// verifyProblem() checks that the vectors of a problem fit one another;
// evaluate() scores a choice with the contest's semantics (evaluate.py), so
// the solver, the CLI and the tests agree with the contest's scorer.
//
//===----------------------------------------------------------------------===//

#include "planning/shardsolve/Problem.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace tg::shardsolve;

static llvm::Error shapeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error tg::shardsolve::verifyProblem(const Problem &problem) {
  size_t n = problem.numNodes();
  if (problem.intervals.size() != n)
    return shapeError(llvm::formatv("{0} intervals for {1} nodes",
                                    problem.intervals.size(), n));
  if (problem.usages.size() != n)
    return shapeError(llvm::formatv("{0} usage lists for {1} nodes",
                                    problem.usages.size(), n));
  for (size_t i = 0; i < n; ++i) {
    if (problem.nodeCosts[i].empty())
      return shapeError(llvm::formatv("node {0} has no strategy", i));
    if (problem.usages[i].size() != problem.nodeCosts[i].size())
      return shapeError(llvm::formatv("node {0} has {1} costs but {2} usages",
                                      i, problem.nodeCosts[i].size(),
                                      problem.usages[i].size()));
    auto [start, end] = problem.intervals[i];
    if (start < 0 || end < start)
      return shapeError(
          llvm::formatv("node {0} has interval [{1}, {2})", i, start, end));
  }
  for (size_t k = 0; k < problem.edges.size(); ++k) {
    const Edge &edge = problem.edges[k];
    for (int64_t node : {edge.u, edge.v})
      if (node < 0 || node >= static_cast<int64_t>(n))
        return shapeError(llvm::formatv(
            "edge {0} names node {1}, but there are {2} nodes", k, node, n));
    size_t expected =
        problem.nodeCosts[edge.u].size() * problem.nodeCosts[edge.v].size();
    if (edge.costs.size() != expected)
      return shapeError(llvm::formatv(
          "edge {0} ({1} -> {2}) has {3} costs, expected {4} x {5} = {6}", k,
          edge.u, edge.v, edge.costs.size(), problem.nodeCosts[edge.u].size(),
          problem.nodeCosts[edge.v].size(), expected));
  }
  if (problem.usageLimit && *problem.usageLimit < 0)
    return shapeError(
        llvm::formatv("usage limit {0} is negative", *problem.usageLimit));
  return llvm::Error::success();
}

Evaluation tg::shardsolve::evaluate(const Problem &problem,
                                    llvm::ArrayRef<int64_t> strategies) {
  Evaluation result;
  size_t n = problem.numNodes();
  if (strategies.size() != n) {
    result.why =
        llvm::formatv("solution has {0} entries, the problem {1} nodes",
                      strategies.size(), n);
    return result;
  }
  // (time, usage change) at every live interval's ends.
  std::vector<std::pair<int64_t, int64_t>> changes;
  for (size_t i = 0; i < n; ++i) {
    int64_t s = strategies[i];
    int64_t count = problem.nodeCosts[i].size();
    if (s < 0 || s >= count) {
      result.why = llvm::formatv("node {0}: strategy {1} out of range 0..{2}",
                                 i, s, count - 1);
      return result;
    }
    double cost = problem.nodeCosts[i][s];
    if (cost >= kForbidden) {
      result.why = llvm::formatv("node {0}: strategy {1} is forbidden", i, s);
      return result;
    }
    result.cost += cost;
    auto [start, end] = problem.intervals[i];
    if (end > start) {
      changes.push_back({start, problem.usages[i][s]});
      changes.push_back({end, -problem.usages[i][s]});
    }
  }
  for (size_t k = 0; k < problem.edges.size(); ++k) {
    const Edge &edge = problem.edges[k];
    int64_t su = strategies[edge.u], sv = strategies[edge.v];
    double cost = edge.costs[su * problem.nodeCosts[edge.v].size() + sv];
    if (cost >= kForbidden) {
      result.why =
          llvm::formatv("edge {0} ({1}->{2}): forbidden pair ({3}, {4})", k,
                        edge.u, edge.v, su, sv);
      return result;
    }
    result.cost += cost;
  }
  std::sort(changes.begin(), changes.end());
  int64_t live = 0;
  for (size_t k = 0; k < changes.size(); ++k) {
    live += changes[k].second;
    // Every change at one time step applies before that step is measured.
    if (k + 1 < changes.size() && changes[k + 1].first == changes[k].first)
      continue;
    if (problem.usageLimit && live > *problem.usageLimit && result.why.empty())
      result.why = llvm::formatv("usage {0} exceeds the limit {1} at time {2}",
                                 live, *problem.usageLimit, changes[k].first);
    result.peakUsage = std::max(result.peakUsage, live);
  }
  result.valid = result.why.empty();
  return result;
}
