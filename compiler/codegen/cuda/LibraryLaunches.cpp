//===- LibraryLaunches.cpp - cuBLASLt and runtime/cuda calls ----*- C++ -*-===//
//
// The code of one launch (emitLaunch): a matmul as one cuBLASLt call with
// its epilogue, the fused classifier, and for every other op its call into
// runtime/cuda (reductions, softmax, norms, attention, convolution,
// pooling, data movement, the global norm, the LR schedule and the
// optimizer updates), after checking the element types its kernel takes.
// Generated kernels and collectives are ElementwiseKernels.cpp's and
// Streams.cpp's.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/CSyntax.h"
#include "compiler/codegen/cuda/StepEmitter.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <tuple>

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::cuda_emit;

//===----------------------------------------------------------------------===//
// One launch
//===----------------------------------------------------------------------===//

LogicalResult StepEmitter::emitLaunch(Launch &launch) {
  // The comment: the ops and where they came from.
  if (!launch.lanes.empty()) {
    os << "  // tg.kernel optimizer: " << launch.lanes.size()
       << " updates in one multi-tensor call\n";
  } else if (launch.kind != LaunchKind::Bucket &&
             launch.kind != LaunchKind::Call) {
    for (Operation *op : launch.covered)
      os << "  // " << describeOp(op) << "\n";
    if (launch.kind == LaunchKind::Gemm && launch.epilogue != "None")
      os << "  //   (one cuBLASLt call, the " << launch.epilogue
         << " epilogue)\n";
    if (launch.kind == LaunchKind::Classifier)
      os << "  //   (the fused classifier: loss and dlogits in one read of "
            "the logits"
         << (root(launch.crossEntropyGrad.getResult()) ==
                     flat(launch.crossEntropy.getLogits())
                 ? ", in place"
                 : "")
         << ")\n";
  }
  switch (launch.kind) {
  case LaunchKind::Elementwise:
    return emitElementwise(launch);
  case LaunchKind::Gemm:
    return emitGemm(launch);
  case LaunchKind::Classifier:
    emitClassifier(launch);
    return success();
  case LaunchKind::Bucket:
    emitBucket(launch);
    return success();
  case LaunchKind::AllReduceWait:
    os << "  // Bucket " << launch.bucket
       << " is reduced before what follows touches it.\n"
       << "  TGC_CUDA_CHECK(cudaStreamWaitEvent(stream, d.bucketDone["
       << launch.bucket << "], 0));\n";
    return success();
  case LaunchKind::Op:
    return emitOp(launch, launch.op);
  case LaunchKind::Call:
    return emitCall(launch);
  case LaunchKind::Return:
    return success();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// cuBLASLt GEMMs and the fused classifier
//===----------------------------------------------------------------------===//

LogicalResult StepEmitter::emitGemm(Launch &launch) {
  MatmulOp op = launch.matmul;
  Value out = launch.out ? launch.out : op.getResult();
  auto a = tensorType(op.getLhs()), b = tensorType(op.getRhs()),
       c = tensorType(out);
  Type at = a.getElementType(), bt = b.getElementType(),
       ct = c.getElementType();
  bool ok = (at.isF32() && bt.isF32() && ct.isF32()) ||
            (at.isBF16() && bt.isBF16() && (ct.isBF16() || ct.isF32()));
  if (!ok)
    return op.emitError(kBackend)
           << ": tg.matmul of " << at << " x " << bt << " -> " << ct
           << " has no cuBLASLt kernel (f32 x f32 -> f32, bf16 x bf16 -> "
              "bf16 or f32 do)";
  std::string lhs = ptr(op.getLhs()), rhs = ptr(op.getRhs()),
              bias = launch.bias ? ptr(launch.bias) : "",
              aux = launch.aux ? ptr(launch.aux) : "", result = ptr(out);
  MatmulDims dims(op);
  os << timerBegin(launch) << "  {\n    " << dims.batchArrays() << "\n"
     << "    tgc::cuda::MatmulOptions options;\n";
  if (launch.epilogue != "None")
    os << "    options.epilogue = tgc::cuda::Epilogue::" << launch.epilogue
       << ";\n";
  if (!bias.empty())
    os << "    options.bias = " << bias << ";\n";
  if (!aux.empty())
    os << "    options.geluAux = " << aux << ";\n";
  os << "    tgc::cuda::matmul(" << lhs << ", " << rhs << ", " << result << ", "
     << dims.arguments() << ", options, stream);\n"
     << "  }\n"
     << timerEnd(launch);
  return success();
}

void StepEmitter::emitClassifier(Launch &launch) {
  CrossEntropyOp ce = launch.crossEntropy;
  CrossEntropyGradOp grad = launch.crossEntropyGrad;
  auto t = tensorType(ce.getLogits());
  int64_t classes = t.getShape().back();
  int64_t rows = t.getNumElements() / classes;
  StringRef reduction = runtimeLossReduction(ce.getReduction());
  bool none = reduction == "None";
  std::string logits = ptr(ce.getLogits()), labels = ptr(ce.getLabels()),
              g = isLiteralOne(flat(grad.getGrad())) ? "nullptr"
                                                     : ptr(grad.getGrad()),
              loss = ptr(ce.getResult()), dlogits = ptr(grad.getResult());
  os << timerBegin(launch) << "  tgc::cuda::fused_classifier(" << logits << ", "
     << labels << ", " << rows << ", " << classes << ", "
     << (int64_t)ce.getIgnoreIndex() << ", tgc::cuda::Reduction::" << reduction
     << ", " << g << ", " << (none ? "nullptr" : loss) << ", "
     << (none ? loss : "nullptr") << ", " << dlogits << ", "
     << workspace(
            llvm::formatv("tgc::cuda::cross_entropy_workspace_bytes({0})", rows)
                .str())
     << ", stream);\n"
     << timerEnd(launch);
}

//===----------------------------------------------------------------------===//
// runtime/cuda calls, one per op
//===----------------------------------------------------------------------===//

static std::string nullable(StepEmitter &e, Value v) {
  return v ? e.ptr(v) : "nullptr";
}

static int64_t product(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}

/// Outer, axis and inner extents of a tensor around one axis.
static std::tuple<int64_t, int64_t, int64_t> splitAxis(RankedTensorType t,
                                                       int64_t axis) {
  ArrayRef<int64_t> s = t.getShape();
  return {product(s.take_front(axis)), s[axis],
          product(s.drop_front(axis + 1))};
}

/// Checks that every operand and result given (null ones skipped) has one
/// float type, f32 or bf16: what most of the runtime's kernels take.
static LogicalResult sameFloat(Operation *op, ArrayRef<Value> values) {
  Type t;
  for (Value v : values) {
    if (!v)
      continue;
    Type e = elementType(v);
    if (!e.isF32() && !e.isBF16())
      return op->emitError(kBackend)
             << ": " << op->getName() << " takes f32 or bf16, got " << e;
    if (t && e != t)
      return op->emitError(kBackend)
             << ": " << op->getName() << " mixes " << t << " and " << e;
    t = e;
  }
  return success();
}

/// Checks that every value given (null ones skipped) is f32: the kernels
/// of convolution and pooling have no other.
static LogicalResult f32Only(Operation *op, ArrayRef<Value> values) {
  for (Value v : values)
    if (v && !elementType(v).isF32())
      return op->emitError(kBackend)
             << ": " << op->getName() << " runs in f32 only on the GPU, got "
             << elementType(v)
             << " (compile with --precision=fp32, or keep this op in f32)";
  return success();
}

LogicalResult StepEmitter::libraryCall(const Launch &launch, StringRef fn,
                                       ArrayRef<std::string> args) {
  os << timerBegin(launch) << "  tgc::cuda::" << fn << "(";
  for (const std::string &arg : args)
    os << arg << ", ";
  os << "stream);\n" << timerEnd(launch);
  return success();
}

LogicalResult StepEmitter::emitOp(Launch &launch, Operation *op) {
  // Each family emits the ops it knows and declines the others.
  using Family =
      std::optional<LogicalResult> (StepEmitter::*)(Launch &, Operation *);
  for (Family family :
       {&StepEmitter::emitReductionCall, &StepEmitter::emitNormAndDropoutCall,
        &StepEmitter::emitEmbeddingAndLossCall, &StepEmitter::emitAttentionCall,
        &StepEmitter::emitConvAndPoolCall, &StepEmitter::emitCollectiveCall,
        &StepEmitter::emitShapeCall, &StepEmitter::emitOptimizerCall})
    if (std::optional<LogicalResult> emitted = (this->*family)(launch, op))
      return *emitted;
  return op->emitError(kBackend)
         << ": no lowering for '" << op->getName() << "'";
}

/// reduce (sum, mean, max) over dims, softmax and log_softmax over an axis.
std::optional<LogicalResult> StepEmitter::emitReductionCall(Launch &launch,
                                                            Operation *op) {
  std::string begin = timerBegin(launch), end = timerEnd(launch);
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(
          [&](auto r) -> LogicalResult {
            if (failed(sameFloat(op, {r.getX(), r.getResult()})))
              return failure();
            StringRef kind = isa<ReduceSumOp>(op)    ? "Sum"
                             : isa<ReduceMeanOp>(op) ? "Mean"
                                                     : "Max";
            SmallVector<int64_t> dims = r.getReducedDims();
            auto x = tensorType(r.getX());
            std::string in = ptr(r.getX()), out = ptr(r.getResult());
            os << begin << "  {\n    static const int64_t shape[] = "
               << intList(x.getShape()) << ", dims[] = " << intList(dims)
               << ";\n    tgc::cuda::reduce(tgc::cuda::ReduceKind::" << kind
               << ", " << in << ", shape, " << x.getRank() << ", dims, "
               << dims.size() << ", " << out << ", "
               << workspace(
                      llvm::formatv(
                          "[] {{ static const int64_t shape[] = {0}, dims[] "
                          "= {1}; return "
                          "tgc::cuda::reduce_workspace_bytes(shape, {2}, "
                          "dims, {3}); }()",
                          intList(x.getShape()), intList(dims), x.getRank(),
                          dims.size())
                          .str())
               << ", stream);\n  }\n"
               << end;
            return success();
          })
      .Case<SoftmaxOp, LogSoftmaxOp>([&](auto s) -> LogicalResult {
        if (failed(sameFloat(op, {s.getX(), s.getResult()})))
          return failure();
        auto t = tensorType(s.getX());
        auto [outer, n, inner] =
            splitAxis(t, *normalizeAxis(s.getAxis(), t.getRank()));
        std::string in = ptr(s.getX()), out = ptr(s.getResult());
        return libraryCall(launch,
                           isa<SoftmaxOp>(op) ? "softmax" : "log_softmax",
                           {in, out, std::to_string(outer), std::to_string(n),
                            std::to_string(inner)});
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// layer_norm and rms_norm with their gradients, and dropout.
std::optional<LogicalResult>
StepEmitter::emitNormAndDropoutCall(Launch &launch, Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](LayerNormOp l) -> LogicalResult {
        if (failed(sameFloat(
                op, {l.getX(), l.getWeight(), l.getBias(), l.getResult()})))
          return failure();
        auto t = tensorType(l.getX());
        int64_t d = t.getShape().back();
        std::string x = ptr(l.getX()), w = nullable(*this, l.getWeight()),
                    b = nullable(*this, l.getBias()), y = ptr(l.getResult());
        return libraryCall(launch, "layer_norm",
                           {x, w, b, y, std::to_string(t.getNumElements() / d),
                            std::to_string(d),
                            floatLiteral(l.getEps().convertToDouble())});
      })
      .Case([&](LayerNormGradOp l) -> LogicalResult {
        if (failed(sameFloat(op, {l.getGrad(), l.getX(), l.getWeight(),
                                  l.getDx(), l.getDweight(), l.getDbias()})))
          return failure();
        auto t = tensorType(l.getX());
        int64_t d = t.getShape().back(), rows = t.getNumElements() / d;
        std::string g = ptr(l.getGrad()), x = ptr(l.getX()),
                    w = nullable(*this, l.getWeight()), dx = ptr(l.getDx()),
                    dw = ptr(l.getDweight()), db = ptr(l.getDbias());
        return libraryCall(
            launch, "layer_norm_grad",
            {g, x, w, dx, dw, db, std::to_string(rows), std::to_string(d),
             floatLiteral(l.getEps().convertToDouble()),
             workspace(llvm::formatv(
                           "tgc::cuda::layer_norm_grad_workspace_bytes({0}, "
                           "{1})",
                           rows, d)
                           .str())});
      })
      .Case([&](RmsNormOp l) -> LogicalResult {
        if (failed(sameFloat(op, {l.getX(), l.getWeight(), l.getResult()})))
          return failure();
        auto t = tensorType(l.getX());
        int64_t d = t.getShape().back();
        std::string x = ptr(l.getX()), w = nullable(*this, l.getWeight()),
                    y = ptr(l.getResult());
        return libraryCall(launch, "rms_norm",
                           {x, w, y, std::to_string(t.getNumElements() / d),
                            std::to_string(d),
                            floatLiteral(l.getEps().convertToDouble())});
      })
      .Case([&](RmsNormGradOp l) -> LogicalResult {
        if (failed(sameFloat(op, {l.getGrad(), l.getX(), l.getWeight(),
                                  l.getDx(), l.getDweight()})))
          return failure();
        auto t = tensorType(l.getX());
        int64_t d = t.getShape().back(), rows = t.getNumElements() / d;
        std::string g = ptr(l.getGrad()), x = ptr(l.getX()),
                    w = nullable(*this, l.getWeight()), dx = ptr(l.getDx()),
                    dw = ptr(l.getDweight());
        return libraryCall(
            launch, "rms_norm_grad",
            {g, x, w, dx, dw, std::to_string(rows), std::to_string(d),
             floatLiteral(l.getEps().convertToDouble()),
             workspace(llvm::formatv(
                           "tgc::cuda::rms_norm_grad_workspace_bytes({0}, {1})",
                           rows, d)
                           .str())});
      })
      .Case([&](DropoutOp dr) -> LogicalResult {
        if (failed(sameFloat(op, {dr.getX(), dr.getResult()})))
          return failure();
        std::string x = ptr(dr.getX()), y = ptr(dr.getResult());
        return libraryCall(launch, "dropout",
                           {x, y, std::to_string(numel(dr.getX())),
                            floatLiteral(dr.getP().convertToDouble()),
                            std::to_string((uint64_t)dr.getSeed()) + "ull",
                            "&d.scalars->step", "&d.scalars->randomStream"});
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// The embedding lookup and cross-entropy, with their gradients.
std::optional<LogicalResult>
StepEmitter::emitEmbeddingAndLossCall(Launch &launch, Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](EmbeddingOp e) -> LogicalResult {
        if (failed(sameFloat(op, {e.getTable(), e.getResult()})))
          return failure();
        auto t = tensorType(e.getTable());
        std::string table = ptr(e.getTable()), idx = ptr(e.getIndices()),
                    out = ptr(e.getResult());
        return libraryCall(launch, "embedding",
                           {table, std::to_string(t.getDimSize(0)),
                            std::to_string(t.getDimSize(1)), idx,
                            std::to_string(numel(e.getIndices())), out});
      })
      .Case([&](EmbeddingGradOp e) -> LogicalResult {
        if (failed(sameFloat(op, {e.getGrad(), e.getResult()})))
          return failure();
        auto t = tensorType(e.getResult());
        int64_t n = numel(e.getIndices());
        std::string g = ptr(e.getGrad()), idx = ptr(e.getIndices()),
                    out = ptr(e.getResult());
        return libraryCall(
            launch, "embedding_grad",
            {g, idx, std::to_string(n), std::to_string(t.getDimSize(0)),
             std::to_string(t.getDimSize(1)), out,
             workspace(
                 llvm::formatv("tgc::cuda::embedding_grad_workspace_bytes({0}, "
                               "{1})",
                               n, t.getDimSize(0))
                     .str())});
      })
      .Case([&](CrossEntropyOp c) -> LogicalResult {
        if (failed(sameFloat(op, {c.getLogits()})))
          return failure();
        auto t = tensorType(c.getLogits());
        int64_t classes = t.getShape().back(),
                rows = t.getNumElements() / classes;
        StringRef reduction = runtimeLossReduction(c.getReduction());
        bool none = reduction == "None";
        std::string logits = ptr(c.getLogits()), labels = ptr(c.getLabels()),
                    loss = ptr(c.getResult());
        return libraryCall(
            launch, "cross_entropy",
            {logits, labels, std::to_string(rows), std::to_string(classes),
             std::to_string((int64_t)c.getIgnoreIndex()),
             ("tgc::cuda::Reduction::" + reduction).str(),
             none ? "nullptr" : loss, none ? loss : "nullptr",
             workspace(
                 llvm::formatv("tgc::cuda::cross_entropy_workspace_bytes({0})",
                               rows)
                     .str())});
      })
      .Case([&](CrossEntropyGradOp c) -> LogicalResult {
        if (failed(sameFloat(op, {c.getLogits(), c.getResult()})))
          return failure();
        if (!elementType(c.getGrad()).isF32())
          return c.emitError(kBackend)
                 << ": tg.cross_entropy_grad needs an f32 loss gradient";
        auto t = tensorType(c.getLogits());
        int64_t classes = t.getShape().back(),
                rows = t.getNumElements() / classes;
        StringRef reduction = runtimeLossReduction(c.getReduction());
        std::string g = ptr(c.getGrad()), logits = ptr(c.getLogits()),
                    labels = ptr(c.getLabels()), out = ptr(c.getResult());
        return libraryCall(
            launch, "cross_entropy_grad",
            {g, logits, labels, std::to_string(rows), std::to_string(classes),
             std::to_string((int64_t)c.getIgnoreIndex()),
             ("tgc::cuda::Reduction::" + reduction).str(), out,
             workspace(
                 llvm::formatv("tgc::cuda::cross_entropy_workspace_bytes({0})",
                               rows)
                     .str())});
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// Attention and its gradient, which reads the forward's log-sum-exp.
std::optional<LogicalResult> StepEmitter::emitAttentionCall(Launch &launch,
                                                            Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](AttentionOp a) -> LogicalResult {
        if (failed(sameFloat(op, {a.getQuery(), a.getKey(), a.getValue(),
                                  a.getMask(), a.getResult()})))
          return failure();
        ArrayRef<int64_t> q = tensorType(a.getQuery()).getShape(),
                          k = tensorType(a.getKey()).getShape(),
                          v = tensorType(a.getValue()).getShape();
        // ptr() declares what it names on first use: all before the call.
        std::string qp = ptr(a.getQuery()), kp = ptr(a.getKey()),
                    vp = ptr(a.getValue()), mask = nullable(*this, a.getMask()),
                    out = ptr(a.getResult());
        std::string lse = "nullptr";
        if (auto it = scratchOffset.find(a); it != scratchOffset.end())
          lse = llvm::formatv("(float *)(work + {0})", it->second).str();
        return libraryCall(
            launch, "attention",
            {qp, kp, vp, mask, attentionMaskShape(a.getMask()), out, lse,
             std::to_string(q[0]), std::to_string(q[1]), std::to_string(k[1]),
             std::to_string(q[2]), std::to_string(k[2]), std::to_string(q[3]),
             std::to_string(v[3]), a.getCausal() ? "true" : "false",
             floatLiteral(a.getEffectiveScale())});
      })
      .Case([&](AttentionGradOp a) -> LogicalResult {
        if (failed(sameFloat(op, {a.getGrad(), a.getQuery(), a.getKey(),
                                  a.getValue(), a.getMask(), a.getDquery(),
                                  a.getDkey(), a.getDvalue(), a.getDmask()})))
          return failure();
        ArrayRef<int64_t> q = tensorType(a.getQuery()).getShape(),
                          k = tensorType(a.getKey()).getShape(),
                          v = tensorType(a.getValue()).getShape();
        double scale = a.getScale() ? a.getScale()->convertToDouble()
                                    : 1.0 / std::sqrt((double)q[3]);
        std::string out = "nullptr", lse = "nullptr";
        if (AttentionOp fwd = forwardOf.lookup(a)) {
          out = ptr(fwd.getResult());
          lse = llvm::formatv("(const float *)(work + {0})",
                              scratchOffset.lookup(fwd))
                    .str();
        }
        std::string g = ptr(a.getGrad()), qp = ptr(a.getQuery()),
                    kp = ptr(a.getKey()), vp = ptr(a.getValue()),
                    mask = nullable(*this, a.getMask()),
                    dq = ptr(a.getDquery()), dk = ptr(a.getDkey()),
                    dv = ptr(a.getDvalue()),
                    dmask = nullable(*this, a.getDmask());
        bool maskGrad = (bool)a.getDmask();
        return libraryCall(
            launch, "attention_grad",
            {g,
             qp,
             kp,
             vp,
             mask,
             attentionMaskShape(a.getMask()),
             out,
             lse,
             dq,
             dk,
             dv,
             dmask,
             std::to_string(q[0]),
             std::to_string(q[1]),
             std::to_string(k[1]),
             std::to_string(q[2]),
             std::to_string(k[2]),
             std::to_string(q[3]),
             std::to_string(v[3]),
             a.getCausal() ? "true" : "false",
             floatLiteral(scale),
             workspace(llvm::formatv(
                           "tgc::cuda::attention_grad_workspace_bytes({0}, "
                           "{1}, {2}, {3}, {4})",
                           q[0], q[1], q[2], k[2], maskGrad ? "true" : "false")
                           .str())});
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// conv2d and the 2-d poolings, with their gradients (f32 only).
std::optional<LogicalResult> StepEmitter::emitConvAndPoolCall(Launch &launch,
                                                              Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](Conv2dOp c) -> LogicalResult {
        if (failed(f32Only(op, {c.getInput(), c.getWeight(), c.getBias()})))
          return failure();
        std::string x = ptr(c.getInput()), w = ptr(c.getWeight()),
                    b = nullable(*this, c.getBias()), y = ptr(c.getResult());
        return libraryCall(
            launch, "conv2d",
            {x, w, b, y,
             conv2dDims("tgc::cuda", c.getInput(), c.getWeight(), c.getResult(),
                        c.getStride(), c.getPadding(), c.getDilation(),
                        c.getGroups())});
      })
      .Case([&](Conv2dGradInputOp c) -> LogicalResult {
        if (failed(f32Only(op, {c.getGrad(), c.getWeight()})))
          return failure();
        std::string g = ptr(c.getGrad()), w = ptr(c.getWeight()),
                    dx = ptr(c.getResult());
        return libraryCall(
            launch, "conv2d_grad_input",
            {g, w, dx,
             conv2dDims("tgc::cuda", c.getResult(), c.getWeight(), c.getGrad(),
                        c.getStride(), c.getPadding(), c.getDilation(),
                        c.getGroups())});
      })
      .Case([&](Conv2dGradWeightOp c) -> LogicalResult {
        if (failed(f32Only(op, {c.getGrad(), c.getInput()})))
          return failure();
        std::string g = ptr(c.getGrad()), x = ptr(c.getInput()),
                    dw = ptr(c.getResult());
        return libraryCall(
            launch, "conv2d_grad_weight",
            {g, x, dw,
             conv2dDims("tgc::cuda", c.getInput(), c.getResult(), c.getGrad(),
                        c.getStride(), c.getPadding(), c.getDilation(),
                        c.getGroups())});
      })
      .Case<MaxPool2dOp, AvgPool2dOp>([&](auto p) -> LogicalResult {
        if (failed(f32Only(op, {p.getInput()})))
          return failure();
        std::string x = ptr(p.getInput()), y = ptr(p.getResult());
        return libraryCall(
            launch, isa<MaxPool2dOp>(op) ? "max_pool2d" : "avg_pool2d",
            {x, y,
             pool2dDims("tgc::cuda", p.getInput(), p.getResult(),
                        p.getKernelSize(), p.getEffectiveStride(),
                        p.getPadding())});
      })
      .Case<MaxPool2dGradOp, AvgPool2dGradOp>([&](auto p) -> LogicalResult {
        if (failed(f32Only(op, {p.getGrad(), p.getInput()})))
          return failure();
        SmallVector<int64_t> stride = p.getStride()
                                          ? llvm::to_vector(*p.getStride())
                                          : llvm::to_vector(p.getKernelSize());
        std::string dims =
            pool2dDims("tgc::cuda", p.getInput(), p.getGrad(),
                       p.getKernelSize(), stride, p.getPadding());
        std::string g = ptr(p.getGrad()), dx = ptr(p.getResult());
        if (isa<MaxPool2dGradOp>(op))
          return libraryCall(launch, "max_pool2d_grad",
                             {g, ptr(p.getInput()), dx, dims});
        return libraryCall(launch, "avg_pool2d_grad", {g, dx, dims});
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// The mesh collectives other than the all-reduce buckets: all_gather,
/// reduce_scatter and all_slice. They run on the compute stream, in order
/// with the kernels around them: nothing overlaps them yet (the gradient
/// buckets keep their own stream).
std::optional<LogicalResult> StepEmitter::emitCollectiveCall(Launch &launch,
                                                             Operation *op) {
  std::string begin = timerBegin(launch), end = timerEnd(launch);
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](AllGatherOp g) -> LogicalResult {
        FailureOr<int> axis = meshAxisIndex(g, g.getMeshAxis(), kBackend);
        if (failed(axis))
          return failure();
        std::string in = ptr(g.getInput()), out = ptr(g.getResult());
        os << begin << "  if (io.comm)\n    tgc::comm::allGather(io.comm, "
           << "/*axis=*/" << *axis << " /* " << g.getMeshAxis() << " */, " << in
           << ", " << out << ", " << numel(g.getInput()) << ", "
           << dtypeName(elementType(g.getInput())) << ", stream, /*blocks=*/"
           << runsBefore(g.getInput().getType(), g.getDim())
           << ");\n  else\n    TGC_CUDA_CHECK(cudaMemcpyAsync(" << out << ", "
           << in << ", " << bytesOf(g.getInput())
           << ", cudaMemcpyDeviceToDevice, stream));\n"
           << end;
        return success();
      })
      .Case([&](ReduceScatterOp r) -> LogicalResult {
        Type e = elementType(r.getInput());
        if (!e.isF32() && !e.isBF16() && !e.isF16())
          return r.emitError(kBackend)
                 << ": tg.reduce_scatter takes f32, bf16 or f16, got " << e;
        FailureOr<int> axis = meshAxisIndex(r, r.getMeshAxis(), kBackend);
        if (failed(axis))
          return failure();
        std::string in = ptr(r.getInput()), out = ptr(r.getResult());
        os << begin << "  if (io.comm)\n    tgc::comm::reduceScatter(io.comm, "
           << "/*axis=*/" << *axis << " /* " << r.getMeshAxis() << " */, " << in
           << ", " << out << ", " << numel(r.getResult()) << ", "
           << dtypeName(e) << ", " << commReduceOp(r.getReduction())
           << ", stream, /*blocks=*/"
           << runsBefore(r.getResult().getType(), r.getDim())
           << ");\n  else\n    TGC_CUDA_CHECK(cudaMemcpyAsync(" << out << ", "
           << in << ", " << bytesOf(r.getResult())
           << ", cudaMemcpyDeviceToDevice, stream));\n"
           << end;
        return success();
      })
      .Case([&](AllSliceOp a) -> LogicalResult {
        FailureOr<int> axis = meshAxisIndex(a, a.getMeshAxis(), kBackend);
        if (failed(axis))
          return failure();
        // This process's piece: run b of it is run b * size + at of the
        // whole, one strided copy.
        int64_t blocks = runsBefore(a.getResult().getType(), a.getDim());
        int64_t run = bytesOf(a.getResult()) / std::max<int64_t>(blocks, 1);
        std::string in = ptr(a.getInput()), out = ptr(a.getResult());
        os << begin << "  {\n    const size_t size = "
           << "tgc::comm::meshAxisSize(io.comm, " << *axis
           << "), at = tgc::comm::meshCoordinate(io.comm, " << *axis
           << ");\n    TGC_CUDA_CHECK(cudaMemcpy2DAsync(" << out << ", " << run
           << ", (const char *)" << in << " + at * " << run << ", size * "
           << run << ", " << run << ", " << blocks
           << ", cudaMemcpyDeviceToDevice, stream));\n  }\n"
           << end;
        return success();
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// Data movement: transpose, slice and its gradient, concat.
std::optional<LogicalResult> StepEmitter::emitShapeCall(Launch &launch,
                                                        Operation *op) {
  std::string begin = timerBegin(launch), end = timerEnd(launch);
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](TransposeOp t) -> LogicalResult {
        std::string x = ptr(t.getX()), y = ptr(t.getResult());
        os << begin << "  {\n    static const int64_t shape[] = "
           << intList(tensorType(t.getX()).getShape())
           << ", perm[] = " << intList(t.getPerm()) << ";\n"
           << "    tgc::cuda::transpose_bytes(" << x << ", "
           << elementBytes(elementType(t.getX())) << ", shape, "
           << t.getPerm().size() << ", perm, " << y << ", stream);\n  }\n"
           << end;
        return success();
      })
      .Case([&](SliceOp s) -> LogicalResult {
        std::string x = ptr(s.getX()), y = ptr(s.getResult());
        os << begin << "  {\n    static const int64_t shape[] = "
           << intList(tensorType(s.getX()).getShape())
           << ", start[] = " << intList(s.getStart())
           << ", stride[] = " << intList(s.getEffectiveStride())
           << ", outShape[] = " << intList(tensorType(s.getResult()).getShape())
           << ";\n    tgc::cuda::slice_bytes(" << x << ", "
           << elementBytes(elementType(s.getX())) << ", shape, "
           << tensorType(s.getX()).getRank() << ", start, stride, " << y
           << ", outShape, stream);\n  }\n"
           << end;
        return success();
      })
      .Case([&](SliceGradOp s) -> LogicalResult {
        SmallVector<int64_t> stride =
            s.getStride() ? llvm::to_vector(*s.getStride())
                          : SmallVector<int64_t>(s.getStart().size(), 1);
        std::string g = ptr(s.getGrad()), dx = ptr(s.getResult());
        os << begin << "  {\n    static const int64_t gShape[] = "
           << intList(tensorType(s.getGrad()).getShape())
           << ", start[] = " << intList(s.getStart())
           << ", stride[] = " << intList(stride)
           << ", xShape[] = " << intList(tensorType(s.getResult()).getShape())
           << ";\n    tgc::cuda::slice_grad_bytes(" << g << ", "
           << elementBytes(elementType(s.getGrad())) << ", gShape, "
           << stride.size() << ", start, stride, " << dx
           << ", xShape, stream);\n  }\n"
           << end;
        return success();
      })
      .Case([&](ConcatOp c) -> LogicalResult {
        SmallVector<std::string> inputs;
        for (Value v : c.getInputs())
          inputs.push_back(ptr(v));
        std::string out = ptr(c.getResult());
        os << begin << "  {\n";
        std::string list, shapes;
        for (auto [i, v] : llvm::enumerate(c.getInputs())) {
          os << "    static const int64_t shape" << i
             << "[] = " << intList(tensorType(v).getShape()) << ";\n";
          list += (i ? ", " : "") + inputs[i];
          shapes += (i ? ", shape" : "shape") + std::to_string(i);
        }
        os << "    const void *inputs[] = {" << list << "};\n"
           << "    const int64_t *shapes[] = {" << shapes << "};\n"
           << "    tgc::cuda::concat_bytes(inputs, "
           << elementBytes(elementType(c.getResult())) << ", shapes, "
           << c.getInputs().size() << ", "
           << tensorType(c.getResult()).getRank() << ", "
           << *normalizeAxis(c.getAxis(), tensorType(c.getResult()).getRank())
           << ", " << out << ", stream);\n  }\n"
           << end;
        return success();
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// The runtime's updates keep fp32 master weights: an update of a
/// parameter or state of another type is refused, naming it.
static LogicalResult checkMasterWeights(OptimizerUpdateOp u) {
  auto check = [&](Value v, StringRef what) -> LogicalResult {
    if (elementType(v).isF32())
      return success();
    return u.emitError(kBackend)
           << ": tg.optimizer_update needs f32 parameters and state (fp32 "
              "master weights); its "
           << what << " is " << v.getType();
  };
  if (failed(check(u.getParam(), "parameter")))
    return failure();
  for (auto [i, slot] : llvm::enumerate(OptimizerUpdateOp::stateSlots(
           u.getKind(), u.getMomentum().convertToDouble())))
    if (failed(check(u.getState()[i], (slot + " state").str())))
      return failure();
  return success();
}

/// The global gradient norm, the LR schedule and the optimizer updates.
std::optional<LogicalResult> StepEmitter::emitOptimizerCall(Launch &launch,
                                                            Operation *op) {
  std::string begin = timerBegin(launch), end = timerEnd(launch);
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](GlobalNormOp g) -> LogicalResult {
        std::string list, sizes;
        for (Value v : g.getInputs()) {
          Type e = elementType(v);
          if (!e.isF32() && !e.isBF16())
            return g.emitError(kBackend)
                   << ": tg.global_norm takes f32 or bf16, got " << e;
          list += llvm::formatv("      {{{0}, {1}, {2}},\n", ptr(v),
                                dtypeName(e), numel(v))
                      .str();
          sizes +=
              llvm::formatv("{{nullptr, {0}, {1}}, ", dtypeName(e), numel(v))
                  .str();
        }
        std::string out = ptr(g.getResult());
        os << begin << "  {\n    const tgc::cuda::NormInput inputs[] = {\n"
           << list << "    };\n    tgc::cuda::global_norm(inputs, "
           << g.getInputs().size() << ", " << out << ", "
           << workspace(
                  llvm::formatv(
                      "[] {{ const tgc::cuda::NormInput inputs[] = {{{0}}; "
                      "return tgc::cuda::global_norm_workspace_bytes("
                      "inputs, {1}); }()",
                      sizes, g.getInputs().size())
                      .str())
           << ", stream);\n  }\n"
           << end;
        return success();
      })
      .Case([&](LrScheduleOp l) -> LogicalResult {
        std::string step = ptr(l.getStep()), base = ptr(l.getBaseLr()),
                    out = ptr(l.getResult());
        os << begin
           << "  {\n    static const tgc::cuda::ScheduleParams schedule"
           << scheduleParams("tgc::cuda", l) << ";\n"
           << "    tgc::cuda::lr_schedule(schedule, " << step << ", " << base
           << ", " << out << ", stream);\n  }\n"
           << end;
        return success();
      })
      .Case([&](OptimizerUpdateOp u) -> LogicalResult {
        if (!launch.lanes.empty())
          return emitOptimizerLanes(launch);
        Value grad = u.getGrad();
        Value scale = u.getGradScale();
        if (failed(checkMasterWeights(u)))
          return failure();
        Type ge = elementType(grad);
        if (!ge.isF32() && !ge.isBF16())
          return u.emitError(kBackend)
                 << ": tg.optimizer_update takes an f32 or bf16 gradient, got "
                 << ge;
        StringRef kind = runtimeOptimizerKind(u.getKind());
        std::string param = ptr(u.getNewParam()), g = ptr(grad),
                    lr = ptr(u.getLr()), step = ptr(u.getStep()),
                    s = scale ? ptr(scale) : "nullptr";
        std::string states;
        for (auto [i, v] : llvm::enumerate(u.getNewState()))
          states += (i ? ", " : "") + ptr(v);
        if (scale)
          os << "  //   (gradient scaled by the clip factor inside the "
                "update)\n";
        os << begin << "  {\n    float *state[] = {"
           << (states.empty() ? "nullptr" : states)
           << "};\n    static const tgc::cuda::OptimizerHyper hyper"
           << optimizerHyper(u) << ";\n"
           << "    tgc::cuda::optimizer_update(tgc::cuda::OptimizerKind::"
           << kind << ", " << param << ", " << g << ", state, "
           << u.getState().size() << ", " << numel(u.getParam()) << ", " << lr
           << ", " << step << ", " << s << ", hyper, nullptr, "
           << workspace(llvm::formatv(
                            "tgc::cuda::optimizer_workspace_bytes(tgc::cuda::"
                            "OptimizerKind::{0}, {1})",
                            kind, numel(u.getParam()))
                            .str())
           << ", stream);\n  }\n"
           << end;
        return success();
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// tg-fuse's multi-tensor optimizer kernel: a table of lanes (pointers and
/// sizes, built on the host each step) and one runtime call, which packs
/// them into as few launches as the kernel parameters allow.
LogicalResult StepEmitter::emitOptimizerLanes(Launch &launch) {
  OptimizerUpdateOp first = launch.lanes.front();
  Type gradType = elementType(first.getGrad());
  std::vector<std::string> rows;
  for (OptimizerUpdateOp u : launch.lanes) {
    if (failed(checkMasterWeights(u)))
      return failure();
    if (elementType(u.getGrad()) != gradType ||
        (!gradType.isF32() && !gradType.isBF16()))
      return u.emitError(kBackend)
             << ": the updates of one optimizer kernel take f32 or bf16 "
                "gradients, all of one type";
    // Each lane's pointers as expressions: a table of every parameter's
    // would otherwise declare three pointers per parameter.
    Value scale = u.getGradScale();
    std::string state[2] = {"nullptr", "nullptr"};
    for (auto [i, v] : llvm::enumerate(u.getNewState()))
      state[i] = pointerExpr(v);
    std::string param = pointerExpr(u.getNewParam()),
                grad = pointerExpr(u.getGrad()),
                s = scale ? pointerExpr(scale) : "nullptr";
    rows.push_back(llvm::formatv("      {{{0}, {1}, {{{2}, {3}}, {4}, {5}},\n",
                                 param, grad, state[0], state[1],
                                 numel(u.getParam()), s)
                       .str());
    workspace(llvm::formatv("tgc::cuda::optimizer_workspace_bytes(tgc::cuda::"
                            "OptimizerKind::{0}, {1})",
                            runtimeOptimizerKind(u.getKind()),
                            numel(u.getParam()))
                  .str());
  }
  std::string lr = ptr(first.getLr()), step = ptr(first.getStep());
  os << timerBegin(launch) << "  {\n"
     << "    static const tgc::cuda::OptimizerHyper hyper"
     << optimizerHyper(first) << ";\n"
     << "    const tgc::cuda::OptimizerLane lanes[] = {\n";
  for (const std::string &row : rows)
    os << row;
  os << "    };\n    tgc::cuda::optimizer_update_lanes(tgc::cuda::"
        "OptimizerKind::"
     << runtimeOptimizerKind(first.getKind()) << ", lanes, " << rows.size()
     << ", " << (gradType.isBF16() ? "true" : "false") << ", " << lr << ", "
     << step << ", hyper, d.workspace, stream);\n  }\n"
     << timerEnd(launch);
  return success();
}
