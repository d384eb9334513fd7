//===- Remat.cpp - Recompute forward values in the backward -----*- C++ -*-===//
//
// selective: one sweep over the forward's cheap ops in order, with op
// positions for the forward/backward split and for each value's last reader
// (a copy counts where it stands, so later candidates see the lives the
// earlier copies left). full and auto: a choice over RematGraph, by a
// minimum cut (MinCut.h) or CBC (Ilp.h), then its copies.
//
//===----------------------------------------------------------------------===//

#include "passes/remat/Passes.h"

#include "passes/remat/Frontier.h"
#include "passes/remat/Ilp.h"
#include "passes/remat/MinCut.h"
#include "passes/remat/Peak.h"
#include "passes/remat/RematGraph.h"

#include "dialects/tg/IR/TgOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>

namespace mlir::tg {
#define GEN_PASS_DEF_REMATPASS
#include "passes/remat/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// Cheap to compute again, one result: elementwise ops, tg.layer_norm (its
/// statistics are recomputed with it) and tg.dropout (its mask is a pure
/// function of seed, step and element: the copy draws the same).
bool isCheap(Operation *op) {
  return op->getNumResults() == 1 &&
         (isElementwiseOp(op) || isa<LayerNormOp, DropoutOp>(op));
}

/// Graphs without layers of at most this many forward ops are solved
/// exactly under solver auto (when CBC is installed): one CBC run. With
/// layers the min-cut's layer frontiers are as good (within 0.01% of
/// CBC's on GPT-2 124M, bench/results) in a hundredth of the time.
constexpr size_t kExactNodes = 1000;
/// CBC's time limit for one solve under solver auto, and for each of a
/// layer's.
constexpr double kExactSeconds = 20;
/// solver=exact under peak-budget plans 2^moves choices: 4096 at most;
/// solver auto does so up to 1024 (a small model's step plans in
/// milliseconds), the search beyond.
constexpr int kExactPeakMoves = 12;
constexpr int kAutoExactPeakMoves = 10;

/// Megatron-LM's selective recomputation: cheap ops whose results the
/// backward reads, where that keeps nothing else alive longer.
SmallVector<Operation *> selectiveCopies(const RematGraph &graph) {
  func::FuncOp func = graph.func;
  Block &block = func.getBody().front();
  DenseMap<Operation *, int64_t> position;
  for (Operation &op : block)
    position[&op] = position.size();
  int64_t forwardEnd = position.lookup(graph.forwardEnd);

  // The last position at which a value is read, by any op (a copy's
  // reads count where the copy will stand, so they are added as copies
  // are made).
  auto lastRead = [&](Value v) {
    int64_t last = -1;
    for (Operation *user : v.getUsers())
      if (Operation *top = block.findAncestorOpInBlock(*user))
        last = std::max(last, position.lookup(top));
    return last;
  };

  SmallVector<Operation *> copies;
  SmallVector<Operation *> forward;
  for (Operation &op : block)
    if (position.lookup(&op) <= forwardEnd && isCheap(&op))
      forward.push_back(&op);
  for (Operation *op : forward) {
    Value r = op->getResult(0);
    // Its readers in the backward pass, in order.
    SmallVector<OpOperand *> late;
    for (OpOperand &use : r.getUses()) {
      Operation *top = block.findAncestorOpInBlock(*use.getOwner());
      if (top && position.lookup(top) > forwardEnd)
        late.push_back(&use);
    }
    if (late.empty())
      continue;
    Operation *first = nullptr;
    for (OpOperand *use : late) {
      Operation *top = block.findAncestorOpInBlock(*use->getOwner());
      if (!first || position.lookup(top) < position.lookup(first))
        first = top;
    }
    // Recomputing must keep nothing else alive longer.
    int64_t at = position.lookup(first);
    bool free = llvm::all_of(op->getOperands(), [&](Value o) {
      return isa<BlockArgument>(o) || o.getDefiningOp<ConstantOp>() ||
             lastRead(o) >= at;
    });
    if (!free)
      continue;
    OpBuilder builder(first);
    Operation *copy = builder.clone(*op);
    copy->setAttr(TgDialect::kRecomputeAttr, UnitAttr::get(op->getContext()));
    position[copy] = at; // reads where `first` stands
    for (OpOperand *use : late)
      use->set(copy->getResult(0));
    copies.push_back(copy);
  }
  return copies;
}

/// Megatron-LM's full recomputation: only what leaves a layer (its output,
/// the next layer's input) and what is computed outside layers is kept;
/// everything else a layer computes runs again.
void restrictToFull(RematGraph &graph) {
  for (RematGraph::Node &node : graph.nodes) {
    // A layer's collectives (a sharded step's reshardings) run again too,
    // as Megatron-LM's full recomputation runs them: every process makes
    // the same copies in the same order, and nothing they gathered is kept.
    if (isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllSliceOp>(node.op))
      node.mayRecompute = true;
    node.mayRecompute &= node.layer >= 0;
  }
  for (RematGraph::ValueInfo &value : graph.values) {
    const RematGraph::Node &node = graph.nodes[value.node];
    value.mayKeep = !node.mayRecompute || value.leavesLayer;
  }
}

struct RematPass : public tg::impl::RematPassBase<RematPass> {
  using RematPassBase::RematPassBase;

  void runOnOperation() override;

  /// The `auto` choice under the activation budget; failure after a
  /// diagnostic.
  FailureOr<RematCost> chooseUnderBudget(const RematGraph &graph,
                                         std::string &solverUsed);

  /// The `auto` choice under the peak budget, recorded in `info`; failure
  /// after a diagnostic.
  FailureOr<RematCost> chooseUnderPeak(const RematGraph &graph,
                                       double stepFlops, NamedAttrList &info,
                                       std::string &solverUsed);
};

FailureOr<RematCost> RematPass::chooseUnderPeak(const RematGraph &graph,
                                                double stepFlops,
                                                NamedAttrList &info,
                                                std::string &solverUsed) {
  PlanRules rules;
  rules.fusion = fusion;
  rules.target = target;
  rules.bucketBytes = bucketBytes;
  rules.memory.alignment = alignment;
  rules.memory.attentionStatistics = attentionStatistics;
  PeakModel model(graph, rules);
  int64_t before = model.peakOf(llvm::BitVector(graph.nodes.size()));
  PeakChoice choice;
  // Every choice planned: the reference the search is measured against,
  // and under solver auto what a graph of few moves gets.
  int moves = 0;
  int maxMoves = solver == RematSolver::Exact  ? kExactPeakMoves
                 : solver == RematSolver::Auto ? kAutoExactPeakMoves
                                               : -1;
  FailureOr<PeakChoice> exact =
      exactForPeak(graph, peakBudget, model, maxMoves, moves);
  solverUsed = succeeded(exact) ? "every choice by peak" : "min-cut by peak";
  if (solver == RematSolver::Exact) {
    if (failed(exact)) {
      emitError(func::FuncOp(graph.func).getLoc(),
                "tg-remat: solver=exact with peak-budget plans every choice "
                "of the ops that may run again (the same op of every layer "
                "together): at most ")
          << kExactPeakMoves << " of them, this function has " << moves;
      return failure();
    }
    choice = std::move(*exact);
  } else if (succeeded(exact)) {
    choice = std::move(*exact);
    // Every choice planned takes each layer's op with the same op of the
    // other layers; the search lets layers differ, which may do better.
    if (!graph.layers.empty()) {
      PeakChoice searched = recomputeForPeak(graph, peakBudget, model);
      if (isBetterPeakChoice(searched, choice)) {
        choice = std::move(searched);
        solverUsed = "min-cut by peak";
      }
    }
  } else {
    choice = recomputeForPeak(graph, peakBudget, model);
  }
  Builder b(&getContext());
  info.append("objective", b.getStringAttr("peak"));
  info.append("peak_budget", b.getI64IntegerAttr(peakBudget));
  info.append("planned_peak_before", b.getI64IntegerAttr(before));
  info.append("planned_peak", b.getI64IntegerAttr(choice.peak));
  info.append("fits", b.getBoolAttr(choice.fits));
  info.append("plans", b.getI64IntegerAttr(model.plans()));
  if (!choice.fits && !leastPeakOverBudget) {
    // The option's value: the Option itself streams as nothing.
    emitError(func::FuncOp(graph.func).getLoc(), "tg-remat: peak budget ")
        << (int64_t)peakBudget
        << " bytes is below the smallest planned peak found: " << choice.peak
        << " bytes, adding "
        << llvm::formatv("{0:e3} FLOPs ({1:f2}% of the step)",
                         choice.addedFlops,
                         100 * choice.addedFlops / std::max(stepFlops, 1.0))
               .str()
        << " (without recomputation " << before << " bytes)";
    return failure();
  }
  return evaluate(graph, choice.recompute);
}

FailureOr<RematCost> RematPass::chooseUnderBudget(const RematGraph &graph,
                                                  std::string &solverUsed) {
  func::FuncOp func = graph.func;
  RematCost best = evaluate(graph, llvm::BitVector(graph.nodes.size()));
  if (best.keptBytes <= activationBudget) {
    solverUsed = "none needed";
    return best;
  }
  bool haveBest = false;
  bool exact = solver == RematSolver::Exact ||
               (solver == RematSolver::Auto && graph.layers.empty() &&
                graph.nodes.size() <= kExactNodes && haveCbc());
  if (exact) {
    std::string error;
    FailureOr<llvm::BitVector> choice = failure();
    bool optimal = false;
    if (!graph.layers.empty()) {
      // Layer by layer: each distinct layer's exact frontier, combined.
      bool failedSolve = false;
      int distinct = 0;
      llvm::BitVector byLayers = recomputeByLayers(
          graph, activationBudget,
          [&](const RematGraph &layer) {
            FailureOr<Frontier> frontier =
                exactFrontier(layer, kExactSeconds, error);
            if (failed(frontier)) {
              failedSolve = true;
              return Frontier{{layer.neededBytes(), 0.0,
                               llvm::BitVector(layer.nodes.size())}};
            }
            return *frontier;
          },
          distinct);
      if (!failedSolve) {
        choice = byLayers;
        optimal = true;
      }
    } else {
      auto result = solveExactly(
          graph, activationBudget,
          solver == RematSolver::Exact ? 3600 : kExactSeconds, error);
      if (succeeded(result)) {
        choice = result->recompute;
        optimal = result->optimal;
      }
    }
    if (succeeded(choice)) {
      best = evaluate(graph, *choice);
      haveBest = best.keptBytes <= activationBudget;
      solverUsed = optimal ? "cbc (optimal)" : "cbc (time limit)";
      if (haveBest && optimal)
        return best;
    } else if (solver == RematSolver::Exact) {
      emitError(func.getLoc(), "tg-remat: ") << error;
      return failure();
    }
  }
  RematCost heuristic =
      evaluate(graph, recomputeForBudget(graph, activationBudget));
  if (!haveBest || heuristic.addedFlops < best.addedFlops) {
    best = std::move(heuristic);
    solverUsed = "min-cut";
  }
  if (best.keptBytes > activationBudget) {
    // The option's value: the Option itself streams as nothing.
    emitError(func.getLoc(), "tg-remat: activation budget ")
        << (int64_t)activationBudget
        << " bytes is below the least the backward can be given: "
        << best.keptBytes
        << " bytes kept with every forward op that may run again "
           "recomputed";
    return failure();
  }
  return best;
}

void RematPass::runOnOperation() {
  func::FuncOp func = getOperation();
  bool byPeak = peakBudget >= 0;
  if (policy == RematPolicy::Auto && activationBudget < 0 && !byPeak) {
    emitError(func.getLoc(), "tg-remat: remat=auto needs a budget "
                             "(activation-budget=BYTES or peak-budget=BYTES)");
    return signalPassFailure();
  }
  if (byPeak && (policy != RematPolicy::Auto || activationBudget >= 0)) {
    emitError(func.getLoc(),
              "tg-remat: peak-budget is remat=auto's other budget: give it "
              "with remat=auto and without activation-budget");
    return signalPassFailure();
  }
  if (bucketBytes < 0) {
    emitError(func.getLoc(), "tg-remat: bucket-bytes must be 0 or more, got ")
        << (int64_t)bucketBytes;
    return signalPassFailure();
  }
  if (alignment <= 0 || !llvm::isPowerOf2_64(alignment)) {
    emitError(func.getLoc(), "tg-remat: alignment must be a power of two, got ")
        << (int64_t)alignment;
    return signalPassFailure();
  }
  if (policy == RematPolicy::None)
    return;
  std::optional<RematGraph> graph = RematGraph::build(func);
  if (!graph)
    return;
  double stepFlops = 0;
  for (Operation &op : func.getBody().front())
    stepFlops += flopCount(&op);
  int64_t keptBefore = graph->neededBytes();
  int distinctLayers =
      policy == RematPolicy::Auto ? countDistinctLayers(*graph) : 0;

  // The least any choice keeps (everything that may run again does), for
  // tgc's search of the activation budget.
  int64_t minKept =
      policy == RematPolicy::Auto
          ? evaluate(*graph, recomputeAtPrice(*graph, 1e30)).keptBytes
          : 0;
  auto start = std::chrono::steady_clock::now();
  SmallVector<Operation *> copies;
  std::string solverUsed;
  NamedAttrList peakInfo;
  if (policy == RematPolicy::Selective) {
    copies = selectiveCopies(*graph);
  } else {
    FailureOr<RematCost> choice;
    if (policy == RematPolicy::Full) {
      restrictToFull(*graph);
      if (graph->layers.empty())
        emitWarning(func.getLoc(),
                    "tg-remat: remat=full found no layers in the "
                    "model's node names (such as \"h.0.attn\"); "
                    "nothing is recomputed");
      choice = evaluate(*graph, recomputeAtPrice(*graph, 0));
      solverUsed = "layers";
    } else if (byPeak) {
      choice = chooseUnderPeak(*graph, stepFlops, peakInfo, solverUsed);
    } else {
      choice = chooseUnderBudget(*graph, solverUsed);
    }
    if (failed(choice))
      return signalPassFailure();
    copies = applyRemat(*graph, *choice);
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();

  // What was chosen, for the memory report.
  double added = 0;
  SmallVector<Attribute> names;
  llvm::StringSet<> seen;
  for (Operation *copy : copies) {
    added += flopCount(copy);
    std::string name = nodeNameOf(copy);
    std::string label = (name.empty() ? "" : name + " ") + "(" +
                        copy->getName().getStringRef().str() + ")";
    if (seen.insert(label).second)
      names.push_back(StringAttr::get(&getContext(), label));
  }
  numRecomputed += copies.size();
  std::optional<RematGraph> after = RematGraph::build(func);
  int64_t keptAfter = after ? after->neededBytes() : keptBefore;
  bytesFreed += keptBefore - keptAfter;
  Builder b(&getContext());
  NamedAttrList info;
  info.append("policy", b.getStringAttr(rematPolicyName(policy)));
  if (!solverUsed.empty())
    info.append("solver", b.getStringAttr(solverUsed));
  if (policy == RematPolicy::Auto) {
    if (!byPeak)
      info.append("activation_budget", b.getI64IntegerAttr(activationBudget));
    info.append("min_kept_bytes", b.getI64IntegerAttr(minKept));
    // Equal layers are one problem (one frontier, one move per op).
    info.append("layers", b.getI64IntegerAttr(graph->layers.size()));
    info.append("distinct_layers", b.getI64IntegerAttr(distinctLayers));
  }
  info.append(peakInfo.begin(), peakInfo.end());
  info.append("kept_bytes_before", b.getI64IntegerAttr(keptBefore));
  info.append("kept_bytes", b.getI64IntegerAttr(keptAfter));
  info.append("added_flops", b.getF64FloatAttr(added));
  info.append("step_flops", b.getF64FloatAttr(stepFlops));
  info.append("solve_seconds", b.getF64FloatAttr(seconds));
  info.append("recomputed_ops", b.getI64IntegerAttr(copies.size()));
  info.append("recomputed", b.getArrayAttr(names));
  func->setAttr(TgDialect::kRematAttr, info.getDictionary(&getContext()));
}

} // namespace

std::optional<RematPolicy> mlir::tg::parseRematPolicy(StringRef name) {
  return llvm::StringSwitch<std::optional<RematPolicy>>(name)
      .Case("none", RematPolicy::None)
      .Case("selective", RematPolicy::Selective)
      .Case("full", RematPolicy::Full)
      .Case("auto", RematPolicy::Auto)
      .Default(std::nullopt);
}

StringRef mlir::tg::rematPolicyName(RematPolicy policy) {
  switch (policy) {
  case RematPolicy::None:
    return "none";
  case RematPolicy::Selective:
    return "selective";
  case RematPolicy::Full:
    return "full";
  case RematPolicy::Auto:
    return "auto";
  }
  return "";
}

std::optional<RematSolver> mlir::tg::parseRematSolver(StringRef name) {
  return llvm::StringSwitch<std::optional<RematSolver>>(name)
      .Case("auto", RematSolver::Auto)
      .Case("exact", RematSolver::Exact)
      .Case("min-cut", RematSolver::MinCut)
      .Default(std::nullopt);
}
