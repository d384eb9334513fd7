//===- LaunchPlan.cpp - Which ops share a CUDA launch -----------*- C++ -*-===//
//
// The first stages of a step function's emission: tg-fuse's tg.kernel ops
// read as launches (a matmul with its cuBLASLt epilogue, the fused
// classifier, a generated elementwise kernel, an optimizer update that
// takes the clip factor), one bucket per tg.all_reduce, and the launches in
// op order with what each reads and writes. Also the step's model FLOPs and the
// traffic of its launches, for the generated file's header.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cuda/StepEmitter.h"

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::cuda_emit;

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

LogicalResult StepEmitter::checkTypes() {
  // Blame the first op that touches a value of a type the GPU lacks, or
  // the function's argument.
  auto check = [&](Value v, Operation *where) -> LogicalResult {
    std::string what = where->getName().getStringRef().str();
    if (auto arg = dyn_cast<BlockArgument>(v); arg && where == func)
      what = llvm::formatv("@{0}'s argument {1}", func.getName(),
                           arg.getArgNumber())
                 .str();
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t)
      return where->emitError(kBackend)
             << ": " << what << " has a value of type " << v.getType()
             << ", expected a ranked tensor";
    if (storageType(t.getElementType()).empty())
      return where->emitError(kBackend)
             << ": " << what << " has element type " << t.getElementType()
             << ", which the GPU backend does not support (f32, bf16, i32, "
                "i64 and i1 are)";
    return success();
  };
  WalkResult walk = func.walk([&](Operation *op) {
    if (op == func.getOperation())
      return WalkResult::advance();
    for (Value v : op->getOperands())
      if (failed(check(v, op)))
        return WalkResult::interrupt();
    for (Value r : op->getResults())
      if (failed(check(r, op)))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  for (BlockArgument arg : func.getArguments())
    if (failed(check(arg, func)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// tg-fuse's tg.kernel ops, read where they stand: each one's body ops and
/// the values it stores, and the value of the step each body value stands
/// for (flatOf), so that the launches are built over the body ops as if
/// they stood in the step's block, in the order of the step's pieces
/// (StepWalk.h). The IR is not changed.
LogicalResult StepEmitter::readKernels() {
  SmallVector<KernelOp> kernels;
  (void)walkStep(func, [&](Operation *op, StepPiece piece) {
    Piece p{op, piece};
    if (piece == StepPiece::Kernel) {
      p.kernel = kernels.size();
      kernels.push_back(cast<KernelOp>(op));
    }
    pieces.push_back(p);
    return success();
  });
  // A body's argument stands for the kernel's input; a kernel's result for
  // the value its body yields.
  for (KernelOp kernel : kernels) {
    Block &body = kernel.getBody().front();
    for (auto [arg, input] : llvm::zip(body.getArguments(), kernel.getInputs()))
      flatOf[arg] = input;
    for (auto [result, value] :
         llvm::zip(kernel.getResults(), kernel.getYield().getValues()))
      flatOf[result] = value;
  }
  for (KernelOp kernel : kernels) {
    FusedKernel fused;
    fused.kind = kernel.getKind();
    fused.epilogue = kernel.getEpilogue();
    for (Operation &op : kernel.getBody().front().without_terminator())
      fused.ops.push_back(&op);
    for (Value value : kernel.getYield().getValues())
      fused.outputs.push_back(flat(value));
    fusedKernels.push_back(std::move(fused));
  }
  // The plan of a kernel's result is its yielded value's.
  DenseMap<Value, int64_t> offsets;
  for (auto [v, offset] : offsetOf)
    offsets[flat(v)] = offset;
  offsetOf = std::move(offsets);
  DenseMap<Value, int64_t> slots;
  for (auto [v, slot] : slotOf)
    slots[flat(v)] = slot;
  slotOf = std::move(slots);
  DenseMap<Value, Value> views;
  for (auto [v, viewed] : alias)
    views[flat(v)] = flat(viewed);
  alias = std::move(views);
  return success();
}

/// A gemm kernel's launch: cuBLASLt with the epilogue tg-fuse named on the
/// kernel (#tg.epilogue; the dialect checked that the body is that one),
/// its operands read from the body by their places in it.
LogicalResult StepEmitter::gemmLaunch(FusedKernel &kernel) {
  auto mm = cast<MatmulOp>(kernel.ops.front());
  if (!kernel.epilogue) {
    std::string ops;
    for (Operation *op : ArrayRef(kernel.ops).drop_front())
      ops += (ops.empty() ? "" : ", ") + opLabel(op);
    return mm.emitError(kBackend)
           << ": a gemm kernel with no cuBLASLt epilogue named (#tg.epilogue; "
              "its epilogue is "
           << ops
           << "); tg-fuse's cuda target names one of bias, tanh GELU and its "
              "gradient on each gemm kernel it forms";
  }
  Launch launch;
  launch.kind = LaunchKind::Gemm;
  launch.matmul = mm;
  launch.covered = kernel.ops;
  Value c = mm.getResult();
  Operation *first = kernel.ops[1];
  auto biasOf = [&](Operation *op) {
    auto add = cast<AddOp>(op);
    return add.getLhs() == c ? add.getRhs() : add.getLhs();
  };
  switch (*kernel.epilogue) {
  case GemmEpilogue::bias:
    launch.epilogue = "Bias";
    launch.bias = flat(biasOf(first));
    break;
  case GemmEpilogue::gelu:
    launch.epilogue = "Gelu";
    launch.aux = c;
    break;
  case GemmEpilogue::bias_gelu:
    launch.epilogue = "BiasGelu";
    launch.bias = flat(biasOf(first));
    launch.aux = first->getResult(0);
    break;
  case GemmEpilogue::gelu_grad:
    launch.epilogue = "GeluGrad";
    launch.aux = flat(cast<GeluGradOp>(first).getX());
    break;
  }
  launch.out = kernel.ops.back()->getResult(0);
  launch.op = kernel.ops.back();
  kernel.launch = launch;
  return success();
}

LogicalResult StepEmitter::planFusion() {
  // The step's ops in order, a kernel's body ops where the kernel stands.
  for (const Piece &p : pieces) {
    if (p.piece == StepPiece::Kernel)
      llvm::append_range(ops, fusedKernels[p.kernel].ops);
    else
      ops.push_back(p.op);
  }
  for (auto [i, op] : llvm::enumerate(ops))
    opIndex[op] = i;

  for (FusedKernel &kernel : fusedKernels) {
    switch (kernel.kind) {
    case KernelKind::gemm:
      if (failed(gemmLaunch(kernel)))
        return failure();
      break;
    case KernelKind::classifier: {
      // cross_entropy + cross_entropy_grad in one read of the logits.
      auto ce = cast<CrossEntropyOp>(kernel.ops[0]);
      auto grad = cast<CrossEntropyGradOp>(kernel.ops[1]);
      Launch launch;
      launch.kind = LaunchKind::Classifier;
      launch.op = grad;
      launch.crossEntropy = ce;
      launch.crossEntropyGrad = grad;
      launch.covered = kernel.ops;
      kernel.launch = launch;
      break;
    }
    case KernelKind::optimizer: {
      // The updates of a multi-tensor kernel are one launch, at the last.
      Launch launch;
      for (Operation *op : kernel.ops)
        launch.lanes.push_back(cast<OptimizerUpdateOp>(op));
      if (launch.lanes.size() > 1) {
        launch.op = launch.lanes.back();
        launch.covered = kernel.ops;
        kernel.launch = launch;
      }
      break;
    }
    case KernelKind::elementwise:
      // One generated kernel computing every output at each index
      // (kernelLaunch).
      break;
    case KernelKind::reduction:
      return kernel.ops.front()->emitError(kBackend)
             << ": a reduction kernel; tg-fuse's cuda target forms none (the "
                "runtime reduces)";
    }
  }

  // tg.attention_grad reads the forward's output and log-sum-exp where
  // tg-plan-memory kept them for it.
  for (Operation *op : ops)
    if (auto grad = dyn_cast<AttentionGradOp>(op))
      if (AttentionOp fwd = grad.getForward(); fwd && scratchOffset.count(fwd))
        forwardOf[grad] = fwd;

  // Each tg.all_reduce (a bucket of tg-schedule's) is one message: its
  // inputs in tg-plan-memory's span, each reduced in place where the plan
  // computed it there.
  for (Operation *op : ops) {
    auto reduce = dyn_cast<AllReduceOp>(op);
    if (!reduce)
      continue;
    auto span = reduce->getAttrOfType<SpanAttr>(TgDialect::kBucketSpanAttr);
    if (!reduce.getBucket())
      return reduce.emitError(kBackend)
             << ": a tg.all_reduce without a bucket; run tg-schedule first";
    if (!span)
      return reduce.emitError(kBackend)
             << ": a tg.all_reduce without tg.bucket_span; run "
                "tg-plan-memory";
    Bucket b;
    b.op = reduce;
    b.offset = span.getOffset();
    b.bytes = span.getBytes();
    b.elementType = elementType(reduce.getInputs()[0]);
    for (auto [stepInput, result] :
         llvm::zip(reduce.getInputs(), reduce.getResults())) {
      Value input = flat(stepInput);
      if (elementType(input) != b.elementType)
        return reduce.emitError(kBackend)
               << ": a tg.all_reduce of " << b.elementType << " and "
               << elementType(input)
               << " tensors; one message holds one type (tg-schedule splits "
                  "them)";
      b.inPlace.push_back(alias.lookup(result) == input);
    }
    bucketOf[reduce] = buckets.size();
    buckets.push_back(std::move(b));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Schedule
//===----------------------------------------------------------------------===//

/// Ops whose result element i depends on operand elements at i only (with
/// numpy broadcasting), or, for tg.iota, on i alone: the generated kernels.
static bool isElementwise(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaximumOp, MinimumOp, CompareOp,
             SelectOp, NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp,
             ReluOp, SigmoidOp, SiluOp, GeluOp, GeluGradOp, CastOp,
             BroadcastToOp, SinOp, CosOp, IotaOp>(op);
}

/// The launch of a plain op: a generated kernel for an elementwise op, a
/// bucket for an all-reduce, a GEMM, else one runtime call.
Launch StepEmitter::opLaunch(Operation *op) {
  Launch launch;
  launch.op = op;
  launch.covered = {op};
  if (isElementwise(op)) {
    launch.kind = LaunchKind::Elementwise;
    launch.writes = {op->getResult(0)};
  } else if (auto reduce = dyn_cast<AllReduceOp>(op)) {
    launch.kind = LaunchKind::Bucket;
    launch.bucket = bucketOf.lookup(op);
    Bucket &b = buckets[launch.bucket];
    for (auto [i, own] : llvm::enumerate(b.inPlace))
      if (!own) {
        launch.reads.push_back(flat(reduce.getInputs()[i]));
        launch.writes.push_back(reduce.getResults()[i]);
      }
  } else if (auto mm = dyn_cast<MatmulOp>(op)) {
    launch.kind = LaunchKind::Gemm;
    launch.matmul = mm;
    launch.out = mm.getResult();
  }
  return launch;
}

/// The launch of one of tg-fuse's kernels: planFusion's (a GEMM with its
/// epilogue, the classifier, a multi-tensor update), else one generated
/// elementwise kernel, else the single update of an optimizer kernel.
Launch StepEmitter::kernelLaunch(const FusedKernel &kernel) {
  if (kernel.launch)
    return *kernel.launch;
  if (kernel.kind == KernelKind::elementwise) {
    Launch launch;
    launch.kind = LaunchKind::Elementwise;
    launch.op = kernel.ops.back();
    launch.covered = kernel.ops;
    launch.writes = kernel.outputs;
    return launch;
  }
  return opLaunch(kernel.ops.back());
}

LogicalResult StepEmitter::buildLaunches() {
  // StepWalk's pieces, in schedule order.
  for (const Piece &p : pieces) {
    switch (p.piece) {
    case StepPiece::Constant:
    case StepPiece::View:
      break;
    case StepPiece::Kernel:
      launches.push_back(kernelLaunch(fusedKernels[p.kernel]));
      break;
    case StepPiece::Collective:
    case StepPiece::Op:
      launches.push_back(opLaunch(p.op));
      break;
    case StepPiece::Await: {
      Launch l;
      l.kind = LaunchKind::AllReduceWait;
      l.op = cast<AwaitOp>(p.op).getBucketOp();
      l.bucket = bucketOf.lookup(l.op);
      launches.push_back(std::move(l));
      break;
    }
    case StepPiece::Layer: {
      Launch l;
      l.kind = LaunchKind::Call;
      l.op = p.op;
      l.covered = {p.op};
      l.call = cast<func::CallOp>(p.op);
      l.body = state.bodies.lookup(l.call.getCallee());
      if (!l.body)
        return l.call.emitError(kBackend)
               << ": @" << l.call.getCallee()
               << " is no layer body of this module (tg.layer_body)";
      launches.push_back(std::move(l));
      break;
    }
    }
  }

  // Reads and writes.
  for (Launch &l : launches) {
    llvm::SmallPtrSet<Operation *, 8> inside(l.covered.begin(),
                                             l.covered.end());
    auto addRead = [&](Value v) {
      v = flat(v);
      if (!llvm::is_contained(l.reads, v))
        l.reads.push_back(v);
    };
    switch (l.kind) {
    case LaunchKind::Elementwise:
      for (Operation *op : l.covered)
        for (Value operand : op->getOperands()) {
          operand = flat(operand);
          Operation *def = operand.getDefiningOp();
          if (def && inside.contains(def))
            continue;
          if (literalValue(operand))
            continue; // a literal in the kernel
          addRead(operand);
        }
      break;
    case LaunchKind::Gemm:
      addRead(l.matmul.getLhs());
      addRead(l.matmul.getRhs());
      if (l.bias)
        addRead(l.bias);
      if (l.epilogue == "GeluGrad")
        addRead(l.aux);
      else if (l.aux)
        l.writes.push_back(l.aux);
      l.writes.push_back(l.out);
      break;
    case LaunchKind::Classifier:
      addRead(l.crossEntropy.getLogits());
      addRead(l.crossEntropy.getLabels());
      if (!isLiteralOne(flat(l.crossEntropyGrad.getGrad())))
        addRead(l.crossEntropyGrad.getGrad());
      l.writes.push_back(l.crossEntropy.getResult());
      l.writes.push_back(l.crossEntropyGrad.getResult());
      break;
    case LaunchKind::AllReduceWait:
      break;
    case LaunchKind::Call:
      for (Value operand : l.call.getOperands())
        addRead(operand);
      llvm::append_range(l.writes, l.call.getResults());
      break;
    case LaunchKind::Op: {
      for (OptimizerUpdateOp lane : l.lanes) {
        for (Value operand : lane->getOperands())
          addRead(operand);
        if (lane != l.op)
          llvm::append_range(l.writes, lane->getResults());
      }
      for (Value operand : l.op->getOperands())
        addRead(operand);
      if (auto grad = dyn_cast<AttentionGradOp>(l.op))
        if (AttentionOp fwd = forwardOf.lookup(grad))
          addRead(fwd.getResult());
      for (Value r : l.op->getResults())
        l.writes.push_back(r);
      break;
    }
    default:
      break;
    }
  }
  // Constants read through memory (by a launch, or copied out as a
  // result): tg-place-constants placed them.
  SmallVector<Value> fromMemory(
      func.getBody().front().getTerminator()->getOperands());
  for (Launch &l : launches)
    llvm::append_range(fromMemory, l.reads);
  for (Value v : fromMemory)
    if (auto constant = root(flat(v)).getDefiningOp<ConstantOp>();
        constant && !constantOffsetOf(constant))
      return constant.emitError(kBackend)
             << ": this constant is read from memory, but it has no place "
                "in the constants section (tg.constant_offset; run "
                "tg-place-constants, as tgc's layers phase does)";
  return success();
}

//===----------------------------------------------------------------------===//
// FLOPs
//===----------------------------------------------------------------------===//

void StepEmitter::countFlops() {
  double &matmuls = matmulFlopCount, &attention = attentionFlopCount;
  for (Operation *op : ops) {
    if (auto mm = dyn_cast<MatmulOp>(op)) {
      matmuls += matmulFlops(mm);
      ++numMatmuls;
    } else if (isa<AttentionOp, AttentionGradOp>(op)) {
      attention += attentionFlops(op);
      ++numAttention;
    } else if (auto call = dyn_cast<func::CallOp>(op)) {
      // A layer body's (emitted before its callers), once per call.
      const StepEmitter *body = state.bodies.lookup(call.getCallee());
      matmuls += body->matmulFlopCount;
      numMatmuls += body->numMatmuls;
      attention += body->attentionFlopCount;
      numAttention += body->numAttention;
    }
  }
  totalFlops = matmuls + attention;
  flopsComment = llvm::formatv(
      "//   {0} tg.matmul: 2*M*N*K each (batch dims included) = {1:e4}\n"
      "//   {2} tg.attention / tg.attention_grad: 4*B*H*T*S*D forward, twice "
      "that\n//     backward, halved when causal = {3:e4}\n",
      numMatmuls, matmuls, numAttention, attention);
}

/// What the step's launches move: the tensors each launch other than a
/// GEMM or a collective reads and writes, once per launch (a lower bound on
/// its memory traffic: a launcher may read a tensor twice). Intermediates a
/// launch keeps in registers are not counted, which is what fusion saves.
void StepEmitter::countTraffic() {
  for (Launch &l : launches) {
    switch (l.kind) {
    case LaunchKind::Gemm:
      ++gemmLaunches;
      continue;
    case LaunchKind::Bucket:
    case LaunchKind::AllReduceWait:
    case LaunchKind::Return:
      continue;
    case LaunchKind::Call:
      // Its body's launches (emitted before its callers).
      gemmLaunches += l.body->gemmLaunches;
      otherLaunches += l.body->otherLaunches;
      otherReadBytes += l.body->otherReadBytes;
      otherWrittenBytes += l.body->otherWrittenBytes;
      continue;
    case LaunchKind::Op:
      if (isa<MatmulOp>(l.op)) {
        ++gemmLaunches;
        continue;
      }
      break;
    default:
      break;
    }
    ++otherLaunches;
    llvm::SmallPtrSet<void *, 8> seen;
    for (Value v : l.reads)
      if (seen.insert(root(v).getAsOpaquePointer()).second)
        otherReadBytes += bytesOf(v);
    for (Value v : l.writes)
      otherWrittenBytes += bytesOf(v);
  }
  trafficComment = llvm::formatv(
      "//   {0} GEMM launches, {1} other kernel launches, {2} all-reduce "
      "buckets;\n//   the other kernels read {3:e4} and write {4:e4} bytes "
      "(each\n//   tensor once per launch)\n",
      gemmLaunches, otherLaunches, buckets.size(), otherReadBytes,
      otherWrittenBytes);
}
