//===- StepWalk.cpp - The walk both emitters print a step by --------------===//

#include "compiler/codegen/StepWalk.h"

#include "dialects/tg/IR/TgOps.h"

using namespace mlir;
using namespace mlir::tg;

StepPiece mlir::tg::stepPieceOf(Operation *op) {
  if (isa<ConstantOp>(op))
    return StepPiece::Constant;
  if (isa<ReshapeOp, FlattenOp>(op))
    return StepPiece::View;
  if (isa<KernelOp>(op))
    return StepPiece::Kernel;
  if (isa<func::CallOp>(op))
    return StepPiece::Layer;
  if (isa<AwaitOp>(op))
    return StepPiece::Await;
  // tg.all_slice communicates nothing: a copy, an op like any other.
  if (isa<AllReduceOp, AllGatherOp, ReduceScatterOp>(op))
    return StepPiece::Collective;
  return StepPiece::Op;
}

LogicalResult mlir::tg::checkPlaced(func::FuncOp func, StringRef backend) {
  for (Operation &op : func.getBody().front().without_terminator())
    if (op.getNumResults() > 0 && !isa<ConstantOp>(op) &&
        !op.hasAttr(TgDialect::kPlaceAttr))
      return op.emitError(backend)
             << ": no place in the arena (tg.place): the memory plan is "
                "stale; run tg-plan-memory last";
  return success();
}

FailureOr<int64_t> mlir::tg::plannedArenaBytes(func::FuncOp func,
                                               StringRef backend) {
  auto arena = func->getAttrOfType<ArenaAttr>(TgDialect::kArenaAttr);
  if (!arena)
    return func.emitError(backend)
           << ": @" << func.getName()
           << " has no memory plan (run tg-plan-memory)";
  if (failed(checkPlaced(func, backend)))
    return failure();
  return arena.getBytes();
}

LogicalResult mlir::tg::walkStep(
    func::FuncOp func,
    llvm::function_ref<LogicalResult(Operation *, StepPiece)> visit) {
  for (Operation &op : func.getBody().front().without_terminator())
    if (failed(visit(&op, stepPieceOf(&op))))
      return failure();
  return success();
}
