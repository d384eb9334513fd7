//===- PlanSearch.h - The searches tgc runs over compiled plans --*- C++
//-*-===//
//
// What tgc decides by compiling candidates and comparing what comes out:
// the micro-batch that fits the device (--batch-size=auto), the sharding
// plan among the automatic partitioner's and the standard presets'
// (--auto-shard), and the pipeline stage count (--pipeline-stages=auto).
// Each candidate runs the passes (runTrainingPipeline) and is measured on
// the planned IR: the memory plan, the cost model's price of the step.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_COMPILER_PIPELINE_PLANSEARCH_H
#define TGC_COMPILER_PIPELINE_PLANSEARCH_H

#include "compiler/pipeline/Pipeline.h"
#include "compiler/pipeline/ShardingReport.h"
#include "frontend/ModelFile.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mlir::tg {

/// An integer of the training table, 0 when absent.
int64_t tableInteger(ModuleOp module, llvm::StringRef key);

/// Sets the training table's grad_accum, which the executable takes as its
/// default micro-batches per step.
void setTableGradAccum(ModuleOp module, int64_t microBatches);

/// Bytes of @train_step's arguments: parameters, optimizer state, batch
/// inputs, accumulators (outside the arena).
int64_t argumentBytes(ModuleOp module);

/// --batch-size=auto's target: the training table's batch_size times its
/// accumulation (or --grad-accum).
int64_t globalBatchOf(ModuleOp module, const PipelineOptions &options);

/// --batch-size=auto: the largest divisor of the global batch whose step
/// fits `deviceBytes` (@train_step's planned arena plus its arguments; a
/// pipeline's fullest stage), found by bisection over the divisors, each
/// imported from the model file `path` and compiled to the memory phase with
/// `options` (remat auto: the memory budget is what the arguments leave).
/// `why` says what was chosen and what the next size would need;
/// `chosenArgs` the chosen step's argument bytes. An error on `first` when
/// not even micro-batch 1 fits.
FailureOr<int64_t>
chooseMicroBatch(MLIRContext &context, llvm::StringRef path, ModuleOp first,
                 const PipelineOptions &options, int64_t deviceBytes,
                 std::function<LogicalResult(PassManager &)> configure,
                 std::string &why, int64_t &chosenArgs);

/// A sharding plan compiled through the memory phase and priced by the
/// cost model: the solver's (tg-auto-shard) or a preset's.
struct CompiledPlan {
  std::string preset; ///< "" for the solver's
  PlanEstimate estimate;
  OwningOpRef<ModuleOp> module;
  /// The solver's plan at the sharding phase, for --compile-to=sharding and
  /// the phases up to memory: its pins, without solving again.
  OwningOpRef<ModuleOp> sharded;
};

/// One stage count --pipeline-stages=auto tries: the model imported on its
/// mesh, the options it compiles with, and its plans, compiled and priced.
struct StageCandidate {
  int64_t stages = 1, virtualStages = 1;
  std::string mesh;
  OwningOpRef<ModuleOp> module;
  PipelineOptions options;
  std::vector<CompiledPlan> plans;
  /// The fastest plan that fits (fastestFitting), or none.
  const CompiledPlan *best = nullptr;
};

/// The standard plans (pure data parallel, ZeRO-3, Megatron-LM's tensor
/// parallelism x data parallel, with sequence parallelism, and with the
/// distributed optimizer) and, with `solver`, the automatic partitioner's,
/// each compiled from `pristine` (a module after phase `from`) with
/// `options` otherwise unchanged and priced on `cost`; `skip` is left out
/// (the plan already compiled), as are the plans --allow-strategies
/// forbids. With `keepSharded`, the partitioner's plan also keeps its module
/// at the sharding phase. A plan that does not compile is kept with its
/// error.
std::vector<CompiledPlan>
compilePlans(ModuleOp pristine, const PipelineOptions &options, Phase from,
             const CostModel &cost, bool solver, bool keepSharded,
             llvm::StringRef skip,
             llvm::function_ref<LogicalResult(PassManager &)> configure);

/// The plan --auto-shard builds among `plans`: the fastest that compiled
/// and fits `limit` (with `solverOnly`, only the partitioner's), or null.
CompiledPlan *fastestFitting(std::vector<CompiledPlan> &plans, int64_t limit,
                             bool solverOnly);

/// --pipeline-stages=auto: for each P dividing the mesh's data axis (D),
/// the model imported from `path` on the mesh with data D / P and P stages,
/// its accumulation P times as long (the same global batch), with 1, 2 and
/// 4 chunks a stage (or `virtualStages`), each planned by compilePlans and
/// priced as built; the fastest plan that fits `limit` wins. Writes a line
/// per candidate to `log`; an error on `imported` when no candidate has a
/// plan that fits.
FailureOr<StageCandidate>
choosePipelineStages(MLIRContext &context, llvm::StringRef path,
                     const ImportOptions &importOptions, ModuleOp imported,
                     const PipelineOptions &options, const CostModel &cost,
                     int64_t limit, Phase to,
                     std::optional<int64_t> virtualStages,
                     std::function<LogicalResult(PassManager &)> configure,
                     llvm::raw_ostream &log);

} // namespace mlir::tg

#endif // TGC_COMPILER_PIPELINE_PLANSEARCH_H
