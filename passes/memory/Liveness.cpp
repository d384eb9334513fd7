//===- Liveness.cpp - The buffers of a step function and their lives -----===//
//
// One pass over the block for positions and views, one over the uses for
// last reads, and a difference array for the bytes live at each op: linear
// in the number of ops and uses.
//
//===----------------------------------------------------------------------===//

#include "passes/memory/Liveness.h"

#include "dialects/tg/IR/TgOps.h"

using namespace mlir;
using namespace mlir::tg;

Value mlir::tg::viewedOperand(OpResult result) {
  Operation *op = result.getOwner();
  if (isa<ReshapeOp, FlattenOp>(op))
    return op->getOperand(0);
  // In place when nothing else reads the input.
  if (auto reduce = dyn_cast<AllReduceOp>(op)) {
    Value input = reduce.getInputs()[result.getResultNumber()];
    return input.hasOneUse() ? input : Value();
  }
  // The new parameter and state overwrite the old ones.
  if (auto update = dyn_cast<OptimizerUpdateOp>(op)) {
    if (result.getResultNumber() == 0)
      return update.getParam();
    return update.getState()[result.getResultNumber() - 1];
  }
  return {};
}

static int64_t alignedBytes(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  Type elem = t.getElementType();
  int64_t size = elem.isInteger(1) ? 1 : (elem.getIntOrFloatBitWidth() + 7) / 8;
  int64_t bytes = std::max<int64_t>(t.getNumElements() * size, 1);
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

Value StepLiveness::root(Value v) const {
  while (auto r = dyn_cast<OpResult>(v)) {
    if (bufferOf.count(v))
      return v;
    Value viewed = viewedOperand(r);
    if (!viewed)
      return v;
    v = viewed;
  }
  return v;
}

StepLiveness StepLiveness::analyze(func::FuncOp func) {
  StepLiveness live;
  Block &block = func.getBody().front();
  DenseMap<Operation *, int64_t> position;
  for (Operation &op : block) {
    position[&op] = live.ops.size();
    live.ops.push_back(&op);
    for (OpResult r : op.getResults()) {
      if (isa<ConstantOp>(op) || viewedOperand(r))
        continue;
      live.bufferOf[r] = live.buffers.size();
      int64_t at = live.ops.size() - 1;
      live.buffers.push_back({r, alignedBytes(r), at, at});
    }
  }
  // Last reads, through views: a use of a view is a use of its root.
  for (Operation *op : live.ops) {
    int64_t at = position[op];
    for (Value v : op->getOperands()) {
      auto it = live.bufferOf.find(live.root(v));
      if (it != live.bufferOf.end())
        live.buffers[it->second].lastUse =
            std::max(live.buffers[it->second].lastUse, at);
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
