//===- Ilp.h - tg-remat's choice, exactly, by CBC ---------------*- C++ -*-===//
//
// The budgeted problem as an integer program, solved by COIN-OR CBC (the
// `cbc` program from Debian's coinor-cbc): the exact optimum, as Checkmate
// solves its formulation with an ILP solver, for what the heuristic of
// MinCut.h is measured against and for graphs small enough to solve exactly.
//
//   minimize   sum_n FLOPs(n) y_n
//   subject to x_v = 1                   v read by the backward
//              y_n <= x_u                u read by n
//              k_v >= x_v - y_p(v)       v kept
//              sum_v bytes(v) k_v <= budget
//              x, y, k binary; y_n = 0 where n may not run again,
//              k_v = 0 where v may not be kept
//
// Unlike Checkmate's, the formulation has no schedule: an op runs again at
// most once, right before the backward reads it, as tg-remat places copies.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_REMAT_ILP_H
#define TGC_PASSES_REMAT_ILP_H

#include "passes/remat/Frontier.h"

namespace mlir::tg {

struct IlpResult {
  /// A bit per node: the ops to run again.
  llvm::BitVector recompute;
  /// CBC proved it optimal (else it stopped at the time limit with the
  /// best it had).
  bool optimal = false;
};

/// Solves the problem for `budget` kept bytes with CBC in at most
/// `seconds`; fails with a message when CBC is not installed, fails or
/// finds no solution (an infeasible budget included).
FailureOr<IlpResult> solveExactly(const RematGraph &graph, int64_t budget,
                                  double seconds, std::string &error);

/// The exact frontier of `graph` (a layer): solved for everything it
/// could keep, then for one byte less than each optimum found, until no
/// choice keeps less. Each solve gets `seconds`; fails as solveExactly.
FailureOr<Frontier> exactFrontier(const RematGraph &graph, double seconds,
                                  std::string &error);

/// Whether the `cbc` program is on the PATH.
bool haveCbc();

} // namespace mlir::tg

#endif // TGC_PASSES_REMAT_ILP_H
