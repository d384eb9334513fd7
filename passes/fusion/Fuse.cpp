//===- Fuse.cpp - Group tg ops into kernels -----------------------*- C++
//-*-===//
//
// tg-fuse walks a function's block once, in order, growing groups of ops that
// one kernel can compute, then replaces each group of two or more ops by a
// tg.kernel placed where its last op stood. Every rule that decides a group
// is in this file: elementwise chains (`--fusion=elementwise`), and with
// `--fusion=all` GEMM epilogues, reductions with their elementwise prologue
// and epilogue, the classifier, multi-tensor optimizer updates and the
// gradient scale each update folds in.
// Which of them apply, and how far, is the target's: what its backend can
// print (TargetRules).
//
//===----------------------------------------------------------------------===//

#include "passes/fusion/Passes.h"

#include "dialects/tg/IR/TgOps.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringSwitch.h"

#include <deque>

namespace mlir::tg {
#define GEN_PASS_DEF_FUSEPASS
#include "passes/fusion/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// What a target's backend prints, and so which rules apply.
struct TargetRules {
  /// Elementwise kernels read operands at remapped indices: transposes,
  /// slices, their gradients, concatenations and views join them, and a
  /// tg.iota joins at any shape (CUDA's generated kernels).
  bool dataMovement = false;
  /// Reductions with an elementwise prologue and epilogue (the C++
  /// backend's loop nests).
  bool reductions = true;
  /// GEMM epilogues: any elementwise chain over the result (false: only
  /// those cuBLASLt applies: bias, tanh GELU, bias then tanh GELU with the
  /// pre-activation stored as well, and the tanh GELU gradient).
  bool anyGemmEpilogue = true;
  /// A scale multiply of the gradient becomes its tg.optimizer_update's
  /// grad_scale.
  bool optimizerScale = false;
  /// Consecutive updates of one kind, hyperparameters, learning rate and
  /// step form one multi-tensor kernel (one launch for many parameters).
  bool multiTensorOptimizer = false;

  static TargetRules forTarget(FusionTarget target) {
    TargetRules rules;
    if (target == FusionTarget::Cuda) {
      rules.dataMovement = true;
      rules.reductions = false;
      rules.anyGemmEpilogue = false;
      rules.optimizerScale = true;
      rules.multiTensorOptimizer = true;
    }
    return rules;
  }
};

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
  /// The kernel stands where its first op stood (every op's operands are
  /// defined before it), not where its last did.
  bool atFirst = false;
  /// Values the kernel stores though only its own ops read them: the
  /// pre-activation that cuBLASLt's GELU epilogue writes beside its result.
  SmallVector<Value> stored;
};

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

//===----------------------------------------------------------------------===//
// The rules
//===----------------------------------------------------------------------===//

/// Views: no work, their result is their operand's bytes.
bool isView(Operation *op) { return isa<ReshapeOp, FlattenOp>(op); }

/// The ops an elementwise kernel of the target may hold.
bool isLoopOp(Operation *op, const TargetRules &rules) {
  if (isElementwiseOp(op))
    return op->getNumResults() == 1;
  return rules.dataMovement && (isDataMovementOp(op) || isa<IotaOp>(op));
}

/// True when every reader of `v` is `op`: `v` may then live in a kernel's
/// registers between its producer and `op`.
bool onlyReadBy(Value v, Operation *op) {
  return llvm::all_of(v.getUsers(), [&](Operation *u) { return u == op; });
}

/// The position of each top-level op, to keep a group's ops in program
/// order.
using Positions = DenseMap<Operation *, unsigned>;

/// Moves `from`'s ops into `into`, in program order, and empties `from`.
void merge(Group &into, Group &from, DenseMap<Operation *, Group *> &groupOf,
           const Positions &position) {
  for (Operation *op : from.ops)
    groupOf[op] = &into;
  llvm::append_range(into.ops, from.ops);
  llvm::sort(into.ops, [&](Operation *a, Operation *b) {
    return position.lookup(a) < position.lookup(b);
  });
  from.ops.clear();
}

/// True when no op but `op` and the group's own reads the group's values.
bool onlyFeeds(const Group &g, Operation *op,
               const DenseMap<Operation *, Group *> &groupOf) {
  return llvm::all_of(g.ops, [&](Operation *member) {
    return llvm::all_of(member->getUsers(), [&](Operation *u) {
      return u == op || groupOf.lookup(u) == &g;
    });
  });
}

/// Elementwise chains: the group `op` joins, or null to start its own.
/// An elementwise op joins every open group among its operands' producers
/// that iterates over its result shape (smaller operands broadcast into
/// the loop); several such groups merge into one kernel standing where
/// `op` stands, which their values may reach since nothing outside has
/// read them yet. With the target's data movement, a transpose, slice,
/// concat or view joins the groups whose values only it reads, and the
/// kernel then iterates over its result, computing them at remapped
/// indices.
Group *elementwiseGroupFor(Operation *op,
                           DenseMap<Operation *, Group *> &groupOf,
                           const Positions &position) {
  bool remaps = !isElementwiseOp(op);
  ArrayRef<int64_t> space = shapeOf(op->getResult(0));
  SmallVector<Group *> candidates;
  for (Value operand : op->getOperands()) {
    Operation *def = operand.getDefiningOp();
    Group *g = def ? groupOf.lookup(def) : nullptr;
    if (!g || g->kind != KernelKind::elementwise || g->closed ||
        llvm::is_contained(candidates, g))
      continue;
    if (remaps ? !onlyFeeds(*g, op, groupOf)
               : ArrayRef<int64_t>(g->space) != space)
      continue;
    candidates.push_back(g);
  }
  if (candidates.empty())
    return nullptr;
  // Into the one that ends latest.
  Group *into = *llvm::max_element(candidates, [&](Group *a, Group *b) {
    return position.lookup(a->ops.back()) < position.lookup(b->ops.back());
  });
  for (Group *g : candidates)
    if (g != into)
      merge(*into, *g, groupOf, position);
  if (remaps)
    into->space.assign(space.begin(), space.end());
  return into;
}

/// With the target's data movement, a tg.iota that only `op` reads joins
/// `op`'s kernel at any shape: computing its value at a broadcast index
/// costs less than loading it.
void pullInIotas(Operation *op, Group &into,
                 DenseMap<Operation *, Group *> &groupOf,
                 const Positions &position) {
  for (Value operand : op->getOperands()) {
    auto iota = operand.getDefiningOp<IotaOp>();
    Group *g = iota ? groupOf.lookup(iota) : nullptr;
    if (g && g != &into && g->ops.size() == 1 && onlyReadBy(operand, op))
      merge(into, *g, groupOf, position);
  }
}

//===----------------------------------------------------------------------===//
// GEMM epilogue
//===----------------------------------------------------------------------===//

/// GEMM epilogues: every tg.matmul starts a `gemm` group; the elementwise
/// ops that then extend its result (epilogueGroupFor) join it, so the GEMM
/// writes into the kernel's result and the epilogue (bias, activation,
/// residual, scale) runs in place over it. A matmul nothing extends stays a
/// plain op. Any transposes and batch dims: the backends' GEMM calls take
/// them all.
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
/// and reduction) joins it. The kernel stands where the gradient stood,
/// unless something read the loss in between; then where the loss stood,
/// when the gradient's seed is known before the loss (a constant, an
/// argument: a scaled loss's seed). The backend then computes each row's
/// log-sum-exp once for the loss and its gradient.
Group *startClassifierGroup(CrossEntropyOp loss, std::deque<Group> &groups) {
  Group &g = groups.emplace_back();
  g.kind = KernelKind::classifier;
  g.ops.push_back(loss);
  return &g;
}

Group *classifierGroupFor(CrossEntropyGradOp grad,
                          const DenseMap<Operation *, Group *> &groupOf,
                          const Positions &position) {
  for (Operation *user : grad.getLogits().getUsers()) {
    auto loss = dyn_cast<CrossEntropyOp>(user);
    Group *g = loss ? groupOf.lookup(loss) : nullptr;
    if (!g || g->kind != KernelKind::classifier || g->ops.size() != 1 ||
        loss.getLabels() != grad.getLabels() ||
        grad.getGrad().getDefiningOp() == loss ||
        loss.getIgnoreIndex() != grad.getIgnoreIndex() ||
        loss.getReductionAttr() != grad.getReductionAttr())
      continue;
    if (!g->closed)
      return g;
    Operation *seed = grad.getGrad().getDefiningOp();
    if (!seed || position.lookup(seed) < position.lookup(loss)) {
      g->atFirst = true;
      return g;
    }
  }
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Epilogues (of GEMMs and reductions)
//===----------------------------------------------------------------------===//

/// The epilogues cuBLASLt applies (CUBLASLT_EPILOGUE_BIAS, _GELU_AUX,
/// _GELU_AUX_BIAS, _DGELU), of which `op` would extend `g`'s: a bias add
/// (a vector over the last dim) or a tanh GELU of the matmul's result, the
/// tanh GELU gradient of a gradient the matmul computes, or a tanh GELU
/// after the bias add. The last one stores the pre-activation as well (the
/// backward reads it), so its other readers are no reason to stop.
bool extendsCublasLtEpilogue(const Group &g, Operation *op, Value tail) {
  if (g.ops.size() == 2 && isa<AddOp>(g.ops[1]))
    return KernelOp::isTanhGelu(op, tail);
  if (g.ops.size() != 1 || !onlyReadBy(tail, op))
    return false;
  return KernelOp::isBiasAdd(op, tail) || KernelOp::isTanhGelu(op, tail) ||
         KernelOp::isTanhGeluGrad(op, tail);
}

/// The gemm or reduction group whose result `op` extends, or null: `op` is
/// elementwise over that result's shape, and the result has no reader but
/// `op`, so nothing reads a value the kernel keeps in registers and nothing
/// expensive is recomputed (on a target that takes only cuBLASLt's
/// epilogues, extendsCublasLtEpilogue decides for GEMMs). The epilogue is
/// a chain: its last op's result is the kernel's.
Group *epilogueGroupFor(Operation *op,
                        const DenseMap<Operation *, Group *> &groupOf,
                        const TargetRules &rules) {
  if (!isElementwiseOp(op) || op->getNumResults() != 1)
    return nullptr;
  ArrayRef<int64_t> space = shapeOf(op->getResult(0));
  for (Value operand : op->getOperands()) {
    Operation *def = operand.getDefiningOp();
    Group *g = def ? groupOf.lookup(def) : nullptr;
    if (!g || g->kind == KernelKind::elementwise ||
        g->kind == KernelKind::classifier ||
        g->kind == KernelKind::optimizer || g->closed || g->tail != operand ||
        ArrayRef<int64_t>(g->space) != space)
      continue;
    bool extends = g->kind == KernelKind::gemm && !rules.anyGemmEpilogue
                       ? extendsCublasLtEpilogue(*g, op, operand)
                       : onlyReadBy(operand, op);
    if (extends)
      return g;
  }
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Optimizer update
//===----------------------------------------------------------------------===//

/// Folds a gradient's scale into its update: a tg.mul of the gradient by
/// an f32 scalar (the clip factor, 1 / micro-batches) that only a
/// tg.optimizer_update reads, as its gradient, becomes the update's
/// grad_scale. The update scales each element as it reads it, and the
/// scaled gradient is never stored. The scale is the multiply's right
/// operand where both are scalars.
bool foldGradientScale(OptimizerUpdateOp update) {
  auto mul = update.getGrad().getDefiningOp<MulOp>();
  if (update.getGradScale() || !mul || !mul.getResult().hasOneUse())
    return false;
  for (Value scale : {mul.getRhs(), mul.getLhs()}) {
    auto t = cast<RankedTensorType>(scale.getType());
    Value grad = scale == mul.getRhs() ? mul.getLhs() : mul.getRhs();
    if (t.getRank() != 0 || !t.getElementType().isF32() ||
        grad.getType() != mul.getType())
      continue;
    update.getGradMutable().assign(grad);
    update.getGradScaleMutable().assign(scale);
    mul.erase();
    return true;
  }
  return false;
}

/// The update of an optimizer group that decides what may join it: its
/// first.
OptimizerUpdateOp firstUpdate(const Group &g) {
  for (Operation *op : g.ops)
    if (auto update = dyn_cast<OptimizerUpdateOp>(op))
      return update;
  return {};
}

/// Whether `update` may be a lane of the multi-tensor group `lanes`: one
/// launch applies one kind, hyperparameters, learning rate and step, to
/// gradients of one element type.
bool isLaneOf(OptimizerUpdateOp update, const Group &lanes) {
  OptimizerUpdateOp first = firstUpdate(lanes);
  return first && !lanes.closed && update.sharesLaunchWith(first) &&
         cast<RankedTensorType>(update.getGrad().getType()).getElementType() ==
             cast<RankedTensorType>(first.getGrad().getType()).getElementType();
}

/// Adds `update` as a lane of a multi-tensor group of `open` it may join
/// (decay and no decay make two), else starts a new one from it; returns
/// the update's group.
Group *addLane(OptimizerUpdateOp update, SmallVectorImpl<Group *> &open,
               std::deque<Group> &groups) {
  for (Group *lanes : open)
    if (isLaneOf(update, *lanes)) {
      lanes->ops.push_back(update);
      return lanes;
    }
  Group &own = groups.emplace_back();
  own.kind = KernelKind::optimizer;
  own.ops.push_back(update);
  open.push_back(&own);
  return &own;
}

//===----------------------------------------------------------------------===//
// Kernels from groups
//===----------------------------------------------------------------------===//

/// "fused_add_mul_relu" from the ops' names (at most six, then a count);
/// "multi_tensor_adamw_18" for an optimizer kernel of several updates.
std::string kernelName(const Group &group) {
  ArrayRef<Operation *> ops = group.ops;
  if (group.kind == KernelKind::optimizer) {
    auto updates = llvm::count_if(
        ops, [](Operation *op) { return isa<OptimizerUpdateOp>(op); });
    if (updates > 1)
      return "multi_tensor_" +
             stringifyEnum(firstUpdate(group).getKind()).str() + "_" +
             std::to_string(updates);
  }
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
/// The kernel of `group`, where it stands. A gemm kernel on a target that
/// runs GEMMs in cuBLASLt (`libraryEpilogues`) names the epilogue its
/// body is, which the backend then runs.
void formKernel(const Group &group, bool libraryEpilogues) {
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
      if (llvm::is_contained(group.stored, r) ||
          llvm::any_of(r.getUsers(),
                       [&](Operation *u) { return !members.contains(u); }))
        outputs.push_back(r);
  }

  Operation *last = group.ops.back();
  OpBuilder b(last->getContext());
  b.setInsertionPointAfter(group.atFirst ? group.ops.front() : last);
  auto kernel =
      KernelOp::create(b, last->getLoc(), ValueRange(outputs).getTypes(),
                       KernelKindAttr::get(b.getContext(), group.kind), inputs,
                       GemmEpilogueAttr(), b.getStringAttr(kernelName(group)));
  setLayer(kernel, layerOf(last));
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
  if (group.kind == KernelKind::gemm && libraryEpilogues)
    if (std::optional<GemmEpilogue> epilogue = KernelOp::matchEpilogue(*body))
      kernel.setEpilogueAttr(GemmEpilogueAttr::get(b.getContext(), *epilogue));

  for (auto [v, r] : llvm::zip(outputs, kernel.getResults()))
    v.replaceUsesWithIf(r, [&](OpOperand &use) {
      return use.getOwner() != kernel &&
             !kernel->isProperAncestor(use.getOwner()) &&
             !members.contains(use.getOwner());
    });
  for (Operation *op : llvm::reverse(group.ops))
    op->erase();
}

} // namespace

FusionStats mlir::tg::fuseKernels(func::FuncOp func, FusionRules fusion,
                                  FusionTarget target) {
  FusionStats stats;
  TargetRules rules = TargetRules::forTarget(target);
  if (fusion == FusionRules::None)
    return stats;
  // GEMM epilogues, reductions with prologues, the classifier and the
  // optimizer update only with "all".
  bool allRules = fusion == FusionRules::All;
  if (!func.getBody().hasOneBlock())
    return stats;
  Block &block = func.getBody().front();
  if (allRules && rules.optimizerScale)
    for (auto update :
         llvm::make_early_inc_range(block.getOps<OptimizerUpdateOp>()))
      stats.gradientScales += foldGradientScale(update);

  std::deque<Group> groups;
  DenseMap<Operation *, Group *> groupOf;
  // The multi-tensor optimizer groups updates may still join.
  SmallVector<Group *> lanes;
  Positions position;
  unsigned index = 0;
  for (Operation &op : block.without_terminator()) {
    position[&op] = index++;
    Group *joined = nullptr;
    if (allRules) {
      if ((joined = epilogueGroupFor(&op, groupOf, rules))) {
        joined->ops.push_back(&op);
        joined->tail = op.getResult(0);
        if (joined->kind == KernelKind::gemm && !rules.anyGemmEpilogue &&
            isa<GeluOp>(op))
          joined->stored.push_back(op.getOperand(0));
      } else if (auto matmul = dyn_cast<MatmulOp>(op))
        joined = startGemmGroup(matmul, groups);
      else if (rules.reductions && isFusibleReduction(&op))
        joined = reductionGroupFor(&op, groupOf, groups);
      else if (auto loss = dyn_cast<CrossEntropyOp>(op))
        joined = startClassifierGroup(loss, groups);
      else if (auto grad = dyn_cast<CrossEntropyGradOp>(op);
               grad && (joined = classifierGroupFor(grad, groupOf, position)))
        joined->ops.push_back(&op);
      else if (auto update = dyn_cast<OptimizerUpdateOp>(op);
               update && rules.multiTensorOptimizer)
        joined = addLane(update, lanes, groups);
      if (joined)
        groupOf[&op] = joined;
    }
    if (!joined && isLoopOp(&op, rules)) {
      joined = elementwiseGroupFor(&op, groupOf, position);
      if (!joined) {
        groups.emplace_back();
        joined = &groups.back();
        llvm::append_range(joined->space, shapeOf(op.getResult(0)));
      }
      joined->ops.push_back(&op);
      groupOf[&op] = joined;
      if (rules.dataMovement)
        pullInIotas(&op, *joined, groupOf, position);
    }
    // Any other group this op reads from now has a reader outside it.
    for (Value v : op.getOperands())
      if (Operation *def = v.getDefiningOp())
        if (Group *g = groupOf.lookup(def); g && g != joined)
          g->closed = true;
  }
  for (Group &g : groups) {
    // A view costs nothing alone; a lone op, or a lone data movement op
    // with views (the runtime's tiled transpose), is no kernel.
    if (llvm::count_if(g.ops, [](Operation *op) { return !isView(op); }) < 2)
      continue;
    ++stats.kernels;
    switch (g.kind) {
    case KernelKind::elementwise:
      ++stats.elementwise;
      break;
    case KernelKind::gemm:
      ++stats.gemm;
      break;
    case KernelKind::reduction:
      ++stats.reduction;
      break;
    case KernelKind::classifier:
      ++stats.classifier;
      break;
    case KernelKind::optimizer:
      ++stats.optimizer;
      break;
    }
    stats.fusedOps += g.ops.size();
    formKernel(g, !rules.anyGemmEpilogue);
  }
  return stats;
}

namespace {

struct FusePass : public tg::impl::FusePassBase<FusePass> {
  using FusePassBase::FusePassBase;

  void runOnOperation() override {
    FusionStats stats = fuseKernels(getOperation(), fusion, target);
    numGradientScales += stats.gradientScales;
    numKernels += stats.kernels;
    numElementwiseKernels += stats.elementwise;
    numGemmKernels += stats.gemm;
    numReductionKernels += stats.reduction;
    numClassifierKernels += stats.classifier;
    numOptimizerKernels += stats.optimizer;
    numFusedOps += stats.fusedOps;
  }
};

} // namespace

std::optional<FusionRules> mlir::tg::parseFusionRules(StringRef name) {
  return llvm::StringSwitch<std::optional<FusionRules>>(name)
      .Case("none", FusionRules::None)
      .Case("elementwise", FusionRules::Elementwise)
      .Case("all", FusionRules::All)
      .Default(std::nullopt);
}

std::optional<FusionTarget> mlir::tg::parseFusionTarget(StringRef name) {
  return llvm::StringSwitch<std::optional<FusionTarget>>(name)
      .Case("cpu", FusionTarget::Cpu)
      .Case("cuda", FusionTarget::Cuda)
      .Default(std::nullopt);
}
