//===- Peak.cpp - tg-remat's choice judged by the step's peak ---*- C++ -*-===//
//
// The peak of a choice: the function cloned, the copies made in the clone,
// fuseKernels and scheduleStep as tg-fuse and tg-schedule run them, then
// StepLiveness and placeBuffers as tg-plan-memory does. The search: a
// scan of the min-cut's choices over the bytes kept, a bisection where the
// peak starts to fit, moves added by peak where none fits, and a repair
// that stops recomputing what does not lower the peak. The exact
// reference plans every choice of moves.
//
//===----------------------------------------------------------------------===//

#include "passes/remat/Peak.h"

#include "passes/memory/Placement.h"
#include "passes/remat/Frontier.h"
#include "passes/remat/MinCut.h"
#include "passes/schedule/Passes.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::tg;

int64_t PeakModel::peakOf(const llvm::BitVector &recompute) {
  RematCost cost = evaluate(graph, recompute);
  std::string key;
  for (int n : cost.recomputed.set_bits())
    key += llvm::utostr(n) + ",";
  if (auto it = cache.find(key); it != cache.end())
    return it->second;

  // The clone's graph lists the same ops in the same order, so the choice's
  // node numbers name the clone's ops.
  auto copy = cast<func::FuncOp>(graph.func->clone());
  std::optional<RematGraph> mirror = RematGraph::build(copy);
  assert(mirror && mirror->nodes.size() == graph.nodes.size() &&
         "a function's clone is the same problem");
  applyRemat(*mirror, cost);
  fuseKernels(copy, rules.fusion, rules.target);
  scheduleStep(copy, rules.bucketBytes);
  StepLiveness live = StepLiveness::analyze(copy, rules.memory);
  int64_t peak = placeBuffers(live.buffers, live.ops.size()).peak;
  copy->erase();
  cache[key] = peak;
  return peak;
}

namespace {

/// The moves: with `acrossLayers`, the same op of every layer that is the
/// same problem taken together (GPT-2's twelve layers' GELUs are one move),
/// the few that exactForPeak plans every choice of; else each op on its
/// own, so that layers may choose differently, as the search does: the
/// backward's peak is where it starts, with the last layers' activations
/// and the first layers' still kept (on GPT-2 124M at a third of the peak,
/// 15.2% added FLOPs against full recomputation's 16.6% with moves taken
/// together). Each op outside layers is a move of its own.
SmallVector<SmallVector<int>> moveGroups(const RematGraph &graph,
                                         bool acrossLayers) {
  SmallVector<SmallVector<int>> moves;
  for (auto [n, node] : llvm::enumerate(graph.nodes))
    if ((node.layer < 0 || !acrossLayers) && node.mayRecompute)
      moves.push_back({(int)n});
  if (!acrossLayers)
    return moves;
  llvm::StringMap<int> firstMove; // signature -> its first move's index
  for (const SmallVector<int> &layer : nodesByLayer(graph)) {
    auto [it, inserted] =
        firstMove.try_emplace(layerSignature(graph, layer), moves.size());
    for (auto [i, n] : llvm::enumerate(layer)) {
      if (inserted)
        moves.push_back({});
      moves[it->second + i].push_back(n);
    }
  }
  llvm::erase_if(moves, [&](const SmallVector<int> &move) {
    return !graph.nodes[move.front()].mayRecompute;
  });
  return moves;
}

/// Stops running again each move's ops, the costliest first, where the
/// peak still fits without them (or, when `choice` does not fit, does not
/// rise), for fewer FLOPs; two rounds at most.
void repair(const RematGraph &graph, SmallVector<SmallVector<int>> moves,
            PeakChoice &choice,
            llvm::function_ref<PeakChoice(const llvm::BitVector &)> judge) {
  for (int round = 0; round < 2; ++round) {
    auto flopsOf = [&](const SmallVector<int> &move) {
      double flops = 0;
      for (int n : move)
        if (choice.recompute.test(n))
          flops += graph.nodes[n].flops;
      return flops;
    };
    llvm::stable_sort(moves, [&](const auto &a, const auto &b) {
      return flopsOf(a) > flopsOf(b);
    });
    bool repaired = false;
    for (const SmallVector<int> &move : moves) {
      if (flopsOf(move) == 0)
        break;
      llvm::BitVector trial = choice.recompute;
      for (int n : move)
        trial.reset(n);
      PeakChoice c = judge(trial);
      bool keep = choice.fits ? c.fits : c.peak <= choice.peak;
      if (keep && c.addedFlops < choice.addedFlops) {
        choice = std::move(c);
        repaired = true;
      }
    }
    if (!repaired)
      return;
  }
}

/// Adds moves while `choice` does not fit, each round the move whose plan
/// fits at the fewest FLOPs or, when none fits yet, lowers the peak most
/// per FLOP added; at most `rounds` rounds. The min-cut's choices only
/// trade bytes kept for FLOPs; a copy that lowers the peak where the bytes
/// kept do not (a convolution's input read again in its layer's backward)
/// is found here.
void grow(const RematGraph &graph, ArrayRef<SmallVector<int>> moves,
          PeakChoice &choice, int rounds,
          llvm::function_ref<PeakChoice(const llvm::BitVector &)> judge) {
  for (int round = 0; round < rounds && !choice.fits; ++round) {
    // The rate: peak bytes saved per FLOP added, or where the peak stays
    // (two values peak together, and one move frees one of them) the bytes
    // kept saved per FLOP, ranked after every move that lowers the peak.
    std::optional<PeakChoice> next;
    std::pair<bool, double> bestRate{false, 0};
    for (const SmallVector<int> &move : moves) {
      llvm::BitVector trial = choice.recompute;
      for (int n : move)
        trial.set(n);
      if (trial == choice.recompute)
        continue;
      PeakChoice c = judge(trial);
      if (c.peak > choice.peak ||
          (c.peak == choice.peak && c.keptBytes >= choice.keptBytes))
        continue;
      double flops = std::max(c.addedFlops - choice.addedFlops, 1.0);
      std::pair<bool, double> rate =
          c.peak < choice.peak
              ? std::pair{true, double(choice.peak - c.peak) / flops}
              : std::pair{false,
                          double(choice.keptBytes - c.keptBytes) / flops};
      bool take = !next || (c.fits && !next->fits) ||
                  (c.fits && next->fits && c.addedFlops < next->addedFlops) ||
                  (!c.fits && !next->fits && rate > bestRate);
      if (take) {
        bestRate = rate;
        next = std::move(c);
      }
    }
    if (!next)
      return;
    choice = std::move(*next);
  }
}

/// A choice's cost and the peak it plans to.
PeakChoice judgeChoice(const RematGraph &graph,
                       const llvm::BitVector &recompute, int64_t budget,
                       PeakModel &model) {
  RematCost cost = evaluate(graph, recompute);
  PeakChoice c;
  c.recompute = cost.recomputed;
  c.addedFlops = cost.addedFlops;
  c.keptBytes = cost.keptBytes;
  c.peak = cost.allowed ? model.peakOf(cost.recomputed)
                        : std::numeric_limits<int64_t>::max();
  c.fits = c.peak <= budget;
  return c;
}

} // namespace

bool mlir::tg::isBetterPeakChoice(const PeakChoice &a, const PeakChoice &b) {
  if (a.fits != b.fits)
    return a.fits;
  if (a.fits)
    return a.addedFlops != b.addedFlops ? a.addedFlops < b.addedFlops
                                        : a.peak < b.peak;
  return a.peak != b.peak ? a.peak < b.peak : a.addedFlops < b.addedFlops;
}

FailureOr<PeakChoice> mlir::tg::exactForPeak(const RematGraph &graph,
                                             int64_t budget, PeakModel &model,
                                             int maxMoves, int &moves) {
  SmallVector<SmallVector<int>> groups =
      moveGroups(graph, /*acrossLayers=*/true);
  moves = groups.size();
  if (moves > maxMoves)
    return failure();
  PeakChoice best =
      judgeChoice(graph, llvm::BitVector(graph.nodes.size()), budget, model);
  for (uint64_t mask = 1; mask < (uint64_t(1) << moves); ++mask) {
    llvm::BitVector recompute(graph.nodes.size());
    for (int g = 0; g < moves; ++g)
      if (mask >> g & 1)
        for (int n : groups[g])
          recompute.set(n);
    PeakChoice c = judgeChoice(graph, recompute, budget, model);
    if (isBetterPeakChoice(c, best))
      best = std::move(c);
  }
  return best;
}

PeakChoice mlir::tg::recomputeForPeak(const RematGraph &graph, int64_t budget,
                                      PeakModel &model) {
  auto judge = [&](const llvm::BitVector &recompute) {
    return judgeChoice(graph, recompute, budget, model);
  };
  PeakChoice best = judge(llvm::BitVector(graph.nodes.size()));
  if (best.fits)
    return best;

  // The min-cut's choices from the least bytes kept to all of them.
  constexpr int kScan = 8;
  int64_t most = graph.neededBytes();
  int64_t least = evaluate(graph, recomputeAtPrice(graph, 1e30)).keptBytes;
  SmallVector<std::pair<int64_t, PeakChoice>> scanned;
  for (int i = 0; i <= kScan; ++i) {
    int64_t kept = least + (most - least) * i / kScan;
    scanned.push_back({kept, judge(recomputeForBudget(graph, kept))});
    if (isBetterPeakChoice(scanned.back().second, best))
      best = scanned.back().second;
  }
  // The peak rises with the bytes kept, not steadily: bisection between
  // the most kept that fits and the next scanned.
  int fit = -1;
  for (auto [i, s] : llvm::enumerate(scanned))
    if (s.second.fits)
      fit = i;
  if (fit >= 0 && fit < kScan) {
    int64_t low = scanned[fit].first, high = scanned[fit + 1].first;
    for (int step = 0; step < 4; ++step) {
      int64_t mid = low + (high - low) / 2;
      PeakChoice c = judge(recomputeForBudget(graph, mid));
      if (isBetterPeakChoice(c, best))
        best = c;
      (c.fits ? low : high) = mid;
    }
  }

  // The repair, from the best, from the one that keeps least and from the
  // least peak scanned: each may stop recomputing what a peak never needed
  // (the logits, recomputed right where the backward starts, are one).
  PeakChoice lowest = scanned.front().second;
  for (const auto &s : scanned)
    if (s.second.peak < lowest.peak)
      lowest = s.second;
  SmallVector<PeakChoice> starts{best, scanned.front().second, lowest};
  SmallVector<SmallVector<int>> moves =
      moveGroups(graph, /*acrossLayers=*/false);
  // Where nothing scanned fits: grown by peak from the lowest and from
  // nothing recomputed.
  constexpr int kGrowRounds = 8;
  if (!best.fits) {
    starts.push_back(judge(llvm::BitVector(graph.nodes.size())));
    for (PeakChoice *start : {&starts[2], &starts.back()})
      grow(graph, moves, *start, kGrowRounds, judge);
  }
  for (PeakChoice &start : starts) {
    repair(graph, moves, start, judge);
    if (isBetterPeakChoice(start, best))
      best = start;
  }
  return best;
}
