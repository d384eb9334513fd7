//===- Precision.cpp - Mixed-precision policies for @forward ------*- C++ -*-===//
//
// tg-precision rewrites @forward to compute in bf16, with the f32 parameters
// as master weights and an f32 loss, before tg-autodiff differentiates
// through the casts it inserts. The policy is documented in Passes.td; this
// file resolves which policy applies and converts the ops one by one in
// program order, deriving each op's result types from its new operands.
//
//===----------------------------------------------------------------------===//

#include "passes/precision/Passes.h"

#include "dialects/tg/IR/TgOps.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::tg {
#define GEN_PASS_DEF_PRECISIONPASS
#include "passes/precision/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// The type of `v` when it is a ranked tensor of floats, else null.
RankedTensorType floatTensorOf(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && isa<FloatType>(type.getElementType()) ? type
                                                       : RankedTensorType();
}

/// `value` as a dense constant of `type` (same shape, another float type),
/// rounded to nearest even; null when `value` is not a dense float constant.
DenseElementsAttr convertConstant(ElementsAttr value, RankedTensorType type) {
  auto dense = dyn_cast<DenseElementsAttr>(value);
  if (!dense || !isa<FloatType>(dense.getElementType()))
    return {};
  const llvm::fltSemantics &semantics =
      cast<FloatType>(type.getElementType()).getFloatSemantics();
  auto round = [&](APFloat f) {
    bool losesInfo;
    f.convert(semantics, APFloat::rmNearestTiesToEven, &losesInfo);
    return f;
  };
  if (dense.isSplat())
    return DenseElementsAttr::get(type, round(dense.getSplatValue<APFloat>()));
  SmallVector<APFloat> values;
  for (APFloat f : dense.getValues<APFloat>())
    values.push_back(round(f));
  return DenseElementsAttr::get(type, values);
}

//===----------------------------------------------------------------------===//
// Converting @forward
//===----------------------------------------------------------------------===//

/// Rewrites one single-block function to compute in `low` under the policy
/// of Passes.td.
class ForwardConverter {
public:
  ForwardConverter(func::FuncOp func, FloatType low,
                   const llvm::StringSet<> &fp32Ops)
      : func(func), low(low), f32(Float32Type::get(func.getContext())),
        fp32Ops(fp32Ops) {}

  LogicalResult convert();

  unsigned numCasts = 0, numConverted = 0, numConstants = 0;

private:
  bool isArgument(Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && arg.getOwner() == &func.getBody().front();
  }
  /// Values the policy computes in `low`: `low` tensors, and the f32
  /// arguments (parameters and batch inputs), which get their cast on first
  /// use by a `low` op.
  bool isLow(Value v) {
    RankedTensorType type = floatTensorOf(v);
    return type && (type.getElementType() == low ||
                    (isArgument(v) && type.getElementType() == f32));
  }
  Type computeTypeFor(Operation *op);
  Value convertTo(Value v, Type element);
  LogicalResult convertOp(Operation *op, Type element);
  LogicalResult deriveResultTypes(Operation *op, Type element);
  void castResultsBack(func::ReturnOp ret);
  void moveArgumentCastsToTheTop();

  func::FuncOp func;
  FloatType low;
  Type f32;
  const llvm::StringSet<> &fp32Ops;
  /// (value, element type) -> the value converted to that element type, so
  /// that each value is cast (each constant re-created) once.
  DenseMap<std::pair<Value, Type>, Value> converted;
  llvm::SmallSetVector<Operation *, 8> replacedConstants;
};

/// The element type `op` computes in, or null to leave it as it is.
Type ForwardConverter::computeTypeFor(Operation *op) {
  // Constants are converted where they meet a `low` op; the model's own
  // casts say what they convert to.
  if (isa<ConstantOp, CastOp>(op))
    return {};
  if (llvm::none_of(op->getOperands(), floatTensorOf))
    return {};
  if (fp32Ops.contains(op->getName().getStringRef()))
    return f32;
  // Scalars (the loss and what produces it, regularizers, metrics) cost
  // nothing in f32 and would otherwise be rounded to 3 digits.
  // tg.cross_entropy reads low logits and gives an f32 loss by itself; the
  // maximum of low values is one of them, exact in `low`.
  auto isScalar = [](Value v) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    return type && type.getRank() == 0;
  };
  if (!isa<CrossEntropyOp, ReduceMaxOp>(op) && op->getNumResults() > 0 &&
      llvm::all_of(op->getResults(), isScalar))
    return f32;
  if (llvm::any_of(op->getOperands(), [&](Value v) { return isLow(v); }))
    return low;
  return {};
}

/// `v` as a tensor of `element`: itself, a re-created constant, or a cast
/// placed right after its definition.
Value ForwardConverter::convertTo(Value v, Type element) {
  auto type = cast<RankedTensorType>(v.getType());
  RankedTensorType target = type.clone(element);
  if (type == target)
    return v;
  auto key = std::make_pair(v, element);
  if (Value done = converted.lookup(key))
    return done;
  OpBuilder builder(func.getContext());
  LayerStamp stamp(builder, layerOfValue(v));
  Value result;
  if (auto constant = v.getDefiningOp<ConstantOp>()) {
    if (DenseElementsAttr attr = convertConstant(constant.getValue(), target)) {
      builder.setInsertionPointAfter(constant);
      result = ConstantOp::create(builder, constant.getLoc(), attr);
      replacedConstants.insert(constant);
      ++numConstants;
    }
  }
  if (!result) {
    if (Operation *def = v.getDefiningOp())
      builder.setInsertionPointAfter(def);
    else
      builder.setInsertionPointToStart(&func.getBody().front());
    result = CastOp::create(builder, v.getLoc(), target, v);
    ++numCasts;
  }
  converted[key] = result;
  return result;
}

/// Gives `op`'s results the types its rule derives from its (new) operands:
/// its type inference where it has one, else the element type it computes in
/// with the shapes kept.
LogicalResult ForwardConverter::deriveResultTypes(Operation *op, Type element) {
  if (auto infer = dyn_cast<InferTypeOpInterface>(op)) {
    SmallVector<Type> types;
    if (failed(infer.inferReturnTypes(
            op->getContext(), op->getLoc(), op->getOperands(),
            op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
            op->getRegions(), types)))
      return failure();
    for (auto [result, type] : llvm::zip(op->getResults(), types))
      result.setType(type);
    return success();
  }
  for (Value result : op->getResults())
    if (RankedTensorType type = floatTensorOf(result))
      result.setType(type.clone(element));
  return success();
}

LogicalResult ForwardConverter::convertOp(Operation *op, Type element) {
  auto differs = [&](Value v) {
    RankedTensorType type = floatTensorOf(v);
    return type && type.getElementType() != element;
  };
  bool operandsDiffer = llvm::any_of(op->getOperands(), differs);
  if (!isa_and_nonnull<TgDialect>(op->getDialect())) {
    if (operandsDiffer || llvm::any_of(op->getResults(), differs))
      return op->emitError()
             << "tg-precision: cannot compute '" << op->getName() << "' in "
             << element << ": only tg ops have precision rules";
    return success();
  }

  // Operands already in `element` may still be new: their producers were
  // converted, so the results are derived again in any case.
  SmallVector<Type> before(op->getResultTypes());
  for (OpOperand &operand : op->getOpOperands())
    if (differs(operand.get()))
      operand.set(convertTo(operand.get(), element));
  if (failed(deriveResultTypes(op, element)))
    return failure();
  if (!operandsDiffer && TypeRange(before) == op->getResultTypes())
    return success();
  ++numConverted;
  if (failed(verify(op, /*verifyRecursively=*/false)))
    return op->emitError() << "tg-precision: no type rule makes '"
                           << op->getName() << "' valid in " << element;
  return success();
}

/// `@forward` keeps its signature: results that came out in another float
/// type are converted back to the declared one. (Only float tensors change
/// type here, and never shape, so a cast always gets them back.)
void ForwardConverter::castResultsBack(func::ReturnOp ret) {
  FunctionType type = func.getFunctionType();
  for (OpOperand &operand : ret->getOpOperands()) {
    Type declared = type.getResult(operand.getOperandNumber());
    if (operand.get().getType() != declared)
      operand.set(convertTo(operand.get(),
                            cast<RankedTensorType>(declared).getElementType()));
  }
}

/// The casts of the arguments, at the top in argument order, so that a
/// reader sees the master weights' compute copies first.
void ForwardConverter::moveArgumentCastsToTheTop() {
  Block &body = func.getBody().front();
  for (BlockArgument arg : llvm::reverse(body.getArguments()))
    if (Value cast = converted.lookup(std::make_pair(Value(arg), Type(low))))
      cast.getDefiningOp()->moveBefore(&body.front());
}

LogicalResult ForwardConverter::convert() {
  if (func.isExternal())
    return func.emitError("tg-precision: @")
           << func.getName()
           << " is a declaration: there is nothing to convert";
  if (!func.getBody().hasOneBlock())
    return func.emitError("tg-precision: @")
           << func.getName() << " must have a single block";
  Block &body = func.getBody().front();
  // The ops as the model wrote them; those built on the way are done.
  SmallVector<Operation *> ops;
  for (Operation &op : body)
    ops.push_back(&op);
  for (Operation *op : ops) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      castResultsBack(ret);
      continue;
    }
    if (Type element = computeTypeFor(op))
      if (failed(convertOp(op, element)))
        return failure();
  }
  for (Operation *constant : replacedConstants)
    if (constant->use_empty())
      constant->erase();
  moveArgumentCastsToTheTop();
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct PrecisionPass : public tg::impl::PrecisionPassBase<PrecisionPass> {
  using PrecisionPassBase::PrecisionPassBase;

  void runOnOperation() override;

  /// The policy asked for and where it came from ("option", "training
  /// table"); empty when nothing asks for one.
  FailureOr<std::pair<std::string, StringRef>> requestedPolicy();
  /// The element type `name` computes in (null for fp32), or failure with a
  /// diagnostic for a policy the pass does not apply.
  FailureOr<FloatType> computeTypeOf(StringRef name, StringRef source);
};

FailureOr<std::pair<std::string, StringRef>> PrecisionPass::requestedPolicy() {
  if (!policy.empty())
    return std::make_pair(std::string(policy), StringRef("option"));
  ModuleOp module = getOperation();
  auto table = module->getAttrOfType<DictionaryAttr>(TgDialect::kTrainingAttr);
  Attribute entry = table ? table.get("precision") : Attribute();
  if (!entry)
    return std::make_pair(std::string(), StringRef());
  auto name = dyn_cast<StringAttr>(entry);
  if (!name) {
    module.emitError() << "tg-precision: the training table's precision "
                          "must be a string, got "
                       << entry;
    return failure();
  }
  return std::make_pair(name.str(), StringRef("training table"));
}

FailureOr<FloatType> PrecisionPass::computeTypeOf(StringRef name,
                                                  StringRef source) {
  ModuleOp module = getOperation();
  if (name == "fp32")
    return FloatType();
  if (name == "bf16")
    return cast<FloatType>(BFloat16Type::get(module.getContext()));
  if (name == "fp16" || name == "fp8")
    module.emitError() << "tg-precision: policy '" << name << "' (" << source
                       << ") is not supported yet: it needs "
                       << (name == "fp16" ? "loss scaling"
                                          : "per-tensor scales")
                       << "; use \"bf16\" or \"fp32\"";
  else
    module.emitError() << "tg-precision: unknown policy '" << name << "' ("
                       << source << "); expected \"fp32\" or \"bf16\"";
  return failure();
}

void PrecisionPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *context = module.getContext();
  if (!policy.empty() && failed(computeTypeOf(policy, "option")))
    return signalPassFailure();

  llvm::StringSet<> fp32OpSet;
  for (const std::string &opName : fp32Ops) {
    auto registered = RegisteredOperationName::lookup(opName, context);
    if (!registered || registered->getDialectNamespace() != "tg") {
      module.emitError() << "tg-precision: fp32-ops names '" << opName
                         << "', which is not a tg op (ops are spelt "
                            "'tg.conv2d')";
      return signalPassFailure();
    }
    fp32OpSet.insert(opName);
  }

  // A module converted before keeps its policy: running the pass again
  // without a policy option, or with the same one, changes nothing (the
  // table's precision is the model file's default, which an earlier option
  // may have overridden); undoing or redoing a conversion is not supported.
  // (A module marked fp32 was never converted.)
  StringRef applied = appliedPrecision(module);
  if (!applied.empty() && applied != "fp32") {
    if (policy.empty() || applied == policy)
      return;
    module.emitError() << "tg-precision: the module is in precision policy '"
                       << applied << "' already (tg.precision); cannot apply '"
                       << policy << "' on top of it";
    return signalPassFailure();
  }

  auto requested = requestedPolicy();
  if (failed(requested))
    return signalPassFailure();
  auto [name, source] = *requested;
  if (name.empty()) {
    name = "fp32";
    source = "default";
  }
  FailureOr<FloatType> low = computeTypeOf(name, source);
  if (failed(low))
    return signalPassFailure();

  if (!*low)
    return;

  // After tg-autodiff the gradients would not see the casts.
  for (StringRef later : {"forward_backward", "train_step"})
    if (module.lookupSymbol(later)) {
      module.emitError() << "tg-precision: @" << later << " exists: policy '"
                         << name
                         << "' must be applied to @forward before "
                            "tg-autodiff differentiates it";
      return signalPassFailure();
    }
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward) {
    module.emitError() << "tg-precision: no function @forward to apply "
                          "policy '"
                       << name << "' to";
    return signalPassFailure();
  }

  ForwardConverter converter(forward, *low, fp32OpSet);
  if (failed(converter.convert()))
    return signalPassFailure();
  numCasts += converter.numCasts;
  numConverted += converter.numConverted;
  numConstants += converter.numConstants;
  module->setAttr(
      TgDialect::kPrecisionAttr,
      PrecisionPolicyAttr::get(context, *symbolizePrecisionPolicy(name)));
}

} // namespace
