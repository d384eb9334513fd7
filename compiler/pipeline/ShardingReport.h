//===- ShardingReport.h - tgc --report=sharding -----------------*- C++ -*-===//
//
// What a sharding plan costs, read from the compiled IR (never an
// emitter's): each tensor's sharding and where it came from, each
// collective with its bytes, modelled time and the value that caused it,
// memory per device against the limit, the modelled step time and MFU, and
// the standard plans beside the chosen one with the reason each loses.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_COMPILER_PIPELINE_SHARDINGREPORT_H
#define TGC_COMPILER_PIPELINE_SHARDINGREPORT_H

#include "planning/cost/CostModel.h"
#include "planning/pipeline/PipelineSchedule.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::tg {

/// One collective of the step as the cost model sees it.
struct CollectiveEstimate {
  std::string kind, axis, cause, layer;
  int64_t bytes = 0;
  double seconds = 0;
};

/// The modelled cost of a module compiled through the memory phase.
struct PlanEstimate {
  std::string label;
  /// Why the plan could not be compiled, or "" when it was.
  std::string error;
  double computeSeconds = 0, commSeconds = 0;
  /// The FLOPs one device computes per step.
  double flops = 0;
  /// What one device holds: the step's arguments (parameters, state,
  /// batch) and the arena's planned peak.
  int64_t argumentBytes = 0, arenaBytes = 0;
  SmallVector<CollectiveEstimate> collectives;
  /// Per layer (the model file's name prefix), compute and communication.
  SmallVector<std::tuple<std::string, double, double>> layers;

  /// Communication that runs beside compute (gradient buckets on a
  /// cluster whose spec overlaps them), as the schedule's waits allow.
  double hiddenSeconds = 0;

  /// Micro-batches per step (the training table's grad_accum where the
  /// module has @forward_backward): the times, FLOPs and per-layer figures
  /// above are of all of them, the collectives listed @train_step's.
  int64_t microBatches = 1;
  /// One call of @train_step (the last micro-batch, with the gradient sync
  /// and the update).
  double trainStepSeconds = 0;

  /// With pipeline stages (the module's tg.pipeline): the times above are
  /// the slowest stage's, the memory the fullest stage's, and the step adds
  /// the schedule's bubble and the stages' point-to-point transfers.
  /// `built`: the module is split and scheduled (tg-pipeline-split,
  /// tg-pipeline-schedule) and priced as built, its `schedule`'s lists
  /// played on its chunk functions (bubbleSeconds is then all the slowest
  /// stage's idle time, its waits for transfers included, and
  /// sendSeconds 0); else the step's ops are placed on stages by the stage
  /// map and the bubble is the generic schedule's (playPipeline).
  int64_t stages = 1, virtualStages = 1;
  bool built = false;
  std::string schedule;
  double bubbleSeconds = 0, sendSeconds = 0;
  /// The largest activation one stage sends the next per micro-batch.
  int64_t sendBytes = 0;
  /// The stage whose time is the step's, and the one holding most.
  int64_t slowestStage = 0, fullestStage = 0;

  double stepSeconds() const {
    return computeSeconds + commSeconds - hiddenSeconds + bubbleSeconds +
           sendSeconds;
  }
  int64_t memoryBytes() const { return argumentBytes + arenaBytes; }
};

/// Estimates one step of `module` (after tg-plan-memory): @train_step, and
/// with gradient accumulation @forward_backward once per other micro-batch.
/// With pipeline stages, each stage's share of both (by repeated layer,
/// what comes before the first layer on the first stage, after the last on
/// the last), the slowest stage setting the pace; before the split, the
/// bubble is `schedule`'s (as playPipeline plays it), after it the
/// schedule the module holds.
PlanEstimate estimatePlan(
    ModuleOp module, const CostModel &cost, StringRef label,
    pipeline::ScheduleChoice schedule = pipeline::ScheduleChoice::Auto);

/// Per chunk of `module`'s pipeline (its tg.pipeline, compiled through the
/// memory phase), the modelled seconds of one micro-batch's forward (F),
/// input backward (B) and weight backward (W), and of one transfer between
/// stages: those of tg-pipeline-split's chunk functions where the step is
/// cut into them (the executable's); otherwise (a plan on a mesh, priced,
/// not built) each op of @train_step but the update and the gradient buckets
/// (once a step) on the chunk the stage map gives it, collectives in
/// place. A backward op is B where what it computes reaches, through its
/// own chunk's ops, the backward of an earlier chunk (the gradient its
/// stage sends back), else W: the input backward of the first chunk is
/// empty.
llvm::Expected<pipeline::Costs> pipelineChunkCosts(ModuleOp module,
                                                   const CostModel &cost);

/// A split and scheduled module's pipeline as built: tg-pipeline-schedule's
/// action lists (its `schedule`) played on the modelled time of each of
/// tg-pipeline-split's chunk functions (pipelineFunctionCosts, on the
/// module's mesh with its axis pp): what --report=pipeline draws and the
/// pipelined estimate prices.
struct BuiltPipeline {
  pipeline::Shape shape;
  std::string schedule;
  pipeline::StageActions actions;
  pipeline::Costs costs;
  pipeline::Timeline timeline;
};
llvm::Expected<BuiltPipeline> playBuiltPipeline(ModuleOp module,
                                                const CostModel &cost);

/// The report as text, and as JSON (`--report-json`): `module` is the
/// chosen plan compiled through the memory phase, `others` the standard
/// plans, `limit` the bytes a device may hold.
void printShardingReport(ModuleOp module, const PlanEstimate &chosen,
                         ArrayRef<PlanEstimate> others, const CostModel &cost,
                         int64_t limit, llvm::raw_ostream &os);
llvm::json::Value shardingReportJson(ModuleOp module,
                                     const PlanEstimate &chosen,
                                     ArrayRef<PlanEstimate> others,
                                     const CostModel &cost, int64_t limit);

/// tgc --compare-plans: two compiled plans of one model side by side
/// (modelled step, compute, communication, collectives by kind, memory),
/// then every parameter or state whose sharding differs, with origins.
void printPlanComparison(ModuleOp a, const PlanEstimate &planA, ModuleOp b,
                         const PlanEstimate &planB, const CostModel &cost,
                         int64_t limit, llvm::raw_ostream &os);

/// Draws per-layer compute and communication time of the chosen plan, and
/// memory per device of every plan against the limit, as SVG.
void writeShardingPlot(const PlanEstimate &chosen,
                       ArrayRef<PlanEstimate> others, int64_t limit,
                       llvm::raw_ostream &os);

} // namespace mlir::tg

#endif // TGC_COMPILER_PIPELINE_SHARDINGREPORT_H
