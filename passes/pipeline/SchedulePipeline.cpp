//===- SchedulePipeline.cpp - Each stage's actions, in the IR ----*- C++
//-*-===//
//
// tg-pipeline-schedule: the action lists of the chosen schedule for the
// chunks tg-pipeline-split built, timed by the cost model on those very
// functions, checked by playing them, and written on the module.
//
//===----------------------------------------------------------------------===//

#include "passes/pipeline/Passes.h"

#include "dialects/tg/IR/TgOps.h"
#include "dialects/tg/IR/TgSharding.h"
#include "passes/pipeline/Chunks.h"
#include "planning/cost/CostModel.h"
#include "planning/pipeline/PipelineSchedule.h"

namespace mlir::tg {
#define GEN_PASS_DEF_PIPELINESCHEDULEPASS
#include "passes/pipeline/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

struct PipelineSchedulePass
    : public tg::impl::PipelineSchedulePassBase<PipelineSchedulePass> {
  using PipelineSchedulePassBase::PipelineSchedulePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    PipelineStages stages = getPipelineStages(module);
    if (!stages.pipelined())
      return;
    // Stages given after the optimizer phase: tg-pipeline-split leaves the
    // module whole (priced, not built).
    if (!module->hasAttr(TgDialect::kPipelineTransfersAttr) &&
        !module.lookupSymbol("apply_gradients"))
      return;
    if (!module->hasAttr(TgDialect::kPipelineTransfersAttr)) {
      module.emitError("tg-pipeline-schedule: the module has no chunks; run "
                       "tg-pipeline-split first");
      return signalPassFailure();
    }
    auto step = module.lookupSymbol<func::FuncOp>("train_step");
    auto micro =
        step ? step->getAttrOfType<IntegerAttr>(TgDialect::kMicroBatchesAttr)
             : nullptr;
    pipeline::Shape shape{stages.stages, stages.virtualStages,
                          micro ? micro.getInt() : 1};
    shape.reduced = reducedChunksOf(module, shape.chunks());

    std::optional<PipelineCostModel> cost =
        pipelineCostModel(module, cluster, "tg-pipeline-schedule");
    if (!cost)
      return signalPassFailure();
    pipeline::Costs costs = pipelineFunctionCosts(module, shape, *cost->model);

    llvm::Expected<pipeline::ChosenSchedule> chosen = pipeline::chooseSchedule(
        pipeline::scheduleChoiceName(schedule), shape, costs);
    if (!chosen) {
      module.emitError("tg-pipeline-schedule: ")
          << llvm::toString(chosen.takeError());
      return signalPassFailure();
    }
    const pipeline::StageActions &bestActions = chosen->actions;

    Builder b(module.getContext());
    SmallVector<Attribute> perStage;
    for (const auto &list : bestActions) {
      SmallVector<StringRef> names;
      SmallVector<std::string> texts;
      for (const pipeline::Action &a : list)
        texts.push_back(pipeline::describe(a, shape));
      for (const std::string &t : texts)
        names.push_back(t);
      perStage.push_back(b.getStrArrayAttr(names));
    }
    module->setAttr(TgDialect::kPipelineActionsAttr, b.getArrayAttr(perStage));
    // How each stage keeps the values between its functions under the
    // list: what the runtime allocates and --report=memory counts.
    module->setAttr(
        kPipelineBuffersAttr,
        slotPlansAttr(
            module.getContext(),
            pipeline::planSlots(shape, bestActions, slotUseOf(module, shape))));
    NamedAttrList pipelineAttr(
        module->getAttrOfType<DictionaryAttr>(TgDialect::kPipelineAttr));
    pipelineAttr.set("schedule",
                     b.getStringAttr(pipeline::scheduleName(chosen->schedule)));
    pipelineAttr.set("micro_batches", b.getI64IntegerAttr(shape.microBatches));
    module->setAttr(TgDialect::kPipelineAttr,
                    pipelineAttr.getDictionary(module.getContext()));
  }
};

} // namespace
