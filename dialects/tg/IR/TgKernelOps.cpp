//===- TgKernelOps.cpp - Fused kernels --------------------------*- C++ -*-===//
//
// tg.kernel's verifier: the body's arguments and results match the op's, and
// the body has the form its kind promises: an elementwise kernel holds only
// elementwise ops over one iteration space, a gemm kernel one tg.matmul and
// its elementwise epilogue, a reduction kernel one single-pass reduction
// between an elementwise prologue and epilogue, a classifier kernel a
// cross-entropy and its gradient on the same logits, an optimizer kernel
// updates of one kind and hyperparameters.
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

bool mlir::tg::isDataMovementOp(Operation *op) {
  return isa<TransposeOp, SliceOp, SliceGradOp, ConcatOp, ReshapeOp,
             FlattenOp>(op);
}

std::optional<Attribute> mlir::tg::literalValue(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  auto dense =
      constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
  if (!dense)
    return std::nullopt;
  if (dense.isSplat())
    return dense.getSplatValue<Attribute>();
  if (dense.getNumElements() == 1)
    return *dense.getValues<Attribute>().begin();
  return std::nullopt;
}

bool mlir::tg::isLiteralOne(Value v) {
  auto value = dyn_cast_or_null<FloatAttr>(literalValue(v).value_or(nullptr));
  return value && value.getValueAsDouble() == 1.0;
}

bool mlir::tg::readsConstantFromMemory(OpOperand &use) {
  Operation *user = use.getOwner();
  Value v = use.get();
  if (isElementwiseOp(user))
    return !literalValue(v);
  auto kernel = dyn_cast<KernelOp>(user);
  if (!kernel)
    return true;
  BlockArgument arg = kernel.getBody().getArgument(use.getOperandNumber());
  if (arg.use_empty())
    return false;
  if (kernel.getKind() == KernelKind::elementwise)
    return !literalValue(v);
  if (kernel.getKind() == KernelKind::classifier)
    return !isLiteralOne(v) || llvm::any_of(arg.getUses(), [](OpOperand &u) {
      auto grad = dyn_cast<CrossEntropyGradOp>(u.getOwner());
      return !grad || u.get() != grad.getGrad();
    });
  return true;
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
  if (getEpilogue() && getKind() != KernelKind::gemm)
    return emitOpError("has an epilogue, which only a gemm kernel has");

  switch (getKind()) {
  case KernelKind::elementwise:
    return verifyElementwiseBody();
  case KernelKind::gemm:
    return verifyGemmBody();
  case KernelKind::reduction:
    return verifyReductionBody();
  case KernelKind::classifier:
    return verifyClassifierBody();
  case KernelKind::optimizer:
    return verifyOptimizerBody();
  }
  llvm_unreachable("unknown kernel kind");
}

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// The kernel yields the result of `anchor` (its matmul or reduction) or of
/// an op after it: the epilogue's last value, which the backends store.
static LogicalResult verifyYieldsFrom(KernelOp kernel, Operation *anchor,
                                      StringRef what) {
  YieldOp yield = kernel.getYield();
  for (Value v : yield.getValues()) {
    Operation *def = v.getDefiningOp();
    if (!def || def->isBeforeInBlock(anchor))
      return yield.emitOpError("yields neither the ")
             << what << "'s result nor an epilogue value";
  }
  return success();
}

/// Every op of `ops` is elementwise over `space`; `role` names them in the
/// diagnostic ("an elementwise kernel holds", ...).
static LogicalResult verifyElementwiseOver(iterator_range<Block::iterator> ops,
                                           ArrayRef<int64_t> space,
                                           StringRef role, StringRef what) {
  for (Operation &op : ops) {
    if (!isElementwiseOp(&op))
      return op.emitOpError("is not elementwise: ")
             << role << " elementwise ops only";
    for (Value r : op.getResults())
      if (shapeOf(r) != space)
        return op.emitOpError("iterates over ")
               << formatShape(shapeOf(r)) << ", " << what << " "
               << formatShape(space);
  }
  return success();
}

/// Ops an elementwise kernel computes at any index it is asked for: data
/// movement (read at a remapped index) and tg.iota.
static bool isIndexRemapOp(Operation *op) {
  return isDataMovementOp(op) || isa<IotaOp>(op);
}

LogicalResult KernelOp::verifyElementwiseBody() {
  // One iteration space, the shape of the first result. Elementwise ops
  // over it; data movement (and what it reads) may take other shapes.
  Block &body = getBody().front();
  auto space = shapeOf(getResult(0));
  bool remaps = llvm::any_of(body.without_terminator(),
                             [](Operation &op) { return isIndexRemapOp(&op); });
  if (!remaps &&
      failed(verifyElementwiseOver(body.without_terminator(), space,
                                   "an elementwise kernel holds",
                                   "the kernel over")))
    return failure();
  if (remaps)
    for (Operation &op : body.without_terminator())
      if (!isElementwiseOp(&op) && !isIndexRemapOp(&op))
        return op.emitOpError("is neither elementwise nor data movement: an "
                              "elementwise kernel holds no other ops");
  for (Value r : getResults())
    if (shapeOf(r) != space)
      return emitOpError("results iterate over ")
             << formatShape(shapeOf(r)) << " and " << formatShape(space);
  return success();
}

LogicalResult KernelOp::verifyGemmBody() {
  // One tg.matmul first, then its epilogue over the matmul's result shape.
  Block &body = getBody().front();
  auto matmul = dyn_cast<MatmulOp>(body.front());
  if (!matmul)
    return emitOpError("a gemm kernel's body starts with tg.matmul, not ")
           << body.front().getName();
  auto space = shapeOf(matmul.getResult());
  if (failed(verifyElementwiseOver(
          llvm::make_range(std::next(body.begin()),
                           body.getTerminator()->getIterator()),
          space, "a gemm kernel's epilogue holds", "the gemm's result is")))
    return failure();
  if (failed(verifyYieldsFrom(*this, matmul, "matmul")))
    return failure();
  if (std::optional<GemmEpilogue> epilogue = getEpilogue();
      epilogue && matchEpilogue(body) != epilogue)
    return emitOpError("names the epilogue ")
           << stringifyGemmEpilogue(*epilogue)
           << ", but its body is not that epilogue (bias: a tg.add of the "
              "matmul and a vector as long as its last dim; gelu: a tanh "
              "tg.gelu of the matmul; bias_gelu: the bias add then a tanh "
              "tg.gelu; gelu_grad: a tanh tg.gelu_grad of the matmul's "
              "gradient)";
  return success();
}

bool KernelOp::isBiasAdd(Operation *op, Value product) {
  auto add = dyn_cast<AddOp>(op);
  if (!add || (add.getLhs() == product) == (add.getRhs() == product))
    return false;
  Value bias = add.getLhs() == product ? add.getRhs() : add.getLhs();
  auto b = cast<RankedTensorType>(bias.getType());
  auto p = cast<RankedTensorType>(product.getType());
  int64_t n = p.getShape().back();
  return b.getElementType() == p.getElementType() && b.getRank() >= 1 &&
         b.getShape().back() == n && b.getNumElements() == n &&
         add.getType() == p;
}

bool KernelOp::isTanhGelu(Operation *op, Value x) {
  auto gelu = dyn_cast<GeluOp>(op);
  return gelu && gelu.getApproximate() == GeluApproximation::tanh &&
         gelu.getX() == x;
}

bool KernelOp::isTanhGeluGrad(Operation *op, Value product) {
  auto grad = dyn_cast<GeluGradOp>(op);
  return grad && grad.getApproximate() == GeluApproximation::tanh &&
         grad.getGrad() == product && grad.getX() != product;
}

std::optional<GemmEpilogue> KernelOp::matchEpilogue(Block &body) {
  auto matmul = dyn_cast<MatmulOp>(body.front());
  if (!matmul)
    return std::nullopt;
  SmallVector<Operation *> epilogue;
  for (Operation &op : llvm::make_range(std::next(body.begin()),
                                        body.getTerminator()->getIterator()))
    epilogue.push_back(&op);
  Value c = matmul.getResult();
  if (epilogue.size() == 1 && isBiasAdd(epilogue[0], c))
    return GemmEpilogue::bias;
  if (epilogue.size() == 1 && isTanhGelu(epilogue[0], c))
    return GemmEpilogue::gelu;
  if (epilogue.size() == 2 && isBiasAdd(epilogue[0], c) &&
      isTanhGelu(epilogue[1], epilogue[0]->getResult(0)))
    return GemmEpilogue::bias_gelu;
  if (epilogue.size() == 1 && isTanhGeluGrad(epilogue[0], c))
    return GemmEpilogue::gelu_grad;
  return std::nullopt;
}

std::optional<std::array<int64_t, 3>>
KernelOp::getReductionNest(Operation *op) {
  SmallVector<int64_t> dims;
  Value x;
  if (auto r = dyn_cast<ReduceSumOp>(op))
    dims = r.getReducedDims(), x = r.getX();
  else if (auto r = dyn_cast<ReduceMeanOp>(op))
    dims = r.getReducedDims(), x = r.getX();
  else if (auto r = dyn_cast<ReduceMaxOp>(op))
    dims = r.getReducedDims(), x = r.getX();
  else
    return std::nullopt;
  ArrayRef<int64_t> shape = shapeOf(x);
  if (llvm::any_of(shape, [](int64_t d) { return d <= 0; }))
    return std::nullopt;
  // Runs of reduced dims, size-1 dims left out: at most one.
  std::array<int64_t, 3> nest = {1, 1, 1};
  int runs = 0;
  bool inRun = false;
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (d == 1)
      continue;
    bool reduced = llvm::is_contained(dims, (int64_t)i);
    if (reduced && !inRun && ++runs > 1)
      return std::nullopt;
    inRun = reduced;
    nest[reduced ? 1 : runs == 0 ? 0 : 2] *= d;
  }
  return nest;
}

LogicalResult KernelOp::verifyReductionBody() {
  // Prologue over the input, one reduction, epilogue over its result.
  Block &body = getBody().front();
  Operation *reduction = nullptr;
  for (Operation &op : body.without_terminator())
    if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(op)) {
      if (reduction)
        return op.emitOpError("is a second reduction: a reduction kernel "
                              "holds one");
      reduction = &op;
    }
  if (!reduction)
    return emitOpError("a reduction kernel holds a tg.reduce_sum, "
                       "tg.reduce_mean or tg.reduce_max");
  if (getNumResults() != 1)
    return emitOpError("a reduction kernel has one result, not ")
           << getNumResults();
  if (!getReductionNest(reduction))
    return reduction->emitOpError(
        "reduces dims that are not adjacent: a reduction kernel is one loop "
        "nest");
  auto inSpace = shapeOf(reduction->getOperand(0));
  auto outSpace = shapeOf(reduction->getResult(0));
  if (failed(verifyElementwiseOver(
          llvm::make_range(body.begin(), reduction->getIterator()), inSpace,
          "a reduction kernel's prologue holds", "the reduction's input is")) ||
      failed(verifyElementwiseOver(
          llvm::make_range(std::next(reduction->getIterator()),
                           body.getTerminator()->getIterator()),
          outSpace, "a reduction kernel's epilogue holds",
          "the reduction's result is")))
    return failure();
  // The prologue's values exist only while reducing.
  for (Operation &op : llvm::make_range(std::next(reduction->getIterator()),
                                        body.getTerminator()->getIterator()))
    for (Value v : op.getOperands())
      if (Operation *def = v.getDefiningOp();
          def && def->isBeforeInBlock(reduction))
        return op.emitOpError("reads a prologue value: a reduction kernel's "
                              "epilogue reads the reduced result, inputs and "
                              "its own values");
  return verifyYieldsFrom(*this, reduction, "reduction");
}

LogicalResult KernelOp::verifyClassifierBody() {
  // tg.cross_entropy, then its gradient on the same logits and labels.
  Block &body = getBody().front();
  auto ops = body.without_terminator();
  auto loss = dyn_cast<CrossEntropyOp>(body.front());
  if (!loss || std::distance(ops.begin(), ops.end()) != 2)
    return emitOpError("a classifier kernel holds tg.cross_entropy and then "
                       "tg.cross_entropy_grad, nothing else");
  auto grad = dyn_cast<CrossEntropyGradOp>(*std::next(body.begin()));
  if (!grad)
    return emitOpError("a classifier kernel holds tg.cross_entropy and then "
                       "tg.cross_entropy_grad, nothing else");
  if (grad.getLogits() != loss.getLogits() ||
      grad.getLabels() != loss.getLabels())
    return grad.emitOpError("differentiates other logits or labels than the "
                            "classifier's tg.cross_entropy");
  if (!isa<BlockArgument>(grad.getGrad()))
    return grad.emitOpError("reads its incoming gradient from inside the "
                            "classifier kernel, not from an input");
  if (grad.getIgnoreIndex() != loss.getIgnoreIndex() ||
      grad.getReductionAttr() != loss.getReductionAttr())
    return grad.emitOpError("has another ignore_index or reduction than the "
                            "classifier's tg.cross_entropy");
  for (Value v : getYield().getValues())
    if (v != loss.getResult() && v != grad.getResult())
      return getYield().emitOpError(
          "yields what is neither the loss nor its gradient");
  if (!llvm::is_contained(getYield().getValues(), grad.getResult()))
    return getYield().emitOpError("does not yield the gradient");
  return success();
}

LogicalResult KernelOp::verifyOptimizerBody() {
  // Lanes: updates of one kind, hyperparameters, learning rate and step,
  // each with its gradient scale or none.
  Block &body = getBody().front();
  SmallVector<Value> results;
  OptimizerUpdateOp first;
  for (Operation &op : body.without_terminator()) {
    auto update = dyn_cast<OptimizerUpdateOp>(op);
    if (!update)
      return emitOpError("an optimizer kernel holds tg.optimizer_update ops, "
                         "nothing else");
    if (!first) {
      first = update;
    } else if (!update.sharesLaunchWith(first)) {
      return update.emitOpError("differs from the optimizer kernel's first "
                                "update in kind, hyperparameters, learning "
                                "rate or step");
    }
    llvm::append_range(results, update.getResults());
  }
  if (!first)
    return emitOpError("an optimizer kernel holds tg.optimizer_update ops, "
                       "nothing else");
  if (!llvm::equal(getYield().getValues(), results))
    return getYield().emitOpError("yields other values than the updates' "
                                  "new parameters and states, in order");
  return success();
}
