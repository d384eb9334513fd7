//===- PipelineTables.cpp - A pipelined step's functions and tables ------===//

#include "compiler/codegen/PipelineTables.h"

#include "passes/pipeline/Chunks.h"
#include "planning/pipeline/PipelineSchedule.h"

#include "llvm/ADT/StringMap.h"

#include <map>
#include <optional>

using namespace mlir;
using namespace mlir::tg;

std::string PipelineResult::target() const {
  StringRef array = kind == Slot                      ? "slots"
                    : kind == Grad || kind == Reduced ? "grads"
                    : kind == Param                   ? "params"
                                                      : "state";
  return ("io." + array + "[" + std::to_string(index) + "]").str();
}

namespace {

/// A pipelined module's schedule as tg-pipeline-split and
/// tg-pipeline-schedule wrote it: the boundaries between its chunks
/// (tg.pipeline_transfers), the schedule's name, and each stage's actions.
struct PipelinePlan {
  ArrayAttr boundaries;
  StringAttr schedule;
  pipeline::Shape shape;
  pipeline::StageActions actions;
};

/// The pipeline's functions by role, as the tables name them ("nullptr"
/// where a chunk has none), and what binding them finds: each slot's
/// tensor and the stages whose update writes each parameter (a bit each).
struct PipelineFunctions {
  PipelineFunctions(int64_t chunks, int64_t stages, size_t numParams)
      : forward(chunks, "nullptr"), backward(chunks, "nullptr"),
        weight(chunks, "nullptr"), reduce(chunks, "nullptr"),
        update(stages, "nullptr"), paramStages(numParams, 0) {}

  SmallVector<std::string> forward, backward, weight, reduce, update;
  std::map<int64_t, std::string> slotDescs;
  SmallVector<int64_t> paramStages;
};

/// The schedule of `module`, checked by playing it: a hand-edited order
/// that deadlocks, reads what does not exist yet or receives out of the
/// sender's order fails here.
FailureOr<PipelinePlan> readPipelinePlan(ModuleOp module, PipelineStages stages,
                                         StringRef backend) {
  PipelinePlan plan;
  plan.boundaries =
      module->getAttrOfType<ArrayAttr>(TgDialect::kPipelineTransfersAttr);
  auto pipelineDict =
      module->getAttrOfType<DictionaryAttr>(TgDialect::kPipelineAttr);
  plan.schedule =
      pipelineDict ? pipelineDict.getAs<StringAttr>("schedule") : nullptr;
  if (!plan.boundaries || !plan.schedule)
    return module.emitError(backend)
           << ": the pipelined module has no schedule "
              "(run tg-pipeline-split and "
              "tg-pipeline-schedule)";
  int64_t chunks = stages.stages * stages.virtualStages;
  if ((int64_t)plan.boundaries.size() != chunks - 1)
    return module.emitError(backend)
           << ": tg.pipeline_transfers has " << plan.boundaries.size()
           << " boundaries, for " << stages.stages << " stages of " << chunks
           << " chunks";
  llvm::Expected<pipeline::StageActions> actions =
      readPipelineActions(module, plan.shape);
  if (!actions)
    return module.emitError(backend)
           << ": " << llvm::toString(actions.takeError());
  if (auto played = pipeline::simulate(
          plan.shape, *actions, pipeline::Costs::uniform(plan.shape, 1, 1, 1));
      !played)
    return module.emitError(backend)
           << ": tg.pipeline_actions: " << llvm::toString(played.takeError());
  plan.actions = std::move(*actions);
  return plan;
}

/// The index `map` gives the name `a`, if any.
std::optional<unsigned> indexOf(const DenseMap<StringRef, unsigned> &map,
                                StringAttr a) {
  if (!a)
    return std::nullopt;
  auto it = map.find(a.getValue());
  if (it == map.end())
    return std::nullopt;
  return it->second;
}

/// Binds a pipelined function's arguments and results to StepIO by their
/// attributes (tg.param, tg.input, tg.slot, ...), recording in a
/// PipelineFunctions what the tables need of them.
class PipelineBinder {
public:
  PipelineBinder(const StepSignature &sig, StringRef backend, StringRef scalars)
      : sig(sig), backend(backend), scalars(scalars) {
    for (auto [k, arg] : llvm::enumerate(sig.fwdInputs))
      if (auto name = sig.forward.getArgAttrOfType<StringAttr>(
              arg, TgDialect::kInputAttr))
        inputIndex[name.getValue()] = k;
  }

  /// Each argument's StepIO buffer (or scalar) into `f.arguments`.
  LogicalResult bindArguments(PipelineFunction &f,
                              PipelineFunctions &functions) const;
  /// What each result writes into `f.results`.
  LogicalResult bindResults(PipelineFunction &f,
                            PipelineFunctions &functions) const;

private:
  /// The error for argument or result (`what`) `i` of `func`, which binds
  /// to nothing.
  InFlightDiagnostic unbound(func::FuncOp func, unsigned i,
                             StringRef what) const {
    return func.emitError(backend)
           << ": @" << func.getSymName() << " " << what << " " << i
           << " is no parameter, input, state, gradient, slot or scalar "
              "the pipeline knows";
  }

  const StepSignature &sig;
  StringRef backend, scalars;
  /// io.inputs index of each batch input, by name.
  llvm::StringMap<unsigned> inputIndex;
};

LogicalResult
PipelineBinder::bindArguments(PipelineFunction &f,
                              PipelineFunctions &functions) const {
  func::FuncOp func = f.func;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto attr = [&](StringRef name) {
      return func.getArgAttrOfType<StringAttr>(i, name);
    };
    std::string bound;
    if (auto k = indexOf(sig.paramIndex, attr(TgDialect::kParamAttr))) {
      bound = "io.params[" + std::to_string(*k) + "]";
      if (f.kind == "update")
        functions.paramStages[*k] |= int64_t(1) << f.stage;
    } else if (auto name = attr(TgDialect::kInputAttr);
               name && inputIndex.count(name.getValue())) {
      bound = "io.inputs[" +
              std::to_string(inputIndex.lookup(name.getValue())) + "]";
    } else if (auto k = indexOf(sig.stateIndex, attr(TgDialect::kStateAttr))) {
      bound = "io.state[" + std::to_string(*k) + "]";
    } else if (auto k = indexOf(sig.gradIndex, attr(TgDialect::kAccumAttr))) {
      bound = "io.grads[" + std::to_string(*k) + "]";
    } else if (auto k = indexOf(sig.gradIndex, attr(TgDialect::kReducedAttr))) {
      // Where the chunk's reduce left it.
      bound = "io.grads[" + std::to_string(*k) + "]";
    } else if (auto slot = func.getArgAttrOfType<IntegerAttr>(
                   i, TgDialect::kSlotAttr)) {
      bound = "io.slots[" + std::to_string(slot.getInt()) + "]";
    } else if (auto scalar = attr(TgDialect::kScalarAttr)) {
      bound = (scalars + (scalar.getValue() == "step"      ? "step"
                          : scalar.getValue() == "base_lr" ? "baseLr"
                                                           : "microBatches"))
                  .str();
    } else {
      return unbound(func, i, "argument");
    }
    f.arguments.push_back(bound);
  }
  return success();
}

LogicalResult PipelineBinder::bindResults(PipelineFunction &f,
                                          PipelineFunctions &functions) const {
  func::FuncOp func = f.func;
  for (auto [r, type] : llvm::enumerate(func.getResultTypes())) {
    auto attr = [&](StringRef name) {
      return func.getResultAttrOfType<StringAttr>(r, name);
    };
    PipelineResult result{PipelineResult::Slot};
    if (auto slot =
            func.getResultAttrOfType<IntegerAttr>(r, TgDialect::kSlotAttr)) {
      result.index = slot.getInt();
      functions.slotDescs[slot.getInt()] =
          tensorDesc("slot" + std::to_string(slot.getInt()), type);
    } else if (auto metric = attr(TgDialect::kMetricAttr)) {
      result.kind = PipelineResult::Metric;
      result.field = metric.getValue() == "loss"        ? "loss"
                     : metric.getValue() == "grad_norm" ? "gradNorm"
                                                        : "lr";
    } else if (auto k = indexOf(sig.gradIndex, attr(TgDialect::kGradAttr))) {
      result.kind = PipelineResult::Grad;
      result.index = *k;
    } else if (auto k = indexOf(sig.gradIndex, attr(TgDialect::kReducedAttr))) {
      result.kind = PipelineResult::Reduced;
      result.index = *k;
    } else if (auto updated = attr(TgDialect::kUpdateAttr);
               updated && indexOf(sig.paramIndex, updated)) {
      result.kind = PipelineResult::Param;
      result.index = *indexOf(sig.paramIndex, updated);
    } else if (updated && indexOf(sig.stateIndex, updated)) {
      result.kind = PipelineResult::State;
      result.index = *indexOf(sig.stateIndex, updated);
    } else {
      return unbound(func, r, "result");
    }
    f.results.push_back(result);
  }
  return success();
}

/// Each function of `module` with a pipeline role, bound and handed to
/// `emitFunction`, its name recorded in `functions` under its role and
/// chunk (an update under its stage).
LogicalResult emitPipelineFunctions(
    ModuleOp module, PipelineStages stages, const PipelineBinder &binder,
    llvm::function_ref<LogicalResult(const PipelineFunction &)> emitFunction,
    PipelineFunctions &functions) {
  for (auto func : module.getOps<func::FuncOp>()) {
    auto role =
        func->getAttrOfType<DictionaryAttr>(TgDialect::kPipelineRoleAttr);
    if (!role)
      continue;
    PipelineFunction f;
    f.func = func;
    f.kind = role.getAs<StringAttr>("kind").getValue();
    f.stage = f.kind == "update"
                  ? role.getAs<IntegerAttr>("stage").getInt()
                  : role.getAs<IntegerAttr>("chunk").getInt() % stages.stages;
    if (failed(binder.bindArguments(f, functions)) ||
        failed(binder.bindResults(f, functions)) || failed(emitFunction(f)))
      return failure();
    std::string name = func.getSymName().str();
    if (f.kind == "update")
      functions.update[f.stage] = name;
    else {
      int64_t c = role.getAs<IntegerAttr>("chunk").getInt();
      (f.kind == "forward"    ? functions.forward
       : f.kind == "backward" ? functions.backward
       : f.kind == "reduce"   ? functions.reduce
                              : functions.weight)[c] = name;
    }
  }
  return success();
}

/// The slots' tensors (kPipelineSlots) and the functions by chunk
/// (kPipelineForward, ...), after a comment that describes the pipeline.
void writeFunctionTables(llvm::raw_ostream &tables, PipelineStages stages,
                         const PipelinePlan &plan,
                         const PipelineFunctions &functions) {
  auto list = [&](ArrayRef<std::string> names) {
    std::string text;
    for (const std::string &n : names)
      text += "    " + n + ",\n";
    return text;
  };
  tables << "\n// The pipelined step: " << stages.stages << " stages x "
         << stages.virtualStages << " chunks a stage, "
         << plan.schedule.getValue() << ", " << plan.shape.microBatches
         << " micro-batches.\n";
  tables << "const tgc::TensorDesc kPipelineSlots[] = {\n";
  for (auto &[k, desc] : functions.slotDescs)
    tables << "    " << desc << ",\n";
  if (functions.slotDescs.empty())
    tables << "    {},\n";
  tables << "};\n";
  tables << "void (*const kPipelineForward[])(tgc::StepIO &) = {\n"
         << list(functions.forward) << "};\n"
         << "void (*const kPipelineBackward[])(tgc::StepIO &) = {\n"
         << list(functions.backward) << "};\n"
         << "void (*const kPipelineWeight[])(tgc::StepIO &) = {\n"
         << list(functions.weight) << "};\n"
         << "void (*const kPipelineReduce[])(tgc::StepIO &) = {\n"
         << list(functions.reduce) << "};\n";
}

/// The slots each boundary between chunks sends forward and backward
/// (kPipelineBoundaries).
void writeBoundaryTables(llvm::raw_ostream &tables, ArrayAttr boundaries) {
  for (auto [bd, a] : llvm::enumerate(boundaries)) {
    auto dict = cast<DictionaryAttr>(a);
    for (StringRef way : {"forward", "backward"}) {
      ArrayRef<int64_t> slots = dict.getAs<DenseI64ArrayAttr>(way).asArrayRef();
      tables << "const int32_t kBoundary" << bd << "_" << way
             << "[] = " << (slots.empty() ? "{-1}" : intList(slots)) << ";\n";
    }
  }
  tables << "const tgc::PipelineBoundary kPipelineBoundaries[] = {\n";
  for (auto [bd, a] : llvm::enumerate(boundaries)) {
    auto dict = cast<DictionaryAttr>(a);
    tables << "    {" << dict.getAs<DenseI64ArrayAttr>("forward").size()
           << ", kBoundary" << bd << "_forward, "
           << dict.getAs<DenseI64ArrayAttr>("backward").size() << ", kBoundary"
           << bd << "_backward},\n";
  }
  if (boundaries.empty())
    tables << "    {},\n";
  tables << "};\n";
}

/// Each stage's slot buffers as tg-pipeline-schedule planned them.
void writeSlotBufferTables(llvm::raw_ostream &tables,
                           ArrayRef<pipeline::SlotPlan> plans) {
  auto ints = [](ArrayRef<int64_t> values) {
    return values.empty() ? std::string("{-1}") : intList(values);
  };
  for (auto [st, plan] : llvm::enumerate(plans)) {
    SmallVector<int64_t> buffers, waits;
    for (const std::vector<int64_t> &row : plan.buffer)
      buffers.append(row.begin(), row.end());
    for (bool wait : plan.waitSends)
      waits.push_back(wait);
    tables << "const int32_t kStage" << st
           << "SlotBuffers[] = " << ints(buffers) << ";\n"
           << "const int32_t kStage" << st
           << "SlotCounts[] = " << ints(plan.count) << ";\n"
           << "const int32_t kStage" << st
           << "PostAfter[] = " << ints(plan.postAfter) << ";\n"
           << "const uint8_t kStage" << st << "WaitSends[] = " << ints(waits)
           << ";\n";
  }
}

/// Each stage's actions, its slot buffers and its update
/// (kPipelineStages), and the stages that update each parameter
/// (kPipelineParamStages).
void writeStageTables(llvm::raw_ostream &tables, const PipelinePlan &plan,
                      ArrayRef<pipeline::SlotPlan> slotPlans,
                      const PipelineFunctions &functions) {
  static const char *kindNames[] = {"F",     "B",     "W",     "BW",    "SendF",
                                    "RecvF", "SendB", "RecvB", "Reduce"};
  for (auto [st, list] : llvm::enumerate(plan.actions)) {
    tables << "const tgc::PipelineAction kStage" << st << "Actions[] = {\n";
    for (const pipeline::Action &a : list)
      tables << "    {tgc::PipelineActionKind::"
             << kindNames[static_cast<int>(a.kind)] << ", " << a.microBatch
             << ", " << a.chunk << "},\n";
    tables << "};\n";
  }
  writeSlotBufferTables(tables, slotPlans);
  tables << "const tgc::PipelineStage kPipelineStages[] = {\n";
  for (auto [st, list] : llvm::enumerate(plan.actions))
    tables << "    {" << list.size() << ", kStage" << st << "Actions, "
           << functions.update[st] << ", kStage" << st << "SlotBuffers, kStage"
           << st << "SlotCounts, kStage" << st << "PostAfter, kStage" << st
           << "WaitSends},\n";
  tables << "};\nconst int64_t kPipelineParamStages[] = "
         << intList(functions.paramStages) << ";\n";
}

} // namespace

LogicalResult mlir::tg::emitPipeline(
    ModuleOp module, const StepSignature &sig, StringRef backend,
    StringRef scalars,
    llvm::function_ref<LogicalResult(const PipelineFunction &)> emitFunction,
    llvm::raw_ostream &tables) {
  PipelineStages stages = getPipelineStages(module);
  FailureOr<PipelinePlan> plan = readPipelinePlan(module, stages, backend);
  if (failed(plan))
    return failure();

  PipelineFunctions functions(stages.stages * stages.virtualStages,
                              stages.stages, sig.fwdParams.size());
  PipelineBinder binder(sig, backend, scalars);
  if (failed(emitPipelineFunctions(module, stages, binder, emitFunction,
                                   functions)))
    return failure();
  const std::map<int64_t, std::string> &slotDescs = functions.slotDescs;
  int64_t numSlots = slotDescs.empty() ? 0 : slotDescs.rbegin()->first + 1;
  for (int64_t k = 0; k < numSlots; ++k)
    if (!slotDescs.count(k))
      return module.emitError(backend)
             << ": pipeline slot " << k << " is written by no function";
  llvm::Expected<std::vector<pipeline::SlotPlan>> slotPlans =
      readSlotPlans(module, plan->shape, numSlots);
  if (!slotPlans)
    return module.emitError(backend)
           << ": " << llvm::toString(slotPlans.takeError());

  writeFunctionTables(tables, stages, *plan, functions);
  writeBoundaryTables(tables, plan->boundaries);
  writeStageTables(tables, *plan, *slotPlans, functions);
  FailureOr<int> axis = meshAxisIndex(sig.trainStep, "pp", backend);
  if (failed(axis))
    return failure();
  tables
      << "const tgc::PipelineDesc kPipeline = {\n    " << stages.stages << ", "
      << stages.virtualStages << ", " << plan->shape.microBatches << ", "
      << *axis << ", \"" << plan->schedule.getValue() << "\",\n    " << numSlots
      << ", kPipelineSlots,\n"
         "    kPipelineForward, kPipelineBackward, kPipelineWeight,\n"
         "    kPipelineReduce,\n"
         "    kPipelineBoundaries, kPipelineStages, kPipelineParamStages};\n";
  return success();
}
