//===- BuildTrainStep.cpp - Optimizer update and @train_step ------*- C++
//-*-===//
//
// Builds @train_step from @forward_backward and the training table: gradient
// norm and clipping, the learning-rate schedule, and one fused optimizer
// update per trainable parameter.
//
//===----------------------------------------------------------------------===//

#include "passes/optimizer/Passes.h"

#include "dialects/tg/IR/TgOps.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/GlobPattern.h"

namespace mlir::tg {
#define GEN_PASS_DEF_BUILDTRAINSTEPPASS
#include "passes/optimizer/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// Typed reads from the `tg.training` dictionary (and its sub-tables), with
/// defaults for absent keys.
struct TableReader {
  DictionaryAttr dict;

  TableReader sub(StringRef key) const {
    return {dict ? dict.getAs<DictionaryAttr>(key) : DictionaryAttr()};
  }
  double number(StringRef key, double fallback) const {
    Attribute a = dict ? dict.get(key) : Attribute();
    if (auto f = dyn_cast_or_null<FloatAttr>(a))
      return f.getValueAsDouble();
    if (auto i = dyn_cast_or_null<IntegerAttr>(a))
      return (double)i.getValue().getSExtValue();
    return fallback;
  }
  int64_t integer(StringRef key, int64_t fallback) const {
    return (int64_t)number(key, (double)fallback);
  }
  bool boolean(StringRef key, bool fallback) const {
    Attribute a = dict ? dict.get(key) : Attribute();
    if (auto b = dyn_cast_or_null<BoolAttr>(a))
      return b.getValue();
    return fallback;
  }
  std::string string(StringRef key, StringRef fallback) const {
    auto s = dict ? dict.getAs<StringAttr>(key) : StringAttr();
    return s && !s.getValue().empty() ? s.getValue().str() : fallback.str();
  }
  SmallVector<std::string> strings(StringRef key) const {
    SmallVector<std::string> out;
    if (auto array = dict ? dict.getAs<ArrayAttr>(key) : ArrayAttr())
      for (Attribute a : array)
        if (auto s = dyn_cast<StringAttr>(a))
          out.push_back(s.getValue().str());
    return out;
  }
};

/// The case of the kind enum `EnumT` that `spelling` names, or an error that
/// says where the string came from (`field` of the training table, which is
/// the model file's `training.<field>`, or the pass option that overrides
/// it) and lists the kinds there are.
template <typename EnumT>
FailureOr<EnumT> parseKind(ModuleOp module, StringRef spelling, bool fromOption,
                           StringRef option, StringRef field) {
  if (std::optional<EnumT> kind = symbolizeEnum<EnumT>(spelling))
    return *kind;
  InFlightDiagnostic diag = module.emitError("tg-optimizer: ");
  if (fromOption)
    diag << "option " << option;
  else
    diag << "training." << field;
  diag << ": unknown value '" << spelling << "'; expected one of ";
  llvm::interleaveComma(getEnumSpellings<EnumT>(), diag);
  return LogicalResult(diag);
}

/// A trainable parameter: its @forward_backward argument, the result that
/// is its gradient, and its name.
struct Trainable {
  unsigned arg, gradResult;
  StringRef name;
};

struct BuildTrainStepPass;

/// Builds @train_step, and for a pipelined module @apply_gradients, from
/// @forward_backward and the training table, whose settings the pass's
/// options override; it counts the updates in the pass's statistics.
class TrainStepBuilder {
public:
  TrainStepBuilder(BuildTrainStepPass &pass, ModuleOp module, func::FuncOp fb)
      : pass(pass), module(module),
        fb(fb), table{module->getAttrOfType<DictionaryAttr>(
                    TgDialect::kTrainingAttr)},
        opt(table.sub("optimizer")), sched(table.sub("schedule")),
        ctx(module.getContext()), b(ctx), loc(fb.getLoc()) {}

  LogicalResult build();

private:
  LogicalResult readSettings();
  LogicalResult findTrainables();
  LogicalResult createTrainStep();
  SmallVector<Value> inlineForwardBackward();
  void averageMicroBatches(SmallVector<Value> &grads);
  FailureOr<SmallVector<Value>> buildUpdate(ArrayRef<Value> params,
                                            ArrayRef<Value> stateArgs,
                                            SmallVector<Value> grads,
                                            Value stepArg, Value baseLr,
                                            bool count);
  Value clipGradients(SmallVector<Value> &grads);
  FailureOr<Value> learningRate(Value stepArg, Value baseLr);
  void setResults(func::FuncOp func, ArrayRef<Value> results,
                  ArrayRef<StringRef> metrics);
  LogicalResult buildApplyGradients(ArrayRef<Value> params,
                                    ArrayRef<Value> stateArgs);

  /// An f32 scalar constant.
  Value f32(double v) {
    return ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(f32Scalar, b.getFloatAttr(b.getF32Type(), v)));
  }
  /// A scalar f32 broadcast against `like`'s element type.
  Value scalarFor(Value scalar, Value like) {
    Type elem = cast<RankedTensorType>(like.getType()).getElementType();
    if (elem == b.getF32Type())
      return scalar;
    return CastOp::create(b, loc, f32Scalar.clone(elem), scalar);
  }
  /// `{key = "value"}`, an argument's or result's attributes.
  DictionaryAttr named(StringRef key, const Twine &value) {
    return b.getDictionaryAttr(b.getNamedAttr(key, b.getStringAttr(value)));
  }

  BuildTrainStepPass &pass;
  ModuleOp module;
  func::FuncOp fb;
  TableReader table, opt, sched;
  MLIRContext *ctx;
  OpBuilder b;
  Location loc;
  RankedTensorType i64Scalar, f32Scalar;

  // The settings (readSettings).
  OptimizerKind kind;
  ScheduleKind schedKind;
  double momentum, wd, clip;
  /// The state slots per parameter of this optimizer.
  SmallVector<StringRef> slots;
  // GlobPattern keeps references into its pattern text: keep it alive.
  SmallVector<std::string> noDecayText;
  SmallVector<llvm::GlobPattern> noDecay;

  FunctionType fbType;
  SmallVector<Trainable> trainables;

  // @train_step: its arguments are the params, the state, the batch inputs
  // (@forward_backward's other arguments), step and base_lr, then with
  // accumulation the accumulated gradients and the micro-batch count.
  func::FuncOp step;
  SmallVector<unsigned> inputArgs;
  unsigned firstState = 0, stepIndex = 0, firstAccum = 0;
  int64_t accum = 1;
  bool accumulate = false;
  Value loss;
};

struct BuildTrainStepPass
    : public tg::impl::BuildTrainStepPassBase<BuildTrainStepPass> {
  using BuildTrainStepPassBase::BuildTrainStepPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fb = module.lookupSymbol<func::FuncOp>("forward_backward");
    if (!fb) {
      module.emitError("tg-optimizer: no @forward_backward; run tg-autodiff "
                       "first");
      return signalPassFailure();
    }
    if (module.lookupSymbol("train_step")) {
      module.emitError("tg-optimizer: @train_step exists already");
      return signalPassFailure();
    }
    if (failed(TrainStepBuilder(*this, module, fb).build()))
      signalPassFailure();
  }

private:
  // It reads the options and counts into the statistics.
  friend class TrainStepBuilder;
};

} // namespace

/// @train_step: settings, signature, the inlined forward and backward,
/// the mean gradients and their update, and for a pipelined module
/// @apply_gradients.
LogicalResult TrainStepBuilder::build() {
  if (failed(readSettings()) || failed(findTrainables()) ||
      failed(createTrainStep()))
    return failure();
  SmallVector<Value> grads = inlineForwardBackward();
  Value stepArg = step.getArgument(stepIndex);
  Value baseLr = step.getArgument(stepIndex + 1);
  if (accumulate)
    averageMicroBatches(grads);

  // A param's position among the step's arguments is its position among
  // the params of @forward_backward.
  SmallVector<Value> params, stateArgs;
  for (unsigned i = 0, pos = 0; i < fb.getNumArguments(); ++i)
    if (fb.getArgAttr(i, TgDialect::kParamAttr)) {
      for (const Trainable &t : trainables)
        if (t.arg == i)
          params.push_back(step.getArgument(pos));
      ++pos;
    }
  for (unsigned i = 0; i < trainables.size() * slots.size(); ++i)
    stateArgs.push_back(step.getArgument(firstState + i));
  FailureOr<SmallVector<Value>> updated =
      buildUpdate(params, stateArgs, grads, stepArg, baseLr, true);
  if (failed(updated))
    return failure();
  // train_step's metrics: the loss before the norm and the rate.
  SmallVector<Value> results(updated->begin(), updated->end() - 2);
  results.append({loss, (*updated)[updated->size() - 2], updated->back()});
  setResults(step, results, {"loss", "grad_norm", "lr"});

  if (!getPipelineStages(module).pipelined())
    return success();
  return buildApplyGradients(params, stateArgs);
}

/// The optimizer and schedule kinds, weight decay, clipping and the
/// no_decay patterns: the pass's options, else the training table's.
LogicalResult TrainStepBuilder::readSettings() {
  FailureOr<OptimizerKind> parsedKind = parseKind<OptimizerKind>(
      module,
      pass.optimizer.empty() ? opt.string("kind", "adamw")
                             : pass.optimizer.getValue(),
      !pass.optimizer.empty(), "optimizer", "optimizer.kind");
  if (failed(parsedKind))
    return failure();
  kind = *parsedKind;
  FailureOr<ScheduleKind> parsedSchedule = parseKind<ScheduleKind>(
      module,
      pass.schedule.empty() ? sched.string("kind", "constant")
                            : pass.schedule.getValue(),
      !pass.schedule.empty(), "schedule", "schedule.kind");
  if (failed(parsedSchedule))
    return failure();
  schedKind = *parsedSchedule;
  momentum = opt.number("momentum", 0.0);
  slots = OptimizerUpdateOp::stateSlots(kind, momentum);
  wd = pass.weightDecay >= 0 ? (double)pass.weightDecay
                             : opt.number("weight_decay", 0.0);
  clip = pass.clipGradNorm >= 0 ? (double)pass.clipGradNorm
                                : opt.number("clip_grad_norm", 0.0);
  noDecayText = opt.strings("no_decay");
  for (const std::string &pattern : noDecayText) {
    auto glob = llvm::GlobPattern::create(pattern);
    if (!glob)
      return module.emitError("tg-optimizer: bad no_decay pattern '")
             << pattern << "': " << llvm::toString(glob.takeError());
    noDecay.push_back(std::move(*glob));
  }
  return success();
}

/// Which @forward_backward results are gradients, and of which argument.
LogicalResult TrainStepBuilder::findTrainables() {
  fbType = fb.getFunctionType();
  DenseMap<StringRef, unsigned> paramArg;
  for (unsigned i = 0; i < fb.getNumArguments(); ++i)
    if (auto name = fb.getArgAttrOfType<StringAttr>(i, TgDialect::kParamAttr))
      paramArg[name.getValue()] = i;
  for (unsigned r = 0; r < fbType.getNumResults(); ++r) {
    auto grad = fb.getResultAttrOfType<StringAttr>(r, TgDialect::kGradAttr);
    if (!grad)
      continue;
    auto it = paramArg.find(grad.getValue());
    if (it == paramArg.end())
      return fb.emitError("tg-optimizer: gradient of unknown parameter '")
             << grad.getValue() << "'";
    trainables.push_back({it->second, r, grad.getValue()});
  }
  return success();
}

/// @train_step's signature, its arguments' attributes and its entry block,
/// after @forward_backward.
LogicalResult TrainStepBuilder::createTrainStep() {
  // Signature: params, state, batch inputs, step, base_lr.
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  for (unsigned i = 0; i < fb.getNumArguments(); ++i)
    if (fb.getArgAttr(i, TgDialect::kParamAttr)) {
      argTypes.push_back(fbType.getInput(i));
      argAttrs.push_back(fb.getArgAttrDict(i));
    } else {
      inputArgs.push_back(i);
    }
  firstState = argTypes.size();
  for (const Trainable &t : trainables)
    for (StringRef slot : slots) {
      // Each moment has its parameter's type, and in files its shape.
      argTypes.push_back(fbType.getInput(t.arg));
      SmallVector<NamedAttribute> attrs = {b.getNamedAttr(
          TgDialect::kStateAttr, b.getStringAttr(t.name + "." + slot))};
      if (Attribute file = fb.getArgAttr(t.arg, TgDialect::kFileShapeAttr))
        attrs.push_back(b.getNamedAttr(TgDialect::kFileShapeAttr, file));
      argAttrs.push_back(b.getDictionaryAttr(attrs));
    }
  for (unsigned i : inputArgs) {
    argTypes.push_back(fbType.getInput(i));
    argAttrs.push_back(fb.getArgAttrDict(i));
  }
  i64Scalar = RankedTensorType::get({}, b.getI64Type());
  f32Scalar = RankedTensorType::get({}, b.getF32Type());
  stepIndex = argTypes.size();
  argTypes.append({i64Scalar, f32Scalar});
  argAttrs.push_back(named(TgDialect::kScalarAttr, "step"));
  argAttrs.push_back(named(TgDialect::kScalarAttr, "base_lr"));
  // With accumulation: the gradients of the step's earlier micro-batches,
  // then how many micro-batches the step has.
  accum = pass.gradAccum > 0 ? (int64_t)pass.gradAccum
                             : table.integer("grad_accum", 1);
  if (accum < 1)
    return module.emitError("tg-optimizer: grad_accum must be >= 1, got ")
           << accum;
  accumulate = accum > 1 && !trainables.empty();
  firstAccum = argTypes.size();
  if (accumulate) {
    for (const Trainable &t : trainables) {
      argTypes.push_back(fbType.getResult(t.gradResult));
      argAttrs.push_back(named(TgDialect::kAccumAttr, t.name));
    }
    argTypes.push_back(RankedTensorType::get({}, b.getI32Type()));
    argAttrs.push_back(named(TgDialect::kScalarAttr, "micro_batches"));
  }

  b.setInsertionPointAfter(fb);
  step = func::FuncOp::create(b, loc, "train_step",
                              b.getFunctionType(argTypes, {}));
  // All at once: setting them one by one copies the whole list each time.
  step.setAllArgAttrs(argAttrs);
  Block *block = step.addEntryBlock();
  b.setInsertionPointToStart(block);
  return success();
}

/// The forward and backward ops, inlined into @train_step: sets the loss
/// and returns the gradients of the trainables.
SmallVector<Value> TrainStepBuilder::inlineForwardBackward() {
  IRMapping mapping;
  unsigned next = 0;
  for (unsigned i = 0; i < fb.getNumArguments(); ++i)
    if (fb.getArgAttr(i, TgDialect::kParamAttr))
      mapping.map(fb.getArgument(i), step.getArgument(next++));
  unsigned inputBase = firstState + trainables.size() * slots.size();
  for (auto [k, i] : llvm::enumerate(inputArgs))
    mapping.map(fb.getArgument(i), step.getArgument(inputBase + k));
  Block &fbBlock = fb.getBody().front();
  for (Operation &op : fbBlock.without_terminator())
    b.clone(op, mapping);
  auto ret = cast<func::ReturnOp>(fbBlock.getTerminator());
  loss = mapping.lookup(ret.getOperand(0));
  SmallVector<Value> grads;
  for (const Trainable &t : trainables)
    grads.push_back(mapping.lookup(ret.getOperand(t.gradResult)));
  return grads;
}

/// With accumulation: `grads` become the mean over the step's
/// micro-batches, as one big batch would give.
void TrainStepBuilder::averageMicroBatches(SmallVector<Value> &grads) {
  // What the step was built for: the sharding planner and report price
  // a step as that many micro-batches.
  step->setAttr(TgDialect::kMicroBatchesAttr, b.getI64IntegerAttr(accum));
  Value micro = CastOp::create(
      b, loc, f32Scalar, step.getArgument(firstAccum + trainables.size()));
  for (auto [k, g] : llvm::enumerate(grads)) {
    Value sum = AddOp::create(b, loc, g, step.getArgument(firstAccum + k));
    g = DivOp::create(b, loc, sum, scalarFor(micro, sum));
  }
}

/// Clipping, the schedule and one update per trainable parameter, on the
/// step's mean gradients `grads`, built at `b`'s insertion point: the new
/// parameters, the new state, then the gradient norm and the learning rate.
FailureOr<SmallVector<Value>>
TrainStepBuilder::buildUpdate(ArrayRef<Value> params, ArrayRef<Value> stateArgs,
                              SmallVector<Value> grads, Value stepArg,
                              Value baseLr, bool count) {
  Value norm = clipGradients(grads);
  FailureOr<Value> lr = learningRate(stepArg, baseLr);
  if (failed(lr))
    return failure();

  SmallVector<Value> newParams, newState;
  for (auto [k, t] : llvm::enumerate(trainables)) {
    Value param = params[k];
    ArrayRef<Value> state = stateArgs.slice(k * slots.size(), slots.size());
    bool decay = llvm::none_of(
        noDecay, [&](const llvm::GlobPattern &p) { return p.match(t.name); });
    if (count) {
      pass.numNoDecay += decay ? 0 : 1;
      ++pass.numUpdates;
    }
    SmallVector<Type> resultTypes(1 + state.size(), param.getType());
    auto update = OptimizerUpdateOp::create(
        b, loc, resultTypes, OptimizerKindAttr::get(ctx, kind), param, grads[k],
        *lr, stepArg, state, /*grad_scale=*/Value(),
        b.getF64FloatAttr(opt.number("beta1", 0.9)),
        b.getF64FloatAttr(opt.number("beta2", 0.999)),
        b.getF64FloatAttr(opt.number("eps", 1e-8)),
        b.getF64FloatAttr(decay ? wd : 0.0), b.getF64FloatAttr(momentum),
        b.getBoolAttr(opt.boolean("nesterov", false)),
        b.getF64FloatAttr(opt.number("alpha", 0.99)));
    if (failed(mlir::verify(update)))
      return failure();
    newParams.push_back(update.getNewParam());
    llvm::append_range(newState, update.getNewState());
  }
  SmallVector<Value> results;
  llvm::append_range(results, newParams);
  llvm::append_range(results, newState);
  results.append({norm, *lr});
  return results;
}

/// The global norm of `grads` (a metric, always), and with clipping
/// `grads` scaled to at most the clip norm.
Value TrainStepBuilder::clipGradients(SmallVector<Value> &grads) {
  Value norm = grads.empty()
                   ? f32(0.0)
                   : GlobalNormOp::create(b, loc, f32Scalar, grads).getResult();
  if (clip > 0 && !grads.empty()) {
    // As torch.nn.utils.clip_grad_norm_: scale by min(1, clip / (norm +
    // 1e-6)).
    Value coef = DivOp::create(b, loc, f32(clip),
                               AddOp::create(b, loc, norm, f32(1e-6)));
    Value scale = MinimumOp::create(b, loc, coef, f32(1.0));
    for (Value &g : grads)
      g = MulOp::create(b, loc, g, scalarFor(scale, g));
  }
  return norm;
}

/// The learning-rate schedule evaluated at `stepArg`.
FailureOr<Value> TrainStepBuilder::learningRate(Value stepArg, Value baseLr) {
  int64_t total = pass.totalSteps > 0 ? (int64_t)pass.totalSteps
                                      : sched.integer("total_steps", 0);
  if (total <= 0)
    total = table.integer("steps", 0);
  int64_t warmup = pass.warmupSteps >= 0 ? (int64_t)pass.warmupSteps
                                         : sched.integer("warmup_steps", 0);
  auto lr = LrScheduleOp::create(
      b, loc, f32Scalar, stepArg, baseLr, ScheduleKindAttr::get(ctx, schedKind),
      b.getI64IntegerAttr(warmup), b.getI64IntegerAttr(total),
      b.getF64FloatAttr(sched.number("min_lr", 0.0)),
      b.getI64IntegerAttr(sched.integer("step_size", 0)),
      b.getF64FloatAttr(sched.number("gamma", 0.1)),
      b.getF64FloatAttr(sched.number("max_lr", 0.0)),
      b.getI64IntegerAttr(sched.integer("decay_steps", 0)));
  if (failed(mlir::verify(lr)))
    return failure();
  return lr.getResult();
}

/// Returns `results` from `func`: the updated parameters and state, then
/// the metrics, each result named by its attribute.
void TrainStepBuilder::setResults(func::FuncOp func, ArrayRef<Value> results,
                                  ArrayRef<StringRef> metrics) {
  func::ReturnOp::create(b, loc, results);
  SmallVector<Type> resultTypes;
  for (Value v : results)
    resultTypes.push_back(v.getType());
  func.setFunctionType(
      b.getFunctionType(func.getFunctionType().getInputs(), resultTypes));
  SmallVector<DictionaryAttr> resultAttrs;
  for (const Trainable &t : trainables)
    resultAttrs.push_back(named(TgDialect::kUpdateAttr, t.name));
  for (const Trainable &t : trainables)
    for (StringRef slot : slots)
      resultAttrs.push_back(named(TgDialect::kUpdateAttr, t.name + "." + slot));
  for (StringRef metric : metrics)
    resultAttrs.push_back(named(TgDialect::kMetricAttr, metric));
  func.setAllResultAttrs(resultAttrs);
}

/// A pipelined step (tg-pipeline-split) runs the update alone, once the
/// micro-batches are through: @apply_gradients takes the trainable
/// parameters, their state, the gradients summed over the step's
/// micro-batches (tg.accum), the step, the base rate and the micro-batch
/// count.
LogicalResult TrainStepBuilder::buildApplyGradients(ArrayRef<Value> params,
                                                    ArrayRef<Value> stateArgs) {
  SmallVector<Type> applyTypes;
  SmallVector<DictionaryAttr> applyAttrs;
  for (Value p : params) {
    applyTypes.push_back(p.getType());
    applyAttrs.push_back(
        step.getArgAttrDict(cast<BlockArgument>(p).getArgNumber()));
  }
  for (Value v : stateArgs) {
    applyTypes.push_back(v.getType());
    applyAttrs.push_back(
        step.getArgAttrDict(cast<BlockArgument>(v).getArgNumber()));
  }
  for (const Trainable &t : trainables) {
    applyTypes.push_back(fbType.getResult(t.gradResult));
    applyAttrs.push_back(named(TgDialect::kAccumAttr, t.name));
  }
  applyTypes.append(
      {i64Scalar, f32Scalar, RankedTensorType::get({}, b.getI32Type())});
  for (StringRef scalar : {"step", "base_lr", "micro_batches"})
    applyAttrs.push_back(named(TgDialect::kScalarAttr, scalar));
  b.setInsertionPointAfter(step);
  auto apply = func::FuncOp::create(b, loc, "apply_gradients",
                                    b.getFunctionType(applyTypes, {}));
  apply.setAllArgAttrs(applyAttrs);
  Block *entry = apply.addEntryBlock();
  b.setInsertionPointToStart(entry);
  size_t n = trainables.size(), numState = stateArgs.size();
  auto args = entry->getArguments();
  Value micro = CastOp::create(b, loc, f32Scalar, args.back());
  SmallVector<Value> means;
  for (Value sum : args.slice(n + numState, n))
    means.push_back(DivOp::create(b, loc, sum, scalarFor(micro, sum)));
  FailureOr<SmallVector<Value>> applied =
      buildUpdate(SmallVector<Value>(args.take_front(n)),
                  SmallVector<Value>(args.slice(n, numState)), means,
                  args[2 * n + numState], args[2 * n + numState + 1], false);
  if (failed(applied))
    return failure();
  setResults(apply, *applied, {"grad_norm", "lr"});
  return success();
}
