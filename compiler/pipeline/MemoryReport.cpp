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
#include "passes/memory/Liveness.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::tg;

namespace {

std::string formatBytes(int64_t bytes) {
  double b = (double)bytes;
  if (b >= 1e9)
    return llvm::formatv("{0:f2} GB", b / 1e9).str();
  if (b >= 1e6)
    return llvm::formatv("{0:f2} MB", b / 1e6).str();
  if (b >= 1e3)
    return llvm::formatv("{0:f1} kB", b / 1e3).str();
  return llvm::formatv("{0} B", bytes).str();
}

int64_t tensorBytes(Type type) {
  auto t = cast<RankedTensorType>(type);
  Type elem = t.getElementType();
  int64_t size = elem.isInteger(1) ? 1 : (elem.getIntOrFloatBitWidth() + 7) / 8;
  return t.getNumElements() * size;
}

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
  }
  return roots;
}

} // namespace

LogicalResult mlir::tg::printMemoryReport(ModuleOp module,
                                          llvm::raw_ostream &os) {
  auto name = module->getAttrOfType<StringAttr>(TgDialect::kModelAttr);
  os << "memory plan of model '" << (name ? name.getValue() : "model")
     << "' (tg-plan-memory: one arena per step function)\n";
  for (StringRef fn : {"train_step", "forward_backward", "forward"}) {
    auto func = module.lookupSymbol<func::FuncOp>(fn);
    if (!func)
      continue;
    auto arena = func->getAttrOfType<IntegerAttr>(TgDialect::kArenaBytesAttr);
    if (!arena)
      return func.emitError("--report=memory: @")
             << fn << " has no memory plan (run tg-plan-memory)";
    StepLiveness live = StepLiveness::analyze(func, MemoryRules::of(func));
    int64_t peak = arena.getInt();
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
  }
  return success();
}

LogicalResult mlir::tg::writeMemoryPlot(ModuleOp module,
                                        llvm::raw_ostream &os) {
  auto func = module.lookupSymbol<func::FuncOp>("train_step");
  if (!func)
    return module.emitError("--report-plot: the module has no @train_step");
  auto arena = func->getAttrOfType<IntegerAttr>(TgDialect::kArenaBytesAttr);
  if (!arena)
    return func.emitError("--report-plot: @train_step has no memory plan "
                          "(run tg-plan-memory)");
  StepLiveness live = StepLiveness::analyze(func, MemoryRules::of(func));
  const double width = 900, height = 360, left = 90, right = 20, top = 40,
               bottom = 50;
  double maxBytes = std::max<double>(arena.getInt(), 1);
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
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\">op "
                      "(0 to {2}, in order)</text>\n",
                      (left + width - right) / 2, height - 15, n - 1);
  // The live bytes, as steps.
  os << "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" "
        "points=\"";
  for (size_t i = 0; i < live.liveBytes.size(); ++i)
    os << llvm::formatv("{0:f1},{1:f1} {2:f1},{1:f1} ", x(i),
                        y(live.liveBytes[i]),
                        x(std::min(i + 1, n - 1)));
  os << "\"/>\n";
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
  level(arena.getInt(), "#d62728",
        ("arena peak " + formatBytes(arena.getInt())), -4);
  level(live.liveBound, "#2ca02c",
        ("lower bound " + formatBytes(live.liveBound)), 14);
  os << "</svg>\n";
  return success();
}
