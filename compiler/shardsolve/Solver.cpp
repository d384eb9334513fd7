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
#include "compiler/shardsolve/MemoryPrices.h"
#include "compiler/shardsolve/Pbqp.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

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

/// Large neighbourhood search: CBC re-solves connected regions around
/// random nodes with the rest fixed, while the time lasts. A region grows
/// while CBC proves its optimum quickly and shrinks when CBC runs out of
/// time.
template <typename Note>
void improveRegions(const SearchGraph &graph, LocalSearch &search,
                    const SolveOptions &options,
                    LocalSearch::Clock::time_point deadline, Note note) {
  std::mt19937_64 rng(options.seed ^ 0x9e3779b97f4a7c15ULL);
  double size = 150, perRegion = std::max(2.0, options.timeLimitSeconds / 40);
  // Groups of nodes tied by forbidden pairs: a region takes or leaves each
  // whole, or its fixed boundary would pin it to its current strategies.
  std::vector<int32_t> parent(graph.numNodes);
  for (int32_t i = 0; i < graph.numNodes; ++i)
    parent[i] = i;
  auto root = [&](int32_t i) {
    while (parent[i] != i)
      i = parent[i] = parent[parent[i]];
    return i;
  };
  for (const SearchGraph::PairCosts &pair : graph.edges)
    if (std::any_of(pair.costs.begin(), pair.costs.end(),
                    [](double c) { return c >= kForbidden; }))
      parent[root(pair.u)] = root(pair.v);
  std::vector<int32_t> groupOf(graph.numNodes, -1);
  std::vector<std::vector<int32_t>> groups;
  for (int32_t i = 0; i < graph.numNodes; ++i) {
    int32_t r = root(i);
    if (groupOf[r] < 0) {
      groupOf[r] = groups.size();
      groups.emplace_back();
    }
    groupOf[i] = groupOf[r];
    groups[groupOf[i]].push_back(i);
  }
  std::vector<char> taken(groups.size(), 0);
  int regions = 0, improved = 0;
  while (true) {
    double left =
        std::chrono::duration<double>(deadline - LocalSearch::Clock::now())
            .count();
    if (left < 1.5)
      break;
    // Whole tied groups, breadth first from a random node's.
    std::vector<int32_t> region;
    std::vector<int32_t> queue{groupOf[std::uniform_int_distribution<int32_t>(
        0, graph.numNodes - 1)(rng)]};
    taken[queue[0]] = 1;
    for (size_t k = 0; k < queue.size() && region.size() < size; ++k) {
      size_t from = region.size();
      region.insert(region.end(), groups[queue[k]].begin(),
                    groups[queue[k]].end());
      for (size_t r = from; r < region.size(); ++r)
        for (const SearchGraph::Arc &arc : graph.arcs[region[r]])
          if (!taken[groupOf[arc.other]]) {
            taken[groupOf[arc.other]] = 1;
            queue.push_back(groupOf[arc.other]);
          }
    }
    for (int32_t group : queue)
      taken[group] = 0;
    double seconds = std::min(perRegion, left - 1);
    auto began = LocalSearch::Clock::now();
    auto result = solveRegionWithCbc(graph, search.choice(), region,
                                     options.cbcPath, seconds);
    double took = secondsSince(began);
    ++regions;
    if (!result) {
      note("cbc on a region: " + llvm::toString(result.takeError()));
      size = std::max(20.0, size * 0.7);
      continue;
    }
    if (result->optimal && took < seconds / 4)
      size = std::min(5000.0, size * 1.25);
    else if (!result->optimal)
      size = std::max(20.0, size * 0.7);
    if (result->choice.empty())
      continue;
    double before = search.cost();
    std::vector<int32_t> previous = search.choice();
    for (int32_t node : region)
      search.apply(node, result->choice[node]);
    if (!search.valid() || search.cost() > before) {
      for (int32_t node : region)
        search.apply(node, previous[node]);
      continue;
    }
    if (search.cost() < before)
      ++improved;
    search.descend(region);
  }
  note(llvm::formatv("cbc on regions: {0} regions, {1} better, last size {2}",
                     regions, improved, static_cast<int>(size)));
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
  std::vector<int32_t> best;
  double bestCost = std::numeric_limits<double>::infinity();
  std::string bestMethod;
  // Repairs `choice` to the limit, descends, and keeps it when best so far.
  auto consider = [&](std::vector<int32_t> choice, const char *method) {
    search.reset(std::move(choice));
    search.repair();
    search.descend(all);
    if (search.valid() && search.cost() < bestCost) {
      best = search.choice();
      bestCost = search.cost();
      bestMethod = method;
    }
  };
  if (!seed.empty())
    consider(seed, "ilp + local search");
  consider(leastMemoryChoice(graph), "local search");

  // Lagrangian relaxation of the memory rows: each round solves the priced
  // problem without the limit (PBQP reductions), repairs and improves that
  // choice, and moves the prices by a subgradient step.
  MemoryPrices prices(graph);
  bool useRegions = !options.cbcPath.empty() && variables > kIlpVariables;
  auto lagrangeEnd = start + (deadline - start) / (useRegions ? 10 : 3);
  double scale = 1, bestDual = -std::numeric_limits<double>::infinity();
  int stale = 0;
  for (int round = 0; LocalSearch::Clock::now() < lagrangeEnd; ++round) {
    std::vector<double> nodePrices = prices.nodePrices();
    std::vector<int32_t> relaxed = solvePbqp(graph, nodePrices);
    double dual = prices.dualValue(relaxed);
    search.setPrices(nodePrices);
    consider(relaxed, "lagrangian + local search");
    note(llvm::formatv("lagrangian round {0}: dual {1}, repaired {2}, best {3}",
                       round, dual, search.valid() ? search.cost() : -1.0,
                       bestCost));
    if (dual > bestDual + 1e-9 * std::fabs(bestDual)) {
      bestDual = dual;
      stale = 0;
    } else if (++stale >= 3) {
      scale /= 2;
      stale = 0;
    }
    double target = std::isfinite(bestCost)
                        ? bestCost
                        : dual + 0.1 * std::fabs(dual) + graph.costScale;
    if (scale < 1e-3 || !graph.limit ||
        !prices.step(relaxed, target, dual, scale))
      break;
  }
  search.setPrices(prices.nodePrices());
  if (best.empty()) {
    search.reset(leastMemoryChoice(graph));
    search.repair();
  } else {
    search.reset(best);
  }
  note(
      llvm::formatv("local search from cost {0}, {1} forbidden pairs, peak {2}",
                    search.cost(), search.forbiddenPairs(), search.peak()));
  int64_t maxStall = std::max<int64_t>(5000, 200 * graph.numNodes);
  auto searchEnd = useRegions ? start + (deadline - start) / 5 : deadline;
  std::vector<int32_t> improved = search.iterate(searchEnd, maxStall);
  if (!improved.empty()) {
    search.reset(improved);
    if (search.cost() < bestCost) {
      best = std::move(improved);
      bestCost = search.cost();
      bestMethod += best.empty() ? "local search" : ", iterated";
    }
  }
  if (best.empty()) {
    Solution failed = finish(graph.expand(search.choice()), "local search");
    failed.evaluation.why = "no valid choice found: " + failed.evaluation.why;
    return failed;
  }
  if (useRegions && !best.empty()) {
    search.reset(best);
    improveRegions(graph, search, options, deadline, note);
    if (search.valid() && search.cost() < bestCost) {
      best = search.choice();
      bestCost = search.cost();
      bestMethod += ", cbc on regions";
    }
  }
  note(llvm::formatv("done: cost {0}", bestCost));
  return finish(graph.expand(best), bestMethod);
}
