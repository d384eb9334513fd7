//===- Partition.cpp - Sharded steps to per-process programs ----*- C++ -*-===//
//
// tg-partition: each function's arguments and values get local shapes, and
// each op runs on its pieces after its operands are resharded to what it
// needs (decideOpSharding, the same decision tg-propagate-sharding showed).
// Partial sums are reduced where something needs them whole, once: the
// reduced value replaces the partial one for every later reader. An
// embedding or cross-entropy with its vocabulary split runs in its
// vocabulary-parallel form (VocabParallel.cpp).
//
//===----------------------------------------------------------------------===//

#include "passes/sharding/Passes.h"
#include "passes/sharding/Sharding.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::tg {
#define GEN_PASS_DEF_PARTITIONPASS
#include "passes/sharding/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

RankedTensorType localType(Type global, ShardingAttr sharding, MeshOp mesh) {
  auto type = cast<RankedTensorType>(global);
  return type.clone(localShape(sharding, type.getShape(), mesh));
}

class FunctionPartitioner {
public:
  FunctionPartitioner(func::FuncOp func, MeshOp mesh)
      : func(func), mesh(mesh), builder(func.getContext()) {}

  LogicalResult run() {
    Block &body = func.getBody().front();
    func->setAttr(kPartitionedAttr, UnitAttr::get(func.getContext()));
    // The old ops keep reading the global arguments (their rules need the
    // global shapes); the new ones read local arguments added after them,
    // which replace them at the end.
    unsigned numArgs = body.getNumArguments();
    for (unsigned i = 0; i < numArgs; ++i) {
      BlockArgument arg = body.getArgument(i);
      ShardingAttr s = getSharding(arg);
      if (!s)
        return func.emitError()
               << "tg-partition: @" << func.getName() << "'s argument " << i
               << " has no sharding; run tg-propagate-sharding first";
      if (failed(checkElasticArgument(i, s)))
        return failure();
      BlockArgument local =
          body.addArgument(localType(arg.getType(), s, mesh), arg.getLoc());
      mapping.map(arg, local);
      current[local] = s;
    }
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (Operation *op : ops) {
      builder.setInsertionPoint(op);
      // An op's pieces and its reshards compute for its layer.
      LayerStamp stamp(builder, op);
      if (failed(partition(op)))
        return failure();
    }
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    builder.setInsertionPoint(ret);
    SmallVector<Type> resultTypes;
    SmallVector<ShardingAttr> targets;
    llvm::StringMap<unsigned> byName = argumentsByName(func);
    for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
      Value old = ret.getOperand(i);
      auto target = func.getResultAttrOfType<ShardingAttr>(i, kShardingAttr);
      if (!target)
        target = resultTarget(func, i, shardingOf(old), &byName);
      Value v = resolve(old, target, "result " + std::to_string(i));
      ret.setOperand(i, v);
      targets.push_back(target);
      resultTypes.push_back(v.getType());
    }
    setResultShardings(func, targets);
    for (Operation *op : llvm::reverse(ops)) {
      op->dropAllUses();
      op->erase();
    }
    body.eraseArguments(0, numArgs);
    if (failed(checkElasticCollectives(body)))
      return failure();
    mergeAdjacentAllReduces(body);
    func.setType(FunctionType::get(func.getContext(), body.getArgumentTypes(),
                                   resultTypes));
    return success();
  }

private:
  /// An elastic axis takes its size at launch, so that nothing may depend
  /// on it but the batch: an argument other than an input (a parameter, a
  /// piece of optimizer state, an accumulated gradient) split over it would
  /// have another shape for each process count.
  LogicalResult checkElasticArgument(unsigned i, ShardingAttr s) {
    if (func.getArgAttr(i, TgDialect::kInputAttr))
      return success();
    for (int64_t d = 0; d < s.getRank(); ++d)
      for (StringRef axis : s.axesOf(d))
        if (mesh.isElastic(axis)) {
          auto origin = func.getArgAttrOfType<StringAttr>(
              i, kShardingOriginAttr);
          return emitError(func.getArgument(i).getLoc())
                 << describeArgument(i) << " is split over the elastic mesh "
                 << "axis \"" << axis << "\""
                 << (origin ? " (" + origin.getValue().str() + ")" : "")
                 << "; an elastic axis (--mesh=" << axis
                 << "=auto) splits the batch only: use --shard=dp, tp or sp, "
                    "or a fixed --mesh="
                 << axis << "=N";
        }
    return success();
  }

  /// Only all-reduces cross an elastic axis: a gather, scatter or slice
  /// over it changes a shape with the process count.
  LogicalResult checkElasticCollectives(Block &body) {
    for (Operation &op : body) {
      auto axis = op.getAttrOfType<StringAttr>("mesh_axis");
      if (!axis || isa<AllReduceOp>(op) || !mesh.isElastic(axis.getValue()))
        continue;
      auto reason = op.getAttrOfType<StringAttr>(kReshardAttr);
      return emitError(op.getLoc())
             << "the plan needs " << op.getName() << " over the elastic mesh "
             << "axis " << axis
             << (reason ? " (" + reason.getValue().str() + ")" : "")
             << "; an elastic axis (--mesh=" << axis.getValue()
             << "=auto) may only be all-reduced over: use --shard=dp, tp or "
                "sp, or a fixed --mesh="
             << axis.getValue() << "=N";
    }
    return success();
  }

  std::string describeArgument(unsigned i) {
    for (StringRef attr : {TgDialect::kParamAttr, TgDialect::kStateAttr,
                           TgDialect::kAccumAttr})
      if (auto name = func.getArgAttrOfType<StringAttr>(i, attr))
        return (attr == TgDialect::kParamAttr   ? "parameter '"
                : attr == TgDialect::kStateAttr ? "optimizer state '"
                                                : "the accumulated gradient of '") +
               name.getValue().str() + "'";
    return "argument " + std::to_string(i);
  }

  /// The size of elastic axis `axis` as a scalar of `type`, counted at run
  /// time (an all-reduce of 1 over it, as JAX's psum(1, axis)), once per
  /// function and type.
  Value elasticSize(StringRef axis, Type type) {
    Value &size = elasticSizes[{axis, type}];
    if (size)
      return size;
    OpBuilder::InsertionGuard guard(builder);
    LayerStamp none(builder, StringRef());
    builder.setInsertionPointToStart(&func.getBody().front());
    Location loc = func.getLoc();
    auto scalarType = RankedTensorType::get({}, type);
    Value one = ConstantOp::create(
        builder, loc,
        DenseElementsAttr::get(scalarType, builder.getFloatAttr(type, 1.0)));
    auto count = AllReduceOp::create(
        builder, loc, ValueRange{one},
        ReductionAttr::get(func.getContext(), Reduction::sum),
        builder.getStringAttr(axis), IntegerAttr());
    count->setAttr(kReshardAttr,
                   builder.getStringAttr("the size of the elastic axis \"" +
                                         axis + "\", for a mean over it"));
    current[count.getResult(0)] =
        ShardingAttr::replicated(func.getContext(), mesh.getSymName(), 0);
    size = count.getResult(0);
    return size;
  }

  /// Consecutive tg.all_reduce ops over one axis with one reduction become
  /// one op (tg-schedule then cuts it into buckets as it sees fit); their
  /// reasons are joined.
  void mergeAdjacentAllReduces(Block &body) {
    SmallVector<AllReduceOp> run;
    auto flush = [&] {
      if (run.size() > 1) {
        OpBuilder b(run.front());
        SmallVector<Value> inputs;
        std::string why;
        for (AllReduceOp r : run) {
          llvm::append_range(inputs, r.getInputs());
          if (auto reason = r->getAttrOfType<StringAttr>(kReshardAttr))
            why += (why.empty() ? "" : "; ") + reason.getValue().str();
        }
        auto merged = AllReduceOp::create(
            b, run.front().getLoc(), inputs, run.front().getReductionAttr(),
            run.front().getMeshAxisAttr(), IntegerAttr());
        merged->setAttr(kReshardAttr, b.getStringAttr(why));
        unsigned next = 0;
        for (AllReduceOp r : run) {
          for (Value v : r.getResults())
            v.replaceAllUsesWith(merged.getResult(next++));
          r.erase();
        }
      }
      run.clear();
    };
    for (Operation &op : llvm::make_early_inc_range(body)) {
      auto reduce = dyn_cast<AllReduceOp>(op);
      if (reduce && !run.empty() &&
          (reduce.getMeshAxis() != run.front().getMeshAxis() ||
           reduce.getReduction() != run.front().getReduction()))
        flush();
      if (!reduce) {
        flush();
        continue;
      }
      run.push_back(reduce);
    }
    flush();
  }

  ShardingAttr shardingOf(Value old) { return current.lookup(mapped(old)); }
  Value mapped(Value old) { return mapping.lookupOrDefault(old); }

  /// The local value of `old` resharded to `target`; a partial sum reduced
  /// here replaces `old` for later readers.
  Value resolve(Value old, ShardingAttr target, StringRef why) {
    Value v = mapped(old);
    ShardingAttr from = current.lookup(v);
    // A reshard computes for the layer that made the value.
    Operation *def = old.getDefiningOp();
    LayerStamp stamp(builder, def ? layerOf(def) : StringRef());
    if (Value rows = rowsOfEmbeddingGrad(old, v, from, target))
      return rows;
    Value out = reshard(builder, old.getLoc(), v, from, target, mesh,
                        (describeValue(old) + " for " + why).str());
    if (out != v) {
      current[out] = target;
      if (from.isPartial() && !target.isPartial())
        mapping.map(old, out);
    }
    return out;
  }

  /// resolve for the operand `old` of `reader`. Readers next to each other
  /// that want the same value resharded the same way share one reshard (the
  /// blocks of a fused projection gathering their input under sp); readers
  /// further apart reshard again, so that no gathered value lives longer
  /// than its readers need it (ZeRO-3's parameters, sp's activations).
  Value resolveFor(Operation *reader, Value old, ShardingAttr target,
                   StringRef why) {
    Value v = mapped(old);
    ShardingAttr from = current.lookup(v);
    if (!from || from.isPartial())
      return resolve(old, target, why);
    auto key = std::make_pair(v, Attribute(target));
    auto it = lastReshard.find(key);
    if (it != lastReshard.end() && it->second.second == reader->getPrevNode()) {
      it->second.second = reader;
      return it->second.first;
    }
    Value out = resolve(old, target, why);
    if (out != v)
      lastReshard[key] = {out, reader};
    return out;
  }

  /// A whole tg.embedding_grad that a reader wants split by rows (a
  /// vocabulary-parallel table's gradient) is computed for this process's
  /// rows instead of whole and then sliced; null for any other case.
  Value rowsOfEmbeddingGrad(Value old, Value v, ShardingAttr from,
                            ShardingAttr target) {
    auto grad = v.getDefiningOp<EmbeddingGradOp>();
    if (!grad || !old.getDefiningOp<EmbeddingGradOp>() || !from ||
        !from.isReplicated() || target.isPartial())
      return {};
    SmallVector<StringRef> axes = target.axesOf(0);
    for (int64_t d = 1; d < target.getRank(); ++d)
      if (!target.axesOf(d).empty())
        return {};
    if (axes.empty())
      return {};
    Value &rows = rowsOf[{v, target}];
    if (!rows) {
      rows = embeddingGradRows(builder, grad, axes, mesh,
                               "vocabulary-parallel " + describeValue(old));
      current[rows] = target;
    }
    return rows;
  }

  /// The sharding the optimizer update reading `old` (directly or through
  /// linear ops and pins) needs of it, or null.
  ShardingAttr neededByUpdate(Value old) {
    for (OpOperand &use : old.getUses()) {
      Operation *user = use.getOwner();
      if (auto pin = dyn_cast<ShardingConstraintOp>(user))
        return pin.getSharding();
      if (auto update = dyn_cast<OptimizerUpdateOp>(user)) {
        if (&use != &update.getGradMutable())
          continue;
        SmallVector<ShardingAttr> operands;
        for (Value v : update->getOperands())
          operands.push_back(v == old ? ShardingAttr() : shardingOf(v));
        return decideOpSharding(update, operands, mesh)
            .operands[use.getOperandNumber()];
      }
      if (isa<MulOp, DivOp, CastOp>(user) && user->getOperand(0) == old)
        if (ShardingAttr s = neededByUpdate(user->getResult(0)))
          return s;
    }
    return {};
  }

  LogicalResult partition(Operation *op) {
    if (auto pin = dyn_cast<ShardingConstraintOp>(op)) {
      mapping.map(pin.getResult(),
                  resolve(pin.getInput(), pin.getSharding(), "a sharding pin"));
      return success();
    }
    if (auto norm = dyn_cast<GlobalNormOp>(op))
      return partitionGlobalNorm(norm);

    SmallVector<ShardingAttr> operands;
    for (Value v : op->getOperands())
      operands.push_back(shardingOf(v));
    OpSharding decision = decideOpSharding(op, operands, mesh);
    SmallVector<Value> newOperands;
    for (auto [v, s] : llvm::zip(op->getOperands(), decision.operands))
      newOperands.push_back(
          resolveFor(op, v, s, op->getName().getStringRef().str()));
    SmallVector<Value> results;
    // Only an op of one result (an embedding, a logits matmul, a loss) is
    // vocabulary-parallel; a tg.send has none to describe.
    Value lowered =
        op->getNumResults() == 1
            ? lowerVocabParallel(
                  builder, op, newOperands, vocabAxes(op, decision), mesh,
                  "vocabulary-parallel " + describeValue(op->getResult(0)))
            : Value();
    if (lowered) {
      results.push_back(lowered);
    } else {
      Operation *clone = builder.clone(*op);
      clone->setOperands(newOperands);
      clone->removeAttr(kShardingAttr);
      clone->removeAttr(kShardingOriginAttr);
      for (auto [result, s] : llvm::zip(clone->getResults(), decision.results))
        result.setType(localType(result.getType(), s, mesh));
      localizeShapeAttrs(clone, decision);
      llvm::append_range(results, clone->getResults());
    }
    for (auto [old, now, s] :
         llvm::zip(op->getResults(), results, decision.results)) {
      Value v = now;
      if (decision.scale != 1.0 &&
          isa<FloatType>(
              cast<RankedTensorType>(v.getType()).getElementType())) {
        auto type = cast<RankedTensorType>(v.getType());
        auto scalarType = RankedTensorType::get({}, type.getElementType());
        Value factor = ConstantOp::create(
            builder, op->getLoc(),
            DenseElementsAttr::get(
                scalarType,
                builder.getFloatAttr(type.getElementType(), decision.scale)));
        v = MulOp::create(builder, op->getLoc(), type, v, factor);
      }
      if (auto type = dyn_cast<RankedTensorType>(v.getType());
          type && isa<FloatType>(type.getElementType()))
        for (StringRef axis : decision.meanOverElastic)
          v = DivOp::create(builder, op->getLoc(), type, v,
                            elasticSize(axis, type.getElementType()));
      mapping.map(old, v);
      current[v] = s;
    }
    return success();
  }

  /// tg.slice and its gradient name the dims they keep whole by limits of
  /// the global size: on a split dim the limit is the local size.
  void localizeShapeAttrs(Operation *clone, const OpSharding &decision) {
    auto fix = [&](DenseI64ArrayAttr limitAttr, Type localIn, Type localOut,
                   StringRef name) {
      SmallVector<int64_t> limit(limitAttr.asArrayRef());
      auto in = cast<RankedTensorType>(localIn);
      auto out = cast<RankedTensorType>(localOut);
      for (int64_t d = 0; d < (int64_t)limit.size(); ++d)
        if (in.getDimSize(d) == out.getDimSize(d))
          limit[d] = in.getDimSize(d);
      clone->setAttr(name, DenseI64ArrayAttr::get(clone->getContext(), limit));
    };
    if (auto slice = dyn_cast<SliceOp>(clone))
      fix(slice.getLimitAttr(), slice.getX().getType(), slice.getType(),
          "limit");
    if (auto grad = dyn_cast<SliceGradOp>(clone))
      fix(grad.getLimitAttr(), grad.getType(), grad.getGrad().getType(),
          "limit");
  }

  /// The norm of all gradients: each is reduced to the sharding its update
  /// needs (whole when none), the squares of the local norms of the pieces
  /// split over the same axes are summed over them, and the root taken.
  LogicalResult partitionGlobalNorm(GlobalNormOp norm) {
    Location loc = norm.getLoc();
    MLIRContext *context = norm.getContext();
    // Inputs grouped by the axes their pieces are split over.
    std::map<SmallVector<std::string>, SmallVector<Value>> groups;
    for (Value old : norm.getInputs()) {
      ShardingAttr s = shardingOf(old);
      ShardingAttr target = s.withoutPartial();
      if (s.isPartial()) {
        target = neededByUpdate(old);
        if (!target)
          target =
              ShardingAttr::replicated(context, mesh.getSymName(), s.getRank());
      }
      Value v = resolve(old, target, "tg.global_norm");
      SmallVector<std::string> axes;
      for (int64_t d = 0; d < target.getRank(); ++d)
        for (StringRef a : target.axesOf(d))
          axes.push_back(a.str());
      llvm::sort(axes);
      groups[axes].push_back(v);
    }
    auto scalar = RankedTensorType::get({}, builder.getF32Type());
    if (groups.size() == 1 && groups.begin()->first.empty()) {
      // Every gradient whole: the norm as it was.
      Value n =
          GlobalNormOp::create(builder, loc, scalar, groups.begin()->second);
      mapping.map(norm.getResult(), n);
      current[n] = ShardingAttr::replicated(context, mesh.getSymName(), 0);
      return success();
    }
    Value total;
    for (auto &[axes, values] : groups) {
      Value n = GlobalNormOp::create(builder, loc, scalar, values);
      Value sq = MulOp::create(builder, loc, scalar, n, n);
      for (const std::string &axis : axes) {
        auto reduce =
            AllReduceOp::create(builder, loc, ValueRange{sq},
                                ReductionAttr::get(context, Reduction::sum),
                                builder.getStringAttr(axis), IntegerAttr());
        reduce->setAttr(
            kReshardAttr,
            builder.getStringAttr("tg.global_norm: squares of the pieces split "
                                  "over \"" +
                                  axis + "\""));
        sq = reduce.getResult(0);
      }
      total = total ? AddOp::create(builder, loc, scalar, total, sq).getResult()
                    : sq;
    }
    Value result = SqrtOp::create(builder, loc, scalar, total);
    mapping.map(norm.getResult(), result);
    current[result] = ShardingAttr::replicated(context, mesh.getSymName(), 0);
    return success();
  }

  func::FuncOp func;
  MeshOp mesh;
  OpBuilder builder;
  IRMapping mapping;
  DenseMap<Value, ShardingAttr> current;
  /// resolveFor's last reshard of each value to each target, and the
  /// reader it was for.
  DenseMap<std::pair<Value, Attribute>, std::pair<Value, Operation *>>
      lastReshard;
  /// rowsOfEmbeddingGrad's answers, by the whole gradient and the target.
  DenseMap<std::pair<Value, Attribute>, Value> rowsOf;
  /// elasticSize's answers, by axis and element type.
  DenseMap<std::pair<StringRef, Type>, Value> elasticSizes;
};

struct PartitionPass : public tg::impl::PartitionPassBase<PartitionPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MeshOp mesh = getModuleMesh(module);
    if (!mesh)
      return;
    for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (failed(FunctionPartitioner(func, mesh).run()))
        return signalPassFailure();
  }
};

} // namespace
