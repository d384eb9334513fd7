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
  for (auto [name, count] :
       {std::pair<StringRef, int64_t>{"warmup_steps", getWarmupSteps()},
        {"total_steps", getTotalSteps()},
        {"step_size", getStepSize()},
        {"decay_steps", getDecaySteps()}})
    if (count < 0)
      return emitOpError() << name << " must not be negative, got " << count;
  if ((kind == "cosine" || kind == "linear" || kind == "wsd") &&
      getTotalSteps() <= getWarmupSteps())
    return emitOpError() << "schedule \"" << kind << "\" needs total_steps ("
                         << getTotalSteps() << ") > warmup_steps ("
                         << getWarmupSteps() << ")";
  if ((kind == "step" || kind == "cyclic") && getStepSize() < 1)
    return emitOpError() << "schedule \"" << kind
                         << "\" needs step_size >= 1, got " << getStepSize();
  if (kind == "wsd" &&
      (getDecaySteps() < 1 ||
       getDecaySteps() > getTotalSteps() - getWarmupSteps()))
    return emitOpError() << "schedule \"wsd\" needs 1 <= decay_steps <= "
                            "total_steps - warmup_steps, got "
                         << getDecaySteps();
  return success();
}

LogicalResult GlobalNormOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
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
  for (auto [i, v] : llvm::enumerate(getState()))
    if (v.getType() != paramType)
      return emitOpError() << "state " << i << " (" << (*slots)[i]
                           << ") has type " << v.getType()
                           << ", param has " << paramType;
  if (getNewState().size() != getState().size())
    return emitOpError() << "needs " << getState().size() + 1
                         << " results (the param and its state), got "
                         << getNumResults();
  for (auto [i, t] : llvm::enumerate(getResultTypes()))
    if (t != paramType)
      return emitOpError() << "result " << i << " has type " << t
                           << ", param has " << paramType;
  for (auto [name, value] :
       {std::pair<StringRef, double>{"beta1", getBeta1().convertToDouble()},
        {"beta2", getBeta2().convertToDouble()}})
    if (!(value >= 0 && value < 1))
      return emitOpError() << name << " must be in [0, 1), got "
                           << formatDouble(value);
  for (auto [name, value] :
       {std::pair<StringRef, double>{"eps", getEps().convertToDouble()},
        {"weight_decay", getWeightDecay().convertToDouble()},
        {"momentum", momentum}})
    if (!(value >= 0))
      return emitOpError() << name << " must not be negative, got "
                           << formatDouble(value);
  if (getNesterov() && momentum <= 0)
    return emitOpError() << "nesterov needs momentum > 0, got "
                         << formatDouble(momentum);
  return success();
}
