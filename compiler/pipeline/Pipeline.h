//===- Pipeline.h - The tgc pipeline: phases and options ----------*- C++ -*-===//
//
// tgc runs a model through phases in this order; the driver can stop after
// any of them (--compile-to) and start from any (--compile-from, on IR that
// has been through the earlier ones).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_COMPILER_PIPELINE_PIPELINE_H
#define TGC_COMPILER_PIPELINE_PIPELINE_H

#include "passes/fusion/Passes.h"
#include "passes/remat/Passes.h"
#include "passes/sharding/AutoPartitioner.h"
#include "planning/pipeline/PipelineSchedule.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::tg {

enum class Phase {
  Import,    ///< the model file as tg IR: @forward
  Precision, ///< @forward computing in the precision policy's types
  Autodiff,  ///< + @forward_backward
  Optimizer, ///< + @train_step
  Sharding,  ///< every value sharded over the mesh (tg-propagate-sharding)
  Partition, ///< per-process shapes and collectives (tg-partition)
  Pipeline,  ///< what the backward recomputes (tg-remat, with --remat),
             ///< then with pipeline stages: chunks and each stage's
             ///< actions (tg-pipeline-split, tg-pipeline-schedule)
  Fusion,    ///< the step's ops grouped into tg.kernel ops (tg-fuse)
  Schedule,  ///< kernels in order, gradient all-reduce in buckets (tg-schedule)
  Memory,    ///< every buffer at an arena offset (tg-plan-memory)
  Layers,    ///< the repeated layers as calls of shared bodies
             ///< (tg-outline-layers)
  Source,    ///< emitted C++ source
  Executable ///< the training executable, built by the host compiler
};

/// Phase names as the driver's flags spell them.
std::optional<Phase> parsePhase(llvm::StringRef name);
llvm::StringRef phaseName(Phase phase);
/// The names of the phases from Import to `last`, for a message: "import,
/// precision, ... or layers".
std::string phaseNamesUpTo(Phase last);

/// What the backend a module is compiled for can do. The pipeline reads the
/// target's choices from here; a new backend states its own.
struct TargetOptions {
  /// "cpu" or "cuda", as --target names it.
  std::string name;
  /// tg-fuse's `target`: whose kernels it forms.
  FusionTarget fusionTarget = FusionTarget::Cpu;
  /// Ops the backend computes in f32 only: under bf16 they (and so their
  /// gradients) stay in f32 (tg-precision's fp32-ops).
  llvm::SmallVector<std::string> fp32Ops;
  /// The backend prints tg.kernel ops: tg-fuse applies the pipeline's
  /// rules. Otherwise it runs with fusion=none.
  bool printsKernels = true;
  /// tg-plan-memory's rules: arena offsets are multiples of this, and
  /// tg.attention keeps its statistics for its gradient.
  int64_t arenaAlignment = 64;
  bool attentionStatistics = false;
  /// The backend prints layer bodies and their calls: tg-outline-layers
  /// runs in the layers phase.
  bool outlinesLayers = false;
  /// The backend reads constants that are not literals from one section of
  /// its memory: tg-place-constants runs last, in the layers phase.
  bool placesConstants = false;
};

/// C++ with OpenMP and OpenBLAS (EmitCpp): every kernel kind, the plan.
TargetOptions cpuTarget();
/// CUDA with cuBLASLt (EmitCuda): f32 kernels only for convolution and
/// pooling; tg-fuse's cuda rules; a 256-byte aligned arena.
TargetOptions cudaTarget();

/// Overrides of the model file's training table (tgc's flags).
struct PipelineOptions {
  std::string optimizer;
  std::string schedule;
  int64_t totalSteps = 0;
  int64_t warmupSteps = -1;
  double weightDecay = -1.0;
  double clipGradNorm = -1.0;
  int64_t gradAccum = 0;
  /// tg-freeze's globs: the parameters that do not train (none when empty).
  std::vector<std::string> freeze;
  /// tg-raise: attention and GELU written out become tg.attention and
  /// tg.gelu (tgc does it for ONNX models, and with --raise).
  bool raise = false;
  /// tg-lora's adapters, when asked for: their rank, alpha and the modules
  /// whose weights get them.
  struct Lora {
    int64_t rank = 8;
    double alpha = 8.0;
    std::vector<std::string> targets;
  };
  std::optional<Lora> lora;
  /// tg-propagate-sharding's preset: "dp", "zero1", "zero2" or "zero3".
  std::string shardPreset = "dp";
  /// An automatic partitioner before tg-propagate-sharding (its options
  /// below): `autoPartitioner` names it among those registered
  /// (passes/sharding/AutoPartitioner.h; `tgc` is tg-auto-shard), and
  /// whoever sets it checks that it is registered.
  bool autoShard = false;
  std::string autoPartitioner = "tgc";
  /// What it is told; its cluster, schedule and remat are the ones below.
  AutoPartitionerOptions partitioning;
  /// The cluster spec the cost model prices on (--cluster).
  std::string cluster = "cpu-local";
  /// The precision policy: "fp32" (nothing changes) or "bf16" (bf16
  /// compute, fp32 master weights, optimizer state and loss); empty: the
  /// training table's `precision`, else fp32.
  std::string precision;
  /// tg-pipeline-schedule's schedule (with pipeline stages).
  pipeline::ScheduleChoice pipelineSchedule = pipeline::ScheduleChoice::Auto;
  /// tg-fuse's rules (for a target that prints kernels).
  FusionRules fusion = FusionRules::All;
  /// tg-remat's policy.
  RematPolicy remat = RematPolicy::None;
  /// remat "auto": tg-remat's budget of bytes kept for the backward, as
  /// given (-1: none), or searched by runTrainingPipeline for
  /// `memoryBudget`.
  int64_t activationBudget = -1;
  /// remat "auto": the planned peak of @train_step must fit this many
  /// bytes (0: no budget).
  int64_t memoryBudget = 0;
  /// remat "auto": tg-remat's budget of planned peak (-1: none; set by
  /// runTrainingPipeline for `memoryBudget`), and whether it takes the
  /// smallest peak it finds when nothing fits instead of failing.
  int64_t peakBudget = -1;
  bool leastPeakOverBudget = false;
  /// tg-remat's solver.
  RematSolver rematSolver = RematSolver::Auto;
  /// tg-schedule: an all-reduce bucket closes at this many bytes.
  int64_t bucketBytes = 25ll << 20;
  TargetOptions target = cpuTarget();
};

/// The last phase whose output is IR.
constexpr Phase kLastIRPhase = Phase::Layers;

/// The last phase the planners and reports read (every op in place, the
/// layers not yet outlined).
constexpr Phase kPlannedPhase = Phase::Memory;

/// Adds the passes that take IR from after `from` to after `to` (both
/// between Import and Layers). An error names what cannot be built (an
/// automatic partitioner no one registered).
llvm::Error buildTrainingPipeline(OpPassManager &pm,
                                  const PipelineOptions &options, Phase from,
                                  Phase to);

/// Runs the passes from after `from` to after `to` on `module`, each pass
/// manager set up by `configure` (command-line options, timing). With remat
/// "auto" and a memory budget, each try compiles a copy through
/// tg-plan-memory and reads the planned peak of @train_step. Without
/// pipeline stages tg-remat judges its choices by the peak itself
/// (`peakBudget`), and the budget it is given is lowered by what tg-fuse and
/// tg-schedule left above its plan; a pipeline's stages (and remat-solver
/// exact, which proves bytes kept) search tg-remat's activation budget
/// instead, the largest whose peak fits. Remat "full" is taken where it fits
/// at fewer FLOPs, and @train_step's `tg.remat` gains memory_budget,
/// peak_before (nothing recomputed) and tries. Fails with a diagnostic that
/// states the smallest peak found and what it adds when nothing fits.
LogicalResult
runTrainingPipeline(ModuleOp module, const PipelineOptions &options, Phase from,
                    Phase to,
                    llvm::function_ref<LogicalResult(PassManager &)> configure);

/// Registers `tgc-training` with tg-opt: import -> memory in one go.
void registerTrainingPipeline();

} // namespace mlir::tg

#endif // TGC_COMPILER_PIPELINE_PIPELINE_H
