//===- StepWalk.h - The walk both emitters print a step by ------*- C++ -*-===//
//
// A planned step function (after tg-fuse, tg-schedule and tg-plan-memory)
// as the pieces a backend prints, in the order tg-schedule left them. Both
// emitters walk it with walkStep and print what each piece is; neither
// decides what goes together, in which order, or where in the arena.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_COMPILER_CODEGEN_STEPWALK_H
#define TGC_COMPILER_CODEGEN_STEPWALK_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tg {

/// What a top-level op of a planned step is to a backend.
enum class StepPiece {
  Constant,   ///< tg.constant: data, no work
  View,       ///< tg.reshape, tg.flatten: its operand's bytes, no work
  Kernel,     ///< a tg.kernel of tg-fuse's: one launch or loop nest
  Collective, ///< a tg.all_reduce bucket of tg-schedule's, a tg.all_gather
              ///< or a tg.reduce_scatter
  Await,      ///< a tg.await: the compute stream waits for a bucket here
              ///< (nothing to print where collectives block)
  Layer,      ///< a func.call of a layer body (tg-outline-layers)
  Op,         ///< any other op: one library call or generated loop
};

/// The piece `op` is.
StepPiece stepPieceOf(Operation *op);

/// Whether every op of `func` that computes something (a constant aside)
/// has its tg.place; else an error naming `backend`: the plan is stale.
LogicalResult checkPlaced(func::FuncOp func, StringRef backend);

/// The function's memory plan, read where the backends start: its arena
/// bytes, or an error naming `backend` when the plan is missing or stale
/// (checkPlaced).
FailureOr<int64_t> plannedArenaBytes(func::FuncOp func, StringRef backend);

/// Calls `visit` on each top-level op but the terminator, in schedule
/// order, with the piece it is; stops at the first failure.
LogicalResult
walkStep(func::FuncOp func,
         llvm::function_ref<LogicalResult(Operation *, StepPiece)> visit);

} // namespace mlir::tg

#endif // TGC_COMPILER_CODEGEN_STEPWALK_H
