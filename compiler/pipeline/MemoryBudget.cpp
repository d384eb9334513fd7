//===- MemoryBudget.cpp - The remat choice that fits a peak -----*- C++ -*-===//
//
// A user states the memory the step may take: the arena the executable
// allocates, the largest of its step functions' planned peaks. tg-remat
// judges its choices by the peak it plans for each function, but before
// tg-fuse and tg-schedule run for real and for one function at a time, so
// each try compiles a copy of the module to the memory phase and reads the
// planned peaks; the target is lowered by what was left over it. With
// solver=exact and for a pipelined step, tg-remat keeps at most a given
// number of bytes for the backward, and that activation budget is
// searched instead.
//
//===----------------------------------------------------------------------===//

#include "compiler/pipeline/Pipeline.h"

#include "compiler/pipeline/MemoryReport.h"
#include "passes/pipeline/Chunks.h"

#include "dialects/tg/IR/TgDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::tg;

namespace {

/// What one try compiled: the planned peak and @train_step's tg-remat record.
struct Try {
  int64_t peak;
  DictionaryAttr remat;
  /// Whether the module was split into pipeline stages.
  bool pipelined;
  /// Whether tg-remat found a choice within its peak budget for every step
  /// function it judged by peak.
  bool fits = true;
};

bool everyFits(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>())
    if (auto remat = func->getAttrOfType<DictionaryAttr>(TgDialect::kRematAttr))
      if (auto fits = remat.getAs<BoolAttr>("fits"); fits && !fits.getValue())
        return false;
  return true;
}

int64_t intOf(DictionaryAttr dict, StringRef key) {
  auto value = dict ? dict.getAs<IntegerAttr>(key) : IntegerAttr();
  return value ? value.getInt() : 0;
}

std::string sized(int64_t bytes) {
  return llvm::formatv("{0} ({1} bytes)", formatBytes(bytes), bytes).str();
}

} // namespace

LogicalResult mlir::tg::runTrainingPipeline(
    ModuleOp module, const PipelineOptions &options, Phase from, Phase to,
    llvm::function_ref<LogicalResult(PassManager &)> configure) {
  auto run = [&](ModuleOp m, const PipelineOptions &o, Phase a,
                 Phase b) -> LogicalResult {
    if (b <= a)
      return success();
    PassManager pm(m.getContext());
    if (failed(configure(pm)))
      return failure();
    if (llvm::Error error = buildTrainingPipeline(pm, o, a, b))
      return m.emitError("tgc: ") << llvm::toString(std::move(error));
    return pm.run(m);
  };
  if (!(options.remat == RematPolicy::Auto && options.memoryBudget > 0 &&
        from < Phase::Pipeline && to >= Phase::Pipeline))
    return run(module, options, from, to);

  // The budget is for one process's pieces: partitioned first.
  if (failed(run(module, options, from, Phase::Partition)))
    return failure();
  Phase start = std::max(from, Phase::Partition);
  int tries = 0;
  auto measureWith = [&](const PipelineOptions &o) -> FailureOr<Try> {
    ++tries;
    OwningOpRef<ModuleOp> copy = module.clone();
    if (failed(run(*copy, o, start, Phase::Memory)))
      return failure();
    auto step = copy->lookupSymbol<func::FuncOp>("train_step");
    auto peak = step ? step->getAttrOfType<ArenaAttr>(TgDialect::kArenaAttr)
                     : ArenaAttr();
    if (!peak)
      return emitError(module.getLoc(),
                       "--memory-budget needs @train_step and its plan");
    auto remat = step->getAttrOfType<DictionaryAttr>(TgDialect::kRematAttr);
    // A pipeline: the budget is each stage's, its slots and arenas as
    // built (the fullest stage's peak, less what its arguments hold, as
    // @train_step's arena leaves its arguments out).
    if (copy->getOperation()->hasAttr(kPipelineBuffersAttr)) {
      llvm::Expected<std::vector<StageMemory>> stages = stageMemoryOf(*copy);
      if (!stages)
        return emitError(module.getLoc(), "--memory-budget: ")
               << llvm::toString(stages.takeError());
      int64_t fullest = 0;
      for (const StageMemory &m : *stages)
        fullest = std::max(fullest, m.slots + m.arena);
      return Try{fullest, remat, true};
    }
    // The executable's arena holds the largest of its step functions
    // (@forward_backward keeps its gradients to the end, @forward for
    // evaluation), so that is the peak the budget is for.
    int64_t largest = 0;
    for (auto func : copy->getOps<func::FuncOp>())
      if (auto arena = func->getAttrOfType<ArenaAttr>(TgDialect::kArenaAttr))
        largest = std::max(largest, arena.getBytes());
    return Try{largest, remat, false, everyFits(*copy)};
  };
  auto measure = [&](int64_t activationBudget,
                     RematPolicy policy = RematPolicy::Auto) {
    PipelineOptions o = options;
    o.remat = policy;
    o.activationBudget = activationBudget;
    return measureWith(o);
  };
  // tg-remat judging its choices by the peak: the smallest it finds where
  // nothing fits, so that the error can say so.
  auto measurePeak = [&](int64_t peakBudget) {
    PipelineOptions o = options;
    o.activationBudget = -1;
    o.peakBudget = peakBudget;
    o.leastPeakOverBudget = true;
    return measureWith(o);
  };

  // Nothing recomputed: the activation budget of everything the backward
  // reads.
  FailureOr<Try> none = measure(std::numeric_limits<int64_t>::max());
  if (failed(none))
    return failure();
  int64_t keptAll = intOf(none->remat, "kept_bytes_before");
  int64_t keptLeast = intOf(none->remat, "min_kept_bytes");
  int64_t budget = options.memoryBudget;
  int64_t fit = keptAll;
  int64_t peakTarget = -1; // tg-remat's peak budget, when it chose by peak
  bool useFull = false;
  if (none->peak > budget) {
    bool found = false;
    Try atFit{0, DictionaryAttr(), false}; // what the chosen budget compiled to
    std::optional<Try> lowest;
    auto consider = [&](const Try &t) {
      if (!lowest || t.peak < lowest->peak)
        lowest = t;
    };
    if (!none->pipelined && options.rematSolver != RematSolver::Exact) {
      // By the peak: tg-remat plans before tg-fuse and tg-schedule, so its
      // budget is lowered by what they leave above its plan.
      int64_t target = budget;
      for (int attempt = 0; attempt < 3 && target > 0; ++attempt) {
        FailureOr<Try> t = measurePeak(target);
        if (failed(t))
          return failure();
        consider(*t);
        if (t->peak <= budget) {
          found = true;
          atFit = *t;
          peakTarget = target;
          break;
        }
        if (!t->fits)
          break; // tg-remat found nothing lower: a lower target will not
        target -= t->peak - budget;
      }
    } else {
      // By the bytes kept: the peak does not fall steadily with them (the
      // copies live in the backward too): a scan from the least kept up,
      // then bisection between the largest budget that fits and the next
      // one scanned.
      constexpr int kScan = 5;
      int64_t over = keptAll;
      for (int i = kScan - 1; i >= 0; --i) {
        int64_t kept = keptLeast + (keptAll - keptLeast) * i / kScan;
        FailureOr<Try> t = measure(kept);
        if (failed(t))
          return failure();
        consider(*t);
        if (t->peak <= budget) {
          fit = kept;
          atFit = *t;
          found = true;
          break;
        }
        over = kept;
      }
      while (found && over - fit > std::max<int64_t>(keptAll / 200, 1 << 16) &&
             tries < 16) {
        int64_t next = fit + (over - fit) / 2;
        FailureOr<Try> t = measure(next);
        if (failed(t))
          return failure();
        if (t->peak <= budget) {
          fit = next;
          atFit = *t;
        } else {
          over = next;
        }
      }
    }
    // Full recomputation bounds what auto may add: its copies live only
    // through each layer's backward, so its peak can fit where auto's do
    // not, or at fewer FLOPs.
    FailureOr<Try> full = measure(0, RematPolicy::Full);
    if (failed(full))
      return failure();
    consider(*full);
    auto added = [](const Try &t) {
      auto v = t.remat ? t.remat.getAs<FloatAttr>("added_flops") : FloatAttr();
      return v ? v.getValueAsDouble() : 0.0;
    };
    if (!found && full->peak > budget) {
      auto step = [](const Try &t) {
        auto v = t.remat ? t.remat.getAs<FloatAttr>("step_flops") : FloatAttr();
        return v ? v.getValueAsDouble() : 0.0;
      };
      return emitError(module.getLoc())
             << "memory budget " << sized(budget)
             << " is below the smallest peak tg-remat reaches: "
             << sized(lowest->peak) << ", keeping "
             << sized(intOf(lowest->remat, "kept_bytes"))
             << " for the backward and adding "
             << llvm::formatv(
                    "{0:e3} FLOPs ({1:f2}% of the step)", added(*lowest),
                    100 * added(*lowest) / std::max(step(*lowest), 1.0))
                    .str()
             << " (without recomputation the peak is " << sized(none->peak)
             << ")";
    }
    if (full->peak <= budget && (!found || added(*full) < added(atFit)))
      useFull = true;
  }

  PipelineOptions chosen = options;
  chosen.activationBudget = fit;
  if (peakTarget >= 0) {
    chosen.activationBudget = -1;
    chosen.peakBudget = peakTarget;
    // The same compile as the try that fitted (the target may be below
    // the budget, which tg-remat need not reach for it to fit).
    chosen.leastPeakOverBudget = true;
  }
  if (useFull) {
    chosen.remat = RematPolicy::Full;
    chosen.peakBudget = -1;
  }
  if (failed(run(module, chosen, start, to)))
    return failure();
  if (auto step = module.lookupSymbol<func::FuncOp>("train_step"))
    if (auto remat =
            step->getAttrOfType<DictionaryAttr>(TgDialect::kRematAttr)) {
      Builder b(module.getContext());
      NamedAttrList info(remat);
      info.set("memory_budget", b.getI64IntegerAttr(budget));
      if (useFull)
        info.set("chosen_by", b.getStringAttr(
                                  "auto: full fits at fewer FLOPs"));
      info.set("peak_before", b.getI64IntegerAttr(none->peak));
      info.set("tries", b.getI64IntegerAttr(tries));
      step->setAttr(TgDialect::kRematAttr, info.getDictionary(b.getContext()));
    }
  return success();
}
