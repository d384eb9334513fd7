//===- Chunks.h - Which chunk of a pipelined step an op is on ---*- C++ -*-===//
//
// A pipelined step runs in P x V chunks of consecutive layers, chunk c on
// stage c mod P. The layers are the model file's repeated names (h.0.*,
// h.1.*, ...); what comes before the first (the embeddings) goes with the
// first chunk, what comes after the last (the final norm, the head, the
// loss) with the last. The pricing (tgc --report=sharding, tg-auto-shard)
// and tg-pipeline-split place ops by the same map.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_PIPELINE_CHUNKS_H
#define TGC_PASSES_PIPELINE_CHUNKS_H

#include "dialects/tg/IR/TgDialect.h"
#include "planning/pipeline/PipelineSchedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <optional>
#include <string>

namespace mlir::tg {

/// The group an op of a step works for: an optimizer update's (or a
/// collective on its result's) is its parameter's (groupOfName), others'
/// their tg.layer.
std::string layerOfOp(Operation *op);

/// Ops of no one chunk, which each function that reads them computes
/// itself: constants and iotas (ops of no operands, which CSE shares between
/// layers), the bf16 copies of parameters (mixed precision; a tied
/// weight's is read at both ends),
/// the gathers of a parameter split over the data axes (zero3), which a
/// chunk's backward repeats as ZeRO-3 does rather than keep the whole
/// weight from its forward, and a process's slice of an argument (the
/// targets where the loss is split over tp); also a chain of these from
/// an argument (a gather of a parameter's bf16 copy).
bool isChunkless(Operation *op);

/// The name of a step argument that is a parameter, its optimizer state or
/// its gradient accumulator, or null for the batch.
StringAttr parameterNameOf(func::FuncOp func, BlockArgument arg);

/// The chunk of each group: the repeated layers (in the order the forward
/// pass first reaches them) in P x V consecutive chunks of equal size,
/// chunk c on stage c mod P (Megatron-LM's interleaved placement; V = 1 is
/// plain 1F1B).
struct StageMap {
  PipelineStages pipeline;
  int64_t layers = 0;
  llvm::StringMap<int64_t> chunkOfGroup;

  int64_t chunks() const { return pipeline.stages * pipeline.virtualStages; }
  int64_t stageOf(int64_t chunk) const { return chunk % pipeline.stages; }

  /// The chunk of the layer whose parameter, state or accumulator `v` is,
  /// if it is one.
  std::optional<int64_t> chunkOfArgument(func::FuncOp func, Value v) const;

  /// The chunk of a group, if the map has it: a repeated layer's name the
  /// map lacks goes last (as the head does), another has none.
  std::optional<int64_t> chunkOfGroupName(StringRef group) const;

  /// The chunk of each op of `func` (its body's ops before the terminator,
  /// in order): its group's, or with no name the chunk of the parameter or
  /// state it reads (a fused optimizer update), else of the op whose result
  /// it reads first.
  SmallVector<int64_t> chunksOf(func::FuncOp func) const;
};

class CostModel;
struct ClusterSpec;

/// The stage map of `step` under `pipeline`, or an error that says why the
/// model cannot be split so. The cuts between chunks are the model file's
/// (training.pipeline_cuts: the first layer of each chunk after the
/// first), else those that make the slowest chunk fastest by `cost`'s time
/// of each layer's ops in `step` (the first chunk also runs the
/// embeddings, the last the head and the loss), else equal layer counts.
llvm::Expected<StageMap> stageMapOf(func::FuncOp step, PipelineStages pipeline,
                                    const CostModel *cost = nullptr);

/// The cost model of `cluster` (a shipped name or a JSON file) on the
/// module's mesh, for the pipeline passes, with the spec it refers to;
/// null after an error on the module that names `pass` and the cluster's
/// problem.
struct PipelineCostModel {
  std::unique_ptr<ClusterSpec> spec;
  std::unique_ptr<CostModel> model;
};
std::optional<PipelineCostModel>
pipelineCostModel(ModuleOp module, StringRef cluster, StringRef pass);

/// Seconds per micro-batch of each chunk's F, B and W functions
/// (tg-pipeline-split's, as the cost model times their ops), of each
/// chunk's reduction over the data axes, and of the largest transfer a
/// boundary makes: what tg-pipeline-schedule places
/// ZB-H1's W passes by and --report=pipeline plays.
pipeline::Costs pipelineFunctionCosts(ModuleOp module,
                                      const pipeline::Shape &shape,
                                      const CostModel &cost);

/// Per chunk of a split module, whether it has a function reducing its
/// gradient sums over the data axes (`kind = "reduce"`): what
/// pipeline::Shape::reduced says.
std::vector<char> reducedChunksOf(ModuleOp module, int64_t chunks);

/// The action lists tg-pipeline-schedule wrote on `module`
/// (tg.pipeline_actions), parsed, with the `shape` they are for (its
/// micro-batches from tg.pipeline); an error names what is missing or
/// malformed. Not played: pipeline::simulate checks the order.
llvm::Expected<pipeline::StageActions>
readPipelineActions(ModuleOp module, pipeline::Shape &shape);

/// The most bytes one boundary of a split module moves in one direction
/// per micro-batch (its slots' tensors).
int64_t largestTransferBytes(ModuleOp module);

/// On a split module: how each stage keeps its slots (tg-pipeline-schedule
/// writes it; the emitter's tables and --report=memory read it): per stage
/// {buffers = [micro-batch x slot: buffer or -1], counts = [per slot],
/// post_after = [per action], wait_sends = [per action, 0 or 1]}.
constexpr llvm::StringLiteral kPipelineBuffersAttr = "tg.pipeline_buffers";

/// The slots each chunk function of a split module reads or writes and
/// each boundary moves (tg.slot, tg.pipeline_transfers).
pipeline::SlotUse slotUseOf(ModuleOp module, const pipeline::Shape &shape);

/// Each slot's type: what one buffer of it holds.
SmallVector<Type> slotTypesOf(ModuleOp module);

/// The plans as tg.pipeline_buffers holds them, and back; reading names
/// what is malformed.
ArrayAttr slotPlansAttr(MLIRContext *context,
                        ArrayRef<pipeline::SlotPlan> plans);
llvm::Expected<std::vector<pipeline::SlotPlan>>
readSlotPlans(ModuleOp module, const pipeline::Shape &shape, int64_t numSlots);

} // namespace mlir::tg

#endif // TGC_PASSES_PIPELINE_CHUNKS_H
