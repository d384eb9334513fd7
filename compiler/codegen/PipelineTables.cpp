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

LogicalResult mlir::tg::emitPipeline(
    ModuleOp module, const StepSignature &sig, StringRef backend,
    StringRef scalars,
    llvm::function_ref<LogicalResult(const PipelineFunction &)> emitFunction,
    llvm::raw_ostream &tables) {
  PipelineStages stages = getPipelineStages(module);
  auto boundaries =
      module->getAttrOfType<ArrayAttr>(TgDialect::kPipelineTransfersAttr);
  auto pipelineDict =
      module->getAttrOfType<DictionaryAttr>(TgDialect::kPipelineAttr);
  auto scheduleAttr =
      pipelineDict ? pipelineDict.getAs<StringAttr>("schedule") : nullptr;
  if (!boundaries || !scheduleAttr)
    return module.emitError(backend)
           << ": the pipelined module has no schedule "
              "(run tg-pipeline-split and "
              "tg-pipeline-schedule)";
  int64_t chunks = stages.stages * stages.virtualStages;
  if ((int64_t)boundaries.size() != chunks - 1)
    return module.emitError(backend)
           << ": tg.pipeline_transfers has " << boundaries.size()
           << " boundaries, for " << stages.stages << " stages of " << chunks
           << " chunks";
  // The lists as written, checked by playing them: a hand-edited order
  // that deadlocks, reads what does not exist yet or receives out of the
  // sender's order fails here.
  pipeline::Shape shape;
  llvm::Expected<pipeline::StageActions> actions =
      readPipelineActions(module, shape);
  if (!actions)
    return module.emitError(backend)
           << ": " << llvm::toString(actions.takeError());
  if (auto played = pipeline::simulate(
          shape, *actions, pipeline::Costs::uniform(shape, 1, 1, 1));
      !played)
    return module.emitError(backend)
           << ": tg.pipeline_actions: " << llvm::toString(played.takeError());

  llvm::StringMap<unsigned> inputIndex;
  for (auto [k, arg] : llvm::enumerate(sig.fwdInputs))
    if (auto name = sig.forward.getArgAttrOfType<StringAttr>(
            arg, TgDialect::kInputAttr))
      inputIndex[name.getValue()] = k;

  SmallVector<std::string> forward(chunks, "nullptr"),
      backward(chunks, "nullptr"), weight(chunks, "nullptr"),
      reduce(chunks, "nullptr"), update(stages.stages, "nullptr");
  std::map<int64_t, std::string> slotDescs;
  SmallVector<int64_t> paramStages(sig.fwdParams.size(), 0);
  auto lookup = [](const DenseMap<StringRef, unsigned> &map,
                   StringAttr a) -> std::optional<unsigned> {
    if (!a)
      return std::nullopt;
    auto it = map.find(a.getValue());
    if (it == map.end())
      return std::nullopt;
    return it->second;
  };
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
    auto fail = [&](unsigned i, StringRef what) {
      return func.emitError(backend)
             << ": @" << func.getSymName() << " " << what << " " << i
             << " is no parameter, input, state, gradient, slot or scalar "
                "the pipeline knows";
    };
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto attr = [&](StringRef name) {
        return func.getArgAttrOfType<StringAttr>(i, name);
      };
      std::string bound;
      if (auto k = lookup(sig.paramIndex, attr(TgDialect::kParamAttr))) {
        bound = "io.params[" + std::to_string(*k) + "]";
        if (f.kind == "update")
          paramStages[*k] |= int64_t(1) << f.stage;
      } else if (auto name = attr(TgDialect::kInputAttr);
                 name && inputIndex.count(name.getValue())) {
        bound =
            "io.inputs[" + std::to_string(inputIndex[name.getValue()]) + "]";
      } else if (auto k = lookup(sig.stateIndex, attr(TgDialect::kStateAttr))) {
        bound = "io.state[" + std::to_string(*k) + "]";
      } else if (auto k = lookup(sig.gradIndex, attr(TgDialect::kAccumAttr))) {
        bound = "io.grads[" + std::to_string(*k) + "]";
      } else if (auto k =
                     lookup(sig.gradIndex, attr(TgDialect::kReducedAttr))) {
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
        return fail(i, "argument");
      }
      f.arguments.push_back(bound);
    }
    for (auto [r, type] : llvm::enumerate(func.getResultTypes())) {
      PipelineResult result{PipelineResult::Slot};
      if (auto slot =
              func.getResultAttrOfType<IntegerAttr>(r, TgDialect::kSlotAttr)) {
        result.index = slot.getInt();
        slotDescs[slot.getInt()] =
            tensorDesc("slot" + std::to_string(slot.getInt()), type);
      } else if (auto metric = func.getResultAttrOfType<StringAttr>(
                     r, TgDialect::kMetricAttr)) {
        result.kind = PipelineResult::Metric;
        result.field = metric.getValue() == "loss"        ? "loss"
                       : metric.getValue() == "grad_norm" ? "gradNorm"
                                                          : "lr";
      } else if (auto k =
                     lookup(sig.gradIndex, func.getResultAttrOfType<StringAttr>(
                                               r, TgDialect::kGradAttr))) {
        result.kind = PipelineResult::Grad;
        result.index = *k;
      } else if (auto k =
                     lookup(sig.gradIndex, func.getResultAttrOfType<StringAttr>(
                                               r, TgDialect::kReducedAttr))) {
        result.kind = PipelineResult::Reduced;
        result.index = *k;
      } else if (auto updated = func.getResultAttrOfType<StringAttr>(
                     r, TgDialect::kUpdateAttr);
                 updated && lookup(sig.paramIndex, updated)) {
        result.kind = PipelineResult::Param;
        result.index = *lookup(sig.paramIndex, updated);
      } else if (updated && lookup(sig.stateIndex, updated)) {
        result.kind = PipelineResult::State;
        result.index = *lookup(sig.stateIndex, updated);
      } else {
        return fail(r, "result");
      }
      f.results.push_back(result);
    }
    if (failed(emitFunction(f)))
      return failure();
    std::string name = func.getSymName().str();
    if (f.kind == "update")
      update[f.stage] = name;
    else {
      int64_t c = role.getAs<IntegerAttr>("chunk").getInt();
      (f.kind == "forward"    ? forward
       : f.kind == "backward" ? backward
       : f.kind == "reduce"   ? reduce
                              : weight)[c] = name;
    }
  }
  int64_t numSlots = slotDescs.empty() ? 0 : slotDescs.rbegin()->first + 1;
  for (int64_t k = 0; k < numSlots; ++k)
    if (!slotDescs.count(k))
      return module.emitError(backend)
             << ": pipeline slot " << k << " is written by no function";
  llvm::Expected<std::vector<pipeline::SlotPlan>> plans =
      readSlotPlans(module, shape, numSlots);
  if (!plans)
    return module.emitError(backend)
           << ": " << llvm::toString(plans.takeError());

  auto list = [&](ArrayRef<std::string> names) {
    std::string text;
    for (const std::string &n : names)
      text += "    " + n + ",\n";
    return text;
  };
  tables << "\n// The pipelined step: " << stages.stages << " stages x "
         << stages.virtualStages << " chunks a stage, "
         << scheduleAttr.getValue() << ", " << shape.microBatches
         << " micro-batches.\n";
  tables << "const tgc::TensorDesc kPipelineSlots[] = {\n";
  for (auto &[k, desc] : slotDescs)
    tables << "    " << desc << ",\n";
  if (slotDescs.empty())
    tables << "    {},\n";
  tables << "};\n";
  tables << "void (*const kPipelineForward[])(tgc::StepIO &) = {\n"
         << list(forward) << "};\n"
         << "void (*const kPipelineBackward[])(tgc::StepIO &) = {\n"
         << list(backward) << "};\n"
         << "void (*const kPipelineWeight[])(tgc::StepIO &) = {\n"
         << list(weight) << "};\n"
         << "void (*const kPipelineReduce[])(tgc::StepIO &) = {\n"
         << list(reduce) << "};\n";
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
  static const char *kindNames[] = {"F",     "B",     "W",     "BW",    "SendF",
                                    "RecvF", "SendB", "RecvB", "Reduce"};
  for (auto [st, list] : llvm::enumerate(*actions)) {
    tables << "const tgc::PipelineAction kStage" << st << "Actions[] = {\n";
    for (const pipeline::Action &a : list)
      tables << "    {tgc::PipelineActionKind::"
             << kindNames[static_cast<int>(a.kind)] << ", " << a.microBatch
             << ", " << a.chunk << "},\n";
    tables << "};\n";
  }
  // Each stage's slot buffers as tg-pipeline-schedule planned them.
  auto ints = [](ArrayRef<int64_t> values) {
    return values.empty() ? std::string("{-1}") : intList(values);
  };
  for (auto [st, plan] : llvm::enumerate(*plans)) {
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
  tables << "const tgc::PipelineStage kPipelineStages[] = {\n";
  for (auto [st, list] : llvm::enumerate(*actions))
    tables << "    {" << list.size() << ", kStage" << st << "Actions, "
           << update[st] << ", kStage" << st << "SlotBuffers, kStage" << st
           << "SlotCounts, kStage" << st << "PostAfter, kStage" << st
           << "WaitSends},\n";
  tables << "};\nconst int64_t kPipelineParamStages[] = "
         << intList(paramStages) << ";\n";
  FailureOr<int> axis = meshAxisIndex(sig.trainStep, "pp", backend);
  if (failed(axis))
    return failure();
  tables
      << "const tgc::PipelineDesc kPipeline = {\n    " << stages.stages << ", "
      << stages.virtualStages << ", " << shape.microBatches << ", " << *axis
      << ", \"" << scheduleAttr.getValue() << "\",\n    " << numSlots
      << ", kPipelineSlots,\n"
         "    kPipelineForward, kPipelineBackward, kPipelineWeight,\n"
         "    kPipelineReduce,\n"
         "    kPipelineBoundaries, kPipelineStages, kPipelineParamStages};\n";
  return success();
}
