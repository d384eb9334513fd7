//===- SchedulePipeline.cpp - Each stage's actions, in the IR ----*- C++
//-*-===//
//
// tg-pipeline-schedule: the action lists of the chosen schedule for the
// chunks tg-pipeline-split built, timed by the cost model on those very
// functions, checked by playing them, and written on the module.
//
//===----------------------------------------------------------------------===//

#include "passes/pipeline/Passes.h"

#include "compiler/cost/CostModel.h"
#include "dialects/tg/IR/TgOps.h"
#include "dialects/tg/IR/TgSharding.h"
#include "passes/pipeline/Chunks.h"
#include "passes/pipeline/PipelineSchedule.h"

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

    std::optional<PipelineCostModel> cost =
        pipelineCostModel(module, cluster, "tg-pipeline-schedule");
    if (!cost)
      return signalPassFailure();
    pipeline::Costs costs = pipelineFunctionCosts(module, shape, *cost->model);

    SmallVector<pipeline::Schedule> candidates;
    if (schedule == "auto") {
      if (shape.virtualStages > 1)
        candidates.push_back(pipeline::Schedule::Interleaved);
      else if (shape.microBatches < shape.stages)
        candidates = {pipeline::Schedule::OneFOneB};
      else
        candidates = {pipeline::Schedule::OneFOneB,
                      pipeline::Schedule::ZeroBubbleH1};
    } else if (std::optional<pipeline::Schedule> chosen =
                   pipeline::parseSchedule(schedule)) {
      candidates.push_back(*chosen);
    } else {
      module.emitError("tg-pipeline-schedule: unknown schedule '")
          << schedule << "'; expected gpipe, 1f1b, interleaved, zb-h1 or auto";
      return signalPassFailure();
    }
    std::optional<pipeline::Schedule> best;
    pipeline::StageActions bestActions;
    double bestSeconds = 0;
    for (pipeline::Schedule s : candidates) {
      auto actions = pipeline::buildSchedule(s, shape, costs);
      if (!actions) {
        module.emitError("tg-pipeline-schedule: ")
            << pipeline::scheduleName(s) << ": "
            << llvm::toString(actions.takeError());
        return signalPassFailure();
      }
      auto timeline = pipeline::simulate(shape, *actions, costs);
      if (!timeline) {
        module.emitError("tg-pipeline-schedule: ")
            << pipeline::scheduleName(s) << ": "
            << llvm::toString(timeline.takeError());
        return signalPassFailure();
      }
      if (!best || timeline->makespan < bestSeconds) {
        best = s;
        bestActions = std::move(*actions);
        bestSeconds = timeline->makespan;
      }
    }

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
                     b.getStringAttr(pipeline::scheduleName(*best)));
    pipelineAttr.set("micro_batches", b.getI64IntegerAttr(shape.microBatches));
    module->setAttr(TgDialect::kPipelineAttr,
                    pipelineAttr.getDictionary(module.getContext()));
  }
};

} // namespace
