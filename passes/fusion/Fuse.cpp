//===- Fuse.cpp - Group tg ops into kernels -----------------------*- C++ -*-===//
//
// tg-fuse walks a function's block once, in order, growing groups of ops that
// one kernel can compute, then replaces each group of two or more ops by a
// tg.kernel placed where its last op stood. Every rule that decides a group
// is in this file: elementwise chains (`--fusion=elementwise`), and with
// `--fusion=all` GEMM epilogues and reductions with their elementwise
// prologue and epilogue.
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
  KernelKind kind = KernelKind::elementwise;
  SmallVector<Operation *> ops;
  /// The iteration space: every op's result shape (elementwise); the shape
  /// an epilogue op must have (gemm, reduction).
  SmallVector<int64_t> space;
  /// gemm and reduction: the value an epilogue op extends (the matmul's or
  /// reduction's result, or the last epilogue op's), the kernel's result.
  Value tail;
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
    if (!g || g->kind != KernelKind::elementwise || g->closed ||
        ArrayRef<int64_t>(g->space) != space)
      continue;
    if (!best ||
        position.lookup(g->ops.back()) > position.lookup(best->ops.back()))
      best = g;
  }
  return best;
}

/// True when every reader of `v` is `op`: `v` may then live in a kernel's
/// registers between its producer and `op`.
bool onlyReadBy(Value v, Operation *op) {
  return llvm::all_of(v.getUsers(), [&](Operation *u) { return u == op; });
}

//===----------------------------------------------------------------------===//
// GEMM epilogue
//===----------------------------------------------------------------------===//

/// GEMM epilogues: every tg.matmul starts a `gemm` group; the elementwise
/// ops that then extend its result (epilogueGroupFor) join it, so the GEMM
/// writes into the kernel's result and the epilogue (bias, activation,
/// residual, scale) runs in place over it. A matmul nothing extends stays a
/// plain op. Any transposes and batch dims: the CPU backend's GEMM call
/// takes them all.
Group *startGemmGroup(MatmulOp matmul, std::deque<Group> &groups) {
  Group &g = groups.emplace_back();
  g.kind = KernelKind::gemm;
  g.ops.push_back(matmul);
  g.tail = matmul.getResult();
  llvm::append_range(g.space, shapeOf(g.tail));
  return &g;
}

//===----------------------------------------------------------------------===//
// Reduction with elementwise prologue
//===----------------------------------------------------------------------===//

/// Whether a reduction can be a kernel's: one loop nest (the reduced dims
/// adjacent once size-1 dims are left out) over floats. Rows (nothing kept
/// inside the reduced dims) of 8192 elements or more are left to the
/// runtime, which splits them over threads and adds the pieces' float
/// partial sums: one loop nest per row would round differently.
bool isFusibleReduction(Operation *op) {
  auto nest = KernelOp::getReductionNest(op);
  if (!nest)
    return false;
  auto [outer, reduced, inner] = *nest;
  (void)outer;
  if (inner == 1 && reduced >= 8192)
    return false;
  return isa<FloatType>(
      cast<RankedTensorType>(op->getOperand(0).getType()).getElementType());
}

/// Reductions with an elementwise prologue: when an elementwise group
/// computes the reduction's input, its ops whose values nothing but the
/// reduction and each other reads (now or later) move into a `reduction`
/// group with it: the kernel computes them as it reduces and never stores
/// them. The rest of the elementwise group stays a kernel of its own, which
/// the reduction kernel reads. Without such a prologue the reduction starts
/// a group alone. Either way epilogueGroupFor may then extend the reduced
/// result (a scale).
Group *reductionGroupFor(Operation *reduction,
                         DenseMap<Operation *, Group *> &groupOf,
                         std::deque<Group> &groups) {
  Group &r = groups.emplace_back();
  r.kind = KernelKind::reduction;
  Operation *def = reduction->getOperand(0).getDefiningOp();
  Group *g = def ? groupOf.lookup(def) : nullptr;
  if (g && g->kind == KernelKind::elementwise) {
    // Later ops first, so that an op's readers are decided before it.
    DenseSet<Operation *> prologue;
    for (Operation *member : llvm::reverse(g->ops))
      if (llvm::all_of(member->getUsers(), [&](Operation *u) {
            return u == reduction || prologue.contains(u);
          }))
        prologue.insert(member);
    if (prologue.contains(def)) {
      for (Operation *member : g->ops)
        if (prologue.contains(member)) {
          r.ops.push_back(member);
          groupOf[member] = &r;
        }
      llvm::erase_if(g->ops,
                     [&](Operation *op) { return prologue.contains(op); });
      // The prologue, now after it, reads what is left of it.
      g->closed = true;
    }
  }
  r.ops.push_back(reduction);
  r.tail = reduction->getResult(0);
  llvm::append_range(r.space, shapeOf(r.tail));
  return &r;
}

//===----------------------------------------------------------------------===//
// Classifier
//===----------------------------------------------------------------------===//

/// The classifier: a tg.cross_entropy starts a `classifier` group, and the
/// tg.cross_entropy_grad of the same logits and labels (same ignore_index
/// and reduction) joins it, unless something read the loss in between (the
/// kernel stands where the gradient stood). The backend then computes each
/// row's log-sum-exp once for the loss and its gradient.
Group *startClassifierGroup(CrossEntropyOp loss, std::deque<Group> &groups) {
  Group &g = groups.emplace_back();
  g.kind = KernelKind::classifier;
  g.ops.push_back(loss);
  return &g;
}

Group *classifierGroupFor(CrossEntropyGradOp grad,
                          const DenseMap<Operation *, Group *> &groupOf) {
  for (Operation *user : grad.getLogits().getUsers()) {
    auto loss = dyn_cast<CrossEntropyOp>(user);
    Group *g = loss ? groupOf.lookup(loss) : nullptr;
    if (g && g->kind == KernelKind::classifier && !g->closed &&
        g->ops.size() == 1 && loss.getLabels() == grad.getLabels() &&
        grad.getGrad().getDefiningOp() != loss &&
        loss.getIgnoreIndex() == grad.getIgnoreIndex() &&
        loss.getReductionAttr() == grad.getReductionAttr())
      return g;
  }
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Epilogues (of GEMMs and reductions)
//===----------------------------------------------------------------------===//

/// The gemm or reduction group whose result `op` extends, or null: `op` is
/// elementwise over that result's shape, and the result has no reader but
/// `op`, so nothing reads a value the kernel keeps in registers and nothing
/// expensive is recomputed. The epilogue is a chain: its last op's result is
/// the kernel's.
Group *epilogueGroupFor(Operation *op,
                        const DenseMap<Operation *, Group *> &groupOf) {
  if (!isElementwiseOp(op) || op->getNumResults() != 1)
    return nullptr;
  ArrayRef<int64_t> space = shapeOf(op->getResult(0));
  for (Value operand : op->getOperands()) {
    Operation *def = operand.getDefiningOp();
    Group *g = def ? groupOf.lookup(def) : nullptr;
    if (g && g->kind != KernelKind::elementwise && !g->closed &&
        g->tail == operand && ArrayRef<int64_t>(g->space) == space &&
        onlyReadBy(operand, op))
      return g;
  }
  return nullptr;
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
  auto kernel =
      KernelOp::create(b, last->getLoc(), ValueRange(outputs).getTypes(),
                       KernelKindAttr::get(b.getContext(), group.kind), inputs,
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
    // GEMM epilogues and reductions with prologues only with "all".
    bool allRules = fusion == "all";
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
      if (allRules) {
        if ((joined = epilogueGroupFor(&op, groupOf))) {
          joined->ops.push_back(&op);
          joined->tail = op.getResult(0);
        } else if (auto matmul = dyn_cast<MatmulOp>(op))
          joined = startGemmGroup(matmul, groups);
        else if (isFusibleReduction(&op))
          joined = reductionGroupFor(&op, groupOf, groups);
        else if (auto loss = dyn_cast<CrossEntropyOp>(op))
          joined = startClassifierGroup(loss, groups);
        else if (auto grad = dyn_cast<CrossEntropyGradOp>(op);
                 grad && (joined = classifierGroupFor(grad, groupOf)))
          joined->ops.push_back(&op);
        if (joined)
          groupOf[&op] = joined;
      }
      if (!joined && isElementwiseOp(&op) && op.getNumResults() == 1) {
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
      switch (g.kind) {
      case KernelKind::elementwise:
        ++numElementwiseKernels;
        break;
      case KernelKind::gemm:
        ++numGemmKernels;
        break;
      case KernelKind::reduction:
        ++numReductionKernels;
        break;
      case KernelKind::classifier:
        ++numClassifierKernels;
        break;
      }
      numFusedOps += g.ops.size();
      formKernel(g);
    }
  }
};

} // namespace
