//===- Ilp.cpp - tg-remat's choice, exactly, by CBC -------------*- C++ -*-===//
//
// Writes the program in CPLEX LP format and has CBC solve it
// (planning/lp's runCbc): the recomputed nodes are the y variables at 1.
//
//===----------------------------------------------------------------------===//

#include "passes/remat/Ilp.h"

#include "planning/lp/Cbc.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::tg;

bool mlir::tg::haveCbc() {
  return static_cast<bool>(llvm::sys::findProgramByName("cbc"));
}

namespace {

void writeProgram(const RematGraph &graph, int64_t budget,
                  llvm::raw_ostream &os) {
  os << "Minimize\n obj:";
  for (auto [n, node] : llvm::enumerate(graph.nodes))
    if (node.mayRecompute)
      os << llvm::formatv(" + {0} y{1}", (int64_t)node.flops + 1, n);
  os << " + 0 x0\nSubject To\n";
  for (auto [n, node] : llvm::enumerate(graph.nodes))
    for (int u : node.operands)
      os << llvm::formatv(" r{0}_{1}: y{0} - x{1} <= 0\n", n, u);
  for (auto [v, value] : llvm::enumerate(graph.values))
    os << llvm::formatv(" k{0}: k{0} - x{0} + y{1} >= 0\n", v, value.node);
  os << " memory:";
  for (auto [v, value] : llvm::enumerate(graph.values))
    os << llvm::formatv(" + {0} k{1}", value.bytes, v);
  os << " <= " << budget << "\nBounds\n";
  for (auto [v, value] : llvm::enumerate(graph.values)) {
    if (value.needed)
      os << " x" << v << " = 1\n";
    if (!value.mayKeep)
      os << " k" << v << " = 0\n";
  }
  for (auto [n, node] : llvm::enumerate(graph.nodes))
    if (!node.mayRecompute)
      os << " y" << n << " = 0\n";
  os << "Binaries\n";
  for (size_t v = 0; v < graph.values.size(); ++v)
    os << " x" << v << " k" << v << "\n";
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    os << " y" << n << "\n";
  os << "End\n";
}

} // namespace

FailureOr<IlpResult> mlir::tg::solveExactly(const RematGraph &graph,
                                            int64_t budget, double seconds,
                                            std::string &error) {
  if (!haveCbc()) {
    error = "the exact solver needs CBC (the cbc program, Debian package "
            "coinor-cbc), which is not on the PATH";
    return failure();
  }
  ::tg::lp::CbcRun run;
  run.seconds = seconds;
  run.tempPrefix = "tg-remat";
  // Tolerances far below CBC's defaults (1e-6, 1e-7): a value's bytes
  // reach 1e9, and at the default a k of 1e-6 passes for 0 while it
  // stands for a kilobyte, which lets CBC take a choice over the budget
  // for a bound and prove a feasible program infeasible.
  run.options = {"integerT", "1e-9", "primalT", "1e-10"};
  llvm::Expected<::tg::lp::CbcSolution> solution = ::tg::lp::runCbc(
      "cbc", [&](llvm::raw_ostream &os) { writeProgram(graph, budget, os); },
      run);
  if (!solution) {
    error = llvm::toString(solution.takeError());
    return failure();
  }
  using Status = ::tg::lp::CbcSolution::Status;
  if (solution->status == Status::Infeasible ||
      solution->status == Status::NoSolution) {
    error = "no choice keeps at most " + std::to_string(budget) + " bytes";
    return failure();
  }
  IlpResult result;
  result.optimal = solution->status == Status::Optimal;
  result.recompute.resize(graph.nodes.size());
  for (const auto &[name, value] : solution->values) {
    StringRef index = name;
    unsigned n;
    if (!index.consume_front("y") || index.getAsInteger(10, n) ||
        n >= graph.nodes.size())
      continue;
    if (value > 0.5)
      result.recompute.set(n);
  }
  return result;
}

FailureOr<Frontier> mlir::tg::exactFrontier(const RematGraph &graph,
                                            double seconds,
                                            std::string &error) {
  SmallVector<FrontierPoint> points;
  int64_t budget = graph.neededBytes();
  while (budget >= 0) {
    std::string why;
    FailureOr<IlpResult> result = solveExactly(graph, budget, seconds, why);
    if (failed(result)) {
      // Below the least any choice keeps: the frontier is complete.
      if (!points.empty() && why.rfind("no choice keeps", 0) == 0)
        break;
      error = why;
      return failure();
    }
    RematCost cost = evaluate(graph, result->recompute);
    points.push_back({cost.keptBytes, cost.addedFlops, cost.recomputed});
    budget = std::min(budget, cost.keptBytes) - 1;
  }
  return paretoFilter(std::move(points));
}
