//===- Solver.cpp - Solve the auto-sharding problem -------------*- C++ -*-===//
//
// The order of methods: shrink the problem (buildSearchGraph); when the
// integer program is small, let CBC solve it, and stop when CBC proves its
// answer optimal; otherwise start from the least-memory choice, repair it
// to the limit, and run the iterated local search until the time limit.
//
//===----------------------------------------------------------------------===//

#include "compiler/shardsolve/Solver.h"
#include "compiler/shardsolve/Ilp.h"
#include "compiler/shardsolve/LocalSearch.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace tg::shardsolve;

namespace {

/// Programs up to this many variables go to CBC first.
constexpr size_t kIlpVariables = 200000;

double secondsSince(LocalSearch::Clock::time_point start) {
  return std::chrono::duration<double>(LocalSearch::Clock::now() - start)
      .count();
}

/// The choice with the least usage per node (then the least cost).
std::vector<int32_t> leastMemoryChoice(const SearchGraph &graph) {
  std::vector<int32_t> choice(graph.numNodes, 0);
  for (int32_t i = 0; i < graph.numNodes; ++i)
    for (int32_t s = 1; s < graph.numStrategies(i); ++s) {
      int64_t usage = graph.usage[i][s], best = graph.usage[i][choice[i]];
      if (usage < best ||
          (usage == best && graph.cost[i][s] < graph.cost[i][choice[i]]))
        choice[i] = s;
    }
  return choice;
}

} // namespace

Solution tg::shardsolve::solve(const Problem &problem,
                               const SolveOptions &options) {
  auto start = LocalSearch::Clock::now();
  auto deadline =
      start + std::chrono::duration_cast<LocalSearch::Clock::duration>(
                  std::chrono::duration<double>(
                      std::max(options.timeLimitSeconds, 0.0)));
  auto note = [&](const llvm::Twine &message) {
    if (options.verbosity > 0)
      llvm::errs() << llvm::formatv("[{0:f1} s] ", secondsSince(start))
                   << message << "\n";
  };
  Solution solution;
  auto finish = [&](std::vector<int64_t> strategies, std::string method) {
    solution.strategies = std::move(strategies);
    solution.method = std::move(method);
    solution.evaluation = evaluate(problem, solution.strategies);
    solution.seconds = secondsSince(start);
    return solution;
  };
  if (llvm::Error error = verifyProblem(problem)) {
    solution.evaluation.why = llvm::toString(std::move(error));
    return solution;
  }
  SearchGraph graph = buildSearchGraph(problem);
  if (!graph.infeasible.empty()) {
    solution.evaluation.why = graph.infeasible;
    solution.method = "preprocessing";
    solution.seconds = secondsSince(start);
    return solution;
  }
  size_t strategies = 0;
  for (const auto &costs : graph.cost)
    strategies += costs.size();
  note(llvm::formatv("{0} nodes, {1} strategies kept, {2} edges after merging "
                     "and folding, {3} time segments",
                     graph.numNodes, strategies, graph.edges.size(),
                     graph.numSegments));

  std::vector<int32_t> seed;
  std::string seedMethod;
  size_t variables = ilpVariables(graph);
  if (!options.cbcPath.empty() && variables <= kIlpVariables) {
    double seconds = std::max(1.0, options.timeLimitSeconds * 0.5);
    note(llvm::formatv("ilp: {0} variables, cbc for at most {1} s", variables,
                       seconds));
    auto result = solveWithCbc(graph, options.cbcPath, seconds);
    if (!result) {
      note("ilp: " + llvm::toString(result.takeError()) +
           "; local search only");
    } else if (result->infeasible) {
      solution.evaluation.why = "no choice keeps the usage limit (cbc proved "
                                "the integer program infeasible)";
      solution.method = "ilp";
      solution.seconds = secondsSince(start);
      return solution;
    } else if (result->optimal) {
      solution.optimal = true;
      note("ilp: optimal");
      return finish(graph.expand(result->choice), "ilp (optimal)");
    } else if (!result->choice.empty()) {
      note("ilp: stopped with a solution; local search goes on from it");
      seed = std::move(result->choice);
      seedMethod = "ilp + local search";
    } else {
      note("ilp: stopped without a solution; local search only");
    }
  } else if (options.cbcPath.empty()) {
    note("ilp: off");
  } else {
    note(llvm::formatv("ilp: {0} variables is too many, local search only",
                       variables));
  }

  LocalSearch search(graph, options.seed);
  std::vector<int32_t> all(graph.numNodes);
  for (int32_t i = 0; i < graph.numNodes; ++i)
    all[i] = i;
  if (seed.empty()) {
    search.reset(leastMemoryChoice(graph));
    search.repair();
    search.descend(all);
    seedMethod = "local search";
  } else {
    search.reset(seed);
  }
  note(llvm::formatv("start: cost {0}, {1} forbidden pairs, peak {2}",
                     search.cost(), search.forbiddenPairs(), search.peak()));
  int64_t maxStall = std::max<int64_t>(5000, 200 * graph.numNodes);
  std::vector<int32_t> best = search.iterate(deadline, maxStall);
  if (best.empty()) {
    Solution failed = finish(graph.expand(search.choice()), seedMethod);
    if (failed.evaluation.valid) // cannot happen: iterate saw it
      return failed;
    failed.evaluation.why = "no valid choice found: " + failed.evaluation.why;
    return failed;
  }
  note(llvm::formatv("local search: cost {0}", search.cost()));
  return finish(graph.expand(best), seedMethod);
}
