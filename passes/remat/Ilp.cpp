//===- Ilp.cpp - tg-remat's choice, exactly, by CBC -------------*- C++ -*-===//
//
// Writes the program in CPLEX LP format to a temporary file, runs `cbc` on
// it, and reads its solution file ("Optimal - objective value ...", then a
// line per nonzero variable: index, name, value, reduced cost).
//
//===----------------------------------------------------------------------===//

#include "passes/remat/Ilp.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::tg;

bool mlir::tg::haveCbc() {
  return static_cast<bool>(llvm::sys::findProgramByName("cbc"));
}

namespace {

/// A temporary file removed when it goes out of scope.
struct TempFile {
  SmallString<128> path;
  ~TempFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
};

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
  auto cbc = llvm::sys::findProgramByName("cbc");
  if (!cbc) {
    error = "the exact solver needs CBC (the cbc program, Debian package "
            "coinor-cbc), which is not on the PATH";
    return failure();
  }
  TempFile program, solution, log;
  if (llvm::sys::fs::createTemporaryFile("tg-remat", "lp", program.path) ||
      llvm::sys::fs::createTemporaryFile("tg-remat", "sol", solution.path) ||
      llvm::sys::fs::createTemporaryFile("tg-remat", "log", log.path)) {
    error = "cannot create a temporary file for CBC";
    return failure();
  }
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(program.path, ec);
    if (ec) {
      error = "cannot write " + program.path.str().str() + ": " + ec.message();
      return failure();
    }
    writeProgram(graph, budget, os);
  }
  std::string limit = llvm::formatv("{0}", seconds).str();
  // Tolerances far below CBC's defaults (1e-6, 1e-7): a value's bytes
  // reach 1e9, and at the default a k of 1e-6 passes for 0 while it
  // stands for a kilobyte, which lets CBC take a choice over the budget
  // for a bound and prove a feasible program infeasible.
  SmallVector<StringRef> args{*cbc,      program.path, "integerT",   "1e-9",
                              "primalT", "1e-10",      "sec",        limit,
                              "solve",   "solu",       solution.path};
  std::optional<StringRef> redirects[] = {std::nullopt, log.path.str(),
                                          log.path.str()};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*cbc, args, std::nullopt, redirects,
                                     /*SecondsToWait=*/0, /*MemoryLimit=*/0,
                                     &message);
  if (rc != 0) {
    error = "cbc failed (exit " + std::to_string(rc) + ")" +
            (message.empty() ? "" : ": " + message);
    return failure();
  }
  auto text = llvm::MemoryBuffer::getFile(solution.path);
  if (!text) {
    error = "cbc wrote no solution";
    return failure();
  }
  StringRef rest = (*text)->getBuffer();
  auto [status, lines] = rest.split('\n');
  if (status.starts_with("Infeasible") || status.contains("infeasible") ||
      status.contains("no integer solution")) {
    error = "no choice keeps at most " + std::to_string(budget) + " bytes";
    return failure();
  }
  IlpResult result;
  result.optimal = status.starts_with("Optimal");
  result.recompute.resize(graph.nodes.size());
  while (!lines.empty()) {
    StringRef line;
    std::tie(line, lines) = lines.split('\n');
    SmallVector<StringRef> fields;
    line.split(fields, ' ', -1, /*KeepEmpty=*/false);
    if (fields.size() < 3 || !fields[1].consume_front("y"))
      continue;
    unsigned n;
    double value;
    if (fields[1].getAsInteger(10, n) || fields[2].getAsDouble(value) ||
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
