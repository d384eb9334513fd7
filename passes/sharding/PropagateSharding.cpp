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
    if (!llvm::is_contained(presetNames(), StringRef(preset))) {
      module.emitError() << "unknown sharding preset '" << preset
                         << "'; expected dp, zero1, zero2 or zero3";
      return signalPassFailure();
    }
    // Parameters first, in every function: their state follows them.
    llvm::StringMap<ShardingAttr> params;
    for (auto func : module.getOps<func::FuncOp>())
      if (failed(shardParams(func, mesh, params)))
        return signalPassFailure();
    for (auto func : module.getOps<func::FuncOp>())
      if (failed(shardArguments(func, mesh, params)) ||
          failed(propagate(func, mesh)))
        return signalPassFailure();
  }

  bool zero() const { return preset != "dp"; }

  /// Where each parameter's sharding came from.
  llvm::StringMap<std::string> origins;

  LogicalResult shardParams(func::FuncOp func, MeshOp mesh,
                            llvm::StringMap<ShardingAttr> &params) {
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
        setSharding(arg, known->second, origins.lookup(name.getValue()));
        continue;
      }
      ShardingAttr whole = ShardingAttr::replicated(
          &getContext(), mesh.getSymName(), type.getRank());
      bool frozen =
          (bool)func.getArgAttr(arg.getArgNumber(), TgDialect::kFrozenAttr);
      sharding = preset == "zero3" && !frozen ? splitOverData(whole, type, mesh)
                                              : whole;
      params[name.getValue()] = sharding;
      origins[name.getValue()] = "preset " + preset;
      setSharding(arg, sharding, "preset " + preset);
    }
    // Arguments of other functions named like a pinned one get its pin.
    return success();
  }

  LogicalResult shardArguments(func::FuncOp func, MeshOp mesh,
                               const llvm::StringMap<ShardingAttr> &params) {
    MLIRContext *context = &getContext();
    for (BlockArgument arg : func.getArguments()) {
      unsigned i = arg.getArgNumber();
      auto type = cast<RankedTensorType>(arg.getType());
      if (auto name =
              func.getArgAttrOfType<StringAttr>(i, TgDialect::kParamAttr)) {
        // Every function reads a parameter with one sharding.
        ShardingAttr s = params.lookup(name.getValue());
        if (getSharding(arg) != s || getShardingOrigin(arg).empty())
          setSharding(arg, s, origins.lookup(name.getValue()));
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
        ShardingAttr s = zero() ? splitOverData(base, type, mesh) : base;
        setSharding(arg, s,
                    ("preset " + preset + " for the state of " + param).str());
        continue;
      }
      if (func.getArgAttr(i, TgDialect::kInputAttr)) {
        ShardingAttr s = ShardingAttr::replicated(context, mesh.getSymName(),
                                                  type.getRank());
        std::string origin = "preset " + preset + ": no batch dim, whole";
        auto names =
            func.getArgAttrOfType<ArrayAttr>(i, TgDialect::kDimNamesAttr);
        SmallVector<StringRef> axes = dataAxes(mesh);
        int64_t parts = 1;
        for (StringRef a : axes)
          parts *= mesh.axisSize(a);
        if (names && !axes.empty())
          for (auto [d, n] : llvm::enumerate(names)) {
            if (cast<StringAttr>(n).getValue() != "batch")
              continue;
            if (type.getDimSize(d) % parts != 0)
              return func.emitError()
                     << "batch input '" << describeValue(arg) << "' has "
                     << type.getDimSize(d) << " rows, which do not divide "
                     << "over the " << parts << " processes of the data axes";
            SmallVector<SmallVector<StringRef>> dims(type.getRank());
            dims[d] = axes;
            s = ShardingAttr::get(context, mesh.getSymName(), dims);
            origin = "preset " + preset + ": the batch";
            break;
          }
        setSharding(arg, s, origin);
        continue;
      }
      if (func.getArgAttr(i, TgDialect::kAccumAttr))
        continue; // takes the sharding of the gradients added to it
      setSharding(
          arg,
          ShardingAttr::replicated(context, mesh.getSymName(), type.getRank()),
          "whole: a scalar of the step");
    }
    if (preset == "zero1")
      pinWholeGradients(func);
    return success();
  }

  /// zero1: each gradient is reduced whole before its update reads it.
  void pinWholeGradients(func::FuncOp func) {
    func.walk([&](OptimizerUpdateOp update) {
      Value grad = update.getGrad();
      if (grad.getDefiningOp<ShardingConstraintOp>())
        return;
      ShardingAttr param = getSharding(update.getParam());
      if (!param)
        return;
      OpBuilder builder(update);
      auto pin =
          ShardingConstraintOp::create(builder, update.getLoc(), grad, param);
      pin->setAttr(kShardingOriginAttr,
                   ArrayAttr::get(&getContext(),
                                  {builder.getStringAttr(
                                      "preset zero1: the gradient whole")}));
      update.getGradMutable().assign(pin.getResult());
    });
  }

  LogicalResult propagate(func::FuncOp func, MeshOp mesh) {
    for (Operation &op : func.getBody().front().without_terminator()) {
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
      SmallVector<ShardingAttr> operands;
      for (Value v : op.getOperands())
        operands.push_back(getSharding(v));
      OpSharding decision = decideOpSharding(&op, operands, mesh);
      std::string origin = op.getName().getStringRef().str();
      if (!isa<ShardingRuleOpInterface>(op))
        origin += ": no sharding rule, computed whole";
      else if (decision.decidedBy >= 0)
        origin += " from " + describeValue(op.getOperand(decision.decidedBy));
      for (auto [v, s] : llvm::zip(op.getResults(), decision.results))
        setSharding(v, s, origin);
      // Arguments not sharded yet (gradient accumulators) adopt what the
      // op needs of them.
      for (auto [v, s] : llvm::zip(op.getOperands(), decision.operands))
        if (isa<BlockArgument>(v) && !getSharding(v))
          setSharding(v, s, "needed by " + op.getName().getStringRef().str());
    }
    for (BlockArgument arg : func.getArguments())
      if (!getSharding(arg))
        setSharding(arg,
                    ShardingAttr::replicated(
                        &getContext(), mesh.getSymName(),
                        cast<RankedTensorType>(arg.getType()).getRank()),
                    "unused: whole");
    Operation *ret = func.getBody().front().getTerminator();
    for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
      ShardingAttr target = resultTarget(func, i, getSharding(v));
      func.setResultAttr(i, kShardingAttr, target);
    }
    return success();
  }
};

} // namespace
