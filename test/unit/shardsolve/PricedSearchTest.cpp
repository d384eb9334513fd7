//===- PricedSearchTest.cpp - Searches of the priced problem ----*- C++ -*-===//
//
// The pieces the Lagrangian rounds solve the priced problem with, each
// against brute force on random small problems without a memory limit:
// tree moves and message passing are exact on trees, PBQP's reductions with
// an exact core solver are exact everywhere, tree moves never make a choice
// worse; and repairGroups() reaches the limit without splitting a group.
//
//===----------------------------------------------------------------------===//

#include "planning/shardsolve/LocalSearch.h"
#include "planning/shardsolve/MemoryPrices.h"
#include "planning/shardsolve/MessagePassing.h"
#include "planning/shardsolve/Pbqp.h"
#include "planning/shardsolve/SearchGraph.h"
#include "planning/shardsolve/TiedGroups.h"
#include "planning/shardsolve/TreeMoves.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include "gtest/gtest.h"

#include <random>

using namespace tg::shardsolve;

namespace {

/// A random problem without a memory limit: `n` nodes of 2-4 strategies,
/// a random tree of edges (each node joined to an earlier one), plus
/// `extra` random edges that close cycles; one edge entry in ten forbidden.
Problem randomProblem(std::mt19937_64 &rng, int n, int extra) {
  auto uniform = [&](int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(rng);
  };
  Problem problem;
  for (int i = 0; i < n; ++i) {
    problem.intervals.push_back({0, 1});
    problem.nodeCosts.emplace_back();
    problem.usages.emplace_back();
    for (int64_t s = 0, count = uniform(2, 4); s < count; ++s) {
      problem.nodeCosts.back().push_back(uniform(0, 1000));
      problem.usages.back().push_back(1);
    }
  }
  auto join = [&](int64_t u, int64_t v) {
    Edge edge{u, v, {}};
    for (size_t c = 0;
         c < problem.nodeCosts[u].size() * problem.nodeCosts[v].size(); ++c)
      edge.costs.push_back(uniform(0, 9) == 0 ? kForbidden
                                              : (double)uniform(0, 1000));
    problem.edges.push_back(std::move(edge));
  };
  for (int i = 1; i < n; ++i)
    join(uniform(0, i - 1), i);
  for (int k = 0; k < extra; ++k) {
    int64_t u = uniform(0, n - 1), v = uniform(0, n - 1);
    if (u != v)
      join(u, v);
  }
  return problem;
}

/// The least cost of `graph` over every choice of kept strategies, scored
/// by evaluate() on the problem it came from.
double bruteForce(const Problem &problem, const SearchGraph &graph) {
  std::vector<int32_t> choice(graph.numNodes, 0);
  double best = std::numeric_limits<double>::infinity();
  while (true) {
    Evaluation e = evaluate(problem, graph.expand(choice));
    if (e.valid)
      best = std::min(best, e.cost);
    int32_t i = 0;
    while (i < graph.numNodes && ++choice[i] == graph.numStrategies(i))
      choice[i++] = 0;
    if (i == graph.numNodes)
      return best;
  }
}

double costOf(const Problem &problem, const SearchGraph &graph,
              llvm::ArrayRef<int32_t> choice) {
  Evaluation e = evaluate(problem, graph.expand(choice));
  return e.valid ? e.cost : std::numeric_limits<double>::infinity();
}

auto farAway() {
  return std::chrono::steady_clock::now() + std::chrono::hours(1);
}

/// On 50 random trees of `nodes` nodes (no edge beyond a spanning tree),
/// `solve` (given the graph and the trial) finds the brute-force optimum.
void expectExactOnTrees(
    uint64_t seed, int nodes,
    llvm::function_ref<std::vector<int32_t>(const SearchGraph &, int)> solve) {
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 50; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    Problem problem = randomProblem(rng, nodes, 0);
    SearchGraph graph = buildSearchGraph(problem);
    ASSERT_TRUE(graph.infeasible.empty()) << graph.infeasible;
    std::vector<int32_t> choice = solve(graph, trial);
    EXPECT_EQ(costOf(problem, graph, choice), bruteForce(problem, graph));
  }
}

TEST(TreeMoves, ExactOnTrees) {
  expectExactOnTrees(11, 8, [](const SearchGraph &graph, int trial) {
    std::vector<int32_t> choice(graph.numNodes, 0);
    TreeMoves(graph, trial).descend(choice, farAway());
    return choice;
  });
}

TEST(TreeMoves, NeverWorseOnCycles) {
  std::mt19937_64 rng(12);
  int optimal = 0, feasible = 0;
  for (int trial = 0; trial < 50; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    Problem problem = randomProblem(rng, 8, 6);
    SearchGraph graph = buildSearchGraph(problem);
    if (!graph.infeasible.empty())
      continue; // forbidden entries left no choice
    ++feasible;
    std::vector<int32_t> choice = solvePbqp(graph);
    TreeMoves trees(graph, trial);
    double before = graph.costOf(choice);
    double gained = trees.descend(choice, farAway());
    EXPECT_GE(gained, 0);
    EXPECT_NEAR(graph.costOf(choice), before - gained, 1e-6 * before);
    double optimum = bruteForce(problem, graph);
    EXPECT_GE(costOf(problem, graph, choice), optimum);
    optimal += costOf(problem, graph, choice) == optimum;
  }
  // Not exact on cycles, but most of these small ones end at the optimum.
  EXPECT_GE(optimal, feasible * 7 / 10) << optimal << " of " << feasible;
}

TEST(MessagePassing, ExactOnTrees) {
  expectExactOnTrees(13, 9, [](const SearchGraph &graph, int) {
    return MessagePassing(graph).run(graph, 10, farAway());
  });
}

TEST(MessagePassing, WarmMessagesFitTheSameGraph) {
  std::mt19937_64 rng(14);
  Problem problem = randomProblem(rng, 9, 4);
  SearchGraph graph = buildSearchGraph(problem);
  MessagePassing messages(graph);
  EXPECT_TRUE(messages.fits(graph));
  Problem other = randomProblem(rng, 7, 4);
  EXPECT_FALSE(messages.fits(buildSearchGraph(other)));
}

/// With an exact core solver, PBQP's exact reductions make the whole
/// exact: the core is brute-forced over its own folded costs.
TEST(PbqpWithCore, ExactCoreMakesItExact) {
  std::mt19937_64 rng(15);
  int cores = 0;
  for (int trial = 0; trial < 50; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    Problem problem = randomProblem(rng, 8, 8);
    SearchGraph graph = buildSearchGraph(problem);
    ASSERT_TRUE(graph.infeasible.empty()) << graph.infeasible;
    std::vector<int32_t> choice =
        solvePbqpWithCore(graph, [&](const SearchGraph &core) {
          ++cores;
          std::vector<int32_t> pick(core.numNodes, 0), best;
          double least = std::numeric_limits<double>::infinity();
          while (true) {
            double value = core.costOf(pick);
            if (value < least) {
              least = value;
              best = pick;
            }
            int32_t i = 0;
            while (i < core.numNodes && ++pick[i] == core.numStrategies(i))
              pick[i++] = 0;
            if (i == core.numNodes)
              return best;
          }
        });
    EXPECT_EQ(costOf(problem, graph, choice), bruteForce(problem, graph));
  }
  EXPECT_GT(cores, 10); // most of these graphs leave a core
}

/// A chain of tied pairs (each pair's two nodes must take the same
/// strategy), every node live throughout: repairGroups() meets the limit
/// from the most memory, by moving whole pairs.
TEST(LocalSearch, RepairGroupsKeepsGroupsWhole) {
  std::mt19937_64 rng(16);
  for (int trial = 0; trial < 20; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    auto uniform = [&](int64_t low, int64_t high) {
      return std::uniform_int_distribution<int64_t>(low, high)(rng);
    };
    Problem problem;
    constexpr int kPairs = 6;
    for (int i = 0; i < 2 * kPairs; ++i) {
      problem.intervals.push_back({0, 4});
      problem.nodeCosts.push_back(
          {(double)uniform(0, 100), (double)uniform(0, 100), 0});
      problem.usages.push_back({1, 5, 10});
    }
    for (int p = 0; p < kPairs; ++p) {
      problem.edges.push_back({2 * p,
                               2 * p + 1,
                               {0, kForbidden, kForbidden, kForbidden, 0,
                                kForbidden, kForbidden, kForbidden, 0}});
      if (p + 1 < kPairs) {
        Edge edge{2 * p + 1, 2 * p + 2, {}};
        for (int c = 0; c < 9; ++c)
          edge.costs.push_back(uniform(0, 100));
        problem.edges.push_back(std::move(edge));
      }
    }
    problem.usageLimit = uniform(2 * kPairs, 8 * kPairs);
    SearchGraph graph = buildSearchGraph(problem);
    ASSERT_TRUE(graph.infeasible.empty()) << graph.infeasible;
    TiedGroups groups = findTiedGroups(graph);
    ASSERT_EQ(groups.numGroups(), kPairs);
    LocalSearch search(graph, trial);
    std::vector<int32_t> most(graph.numNodes);
    for (int32_t i = 0; i < graph.numNodes; ++i)
      for (int32_t s = 0; s < graph.numStrategies(i); ++s)
        if (graph.usage[i][s] > graph.usage[i][most[i]])
          most[i] = s;
    search.reset(most);
    ASSERT_FALSE(search.fitsLimit());
    EXPECT_TRUE(search.repairGroups(groups, contractGroups(graph, groups)));
    EXPECT_TRUE(search.valid());
    EXPECT_EQ(search.forbiddenPairs(), 0);
  }
}

/// Two nodes live in segments 0-1 and 1-2, over the limit together in
/// segment 1: adapt() prices that segment only, raises it while the choice
/// overflows, and lowers every price once it fits.
TEST(MemoryPrices, AdaptRaisesWhereTheChoiceOverflows) {
  Problem problem;
  problem.intervals = {{0, 2}, {1, 3}};
  problem.nodeCosts = {{1, 5}, {1, 5}};
  problem.usages = {{6, 2}, {6, 2}};
  problem.edges = {};
  problem.usageLimit = 10;
  SearchGraph graph = buildSearchGraph(problem);
  ASSERT_TRUE(graph.infeasible.empty()) << graph.infeasible;
  ASSERT_EQ(graph.numSegments, 3);
  MemoryPrices prices(graph);
  EXPECT_FALSE(prices.adapt({0, 0}, 2.0, 0.5));
  std::vector<double> first(prices.perSegment().begin(),
                            prices.perSegment().end());
  EXPECT_EQ(first[0], 0);
  EXPECT_GT(first[1], 0);
  EXPECT_EQ(first[2], 0);
  EXPECT_FALSE(prices.adapt({0, 0}, 2.0, 0.5));
  EXPECT_DOUBLE_EQ(prices.perSegment()[1], 2 * first[1]);
  EXPECT_TRUE(prices.adapt({1, 0}, 2.0, 0.5));
  EXPECT_DOUBLE_EQ(prices.perSegment()[1], first[1]);
  // Node prices sum their segments' prices.
  std::vector<double> perNode = prices.nodePrices();
  EXPECT_DOUBLE_EQ(perNode[0], first[1]);
  EXPECT_DOUBLE_EQ(perNode[1], first[1]);
}

} // namespace
