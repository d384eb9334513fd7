//===- Solver.cpp - Solve the auto-sharding problem -------------*- C++ -*-===//
//
// The order of methods: shrink the problem (buildSearchGraph); the
// least-memory choice and the starts given, each repaired and improved by
// local search; when the integer program over tied groups is small, CBC
// from the best of them for a fifth of the time (a stack of layers tied by
// tg-auto-shard is one layer's program: CBC proves it in about a second), a
// proven optimum ending the search; heuristics until a third of the time
// (Lagrangian rounds until a quarter, whose priced problem over tied
// groups PBQP's reductions, message passing on their core and tree moves
// solve, repaired by whole groups; where the first, unpriced round fits
// the limit, CBC on the program without its memory rows when that is
// small: its optimum, if it fits, is the problem's; iterated local
// search); the small program to CBC again from the best choice; otherwise
// local search and CBC on regions take turns until the limit. Without CBC
// the heuristics have all the time (the Lagrangian rounds half of it).
//
//===----------------------------------------------------------------------===//

#include "planning/shardsolve/Solver.h"
#include "planning/shardsolve/Ilp.h"
#include "planning/shardsolve/LocalSearch.h"
#include "planning/shardsolve/MemoryPrices.h"
#include "planning/shardsolve/MessagePassing.h"
#include "planning/shardsolve/Pbqp.h"
#include "planning/shardsolve/TiedGroups.h"
#include "planning/shardsolve/TreeMoves.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>

using namespace tg::shardsolve;

namespace {

/// Programs up to this size (variables plus memory-row terms) go to CBC
/// whole; on the contest's instances the two it solves in seconds are 0.11M,
/// the next 0.88M.
constexpr size_t kIlpSize = 250000;

/// Passes of message passing over the priced problem's core per Lagrangian
/// round (a few milliseconds each on the contest's largest cores, 4,416
/// groups): from the last round's messages, 100 reach choices that more
/// passes rarely beat.
constexpr int kMessageIterations = 100;

/// Lagrangian rounds with prices moved by factors end after this many
/// rounds without a better valid choice (on IOPDDL-V the best came 25
/// rounds in, and 300 more found nothing better).
constexpr int kMostStaleAdaptRounds = 100;

double secondsSince(LocalSearch::Clock::time_point start) {
  return std::chrono::duration<double>(LocalSearch::Clock::now() - start)
      .count();
}

/// The choice with the least memory per tied group (then the least cost),
/// so that no forbidden pair inside a group is chosen.
std::vector<int32_t> leastMemoryChoice(const SearchGraph &graph,
                                       const TiedGroups &groups) {
  std::vector<int32_t> choice(graph.numNodes, 0);
  for (int32_t g = 0; g < groups.numGroups(); ++g) {
    int32_t best = -1;
    double bestUsage = 0, bestCost = 0;
    for (int32_t k = 0; k < groups.numStrategies(g); ++k) {
      if (!groups.alive[g][k])
        continue;
      double usage = 0, cost = 0;
      for (int32_t node : groups.members[g]) {
        int32_t s = groups.strategyOf[node][k];
        if (graph.span[node].first < graph.span[node].second)
          usage += graph.usage[node][s];
        cost += graph.cost[node][s];
      }
      if (best < 0 || usage < bestUsage ||
          (usage == bestUsage && cost < bestCost)) {
        best = k;
        bestUsage = usage;
        bestCost = cost;
      }
    }
    for (int32_t node : groups.members[g])
      choice[node] = groups.strategyOf[node][std::max(best, 0)];
  }
  return choice;
}

/// Large neighbourhood search: CBC re-solves regions with the rest fixed.
/// A region is whole tied groups, breadth first from a random node's
/// group (a boundary through a group would pin it to its strategies); it
/// grows while CBC proves its optimum quickly and shrinks when CBC runs out
/// of time.
class RegionSearch {
public:
  RegionSearch(const SearchGraph &graph, const TiedGroups &groups,
               const SolveOptions &options)
      : graph(graph), groups(groups), options(options),
        rng(options.seed ^ 0x9e3779b97f4a7c15ULL),
        perRegion(std::max(2.0, options.timeLimitSeconds / 40)),
        taken(groups.numGroups(), 0) {}

  /// Improves `search`'s valid choice until `until`, or until CBC fails
  /// to run or to answer (`failure` then says why).
  void run(LocalSearch &search, LocalSearch::Clock::time_point until);
  int regions = 0, improved = 0;
  std::string failure;
  double size = 150;
  /// A region held every node and CBC proved it optimal.
  bool coveredAll = false;

private:
  std::vector<int32_t> pickRegion();

  const SearchGraph &graph;
  const TiedGroups &groups;
  const SolveOptions &options;
  std::mt19937_64 rng;
  double perRegion;
  std::vector<char> taken;
};

std::vector<int32_t> RegionSearch::pickRegion() {
  std::vector<int32_t> region;
  // A group far larger than a region makes a program CBC cannot finish
  // (and one slow to write): start from the next group small enough.
  int32_t seed = groups.groupOf[std::uniform_int_distribution<int32_t>(
      0, graph.numNodes - 1)(rng)];
  for (int32_t tries = 0;
       tries < groups.numGroups() && groups.members[seed].size() > 2 * size;
       ++tries)
    seed = (seed + 1) % groups.numGroups();
  std::vector<int32_t> queue{seed};
  taken[queue[0]] = 1;
  for (size_t k = 0; k < queue.size() && region.size() < size; ++k) {
    size_t from = region.size();
    const std::vector<int32_t> &members = groups.members[queue[k]];
    region.insert(region.end(), members.begin(), members.end());
    for (size_t r = from; r < region.size(); ++r)
      for (const SearchGraph::Arc &arc : graph.arcs[region[r]]) {
        int32_t group = groups.groupOf[arc.other];
        if (!taken[group] && groups.members[group].size() <= 2 * size) {
          taken[group] = 1;
          queue.push_back(group);
        }
      }
  }
  for (int32_t group : queue)
    taken[group] = 0;
  return region;
}

void RegionSearch::run(LocalSearch &search,
                       LocalSearch::Clock::time_point until) {
  while (true) {
    double left =
        std::chrono::duration<double>(until - LocalSearch::Clock::now())
            .count();
    // CBC may overrun its limit by 3 s before it is stopped.
    if (left < 5)
      break;
    std::vector<int32_t> region = pickRegion();
    double seconds = std::max(1.0, std::min(perRegion, left - 4));
    auto began = LocalSearch::Clock::now();
    auto result = solveRegionWithCbc(graph, search.choice(), region,
                                     options.cbcPath, seconds);
    double took = secondsSince(began);
    ++regions;
    if (!result) {
      // Not a limit (a stopped CBC answers with its best): CBC is missing,
      // crashed or wrote nothing, and would again.
      failure = llvm::toString(result.takeError());
      return;
    }
    if (result->optimal && region.size() == static_cast<size_t>(graph.numNodes))
      coveredAll = true;
    if (took > 2 * seconds)
      size = std::max(20.0, size * 0.5); // writing it took too long
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

  bool haveCbc = !options.cbcPath.empty();
  size_t variables = ilpSize(graph, kIlpSize);
  bool fullIlp = haveCbc && variables <= kIlpSize;
  TiedGroups groups = findTiedGroups(graph);
  note(llvm::formatv("integer program over {0} tied groups: size {1}{2}",
                     groups.numGroups(), variables,
                     !haveCbc  ? " (cbc off)"
                     : fullIlp ? ""
                               : ", too many for one run of cbc"));

  // 1. Heuristics: the least-memory choice, then Lagrangian rounds (the
  // priced problem without the limit by PBQP reductions, repaired to the
  // limit and improved), then iterated local search.
  LocalSearch search(graph, options.seed);
  std::vector<int32_t> all(graph.numNodes);
  for (int32_t i = 0; i < graph.numNodes; ++i)
    all[i] = i;
  std::vector<int32_t> best;
  double bestCost = std::numeric_limits<double>::infinity();
  std::string bestMethod;
  auto keepIfBetter = [&](const char *method) {
    if (search.valid() && search.cost() < bestCost) {
      best = search.choice();
      bestCost = search.cost();
      bestMethod = method;
    }
  };
  // Repairs `choice` to the limit, descends, and keeps it when best so far.
  auto consider = [&](std::vector<int32_t> choice, const char *method) {
    search.reset(std::move(choice));
    search.repair();
    search.descend(all);
    keepIfBetter(method);
  };
  // Whole groups moving from the least-memory choice is the best start on
  // some instances; from the Lagrangian rounds' choice on others.
  auto total = deadline - start;
  consider(leastMemoryChoice(graph, groups), "local search");
  while (search.valid() &&
         search.descendGroups(groups, start + total / (haveCbc ? 24 : 10)))
    search.descend(all);
  keepIfBetter("group descent");
  // The starts given (tg-auto-shard's standard plans): where the landscape
  // has a deep basin far from the least-memory choice, the heuristics
  // below may never reach a plan an engineer would write down.
  for (const Start &start : options.starts) {
    if (start.strategies.size() != problem.numNodes()) {
      note(llvm::formatv("start {0}: {1} strategies for {2} nodes, skipped",
                         start.name, start.strategies.size(),
                         problem.numNodes()));
      continue;
    }
    int64_t forbidden = 0;
    std::vector<int32_t> choice = graph.shrink(start.strategies, forbidden);
    std::string method = "from " + start.name + " + local search";
    consider(std::move(choice), method.c_str());
    note(llvm::formatv("start {0}: {1} after local search{2}; {3} "
                       "forbidden strategies replaced",
                       start.name, search.cost(),
                       search.valid() ? "" : " (not valid)", forbidden));
  }
  double leastMemoryCost = bestCost;

  auto secondsLeft = [&] {
    return std::chrono::duration<double>(deadline - LocalSearch::Clock::now())
        .count();
  };
  // CBC on the whole program from the best choice so far: the solution when
  // it proves the optimum (or that there is none), else none, its choice
  // kept when better.
  // `program` is the graph, or the graph without its limit (whose optimum
  // is the graph's when it fits).
  auto runIlp = [&](double seconds, const SearchGraph &program,
                    const char *method) -> std::optional<Solution> {
    note(llvm::formatv("{0}: cbc for at most {1} s", method, seconds));
    auto result = solveWithCbc(program, options.cbcPath, seconds, best);
    if (!result) {
      solution.cbcFailure = llvm::toString(result.takeError());
      note("ilp: " + solution.cbcFailure);
    } else if (result->infeasible && best.empty()) {
      solution.evaluation.why = "no choice keeps the usage limit (cbc proved "
                                "the integer program infeasible)";
      solution.method = "ilp";
      solution.seconds = secondsSince(start);
      return solution;
    } else if (!result->choice.empty()) {
      search.reset(result->choice);
      if (result->optimal && search.valid()) {
        note(std::string(method) + ": optimal");
        solution.optimal = true;
        return finish(graph.expand(result->choice),
                      std::string(method) + " (optimal)");
      }
      note(llvm::formatv("ilp: stopped at cost {0}", search.cost()));
      keepIfBetter("ilp");
    } else {
      note("ilp: stopped without a solution");
    }
    return std::nullopt;
  };
  // A small program goes to CBC first, for a fifth of the time: a stack of
  // layers tied by tg-auto-shard is one layer's program however deep, and
  // CBC proves its optimum in about a second, where the heuristics below
  // take longer the more nodes there are. What CBC leaves unproven goes on.
  if (fullIlp)
    if (auto done =
            runIlp(std::max(1.0, options.timeLimitSeconds / 5), graph, "ilp"))
      return *done;

  auto heuristicsEnd = start + (haveCbc ? total / 3 : total);
  auto lagrangeEnd = start + total / (haveCbc ? 4 : 2);
  MemoryPrices prices(graph);
  // The previous round's priced choice per group and the core's messages:
  // prices move little from round to round.
  std::vector<int32_t> warm;
  std::unique_ptr<MessagePassing> messages;
  // Each round's share of the priced problem's time.
  auto roundSlice = std::chrono::duration_cast<LocalSearch::Clock::duration>(
      std::chrono::duration<double>(
          std::max(0.25, options.timeLimitSeconds / 30)));
  bool adapting = false;
  double adaptBest = std::numeric_limits<double>::infinity();
  int adaptStale = 0;
  double scale = 1, bestDual = -std::numeric_limits<double>::infinity();
  int stale = 0;
  for (int round = 0; round < 2 || LocalSearch::Clock::now() < lagrangeEnd;
       ++round) {
    std::vector<double> nodePrices = prices.nodePrices();
    auto roundStart = LocalSearch::Clock::now();
    auto roundEnd = std::min(lagrangeEnd, roundStart + roundSlice);
    // The priced problem over tied groups (a stack of tied layers is one
    // node): PBQP's exact reductions, the core they leave chosen by message
    // passing (its messages carried from round to round), then tree moves;
    // the last round's choice after tree moves too, the better kept.
    SearchGraph priced = contractGroups(graph, groups, nodePrices);
    int32_t coreNodes = 0;
    std::vector<int32_t> byGroup =
        solvePbqpWithCore(priced, [&](const SearchGraph &core) {
          coreNodes = core.numNodes;
          if (!messages || !messages->fits(core))
            messages = std::make_unique<MessagePassing>(core);
          return messages->run(core, kMessageIterations, roundEnd);
        });
    TreeMoves trees(priced, options.seed + round);
    trees.descend(byGroup, roundEnd);
    if (!warm.empty()) {
      trees.descend(warm, roundEnd);
      if (priced.costOf(warm) < priced.costOf(byGroup))
        byGroup = warm;
    }
    warm = byGroup;
    std::vector<int32_t> relaxed = groups.expand(byGroup);
    double pricedSeconds = secondsSince(roundStart);
    double dual = prices.dualValue(relaxed);
    search.setPrices(nodePrices);
    search.reset(relaxed);
    int64_t relaxedPeak = search.peak();
    search.repairGroups(groups, priced);
    search.repair();
    search.descend(all);
    keepIfBetter("lagrangian + local search");
    note(llvm::formatv("lagrangian round {0}: relaxed {1} (peak {2:f3} of the "
                       "limit; core of {3} groups; {4:f2} s), repaired {5}, "
                       "best {6}",
                       round, dual,
                       graph.limit ? double(relaxedPeak) / *graph.limit : 0.0,
                       coreNodes, pricedSeconds,
                       search.valid() ? search.cost() : -1.0, bestCost));
    // Unpriced, the relaxed choice fits: the limit may not bind (large
    // models planned far below the device's memory). A program too large
    // for CBC with its memory rows may be small without them, and its
    // optimum, where it fits, is the optimum with the limit too.
    if (round == 0 && haveCbc && !fullIlp && graph.limit &&
        relaxedPeak <= *graph.limit) {
      SearchGraph unlimited = graph;
      unlimited.limit.reset();
      unlimited.segmentLimit.clear();
      if (ilpSize(unlimited, kIlpSize) <= kIlpSize)
        if (auto done = runIlp(std::max(1.0, options.timeLimitSeconds / 5),
                               unlimited, "ilp without the limit"))
          return *done;
    }
    if (dual > bestDual + 1e-9 * std::fabs(bestDual)) {
      bestDual = dual;
      stale = 0;
    } else if (++stale >= 3) {
      scale /= 2;
      stale = 0;
    }
    // Polyak's step wants a target above the relaxed value; that value is
    // no bound (the priced problem is solved approximately), so it may
    // exceed the best valid cost.
    double target = std::isfinite(bestCost) && bestCost > dual
                        ? bestCost
                        : dual + 0.05 * std::fabs(dual) + graph.costScale;
    if (!graph.limit)
      break;
    // Subgradient steps end swinging between a choice just over the limit
    // and one far over it (IOPDDL-V: peak 1.02 and 2.9 of the limit, round
    // after round); once their length has shrunk that far, prices move by
    // factors on the overflowing segments only, which walks the priced
    // choice to the limit and finds valid choices near it.
    if (scale < 1e-3 || adapting) {
      // They end too, after as many rounds without a better valid choice.
      if (!adapting || bestCost < adaptBest) {
        adaptBest = bestCost;
        adaptStale = 0;
      } else if (++adaptStale >= kMostStaleAdaptRounds) {
        break;
      }
      adapting = true;
      prices.adapt(relaxed, 1.2, 0.97);
    } else if (!prices.step(relaxed, target, dual, scale)) {
      break;
    }
  }
  search.setPrices(prices.nodePrices());
  if (!best.empty() && bestCost < leastMemoryCost) {
    search.reset(best);
    while (search.descendGroups(groups, heuristicsEnd))
      search.descend(all);
    keepIfBetter("lagrangian + group descent");
  }
  if (!best.empty())
    search.reset(best);
  int64_t maxStall = std::max<int64_t>(5000, 200 * graph.numNodes);
  std::vector<int32_t> improved = search.iterate(heuristicsEnd, maxStall);
  if (!improved.empty()) {
    // From the best so far: a start's name stays in the method.
    std::string method = best.empty() ? "local search"
                         : llvm::StringRef(bestMethod).starts_with("from ")
                             ? bestMethod + ", iterated"
                             : "lagrangian + iterated local search";
    search.reset(improved);
    keepIfBetter(method.c_str());
  }
  note(llvm::formatv("heuristics: {0}",
                     best.empty() ? std::string("no valid choice")
                                  : llvm::formatv("cost {0}", bestCost).str()));

  // 2. The whole integer program, when small enough, from the best choice;
  // then 3. CBC on regions while time is left.
  if (fullIlp) {
    // CBC may overrun its limit (it is killed 3 s after), and regions need
    // time after it when it does not finish.
    if (auto done =
            runIlp(std::max(1.0, secondsLeft() * 0.85 - 4), graph, "ilp"))
      return *done;
  }
  // Local search and CBC on regions take turns in slices of time, each
  // turn to the one that gained more per second lately (the contest's
  // instances differ: regions win on some, local search on others).
  if (haveCbc && solution.cbcFailure.empty() && !best.empty()) {
    search.reset(best);
    RegionSearch regions(graph, groups, options);
    double slice = std::max(6.0, options.timeLimitSeconds / 15);
    double rate[2] = {std::numeric_limits<double>::infinity(),
                      std::numeric_limits<double>::infinity()};
    for (int turn = 0; secondsLeft() > 1; ++turn) {
      // 0: local search, 1: regions; each gets every fourth turn at least.
      int method = rate[0] == rate[1] ? turn % 2
                   : turn % 4 == 3    ? (rate[0] > rate[1] ? 1 : 0)
                                      : (rate[1] > rate[0] ? 1 : 0);
      // CBC may overrun its limit by 3 s before it is stopped.
      if (secondsLeft() < slice + 4 || !solution.cbcFailure.empty())
        method = 0;
      auto until =
          std::min(deadline,
                   LocalSearch::Clock::now() +
                       std::chrono::duration_cast<LocalSearch::Clock::duration>(
                           std::chrono::duration<double>(slice)));
      double before = search.cost();
      auto began = LocalSearch::Clock::now();
      bool stalled = false;
      if (method == 0) {
        while (search.descendGroups(groups, until))
          search.descend(all);
        std::vector<int32_t> found = search.iterate(until, maxStall);
        stalled = LocalSearch::Clock::now() < until;
        if (!found.empty())
          search.reset(found);
      } else {
        regions.run(search, until);
      }
      if (!regions.failure.empty() && solution.cbcFailure.empty()) {
        // Local search alone from here.
        solution.cbcFailure = regions.failure;
        note("cbc on regions: " + regions.failure);
      }
      double gain = std::max(0.0, before - search.cost());
      note(llvm::formatv("turn {0}: {1}, cost {2} -> {3}", turn,
                         method ? "regions" : "local search", before,
                         search.cost()));
      double perSecond = gain / std::max(1e-3, secondsSince(began));
      rate[method] = std::isfinite(rate[method])
                         ? 0.5 * rate[method] + 0.5 * perSecond
                         : perSecond;
      if (search.valid() && search.cost() < bestCost) {
        best = search.choice();
        bestCost = search.cost();
        if (method == 1 && bestMethod.find("regions") == std::string::npos)
          bestMethod += ", cbc on regions";
      }
      // Local search stalled and CBC proved the whole problem optimal
      // around the current choice: done early.
      if (stalled && regions.coveredAll)
        break;
    }
    note(llvm::formatv("cbc on regions: {0} regions, {1} better, last size "
                       "{2}",
                       regions.regions, regions.improved,
                       static_cast<int>(regions.size)));
  }
  if (best.empty()) {
    Solution failed = finish(graph.expand(search.choice()), "local search");
    failed.evaluation.why = "no valid choice found: " + failed.evaluation.why;
    return failed;
  }
  note(llvm::formatv("done: cost {0}", bestCost));
  return finish(graph.expand(best), bestMethod);
}
