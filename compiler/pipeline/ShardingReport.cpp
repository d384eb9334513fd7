//===- ShardingReport.cpp - tgc --report=sharding ---------------*- C++ -*-===//
//
// Walks @train_step as it will run (kernels after fusion, collectives after
// scheduling, buffers after memory planning) and prices it with the cost
// model. Time is compute plus communication, less what the gradient buckets
// hide behind compute where the cluster runs them beside it: the step is
// played on two streams, a bucket starting where tg-schedule placed it and
// the op its tg.waits names waiting for it.
//
//===----------------------------------------------------------------------===//

#include "compiler/pipeline/ShardingReport.h"

#include "compiler/pipeline/MemoryReport.h"
#include "dialects/tg/IR/TgOps.h"
#include "dialects/tg/IR/TgSharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

using namespace mlir;
using namespace mlir::tg;

namespace {

/// What the report groups a model-file name under: its layer (`h.3` for
/// `h.3.attn.c_proj`), else its first component (`wte`, `fc1`).
std::string groupOfName(StringRef name) {
  std::string layer = layerOfName(name);
  return layer.empty() ? name.split('.').first.str() : layer;
}

/// The layer an op of the step works for: an optimizer update's (or a
/// collective on its result's) is its parameter's, others' their location.
std::string layerOfOp(Operation *op) {
  Operation *update = op;
  if (op->getNumOperands() == 1 && !isa<OptimizerUpdateOp>(op))
    if (Operation *def = op->getOperand(0).getDefiningOp())
      update = def;
  if (auto u = dyn_cast<OptimizerUpdateOp>(update))
    if (auto arg = dyn_cast<BlockArgument>(u.getParam()))
      if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
        if (auto name = func.getArgAttrOfType<StringAttr>(
                arg.getArgNumber(), TgDialect::kParamAttr))
          return groupOfName(name.getValue());
  return groupOfName(nodeNameOf(op));
}

std::string formatSeconds(double s) {
  if (s >= 1)
    return llvm::formatv("{0:f2} s", s).str();
  if (s >= 1e-3)
    return llvm::formatv("{0:f2} ms", s * 1e3).str();
  return llvm::formatv("{0:f1} us", s * 1e6).str();
}

func::FuncOp stepOf(ModuleOp module) {
  return module.lookupSymbol<func::FuncOp>("train_step");
}

double peakFlops(ModuleOp module, const CostModel &cost) {
  auto precision = module->getAttrOfType<StringAttr>(TgDialect::kPrecisionAttr);
  StringRef type = precision && precision.getValue() == "bf16" ? "bf16" : "f32";
  return cost.spec().flopsFor(type) / cost.spec().flopsEfficiency;
}

/// Why `plan` loses to `chosen`, or "" when it does not.
std::string verdict(const PlanEstimate &plan, const PlanEstimate &chosen,
                    int64_t limit) {
  if (!plan.error.empty())
    return "not applicable: " + plan.error;
  if (plan.memoryBytes() > limit)
    return "does not fit: " + formatBytes(plan.memoryBytes()) + " > " +
           formatBytes(limit);
  if (plan.stepSeconds() > chosen.stepSeconds())
    return llvm::formatv("{0:f2}x slower",
                         plan.stepSeconds() / chosen.stepSeconds())
        .str();
  return "";
}

/// How many micro-batches one step of `module` runs: what tg-optimizer
/// built @train_step for (tg.micro_batches) where the module has
/// @forward_backward (the executable calls it for all but the last, which
/// @train_step computes), else 1.
int64_t microBatchesOf(ModuleOp module) {
  auto step = stepOf(module);
  auto k = step ? step->getAttrOfType<IntegerAttr>(TgDialect::kMicroBatchesAttr)
                : nullptr;
  if (!k || !module.lookupSymbol<func::FuncOp>("forward_backward"))
    return 1;
  return std::max<int64_t>(k.getInt(), 1);
}

/// Adds one call of `func` to `plan`, `weight` times: compute, collectives
/// (listed when `listCollectives`), per-layer times and the communication
/// the schedule hides.
void addFunction(PlanEstimate &plan, func::FuncOp func, const CostModel &cost,
                 double weight, bool listCollectives) {
  // Ops without a name of their own (the optimizer's, a bucket's
  // collective) count toward the layer before them.
  std::string layer = "(step)";
  // The two streams' clocks: compute (and collectives in place), and the
  // buckets' when the cluster overlaps them.
  bool overlap = cost.spec().overlapsCommunication;
  double computeClock = 0, commClock = 0, compute = 0, comm = 0;
  llvm::DenseMap<int64_t, double> bucketDone;
  auto waitFor = [&](Operation *op) {
    if (auto waits =
            op->getAttrOfType<DenseI64ArrayAttr>(TgDialect::kWaitsAttr))
      for (int64_t b : waits.asArrayRef())
        computeClock = std::max(computeClock, bucketDone.lookup(b));
  };
  llvm::StringMap<size_t> layerIndex;
  for (auto [i, entry] : llvm::enumerate(plan.layers))
    layerIndex[std::get<0>(entry)] = i;
  for (Operation &op : func.getBody().front().without_terminator()) {
    std::string named = layerOfOp(&op);
    if (!named.empty())
      layer = named;
    auto [it, inserted] = layerIndex.try_emplace(layer, plan.layers.size());
    if (inserted)
      plan.layers.push_back({layer, 0.0, 0.0});
    auto &[name, layerCompute, layerComm] = plan.layers[it->second];
    if (std::optional<double> seconds = cost.collectiveOpSeconds(&op);
        seconds && !isa<AllSliceOp>(op)) {
      if (listCollectives) {
        CollectiveEstimate c;
        c.kind = op.getName().stripDialect().str();
        if (auto axis = op.getAttrOfType<StringAttr>("mesh_axis"))
          c.axis = axis.getValue().str();
        for (Value v : op.getOperands())
          c.bytes += tensorBytes(v.getType());
        if (auto why = op.getAttrOfType<StringAttr>(kReshardAttr))
          c.cause = why.getValue().str();
        else if (op.hasAttr("bucket"))
          c.cause = "gradient bucket";
        c.layer = layer;
        c.seconds = *seconds;
        plan.collectives.push_back(std::move(c));
      }
      comm += *seconds;
      layerComm += weight * *seconds;
      auto bucket = op.getAttrOfType<IntegerAttr>("bucket");
      waitFor(&op);
      if (overlap && bucket) {
        commClock = std::max(commClock, computeClock) + *seconds;
        bucketDone[bucket.getInt()] = commClock;
      } else {
        computeClock += *seconds;
      }
      continue;
    }
    double seconds = cost.opSeconds(&op);
    compute += seconds;
    plan.flops += weight * flopCount(&op);
    layerCompute += weight * seconds;
    waitFor(&op);
    computeClock += seconds;
  }
  waitFor(func.getBody().front().getTerminator());
  double makespan = std::max(computeClock, commClock);
  plan.computeSeconds += weight * compute;
  plan.commSeconds += weight * comm;
  plan.hiddenSeconds += weight * std::max(0.0, compute + comm - makespan);
}

} // namespace

PlanEstimate mlir::tg::estimatePlan(ModuleOp module, const CostModel &cost,
                                    StringRef label) {
  PlanEstimate plan;
  plan.label = label.str();
  func::FuncOp step = stepOf(module);
  if (!step) {
    plan.error = "no @train_step";
    return plan;
  }
  for (Type t : step.getArgumentTypes())
    if (isa<RankedTensorType>(t))
      plan.argumentBytes += tensorBytes(t);
  if (auto arena = step->getAttrOfType<IntegerAttr>(TgDialect::kArenaBytesAttr))
    plan.arenaBytes = arena.getInt();
  // With gradient accumulation a step is @train_step on the last
  // micro-batch (its gradient sync, clipping and update once per step)
  // and @forward_backward on the others.
  addFunction(plan, step, cost, 1, /*listCollectives=*/true);
  plan.trainStepSeconds = plan.stepSeconds();
  plan.microBatches = microBatchesOf(module);
  if (plan.microBatches > 1) {
    auto fb = module.lookupSymbol<func::FuncOp>("forward_backward");
    addFunction(plan, fb, cost, plan.microBatches - 1,
                /*listCollectives=*/false);
    // The functions share one arena, as large as the larger peak.
    if (auto arena = fb->getAttrOfType<IntegerAttr>(TgDialect::kArenaBytesAttr))
      plan.arenaBytes = std::max(plan.arenaBytes, arena.getInt());
  }
  return plan;
}

static void printPlanRow(const PlanEstimate &plan, StringRef why,
                         llvm::raw_ostream &os) {
  // The chosen plan's row: its kind; the header says why.
  StringRef label = StringRef(plan.label).split(':').first;
  if (!plan.error.empty()) {
    os << llvm::formatv("  {0,-12} {1}\n", label, why);
    return;
  }
  os << llvm::formatv(
      "  {0,-12} {1,10} {2,10} {3,10} {4,11}  {5}\n", label,
      formatSeconds(plan.stepSeconds()), formatSeconds(plan.computeSeconds),
      formatSeconds(plan.commSeconds), formatBytes(plan.memoryBytes()), why);
}

void mlir::tg::printShardingReport(ModuleOp module, const PlanEstimate &chosen,
                                   ArrayRef<PlanEstimate> others,
                                   const CostModel &cost, int64_t limit,
                                   llvm::raw_ostream &os) {
  func::FuncOp step = stepOf(module);
  MeshOp mesh = getModuleMesh(module);
  const ClusterSpec &spec = cost.spec();
  os << "sharding report: @train_step";
  if (mesh) {
    os << " on mesh [";
    llvm::interleaveComma(mesh.getAxisNames(), os, [&](StringRef a) {
      os << a << "=" << mesh.axisSize(a);
    });
    os << "]";
  }
  os << ", cluster " << spec.name << " (" << spec.deviceName << ", "
     << spec.devicesPerNode << " per node)\n";
  os << "plan: " << chosen.label << "\n";
  if (auto auto_ =
          step->getAttrOfType<DictionaryAttr>(TgDialect::kAutoShardAttr)) {
    auto get = [&](StringRef key) { return auto_.get(key); };
    os << "  solver: " << cast<StringAttr>(get("method")).getValue() << ", "
       << cast<IntegerAttr>(get("nodes")).getInt() << " nodes, "
       << cast<IntegerAttr>(get("edges")).getInt() << " edges, its model "
       << formatSeconds(
              cast<FloatAttr>(get("modelled_seconds")).getValueAsDouble())
       << " before fusion\n";
  }

  os << "\nparameters and optimizer state: sharding, origin\n";
  // Each parameter with its state under it ("fc1.weight.exp_avg"), by layer.
  llvm::MapVector<StringRef, SmallVector<BlockArgument>> byParam;
  SmallVector<std::pair<StringRef, BlockArgument>> states;
  for (BlockArgument arg : step.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (auto p = step.getArgAttrOfType<StringAttr>(i, TgDialect::kParamAttr))
      byParam[p.getValue()].push_back(arg);
    else if (auto st =
                 step.getArgAttrOfType<StringAttr>(i, TgDialect::kStateAttr))
      states.push_back({st.getValue(), arg});
  }
  for (auto [name, arg] : states) {
    StringRef param = name.rsplit('.').first;
    byParam[byParam.count(param) ? param : name].push_back(arg);
  }
  std::string lastLayer;
  for (auto &[param, args] : byParam) {
    std::string layer = groupOfName(param);
    if (layer != lastLayer)
      os << "  " << layer << "\n";
    lastLayer = layer;
    for (BlockArgument arg : args) {
      unsigned i = arg.getArgNumber();
      auto name = step.getArgAttrOfType<StringAttr>(i, TgDialect::kParamAttr);
      if (!name)
        name = step.getArgAttrOfType<StringAttr>(i, TgDialect::kStateAttr);
      ShardingAttr s = getSharding(arg);
      std::string sharding = s ? formatSharding(s) : "whole";
      llvm::erase(sharding, '"');
      std::string origin = s ? getShardingOrigin(arg).str() : "";
      // A fused QKV weight is split as the view the step holds it in.
      if (auto file = step.getArgAttrOfType<DenseI64ArrayAttr>(
              i, TgDialect::kFileShapeAttr)) {
        auto dims = [](ArrayRef<int64_t> shape) {
          std::string out;
          llvm::raw_string_ostream os(out);
          llvm::interleave(shape, os, "x");
          return out;
        };
        SmallVector<int64_t> view(
            cast<RankedTensorType>(arg.getType()).getShape());
        if (s && step->hasAttr(kPartitionedAttr))
          for (int64_t d = 0; d < s.getRank(); ++d)
            for (StringRef a : s.axesOf(d))
              view[d] *= mesh ? mesh.axisSize(a) : 1;
        origin += " (held as " + dims(view) + ", " + dims(file.asArrayRef()) +
                  " in files)";
      }
      os << llvm::formatv("    {0,-34} {1,-22} {2}\n", name.getValue(),
                          sharding, origin);
    }
  }

  if (chosen.microBatches > 1)
    os << "\ncollectives of @train_step (the last of " << chosen.microBatches
       << " micro-batches; the others run @forward_backward): kind, axis, "
          "bytes, modelled time, cause\n";
  else
    os << "\ncollectives per step: kind, axis, bytes, modelled time, cause\n";
  SmallVector<const CollectiveEstimate *> sorted;
  for (const CollectiveEstimate &c : chosen.collectives)
    sorted.push_back(&c);
  llvm::stable_sort(sorted,
                    [](auto *a, auto *b) { return a->seconds > b->seconds; });
  constexpr size_t kShown = 30;
  for (const CollectiveEstimate *c : ArrayRef(sorted).take_front(kShown)) {
    // A merged collective lists every cause; the JSON has them all.
    StringRef cause = c->cause;
    std::string shown = cause.size() > 120
                            ? (cause.take_front(117) + "...").str()
                            : cause.str();
    os << llvm::formatv("  {0,-15} {1,-5} {2,10} {3,10}  {4}: {5}\n", c->kind,
                        c->axis, formatBytes(c->bytes),
                        formatSeconds(c->seconds), c->layer, shown);
  }
  if (sorted.size() > kShown) {
    double rest = 0;
    for (const CollectiveEstimate *c : ArrayRef(sorted).drop_front(kShown))
      rest += c->seconds;
    os << "  ... and " << sorted.size() - kShown << " more, "
       << formatSeconds(rest) << "\n";
  }
  if (sorted.empty())
    os << "  none\n";

  os << "\nper layer: compute, communication\n";
  for (auto &[layer, compute, comm] : chosen.layers)
    os << llvm::formatv("  {0,-12} {1,10} {2,10}\n", layer,
                        formatSeconds(compute), formatSeconds(comm));

  double peak = peakFlops(module, cost);
  std::string overlap =
      cost.spec().overlapsCommunication
          ? "- hidden behind compute " + formatSeconds(chosen.hiddenSeconds)
          : "- hidden 0 (the cluster runs no collective beside compute)";
  if (chosen.microBatches > 1)
    os << llvm::formatv("\nstep of {0} micro-batches: @forward_backward {1} "
                        "times and @train_step ({2}) once",
                        chosen.microBatches, chosen.microBatches - 1,
                        formatSeconds(chosen.trainStepSeconds));
  os << llvm::formatv(
      "\nstep: compute {0} + communication {1} {2} = {3}; {4:e2} FLOP per "
      "device, MFU {5:f1}% of {6:e2} FLOP/s\n",
      formatSeconds(chosen.computeSeconds), formatSeconds(chosen.commSeconds),
      overlap, formatSeconds(chosen.stepSeconds()), chosen.flops,
      100.0 * chosen.flops / chosen.stepSeconds() / peak, peak);
  os << "memory per device: arguments " << formatBytes(chosen.argumentBytes)
     << " + arena peak " << formatBytes(chosen.arenaBytes) << " = "
     << formatBytes(chosen.memoryBytes()) << " of " << formatBytes(limit)
     << (chosen.memoryBytes() <= limit ? " (fits)" : " (does not fit)") << "\n";

  os << "\nplans compared (same model, mesh and cluster):\n";
  os << llvm::formatv("  {0,-12} {1,10} {2,10} {3,10} {4,11}\n", "plan", "step",
                      "compute", "comm", "memory");
  printPlanRow(chosen, "chosen", os);
  for (const PlanEstimate &plan : others) {
    std::string why = verdict(plan, chosen, limit);
    printPlanRow(plan, why.empty() ? "as fast or faster: not chosen" : why, os);
  }
}

llvm::json::Value mlir::tg::shardingReportJson(ModuleOp module,
                                               const PlanEstimate &chosen,
                                               ArrayRef<PlanEstimate> others,
                                               const CostModel &cost,
                                               int64_t limit) {
  func::FuncOp step = stepOf(module);
  auto planJson = [&](const PlanEstimate &plan) {
    llvm::json::Object o{{"plan", plan.label}};
    if (!plan.error.empty()) {
      o["error"] = plan.error;
      return o;
    }
    o["step_seconds"] = plan.stepSeconds();
    o["micro_batches"] = plan.microBatches;
    o["train_step_seconds"] = plan.trainStepSeconds;
    o["compute_seconds"] = plan.computeSeconds;
    o["communication_seconds"] = plan.commSeconds;
    o["hidden_seconds"] = plan.hiddenSeconds;
    o["memory_bytes"] = plan.memoryBytes();
    o["argument_bytes"] = plan.argumentBytes;
    o["arena_bytes"] = plan.arenaBytes;
    o["flops_per_device"] = plan.flops;
    o["fits"] = plan.memoryBytes() <= limit;
    return o;
  };
  llvm::json::Array tensors;
  for (BlockArgument arg : step.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto name = step.getArgAttrOfType<StringAttr>(i, TgDialect::kParamAttr);
    if (!name)
      name = step.getArgAttrOfType<StringAttr>(i, TgDialect::kStateAttr);
    ShardingAttr s = getSharding(arg);
    if (!name || !s)
      continue;
    tensors.push_back(
        llvm::json::Object{{"name", name.getValue()},
                           {"layer", groupOfName(name.getValue())},
                           {"sharding", formatSharding(s)},
                           {"origin", getShardingOrigin(arg)}});
  }
  llvm::json::Array collectives;
  for (const CollectiveEstimate &c : chosen.collectives)
    collectives.push_back(llvm::json::Object{{"kind", c.kind},
                                             {"axis", c.axis},
                                             {"bytes", c.bytes},
                                             {"seconds", c.seconds},
                                             {"layer", c.layer},
                                             {"cause", c.cause}});
  llvm::json::Array layers;
  for (auto &[layer, compute, comm] : chosen.layers)
    layers.push_back(llvm::json::Object{{"layer", layer},
                                        {"compute_seconds", compute},
                                        {"communication_seconds", comm}});
  llvm::json::Array compared;
  for (const PlanEstimate &plan : others) {
    llvm::json::Object o = planJson(plan);
    o["verdict"] = verdict(plan, chosen, limit);
    compared.push_back(std::move(o));
  }
  double peak = peakFlops(module, cost);
  llvm::json::Object out{{"cluster", cost.spec().name},
                         {"memory_limit", limit},
                         {"chosen", planJson(chosen)},
                         {"mfu", chosen.flops / chosen.stepSeconds() / peak},
                         {"tensors", std::move(tensors)},
                         {"collectives", std::move(collectives)},
                         {"layers", std::move(layers)},
                         {"compared", std::move(compared)}};
  if (auto solver =
          step->getAttrOfType<DictionaryAttr>(TgDialect::kAutoShardAttr))
    out["solver"] = llvm::json::Object{
        {"method", cast<StringAttr>(solver.get("method")).getValue()},
        {"nodes", cast<IntegerAttr>(solver.get("nodes")).getInt()},
        {"edges", cast<IntegerAttr>(solver.get("edges")).getInt()}};
  return llvm::json::Value(std::move(out));
}

void mlir::tg::printPlanComparison(ModuleOp a, const PlanEstimate &planA,
                                   ModuleOp b, const PlanEstimate &planB,
                                   const CostModel &cost, int64_t limit,
                                   llvm::raw_ostream &os) {
  os << "plans compared on cluster " << cost.spec().name << " (limit "
     << formatBytes(limit) << " per device)\n";
  os << llvm::formatv("  {0,-22} {1,-24} {2,-24}\n", "", "A: " + planA.label,
                      "B: " + planB.label);
  auto row = [&](StringRef what, std::string x, std::string y) {
    os << llvm::formatv("  {0,-22} {1,-24} {2,-24}\n", what, x, y);
  };
  row("step (modelled)", formatSeconds(planA.stepSeconds()),
      formatSeconds(planB.stepSeconds()));
  row("compute", formatSeconds(planA.computeSeconds),
      formatSeconds(planB.computeSeconds));
  row("communication", formatSeconds(planA.commSeconds),
      formatSeconds(planB.commSeconds));
  auto kinds = [](const PlanEstimate &plan) {
    std::map<std::string, int> count;
    for (const CollectiveEstimate &c : plan.collectives)
      ++count[c.kind];
    std::string out = std::to_string(plan.collectives.size());
    if (!count.empty()) {
      out += " (";
      bool first = true;
      for (auto &[kind, n] : count) {
        out += (first ? "" : ", ") + kind + " " + std::to_string(n);
        first = false;
      }
      out += ")";
    }
    return out;
  };
  row("collectives", kinds(planA), kinds(planB));
  row("memory per device", formatBytes(planA.memoryBytes()),
      formatBytes(planB.memoryBytes()));
  row("fits", planA.memoryBytes() <= limit ? "yes" : "no",
      planB.memoryBytes() <= limit ? "yes" : "no");
  if (planA.stepSeconds() > 0 && planB.stepSeconds() > 0)
    os << llvm::formatv("  B/A step time {0:f3}\n",
                        planB.stepSeconds() / planA.stepSeconds());

  // The shardings of each parameter and state, by name.
  auto shardings = [](ModuleOp module) {
    std::map<std::string, std::pair<std::string, std::string>> out;
    func::FuncOp step = stepOf(module);
    if (!step)
      return out;
    for (BlockArgument arg : step.getArguments()) {
      unsigned i = arg.getArgNumber();
      auto name = step.getArgAttrOfType<StringAttr>(i, TgDialect::kParamAttr);
      if (!name)
        name = step.getArgAttrOfType<StringAttr>(i, TgDialect::kStateAttr);
      if (!name)
        continue;
      ShardingAttr s = getSharding(arg);
      std::string text = s ? formatSharding(s) : "whole";
      llvm::erase(text, '"');
      out[name.getValue().str()] = {text,
                                    s ? getShardingOrigin(arg).str() : ""};
    }
    return out;
  };
  auto inA = shardings(a), inB = shardings(b);
  int differ = 0;
  for (auto &[name, x] : inA) {
    auto it = inB.find(name);
    if (it != inB.end() && it->second.first == x.first)
      continue;
    if (differ++ == 0)
      os << "\nshardings that differ: name, A (origin), B (origin)\n";
    std::string y = it == inB.end()
                        ? "(absent)"
                        : it->second.first + " (" + it->second.second + ")";
    os << llvm::formatv("  {0,-34} {1,-30} {2}\n", name,
                        x.first + " (" + x.second + ")", y);
  }
  for (auto &[name, y] : inB)
    if (!inA.count(name)) {
      if (differ++ == 0)
        os << "\nshardings that differ: name, A (origin), B (origin)\n";
      os << llvm::formatv("  {0,-34} {1,-30} {2}\n", name, "(absent)",
                          y.first + " (" + y.second + ")");
    }
  if (differ == 0)
    os << "\nevery parameter and state is sharded alike\n";
}

void mlir::tg::writeShardingPlot(const PlanEstimate &chosen,
                                 ArrayRef<PlanEstimate> others, int64_t limit,
                                 llvm::raw_ostream &os) {
  // Left: per layer, compute and communication bars; right: memory per
  // device of each plan against the limit.
  const double width = 900, height = 420, top = 40, bottom = 360;
  const double leftW = 560, rightX = 620, rightW = 250;
  os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "width=\"{0}\" height=\"{1}\" font-family=\"sans-serif\" "
                      "font-size=\"11\">\n",
                      width, height);
  os << "<text x=\"10\" y=\"20\" font-size=\"14\">" << chosen.label
     << ": modelled time per layer (compute blue, communication orange)"
     << "</text>\n";
  double most = 1e-12;
  for (auto &[layer, compute, comm] : chosen.layers)
    most = std::max(most, compute + comm);
  size_t n = std::max<size_t>(chosen.layers.size(), 1);
  double bar = leftW / n;
  for (auto [i, entry] : llvm::enumerate(chosen.layers)) {
    auto &[layer, compute, comm] = entry;
    double x = 40 + i * bar, hc = (bottom - top) * compute / most,
           hm = (bottom - top) * comm / most;
    os << llvm::formatv("<rect x=\"{0:f1}\" y=\"{1:f1}\" width=\"{2:f1}\" "
                        "height=\"{3:f1}\" fill=\"#4878cf\"/>\n",
                        x, bottom - hc, bar * 0.8, hc);
    os << llvm::formatv("<rect x=\"{0:f1}\" y=\"{1:f1}\" width=\"{2:f1}\" "
                        "height=\"{3:f1}\" fill=\"#ee854a\"/>\n",
                        x, bottom - hc - hm, bar * 0.8, hm);
    os << llvm::formatv("<text x=\"{0:f1}\" y=\"{1}\" transform=\"rotate(45 "
                        "{0:f1} {1})\">{2}</text>\n",
                        x, bottom + 12, layer);
  }
  os << llvm::formatv("<text x=\"40\" y=\"{0}\">0</text><text x=\"40\" "
                      "y=\"{1}\">{2}</text>\n",
                      bottom + 30, top - 4, formatSeconds(most));
  SmallVector<const PlanEstimate *> plans{&chosen};
  for (const PlanEstimate &p : others)
    if (p.error.empty())
      plans.push_back(&p);
  double maxBytes = (double)limit;
  for (const PlanEstimate *p : plans)
    maxBytes = std::max(maxBytes, (double)p->memoryBytes());
  double row = (bottom - top) / std::max<size_t>(plans.size(), 1);
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\">memory per device</text>\n",
                      rightX, top - 4);
  for (auto [i, p] : llvm::enumerate(plans)) {
    double w = rightW * p->memoryBytes() / maxBytes, y = top + i * row;
    os << llvm::formatv("<rect x=\"{0}\" y=\"{1:f1}\" width=\"{2:f1}\" "
                        "height=\"{3:f1}\" fill=\"{4}\"/>\n",
                        rightX, y, w, row * 0.6,
                        p->memoryBytes() <= limit ? "#6acc64" : "#d65f5f");
    os << llvm::formatv("<text x=\"{0}\" y=\"{1:f1}\">{2} {3}</text>\n", rightX,
                        y + row * 0.6 + 11, p->label,
                        formatBytes(p->memoryBytes()));
  }
  double lx = rightX + rightW * limit / maxBytes;
  os << llvm::formatv("<line x1=\"{0:f1}\" y1=\"{1}\" x2=\"{0:f1}\" "
                      "y2=\"{2}\" stroke=\"black\" stroke-dasharray=\"4\"/>\n"
                      "<text x=\"{0:f1}\" y=\"{3}\">limit</text>\n",
                      lx, top, bottom, bottom + 14);
  os << "</svg>\n";
}
