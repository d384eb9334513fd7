//===- Cbc.h - Integer programs solved by CBC -------------------*- C++ -*-===//
//
// One way to run CBC for every solver that needs an exact answer: the
// caller writes its program in CPLEX LP format, CBC (a child process, so
// that a time limit and a hard stop bound it) solves it, and the solution
// file comes back as a status and the values of the variables it names.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PLANNING_LP_CBC_H
#define TGC_PLANNING_LP_CBC_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <utility>
#include <vector>

namespace tg::lp {

struct CbcRun {
  /// CBC's own time limit in seconds (its `sec`).
  double seconds = 10;
  /// Count `seconds` in wall-clock time (CBC's timeMode elapsed) rather
  /// than CPU time.
  bool elapsed = false;
  /// Kill CBC after this many seconds (0: never): for a CBC that hangs.
  unsigned hardStopSeconds = 0;
  /// Arguments before `solve` (tolerances: "integerT", "1e-9", ...).
  std::vector<std::string> options;
  /// A solution to start from, in CBC's solution-file format ("" none).
  std::string start;
  /// Names the temporary files ("tg-remat", "tg-shard-solve").
  std::string tempPrefix = "tgc-lp";
};

struct CbcSolution {
  enum class Status {
    Optimal,    ///< proven optimal
    Stopped,    ///< a limit stopped CBC; the values are its best
    Infeasible, ///< proven infeasible
    NoSolution, ///< stopped, or infeasible as an integer program, unproven
  } status = Status::NoSolution;
  /// The status line as CBC wrote it.
  std::string statusLine;
  /// Each variable CBC listed (its nonzeros) with its value.
  std::vector<std::pair<std::string, double>> values;
};

/// Runs the CBC program `cbcProgram` (a path or a name on the PATH) on the
/// program `writeProgram` writes. An error says what failed: no CBC, a
/// temporary file, CBC's exit, no solution file.
llvm::Expected<CbcSolution>
runCbc(llvm::StringRef cbcProgram,
       llvm::function_ref<void(llvm::raw_ostream &)> writeProgram,
       const CbcRun &run);

} // namespace tg::lp

#endif // TGC_PLANNING_LP_CBC_H
