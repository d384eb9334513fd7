//===- Fuse.cpp - Group tg ops into kernels -----------------------*- C++ -*-===//
//
// tg-fuse walks a function's block once, in order, growing groups of ops that
// one kernel can compute, then replaces each group of two or more ops by a
// tg.kernel placed where its last op stood. Every rule that decides a group
// is in this file.
//
//===----------------------------------------------------------------------===//

#include "passes/fusion/Passes.h"

#include "dialects/tg/IR/TgOps.h"

#include "mlir/IR/IRMapping.h"

#include <deque>

namespace mlir::tg {
#define GEN_PASS_DEF_FUSEPASS
#include "passes/fusion/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// Ops one kernel will compute, in program order.
struct Group {
  SmallVector<Operation *> ops;
  /// The iteration space: every op's result shape.
  SmallVector<int64_t> space;
  /// Set once an op outside the group has read one of its values: a later
  /// op joining it would put the kernel after that reader.
  bool closed = false;
};

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

//===----------------------------------------------------------------------===//
// The rules
//===----------------------------------------------------------------------===//

/// Elementwise chains: the group `op` joins, or null to start its own.
/// Among the open groups of its operands' producers with its iteration
/// space, the one that ends latest (so the kernel stays where the chain
/// ends).
Group *elementwiseGroupFor(Operation *op,
                           const DenseMap<Operation *, Group *> &groupOf,
                           const DenseMap<Operation *, unsigned> &position) {
  if (op->getNumResults() != 1)
    return nullptr;
  ArrayRef<int64_t> space = shapeOf(op->getResult(0));
  Group *best = nullptr;
  for (Value operand : op->getOperands()) {
    Operation *def = operand.getDefiningOp();
    Group *g = def ? groupOf.lookup(def) : nullptr;
    if (!g || g->closed || ArrayRef<int64_t>(g->space) != space)
      continue;
    if (!best ||
        position.lookup(g->ops.back()) > position.lookup(best->ops.back()))
      best = g;
  }
  return best;
}

//===----------------------------------------------------------------------===//
// Kernels from groups
//===----------------------------------------------------------------------===//

/// "fused_add_mul_relu" from the ops' names (at most six, then a count).
std::string kernelName(ArrayRef<Operation *> ops) {
  std::string name = "fused";
  for (auto [i, op] : llvm::enumerate(ops)) {
    if (i == 6) {
      name += "_and_" + std::to_string(ops.size() - 6) + "_more";
      break;
    }
    name += "_" + op->getName().stripDialect().str();
  }
  return name;
}

/// Replaces the group's ops by one tg.kernel after its last op.
void formKernel(const Group &group) {
  DenseSet<Operation *> members(group.ops.begin(), group.ops.end());
  SmallVector<Value> inputs, outputs;
  DenseSet<Value> seenInputs;
  for (Operation *op : group.ops) {
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      if ((!def || !members.contains(def)) && seenInputs.insert(v).second)
        inputs.push_back(v);
    }
    for (Value r : op->getResults())
      if (llvm::any_of(r.getUsers(),
                       [&](Operation *u) { return !members.contains(u); }))
        outputs.push_back(r);
  }

  Operation *last = group.ops.back();
  OpBuilder b(last->getContext());
  b.setInsertionPointAfter(last);
  auto kernel = KernelOp::create(
      b, last->getLoc(), ValueRange(outputs).getTypes(),
      KernelKindAttr::get(b.getContext(), KernelKind::elementwise), inputs,
      b.getStringAttr(kernelName(group.ops)));
  Block *body = b.createBlock(&kernel.getBody());
  IRMapping map;
  for (Value v : inputs)
    map.map(v, body->addArgument(v.getType(), v.getLoc()));
  b.setInsertionPointToStart(body);
  for (Operation *op : group.ops)
    b.clone(*op, map);
  SmallVector<Value> yielded;
  for (Value v : outputs)
    yielded.push_back(map.lookup(v));
  YieldOp::create(b, last->getLoc(), yielded);

  for (auto [v, r] : llvm::zip(outputs, kernel.getResults()))
    v.replaceUsesWithIf(r, [&](OpOperand &use) {
      return use.getOwner() != kernel &&
             !kernel->isProperAncestor(use.getOwner()) &&
             !members.contains(use.getOwner());
    });
  for (Operation *op : llvm::reverse(group.ops))
    op->erase();
}

struct FusePass : public tg::impl::FusePassBase<FusePass> {
  using FusePassBase::FusePassBase;

  void runOnOperation() override {
    if (fusion != "none" && fusion != "elementwise" && fusion != "all") {
      getOperation().emitError("tg-fuse: unknown fusion '")
          << fusion << "'; expected none, elementwise or all";
      return signalPassFailure();
    }
    if (fusion == "none")
      return;
    func::FuncOp func = getOperation();
    if (!func.getBody().hasOneBlock())
      return;
    Block &block = func.getBody().front();

    std::deque<Group> groups;
    DenseMap<Operation *, Group *> groupOf;
    DenseMap<Operation *, unsigned> position;
    unsigned index = 0;
    for (Operation &op : block.without_terminator()) {
      position[&op] = index++;
      Group *joined = nullptr;
      if (isElementwiseOp(&op) && op.getNumResults() == 1) {
        joined = elementwiseGroupFor(&op, groupOf, position);
        if (!joined) {
          groups.emplace_back();
          joined = &groups.back();
          llvm::append_range(joined->space, shapeOf(op.getResult(0)));
        }
        joined->ops.push_back(&op);
        groupOf[&op] = joined;
      }
      // Any other group this op reads from now has a reader outside it.
      for (Value v : op.getOperands())
        if (Operation *def = v.getDefiningOp())
          if (Group *g = groupOf.lookup(def); g && g != joined)
            g->closed = true;
    }
    for (Group &g : groups) {
      if (g.ops.size() < 2)
        continue;
      ++numKernels;
      numFusedOps += g.ops.size();
      formKernel(g);
    }
  }
};

} // namespace
