//===- SolverTest.cpp - The solver against brute force ----------*- C++ -*-===//
//
// evaluate() on hand-scored choices; solve() on random small problems
// (6-10 nodes, 2-4 strategies, random edges, forbidden entries and memory
// limits) against the optimum found by enumerating every choice: equal with
// CBC, valid (and never below the optimum) with the heuristics alone; a
// chain too large to enumerate against dynamic programming.
//
//===----------------------------------------------------------------------===//

#include "planning/shardsolve/Solver.h"
#include "planning/shardsolve/Pbqp.h"
#include "planning/shardsolve/SearchGraph.h"
#include "planning/shardsolve/TiedGroups.h"

#include "llvm/Support/Program.h"

#include "gtest/gtest.h"

#include <random>

using namespace tg::shardsolve;

namespace {

Problem twoNodes() {
  Problem problem;
  problem.name = "two";
  problem.intervals = {{0, 2}, {1, 3}};
  problem.nodeCosts = {{1, 2}, {3, kForbidden}};
  problem.usages = {{5, 1}, {4, 4}};
  problem.edges = {{0, 1, {10, 20, 30, 40}}};
  problem.usageLimit = 8;
  return problem;
}

TEST(Evaluate, ScoresNodeAndEdgeCosts) {
  Problem problem = twoNodes();
  Evaluation e = evaluate(problem, {1, 0});
  EXPECT_TRUE(e.valid) << e.why;
  EXPECT_EQ(e.cost, 2 + 3 + 30);
  EXPECT_EQ(e.peakUsage, 5);
}

TEST(Evaluate, UsageLimitAtOverlap) {
  Problem problem = twoNodes();
  Evaluation e = evaluate(problem, {0, 0});
  EXPECT_FALSE(e.valid);
  EXPECT_EQ(e.why, "usage 9 exceeds the limit 8 at time 1");
  EXPECT_EQ(e.peakUsage, 9);
  problem.usageLimit.reset();
  EXPECT_TRUE(evaluate(problem, {0, 0}).valid);
}

TEST(Evaluate, ForbiddenAndOutOfRange) {
  Problem problem = twoNodes();
  EXPECT_EQ(evaluate(problem, {0, 1}).why, "node 1: strategy 1 is forbidden");
  EXPECT_EQ(evaluate(problem, {2, 0}).why,
            "node 0: strategy 2 out of range 0..1");
  EXPECT_EQ(evaluate(problem, {0}).why,
            "solution has 1 entries, the problem 2 nodes");
  problem.edges[0].costs[2] = kForbidden;
  EXPECT_EQ(evaluate(problem, {1, 0}).why,
            "edge 0 (0->1): forbidden pair (1, 0)");
}

TEST(Evaluate, EmptyIntervalsUseNoMemory) {
  Problem problem = twoNodes();
  problem.intervals = {{2, 2}, {1, 3}};
  EXPECT_TRUE(evaluate(problem, {0, 0}).valid);
}

TEST(VerifyProblem, NamesTheMismatch) {
  Problem problem = twoNodes();
  problem.edges[0].costs.pop_back();
  EXPECT_EQ(llvm::toString(verifyProblem(problem)),
            "edge 0 (0 -> 1) has 3 costs, expected 2 x 2 = 4");
  problem = twoNodes();
  problem.edges[0].v = 7;
  EXPECT_EQ(llvm::toString(verifyProblem(problem)),
            "edge 0 names node 7, but there are 2 nodes");
  problem = twoNodes();
  problem.usages[1].pop_back();
  EXPECT_EQ(llvm::toString(verifyProblem(problem)),
            "node 1 has 2 costs but 1 usages");
}

/// A random problem; costs at the compiler's scale (seconds) or the
/// contest's (integers up to 1e9).
Problem randomProblem(std::mt19937_64 &rng, bool integral) {
  auto uniform = [&](int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(rng);
  };
  auto cost = [&] {
    return integral ? static_cast<double>(uniform(0, 1000000000))
                    : uniform(1, 1000000) * 1e-7;
  };
  Problem problem;
  int64_t n = uniform(6, 10);
  for (int64_t i = 0; i < n; ++i) {
    int64_t strategies = uniform(2, 4);
    int64_t start = uniform(0, 8);
    problem.intervals.push_back({start, start + uniform(0, 5)});
    problem.nodeCosts.emplace_back();
    problem.usages.emplace_back();
    for (int64_t s = 0; s < strategies; ++s) {
      problem.nodeCosts.back().push_back(uniform(0, 9) == 0 ? kForbidden
                                                            : cost());
      problem.usages.back().push_back(uniform(1, 100));
    }
  }
  int64_t edges = uniform(n - 1, 2 * n);
  for (int64_t k = 0; k < edges; ++k) {
    int64_t u = uniform(0, n - 1), v = uniform(0, n - 1);
    Edge edge{u, v, {}};
    for (size_t c = 0;
         c < problem.nodeCosts[u].size() * problem.nodeCosts[v].size(); ++c)
      edge.costs.push_back(uniform(0, 7) == 0 ? kForbidden : cost());
    problem.edges.push_back(std::move(edge));
  }
  if (uniform(0, 3) != 0)
    problem.usageLimit = uniform(50, 300);
  return problem;
}

/// The least valid cost over every choice; infinity when none is valid.
/// `argmin`, when given, receives a choice of that cost.
double bruteForce(const Problem &problem,
                  std::vector<int64_t> *argmin = nullptr) {
  std::vector<int64_t> choice(problem.numNodes(), 0);
  double best = std::numeric_limits<double>::infinity();
  while (true) {
    Evaluation e = evaluate(problem, choice);
    if (e.valid && e.cost < best) {
      best = e.cost;
      if (argmin)
        *argmin = choice;
    }
    size_t i = 0;
    while (i < choice.size() &&
           ++choice[i] == static_cast<int64_t>(problem.nodeCosts[i].size()))
      choice[i++] = 0;
    if (i == choice.size())
      return best;
  }
}

void checkAgainstBruteForce(bool ilp, int problems) {
  std::mt19937_64 rng(ilp ? 1 : 2);
  int feasible = 0, optimal = 0;
  for (int k = 0; k < problems; ++k) {
    Problem problem = randomProblem(rng, k % 2 == 0);
    double optimum = bruteForce(problem);
    SolveOptions options;
    options.timeLimitSeconds = 10;
    options.seed = k;
    options.cbcPath = ilp ? "cbc" : "";
    Solution solution = solve(problem, options);
    SCOPED_TRACE("problem " + std::to_string(k));
    if (std::isinf(optimum)) {
      EXPECT_FALSE(solution.evaluation.valid);
      continue;
    }
    ++feasible;
    // The heuristics may miss a tight problem's only valid choices.
    if (!ilp && !solution.evaluation.valid)
      continue;
    ASSERT_TRUE(solution.evaluation.valid) << solution.evaluation.why;
    EXPECT_EQ(solution.evaluation.cost,
              evaluate(problem, solution.strategies).cost);
    double tolerance = 1e-9 * std::max(1.0, std::fabs(optimum));
    EXPECT_GE(solution.evaluation.cost, optimum - tolerance);
    if (ilp) {
      EXPECT_NEAR(solution.evaluation.cost, optimum, tolerance);
    }
    optimal += std::fabs(solution.evaluation.cost - optimum) <= tolerance;
  }
  // The heuristics alone should still find most optima of problems this small.
  EXPECT_GE(optimal, feasible * 9 / 10) << optimal << " of " << feasible;
}

TEST(Solve, MatchesBruteForceWithIlp) {
  if (!llvm::sys::findProgramByName("cbc"))
    GTEST_SKIP() << "no cbc";
  checkAgainstBruteForce(/*ilp=*/true, 200);
}

TEST(Solve, HeuristicsValidAgainstBruteForce) {
  checkAgainstBruteForce(/*ilp=*/false, 200);
}

/// A valid choice, its strategies dropped as dominated replaced by their
/// stand-ins, stays valid and costs no more, at no higher peak.
TEST(SearchGraph, StandInsAreNoWorse) {
  std::mt19937_64 rng(5);
  int checked = 0, replaced = 0;
  for (int k = 0; k < 300; ++k) {
    Problem problem = randomProblem(rng, k % 2 == 0);
    SearchGraph graph = buildSearchGraph(problem);
    if (!graph.infeasible.empty())
      continue;
    for (int draw = 0; draw < 50; ++draw) {
      std::vector<int64_t> choice;
      for (const auto &costs : problem.nodeCosts)
        choice.push_back(
            std::uniform_int_distribution<int64_t>(0, costs.size() - 1)(rng));
      Evaluation given = evaluate(problem, choice);
      if (!given.valid)
        continue;
      SCOPED_TRACE("problem " + std::to_string(k));
      int64_t forbidden = -1;
      std::vector<int64_t> standing =
          graph.expand(graph.shrink(choice, forbidden));
      EXPECT_EQ(forbidden, 0);
      Evaluation shrunk = evaluate(problem, standing);
      ASSERT_TRUE(shrunk.valid) << shrunk.why;
      EXPECT_LE(shrunk.cost,
                given.cost + 1e-9 * std::max(1.0, std::fabs(given.cost)));
      EXPECT_LE(shrunk.peakUsage, given.peakUsage);
      ++checked;
      replaced += standing != choice;
    }
  }
  // The random problems do drop strategies as dominated.
  EXPECT_GT(checked, 500);
  EXPECT_GT(replaced, 100) << replaced << " of " << checked;
}

/// Started from an optimum, the heuristics alone (which miss some optima of
/// these problems when left to themselves) always end at one.
TEST(Solve, NoWorseThanItsStarts) {
  std::mt19937_64 rng(3);
  int feasible = 0;
  for (int k = 0; k < 200; ++k) {
    Problem problem = randomProblem(rng, k % 2 == 0);
    std::vector<int64_t> argmin;
    double optimum = bruteForce(problem, &argmin);
    if (std::isinf(optimum))
      continue;
    ++feasible;
    SolveOptions options;
    options.timeLimitSeconds = 0.01;
    options.seed = k;
    options.cbcPath = "";
    options.starts = {{"the optimum", argmin}};
    Solution solution = solve(problem, options);
    SCOPED_TRACE("problem " + std::to_string(k));
    ASSERT_TRUE(solution.evaluation.valid) << solution.evaluation.why;
    EXPECT_NEAR(solution.evaluation.cost, optimum,
                1e-9 * std::max(1.0, std::fabs(optimum)));
  }
  EXPECT_GT(feasible, 100);
}

/// Three copies of a layer of three roles, every role joined to every role of
/// the next copy by random costs and tied to its own role there (equal
/// strategies only): each node has degree 3 or more, so PBQP node by node
/// needs RN steps, but over the tied groups it is a triangle, which R1/R2
/// reduce exactly. No memory limit: the optimum is PBQP's.
TEST(ContractGroups, TiedCopiesReduceAsOne) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    auto cost = [&] {
      return (double)std::uniform_int_distribution<int64_t>(0, 1000)(rng);
    };
    constexpr int kLayers = 3, kRoles = 3, kStrategies = 3;
    Problem problem;
    for (int n = 0; n < kLayers * kRoles; ++n) {
      problem.intervals.push_back({0, 0});
      problem.nodeCosts.push_back({cost(), cost(), cost()});
      problem.usages.push_back({1, 1, 1});
    }
    for (int layer = 0; layer + 1 < kLayers; ++layer)
      for (int a = 0; a < kRoles; ++a)
        for (int b = 0; b < kRoles; ++b) {
          Edge edge{layer * kRoles + a, (layer + 1) * kRoles + b, {}};
          for (int i = 0; i < kStrategies; ++i)
            for (int j = 0; j < kStrategies; ++j)
              edge.costs.push_back(a != b ? cost() : i == j ? 0.0 : kForbidden);
          problem.edges.push_back(std::move(edge));
        }
    SearchGraph graph = buildSearchGraph(problem);
    ASSERT_TRUE(graph.infeasible.empty()) << graph.infeasible;
    TiedGroups groups = findTiedGroups(graph);
    EXPECT_EQ(groups.numGroups(), kRoles);
    std::vector<int32_t> choice =
        groups.expand(solvePbqp(contractGroups(graph, groups)));
    Evaluation e = evaluate(problem, graph.expand(choice));
    ASSERT_TRUE(e.valid) << e.why;
    EXPECT_EQ(e.cost, bruteForce(problem));
  }
}

/// A chain of 1,500 nodes, each live over the next 400 time steps: the
/// memory rows make the integer program far too large for CBC, the program
/// without them is small. With the limit at the unlimited optimum's peak
/// the limit does not bind, so CBC on the program without the limit proves
/// the optimum, which dynamic programming along the chain confirms.
TEST(Solve, LimitThatDoesNotBindLeavesTheRowsOut) {
  if (!llvm::sys::findProgramByName("cbc"))
    GTEST_SKIP() << "no cbc";
  std::mt19937_64 rng(11);
  auto draw = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  constexpr int kNodes = 1500, kLive = 400, kStrategies = 4;
  Problem problem;
  problem.name = "chain";
  for (int n = 0; n < kNodes; ++n) {
    problem.intervals.push_back({n, n + kLive});
    problem.nodeCosts.emplace_back();
    problem.usages.emplace_back();
    for (int s = 0; s < kStrategies; ++s) {
      problem.nodeCosts.back().push_back(draw(0, 1000));
      problem.usages.back().push_back(draw(1, 10));
    }
    if (n > 0) {
      Edge edge{n - 1, n, {}};
      for (int i = 0; i < kStrategies * kStrategies; ++i)
        edge.costs.push_back(draw(0, 1000));
      problem.edges.push_back(std::move(edge));
    }
  }
  // The optimum without a limit, by dynamic programming along the chain.
  std::vector<std::vector<double>> best(kNodes);
  std::vector<std::vector<int>> from(kNodes);
  best[0] = problem.nodeCosts[0];
  for (int n = 1; n < kNodes; ++n) {
    best[n].assign(kStrategies, INFINITY);
    from[n].assign(kStrategies, 0);
    for (int b = 0; b < kStrategies; ++b)
      for (int a = 0; a < kStrategies; ++a) {
        double c = best[n - 1][a] +
                   problem.edges[n - 1].costs[a * kStrategies + b] +
                   problem.nodeCosts[n][b];
        if (c < best[n][b]) {
          best[n][b] = c;
          from[n][b] = a;
        }
      }
  }
  std::vector<int64_t> optimum(kNodes);
  optimum.back() = std::min_element(best.back().begin(), best.back().end()) -
                   best.back().begin();
  for (int n = kNodes - 1; n > 0; --n)
    optimum[n - 1] = from[n][optimum[n]];
  Evaluation unlimited = evaluate(problem, optimum);
  ASSERT_TRUE(unlimited.valid) << unlimited.why;
  problem.usageLimit = unlimited.peakUsage;
  ASSERT_LT(*problem.usageLimit, kLive * 10);

  SolveOptions options;
  options.timeLimitSeconds = 20;
  Solution solution = solve(problem, options);
  ASSERT_TRUE(solution.evaluation.valid) << solution.evaluation.why;
  EXPECT_EQ(solution.method, "ilp without the limit (optimal)");
  EXPECT_TRUE(solution.optimal);
  EXPECT_EQ(solution.evaluation.cost, unlimited.cost);
}

TEST(Solve, ReportsInvalidShapes) {
  Problem problem = twoNodes();
  problem.edges[0].costs.pop_back();
  Solution solution = solve(problem, SolveOptions());
  EXPECT_FALSE(solution.evaluation.valid);
  EXPECT_EQ(solution.evaluation.why,
            "edge 0 (0 -> 1) has 3 costs, expected 2 x 2 = 4");
}

} // namespace
