//===- Autodiff.cpp - Reverse-mode differentiation of @forward ----*- C++ -*-===//
//
// Builds @forward_backward from @forward: a copy of the forward ops followed
// by their vector-Jacobian products in reverse order. Activity analysis keeps
// the backward pass to values that depend on a trainable parameter and reach
// the loss; whatever the VJPs build beyond that is erased at the end.
//
//===----------------------------------------------------------------------===//

#include "passes/autodiff/Passes.h"

#include "dialects/tg/IR/TgInterfaces.h"
#include "dialects/tg/IR/TgOps.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::tg {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "passes/autodiff/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

bool isTrainableParam(func::FuncOp func, unsigned i) {
  return func.getArgAttr(i, TgDialect::kParamAttr) &&
         !func.getArgAttr(i, TgDialect::kFrozenAttr);
}

bool isFloatTensor(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  return t && isa<FloatType>(t.getElementType());
}

/// Values that depend on a trainable parameter and on which `loss` depends.
DenseSet<Value> findActiveValues(func::FuncOp func, Value loss) {
  DenseSet<Value> varied;
  for (auto [i, arg] : llvm::enumerate(func.getArguments()))
    if (isTrainableParam(func, i) && isFloatTensor(arg.getType()))
      varied.insert(arg);
  Block &body = func.getBody().front();
  for (Operation &op : body)
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return varied.contains(v); }))
      for (Value r : op.getResults())
        if (isFloatTensor(r.getType()))
          varied.insert(r);

  DenseSet<Value> useful{loss};
  for (Operation &op : llvm::reverse(body))
    if (llvm::any_of(op.getResults(),
                     [&](Value v) { return useful.contains(v); }))
      for (Value operand : op.getOperands())
        useful.insert(operand);

  DenseSet<Value> active;
  for (Value v : varied)
    if (useful.contains(v))
      active.insert(v);
  return active;
}

/// Erases pure ops without uses, last first, so chains go too.
void eraseDeadOps(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
    if (op.use_empty() && isPure(&op) && !op.hasTrait<OpTrait::IsTerminator>())
      op.erase();
}

struct AutodiffPass : public tg::impl::AutodiffPassBase<AutodiffPass> {
  using AutodiffPassBase::AutodiffPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(forwardName);
    if (!forward) {
      module.emitError() << "tg-autodiff: no function @" << forwardName
                         << " to differentiate";
      return signalPassFailure();
    }
    if (module.lookupSymbol(outputName)) {
      module.emitError() << "tg-autodiff: @" << outputName
                         << " exists already";
      return signalPassFailure();
    }
    if (failed(differentiate(forward)))
      signalPassFailure();
  }

  LogicalResult differentiate(func::FuncOp forward) {
    if (!forward.getBody().hasOneBlock())
      return forward.emitError("tg-autodiff: @")
             << forward.getName() << " must have a single block";
    FunctionType type = forward.getFunctionType();
    if (type.getNumResults() < 1)
      return forward.emitError("tg-autodiff: @")
             << forward.getName() << " returns no loss";
    auto lossType = dyn_cast<RankedTensorType>(type.getResult(0));
    if (!lossType || lossType.getRank() != 0 ||
        !isa<FloatType>(lossType.getElementType()))
      return forward.emitError("tg-autodiff: the loss (result 0) must be a "
                               "float scalar tensor, got ")
             << type.getResult(0);

    // The new function: same arguments, forward results plus gradients.
    OpBuilder builder(forward);
    builder.setInsertionPointAfter(forward);
    SmallVector<Type> resultTypes(type.getResults());
    SmallVector<unsigned> params;
    for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
      if (!forward.getArgAttr(i, TgDialect::kParamAttr))
        continue;
      if (!isTrainableParam(forward, i)) {
        ++numFrozen;
        continue;
      }
      if (!isFloatTensor(type.getInput(i)))
        return forward.emitError("tg-autodiff: trainable parameter ")
               << forward.getArgAttr(i, TgDialect::kParamAttr)
               << " must be a float tensor, got " << type.getInput(i);
      params.push_back(i);
      resultTypes.push_back(type.getInput(i));
    }
    auto fb = func::FuncOp::create(
        builder, forward.getLoc(), outputName,
        builder.getFunctionType(type.getInputs(), resultTypes));
    fb.setAllArgAttrs(forward.getAllArgAttrs());
    Block *block = fb.addEntryBlock();

    // Copy the forward ops.
    IRMapping mapping;
    mapping.map(forward.getArguments(), fb.getArguments());
    builder.setInsertionPointToStart(block);
    auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
    for (Operation &op : forward.getBody().front().without_terminator())
      builder.clone(op, mapping);
    SmallVector<Value> results;
    for (Value v : ret.getOperands())
      results.push_back(mapping.lookup(v));

    // Backward, from d loss / d loss = 1.
    Value loss = results[0];
    DenseSet<Value> active = findActiveValues(fb, loss);
    DenseMap<Value, Value> grads;
    Location loc = forward.getLoc();
    auto seedType = RankedTensorType::get({}, lossType.getElementType());
    grads[loss] = ConstantOp::create(
        builder, loc,
        DenseElementsAttr::get(seedType,
                               FloatAttr::get(lossType.getElementType(), 1.0)));

    SmallVector<Operation *> forwardOps;
    for (Operation &op : *block)
      forwardOps.push_back(&op);
    for (Operation *op : llvm::reverse(forwardOps)) {
      SmallVector<Value> resultGrads;
      bool any = false;
      for (Value r : op->getResults()) {
        resultGrads.push_back(grads.lookup(r));
        any |= (bool)resultGrads.back();
      }
      if (!any || llvm::none_of(op->getOperands(), [&](Value v) {
            return active.contains(v);
          }))
        continue;
      auto differentiable = dyn_cast<DifferentiableOpInterface>(op);
      if (!differentiable)
        return op->emitOpError("has no gradient rule, but a trainable "
                               "parameter reaches the loss through it");
      SmallVector<Value> operandGrads;
      {
        // The gradient's ops compute for the op's layer.
        LayerStamp stamp(builder, op);
        if (failed(differentiable.buildVJP(builder, resultGrads, operandGrads)))
          return failure();
      }
      if (operandGrads.size() != op->getNumOperands())
        return op->emitOpError("gradient rule returned ")
               << operandGrads.size() << " gradients for "
               << op->getNumOperands() << " operands";
      for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads)) {
        if (!grad || !active.contains(operand))
          continue;
        if (grad.getType() != operand.getType())
          return op->emitOpError("gradient rule built a gradient of type ")
                 << grad.getType() << " for an operand of type "
                 << operand.getType();
        Value &slot = grads[operand];
        if (!slot) {
          slot = grad;
          continue;
        }
        // The sum of an operand's gradients is this op's backward too.
        LayerStamp stamp(builder, op);
        slot = AddOp::create(builder, loc, slot, grad).getResult();
      }
    }

    for (unsigned i : params) {
      Value grad = grads.lookup(fb.getArgument(i));
      if (!grad) {
        // The parameter does not reach the loss: its gradient is zero.
        auto paramType = cast<RankedTensorType>(type.getInput(i));
        grad = ConstantOp::create(
            builder, loc,
            DenseElementsAttr::get(
                paramType, FloatAttr::get(paramType.getElementType(), 0.0)));
      }
      results.push_back(grad);
      ++numGradients;
    }
    func::ReturnOp::create(builder, ret.getLoc(), results);

    // All at once: setting them one by one copies the whole list each time.
    SmallVector<DictionaryAttr> resultAttrs;
    for (unsigned r = 0; r < type.getNumResults(); ++r)
      resultAttrs.push_back(forward.getResultAttrDict(r));
    for (unsigned i : params)
      resultAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
          TgDialect::kGradAttr, forward.getArgAttr(i, TgDialect::kParamAttr))));
    fb.setAllResultAttrs(resultAttrs);
    eraseDeadOps(*block);
    return success();
  }
};

} // namespace
