//===- Liveness.cpp - The buffers of a step function and their lives -----===//
//
// One pass over the block for positions, views and buffers, one over the
// uses for last reads, and a difference array for the bytes live at each
// op: linear in the number of ops and uses.
//
//===----------------------------------------------------------------------===//

#include "passes/memory/Liveness.h"

#include "dialects/tg/IR/TgOps.h"

using namespace mlir;
using namespace mlir::tg;

MemoryRules MemoryRules::of(func::FuncOp func) {
  MemoryRules rules;
  if (auto arena = func->getAttrOfType<ArenaAttr>(TgDialect::kArenaAttr))
    rules.alignment = arena.getAlignment();
  func.walk([&](AttentionOp op) {
    if (op->hasAttr(TgDialect::kScratchAttr))
      rules.attentionStatistics = true;
  });
  return rules;
}

/// A result of a top-level op that owns bytes nothing else will read after
/// `reader`: it may be overwritten there.
static bool onlyReadBy(Value v, Operation *reader) {
  auto r = dyn_cast<OpResult>(v);
  return r && v.hasOneUse() && *v.getUsers().begin() == reader &&
         !isa<ConstantOp>(r.getOwner()) &&
         r.getOwner()->getBlock() == reader->getBlock() && !viewedOperand(r);
}

/// The kernel input that block argument `v` of its body stands for.
static Value kernelInput(KernelOp kernel, Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != &kernel.getBody().front())
    return {};
  return kernel.getInputs()[arg.getArgNumber()];
}

static Value viewedByKernel(KernelOp kernel, unsigned resultNumber) {
  Value yielded = kernel.getYield().getValues()[resultNumber];
  auto inner = dyn_cast<OpResult>(yielded);
  if (!inner)
    return {};
  if (kernel.getKind() == KernelKind::classifier) {
    // The classifier reads each logits row before it writes its gradient.
    auto grad = dyn_cast<CrossEntropyGradOp>(inner.getOwner());
    Value logits = grad ? kernelInput(kernel, grad.getLogits()) : Value();
    if (logits && onlyReadBy(logits, kernel) &&
        logits.getType() == yielded.getType())
      return logits;
  }
  if (kernel.getKind() == KernelKind::optimizer)
    if (auto update = dyn_cast<OptimizerUpdateOp>(inner.getOwner()))
      return kernelInput(kernel, viewedOperand(inner));
  return {};
}

Value mlir::tg::viewedOperand(OpResult result) {
  Operation *op = result.getOwner();
  if (isa<ReshapeOp, FlattenOp>(op))
    return op->getOperand(0);
  // In place when nothing else reads the input.
  if (auto reduce = dyn_cast<AllReduceOp>(op)) {
    Value input = reduce.getInputs()[result.getResultNumber()];
    return onlyReadBy(input, op) ? input : Value();
  }
  // The new parameter and state overwrite the old ones.
  if (auto update = dyn_cast<OptimizerUpdateOp>(op)) {
    if (result.getResultNumber() == 0)
      return update.getParam();
    return update.getState()[result.getResultNumber() - 1];
  }
  if (auto kernel = dyn_cast<KernelOp>(op))
    return viewedByKernel(kernel, result.getResultNumber());
  return {};
}

Value mlir::tg::bucketSlot(Operation *allReduce, unsigned operand) {
  OpResult result = allReduce->getResult(operand);
  Value viewed = viewedOperand(result);
  return viewed ? viewed : result;
}

/// A buffer takes at least a byte (an empty tensor still has an address).
static int64_t bufferBytes(Value v) {
  return std::max<int64_t>(tensorBytes(v.getType()), 1);
}

Value StepLiveness::root(Value v) const {
  while (auto r = dyn_cast<OpResult>(v)) {
    if (slotOf.count(v))
      return v;
    Value viewed = viewedOperand(r);
    if (!viewed)
      return v;
    v = viewed;
  }
  return v;
}

StepLiveness StepLiveness::analyze(func::FuncOp func,
                                   const MemoryRules &rules) {
  StepLiveness live;
  live.rules = rules;
  Block &block = func.getBody().front();

  // Each all-reduce's operands side by side, in operand order: the slot of
  // each (its input when reduced in place) and its offset in the bucket.
  struct Member {
    Operation *allReduce;
    int64_t offset;
  };
  DenseMap<Value, Member> memberOf;
  DenseMap<Operation *, int64_t> bucketBytes;
  // tg.attention_grad -> the tg.attention whose output and statistics it
  // reads.
  DenseMap<Operation *, AttentionOp> forwardOf;
  for (Operation &op : block) {
    if (auto reduce = dyn_cast<AllReduceOp>(op)) {
      int64_t bytes = 0;
      for (unsigned i = 0; i < reduce.getInputs().size(); ++i) {
        memberOf[bucketSlot(reduce, i)] = {reduce, bytes};
        bytes += live.aligned(bufferBytes(reduce.getInputs()[i]));
      }
      bucketBytes[reduce] = bytes;
    }
    if (auto grad = dyn_cast<AttentionGradOp>(op);
        grad && rules.attentionStatistics)
      if (AttentionOp fwd = grad.getForward())
        forwardOf[grad] = fwd;
  }
  llvm::SmallPtrSet<Operation *, 8> keepsStatistics;
  for (auto [grad, fwd] : forwardOf)
    keepsStatistics.insert(fwd);

  DenseMap<Operation *, int64_t> position;
  auto take = [&](Value value, Operation *owner, int64_t bytes) {
    int64_t at = live.ops.size() - 1;
    live.buffers.push_back({value, owner, live.aligned(bytes), at, at});
    return (unsigned)live.buffers.size() - 1;
  };
  for (Operation &op : block) {
    // A tg.await takes no time: it reads its bucket at the position of the
    // op it precedes.
    position[&op] = live.ops.size();
    if (isa<AwaitOp>(op))
      continue;
    live.ops.push_back(&op);
    for (OpResult r : op.getResults()) {
      if (isa<ConstantOp>(op) || viewedOperand(r))
        continue;
      auto member = memberOf.find(r);
      if (member == memberOf.end()) {
        live.slotOf[r] = {take(r, &op, bufferBytes(r))};
        continue;
      }
      // The first gradient of a bucket takes the whole bucket.
      Operation *reduce = member->second.allReduce;
      auto [bucket, isNew] = live.bucketOf.try_emplace(reduce, 0);
      if (isNew)
        bucket->second = take({}, reduce, bucketBytes.lookup(reduce));
      live.slotOf[r] = {bucket->second, member->second.offset};
    }
    if (keepsStatistics.contains(&op))
      live.scratchOf[&op] =
          take({}, &op, cast<AttentionOp>(op).getStatisticsBytes());
  }

  // Last reads, through views: a use of a view is a use of its root. A
  // bucket's tg.await reads it: it is being reduced (on a backend's
  // communication stream) until the op after it.
  auto readAt = [&](unsigned buffer, int64_t at) {
    live.buffers[buffer].lastUse = std::max(live.buffers[buffer].lastUse, at);
  };
  for (Operation &each : block) {
    Operation *op = &each;
    int64_t at = position[op];
    for (Value v : op->getOperands()) {
      auto it = live.slotOf.find(live.root(v));
      if (it != live.slotOf.end())
        readAt(it->second.buffer, at);
    }
    // The gradient reads what its forward kept.
    if (AttentionOp fwd = forwardOf.lookup(op)) {
      readAt(live.scratchOf.lookup(fwd), at);
      if (auto out = live.slotOf.find(fwd.getResult());
          out != live.slotOf.end())
        readAt(out->second.buffer, at);
    }
  }

  SmallVector<int64_t> delta(live.ops.size() + 1, 0);
  for (const Buffer &b : live.buffers) {
    delta[b.def] += b.bytes;
    delta[b.lastUse + 1] -= b.bytes;
  }
  int64_t bytes = 0;
  for (size_t i = 0; i < live.ops.size(); ++i) {
    bytes += delta[i];
    live.liveBytes.push_back(bytes);
    live.liveBound = std::max(live.liveBound, bytes);
  }
  return live;
}
