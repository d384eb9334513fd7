//===- PlanSearch.cpp - The searches tgc runs over compiled plans -*- C++
//-*-===//

#include "compiler/pipeline/PlanSearch.h"

#include "compiler/pipeline/MemoryReport.h"
#include "dialects/tg/IR/TgDialect.h"
#include "dialects/tg/IR/TgOps.h"
#include "dialects/tg/IR/TgSharding.h"
#include "passes/pipeline/Chunks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::tg;

int64_t mlir::tg::tableInteger(ModuleOp module, StringRef key) {
  auto table = module->getAttrOfType<DictionaryAttr>(TgDialect::kTrainingAttr);
  auto value = table ? table.getAs<IntegerAttr>(key) : IntegerAttr();
  return value ? value.getInt() : 0;
}

int64_t mlir::tg::argumentBytes(ModuleOp module) {
  int64_t bytes = 0;
  if (auto step = module.lookupSymbol<func::FuncOp>("train_step"))
    for (Type type : step.getArgumentTypes())
      if (isa<RankedTensorType>(type))
        bytes += tensorBytes(type);
  return bytes;
}

int64_t mlir::tg::globalBatchOf(ModuleOp module,
                                const PipelineOptions &options) {
  int64_t accum =
      options.gradAccum > 0
          ? options.gradAccum
          : std::max<int64_t>(1, tableInteger(module, "grad_accum"));
  return tableInteger(module, "batch_size") * accum;
}

FailureOr<int64_t> mlir::tg::chooseMicroBatch(
    MLIRContext &context, StringRef path, ModuleOp first,
    const PipelineOptions &options, int64_t deviceBytes,
    std::function<LogicalResult(PassManager &)> configure, std::string &why,
    int64_t &chosenArgs) {
  int64_t global = globalBatchOf(first, options);
  if (global <= 0) {
    emitError(first.getLoc(), "--batch-size=auto needs the training table's "
                              "batch_size (the global batch is batch_size x "
                              "grad_accum)");
    return failure();
  }
  SmallVector<int64_t> divisors;
  for (int64_t d = 1; d <= global; ++d)
    if (global % d == 0)
      divisors.push_back(d);
  // What the step needs at micro-batch `micro` (none: it failed to compile,
  // a remat budget below its smallest peak included).
  DenseMap<int64_t, std::optional<int64_t>> needs;
  DenseMap<int64_t, int64_t> argsAt;
  auto need = [&](int64_t micro) -> std::optional<int64_t> {
    if (auto it = needs.find(micro); it != needs.end())
      return it->second;
    ScopedDiagnosticHandler quiet(&context,
                                  [](Diagnostic &) { return success(); });
    std::optional<int64_t> result;
    ImportOptions at;
    at.batchSize = micro;
    OwningOpRef<ModuleOp> m = importModelFile(path, &context, at);
    PipelineOptions o = options;
    o.gradAccum = global / micro;
    if (m && succeeded(runTrainingPipeline(*m, o, Phase::Import,
                                           Phase::Partition, configure))) {
      int64_t args = argumentBytes(*m);
      argsAt[micro] = args;
      if (o.remat == RematPolicy::Auto && o.memoryBudget <= 0)
        o.memoryBudget = std::max<int64_t>(1, deviceBytes - args);
      if (succeeded(runTrainingPipeline(*m, o, Phase::Partition, Phase::Memory,
                                        configure))) {
        if (m->getOperation()->hasAttr(kPipelineBuffersAttr)) {
          // A pipeline: each stage's device holds its own (--report=memory's
          // plan); the fullest sets the need.
          if (auto stages = stageMemoryOf(*m)) {
            int64_t fullest = 0;
            for (const StageMemory &stage : *stages) {
              fullest = std::max(fullest, stage.peak());
              argsAt[micro] = std::max(argsAt[micro], stage.arguments());
            }
            result = fullest;
          } else {
            llvm::consumeError(stages.takeError());
          }
        } else {
          // The executable's one arena serves every step function.
          for (auto fn : m->getOps<func::FuncOp>())
            if (auto arena =
                    fn->getAttrOfType<ArenaAttr>(TgDialect::kArenaAttr))
              result = std::max(result.value_or(0), arena.getBytes() + args);
        }
      }
    }
    needs[micro] = result;
    return result;
  };
  auto fits = [&](int64_t micro) {
    std::optional<int64_t> n = need(micro);
    return n && *n <= deviceBytes;
  };
  if (!fits(divisors.front())) {
    std::optional<int64_t> n = need(divisors.front());
    InFlightDiagnostic diag = emitError(first.getLoc());
    diag << "--batch-size=auto: not even micro-batch 1 fits the device "
            "memory of "
         << formatBytes(deviceBytes);
    if (n)
      diag << ": its step needs " << formatBytes(*n)
           << " (parameters, optimizer state and inputs "
           << formatBytes(argsAt.lookup(divisors.front())) << " of it)";
    else
      diag << " (with --remat=" << rematPolicyName(options.remat) << ")";
    return failure();
  }
  // The largest divisor that fits: bisection (the need grows with the
  // micro-batch).
  size_t lo = 0, hi = divisors.size();
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    (fits(divisors[mid]) ? lo : hi) = mid;
  }
  int64_t micro = divisors[lo];
  chosenArgs = argsAt.lookup(micro);
  bool pipelined = getPipelineStages(first).pipelined();
  why = llvm::formatv("micro-batch {0} with gradient accumulation {1} "
                      "(global batch {2}): {3} needs {4} of {5} ({6})",
                      micro, global / micro, global,
                      pipelined ? "the fullest pipeline stage" : "the step",
                      formatBytes(*need(micro)), formatBytes(deviceBytes),
                      pipelined ? "its parameters, state, gradient sums, "
                                  "slot buffers and largest arena"
                                : "planned arena, parameters, optimizer "
                                  "state, inputs")
            .str();
  if (hi < divisors.size()) {
    std::optional<int64_t> next = need(divisors[hi]);
    why += llvm::formatv("; micro-batch {0} would need {1}", divisors[hi],
                         next ? formatBytes(*next)
                              : std::string("more than --remat reaches"))
               .str();
  }
  return micro;
}

void mlir::tg::setTableGradAccum(ModuleOp module, int64_t microBatches) {
  MLIRContext *context = module.getContext();
  NamedAttrList entries(
      module->getAttrOfType<DictionaryAttr>(TgDialect::kTrainingAttr));
  entries.set("grad_accum",
              IntegerAttr::get(IntegerType::get(context, 64), microBatches));
  module->setAttr(TgDialect::kTrainingAttr, entries.getDictionary(context));
}

std::vector<CompiledPlan> mlir::tg::compilePlans(
    ModuleOp pristine, const PipelineOptions &options, Phase from,
    const CostModel &cost, bool solver, bool keepSharded, StringRef skip,
    llvm::function_ref<LogicalResult(PassManager &)> configure) {
  std::vector<CompiledPlan> plans;
  MeshOp mesh = getModuleMesh(pristine);
  bool hasTp = mesh && mesh.axisSize("tp") > 1;
  SmallVector<std::pair<StringRef, StringRef>> kinds;
  if (solver)
    kinds.push_back({"", options.autoPartitioner == "tgc"
                             ? "solver"
                             : StringRef(options.autoPartitioner)});
  kinds.append({{"dp", "dp"},
                {"zero3", "zero3"},
                {"tp", "tp x dp"},
                {"sp", "tp+sp x dp"},
                {"megatron", "megatron"}});
  // The solver's rival plans use only what --allow-strategies allows.
  auto allowed = [&](StringRef kind) {
    return !solver ||
           llvm::any_of(llvm::split(options.partitioning.allowStrategies, ','),
                        [&](StringRef k) { return k.trim() == kind; });
  };
  for (auto [preset, name] : kinds) {
    if (!preset.empty() && preset == skip)
      continue;
    bool tensorParallel = isTensorParallelPreset(preset);
    if (((preset == "zero3" || preset == "megatron") && !allowed("zero")) ||
        (tensorParallel && !allowed("tp")))
      continue;
    CompiledPlan plan;
    plan.preset = preset.str();
    plan.estimate.label = name.str();
    if (tensorParallel && !hasTp) {
      plan.estimate.error = "the mesh has no tp axis";
      plans.push_back(std::move(plan));
      continue;
    }
    PipelineOptions o = options;
    o.autoShard = preset.empty();
    if (!preset.empty())
      o.shardPreset = preset.str();
    int64_t limit = options.partitioning.memoryLimit > 0
                        ? options.partitioning.memoryLimit
                        : cost.spec().memoryBytes;
    // The solver counts memory before fusion and memory planning: where the
    // planned step comes out over the limit, it tries again with its limit
    // scaled by how far its count was off (at most three times).
    for (int attempt = 0; attempt < 3; ++attempt) {
      CompiledPlan previous;
      if (attempt > 0)
        previous = std::move(plan);
      plan.preset = preset.str();
      plan.module = pristine.clone();
      std::string why;
      LogicalResult compiled = success();
      {
        ScopedDiagnosticHandler capture(pristine.getContext(),
                                        [&](Diagnostic &d) {
                                          if (why.empty())
                                            why = d.str();
                                          return success();
                                        });
        Phase mid = std::max(from, Phase::Sharding);
        compiled = runTrainingPipeline(*plan.module, o, from, mid, configure);
        if (succeeded(compiled) && preset.empty() && keepSharded)
          plan.sharded = plan.module->clone();
        if (succeeded(compiled))
          compiled = runTrainingPipeline(*plan.module, o, mid, kPlannedPhase,
                                         configure);
      }
      if (failed(compiled)) {
        // A retry that finds nothing leaves the plan before it.
        if (attempt > 0) {
          plan = std::move(previous);
          break;
        }
        plan.estimate.label = name.str();
        plan.estimate.error = "does not compile: " + why;
        plan.module = nullptr;
        break;
      }
      plan.estimate =
          estimatePlan(*plan.module, cost, name, options.pipelineSchedule);
      auto step = plan.module->lookupSymbol<func::FuncOp>("train_step");
      auto found =
          step ? step->getAttrOfType<DictionaryAttr>(TgDialect::kAutoShardAttr)
               : DictionaryAttr();
      auto counted =
          found ? found.getAs<IntegerAttr>("peak_bytes") : IntegerAttr();
      int64_t planned = plan.estimate.memoryBytes();
      if (!counted || planned <= limit || counted.getInt() <= 0)
        break;
      o.partitioning.memoryLimit =
          (int64_t)((double)limit * counted.getInt() / (double)planned * 0.99);
    }
    plans.push_back(std::move(plan));
  }
  return plans;
}

CompiledPlan *mlir::tg::fastestFitting(std::vector<CompiledPlan> &plans,
                                       int64_t limit, bool solverOnly) {
  CompiledPlan *best = nullptr;
  for (CompiledPlan &plan : plans) {
    const PlanEstimate &e = plan.estimate;
    if (!e.error.empty() || e.memoryBytes() > limit ||
        (solverOnly && !plan.preset.empty()))
      continue;
    if (!best || e.stepSeconds() < best->estimate.stepSeconds())
      best = &plan;
  }
  return best;
}

FailureOr<StageCandidate> mlir::tg::choosePipelineStages(
    MLIRContext &context, StringRef path, const ImportOptions &importOptions,
    ModuleOp imported, const PipelineOptions &options, const CostModel &cost,
    int64_t limit, Phase to, std::optional<int64_t> virtualStages,
    std::function<LogicalResult(PassManager &)> configure,
    llvm::raw_ostream &log) {
  MeshOp mesh = getModuleMesh(imported);
  StringRef dataAxis;
  for (StringRef name : {"data", "dp"})
    if (mesh && mesh.axisSize(name) > 1)
      dataAxis = name;
  if (dataAxis.empty() || getPipelineStages(imported).pipelined()) {
    emitError(imported.getLoc(),
              "--pipeline-stages=auto takes the stages from the mesh's data "
              "axis: the mesh needs data (or dp) of size 2 or more and no "
              "axis pp");
    return failure();
  }
  if (!importOptions.elasticAxis.empty()) {
    emitError(imported.getLoc(), "--pipeline-stages=auto needs a data axis "
                                 "of fixed size, not --mesh=data=auto");
    return failure();
  }
  int64_t data = mesh.axisSize(dataAxis);
  int64_t accum =
      options.gradAccum > 0
          ? options.gradAccum
          : std::max<int64_t>(1, tableInteger(imported, "grad_accum"));
  SmallVector<int64_t> chunkCounts = virtualStages
                                         ? SmallVector<int64_t>{*virtualStages}
                                         : SmallVector<int64_t>{1, 2, 4};
  // The repeated layers (h.0.*, h.1.*, ...): P x V chunks need as many,
  // so shapes with more are not compiled.
  llvm::StringSet<> layers;
  if (auto forward = imported.lookupSymbol<func::FuncOp>("forward"))
    for (Operation &op : forward.getBody().front())
      if (std::string group = layerOfOp(&op); !layerOfName(group).empty())
        layers.insert(group);
  std::vector<StageCandidate> candidates;
  for (int64_t p = 1; p <= data; ++p) {
    if (data % p)
      continue;
    for (int64_t v : chunkCounts) {
      if (p == 1 && v > 1)
        continue;
      if (p > 1 && !layers.empty() && p * v > (int64_t)layers.size()) {
        log << "tgc: --pipeline-stages=auto: pp=" << p << ", " << v << " chunk"
            << (v == 1 ? "" : "s") << " a stage: skipped (" << p * v
            << " chunks, the model has " << layers.size()
            << " repeated layers)\n";
        continue;
      }
      StageCandidate c;
      c.stages = p;
      c.virtualStages = v;
      ImportOptions at = importOptions;
      SmallVector<std::pair<std::string, int64_t>> axes;
      for (StringRef name : mesh.getAxisNames())
        axes.emplace_back(name.str(), name == dataAxis ? mesh.axisSize(name) / p
                                                       : mesh.axisSize(name));
      at.mesh = axes;
      c.module = importModelFile(path, &context, at);
      if (!c.module)
        return failure();
      c.options = options;
      c.options.gradAccum = accum * p;
      setTableGradAccum(*c.module, c.options.gradAccum);
      if (p > 1)
        setPipelineStages(*c.module, {p, v});
      llvm::raw_string_ostream name(c.mesh);
      if (p > 1)
        name << "pp=" << p << ",";
      llvm::interleave(
          axes, name,
          [&](auto &axis) { name << axis.first << "=" << axis.second; }, ",");
      c.plans = compilePlans(*c.module, c.options, Phase::Import, cost,
                             /*solver=*/true,
                             /*keepSharded=*/to < kPlannedPhase, "", configure);
      c.best = fastestFitting(c.plans, limit, /*solverOnly=*/false);
      log << "tgc: --pipeline-stages=auto: " << c.mesh;
      if (p > 1)
        log << ", " << v << " chunk" << (v == 1 ? "" : "s") << " a stage";
      log << ", " << c.options.gradAccum << " micro-batches: ";
      if (c.best)
        // The partitioner's plan is labelled with its name ("solver" for
        // tgc's own).
        log << (c.best->preset.empty() ? "the " + c.best->estimate.label + "'s"
                                       : c.best->preset)
            << " plan"
            << (c.best->estimate.built
                    ? ", schedule " + c.best->estimate.schedule
                    : std::string())
            << ", step "
            << llvm::formatv("{0:f3} ms", c.best->estimate.stepSeconds() * 1e3)
            << ", " << formatBytes(c.best->estimate.memoryBytes())
            << " per device\n";
      else if (llvm::all_of(c.plans, [](const CompiledPlan &plan) {
                 return !plan.estimate.error.empty();
               }))
        log << "not built: "
            << (c.plans.empty() ? std::string("no plan")
                                : c.plans.front().estimate.error)
            << "\n";
      else
        log << "no plan fits " << formatBytes(limit) << " per device\n";
      candidates.push_back(std::move(c));
    }
  }
  StageCandidate *chosen = nullptr;
  for (StageCandidate &c : candidates)
    if (c.best && (!chosen || c.best->estimate.stepSeconds() <
                                  chosen->best->estimate.stepSeconds()))
      chosen = &c;
  if (!chosen) {
    emitError(imported.getLoc(), "--pipeline-stages=auto: no stage count has "
                                 "a plan that fits ")
        << formatBytes(limit) << " per device";
    return failure();
  }
  log << "tgc: --pipeline-stages=auto: chose " << chosen->mesh;
  if (chosen->stages > 1)
    log << " with " << chosen->virtualStages << " chunk"
        << (chosen->virtualStages == 1 ? "" : "s") << " a stage";
  log << "\n";
  return std::move(*chosen);
}
