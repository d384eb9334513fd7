//===- EmitCuda.cpp - tg train step to CUDA C++ -----------------*- C++ -*-===//
//
// One pass per step function (@train_step, @forward, @forward_backward) in
// four stages, each in its own file under cuda/ (StepEmitter.h declares
// what they share):
//  1. fusion (cuda/LaunchPlan.cpp): which ops share a launch. A matmul takes
//     a following bias add and tanh GELU (or, in the backward, a GELU
//     gradient) into cuBLASLt's epilogue; cross_entropy and its gradient on
//     the same logits become the fused classifier; chains of elementwise ops
//     of one shape become one generated kernel; the clip factor's multiply
//     becomes the optimizer's gradScale; reshapes are views.
//  2. schedule (cuda/LaunchPlan.cpp, cuda/Streams.cpp): the launches in op
//     order, which tg-schedule decided: each tg.all_reduce is one bucket,
//     launched on the communication stream where it stands (after its last
//     gradient); the compute stream waits for a bucket at its tg.await.
//  3. memory (cuda/MemoryPlan.cpp): every buffer at the offset
//     tg-plan-memory gave it in one arena (256-byte aligned under the cuda
//     target); gradients that are reduced in place are written straight
//     into their bucket; a replay of the launches checks the plan.
//  4. code: one function of launches per step kind (StepEmitter::emit, here;
//     each launch in cuda/LibraryLaunches.cpp, cuda/ElementwiseKernels.cpp
//     and cuda/Streams.cpp; tg-outline-layers' bodies and their calls in
//     cuda/LayerBodies.cpp), and this file's layout: the generated kernels,
//     the constants, the layer bodies, the step functions and the glue that
//     runs them eagerly, timed (--profile) or as a CUDA graph
//     (--cuda-graph).
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/EmitCuda.h"
#include "compiler/codegen/ModelDescription.h"
#include "compiler/codegen/PipelineTables.h"
#include "compiler/codegen/cuda/StepEmitter.h"
#include "passes/pipeline/Chunks.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SHA256.h"

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::cuda_emit;

/// A C string literal's contents.
static std::string escape(StringRef s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

/// `constant`'s host array and its upload to `offset` (tg-place-constants')
/// in the constants section.
LogicalResult ModuleState::uploadConstant(ConstantOp constant, int64_t offset) {
  auto attr = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!attr)
    return constant.emitError(kBackend)
           << ": only dense constants are supported";
  Value v = constant.getResult();
  Type elem = elementType(v);
  int64_t n = numel(v);
  std::string name = llvm::formatv("kConstant{0}", constantCounter++).str();
  // bf16 goes up as its bits.
  StringRef hostType = elem.isBF16() ? "uint16_t" : storageType(elem);
  auto literal = [&](int64_t i) -> std::string {
    if (isa<FloatType>(elem)) {
      APFloat f = attr.isSplat() ? attr.getSplatValue<APFloat>()
                                 : attr.getValues<APFloat>()[i];
      if (elem.isBF16())
        return llvm::formatv("{0:x4}", f.bitcastToAPInt().getZExtValue()).str();
      return floatLiteral(f.convertToDouble());
    }
    APInt value = attr.isSplat() ? attr.getSplatValue<APInt>()
                                 : attr.getValues<APInt>()[i];
    return elem.isInteger(1) ? std::to_string(value.getZExtValue())
                             : std::to_string(value.getSExtValue()) +
                                   (elem.isInteger(64) ? "ll" : "");
  };
  llvm::raw_string_ostream arrays(constantArrays), uploads(constantUploads);
  arrays << "/// " << describeOp(constant) << "\n";
  if (attr.isSplat() && n > 1) {
    uploads << "  {\n    std::vector<" << hostType << "> " << name << "(" << n
            << ", (" << hostType << ")" << literal(0) << ");\n"
            << "    TGC_CUDA_CHECK(cudaMemcpy(constants + " << offset << ", "
            << name << ".data(), " << bytesOf(v)
            << ", cudaMemcpyHostToDevice));\n  }\n";
    arrays << "// (a splat of " << n << ", filled at start-up)\n";
    return success();
  }
  arrays << "const " << hostType << " " << name << "[" << n << "] = {";
  for (int64_t i = 0; i < n; ++i)
    arrays << (i ? ", " : "") << literal(i);
  arrays << "};\n";
  uploads << "  TGC_CUDA_CHECK(cudaMemcpy(constants + " << offset << ", "
          << name << ", " << bytesOf(v) << ", cudaMemcpyHostToDevice));\n";
  return success();
}

//===----------------------------------------------------------------------===//
// One step function
//===----------------------------------------------------------------------===//

void StepEmitter::numberTimers() {
  for (Launch &l : launches) {
    if (l.kind == LaunchKind::AllReduceWait || l.kind == LaunchKind::Return)
      continue;
    if (l.kind == LaunchKind::Call) {
      l.timer = timers;
      for (const std::string &label : l.body->timerLabels()) {
        labels.push_back(callLabel(l, label));
        onComm.push_back(false);
      }
      timers += l.body->numTimed();
      continue;
    }
    l.timer = timers++;
    std::string label;
    if (l.kind == LaunchKind::Bucket) {
      label = llvm::formatv("all_reduce bucket {0}", l.bucket).str();
      onComm.push_back(true);
    } else {
      for (Operation *op : l.covered)
        label += (label.empty() ? "" : "+") + opLabel(op);
      std::string where = describeLoc(l.op->getLoc());
      if (!where.empty())
        label += " " + where;
      onComm.push_back(false);
    }
    labels.push_back(label);
  }
}

LogicalResult StepEmitter::planLaunches() {
  if (!func.getBody().hasOneBlock())
    return func.emitError(kBackend)
           << ": @" << func.getName() << " must have a single block";
  return success(succeeded(checkTypes()) && succeeded(readPlan()) &&
                 succeeded(readKernels()) && succeeded(planFusion()) &&
                 succeeded(buildLaunches()));
}

LogicalResult StepEmitter::countAndUploadConstants() {
  countFlops();
  countTraffic();
  for (auto constant : func.getOps<ConstantOp>())
    if (std::optional<int64_t> offset = constantOffsetOf(constant);
        offset && failed(state.uploadConstant(constant, *offset)))
      return failure();
  return success();
}

LogicalResult StepEmitter::emit(
    llvm::function_ref<std::string(unsigned)> bind,
    llvm::function_ref<LogicalResult(StepEmitter &, func::ReturnOp)>
        bindResults,
    StringRef summary) {
  bindArgument = bind;
  if (failed(planLaunches()) || failed(verifyPlan()) ||
      failed(countAndUploadConstants()))
    return failure();
  state.numBuckets = std::max<int64_t>(state.numBuckets, buckets.size());
  state.plannedBytes = std::max(state.plannedBytes, plannedBytes);

  numberTimers();

  int64_t numLaunches = timers;
  std::string signature = "(tgc::StepIO &io, Device &d, const OpTimes &t) {\n";
  const char *scalars =
      "  // The step's scalars, from pinned memory (a replayed graph reads "
      "them anew).\n"
      "  TGC_CUDA_CHECK(cudaMemcpyAsync(d.scalars, &d.host->scalars, "
      "sizeof(Scalars),\n"
      "                                 cudaMemcpyHostToDevice, stream));\n";
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  std::string header =
      llvm::formatv("\n/// @{0}: {1}\n/// {2} launches, {3} bytes of arena, "
                    "{4} all-reduce buckets.\n",
                    func.getName(), summary, numLaunches, plannedBytes,
                    buckets.size())
          .str();
  // A part holds launches up to this weight: one each, a layer body's call
  // a quarter of its arguments and results and a multi-tensor update a
  // quarter of its lanes (their pointers are most of their code), as the
  // C++ emitter weighs calls.
  size_t perPart = std::max(1u, options.launchesPerFunction);
  auto weight = [](const Launch &l) -> size_t {
    if (!l.lanes.empty())
      return std::max<size_t>(1, l.lanes.size() / 4);
    if (l.kind != LaunchKind::Call)
      return 1;
    return std::max<size_t>(
        1, (l.call->getNumOperands() + l.call->getNumResults()) / 4);
  };
  std::vector<std::pair<size_t, size_t>> parts; // [begin, end) of launches
  for (size_t i = 0, used = 0; i < launches.size(); ++i) {
    size_t w = weight(launches[i]);
    if (parts.empty() || (used + w > perPart && used > 0)) {
      parts.push_back({i, i});
      used = 0;
    }
    parts.back().second = i + 1;
    used += w;
  }
  if (parts.size() <= 1) {
    os << header << "static void " << name << "_launches" << signature
       << "  cudaStream_t stream = d.compute;\n"
       << (buckets.empty() ? "" : "  cudaStream_t comm = d.comm;\n")
       << "  char *work = d.work;\n  (void)work;\n"
       << scalars;
    for (Launch &l : launches)
      if (failed(emitLaunch(l)))
        return failure();
    if (failed(bindResults(*this, ret)))
      return failure();
    os << "}\n";
    return success();
  }

  // A long step in parts, as the C++ emitter's (EmitCpp.cpp): the host
  // compiler's time on one function grows faster than the function. Each
  // part declares the pointers its launches read and write at its top
  // (ptr() names a value the same in every part); the results' are
  // declared where bindResults needs them.
  size_t numParts = parts.size();
  for (size_t p = 0; p < numParts; ++p) {
    auto [begin, end] = parts[p];
    ArrayRef<Launch> part = ArrayRef(launches).slice(begin, end - begin);
    bool last = p + 1 == numParts;
    std::string from = describeLoc(part.front().op->getLoc());
    std::string to = describeLoc(part.back().op->getLoc());
    os << "\n/// @" << func.getName() << ", part " << p + 1 << " of "
       << numParts << ": launches " << begin << "-" << end - 1;
    if (!from.empty() && !to.empty())
      os << " (" << from << " .. " << to << ")";
    // The communication stream where the part has a bucket to reduce.
    bool reduces = llvm::any_of(
        part, [](const Launch &l) { return l.kind == LaunchKind::Bucket; });
    os << (last ? ", then the results" : "")
       << ".\n[[gnu::noinline]] static void " << name << "_launches_part"
       << p + 1 << signature
       << "  cudaStream_t stream = d.compute;\n  (void)stream;\n"
       << (reduces ? "  cudaStream_t comm = d.comm;\n" : "")
       << "  char *work = d.work;\n  (void)work;\n"
       << (p == 0 ? scalars : "");
    declaredHere.clear();
    for (const Launch &l : part) {
      // A layer body's call and a multi-tensor update name their operands
      // as expressions (a body writes its results through its own
      // pointers: a reader declares them).
      if (l.kind == LaunchKind::Call || !l.lanes.empty())
        continue;
      for (Value v : l.reads)
        ptr(v);
      for (Value v : l.writes)
        ptr(v);
    }
    for (size_t i = begin; i < end; ++i)
      if (failed(emitLaunch(launches[i])))
        return failure();
    if (last && failed(bindResults(*this, ret)))
      return failure();
    os << "}\n";
  }
  os << header << "static void " << name << "_launches" << signature;
  for (size_t p = 0; p < numParts; ++p)
    os << "  " << name << "_launches_part" << p + 1 << "(io, d, t);\n";
  os << "}\n";
  return success();
}

//===----------------------------------------------------------------------===//
// The file
//===----------------------------------------------------------------------===//

/// What every unit of the program includes.
static const char *const kIncludes =
    "#include \"runtime/comm/Comm.h\"\n"
    "#include \"runtime/core/Model.h\"\n"
    "#include \"runtime/core/Trace.h\"\n"
    "#include \"runtime/cuda/Check.h\"\n"
    "#include \"runtime/cuda/Device.h\"\n"
    "#include \"runtime/cuda/DeviceMath.cuh\"\n"
    "#include \"runtime/cuda/Kernels.h\"\n"
    "#include \"runtime/cuda/StepProgram.h\"\n\n"
    "#include <cuda_bf16.h>\n#include <cuda_runtime.h>\n\n"
    "#include <algorithm>\n#include <cmath>\n#include <cstdint>\n"
    "#include <cstring>\n#include <vector>\n\n";

/// The names the generated code uses unqualified (inside its anonymous
/// namespace).
static const char *const kUsings =
    "using tgc::cuda::bf16;\nusing tgc::cuda::fromFloat;\n"
    "using tgc::cuda::toFloat;\n\n"
    "// The device state and per-launch timers the step functions are "
    "handed\n// (runtime/cuda/StepProgram.h).\n"
    "using tgc::cuda::Device;\nusing tgc::cuda::OpTimes;\n"
    "using tgc::cuda::Scalars;\n\n";

/// Layer bodies go into units of about this many lines.
static constexpr size_t kBodyUnitLines = 3000;

/// The first 16 hex digits of `text`'s SHA-256.
static std::string contentName(StringRef text) {
  std::array<uint8_t, 32> hash = llvm::SHA256::hash(
      ArrayRef<uint8_t>((const uint8_t *)text.data(), text.size()));
  return llvm::toHex(ArrayRef<uint8_t>(hash).take_front(8), /*LowerCase=*/true);
}

static void replaceAll(std::string &text, StringRef from, StringRef to) {
  for (size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to.str());
}

/// io.grads[index] = v on a step's first micro-batch, += v on the others
/// (runtime/cuda/StepProgram.h).
static std::string gradLaunch(StepEmitter &e, Value v, int index) {
  int64_t n = numel(v);
  std::string src = e.pointerExpr(v);
  return llvm::formatv("  tgc::cuda::storeOrAddGrad((float *)io.grads[{0}], "
                       "{1}, {2}, &d.scalars->microBatch, stream);\n",
                       index, src, n)
      .str();
}

static std::string metricCopy(StepEmitter &e, Value v, StringRef field) {
  std::string src = e.ptr(v);
  return llvm::formatv(
             "  TGC_CUDA_CHECK(cudaMemcpyAsync(&d.host->metrics.{0}, "
             "{1}, sizeof(float), cudaMemcpyDeviceToHost, stream));\n",
             field, src)
      .str();
}

/// The step-program table of one function: labels and lanes of its timed
/// launches.
static void emitProgram(llvm::raw_ostream &os, const StepEmitter &e,
                        StringRef name, bool trainMetrics) {
  os << "\nconst char *const k_" << name << "_labels[] = {\n";
  for (const std::string &label : e.timerLabels())
    os << "    \"" << escape(label) << "\",\n";
  if (e.timerLabels().empty())
    os << "    \"\",\n";
  os << "};\nconst bool k_" << name << "_on_comm[] = {";
  for (bool c : e.timerOnComm())
    os << (c ? "true, " : "false, ");
  if (e.timerOnComm().empty())
    os << "false";
  os << "};\ntgc::cuda::StepProgram " << name << "_program{\"" << name
     << "\", &kProgram, " << name << "_launches, " << e.numTimed() << ", k_"
     << name << "_labels,\n    k_" << name << "_on_comm, /*trainMetrics=*/"
     << (trainMetrics ? "true" : "false") << "};\n"
     << "void " << name << "(tgc::StepIO &io) { tgc::cuda::runStep(" << name
     << "_program, io); }\n";
}

/// The program: into `os` as one file, or, with `units`, its layer bodies
/// as units of their own (each with the generated kernels it launches) and
/// `os` the rest, which declares them.
static LogicalResult emitProgram(ModuleOp module, llvm::raw_ostream &os,
                                 const CudaEmitOptions &options,
                                 CudaEmitSummary *summary,
                                 std::vector<CudaUnit> *units) {
  auto analyzed = StepSignature::analyze(module, kBackend);
  if (failed(analyzed))
    return failure();
  if (failed(checkTensorSizes(module, options.deviceMemoryBytes,
                              llvm::formatv("a GPU's memory ({0:f1} GB)",
                                            options.deviceMemoryBytes / 1e9)
                                  .str())))
    return failure();
  const StepSignature &sig = *analyzed;
  func::FuncOp forward = sig.forward, step = sig.trainStep;
  auto fb = module.lookupSymbol<func::FuncOp>("forward_backward");
  if (!fb)
    return module.emitError(kBackend)
           << ": the module needs @forward_backward (run tg-autodiff)";
  // The module says how it was compiled (tg-precision's attribute).
  std::string precision = options.precision;
  if (StringRef applied = appliedPrecision(module); !applied.empty())
    precision = applied.str();
  if (precision.empty())
    precision = "fp32";

  ModuleState state;
  std::string body;
  llvm::raw_string_ostream bodyOs(body);
  // A pipelined module runs its chunks' functions (evaluation included):
  // the whole step's programs are left out, and with them their arena.
  bool pipelined = module->hasAttr(TgDialect::kPipelineActionsAttr);

  // tg-outline-layers' bodies first: their callers count their launches
  // and FLOPs and check their plans at each call.
  // Each is named by its code (with its kernels renamed in the order it
  // launches them), so that the same body is the same unit in any build.
  struct BodyText {
    std::string code;
    llvm::raw_string_ostream os{code};
    std::unique_ptr<StepEmitter> emitter;
    bool first = true; ///< not the same code as an earlier body's
  };
  SmallVector<std::unique_ptr<BodyText>> bodyEmitters;
  llvm::StringSet<> bodyNames;
  // A body's code with the kernels it launches renamed k0, k1, ... in the
  // order it first launches them (from `renamed`, which it extends), and
  // those kernels' definitions appended to `kernels`.
  auto localKernels = [&](const BodyText &b, std::string code,
                          llvm::DenseMap<unsigned, std::string> &renamed,
                          std::string &kernels) {
    for (unsigned index : b.emitter->kernelsUsed()) {
      const Kernel &k = state.kernels[index];
      auto [it, isNew] =
          renamed.try_emplace(index, "k" + std::to_string(renamed.size()));
      if (isNew)
        kernels += "\n__global__ void __launch_bounds__(" +
                   std::to_string(kBlock) + ") " + it->second + k.text;
      replaceAll(code, " " + k.name + "<<<", " " + it->second + "<<<");
    }
    return code;
  };
  auto unitText = [&](StringRef kernels, StringRef code) {
    return (kIncludes + Twine("namespace {\n\n") + kUsings + kernels +
            "\n} // namespace\n\n" + code)
        .str();
  };
  for (func::FuncOp f : module.getOps<func::FuncOp>()) {
    if (!f->hasAttr(TgDialect::kLayerBodyAttr))
      continue;
    auto b = std::make_unique<BodyText>();
    b->emitter = std::make_unique<StepEmitter>(state, options, f,
                                               kBodyPlaceholder, b->os);
    if (failed(b->emitter->emitBody()))
      return failure();
    llvm::DenseMap<unsigned, std::string> renamed;
    std::string kernels;
    std::string code = localKernels(*b, b->code, renamed, kernels);
    b->emitter->cName = "tgc_body_" + contentName(unitText(kernels, code));
    replaceAll(b->code, kBodyPlaceholder, b->emitter->cName);
    replaceAll(b->emitter->bodyPrototype, kBodyPlaceholder, b->emitter->cName);
    b->first = bodyNames.insert(b->emitter->cName).second;
    state.bodies[f.getSymName()] = b->emitter.get();
    bodyEmitters.push_back(std::move(b));
  }

  // @train_step.
  StepEmitter trainEmitter(state, options, step, "train_step", bodyOs);
  auto bindTrainArg = [&](unsigned i) {
    return sig.trainArgumentOrScalar(i, "&d.scalars->");
  };
  auto bindTrainResults = [&](StepEmitter &e,
                              func::ReturnOp ret) -> LogicalResult {
    e.out() << "  // Results: updates not made in place, then the metrics.\n";
    llvm::StringMap<unsigned> argumentOf; // by StepIO buffer
    for (unsigned i = 0; i < step.getNumArguments(); ++i)
      if (std::string buffer = sig.trainArgument(i); !buffer.empty())
        argumentOf[buffer] = i;
    std::string metrics;
    for (auto [r, v] : llvm::enumerate(ret.getOperands())) {
      StringRef field = sig.metricField(r);
      if (!field.empty()) {
        metrics += metricCopy(e, v, field);
        continue;
      }
      auto target = sig.updateTarget(r, kBackend);
      if (failed(target))
        return failure();
      // In-place updates (the optimizer's) already wrote there: their
      // pointer is the argument's.
      auto arg = argumentOf.find(*target);
      if (arg != argumentOf.end() && e.isArgument(v, arg->second))
        continue;
      std::string src = e.pointerExpr(v);
      e.out() << "  TGC_CUDA_CHECK(cudaMemcpyAsync(" << *target << ", " << src
              << ", " << bytesOf(v)
              << ", cudaMemcpyDeviceToDevice, stream));\n";
    }
    e.out() << metrics;
    return success();
  };
  if (!pipelined &&
      failed(trainEmitter.emit(
          bindTrainArg, bindTrainResults,
          "forward, backward, gradient all-reduce and optimizer update")))
    return failure();

  // @forward: evaluation.
  StepEmitter evalEmitter(state, options, forward, "eval_step", bodyOs);
  auto bindForwardArg = [&](unsigned i) { return sig.forwardArgument(i); };
  auto bindEvalResults = [&](StepEmitter &e,
                             func::ReturnOp ret) -> LogicalResult {
    e.out() << "  // Results: the outputs, then the loss.\n";
    for (unsigned r = 1; r < ret.getNumOperands(); ++r) {
      Value v = ret.getOperand(r);
      std::string src = e.pointerExpr(v);
      e.out() << "  if (io.outputs)\n    TGC_CUDA_CHECK(cudaMemcpyAsync(io."
              << "outputs[" << r - 1 << "], " << src << ", " << bytesOf(v)
              << ", cudaMemcpyDeviceToDevice, stream));\n";
    }
    e.out() << metricCopy(e, ret.getOperand(0), "loss");
    return success();
  };
  if (!pipelined && failed(evalEmitter.emit(bindForwardArg, bindEvalResults,
                                            "the forward pass (evaluation)")))
    return failure();

  // @forward_backward: gradients into io.grads, written by a step's first
  // micro-batch and added by the others (grad_step and accumulate).
  StepEmitter gradEmitter(state, options, fb, "grad_step", bodyOs);
  auto bindGradResults = [&](StepEmitter &e,
                             func::ReturnOp ret) -> LogicalResult {
    e.out() << "  // Results: the gradients into io.grads, then the loss.\n";
    for (unsigned r = 0; r < ret.getNumOperands(); ++r) {
      auto index = sig.gradResultIndex(fb, r, kBackend);
      if (failed(index))
        return failure();
      if (*index >= 0)
        e.out() << gradLaunch(e, ret.getOperand(r), *index);
    }
    e.out() << metricCopy(e, ret.getOperand(0), "loss");
    return success();
  };
  if (!pipelined &&
      failed(gradEmitter.emit(bindForwardArg, bindGradResults,
                              "forward and backward of one micro-batch, the "
                              "gradients into io.grads")))
    return failure();

  // A pipelined step: each chunk's F, B and W and each stage's update, a
  // step program each (one synchronisation per action: the runner sends
  // and receives between them), and the PipelineDesc tables.
  std::string pipelineTables;
  llvm::raw_string_ostream pipelineOs(pipelineTables);
  SmallVector<std::unique_ptr<StepEmitter>> pipelineEmitters;
  SmallVector<bool> pipelineUpdates; // they report gradNorm and lr
  if (pipelined) {
    auto emitFunction = [&](const PipelineFunction &f) -> LogicalResult {
      std::string name = f.func.getSymName().str();
      pipelineEmitters.push_back(
          std::make_unique<StepEmitter>(state, options, f.func, name, bodyOs));
      pipelineUpdates.push_back(f.kind == "update");
      auto bindArg = [&](unsigned i) { return f.arguments[i]; };
      auto bindResults = [&](StepEmitter &e,
                             func::ReturnOp ret) -> LogicalResult {
        e.out() << "  // Results: slots, gradients (added), reduced sums, "
                   "updates, metrics.\n";
        std::string metrics;
        for (auto [r, v] : llvm::enumerate(ret.getOperands())) {
          const PipelineResult &result = f.results[r];
          if (result.kind == PipelineResult::Metric) {
            metrics += metricCopy(e, v, result.field);
          } else if (result.kind == PipelineResult::Grad) {
            // W adds its part: the runtime zeroes the sums once a step.
            e.out() << llvm::formatv(
                "  tgc::cuda::storeOrAddGrad((float *){0}, {1}, {2}, "
                "/*microBatch=*/nullptr, stream);\n",
                result.target(), e.pointerExpr(v), numel(v));
          } else {
            // The pointer first: naming it may declare it.
            std::string target = result.target(), src = e.pointerExpr(v);
            e.out() << "  if ((void *)" << src << " != " << target
                    << ")\n    TGC_CUDA_CHECK(cudaMemcpyAsync(" << target
                    << ", " << src << ", " << bytesOf(v)
                    << ", cudaMemcpyDeviceToDevice, stream));\n";
          }
        }
        e.out() << metrics;
        return success();
      };
      StringRef summary = f.kind == "forward"    ? "a chunk's forward (F)"
                          : f.kind == "backward" ? "a chunk's backward for its "
                                                   "inputs (B)"
                          : f.kind == "weight"   ? "a chunk's backward for its "
                                                   "weights (W)"
                          : f.kind == "reduce"   ? "a chunk's gradient sums "
                                                   "reduced over the data axes"
                                                 : "a stage's optimizer update";
      return pipelineEmitters.back()->emit(bindArg, bindResults, summary);
    };
    if (failed(emitPipeline(module, sig, kBackend, "&d.scalars->", emitFunction,
                            pipelineOs)))
      return failure();
  }

  // The sizes the runtime lays its device arena out with (StepProgram.h):
  // tg-place-constants' section, tg-plan-memory's largest arena.
  int64_t constantBytes = 0;
  if (auto section =
          module->getAttrOfType<ConstantsAttr>(TgDialect::kConstantsAttr))
    constantBytes = section.getBytes();
  // FLOPs of one micro-batch's step: a pipeline's are its chunks' F, B and
  // W together.
  double flops = trainEmitter.flops();
  std::string flopsComment = trainEmitter.flopsComment;
  std::string trafficComment = trainEmitter.trafficComment;
  if (pipelined) {
    flops = 0;
    for (const std::unique_ptr<StepEmitter> &e : pipelineEmitters)
      flops += e->flops();
    flopsComment = "//   (each chunk's step program counts its own)\n";
    trafficComment = "//   (each step program's header counts its own)\n";
  }

  std::string model = sig.modelName;
  os << "//===- Generated by tgc from " << options.sourceName << " - model \""
     << model << "\" (CUDA, " << precision << ") ---===//\n"
     << "//\n"
     << "// The training step of this model for NVIDIA GPUs, on "
        "runtime/cuda. Three step\n"
     << "// functions, each a list of launches on the compute stream:\n"
     << "//   train_step  @train_step: forward, backward, gradient all-reduce "
        "and\n"
     << "//               optimizer update of one micro-batch;\n"
     << "//   eval_step   @forward: the loss and outputs (evaluation);\n"
     << "//   grad_step   @forward_backward: the gradients into io.grads "
        "(--dump-grads,\n"
     << "//               and the first micro-batches of an accumulated "
        "step).\n"
     << (pipelined
             ? "// Pipelined (tg-pipeline-split): those three are left out; "
               "each chunk's F, B\n// and W and each stage's update are "
               "step programs instead, which the\n// runtime's pipeline "
               "driver runs (kPipeline).\n"
             : "")
     << "// GEMMs are cuBLASLt calls (fp32 accumulation) with bias and tanh-"
        "GELU fused\n"
     << "// into their epilogue where the IR allows; cross_entropy and its "
        "gradient are\n"
     << "// the fused classifier; elementwise ops are the generated kernels "
        "below (one\n"
     << "// per chain of same-shaped ops, named after them); the rest are "
        "runtime/cuda\n"
     << "// launchers. Each launch's comment names its tg ops and their "
        "model-file nodes.\n"
     << (bodyEmitters.empty()
             ? ""
             : "// Layers that compute the same (tg-outline-layers) share a "
               "layer body: a host\n// function of launches printed once, "
               "which each layer calls with its\n// buffers and the arena "
               "offsets of the body's slots.\n")
     << "//\n"
     << "// Streams: every kernel runs on the context's compute stream. "
        "Gradients are\n"
     << "// all-reduced in the buckets tg-schedule formed, each on the "
        "communication\n"
     << "// stream where it stands (after its last gradient), overlapping the "
        "rest of the\n"
     << "// backward; the compute stream waits for a bucket (an event) right "
        "before the\n"
     << "// first launch that touches it. A step synchronises with the host "
        "once, at its\n"
     << "// end, to read its metrics; with --cuda-graph it is captured and "
        "replayed.\n"
     << "//\n"
     << "// Memory: one device arena (the runtime's scalars, the constants "
        "at the offsets\n"
     << "// tg-place-constants planned, and every intermediate at an offset "
        "planned by\n"
     << "// liveness, 256-byte aligned) plus the launchers' workspace, "
        "allocated at the\n// first step.\n"
     << "//\n"
     << "// FLOPs per step (one micro-batch of @train_step), for MFU:\n"
     << flopsComment
     << "//   total kFlopsPerStep = " << llvm::formatv("{0:e4}", flops) << "\n"
     << "//\n"
     << "// Launches per step (one micro-batch of @train_step):\n"
     << trafficComment << "//\n"
     << "//===---===//\n\n"
     << kIncludes << "namespace {\n\n"
     << kUsings
     << "/// The arena's parts after the scalars: the constants section "
        "(the module's\n/// #tg.constants) and the intermediates (the "
        "largest step function's\n/// #tg.arena).\n"
     << "constexpr int64_t kConstantBytes = " << constantBytes << ";\n"
     << "constexpr int64_t kPlannedBytes = " << state.plannedBytes << ";\n"
     << "constexpr int kNumBuckets = " << state.numBuckets << ";\n"
     << "constexpr double kFlopsPerStep = " << llvm::formatv("{0:e6}", flops)
     << ";\n"
     << "constexpr int kNumParams = " << sig.fwdParams.size()
     << ", kNumState = " << sig.stateArgs.size()
     << ", kNumInputs = " << sig.fwdInputs.size()
     << ", kNumOutputs = " << forward.getFunctionType().getNumResults() - 1
     << ", kNumGrads = " << sig.gradIndex.size() << ";\n";

  // Generated kernels.
  os << "\n//===----------------------------------------------------------"
        "------------===//\n// Generated kernels\n//===------------------"
        "----------------------------------------------------===//\n";
  // In units, the steps' unit has the kernels the steps launch; each body's
  // has its own.
  llvm::DenseSet<unsigned> launchedHere;
  for (StepEmitter *e : {&trainEmitter, &evalEmitter, &gradEmitter})
    launchedHere.insert(e->kernelsUsed().begin(), e->kernelsUsed().end());
  for (const std::unique_ptr<StepEmitter> &e : pipelineEmitters)
    launchedHere.insert(e->kernelsUsed().begin(), e->kernelsUsed().end());
  for (auto [index, k] : llvm::enumerate(state.kernels)) {
    if (units && !launchedHere.contains(index))
      continue;
    os << "\n/// " << k.sites.front();
    if (k.sites.size() > 1) {
      os << "\n/// also";
      for (size_t i = 1; i < k.sites.size() && i < 4; ++i)
        os << (i > 1 ? ";" : "") << " " << k.sites[i];
      if (k.sites.size() > 4)
        os << "; and " << k.sites.size() - 4 << " more";
    }
    os << "\n__global__ void __launch_bounds__(" << kBlock << ") " << k.name
       << k.text;
  }

  // Constants and workspace.
  os << "\n//===----------------------------------------------------------"
        "------------===//\n// Constants and workspace\n//===------------"
        "----------------------------------------------------------===//\n\n"
     << state.constantArrays
     << "\nvoid uploadConstants(char *constants) {\n  (void)constants;\n"
     << state.constantUploads << "}\n\n"
     << "/// The largest scratch any launcher of the steps asks for.\n"
     << "int64_t workspaceBytes() {\n  int64_t bytes = 0;\n";
  for (const std::string &need : state.workspaceNeeds)
    os << "  bytes = std::max<int64_t>(bytes, " << need << ");\n";
  os << "  return bytes;\n}\n";

  // Layer bodies (outside the anonymous namespace: in units, the other
  // units define them) and step functions.
  if (!bodyEmitters.empty()) {
    os << "\n} // namespace\n"
       << "\n//===--------------------------------------------------------"
          "--------------===//\n// Layer bodies (tg-outline-layers)\n//===---"
          "-------------------------------------------------------------------"
          "===//\n";
    for (const std::unique_ptr<BodyText> &b : bodyEmitters) {
      if (!b->first)
        continue;
      os << b->emitter->bodyComment;
      if (units)
        os << b->emitter->bodyPrototype << ";\n";
      else
        os << b->code;
    }
    os << "\nnamespace {\n";
    // The units: the bodies in order of their names, as few units as keep
    // each under kBodyUnitLines (each nvcc run costs seconds before its
    // first line), so that a unit is the same whatever else changed in
    // the model unless its bodies did.
    if (units) {
      SmallVector<const BodyText *> sorted;
      for (const std::unique_ptr<BodyText> &b : bodyEmitters)
        if (b->first)
          sorted.push_back(b.get());
      llvm::sort(sorted, [](const BodyText *a, const BodyText *b) {
        return a->emitter->cName < b->emitter->cName;
      });
      for (size_t i = 0; i < sorted.size();) {
        llvm::DenseMap<unsigned, std::string> renamed;
        std::string kernels, code;
        size_t lines = 0;
        for (; i < sorted.size() &&
               (code.empty() ||
                lines + llvm::count(sorted[i]->code, '\n') <= kBodyUnitLines);
             ++i) {
          lines += llvm::count(sorted[i]->code, '\n');
          code += "\n" +
                  localKernels(*sorted[i], sorted[i]->code, renamed, kernels);
        }
        std::string text = unitText(kernels, code);
        units->push_back({"tgc_bodies_" + contentName(text), std::move(text)});
      }
    }
  }
  os << "\n//===----------------------------------------------------------"
        "------------===//\n// Step functions\n//===-------------------"
        "---------------------------------------------------===//\n";
  os << body;

  // What runtime/cuda runs them with.
  os << "\n//===----------------------------------------------------------"
        "------------===//\n// Step programs: run by tgc::cuda::runStep "
        "(runtime/cuda/StepProgram.h)\n//===------------------------------"
        "----------------------------------------===//\n\n"
     << "const tgc::cuda::ProgramDesc kProgram = {\n"
     << "    kConstantBytes, kPlannedBytes,\n"
     << "    kNumBuckets,\n"
     << "    kNumParams, kNumState, kNumInputs, kNumOutputs, kNumGrads,\n"
     << "    workspaceBytes, uploadConstants, /*numSlots=*/"
     << (pipelined ? slotTypesOf(module).size() : 0) << ",\n};\n";
  if (!pipelined) {
    emitProgram(os, trainEmitter, "train_step", true);
    emitProgram(os, evalEmitter, "eval_step", false);
    emitProgram(os, gradEmitter, "grad_step", false);
  }
  for (auto [e, update] : llvm::zip(pipelineEmitters, pipelineUpdates))
    emitProgram(os, *e, e->functionName(), update);
  os << pipelineTables;

  // The model description.
  emitModelTables(sig, os);
  os << "\n} // namespace\n\n";
  emitModelDesc(sig, module,
                /*deviceOps=*/
                llvm::formatv("tgc::cuda::deviceOps(tgc::cuda::Precision::{0})",
                              precision == "bf16" ? "BF16" : "FP32")
                    .str(),
                /*flopsPerStep=*/"kFlopsPerStep",
                /*arenaBytes=*/"kPlannedBytes", os, pipelined);

  if (summary) {
    summary->modelName = model;
    summary->precision = precision;
    summary->arenaBytes = constantBytes + state.plannedBytes;
    summary->flopsPerStep = flops;
    summary->numKernels = state.kernels.size();
    summary->numBuckets = state.numBuckets;
  }
  return success();
}

LogicalResult mlir::tg::emitCuda(ModuleOp module, llvm::raw_ostream &os,
                                 const CudaEmitOptions &options,
                                 CudaEmitSummary *summary) {
  return emitProgram(module, os, options, summary, /*units=*/nullptr);
}

LogicalResult mlir::tg::emitCudaUnits(ModuleOp module,
                                      const CudaEmitOptions &options,
                                      std::vector<CudaUnit> &units,
                                      CudaEmitSummary *summary) {
  std::string step;
  llvm::raw_string_ostream os(step);
  std::vector<CudaUnit> bodies;
  if (failed(emitProgram(module, os, options, summary, &bodies)))
    return failure();
  units.push_back({"step", std::move(step)});
  for (CudaUnit &b : bodies)
    units.push_back(std::move(b));
  return success();
}
