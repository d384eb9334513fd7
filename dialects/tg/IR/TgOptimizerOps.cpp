//===- TgOptimizerOps.cpp - Verifiers of the tg optimizer ops -----*- C++ -*-===//
//
// Checks the schedule and optimizer hyperparameters their kinds need, and
// that each optimizer update carries the state slots of its kind.
//
//===----------------------------------------------------------------------===//

#include "dialects/tg/IR/TgOps.h"

using namespace mlir;
using namespace mlir::tg;

LogicalResult LrScheduleOp::verify() {
  ScheduleKind kind = getKind();
  for (auto [name, count] :
       {std::pair<StringRef, int64_t>{"warmup_steps", getWarmupSteps()},
        {"total_steps", getTotalSteps()},
        {"step_size", getStepSize()},
        {"decay_steps", getDecaySteps()}})
    if (count < 0)
      return emitOpError() << name << " must not be negative, got " << count;
  bool decays = kind == ScheduleKind::cosine || kind == ScheduleKind::linear ||
                kind == ScheduleKind::wsd;
  if (decays && getTotalSteps() <= getWarmupSteps())
    return emitOpError() << "schedule \"" << stringifyEnum(kind)
                         << "\" needs total_steps (" << getTotalSteps()
                         << ") > warmup_steps (" << getWarmupSteps() << ")";
  if ((kind == ScheduleKind::step || kind == ScheduleKind::cyclic) &&
      getStepSize() < 1)
    return emitOpError() << "schedule \"" << stringifyEnum(kind)
                         << "\" needs step_size >= 1, got " << getStepSize();
  if (kind == ScheduleKind::wsd &&
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

SmallVector<StringRef> OptimizerUpdateOp::stateSlots(OptimizerKind kind,
                                                     double momentum) {
  switch (kind) {
  case OptimizerKind::sgd:
    return momentum > 0 ? SmallVector<StringRef>{"momentum_buffer"}
                        : SmallVector<StringRef>{};
  case OptimizerKind::adam:
  case OptimizerKind::adamw:
  case OptimizerKind::lamb:
    return {"exp_avg", "exp_avg_sq"};
  case OptimizerKind::rmsprop:
    return momentum > 0
               ? SmallVector<StringRef>{"square_avg", "momentum_buffer"}
               : SmallVector<StringRef>{"square_avg"};
  case OptimizerKind::adagrad:
    return {"sum"};
  case OptimizerKind::lion:
    return {"exp_avg"};
  }
  llvm_unreachable("unhandled OptimizerKind");
}

bool OptimizerUpdateOp::sharesLaunchWith(OptimizerUpdateOp other) {
  return getKindAttr() == other.getKindAttr() && getLr() == other.getLr() &&
         getStep() == other.getStep() &&
         getBeta1Attr() == other.getBeta1Attr() &&
         getBeta2Attr() == other.getBeta2Attr() &&
         getEpsAttr() == other.getEpsAttr() &&
         getWeightDecayAttr() == other.getWeightDecayAttr() &&
         getMomentumAttr() == other.getMomentumAttr() &&
         getNesterovAttr() == other.getNesterovAttr() &&
         getAlphaAttr() == other.getAlphaAttr() &&
         (*this)->getDiscardableAttrDictionary() ==
             other->getDiscardableAttrDictionary();
}

LogicalResult OptimizerUpdateOp::verify() {
  double momentum = getMomentum().convertToDouble();
  SmallVector<StringRef> slots = stateSlots(getKind(), momentum);
  if (getState().size() != slots.size())
    return emitOpError() << "optimizer \"" << stringifyEnum(getKind())
                         << "\" needs " << slots.size()
                         << " state tensors, got " << getState().size();
  Type paramType = getParam().getType();
  if (getGrad().getType() != paramType)
    return emitOpError() << "grad type " << getGrad().getType()
                         << " differs from param type " << paramType;
  for (auto [i, v] : llvm::enumerate(getState()))
    if (v.getType() != paramType)
      return emitOpError() << "state " << i << " (" << slots[i] << ") has type "
                           << v.getType() << ", param has " << paramType;
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
