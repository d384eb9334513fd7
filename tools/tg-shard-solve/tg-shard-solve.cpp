//===- tg-shard-solve.cpp - Solve an auto-sharding problem file -*- C++ -*-===//
//
// tg-shard-solve PROBLEM.json[.gz] --time-limit S -o SOLUTION.json: reads a
// problem in the IOPDDL contest's format, solves it with TgShardSolve and
// writes the chosen strategy per node as a JSON list. One summary line goes
// to stdout; exit 1 when no valid choice was found or the input is bad.
//
//===----------------------------------------------------------------------===//

#include "planning/shardsolve/Solver.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace tg::shardsolve;

namespace cl = llvm::cl;

static cl::OptionCategory category("tg-shard-solve options");
static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<problem.json[.gz]>"),
                                      cl::cat(category));
static cl::opt<std::string> outputPath("o", cl::Required,
                                       cl::desc("Write the solution here"),
                                       cl::value_desc("solution.json"),
                                       cl::cat(category));
static cl::opt<double> timeLimit("time-limit",
                                 cl::desc("Seconds to search (default 60)"),
                                 cl::value_desc("seconds"), cl::init(60),
                                 cl::cat(category));
static cl::opt<uint64_t>
    seed("seed", cl::desc("Seed of the local search's random choices"),
         cl::init(0), cl::cat(category));
static cl::opt<std::string>
    cbcPath("cbc", cl::desc("The CBC program for the exact integer program"),
            cl::value_desc("path"), cl::init("cbc"), cl::cat(category));
static cl::opt<bool> noIlp("no-ilp",
                           cl::desc("Heuristics only: do not run CBC"),
                           cl::cat(category));
static cl::opt<bool> verbose("v", cl::desc("Progress lines on stderr"),
                             cl::cat(category));
static cl::list<std::string> startPaths(
    "start",
    cl::desc("Also start the search from this solution (a JSON list of "
             "strategy indices, as -o writes); repeatable"),
    cl::value_desc("solution.json"), cl::cat(category));

static const char *const kOverview =
    R"(tg-shard-solve: pick a sharding strategy per node

The problem (the ASPLOS/EuroSys 2025 IOPDDL contest's JSON, plain or .gz):
  {"problem": {"name": N,
    "nodes": {"intervals": [[start, end], ...],   live time steps, half-open
              "costs": [[c0, c1, ...], ...],      per node, per strategy
              "usages": [[u0, u1, ...], ...]},    memory per strategy
    "edges": {"nodes": [[u, v], ...],
              "costs": [[...], ...]},             |S_u| x |S_v|, row-major
    "usage_limit": L}}
A choice's cost is the chosen node costs plus, per edge [u, v],
costs[s_u * |S_v| + s_v]; at every time step the usages of the live nodes
must sum to at most L. Costs >= 1e18 are forbidden.

Methods: the problem first shrinks (forbidden and dominated strategies go,
parallel edges merge, the time axis compresses to where the live set
changes), and nodes tied by bijective forbidden pairs form groups that
move together (tg-auto-shard ties repeated layers so, which makes a stack
of layers one layer's program). The search starts from the least-memory
choice and from each --start solution (repaired to the limit, improved by
single-node moves), the best of them kept. When the integer program over
groups is small, CBC gets it first from that best, for a fifth of the
time; a proven optimum ends the search. Heuristics come next: Lagrangian
rounds (memory priced per time segment; the priced problem, over groups,
solved by PBQP's exact reductions, message passing (TRW-S) on the core
they leave, and exact moves over trees; then repaired to the limit by
whole groups; where the first round's unpriced choice fits the limit and
the program without its memory rows is small, CBC solves that one, whose
optimum, if it fits, is the problem's) and iterated local search
(single-node moves, ejection chains through tied nodes, repair at the
memory peak).
When the integer program over groups is small, CBC solves it again from
the best choice, and its proven optimum is final. Otherwise local search
and CBC on regions (whole groups around a random node, the rest fixed)
take turns until the time limit, each turn to the one gaining faster.
The result depends only on the seed, except where the time limit cuts a
search short.

The solution file is a JSON list of strategy indices, one per node.
Stdout: 'NAME: cost C, peak usage U of limit L, N nodes, method M, S s'.
)";

/// Integral costs (the contest's) print as integers, others in full.
static std::string formatCost(double cost) {
  if (std::floor(cost) == cost && std::fabs(cost) < 9e15)
    return std::to_string(static_cast<int64_t>(cost));
  return llvm::formatv("{0}", llvm::format("%.17g", cost)).str();
}

static int fail(const llvm::Twine &message) {
  llvm::errs() << "tg-shard-solve: " << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  if (!cl::ParseCommandLineOptions(argc, argv, kOverview, &llvm::errs()))
    return 1;
  if (!(timeLimit >= 0))
    return fail(llvm::formatv("--time-limit must be >= 0 seconds, got {0}",
                              timeLimit.getValue()));
  if (outputPath == inputPath ||
      (llvm::sys::fs::exists(outputPath) &&
       llvm::sys::fs::equivalent(outputPath, inputPath)))
    return fail("-o " + outputPath + " would overwrite the problem file");
  auto problem = readProblem(inputPath);
  if (!problem)
    return fail(llvm::toString(problem.takeError()));

  SolveOptions options;
  options.timeLimitSeconds = timeLimit;
  options.seed = seed;
  options.cbcPath = noIlp ? "" : cbcPath.getValue();
  options.verbosity = verbose ? 1 : 0;
  for (const std::string &path : startPaths) {
    auto strategies = readSolution(path, problem->numNodes());
    if (!strategies)
      return fail(llvm::toString(strategies.takeError()));
    options.starts.push_back({path, std::move(*strategies)});
  }
  Solution solution = solve(*problem, options);
  std::string name = problem->name.empty() ? inputPath : problem->name;
  if (!solution.cbcFailure.empty())
    llvm::errs() << "tg-shard-solve: warning: " << solution.cbcFailure
                 << "; solved without it (--no-ilp does so on purpose)\n";
  if (!solution.evaluation.valid) {
    llvm::outs() << name << ": no valid solution: " << solution.evaluation.why
                 << "\n";
    return 1;
  }
  if (llvm::Error error = writeSolution(solution, outputPath))
    return fail(llvm::toString(std::move(error)));
  std::string limit = problem->usageLimit ? std::to_string(*problem->usageLimit)
                                          : std::string("none");
  llvm::outs() << llvm::formatv(
      "{0}: cost {1}, peak usage {2} of limit {3}, {4} nodes, method {5}, "
      "{6:f1} s\n",
      name, formatCost(solution.evaluation.cost), solution.evaluation.peakUsage,
      limit, problem->numNodes(), solution.method, solution.seconds);
  return 0;
}
