//===- CostModel.h - Modelled time of ops and collectives -------*- C++ -*-===//
//
// The one place that says what a step costs on a cluster: an op's time on
// the device's roofline (FLOPs against peak, bytes against memory
// bandwidth, whichever binds), a collective's time from the alpha-beta
// model of the links its mesh axis crosses, and the whole step of a
// partitioned module (what --report=sharding prints and tg-auto-shard
// minimises).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PLANNING_COST_COSTMODEL_H
#define TGC_PLANNING_COST_COSTMODEL_H

#include "dialects/tg/IR/TgSharding.h"
#include "planning/cost/ClusterSpec.h"

#include "mlir/IR/Operation.h"
#include "llvm/Support/Error.h"

namespace mlir::tg {

class CostModel {
public:
  /// Devices are numbered row-major over the mesh's axes (the last axis
  /// varies fastest), as the runtime lays them out, so an axis's
  /// processes sit in one node when its stride times its size fits in a
  /// node.
  CostModel(const ClusterSpec &spec, MeshOp mesh);

  const ClusterSpec &spec() const { return cluster; }

  /// Whether the processes of one group along `axis` span several nodes.
  bool crossesNodes(StringRef axis) const;
  /// The links a collective along `axis` uses.
  const LinkSpec &linkOf(StringRef axis) const;

  /// Seconds for `kind` along `axis` on a tensor of `wholeBytes` (whole
  /// along the axis: all_gather's result, reduce_scatter's and
  /// all_reduce's operand), by the ring algorithms' alpha-beta model:
  /// all_reduce 2(p-1)a + 2(p-1)/p n/B, the others (p-1)a + (p-1)/p n/B.
  double collectiveSeconds(CollectiveKind kind, StringRef axis,
                           double wholeBytes) const;

  /// Seconds `op` takes at the shapes it has, its work divided over
  /// `parts` processes: max(FLOPs / peak, bytes / bandwidth) plus the
  /// spec's kernel overhead.
  double opSeconds(Operation *op, double parts = 1) const;

  /// A collective op of a partitioned module (tg.all_reduce,
  /// tg.all_gather, tg.reduce_scatter): its seconds; tg.all_slice copies
  /// its piece (a local op). std::nullopt for other ops.
  std::optional<double> collectiveOpSeconds(Operation *op) const;

  /// Seconds to send `bytes` from a pipeline stage to the next when the
  /// mesh is one of `stages` stages: stages sit outermost (a stage's
  /// neighbour is the mesh's device count away), so one alpha-beta step
  /// over the links that distance crosses.
  double stageSendSeconds(double bytes, int64_t stages) const;

private:
  const ClusterSpec &cluster;
  /// Per axis: its size and the distance between neighbouring processes.
  llvm::StringMap<std::pair<int64_t, int64_t>> axes;
  int64_t meshDevices = 1;
};

/// A pipelined step as passes/pipeline's player runs `schedule` ("gpipe",
/// "1f1b", "interleaved", "zb-h1", or "auto": the one of those that suit
/// the shape that plays fastest, as tg-pipeline-schedule chooses), every
/// chunk's F, B and W alike and transfers free: the step in micro-batch
/// slots of one stage (K + (P - 1) / V under 1F1B and interleaving,
/// K + (P - 1) / 3 under ZB-H1), and each stage's peak of micro-batches
/// whose activations it holds (deferred W passes counted whole), in units
/// of its whole share of the layers (min(P - s, K) under 1F1B and ZB-H1;
/// under interleaving the warm-up's (P - s - 1) * 2 + (V - 1) * P chunks
/// plus the one in flight, at most K V, over V; K under GPipe). One model
/// of the pipeline for tg-auto-shard and the reports; an error where the
/// schedule does not take the shape (interleaving needs micro-batches a
/// multiple of P).
struct PipelinePlay {
  double slots = 0;
  SmallVector<double> inFlight;
};
llvm::Expected<PipelinePlay> playPipeline(int64_t stages, int64_t virtualStages,
                                          int64_t microBatches,
                                          StringRef schedule = "auto");

/// The element type name an op computes in ("bf16", "f16", "f32").
StringRef computeTypeName(Operation *op);

} // namespace mlir::tg

#endif // TGC_PLANNING_COST_COSTMODEL_H
