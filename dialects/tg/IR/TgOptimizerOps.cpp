//===- TgOptimizerOps.cpp - Verifiers of the tg optimizer ops -----*- C++ -*-===//
//
// Checks schedule and optimizer kinds, their hyperparameters, and that each
// optimizer update carries the state slots its kind needs.
//
//===----------------------------------------------------------------------===//

#include "dialects/tg/IR/TgOps.h"

using namespace mlir;
using namespace mlir::tg;

LogicalResult LrScheduleOp::verify() {
  StringRef kind = getKind();
  if (!llvm::is_contained({"constant", "cosine", "linear", "step", "cyclic",
                           "wsd"},
                          kind))
    return emitOpError() << "unknown schedule \"" << kind
                         << "\"; expected constant, cosine, linear, step, "
                            "cyclic or wsd";
  if (getWarmupSteps() < 0 || getTotalSteps() < 0 || getStepSize() < 0 ||
      getDecaySteps() < 0)
    return emitOpError() << "step counts must not be negative";
  if ((kind == "cosine" || kind == "linear" || kind == "wsd") &&
      getTotalSteps() <= getWarmupSteps())
    return emitOpError() << "schedule \"" << kind << "\" needs total_steps ("
                         << getTotalSteps() << ") > warmup_steps ("
                         << getWarmupSteps() << ")";
  if ((kind == "step" || kind == "cyclic") && getStepSize() < 1)
    return emitOpError() << "schedule \"" << kind << "\" needs step_size >= 1";
  if (kind == "wsd" &&
      (getDecaySteps() < 1 ||
       getDecaySteps() > getTotalSteps() - getWarmupSteps()))
    return emitOpError() << "schedule \"wsd\" needs 1 <= decay_steps <= "
                            "total_steps - warmup_steps, got "
                         << getDecaySteps();
  return success();
}

FailureOr<SmallVector<StringRef>>
OptimizerUpdateOp::stateSlots(StringRef kind, double momentum) {
  if (kind == "sgd")
    return momentum > 0 ? SmallVector<StringRef>{"momentum_buffer"}
                        : SmallVector<StringRef>{};
  if (kind == "adam" || kind == "adamw" || kind == "lamb")
    return SmallVector<StringRef>{"exp_avg", "exp_avg_sq"};
  if (kind == "rmsprop")
    return momentum > 0
               ? SmallVector<StringRef>{"square_avg", "momentum_buffer"}
               : SmallVector<StringRef>{"square_avg"};
  if (kind == "adagrad")
    return SmallVector<StringRef>{"sum"};
  if (kind == "lion")
    return SmallVector<StringRef>{"exp_avg"};
  return failure();
}

LogicalResult OptimizerUpdateOp::verify() {
  double momentum = getMomentum().convertToDouble();
  auto slots = stateSlots(getKind(), momentum);
  if (failed(slots))
    return emitOpError() << "unknown optimizer \"" << getKind()
                         << "\"; expected sgd, adam, adamw, rmsprop, adagrad, "
                            "lamb or lion";
  if (getState().size() != slots->size())
    return emitOpError() << "optimizer \"" << getKind() << "\" needs "
                         << slots->size() << " state tensors, got "
                         << getState().size();
  Type paramType = getParam().getType();
  if (getGrad().getType() != paramType)
    return emitOpError() << "grad type " << getGrad().getType()
                         << " differs from param type " << paramType;
  for (Value v : getState())
    if (v.getType() != paramType)
      return emitOpError() << "state type " << v.getType()
                           << " differs from param type " << paramType;
  if (getNewParam().getType() != paramType ||
      getNewState().size() != getState().size() ||
      !llvm::all_of(getNewState().getTypes(),
                    [&](Type t) { return t == paramType; }))
    return emitOpError() << "results must be the param and state types";
  auto inUnit = [](double v) { return v >= 0 && v < 1; };
  if (!inUnit(getBeta1().convertToDouble()) ||
      !inUnit(getBeta2().convertToDouble()))
    return emitOpError() << "beta1 and beta2 must be in [0, 1)";
  if (!(getEps().convertToDouble() >= 0) ||
      !(getWeightDecay().convertToDouble() >= 0) || !(momentum >= 0))
    return emitOpError() << "eps, weight_decay and momentum must not be "
                            "negative";
  if (getNesterov() && momentum <= 0)
    return emitOpError() << "nesterov needs momentum > 0";
  return success();
}
