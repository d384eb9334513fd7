//===- Pipeline.cpp - The tgc pipeline: phases and options --------*- C++ -*-===//

#include "compiler/pipeline/Pipeline.h"

#include "passes/autodiff/Passes.h"
#include "passes/fusion/Passes.h"
#include "passes/layers/Passes.h"
#include "passes/memory/Passes.h"
#include "passes/optimizer/Passes.h"
#include "passes/pipeline/Passes.h"
#include "passes/precision/Passes.h"
#include "passes/raise/Passes.h"
#include "passes/remat/Passes.h"
#include "passes/schedule/Passes.h"
#include "passes/sharding/AutoPartitioner.h"
#include "passes/sharding/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::tg;

std::optional<Phase> mlir::tg::parsePhase(StringRef name) {
  for (int p = 0; p <= static_cast<int>(Phase::Executable); ++p)
    if (phaseName(static_cast<Phase>(p)) == name)
      return static_cast<Phase>(p);
  return std::nullopt;
}

std::string mlir::tg::phaseNamesUpTo(Phase last) {
  std::string names;
  for (int p = 0; p <= static_cast<int>(last); ++p)
    names += (p == 0                        ? ""
              : p == static_cast<int>(last) ? " or "
                                            : ", ") +
             phaseName(static_cast<Phase>(p)).str();
  return names;
}

StringRef mlir::tg::phaseName(Phase phase) {
  switch (phase) {
  case Phase::Import:
    return "import";
  case Phase::Precision:
    return "precision";
  case Phase::Autodiff:
    return "autodiff";
  case Phase::Optimizer:
    return "optimizer";
  case Phase::Sharding:
    return "sharding";
  case Phase::Partition:
    return "partition";
  case Phase::Pipeline:
    return "pipeline";
  case Phase::Fusion:
    return "fusion";
  case Phase::Schedule:
    return "schedule";
  case Phase::Memory:
    return "memory";
  case Phase::Layers:
    return "layers";
  case Phase::Source:
    return "source";
  case Phase::Executable:
    return "executable";
  }
  return "";
}

TargetOptions mlir::tg::cpuTarget() {
  TargetOptions target;
  target.name = "cpu";
  target.outlinesLayers = true;
  return target;
}

TargetOptions mlir::tg::cudaTarget() {
  TargetOptions target;
  target.name = "cuda";
  target.fusionTarget = FusionTarget::Cuda;
  // runtime/cuda has f32 kernels only for these.
  target.fp32Ops = {"tg.conv2d", "tg.max_pool2d", "tg.avg_pool2d"};
  // cuBLASLt's fastest kernels want 256-byte aligned operands; its flash
  // attention keeps the forward's statistics for the backward.
  target.arenaAlignment = 256;
  target.attentionStatistics = true;
  target.outlinesLayers = true;
  // Device memory holds the constants kernels do not write as literals.
  target.placesConstants = true;
  return target;
}

llvm::Error mlir::tg::buildTrainingPipeline(OpPassManager &pm,
                                            const PipelineOptions &options,
                                            Phase from, Phase to) {
  if (from < Phase::Precision && to >= Phase::Precision) {
    // Attention and GELU written out (an ONNX export's) become their ops
    // before anything reads the graph.
    if (options.raise)
      pm.addPass(createRaisePass());
    // The adapters first: on the model as imported, whose weights the
    // matmuls read as they are.
    if (options.lora) {
      LoraPassOptions lora;
      lora.rank = options.lora->rank;
      lora.alpha = options.lora->alpha;
      lora.targets.assign(options.lora->targets.begin(),
                          options.lora->targets.end());
      pm.addPass(createLoraPass(lora));
    }
    // First, while @forward is the only function: a fused QKV weight is
    // viewed so that tensor parallelism can split its heads; every function
    // built later reads the view. Where a tp preset splits heads, and for
    // tg-auto-shard's plan, which may split them: without the views its
    // choices for a fused QKV weight were whole or split by columns, and
    // q, k and v split by columns are gathered before attention. (The
    // solver counts less memory on the views than the planned step holds,
    // 9% on GPT-3 6.7B at data=8,tp=8; tgc's compilePlans plans again
    // under a limit scaled by that miss.)
    SplitFusedProjectionsPassOptions split;
    split.preset = options.autoShard ? "tp" : options.shardPreset;
    pm.addPass(createSplitFusedProjectionsPass(split));
    // Before tg-autodiff: reverse mode then differentiates through the casts
    // to bf16, so the backward computes in bf16 as well and each parameter's
    // gradient comes back through its cast as f32 for the f32 optimizer.
    // Always added: under fp32 (the option, else the training table's
    // precision, else the default) it changes nothing.
    PrecisionPassOptions opt;
    opt.policy = options.precision;
    opt.fp32Ops = options.target.fp32Ops;
    pm.addPass(createPrecisionPass(opt));
  }
  if (from < Phase::Autodiff && to >= Phase::Autodiff) {
    if (!options.freeze.empty()) {
      FreezePassOptions freeze;
      freeze.patterns.assign(options.freeze.begin(), options.freeze.end());
      pm.addPass(createFreezePass(freeze));
    }
    // Fold the model file's identities first so autodiff sees less.
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createAutodiffPass());
    // The backward ops repeat forward subexpressions (broadcasts, constants).
    pm.addPass(createCSEPass());
  }
  if (from < Phase::Optimizer && to >= Phase::Optimizer) {
    // After tg-autodiff: it reads @forward_backward.
    BuildTrainStepPassOptions opt;
    opt.optimizer = options.optimizer;
    opt.schedule = options.schedule;
    opt.totalSteps = options.totalSteps;
    opt.warmupSteps = options.warmupSteps;
    opt.weightDecay = options.weightDecay;
    opt.clipGradNorm = options.clipGradNorm;
    opt.gradAccum = options.gradAccum;
    pm.addPass(createBuildTrainStepPass(opt));
    // After tg-autodiff too: @forward is then only the evaluation step,
    // which runs in inference mode (no dropout).
    pm.addPass(createInferenceForwardPass());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
  if (from < Phase::Sharding && to >= Phase::Sharding) {
    // After tg-optimizer: the step's state and updates exist to be sharded
    // (ZeRO), and @forward, @forward_backward and @train_step read each
    // parameter with one sharding. Without a tg.mesh it does nothing.
    if (options.autoShard) {
      // Before tg-propagate-sharding: its choices are pins there.
      AutoPartitionerOptions opt = options.partitioning;
      opt.cluster = options.cluster;
      opt.schedule = options.pipelineSchedule;
      // tg-remat's full policy is priced; the others are not (as none).
      opt.rematFull = options.remat == RematPolicy::Full;
      registerTgAutoPartitioner();
      const AutoPartitioner *partitioner =
          lookupAutoPartitioner(options.autoPartitioner);
      if (!partitioner)
        return llvm::createStringError(
            "no automatic partitioner is registered as '" +
            options.autoPartitioner + "'");
      partitioner->build(pm, opt);
    }
    PropagateShardingPassOptions opt;
    opt.preset = options.shardPreset;
    pm.addPass(createPropagateShardingPass(opt));
  }
  if (from < Phase::Partition && to >= Phase::Partition) {
    pm.addPass(createPartitionPass());
    // Pieces sliced twice from one value are one.
    pm.addPass(createCSEPass());
  }
  if (from < Phase::Pipeline && to >= Phase::Pipeline &&
      options.remat != RematPolicy::None) {
    // After tg-partition: the activations kept are the local pieces.
    // Before tg-pipeline-split: a pipeline's chunks inherit the choice, so
    // what a chunk's backward recomputes is not kept in its stage's slots
    // between F and B. Before tg-fuse: the copies it makes are fused where
    // they stand.
    RematPassOptions opt;
    opt.policy = options.remat;
    opt.activationBudget = options.activationBudget;
    opt.peakBudget = options.peakBudget;
    opt.leastPeakOverBudget = options.leastPeakOverBudget;
    // The peak is judged as tg-fuse, tg-schedule and tg-plan-memory
    // will plan it (below).
    opt.fusion =
        options.target.printsKernels ? options.fusion : FusionRules::None;
    opt.target = options.target.fusionTarget;
    opt.bucketBytes = options.bucketBytes;
    opt.alignment = options.target.arenaAlignment;
    opt.attentionStatistics = options.target.attentionStatistics;
    opt.solver = options.rematSolver;
    pm.addNestedPass<func::FuncOp>(createRematPass(opt));
  }
  if (from < Phase::Pipeline && to >= Phase::Pipeline) {
    // After tg-partition: chunks of the per-process step. Both do nothing
    // without tg.pipeline.
    PipelineSplitPassOptions split;
    split.cluster = options.cluster;
    pm.addPass(createPipelineSplitPass(split));
    PipelineSchedulePassOptions opt;
    opt.schedule = options.pipelineSchedule;
    opt.cluster = options.cluster;
    pm.addPass(createPipelineSchedulePass(opt));
  }
  if (from < Phase::Fusion && to >= Phase::Fusion) {
    // After tg-optimizer and its clean-up: groups the ops of @train_step,
    // @forward_backward and @forward as they will run.
    FusePassOptions opt;
    opt.fusion =
        options.target.printsKernels ? options.fusion : FusionRules::None;
    opt.target = options.target.fusionTarget;
    pm.addNestedPass<func::FuncOp>(createFusePass(opt));
  }
  if (from < Phase::Schedule && to >= Phase::Schedule) {
    // After tg-fuse: it orders kernels, not the ops inside them.
    SchedulePassOptions opt;
    opt.bucketBytes = options.bucketBytes;
    pm.addNestedPass<func::FuncOp>(createSchedulePass(opt));
  }
  if (from < Phase::Memory && to >= Phase::Memory) {
    // After tg-schedule: liveness follows the final order and its awaits.
    // After tg-fuse: a kernel's intermediates need no buffers, its results
    // do. Checked right away: a plan that overlaps live buffers is a bug.
    PlanMemoryPassOptions opt;
    opt.alignment = options.target.arenaAlignment;
    opt.attentionStatistics = options.target.attentionStatistics;
    pm.addNestedPass<func::FuncOp>(createPlanMemoryPass(opt));
    pm.addNestedPass<func::FuncOp>(createVerifyMemoryPass());
  }
  if (from < Phase::Layers && to >= Phase::Layers) {
    // Last: every decision about the step is made and checked; this one
    // only decides which layers the backend prints once.
    if (options.target.outlinesLayers)
      pm.addPass(createOutlineLayersPass());
    // After tg-outline-layers, which copies constants into the bodies.
    if (options.target.placesConstants) {
      PlaceConstantsPassOptions opt;
      opt.alignment = options.target.arenaAlignment;
      pm.addPass(createPlaceConstantsPass(opt));
    }
  }
  return llvm::Error::success();
}

void mlir::tg::registerTrainingPipeline() {
  PassPipelineRegistration<>(
      "tgc-training",
      "Model IR to @train_step in planned kernels: tg-precision, "
      "canonicalize, tg-autodiff, cse, tg-optimizer, tg-inference-forward, "
      "canonicalize, cse, tg-propagate-sharding, tg-partition, cse, tg-fuse, "
      "tg-schedule, tg-plan-memory, "
      "tg-verify-memory",
      [](OpPassManager &pm) {
        // The default partitioner is tgc's own, always registered.
        llvm::cantFail(buildTrainingPipeline(pm, PipelineOptions{},
                                             Phase::Import, Phase::Memory));
      });
}
