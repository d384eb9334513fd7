//===- LayerBodies.cpp - tg-outline-layers' bodies in CUDA ------*- C++ -*-===//
//
// A layer body (`func.func private @layer_body_N {tg.layer_body}`, which
// tg-outline-layers shares between the layers that compute the same) is
// printed once, as a host function of launches, and each layer's
// `func.call` as one call of it with that layer's buffers and the arena
// offsets of the body's slots. The body's launches are planned like a step
// function's (fusion, the launch list); its memory plan is checked at each
// call, with that call's offsets (MemoryPlan.cpp's replay); each call has
// its own timers, labelled with its layer.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cuda/StepEmitter.h"

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::cuda_emit;

/// A body's argument: its parameter.
static std::string bodyArgument(unsigned i) { return "a" + std::to_string(i); }

LogicalResult StepEmitter::emitBody() {
  isBody = true;
  bindArgument = bodyArgument;
  if (failed(planLaunches()))
    return failure();
  if (!buckets.empty() || !scratchOffset.empty())
    return func.emitError(kBackend)
           << ": the layer body @" << func.getName()
           << " holds an all-reduce bucket or attention scratch, which "
              "tg-outline-layers leaves in the step";
  if (failed(countAndUploadConstants()))
    return failure();
  numberTimers();

  std::string &prototype = bodyPrototype;
  llvm::raw_string_ostream proto(prototype);
  proto << "void " << kBodyPlaceholder
        << "(tgc::StepIO &io, Device &d, const OpTimes &t, int tb, "
           "const int64_t *off";
  for (BlockArgument arg : func.getArguments()) {
    std::string n = bodyArgument(arg.getArgNumber());
    names[arg] = n;
    declaredHere.insert(arg);
    proto << ", " << storageOf(arg) << " *" << n;
  }
  proto << ")";
  // The comment is the single file's (emitCuda): a unit's text is the
  // body's code alone, so that the same body is the same unit in any build.
  auto first = func->getAttrOfType<StringAttr>(TgDialect::kLayerBodyAttr);
  bodyComment =
      llvm::formatv("\n/// @{0} (tg-outline-layers; first {1}): {2} "
                    "launches. Each\n/// layer that calls it passes "
                    "its buffers, the arena offsets of its slots\n/// "
                    "and its first timer.\n",
                    func.getName(), first ? first.getValue() : StringRef("?"),
                    timers)
          .str();
  os << "[[gnu::noinline]] " << prototype << " {\n"
     << "  cudaStream_t stream = d.compute;\n"
     << "  char *work = d.work;\n"
     << "  (void)io;\n  (void)t;\n  (void)tb;\n  (void)off;\n  (void)work;\n";
  for (Launch &l : launches)
    if (failed(emitLaunch(l)))
      return failure();
  os << "}\n";
  return success();
}

std::string StepEmitter::callLabel(const Launch &launch,
                                   StringRef bodyLabel) const {
  // The body's locations name its layer's nodes with the layer as `*`
  // (h.*.attn.c_attn); the call's is the layer (h.3).
  std::string layer = describeLoc(launch.op->getLoc());
  if (layer.empty())
    return bodyLabel.str();
  std::string pattern = StringRef(layer).rsplit('.').first.str() + ".*";
  std::string label = bodyLabel.str();
  bool named = false;
  for (size_t at = label.find(pattern); at != std::string::npos;
       at = label.find(pattern, at + layer.size())) {
    label.replace(at, pattern.size(), layer);
    named = true;
  }
  return named ? label : label + " (" + layer + ")";
}

LogicalResult StepEmitter::emitCall(Launch &launch) {
  func::CallOp call = launch.call;
  // verifyPlan checked that the call has its offsets.
  auto offsets =
      call->getAttrOfType<DenseI64ArrayAttr>(TgDialect::kSlotOffsetsAttr);
  // The arguments as expressions: a deep model's calls would otherwise
  // declare a pointer for each parameter, state and gradient, and the host
  // compiler's time grows with them.
  SmallVector<std::string> arguments;
  for (Value v : call.getOperands())
    arguments.push_back(pointerExpr(v));
  std::string layer = describeLoc(call.getLoc());
  os << "  // " << (layer.empty() ? "a layer" : "layer " + layer) << ": @"
     << call.getCallee() << " (" << launch.body->numTimed()
     << " launches)\n  {\n    static const int64_t off[] = {";
  llvm::interleaveComma(offsets.asArrayRef(), os);
  if (offsets.empty())
    os << "0";
  os << "};\n    " << launch.body->cName << "(io, d, t, " << launch.timer
     << (isBody ? " + tb" : "") << ", off";
  for (const std::string &a : arguments)
    os << ", " << a;
  os << ");\n  }\n";
  return success();
}

void StepEmitter::aliasCallResults(func::CallOp call) {
  StepEmitter *body = state.bodies.lookup(call.getCallee());
  if (!body)
    return; // buildLaunches says so
  // A body that returns a value and a view of it (a reshape read after the
  // run) returns one buffer twice: the call's results at the same offset
  // are one buffer here too, the later a view of the earlier.
  Operation *ret = body->func.getBody().front().getTerminator();
  DenseMap<Value, Value> firstWith; // a body buffer -> its first result
  for (auto [result, inner] :
       llvm::zip(call.getResults(), ret->getOperands())) {
    Value r = body->root(inner);
    if (!body->slotOf.count(r))
      continue;
    auto [it, inserted] = firstWith.try_emplace(r, result);
    if (!inserted) {
      alias[result] = it->second;
      offsetOf.erase(result);
    }
  }
}
