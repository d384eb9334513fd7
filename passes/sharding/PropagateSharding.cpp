//===- PropagateSharding.cpp - Shardings from pins and rules ----*- C++ -*-===//
//
// tg-propagate-sharding: pins stay, presets give the unpinned arguments
// their sharding (the batch over the data axes; ZeRO's splits of state and
// parameters), and each op's results follow from its operands through its
// sharding rule, forward through each step function. Every sharding
// records its origin.
//
//===----------------------------------------------------------------------===//

#include "passes/sharding/Passes.h"
#include "passes/sharding/Sharding.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::tg {
#define GEN_PASS_DEF_PROPAGATESHARDINGPASS
#include "passes/sharding/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// `base` with the data axes added to its first dim that is not split yet
/// and divides over them; `base` when none does.
ShardingAttr splitOverData(ShardingAttr base, RankedTensorType type,
                           MeshOp mesh) {
  SmallVector<StringRef> axes = dataAxes(mesh);
  if (axes.empty() || llvm::any_of(axes, [&](StringRef a) {
        return base.dimOf(a) >= 0 || llvm::is_contained(base.partialAxes(), a);
      }))
    return base;
  int64_t parts = 1;
  for (StringRef a : axes)
    parts *= mesh.axisSize(a);
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (!base.axesOf(d).empty())
      continue;
    if (type.getDimSize(d) % parts != 0)
      continue;
    SmallVector<SmallVector<StringRef>> dims;
    for (int64_t e = 0; e < type.getRank(); ++e)
      dims.push_back(base.axesOf(e));
    dims[d] = axes;
    return ShardingAttr::get(base.getContext(), mesh.getSymName(), dims);
  }
  return base;
}

struct PropagateShardingPass
    : public tg::impl::PropagateShardingPassBase<PropagateShardingPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MeshOp mesh = getModuleMesh(module);
    if (!mesh)
      return;
    if (!llvm::is_contained(shardPresetNames(), StringRef(preset))) {
      module.emitError() << "unknown sharding preset '" << preset
                         << "'; expected dp, zero1, zero2, zero3, tp, sp or "
                            "megatron";
      return signalPassFailure();
    }
    // Per-parameter presets (the model file's `shard`, as tg.shard).
    for (auto func : module.getOps<func::FuncOp>())
      for (BlockArgument arg : func.getArguments())
        if (auto name = func.getArgAttrOfType<StringAttr>(
                arg.getArgNumber(), TgDialect::kParamAttr))
          if (auto own = func.getArgAttrOfType<ShardPresetAttr>(
                  arg.getArgNumber(), kShardPresetAttr))
            presets[name.getValue()] =
                stringifyShardPreset(own.getValue()).str();
    // Parameters first, in every function: their state follows them.
    llvm::StringMap<ShardingAttr> &params = paramShardings;
    for (auto func : module.getOps<func::FuncOp>())
      if (failed(shardParams(func, mesh, params)))
        return signalPassFailure();
    // @forward first: under tp it decides the parameters the others read.
    for (auto func : module.getOps<func::FuncOp>()) {
      if (failed(shardArguments(func, mesh, params)) ||
          failed(propagate(func, mesh)))
        return signalPassFailure();
      for (BlockArgument arg : func.getArguments())
        if (auto name = func.getArgAttrOfType<StringAttr>(
                arg.getArgNumber(), TgDialect::kParamAttr))
          if (!params.lookup(name.getValue())) {
            params[name.getValue()] = getSharding(arg);
            origins[name.getValue()] = getShardingOrigin(arg).str();
          }
    }
  }

  /// The preset of parameter `name`: its own, else the pass's.
  StringRef presetOf(StringRef name) const {
    auto it = presets.find(name);
    return it != presets.end() ? StringRef(it->second) : StringRef(preset);
  }
  /// Whether the optimizer state of parameter `name` is split over the
  /// data axes (ZeRO, or Megatron-LM's distributed optimizer).
  bool zero(StringRef name) const {
    StringRef p = presetOf(name);
    return p.starts_with("zero") || p == "megatron";
  }
  /// Whether parameter `name` is split over tp (tp, sp, megatron), and
  /// whether its row-parallel products are sequence parallel (sp,
  /// megatron).
  bool tensorParallel(StringRef name) const {
    return isTensorParallelPreset(presetOf(name));
  }
  bool sequenceParallel(StringRef name) const {
    return isSequenceParallelPreset(presetOf(name));
  }

  llvm::StringMap<std::string> presets;
  /// Views (tg.cast, tg.slice, tg.reshape) of parameters not sharded yet
  /// (tp's, whose split waits for the op that reads them), in the function
  /// being propagated: each view's parameter. Where the first reader decides
  /// what it needs of a view, the parameter takes the matching sharding and
  /// its views follow (shardParamAndViews).
  llvm::MapVector<Value, BlockArgument> pendingViews;
  /// The ops that compute each pending parameter's views, in program order.
  DenseMap<BlockArgument, SmallVector<Operation *>> viewOps;

  /// Each parameter's sharding, as every function reads it.
  llvm::StringMap<ShardingAttr> paramShardings;
  /// Where each parameter's sharding came from.
  llvm::StringMap<std::string> origins;

  LogicalResult shardParams(func::FuncOp func, MeshOp mesh,
                            llvm::StringMap<ShardingAttr> &params) {
    // Set at once: one by one costs the square of the arguments.
    SmallVector<ArgSharding> updates;
    for (BlockArgument arg : func.getArguments()) {
      auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                    TgDialect::kParamAttr);
      if (!name)
        continue;
      auto type = cast<RankedTensorType>(arg.getType());
      ShardingAttr sharding = getSharding(arg);
      auto known = params.find(name.getValue());
      if (sharding) {
        if (known != params.end() && known->second != sharding)
          return func.emitError()
                 << "parameter '" << name.getValue() << "' is pinned to "
                 << formatSharding(sharding) << " in @" << func.getSymName()
                 << " but to " << formatSharding(known->second) << " elsewhere";
        params[name.getValue()] = sharding;
        origins[name.getValue()] = getShardingOrigin(arg).str();
        continue;
      }
      if (known != params.end()) {
        updates.push_back({arg.getArgNumber(), known->second,
                           origins.lookup(name.getValue())});
        continue;
      }
      ShardingAttr whole = ShardingAttr::replicated(
          &getContext(), mesh.getSymName(), type.getRank());
      bool frozen =
          (bool)func.getArgAttr(arg.getArgNumber(), TgDialect::kFrozenAttr);
      StringRef own = presetOf(name.getValue());
      if (tensorParallel(name.getValue()) && !frozen && mesh.axisSize("tp") > 1)
        continue; // decided where @forward first reads it
      sharding =
          own == "zero3" && !frozen ? splitOverData(whole, type, mesh) : whole;
      params[name.getValue()] = sharding;
      origins[name.getValue()] = ("preset " + own).str();
      updates.push_back({arg.getArgNumber(), sharding, "preset " + own.str()});
    }
    setArgShardings(func, updates);
    // Arguments of other functions named like a pinned one get its pin.
    return success();
  }

  LogicalResult shardArguments(func::FuncOp func, MeshOp mesh,
                               const llvm::StringMap<ShardingAttr> &params) {
    MLIRContext *context = &getContext();
    // Set at once: one by one costs the square of the arguments.
    SmallVector<ArgSharding> updates;
    auto record = [&](BlockArgument arg, ShardingAttr s, const Twine &origin) {
      updates.push_back({arg.getArgNumber(), s, origin.str()});
    };
    for (BlockArgument arg : func.getArguments()) {
      unsigned i = arg.getArgNumber();
      auto type = cast<RankedTensorType>(arg.getType());
      if (auto name =
              func.getArgAttrOfType<StringAttr>(i, TgDialect::kParamAttr)) {
        // Every function reads a parameter with one sharding.
        ShardingAttr s = params.lookup(name.getValue());
        if (s && (getSharding(arg) != s || getShardingOrigin(arg).empty()))
          record(arg, s, origins.lookup(name.getValue()));
        continue;
      }
      if (getSharding(arg))
        continue; // a pin
      if (auto state =
              func.getArgAttrOfType<StringAttr>(i, TgDialect::kStateAttr)) {
        // "fc1.weight.exp_avg": the parameter's sharding, plus ZeRO's.
        StringRef param = state.getValue().rsplit('.').first;
        ShardingAttr base = params.lookup(param);
        if (!base || base.getRank() != type.getRank())
          base = ShardingAttr::replicated(context, mesh.getSymName(),
                                          type.getRank());
        ShardingAttr s = zero(param) ? splitOverData(base, type, mesh) : base;
        record(
            arg, s,
            ("preset " + presetOf(param) + " for the state of " + param).str());
        continue;
      }
      if (func.getArgAttr(i, TgDialect::kInputAttr)) {
        ShardingAttr s = batchInputSharding(func, i, mesh);
        if (!s) {
          int64_t parts = 1, rows = 0;
          for (StringRef a : dataAxes(mesh))
            parts *= mesh.axisSize(a);
          auto names =
              func.getArgAttrOfType<ArrayAttr>(i, TgDialect::kDimNamesAttr);
          for (auto [d, n] : llvm::enumerate(names))
            if (cast<StringAttr>(n).getValue() == "batch" && !rows)
              rows = type.getDimSize(d);
          return func.emitError()
                 << "batch input '" << describeValue(arg) << "' has " << rows
                 << " rows, which do not divide over the " << parts
                 << " processes of the data axes";
        }
        bool split =
            llvm::any_of(llvm::seq<int64_t>(0, s.getRank()),
                         [&](int64_t d) { return !s.axesOf(d).empty(); });
        record(arg, s,
               split ? "the batch over the data axes" : "no batch dim, whole");
        continue;
      }
      if (auto accum =
              func.getArgAttrOfType<StringAttr>(i, TgDialect::kAccumAttr)) {
        // zero2/zero3 accumulate each process's piece; otherwise the
        // accumulator takes the sharding of the gradients added to it.
        if (ShardingAttr piece =
                gradientPiece(accum.getValue(), type, mesh, params))
          record(arg, piece,
                 ("preset " + presetOf(accum.getValue()) +
                  ": the piece of the gradient")
                     .str());
        else if (ShardingAttr summed = gradientSummed(func, accum))
          record(arg, summed,
                 "the gradient @forward_backward returns, summed over the "
                 "micro-batches");
        continue;
      }
      record(
          arg,
          ShardingAttr::replicated(context, mesh.getSymName(), type.getRank()),
          "whole: a scalar of the step");
    }
    setArgShardings(func, updates);
    pinWholeGradients(func);
    return success();
  }

  /// zero1: each gradient is reduced whole before its update reads it;
  /// megatron (the distributed optimizer): reduced to the piece of it the
  /// process updates, once per step (tg.reduce_scatter).
  void pinWholeGradients(func::FuncOp func) {
    func.walk([&](OptimizerUpdateOp update) {
      Value grad = update.getGrad();
      auto param = dyn_cast<BlockArgument>(update.getParam());
      auto name = param ? func.getArgAttrOfType<StringAttr>(
                              param.getArgNumber(), TgDialect::kParamAttr)
                        : StringAttr();
      StringRef own = name ? presetOf(name.getValue()) : "";
      if ((own != "zero1" && own != "megatron") ||
          grad.getDefiningOp<ShardingConstraintOp>())
        return;
      // megatron reduces the gradient before gradient clipping's norm reads
      // it (the norm sums the pieces): the pin goes on what the clipping
      // scales.
      if (own == "megatron")
        if (auto clip = grad.getDefiningOp<MulOp>())
          if (llvm::any_of(clip.getLhs().getUsers(),
                           llvm::IsaPred<GlobalNormOp>) &&
              !clip.getLhs().getDefiningOp<ShardingConstraintOp>())
            grad = clip.getLhs();
      ShardingAttr whole = getSharding(param);
      if (!whole)
        return;
      ShardingAttr target = whole;
      std::string why = "preset zero1: the gradient whole";
      if (own == "megatron") {
        MeshOp mesh = getModuleMesh(func->getParentOfType<ModuleOp>());
        target =
            splitOverData(whole, cast<RankedTensorType>(grad.getType()), mesh);
        why = "preset megatron: the gradient reduced to the piece this "
              "process updates";
      }
      OpBuilder builder(update);
      if (Operation *def = grad.getDefiningOp(); def && own == "megatron")
        builder.setInsertionPointAfter(def);
      auto pin =
          ShardingConstraintOp::create(builder, update.getLoc(), grad, target);
      pin->setAttr(kShardingOriginAttr,
                   ArrayAttr::get(&getContext(), {builder.getStringAttr(why)}));
      if (own == "megatron")
        grad.replaceAllUsesExcept(pin.getResult(), pin);
      else
        update.getGradMutable().assign(pin.getResult());
    });
  }

  /// tp (Megatron-LM's tensor parallelism): a weight not sharded yet that
  /// a matmul multiplies by is split over "tp" by its columns when the
  /// matmul's input is whole along the contraction (column-parallel: the
  /// output is split), by its rows when the input is split along it
  /// (row-parallel: the output is a partial sum, reduced once).
  void shardTensorParallelWeight(MatmulOp matmul, MeshOp mesh) {
    BlockArgument weight = unshardedTensorParallelParam(matmul.getRhs());
    auto type = cast<RankedTensorType>(matmul.getRhs().getType());
    ShardingAttr input = getSharding(matmul.getLhs());
    if (!weight || type.getRank() != 2 || !input)
      return;
    int64_t lhsK = input.getRank() - (matmul.getTransposeLhs() ? 2 : 1);
    bool rowParallel = llvm::is_contained(input.axesOf(lhsK), "tp");
    // rhs [K, N], or [N, K] transposed.
    int64_t kDim = matmul.getTransposeRhs() ? 1 : 0;
    int64_t d = rowParallel ? kDim : 1 - kDim;
    splitOverTensorParallel(
        matmul.getRhs(), weight, d, mesh,
        ("preset tp: " + Twine(rowParallel ? "row" : "column") +
         "-parallel for " + describeValue(matmul.getResult()))
            .str());
  }

  /// tp and sp: a table an embedding reads (the vocabulary) is split by
  /// its rows, as Megatron-LM's vocabulary-parallel embedding; a tied LM
  /// head (a matmul by its transpose) then makes the logits split by class,
  /// and the cross-entropy runs vocabulary-parallel.
  void shardVocabParallelTable(EmbeddingOp embedding, MeshOp mesh) {
    BlockArgument table = unshardedTensorParallelParam(embedding.getTable());
    if (table &&
        cast<RankedTensorType>(embedding.getTable().getType()).getRank() == 2)
      splitOverTensorParallel(embedding.getTable(), table, 0, mesh,
                              "preset tp: vocabulary-parallel for " +
                                  describeValue(embedding));
  }

  /// The parameter `v` is (itself, or the parameter a pending view
  /// shows) when its preset is tp or sp and it has no sharding yet; null
  /// otherwise.
  BlockArgument unshardedTensorParallelParam(Value v) {
    auto param = dyn_cast<BlockArgument>(v);
    if (BlockArgument viewed = pendingViews.lookup(v))
      param = viewed;
    if (!param)
      return {};
    auto func = cast<func::FuncOp>(param.getOwner()->getParentOp());
    auto name = func.getArgAttrOfType<StringAttr>(param.getArgNumber(),
                                                  TgDialect::kParamAttr);
    if (!name || getSharding(param) || !tensorParallel(name.getValue()))
      return {};
    return param;
  }

  /// Splits dim `d` of `v` (the parameter `param`, or a pending view of
  /// it) over tp, when it divides and the view lets the parameter be split
  /// so.
  void splitOverTensorParallel(Value v, BlockArgument param, int64_t d,
                               MeshOp mesh, const std::string &why) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getDimSize(d) % mesh.axisSize("tp") != 0)
      return;
    SmallVector<SmallVector<StringRef>> dims(type.getRank());
    dims[d] = {"tp"};
    auto split = ShardingAttr::get(&getContext(), mesh.getSymName(), dims);
    if (ShardingAttr source = shardingOfViewSource(v, split))
      shardParamAndViews(param, source, why);
  }

  /// The sharding of the parameter a pending view `v` shows (or of `v`, a
  /// parameter) that gives `v` the sharding `s` (partial sums dropped: a
  /// parameter holds none); null when the views cannot carry it (a split
  /// dim a slice cuts, or a reshape merges with another).
  ShardingAttr shardingOfViewSource(Value v, ShardingAttr s) {
    s = s.withoutPartial();
    while (Operation *view = v.getDefiningOp()) {
      auto ruled = dyn_cast<ShardingRuleOpInterface>(view);
      if (!ruled || view->getNumOperands() != 1)
        return {};
      ShardingRule rule = ruled.getShardingRule();
      Value x = view->getOperand(0);
      auto xType = cast<RankedTensorType>(x.getType());
      auto vType = cast<RankedTensorType>(v.getType());
      SmallVector<SmallVector<StringRef>> dims(xType.getRank());
      for (int64_t d = 0; d < s.getRank(); ++d) {
        if (s.axesOf(d).empty())
          continue;
        int64_t f = rule.resultDims[0][d];
        auto from = llvm::find(rule.operandDims[0], f);
        if (f < 0 || from == rule.operandDims[0].end() ||
            rule.factorSizes[f] != vType.getDimSize(d))
          return {};
        int64_t e = from - rule.operandDims[0].begin();
        if (xType.getDimSize(e) != rule.factorSizes[f])
          return {};
        dims[e] = s.axesOf(d);
      }
      s = ShardingAttr::get(&getContext(), s.getMesh().getValue(), dims);
      v = x;
    }
    return s;
  }

  /// Gives the pending parameter `param` the sharding `s`, then its views
  /// theirs, as their ops' rules derive them.
  void shardParamAndViews(BlockArgument param, ShardingAttr s,
                          const std::string &why) {
    setSharding(param, s, why);
    MeshOp mesh = getModuleMesh(param.getOwner()->getParentOp());
    for (Operation *view : viewOps.lookup(param)) {
      SmallVector<ShardingAttr> operands = {getSharding(view->getOperand(0))};
      OpSharding decision = decideOpSharding(view, operands, mesh);
      setSharding(view->getResult(0), decision.results[0],
                  view->getName().getStringRef().str() + " from " +
                      describeValue(view->getOperand(0)));
      pendingViews.erase(view->getResult(0));
    }
    viewOps.erase(param);
  }

  /// sp (Megatron-LM's sequence parallelism): a [batch, seq, ...] product
  /// of a tensor-parallel weight (a row-parallel matmul's, a
  /// vocabulary-parallel embedding's) that is a partial sum over tp is pinned
  /// split along the sequence over tp instead of whole, so tg-partition
  /// reduce-scatters it, and the norms, dropouts and residual adds after it
  /// run on a piece of the sequence; the next column-parallel matmul gathers
  /// it back.
  void pinSequenceParallel(Operation *op, Value weight, MeshOp mesh,
                           StringRef after) {
    StringAttr name = paramNameOf(weight);
    if (name && sequenceParallel(name.getValue()))
      pinSequenceSplit(op, mesh, after);
  }

  /// The name of the parameter `v` is, or is a view of; null otherwise.
  StringAttr paramNameOf(Value v) {
    auto param = dyn_cast<BlockArgument>(throughParamViews(v));
    auto func = param ? dyn_cast<func::FuncOp>(param.getOwner()->getParentOp())
                      : func::FuncOp();
    return func ? func.getArgAttrOfType<StringAttr>(param.getArgNumber(),
                                                    TgDialect::kParamAttr)
                : StringAttr();
  }

  /// Whether `v` will be a partial sum over tp under sp: a matmul by (a
  /// view of) a parameter whose preset is sp, or a sum of such.
  bool isSequenceParallelSum(Value v) {
    if (auto add = v.getDefiningOp<AddOp>())
      return isSequenceParallelSum(add.getLhs()) &&
             isSequenceParallelSum(add.getRhs());
    auto matmul = v.getDefiningOp<MatmulOp>();
    StringAttr name = matmul ? paramNameOf(matmul.getRhs()) : StringAttr();
    return name && sequenceParallel(name.getValue());
  }

  /// Pins `op`'s result, a [batch, seq, ...] partial sum over tp, split
  /// along the sequence; when all it does is join other such sums (the
  /// input gradients of a fused projection's blocks), the sum is pinned
  /// instead, so that it is reduce-scattered once.
  void pinSequenceSplit(Operation *op, MeshOp mesh, StringRef after) {
    Value result = op->getResult(0);
    ShardingAttr s = getSharding(result);
    auto type = cast<RankedTensorType>(result.getType());
    if (!s || !llvm::is_contained(s.partialAxes(), "tp") ||
        type.getRank() < 3 || !s.axesOf(1).empty() ||
        type.getDimSize(1) % mesh.axisSize("tp") != 0)
      return;
    if (result.hasOneUse())
      if (auto add = dyn_cast<AddOp>(*result.getUsers().begin())) {
        Value other = add.getLhs() == result ? add.getRhs() : add.getLhs();
        if (add.getType() == type && isSequenceParallelSum(other)) {
          sequencePinsAfter[add] = after.str();
          return;
        }
      }
    SmallVector<SmallVector<StringRef>> dims;
    for (int64_t d = 0; d < s.getRank(); ++d)
      dims.push_back(s.axesOf(d));
    dims[1].push_back("tp");
    SmallVector<StringRef> partial;
    for (StringRef a : s.partialAxes())
      if (a != "tp")
        partial.push_back(a);
    auto split =
        ShardingAttr::get(&getContext(), mesh.getSymName(), dims, partial);
    OpBuilder builder(op->getContext());
    builder.setInsertionPointAfter(op);
    auto pin =
        ShardingConstraintOp::create(builder, op->getLoc(), result, split);
    setLayer(pin, layerOf(op));
    pin->setAttr(kShardingOriginAttr,
                 builder.getArrayAttr({builder.getStringAttr(
                     "preset sp: the sequence split after " + after)}));
    result.replaceAllUsesExcept(pin.getResult(), pin);
  }

  /// Sums pinSequenceSplit pins once they are propagated, and what they sum.
  DenseMap<Operation *, std::string> sequencePinsAfter;

  LogicalResult propagate(func::FuncOp func, MeshOp mesh) {
    pendingViews.clear();
    viewOps.clear();
    for (Operation &op : func.getBody().front().without_terminator()) {
      // A view of a parameter not sharded yet (tp's: its cast under bf16,
      // the blocks of a fused projection) waits for the op that reads it
      // to decide for the parameter and its views.
      if (isParamView(&op)) {
        Value x = op.getOperand(0);
        BlockArgument param = pendingViews.lookup(x);
        if (auto arg = dyn_cast<BlockArgument>(x);
            arg && !getSharding(arg) &&
            func.getArgAttr(arg.getArgNumber(), TgDialect::kParamAttr))
          param = arg;
        if (param) {
          pendingViews[op.getResult(0)] = param;
          viewOps[param].push_back(&op);
          continue;
        }
      }
      if (auto pin = dyn_cast<ShardingConstraintOp>(op)) {
        std::string origin = getShardingOrigin(pin.getResult()).str();
        if (origin.empty())
          origin = "pin: tg.sharding_constraint";
        setSharding(pin.getResult(), pin.getSharding(), origin);
        continue;
      }
      if (auto norm = dyn_cast<GlobalNormOp>(op)) {
        setSharding(
            norm.getResult(),
            ShardingAttr::replicated(&getContext(), mesh.getSymName(), 0),
            "tg.global_norm: whole");
        continue;
      }
      if (auto matmul = dyn_cast<MatmulOp>(op))
        shardTensorParallelWeight(matmul, mesh);
      if (auto embedding = dyn_cast<EmbeddingOp>(op))
        shardVocabParallelTable(embedding, mesh);
      SmallVector<ShardingAttr> operands;
      for (Value v : op.getOperands())
        operands.push_back(getSharding(v));
      OpSharding decision = decideOpSharding(&op, operands, mesh);
      // Arguments not sharded yet (gradient accumulators, tp's biases)
      // adopt what the op needs of them; a parameter holds no partial sum,
      // so the op decides again with what they adopted.
      bool adopted = false;
      for (auto [v, s] : llvm::zip(op.getOperands(), decision.operands)) {
        if (getSharding(v))
          continue;
        std::string why = "needed by " + describeValue(op.getResult(0));
        if (auto arg = dyn_cast<BlockArgument>(v)) {
          bool isAccum =
              (bool)func.getArgAttr(arg.getArgNumber(), TgDialect::kAccumAttr);
          setSharding(v, isAccum ? s : s.withoutPartial(), why);
          adopted = true;
        } else if (BlockArgument param = pendingViews.lookup(v)) {
          ShardingAttr source = shardingOfViewSource(v, s);
          if (!source)
            source = ShardingAttr::replicated(
                &getContext(), mesh.getSymName(),
                cast<RankedTensorType>(param.getType()).getRank());
          shardParamAndViews(param, source, why);
          adopted = true;
        }
      }
      if (adopted) {
        operands.clear();
        for (Value v : op.getOperands())
          operands.push_back(getSharding(v));
        decision = decideOpSharding(&op, operands, mesh);
      }
      std::string origin = op.getName().getStringRef().str();
      if (!isa<ShardingRuleOpInterface>(op))
        origin += ": no sharding rule, computed whole";
      else if (decision.decidedBy >= 0)
        origin += " from " + describeValue(op.getOperand(decision.decidedBy));
      for (auto [v, s] : llvm::zip(op.getResults(), decision.results))
        setSharding(v, s, origin);
      if (auto matmul = dyn_cast<MatmulOp>(op))
        pinSequenceParallel(matmul, matmul.getRhs(), mesh,
                            "a row-parallel matmul");
      if (auto embedding = dyn_cast<EmbeddingOp>(op))
        pinSequenceParallel(embedding, embedding.getTable(), mesh,
                            "a vocabulary-parallel embedding");
      if (auto after = sequencePinsAfter.find(&op);
          after != sequencePinsAfter.end())
        pinSequenceSplit(&op, mesh, "a sum of " + after->second + "s");
    }
    sequencePinsAfter.clear();
    // Views nothing decided for: whole, as their parameters.
    while (!pendingViews.empty()) {
      BlockArgument param = pendingViews.front().second;
      shardParamAndViews(param,
                         ShardingAttr::replicated(
                             &getContext(), mesh.getSymName(),
                             cast<RankedTensorType>(param.getType()).getRank()),
                         "unused: whole");
    }
    SmallVector<ArgSharding> unused;
    for (BlockArgument arg : func.getArguments())
      if (!getSharding(arg))
        unused.push_back({arg.getArgNumber(),
                          ShardingAttr::replicated(
                              &getContext(), mesh.getSymName(),
                              cast<RankedTensorType>(arg.getType()).getRank()),
                          "unused: whole"});
    setArgShardings(func, unused);
    Operation *ret = func.getBody().front().getTerminator();
    llvm::StringMap<unsigned> byName = argumentsByName(func);
    SmallVector<ShardingAttr> targets;
    for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
      ShardingAttr target = resultTarget(func, i, getSharding(v), &byName);
      if (auto grad =
              func.getResultAttrOfType<StringAttr>(i, TgDialect::kGradAttr))
        if (ShardingAttr piece = gradientPiece(
                grad.getValue(), cast<RankedTensorType>(v.getType()), mesh,
                paramShardings))
          target = piece;
      targets.push_back(target);
    }
    setResultShardings(func, targets);
    return success();
  }

  /// zero2 and zero3: the gradient of `param` each micro-batch leaves
  /// reduced to the piece its process updates (as the optimizer state is
  /// split), so the step's accumulator is a piece too; null otherwise.
  ShardingAttr gradientPiece(StringRef param, RankedTensorType type,
                             MeshOp mesh,
                             const llvm::StringMap<ShardingAttr> &params) {
    if (presetOf(param) != "zero2" && presetOf(param) != "zero3")
      return {};
    ShardingAttr base = params.lookup(param);
    if (!base || base.getRank() != type.getRank())
      return {};
    return splitOverData(base.withoutPartial(), type, mesh);
  }

  /// A pipelined step's @apply_gradients takes the sums of what its stages'
  /// W passes return: each as @forward_backward returns that gradient
  /// (the process's piece under tp, partial over the data axes until the
  /// update reduces it).
  ShardingAttr gradientSummed(func::FuncOp func, StringAttr param) {
    if (func.getSymName() != "apply_gradients")
      return {};
    auto fb = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        func, StringAttr::get(func.getContext(), "forward_backward"));
    if (!fb)
      return {};
    for (unsigned r = 0; r < fb.getNumResults(); ++r)
      if (fb.getResultAttr(r, TgDialect::kGradAttr) == param)
        return fb.getResultAttrOfType<ShardingAttr>(r, kShardingAttr);
    return {};
  }
};

} // namespace
