//===- Peak.h - tg-remat's choice judged by the step's peak -----*- C++ -*-===//
//
// What a user budgets is the step's peak, not the bytes kept from the
// forward for the backward. The two part where a copy lives beside what
// peaks: a value recomputed where the backward starts (GPT-2's logits,
// read first by the loss's gradient) saves nothing, since the copy is
// made before the gradients that peak there are freed; a value kept
// through a stretch of the backward where little else lives costs
// nothing either. So a choice is judged by the peak it plans to: the
// function is copied, the copies are made in it, and it is planned as tgc
// plans it after tg-remat: tg-fuse, tg-schedule, then tg-plan-memory's
// liveness and placement. (A pipeline's stages are planned after
// tg-pipeline-split, which this does not model: tgc budgets them by the
// bytes kept.)
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_REMAT_PEAK_H
#define TGC_PASSES_REMAT_PEAK_H

#include "passes/fusion/Passes.h"
#include "passes/memory/Liveness.h"
#include "passes/remat/RematGraph.h"

#include "llvm/ADT/StringMap.h"

namespace mlir::tg {

/// What tg-fuse, tg-schedule and tg-plan-memory are told after tg-remat.
struct PlanRules {
  FusionRules fusion = FusionRules::None;
  FusionTarget target = FusionTarget::Cpu;
  int64_t bucketBytes = 25ll << 20;
  MemoryRules memory;
};

/// The planned peak of `graph`'s function under each choice asked for,
/// measured on a copy of the function and remembered by the ops that do run
/// again.
class PeakModel {
public:
  PeakModel(const RematGraph &graph, PlanRules rules)
      : graph(graph), rules(rules) {}

  /// The arena tg-plan-memory plans for the function with the ops
  /// `recompute` (a bit per node of the graph) run again, fused and
  /// scheduled first.
  int64_t peakOf(const llvm::BitVector &recompute);

  /// How many choices were planned (a choice asked twice counts once).
  int plans() const { return cache.size(); }

private:
  const RematGraph &graph;
  PlanRules rules;
  llvm::StringMap<int64_t> cache;
};

/// A choice of ops to run again, with what it costs and the peak it plans
/// to.
struct PeakChoice {
  llvm::BitVector recompute;
  double addedFlops = 0;
  int64_t keptBytes = 0;
  int64_t peak = 0;
  /// Whether the peak fits the budget asked for.
  bool fits = false;
};

/// The fewest added FLOPs this method finds for a planned peak of at most
/// `budget` bytes. Candidates are the least-FLOPs choices for a range of
/// bytes kept (the min-cut's, MinCut.h), the budget of bytes kept then
/// bisected between the largest that fits and the next; where none fits,
/// moves (each op that may run again, each layer's on its own, so that
/// layers may choose differently) are added to the lowest by the peak they
/// save per FLOP; the best is then repaired by peak: each move run again
/// (the costliest first) stops running again where the peak still fits
/// without it. When no candidate
/// fits, the choice with the smallest peak, repaired without raising it.
PeakChoice recomputeForPeak(const RematGraph &graph, int64_t budget,
                            PeakModel &model);

/// Whether `a` beats `b`: fitting beats not fitting; then fewer added FLOPs
/// among those that fit, the lower peak among those that do not.
bool isBetterPeakChoice(const PeakChoice &a, const PeakChoice &b);

/// The exact reference on small graphs: every choice of the ops that may
/// run again, the same op of every layer that is the same problem taken
/// together (recomputeForPeak's moves let layers differ), planned; the fewest
/// added FLOPs whose peak fits `budget` (or, when none does, the smallest
/// peak). Failure when there are more than `maxMoves` moves (2^maxMoves
/// plans), with `moves` set to how many there are.
FailureOr<PeakChoice> exactForPeak(const RematGraph &graph, int64_t budget,
                                   PeakModel &model, int maxMoves, int &moves);

} // namespace mlir::tg

#endif // TGC_PASSES_REMAT_PEAK_H
