//===- TgKernelOps.cpp - Fused kernels ----------------------------*- C++ -*-===//
//
// tg.kernel's verifier: the body's arguments and results match the op's, and
// an elementwise kernel holds only elementwise ops over one iteration space.
//
//===----------------------------------------------------------------------===//

#include "dialects/tg/IR/TgOps.h"

using namespace mlir;
using namespace mlir::tg;

bool mlir::tg::isElementwiseOp(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaximumOp, MinimumOp,
             CompareOp, SelectOp, NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp,
             TanhOp, ReluOp, SigmoidOp, SiluOp, GeluOp, GeluGradOp, CastOp,
             BroadcastToOp, SinOp, CosOp>(op);
}

YieldOp KernelOp::getYield() {
  return cast<YieldOp>(getBody().front().getTerminator());
}

LogicalResult KernelOp::verifyRegions() {
  Block &body = getBody().front();
  if (!isa<YieldOp>(body.getTerminator()))
    return emitOpError("body must end in tg.yield");
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body takes ")
           << body.getNumArguments() << " arguments for "
           << getInputs().size() << " inputs";
  for (auto [i, arg, input] : llvm::enumerate(body.getArguments(), getInputs()))
    if (arg.getType() != input.getType())
      return emitOpError("body argument ")
             << i << " is " << arg.getType() << ", input " << i << " is "
             << input.getType();
  YieldOp yield = getYield();
  if (yield.getValues().getTypes() != getResults().getTypes())
    return yield.emitOpError("yields ")
           << yield.getValues().getTypes() << " for kernel results "
           << getResults().getTypes();
  if (getResults().empty())
    return emitOpError("computes nothing: a kernel has at least one result");

  // elementwise: one iteration space, the shape of the first result.
  auto space = cast<RankedTensorType>(getResult(0).getType()).getShape();
  for (Operation &op : body.without_terminator()) {
    if (!isElementwiseOp(&op))
      return op.emitOpError("is not elementwise: an elementwise kernel "
                            "holds elementwise ops only");
    for (Value r : op.getResults())
      if (cast<RankedTensorType>(r.getType()).getShape() != space)
        return op.emitOpError("iterates over ")
               << formatShape(cast<RankedTensorType>(r.getType()).getShape())
               << ", the kernel over " << formatShape(space);
  }
  for (Value r : getResults())
    if (cast<RankedTensorType>(r.getType()).getShape() != space)
      return emitOpError("results iterate over ")
             << formatShape(cast<RankedTensorType>(r.getType()).getShape())
             << " and " << formatShape(space);
  return success();
}
