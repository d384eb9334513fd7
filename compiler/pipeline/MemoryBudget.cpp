//===- MemoryBudget.cpp - The activation budget that fits a peak *- C++ -*-===//
//
// tg-remat's `auto` policy keeps at most a given number of bytes for the
// backward; a user states the memory the step may take. What lies between
// (gradients, optimizer state, workspace, the recomputed copies and how the
// planner packs them) is what tg-plan-memory computes, so the activation
// budget is searched: each try compiles a copy of the module to the memory
// phase and reads the planned peak.
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

/// What one try compiled: @train_step's planned peak and tg-remat's record.
struct Try {
  int64_t peak;
  DictionaryAttr remat;
};

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
  auto measure = [&](int64_t activationBudget,
                     RematPolicy policy = RematPolicy::Auto) -> FailureOr<Try> {
    ++tries;
    OwningOpRef<ModuleOp> copy = module.clone();
    PipelineOptions o = options;
    o.remat = policy;
    o.activationBudget = activationBudget;
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
      return Try{fullest, remat};
    }
    return Try{peak.getBytes(), remat};
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
  bool useFull = false;
  if (none->peak > budget) {
    // The peak does not fall steadily with the bytes kept (the copies live
    // in the backward too): a scan from the least kept up, then bisection
    // between the largest budget that fits and the next one scanned.
    constexpr int kScan = 5;
    int64_t lowest = none->peak, lowestKept = keptAll;
    int64_t over = keptAll;
    bool found = false;
    Try atFit{0, DictionaryAttr()}; // what the budget `fit` compiled to
    for (int i = kScan - 1; i >= 0; --i) {
      int64_t kept = keptLeast + (keptAll - keptLeast) * i / kScan;
      FailureOr<Try> t = measure(kept);
      if (failed(t))
        return failure();
      if (t->peak < lowest) {
        lowest = t->peak;
        lowestKept = kept;
      }
      if (t->peak <= budget) {
        fit = kept;
        atFit = *t;
        found = true;
        break;
      }
      over = kept;
    }
    // Full recomputation bounds what auto may add: its copies live only
    // through each layer's backward, which the activation budget does not
    // see, so its peak can fit where auto's do not, or at fewer FLOPs.
    FailureOr<Try> full = measure(0, RematPolicy::Full);
    if (failed(full))
      return failure();
    if (full->peak < lowest) {
      lowest = full->peak;
      lowestKept = intOf(full->remat, "kept_bytes");
    }
    if (!found && full->peak > budget)
      return emitError(module.getLoc())
             << "memory budget " << sized(budget)
             << " is below the smallest peak tg-remat reaches: "
             << sized(lowest) << ", keeping " << sized(lowestKept)
             << " for the backward (without recomputation the peak is "
             << sized(none->peak) << ")";
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
    auto added = [](const Try &t) {
      auto v = t.remat ? t.remat.getAs<FloatAttr>("added_flops") : FloatAttr();
      return v ? v.getValueAsDouble() : 0.0;
    };
    if (full->peak <= budget &&
        (!found || added(*full) < added(atFit)))
      useFull = true;
  }

  PipelineOptions chosen = options;
  chosen.activationBudget = fit;
  if (useFull)
    chosen.remat = RematPolicy::Full;
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
