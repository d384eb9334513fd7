//===- MemoryReport.cpp - tgc --report=memory and --report-plot ----*- C++ -*-===//
//
// Categories: the step's arguments by role (parameters, optimizer state,
// batch inputs, accumulated gradients) and, at the instant the arena is
// fullest, its buffers split into parameter gradients (what reaches an
// optimizer update or a tg.grad result, through views and all-reduces),
// communication buffers (the all-reduce buckets, with the gradients
// reduced in them) and activations and temporaries (everything else). Workspace
// the runtime allocates inside a kernel call is not in the IR and not counted.
//
//===----------------------------------------------------------------------===//

#include "compiler/pipeline/MemoryReport.h"

#include "dialects/tg/IR/TgOps.h"
#include "dialects/tg/IR/TgSharding.h"
#include "passes/memory/Liveness.h"
#include "passes/pipeline/Chunks.h"

#include "llvm/ADT/StringSet.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::tg;

std::string mlir::tg::formatBytes(int64_t bytes) {
  double b = (double)bytes;
  if (b >= 1e9)
    return llvm::formatv("{0:f2} GB", b / 1e9).str();
  if (b >= 1e6)
    return llvm::formatv("{0:f2} MB", b / 1e6).str();
  if (b >= 1e3)
    return llvm::formatv("{0:f1} kB", b / 1e3).str();
  return llvm::formatv("{0} B", bytes).str();
}

namespace {

/// The buffers whose values are parameter gradients: read as an optimizer
/// update's gradient or returned as tg.grad, followed back through views
/// and all-reduces.
DenseSet<Value> gradientRoots(func::FuncOp func, const StepLiveness &live) {
  SmallVector<Value> work;
  for (Operation *op : live.ops) {
    if (auto update = dyn_cast<OptimizerUpdateOp>(op))
      work.push_back(update.getGrad());
    if (auto ret = dyn_cast<func::ReturnOp>(op))
      for (auto [r, v] : llvm::enumerate(ret.getOperands()))
        if (func.getResultAttr(r, TgDialect::kGradAttr))
          work.push_back(v);
  }
  DenseSet<Value> roots, seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    roots.insert(live.root(v));
    if (auto reduce = v.getDefiningOp<AllReduceOp>())
      for (auto [in, out] : llvm::zip(reduce.getInputs(), reduce.getResults()))
        if (out == v)
          work.push_back(in);
    // A gradient's piece (ZeRO) is the gradient's too.
    if (auto scatter = v.getDefiningOp<ReduceScatterOp>())
      work.push_back(scatter.getInput());
    if (auto slice = v.getDefiningOp<AllSliceOp>())
      work.push_back(slice.getInput());
  }
  return roots;
}

/// tg-remat's record: what the backward is given, at what cost.
void printRemat(DictionaryAttr remat, int64_t peak, llvm::raw_ostream &os) {
  auto integer = [&](StringRef key) {
    auto v = remat.getAs<IntegerAttr>(key);
    return v ? v.getInt() : -1;
  };
  auto real = [&](StringRef key) {
    auto v = remat.getAs<FloatAttr>(key);
    return v ? v.getValueAsDouble() : 0.0;
  };
  auto text = [&](StringRef key) {
    auto v = remat.getAs<StringAttr>(key);
    return v ? v.getValue() : StringRef();
  };
  int64_t before = integer("kept_bytes_before"), kept = integer("kept_bytes");
  os << llvm::formatv("  remat: policy {0}", text("policy"));
  if (!text("solver").empty())
    os << ", solver " << text("solver");
  if (!text("chosen_by").empty())
    os << " (" << text("chosen_by") << ")";
  os << "\n";
  if (integer("memory_budget") > 0) {
    os << "    memory budget " << formatBytes(integer("memory_budget"));
    if (integer("activation_budget") >= 0)
      os << ": activation budget "
         << formatBytes(integer("activation_budget"));
    os << llvm::formatv(", chosen in {0} compiles\n", integer("tries"));
  }
  os << llvm::formatv("    activations kept for the backward {0}, {1} "
                      "without recomputation ({2:f2}x less)\n",
                      formatBytes(kept), formatBytes(before),
                      kept > 0 ? (double)before / kept : 0.0);
  if (integer("peak_before") >= 0)
    os << llvm::formatv("    peak {0}, {1} without recomputation\n",
                        formatBytes(peak), formatBytes(integer("peak_before")));
  double added = real("added_flops"), step = real("step_flops");
  os << llvm::formatv("    FLOPs added {0:e3}, {1:f2}% of the step's {2:e3}; "
                      "solved in {3:f3} s\n",
                      added, step > 0 ? 100 * added / step : 0.0, step,
                      real("solve_seconds"));
  auto names = remat.getAs<ArrayAttr>("recomputed");
  os << llvm::formatv("    recomputed: {0} ops", integer("recomputed_ops"));
  if (names && !names.empty()) {
    os << " (";
    constexpr size_t kShown = 12;
    for (size_t i = 0; i < std::min(kShown, names.size()); ++i)
      os << (i ? ", " : "") << cast<StringAttr>(names[i]).getValue();
    if (names.size() > kShown)
      os << ", and " << names.size() - kShown << " more";
    os << ")";
  }
  os << "\n";
}

} // namespace

llvm::Expected<std::vector<StageMemory>>
mlir::tg::stageMemoryOf(ModuleOp module) {
  auto fail = [](const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), why);
  };
  PipelineStages stages = getPipelineStages(module);
  auto dict = module->getAttrOfType<DictionaryAttr>(TgDialect::kPipelineAttr);
  auto micro = dict ? dict.getAs<IntegerAttr>("micro_batches") : nullptr;
  pipeline::Shape shape{stages.stages, stages.virtualStages,
                        micro ? micro.getInt() : 1};
  SmallVector<Type> slotTypes = slotTypesOf(module);
  llvm::Expected<std::vector<pipeline::SlotPlan>> plans =
      readSlotPlans(module, shape, slotTypes.size());
  if (!plans)
    return plans.takeError();
  std::vector<StageMemory> out(shape.stages);
  for (int64_t s = 0; s < shape.stages; ++s) {
    StageMemory &m = out[s];
    SmallVector<func::FuncOp> funcs;
    for (auto func : module.getOps<func::FuncOp>()) {
      auto role =
          func->getAttrOfType<DictionaryAttr>(TgDialect::kPipelineRoleAttr);
      if (!role)
        continue;
      auto stage = role.getAs<IntegerAttr>("stage");
      auto chunk = role.getAs<IntegerAttr>("chunk");
      if ((stage && stage.getInt() == s) ||
          (chunk && shape.stageOf(chunk.getInt()) == s))
        funcs.push_back(func);
    }
    // Arguments by role, each tensor once.
    llvm::StringSet<> seen;
    for (func::FuncOp func : funcs) {
      for (BlockArgument arg : func.getArguments()) {
        unsigned i = arg.getArgNumber();
        int64_t bytes = tensorBytes(arg.getType());
        if (auto name =
                func.getArgAttrOfType<StringAttr>(i, TgDialect::kParamAttr)) {
          if (seen.insert(("p:" + name.getValue()).str()).second)
            m.params += bytes, ++m.numParams;
        } else if (auto name = func.getArgAttrOfType<StringAttr>(
                       i, TgDialect::kStateAttr)) {
          if (seen.insert(("s:" + name.getValue()).str()).second)
            m.state += bytes, ++m.numState;
        } else if (auto name = func.getArgAttrOfType<StringAttr>(
                       i, TgDialect::kAccumAttr)) {
          if (seen.insert(("g:" + name.getValue()).str()).second)
            m.sums += bytes, ++m.numSums;
        }
      }
      auto bytes = func->getAttrOfType<ArenaAttr>(TgDialect::kArenaAttr);
      if (!bytes)
        return fail("@" + func.getSymName() +
                    " has no memory plan (run tg-plan-memory)");
      StepLiveness live = StepLiveness::analyze(func, MemoryRules::of(func));
      if (bytes.getBytes() > m.arena) {
        m.arena = bytes.getBytes();
        m.largest = func.getSymName();
      }
      m.arenaBound = std::max(m.arenaBound, live.liveBound);
    }
    // The slots: a slot's buffers are the most of its micro-batches the
    // list keeps at once, so they are their own lower bound.
    const pipeline::SlotPlan &plan = (*plans)[s];
    for (auto [k, count] : llvm::enumerate(plan.count)) {
      if (!count)
        continue;
      ++m.usedSlots;
      m.buffers += count;
      m.held = std::max(m.held, count);
      m.slots += count * tensorBytes(slotTypes[k]);
    }
  }
  return out;
}

namespace {

/// A pipelined step: each stage's parameters, state and gradient sums, the
/// buffers of its slots under the schedule (tg-pipeline-schedule's plan),
/// and the largest arena among its functions.
LogicalResult printStageMemory(ModuleOp module, llvm::raw_ostream &os) {
  PipelineStages stages = getPipelineStages(module);
  auto dict = module->getAttrOfType<DictionaryAttr>(TgDialect::kPipelineAttr);
  auto micro = dict.getAs<IntegerAttr>("micro_batches");
  auto schedule = dict.getAs<StringAttr>("schedule");
  llvm::Expected<std::vector<StageMemory>> memory = stageMemoryOf(module);
  if (!memory)
    return module.emitError("--report=memory: ")
           << llvm::toString(memory.takeError());
  os << llvm::formatv("pipelined: {0} stages x {1} chunks a stage, schedule "
                      "{2}, {3} micro-batches; each stage's own (on CUDA a "
                      "stage's device holds just these; the CPU executable "
                      "still allocates every stage's parameters, state and "
                      "gradient sums in each process, and either keeps a "
                      "host copy of the whole model for checkpoints)\n",
                      stages.stages, stages.virtualStages,
                      schedule ? schedule.getValue() : "",
                      micro ? micro.getInt() : 1);
  for (auto [s, m] : llvm::enumerate(*memory)) {
    os << llvm::formatv("\nstage {0}: planned peak {1}, lower bound {2}: "
                        "{3:f3}x\n",
                        s, formatBytes(m.peak()), formatBytes(m.lowerBound()),
                        m.lowerBound() ? (double)m.peak() / m.lowerBound()
                                       : 1.0);
    os << llvm::formatv("  {0,-28} {1,12}  ({2} tensors its functions "
                        "read)\n",
                        "parameters", formatBytes(m.params), m.numParams);
    os << llvm::formatv("  {0,-28} {1,12}  ({2} tensors, its update's)\n",
                        "optimizer state", formatBytes(m.state), m.numState);
    os << llvm::formatv("  {0,-28} {1,12}  ({2} tensors, summed over the "
                        "micro-batches)\n",
                        "gradient sums", formatBytes(m.sums), m.numSums);
    os << llvm::formatv("  {0,-28} {1,12}  ({2} buffers of {3} slots: the "
                        "activations and transfers of at most {4} "
                        "micro-batch{5} at once)\n",
                        "slot buffers", formatBytes(m.slots), m.buffers,
                        m.usedSlots, m.held, m.held == 1 ? "" : "es");
    os << llvm::formatv("  {0,-28} {1,12}  (the largest of its functions', "
                        "@{2})\n",
                        "arena", formatBytes(m.arena), m.largest);
  }
  return success();
}

} // namespace

LogicalResult mlir::tg::printMemoryReport(ModuleOp module,
                                          llvm::raw_ostream &os) {
  auto name = module->getAttrOfType<StringAttr>(TgDialect::kModelAttr);
  os << "memory plan of model '" << (name ? name.getValue() : "model")
     << "' (tg-plan-memory: one arena per step function)\n";
  // A partitioned step: every number below is one process's.
  if (MeshOp mesh = getModuleMesh(module)) {
    os << "per process of mesh @" << mesh.getSymName() << " [";
    llvm::interleaveComma(llvm::zip(mesh.getAxisNames(), mesh.getShape()), os,
                          [&](auto axis) {
                            os << std::get<0>(axis) << "=" << std::get<1>(axis);
                          });
    os << "] (" << mesh.getNumProcesses()
       << " processes): local pieces of split tensors\n";
  }
  bool pipelined = module->hasAttr(kPipelineBuffersAttr);
  if (pipelined && failed(printStageMemory(module, os)))
    return failure();
  for (StringRef fn : {"train_step", "forward_backward", "forward"}) {
    // A pipelined step runs its stages' functions, not these two.
    if (pipelined && fn != "forward")
      continue;
    auto func = module.lookupSymbol<func::FuncOp>(fn);
    if (!func)
      continue;
    auto arena = func->getAttrOfType<ArenaAttr>(TgDialect::kArenaAttr);
    if (!arena)
      return func.emitError("--report=memory: @")
             << fn << " has no memory plan (run tg-plan-memory)";
    StepLiveness live = StepLiveness::analyze(func, MemoryRules::of(func));
    int64_t peak = arena.getBytes();
    os << llvm::formatv("\n@{0}: arena {1} at its peak, lower bound {2} "
                        "(the most bytes live at once): {3:f3}x\n",
                        fn, formatBytes(peak), formatBytes(live.liveBound),
                        live.liveBound ? (double)peak / live.liveBound : 1.0);
    // Arguments by role.
    struct Role {
      StringRef attr, label;
    };
    for (Role role : {Role{TgDialect::kParamAttr, "parameters"},
                      Role{TgDialect::kStateAttr, "optimizer state"},
                      Role{TgDialect::kInputAttr, "batch inputs"},
                      Role{TgDialect::kAccumAttr, "accumulated gradients"}}) {
      int64_t bytes = 0, count = 0;
      for (BlockArgument arg : func.getArguments())
        if (func.getArgAttr(arg.getArgNumber(), role.attr)) {
          bytes += tensorBytes(arg.getType());
          ++count;
        }
      if (count)
        os << llvm::formatv("  {0,-28} {1,12}  ({2} tensors, arguments)\n",
                            role.label, formatBytes(bytes), count);
    }
    // The arena at its fullest instant.
    size_t at = 0;
    for (size_t i = 0; i < live.liveBytes.size(); ++i)
      if (live.liveBytes[i] > live.liveBytes[at])
        at = i;
    DenseSet<Value> grads = gradientRoots(func, live);
    int64_t gradBytes = 0, bucketBytes = 0, otherBytes = 0;
    for (const Buffer &b : live.buffers) {
      if (b.def > (int64_t)at || (int64_t)at > b.lastUse)
        continue;
      if (!b.value && live.bucketOf.count(b.owner))
        bucketBytes += b.bytes;
      else
        (grads.contains(b.value) ? gradBytes : otherBytes) += b.bytes;
    }
    std::string where = at < live.ops.size()
                            ? live.ops[at]->getName().getStringRef().str()
                            : "";
    os << llvm::formatv("  {0,-28} {1,12}  (in the arena, at op {2} of {3}, "
                        "{4})\n",
                        "parameter gradients", formatBytes(gradBytes), at,
                        live.ops.size(), where);
    if (!live.bucketOf.empty())
      os << llvm::formatv("  {0,-28} {1,12}  (in the arena, same instant: "
                          "all-reduce buckets, gradients included)\n",
                          "communication buffers", formatBytes(bucketBytes));
    os << llvm::formatv("  {0,-28} {1,12}  (in the arena, same instant)\n",
                        "activations and temporaries", formatBytes(otherBytes));
    if (auto remat = func->getAttrOfType<DictionaryAttr>(TgDialect::kRematAttr))
      printRemat(remat, peak, os);
  }
  return success();
}

LogicalResult
mlir::tg::writeMemoryPlot(ModuleOp module,
                          ArrayRef<std::pair<std::string, ModuleOp>> others,
                          llvm::raw_ostream &os) {
  // Each module's @train_step: its live bytes over its ops.
  struct Curve {
    std::string label;
    SmallVector<int64_t> live;
    int64_t arena;
  };
  SmallVector<Curve> curves;
  StepLiveness live;
  ArenaAttr arena;
  SmallVector<std::pair<std::string, ModuleOp>> all{{"", module}};
  all.append(others.begin(), others.end());
  for (auto [label, m] : all) {
    auto func = m.lookupSymbol<func::FuncOp>("train_step");
    if (!func)
      return m.emitError("--report-plot: the module has no @train_step");
    auto planned = func->getAttrOfType<ArenaAttr>(TgDialect::kArenaAttr);
    if (!planned)
      return func.emitError("--report-plot: @train_step has no memory plan "
                            "(run tg-plan-memory)");
    StepLiveness l = StepLiveness::analyze(func, MemoryRules::of(func));
    std::string name = label;
    if (name.empty()) {
      auto remat = func->getAttrOfType<DictionaryAttr>(TgDialect::kRematAttr);
      auto policy = remat ? remat.getAs<StringAttr>("policy") : StringAttr();
      name = "remat " + (policy ? policy.getValue().str() : "none");
    }
    curves.push_back(
        {name + ": peak " + formatBytes(planned.getBytes()),
         SmallVector<int64_t>(l.liveBytes.begin(), l.liveBytes.end()),
         planned.getBytes()});
    if (m == module) {
      live = std::move(l);
      arena = planned;
    }
  }
  const double width = 900, height = 360, left = 90, right = 20, top = 40,
               bottom = 50;
  double maxBytes = 1;
  for (const Curve &c : curves)
    maxBytes = std::max<double>(maxBytes, c.arena);
  // Each curve spans the width: steps with more ops (the copies) are
  // drawn over the same span, from the first op to the last.
  size_t n = std::max<size_t>(live.liveBytes.size(), 2);
  auto x = [&](size_t i) {
    return left + (width - left - right) * (double)i / (double)(n - 1);
  };
  auto y = [&](double bytes) {
    return top + (height - top - bottom) * (1.0 - bytes / maxBytes);
  };
  auto name = module->getAttrOfType<StringAttr>(TgDialect::kModelAttr);
  os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "width=\"{0}\" height=\"{1}\" font-family=\"sans-serif\" "
                      "font-size=\"12\">\n",
                      width, height);
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << llvm::formatv("<text x=\"{0}\" y=\"22\" font-size=\"15\">Bytes live "
                      "during @train_step of '{1}'</text>\n",
                      left, name ? name.getValue() : "model");
  // Axes and their labels.
  os << llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" "
                      "stroke=\"black\"/>\n",
                      left, top, height - bottom);
  os << llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" "
                      "stroke=\"black\"/>\n",
                      left, height - bottom, width - right);
  for (int tick = 0; tick <= 4; ++tick) {
    double bytes = maxBytes * tick / 4;
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\">{2}"
                        "</text>\n",
                        left - 6, y(bytes) + 4, formatBytes((int64_t)bytes));
  }
  os << llvm::formatv(
      "<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\">"
      "{2}</text>\n",
      (left + width - right) / 2, height - 15,
      curves.size() == 1 ? llvm::formatv("op (0 to {0}, in order)", n - 1).str()
                         : std::string("progress through the step (each "
                                       "curve over its own ops)"));
  // The live bytes, as steps, one curve per module; a legend for several.
  static const char *colors[] = {"#1f77b4", "#ff7f0e", "#9467bd",
                                 "#8c564b", "#e377c2", "#17becf"};
  for (auto [c, curve] : llvm::enumerate(curves)) {
    const char *color = colors[c % 6];
    size_t m = std::max<size_t>(curve.live.size(), 2);
    auto cx = [&](size_t i) {
      return left + (width - left - right) * (double)i / (double)(m - 1);
    };
    os << llvm::formatv("<polyline fill=\"none\" stroke=\"{0}\" "
                        "stroke-width=\"1.5\" points=\"",
                        color);
    for (size_t i = 0; i < curve.live.size(); ++i)
      os << llvm::formatv("{0:f1},{1:f1} {2:f1},{1:f1} ", cx(i),
                          y(curve.live[i]), cx(std::min(i + 1, m - 1)));
    os << "\"/>\n";
    if (curves.size() > 1)
      os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" fill=\"{2}\">{3}"
                          "</text>\n",
                          left + 10, top + 14 + 15 * c, color, curve.label);
  }
  (void)x;
  // The peak's label above its line, the bound's below its own.
  auto level = [&](double bytes, StringRef color, StringRef label,
                   double labelShift) {
    os << llvm::formatv("<line x1=\"{0}\" y1=\"{1:f1}\" x2=\"{2}\" "
                        "y2=\"{1:f1}\" stroke=\"{3}\" stroke-dasharray=\"5,4\"/>"
                        "\n<text x=\"{4}\" y=\"{5:f1}\" fill=\"{3}\" "
                        "text-anchor=\"end\">{6}</text>\n",
                        left, y(bytes), width - right, color, width - right - 4,
                        y(bytes) + labelShift, label);
  };
  level(arena.getBytes(), "#d62728",
        ("arena peak " + formatBytes(arena.getBytes())), -4);
  level(live.liveBound, "#2ca02c",
        ("lower bound " + formatBytes(live.liveBound)), 14);
  os << "</svg>\n";
  return success();
}
