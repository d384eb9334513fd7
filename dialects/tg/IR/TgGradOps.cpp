//===- TgGradOps.cpp - Verifiers of the tg gradient ops -----------*- C++ -*-===//
//
// Each gradient op's result has the type of the forward operand it is the
// gradient of; the verifiers check that against the other operands.
//
//===----------------------------------------------------------------------===//

#include "dialects/tg/IR/TgOps.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::tg;

/// `value` must have type `expected`; `what` names it in the diagnostic.
static LogicalResult expectType(Operation *op, Value value, Type expected,
                                StringRef what) {
  if (value.getType() != expected)
    return op->emitOpError() << what << " must have type " << expected
                             << ", got " << value.getType();
  return success();
}

/// What the norm gradients share with their forward ops: a last dim to
/// normalize over and a positive eps.
static LogicalResult verifyNormGradCommon(Operation *op, RankedTensorType x,
                                          APFloat eps) {
  if (x.getRank() < 1)
    return op->emitOpError() << "x must have rank >= 1";
  if (!(eps.convertToDouble() > 0))
    return op->emitOpError() << "eps must be positive, got "
                             << formatDouble(eps.convertToDouble());
  return success();
}

LogicalResult LayerNormGradOp::verify() {
  auto x = getX().getType();
  if (failed(verifyNormGradCommon(*this, x, getEps())) ||
      failed(expectType(*this, getGrad(), x, "grad")) ||
      failed(expectType(*this, getDx(), x, "dx")))
    return failure();
  auto param = RankedTensorType::get({x.getShape().back()}, x.getElementType());
  if (getWeight() && failed(expectType(*this, getWeight(), param, "weight")))
    return failure();
  if (failed(expectType(*this, getDweight(), param, "dweight")) ||
      failed(expectType(*this, getDbias(), param, "dbias")))
    return failure();
  return success();
}

LogicalResult RmsNormGradOp::verify() {
  auto x = getX().getType();
  if (failed(verifyNormGradCommon(*this, x, getEps())) ||
      failed(expectType(*this, getGrad(), x, "grad")) ||
      failed(expectType(*this, getDx(), x, "dx")))
    return failure();
  auto param = RankedTensorType::get({x.getShape().back()}, x.getElementType());
  if (getWeight() && failed(expectType(*this, getWeight(), param, "weight")))
    return failure();
  return expectType(*this, getDweight(), param, "dweight");
}

LogicalResult EmbeddingGradOp::verify() {
  auto grad = getGrad().getType();
  auto indices = getIndices().getType();
  auto table = getType();
  if (table.getRank() != 2)
    return emitOpError() << "result must have rank 2, got rank "
                         << table.getRank();
  if (grad.getElementType() != table.getElementType())
    return emitOpError() << "element types differ: grad has "
                         << grad.getElementType() << ", result has "
                         << table.getElementType();
  SmallVector<int64_t> expected(indices.getShape());
  expected.push_back(table.getDimSize(1));
  if (grad.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "grad shape " << formatShape(grad.getShape())
                         << " must be the indices shape plus the row size, "
                         << formatShape(expected);
  return success();
}

LogicalResult CrossEntropyGradOp::verify() {
  auto logits = getLogits().getType();
  if (failed(expectType(*this, getResult(), logits, "result")))
    return failure();
  if (logits.getRank() < 1)
    return emitOpError() << "logits must have rank >= 1";
  ArrayRef<int64_t> labelsShape = getLabels().getType().getShape();
  if (labelsShape != logits.getShape().drop_back())
    return emitOpError() << "labels shape " << formatShape(labelsShape)
                         << " must be the logits shape "
                         << formatShape(logits.getShape())
                         << " without its last dim";
  LossReduction reduction = getReduction();
  auto grad = getGrad().getType();
  // The gradient of the loss, which tg.cross_entropy makes f32 whatever the
  // logits' type; the result is the logits' gradient in the logits' type.
  if (!grad.getElementType().isF32())
    return emitOpError() << "grad must have element type f32 (the loss's), "
                            "got "
                         << grad.getElementType();
  if (reduction == LossReduction::none) {
    if (grad.getShape() != labelsShape)
      return emitOpError() << "grad shape " << formatShape(grad.getShape())
                           << " must be the labels shape "
                           << formatShape(labelsShape)
                           << " for reduction \"none\"";
  } else if (grad.getRank() != 0) {
    return emitOpError() << "grad must be a scalar for reduction \""
                         << stringifyEnum(reduction) << "\", got shape "
                         << formatShape(grad.getShape());
  }
  return success();
}

AttentionOp AttentionGradOp::getForward() {
  for (Operation *user : getQuery().getUsers()) {
    auto fwd = dyn_cast<AttentionOp>(user);
    if (fwd && fwd->getBlock() == (*this)->getBlock() &&
        fwd->isBeforeInBlock(*this) && fwd.getKey() == getKey() &&
        fwd.getValue() == getValue() && fwd.getMask() == getMask() &&
        fwd.getCausal() == getCausal() && fwd.getScale() == getScale() &&
        fwd.getType() == getGrad().getType())
      return fwd;
  }
  return {};
}

LogicalResult AttentionGradOp::verify() {
  SmallVector<Type> forward;
  AttentionOp::Properties props;
  props.causal = getCausalAttr();
  props.scale = getScaleAttr();
  SmallVector<Value, 4> forwardOperands = {getQuery(), getKey(), getValue()};
  if (getMask())
    forwardOperands.push_back(getMask());
  AttentionOp::Adaptor adaptor(forwardOperands, nullptr, props, {});
  if (failed(inferForwardType(*this, adaptor, forward)))
    return failure();
  if (failed(expectType(*this, getGrad(), forward[0], "grad")) ||
      failed(expectType(*this, getDquery(), getQuery().getType(), "dquery")) ||
      failed(expectType(*this, getDkey(), getKey().getType(), "dkey")) ||
      failed(expectType(*this, getDvalue(), getValue().getType(), "dvalue")))
    return failure();
  if (getDmask() && !getMask())
    return emitOpError() << "has a dmask result but no mask operand";
  if (getDmask() &&
      failed(expectType(*this, getDmask(), getMask().getType(), "dmask")))
    return failure();
  return success();
}

namespace {
/// A mask that is not trained (a padding mask from the batch) leaves dmask
/// unread: the kernels then skip the reduction of the scores' gradient.
struct DropUnusedMaskGrad : public OpRewritePattern<AttentionGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionGradOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getDmask() || !op.getDmask().use_empty())
      return failure();
    auto lean = AttentionGradOp::create(
        rewriter, op.getLoc(),
        TypeRange{op.getDquery().getType(), op.getDkey().getType(),
                  op.getDvalue().getType()},
        op.getGrad(), op.getQuery(), op.getKey(), op.getValue(), op.getMask(),
        op.getCausalAttr(), op.getScaleAttr());
    rewriter.replaceAllUsesWith(op.getDquery(), lean.getDquery());
    rewriter.replaceAllUsesWith(op.getDkey(), lean.getDkey());
    rewriter.replaceAllUsesWith(op.getDvalue(), lean.getDvalue());
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

void AttentionGradOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                  MLIRContext *context) {
  results.add<DropUnusedMaskGrad>(context);
}

/// Checks a conv gradient by re-inferring the forward output type from the
/// forward input and weight.
static LogicalResult verifyConvGrad(Operation *op, Value grad, Value input,
                                    Value weight, ArrayRef<int64_t> stride,
                                    ArrayRef<int64_t> padding,
                                    ArrayRef<int64_t> dilation,
                                    int64_t groups) {
  OpBuilder b(op->getContext());
  SmallVector<Type> forward;
  Conv2dOp::Properties props;
  props.stride = b.getDenseI64ArrayAttr(stride);
  props.padding = b.getDenseI64ArrayAttr(padding);
  props.dilation = b.getDenseI64ArrayAttr(dilation);
  props.groups = b.getI64IntegerAttr(groups);
  Conv2dOp::Adaptor adaptor(ValueRange{input, weight}, nullptr, props, {});
  if (failed(inferForwardType(op, adaptor, forward)))
    return failure();
  return expectType(op, grad, forward[0], "grad");
}

LogicalResult Conv2dGradInputOp::verify() {
  return verifyConvGrad(*this, getGrad(), getResult(), getWeight(),
                        getStride(), getPadding(), getDilation(), getGroups());
}

LogicalResult Conv2dGradWeightOp::verify() {
  return verifyConvGrad(*this, getGrad(), getInput(), getResult(), getStride(),
                        getPadding(), getDilation(), getGroups());
}

template <typename GradOp, typename ForwardOp>
static LogicalResult verifyPoolGrad(GradOp op) {
  if (failed(expectType(op, op.getResult(), op.getInput().getType(), "result")))
    return failure();
  SmallVector<Type> forward;
  typename ForwardOp::Properties props;
  props.kernel_size = op.getKernelSizeAttr();
  props.stride = op.getStrideAttr();
  props.padding = op.getPaddingAttr();
  typename ForwardOp::Adaptor adaptor(ValueRange{op.getInput()}, nullptr, props,
                                      {});
  if (failed(inferForwardType(op, adaptor, forward)))
    return failure();
  return expectType(op, op.getGrad(), forward[0], "grad");
}

LogicalResult MaxPool2dGradOp::verify() {
  return verifyPoolGrad<MaxPool2dGradOp, MaxPool2dOp>(*this);
}

LogicalResult AvgPool2dGradOp::verify() {
  return verifyPoolGrad<AvgPool2dGradOp, AvgPool2dOp>(*this);
}

LogicalResult SliceGradOp::verify() {
  SmallVector<Type> forward;
  SliceOp::Properties props;
  props.start = getStartAttr();
  props.limit = getLimitAttr();
  props.stride = getStrideAttr();
  SliceOp::Adaptor adaptor(ValueRange{getResult()}, nullptr, props, {});
  if (failed(inferForwardType(*this, adaptor, forward)))
    return failure();
  return expectType(*this, getGrad(), forward[0], "grad");
}
