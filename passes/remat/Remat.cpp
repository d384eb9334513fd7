//===- Remat.cpp - Recompute forward values in the backward -----*- C++ -*-===//
//
// One sweep over the forward's cheap ops in order, with op positions for the
// forward/backward split and for each value's last reader (a copy counts
// where it stands, so later candidates see the lives the earlier copies
// left).
//
//===----------------------------------------------------------------------===//

#include "passes/remat/Passes.h"

#include "dialects/tg/IR/TgOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::tg {
#define GEN_PASS_DEF_REMATPASS
#include "passes/remat/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// Cheap to compute again, one result, no randomness: elementwise ops and
/// tg.layer_norm (its statistics are recomputed with it).
bool isCheap(Operation *op) {
  return op->getNumResults() == 1 &&
         (isElementwiseOp(op) || isa<LayerNormOp>(op));
}

int64_t bytesOf(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  Type e = t.getElementType();
  return t.getNumElements() *
         (e.isInteger(1) ? 1 : e.getIntOrFloatBitWidth() / 8);
}

struct RematPass : public tg::impl::RematPassBase<RematPass> {
  using RematPassBase::RematPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (policy != "none" && policy != "selective") {
      func.emitError("tg-remat: unknown policy '")
          << policy << "'; expected none or selective";
      return signalPassFailure();
    }
    if (policy == "none" || !func.getBody().hasOneBlock())
      return;
    Block &block = func.getBody().front();
    DenseMap<Operation *, int64_t> position;
    for (Operation &op : block)
      position[&op] = position.size();

    // The forward pass ends at the last op a model output (tg.output) or the
    // loss (tg.metric "loss") comes from; a function without one has no
    // backward to serve.
    int64_t forwardEnd = -1;
    Operation *ret = block.getTerminator();
    for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
      auto metric =
          func.getResultAttrOfType<StringAttr>(i, TgDialect::kMetricAttr);
      if (func.getResultAttr(i, TgDialect::kOutputAttr) ||
          (metric && metric.getValue() == "loss"))
        if (Operation *def = v.getDefiningOp())
          forwardEnd = std::max(forwardEnd, position.lookup(def));
    }
    if (forwardEnd < 0)
      return;

    // The last position at which a value is read, by any op (a copy's
    // reads count where the copy will stand, so they are added as copies
    // are made).
    auto lastRead = [&](Value v) {
      int64_t last = -1;
      for (Operation *user : v.getUsers())
        if (Operation *top = block.findAncestorOpInBlock(*user))
          last = std::max(last, position.lookup(top));
      return last;
    };

    SmallVector<Operation *> forward;
    for (Operation &op : block)
      if (position.lookup(&op) <= forwardEnd && isCheap(&op))
        forward.push_back(&op);
    for (Operation *op : forward) {
      Value r = op->getResult(0);
      // Its readers in the backward pass, in order.
      SmallVector<OpOperand *> late;
      for (OpOperand &use : r.getUses()) {
        Operation *top = block.findAncestorOpInBlock(*use.getOwner());
        if (top && position.lookup(top) > forwardEnd)
          late.push_back(&use);
      }
      if (late.empty())
        continue;
      Operation *first = nullptr;
      for (OpOperand *use : late) {
        Operation *top = block.findAncestorOpInBlock(*use->getOwner());
        if (!first || position.lookup(top) < position.lookup(first))
          first = top;
      }
      // Recomputing must keep nothing else alive longer.
      int64_t at = position.lookup(first);
      bool free = llvm::all_of(op->getOperands(), [&](Value o) {
        return isa<BlockArgument>(o) || o.getDefiningOp<ConstantOp>() ||
               lastRead(o) >= at;
      });
      if (!free)
        continue;
      OpBuilder builder(first);
      Operation *copy = builder.clone(*op);
      position[copy] = at; // reads where `first` stands
      for (OpOperand *use : late)
        use->set(copy->getResult(0));
      ++numRecomputed;
      bytesFreed += bytesOf(r);
    }
  }
};

} // namespace
