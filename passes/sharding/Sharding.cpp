//===- Sharding.cpp - Op sharding decisions and resharding ------*- C++ -*-===//
//
// decideOpSharding reads an op's ShardingRule and its operands' shardings
// and says how the op runs split; reshard turns a value from one sharding
// into another with the fewest collectives this IR has. Both sharding
// passes use them, so what tg-propagate-sharding shows is what
// tg-partition does.
//
//===----------------------------------------------------------------------===//

#include "passes/sharding/Sharding.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::tg;

SmallVector<StringRef> mlir::tg::dataAxes(MeshOp mesh) {
  SmallVector<StringRef> out;
  if (mesh)
    for (StringRef axis : mesh.getAxisNames())
      if (isDataAxis(axis))
        out.push_back(axis);
  return out;
}

ShardingAttr mlir::tg::batchInputSharding(func::FuncOp func, unsigned index,
                                          MeshOp mesh) {
  auto type = cast<RankedTensorType>(func.getArgumentTypes()[index]);
  MLIRContext *context = func.getContext();
  SmallVector<StringRef> axes = dataAxes(mesh);
  int64_t parts = 1;
  for (StringRef a : axes)
    parts *= mesh.axisSize(a);
  auto names =
      func.getArgAttrOfType<ArrayAttr>(index, TgDialect::kDimNamesAttr);
  if (names && !axes.empty())
    for (auto [d, n] : llvm::enumerate(names)) {
      if (cast<StringAttr>(n).getValue() != "batch")
        continue;
      if (type.getDimSize(d) % parts != 0)
        return nullptr;
      SmallVector<SmallVector<StringRef>> dims(type.getRank());
      dims[d] = axes;
      return ShardingAttr::get(context, mesh.getSymName(), dims);
    }
  return ShardingAttr::replicated(context, mesh.getSymName(), type.getRank());
}

llvm::StringMap<unsigned> mlir::tg::argumentsByName(func::FuncOp func) {
  llvm::StringMap<unsigned> byName;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    for (StringRef name : {TgDialect::kParamAttr, TgDialect::kStateAttr})
      if (auto arg = func.getArgAttrOfType<StringAttr>(i, name))
        byName.try_emplace(arg.getValue(), i);
  return byName;
}

ShardingAttr mlir::tg::resultTarget(func::FuncOp func, unsigned index,
                                    ShardingAttr computed,
                                    const llvm::StringMap<unsigned> *byName) {
  auto type = cast<RankedTensorType>(func.getResultTypes()[index]);
  StringRef mesh = computed.getMesh().getValue();
  auto whole =
      ShardingAttr::replicated(func.getContext(), mesh, type.getRank());
  if (auto update =
          func.getResultAttrOfType<StringAttr>(index, TgDialect::kUpdateAttr)) {
    std::optional<llvm::StringMap<unsigned>> own;
    if (!byName)
      byName = &own.emplace(argumentsByName(func));
    auto it = byName->find(update.getValue());
    if (it != byName->end())
      if (auto s =
              func.getArgAttrOfType<ShardingAttr>(it->second, kShardingAttr))
        return s;
    return whole;
  }
  if (func.getResultAttr(index, TgDialect::kMetricAttr))
    return whole;
  if (func.getResultAttr(index, TgDialect::kGradAttr))
    return computed;
  auto output =
      func.getResultAttrOfType<StringAttr>(index, TgDialect::kOutputAttr);
  if (index == 0 || (output && output.getValue() == "loss"))
    return whole;
  return computed.withoutPartial();
}

std::string mlir::tg::describeValue(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
      for (StringRef name :
           {TgDialect::kParamAttr, TgDialect::kStateAttr, TgDialect::kInputAttr,
            TgDialect::kAccumAttr, TgDialect::kScalarAttr})
        if (auto str =
                func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), name)) {
          if (name == TgDialect::kAccumAttr)
            return ("accumulated grad of " + str.getValue()).str();
          return str.getValue().str();
        }
    return llvm::formatv("argument {0}", arg.getArgNumber()).str();
  }
  std::string out;
  llvm::raw_string_ostream os(out);
  Operation *op = value.getDefiningOp();
  os << op->getName().getStringRef();
  if (op->getNumResults() > 1)
    os << " result " << cast<OpResult>(value).getResultNumber();
  if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
    os << " (" << loc.getName().getValue() << ")";
  else if (auto fused = dyn_cast<FusedLoc>(op->getLoc()))
    for (Location l : fused.getLocations())
      if (auto name = dyn_cast<NameLoc>(l)) {
        os << " (" << name.getName().getValue() << ")";
        break;
      }
  return out;
}

//===----------------------------------------------------------------------===//
// decideOpSharding
//===----------------------------------------------------------------------===//

static ShardingAttr makeSharding(MLIRContext *context, StringRef mesh,
                                 ArrayRef<int64_t> dims,
                                 ArrayRef<SmallVector<StringRef>> factorAxes,
                                 ArrayRef<StringRef> partial) {
  SmallVector<SmallVector<StringRef>> axes;
  for (int64_t f : dims)
    axes.push_back(f >= 0 ? factorAxes[f] : SmallVector<StringRef>());
  return ShardingAttr::get(context, mesh, axes, partial);
}

bool mlir::tg::isParamView(Operation *op) {
  return isa_and_nonnull<CastOp, SliceOp, ReshapeOp>(op);
}

Value mlir::tg::throughParamViews(Value v) {
  while (isParamView(v.getDefiningOp()))
    v = v.getDefiningOp()->getOperand(0);
  return v;
}

OpSharding mlir::tg::decideOpSharding(Operation *op,
                                      ArrayRef<ShardingAttr> operands,
                                      MeshOp mesh) {
  MLIRContext *context = op->getContext();
  StringRef meshName = mesh.getSymName();
  OpSharding out;
  auto rankOf = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getRank();
  };
  auto ruleOp = dyn_cast<ShardingRuleOpInterface>(op);
  if (!ruleOp) {
    for (Value v : op->getOperands())
      out.operands.push_back(
          ShardingAttr::replicated(context, meshName, rankOf(v)));
    for (Value v : op->getResults())
      out.results.push_back(
          ShardingAttr::replicated(context, meshName, rankOf(v)));
    return out;
  }
  ShardingRule rule = ruleOp.getShardingRule();

  // Partial sums the op passes on: all operands' (the same axes) for a
  // sum of operands, else that of the first linear operand that has one.
  SmallVector<StringRef> partial;
  int64_t partialOperand = -1;
  if (rule.sumOfOperands) {
    bool same = true;
    std::optional<SmallVector<StringRef>> axes;
    for (ShardingAttr s : operands) {
      if (!s)
        continue;
      SmallVector<StringRef> p = s.partialAxes();
      llvm::sort(p);
      if (axes && *axes != p)
        same = false;
      axes = p;
    }
    if (same && axes)
      partial = *axes;
  } else {
    for (unsigned i : rule.linearOperands)
      if (i < operands.size() && operands[i] && operands[i].isPartial()) {
        partial = operands[i].partialAxes();
        partialOperand = i;
        break;
      }
  }

  // Each factor takes the axes of the first operand that splits it.
  llvm::StringSet<> used;
  for (StringRef a : partial)
    used.insert(a);
  SmallVector<SmallVector<StringRef>> factorAxes(rule.factorSizes.size());
  // Who decides first: parameters split over axes other than the data
  // axes (tensor parallel: the weight keeps its split, the activation is
  // gathered), then the values the op computes on, then the other
  // parameters (a parameter split over the data axes to save memory,
  // ZeRO-3, is gathered rather than take an axis the batch splits).
  SmallVector<StringRef> batchAxes = dataAxes(mesh);
  auto tier = [&](unsigned i) {
    // A view of a parameter is the parameter.
    Value v = throughParamViews(op->getOperand(i));
    auto arg = dyn_cast<BlockArgument>(v);
    auto func =
        arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()) : nullptr;
    if (!func || !func.getArgAttr(arg.getArgNumber(), TgDialect::kParamAttr))
      return 1;
    ShardingAttr s = operands[i];
    for (int64_t d = 0; s && d < s.getRank(); ++d)
      for (StringRef a : s.axesOf(d))
        if (!llvm::is_contained(batchAxes, a))
          return 0;
    return 2;
  };
  SmallVector<unsigned> order;
  for (int t = 0; t < 3; ++t)
    for (unsigned i = 0; i < operands.size(); ++i)
      if (tier(i) == t)
        order.push_back(i);
  for (unsigned i : order) {
    ShardingAttr s = operands[i];
    if (!s || i >= rule.operandDims.size())
      continue;
    for (auto [d, f] : llvm::enumerate(rule.operandDims[i])) {
      if (f < 0 || !factorAxes[f].empty() || (int64_t)d >= s.getRank())
        continue;
      SmallVector<StringRef> axes = s.axesOf(d);
      if (axes.empty() ||
          llvm::any_of(axes, [&](StringRef a) { return used.contains(a); }))
        continue;
      int64_t parts = 1;
      for (StringRef a : axes)
        parts *= mesh.axisSize(a);
      if (rule.factorSizes[f] % parts != 0)
        continue;
      factorAxes[f] = axes;
      for (StringRef a : axes)
        used.insert(a);
      if (out.decidedBy < 0)
        out.decidedBy = i;
    }
  }

  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    bool keepsPartial = rule.sumOfOperands || (int64_t)i == partialOperand;
    out.operands.push_back(makeSharding(
        context, meshName,
        i < rule.operandDims.size() ? ArrayRef<int64_t>(rule.operandDims[i])
                                    : ArrayRef<int64_t>(),
        factorAxes,
        keepsPartial ? ArrayRef<StringRef>(partial) : ArrayRef<StringRef>()));
    if (out.operands.back().getRank() != rankOf(v))
      out.operands.back() =
          ShardingAttr::replicated(context, meshName, rankOf(v));
  }
  // A split factor a result lacks is summed over: the result is partial
  // over its axes.
  for (auto [i, v] : llvm::enumerate(op->getResults())) {
    ArrayRef<int64_t> dims = rule.resultDims[i];
    llvm::SetVector<StringRef> resultPartial(partial.begin(), partial.end());
    for (auto [f, axes] : llvm::enumerate(factorAxes))
      if (!axes.empty() && !llvm::is_contained(dims, (int64_t)f) &&
          isa<FloatType>(cast<RankedTensorType>(v.getType()).getElementType()))
        resultPartial.insert(axes.begin(), axes.end());
    out.results.push_back(makeSharding(context, meshName, dims, factorAxes,
                                       resultPartial.getArrayRef()));
  }
  for (int64_t f : rule.meanFactors)
    for (StringRef a : factorAxes[f]) {
      if (mesh.isElastic(a))
        out.meanOverElastic.push_back(a);
      else
        out.scale /= mesh.axisSize(a);
    }
  return out;
}

//===----------------------------------------------------------------------===//
// reshard
//===----------------------------------------------------------------------===//

SmallVector<ReshardStep> mlir::tg::reshardSteps(ShardingAttr from,
                                                ShardingAttr to) {
  SmallVector<ReshardStep> steps;
  SmallVector<SmallVector<StringRef>> dims;
  for (int64_t d = 0; d < from.getRank(); ++d)
    dims.push_back(from.axesOf(d));
  SmallVector<StringRef> target = to.partialAxes();
  for (StringRef axis : from.partialAxes()) {
    if (llvm::is_contained(target, axis))
      continue;
    int64_t d = to.dimOf(axis);
    SmallVector<StringRef> wanted =
        d >= 0 ? to.axesOf(d) : SmallVector<StringRef>();
    bool scatter = d >= 0 && wanted.size() > dims[d].size() &&
                   ArrayRef<StringRef>(wanted).take_front(dims[d].size()) ==
                       ArrayRef<StringRef>(dims[d]) &&
                   wanted[dims[d].size()] == axis;
    if (scatter) {
      steps.push_back({ReshardStep::ReduceScatter, axis, d});
      dims[d].push_back(axis);
    } else {
      steps.push_back({ReshardStep::AllReduce, axis, -1});
    }
  }
  for (int64_t d = 0; d < (int64_t)dims.size(); ++d) {
    SmallVector<StringRef> wanted = to.axesOf(d);
    auto isPrefix = [&] {
      return dims[d].size() <= wanted.size() &&
             ArrayRef<StringRef>(wanted).take_front(dims[d].size()) ==
                 ArrayRef<StringRef>(dims[d]);
    };
    while (!isPrefix())
      steps.push_back({ReshardStep::AllGather, dims[d].pop_back_val(), d});
  }
  for (int64_t d = 0; d < (int64_t)dims.size(); ++d) {
    SmallVector<StringRef> wanted = to.axesOf(d);
    for (size_t k = dims[d].size(); k < wanted.size(); ++k)
      steps.push_back({ReshardStep::AllSlice, wanted[k], d});
  }
  for (StringRef axis : target)
    if (!llvm::is_contained(from.partialAxes(), axis))
      steps.push_back({ReshardStep::MakePartial, axis, -1});
  return steps;
}

Value mlir::tg::axisCoordinate(OpBuilder &builder, Location loc, MeshOp mesh,
                               StringRef axis, StringRef why) {
  auto f32 = builder.getF32Type();
  auto counts = RankedTensorType::get({mesh.axisSize(axis)}, f32);
  auto one = RankedTensorType::get({1}, f32);
  Value iota = IotaOp::create(builder, loc, counts, /*dimension=*/0,
                              llvm::APFloat(0.0), llvm::APFloat(1.0));
  Operation *coordinate =
      AllSliceOp::create(builder, loc, one, iota, builder.getI64IntegerAttr(0),
                         builder.getStringAttr(axis));
  coordinate->setAttr(kReshardAttr, builder.getStringAttr(why));
  return coordinate->getResult(0);
}

Value mlir::tg::reshard(OpBuilder &builder, Location loc, Value value,
                        ShardingAttr from, ShardingAttr to, MeshOp mesh,
                        StringRef what) {
  if (from == to)
    return value;
  MLIRContext *context = builder.getContext();
  // Axis names unquoted: the reason reads as one string attribute.
  std::string why =
      (what + ": " + formatSharding(from) + " -> " + formatSharding(to)).str();
  llvm::erase(why, '"');
  for (const ReshardStep &step : reshardSteps(from, to)) {
    auto type = cast<RankedTensorType>(value.getType());
    SmallVector<int64_t> shape(type.getShape());
    StringAttr axis = builder.getStringAttr(step.axis);
    Operation *op = nullptr;
    switch (step.kind) {
    case ReshardStep::ReduceScatter:
      shape[step.dim] /= mesh.axisSize(step.axis);
      op = ReduceScatterOp::create(builder, loc, type.clone(shape), value,
                                   builder.getI64IntegerAttr(step.dim), axis,
                                   ReductionAttr::get(context, Reduction::sum));
      break;
    case ReshardStep::AllReduce:
      op = AllReduceOp::create(builder, loc, ValueRange{value},
                               ReductionAttr::get(context, Reduction::sum),
                               axis, IntegerAttr());
      break;
    case ReshardStep::AllGather:
      shape[step.dim] *= mesh.axisSize(step.axis);
      op = AllGatherOp::create(builder, loc, type.clone(shape), value,
                               builder.getI64IntegerAttr(step.dim), axis);
      break;
    case ReshardStep::AllSlice:
      shape[step.dim] /= mesh.axisSize(step.axis);
      op = AllSliceOp::create(builder, loc, type.clone(shape), value,
                              builder.getI64IntegerAttr(step.dim), axis);
      break;
    case ReshardStep::MakePartial: {
      // This process's coordinate on the axis, as its piece of [0, n), and
      // the value where it is 0, zero elsewhere: the sum over the axis is
      // the value, exactly.
      auto one = RankedTensorType::get({1}, builder.getF32Type());
      Value coordinate = axisCoordinate(builder, loc, mesh, step.axis, why);
      Value zero = ConstantOp::create(
          builder, loc,
          DenseElementsAttr::get(one, builder.getF32FloatAttr(0)));
      Value first = CompareOp::create(
          builder, loc,
          ComparePredicateAttr::get(context, ComparePredicate::eq), coordinate,
          zero);
      auto scalar = RankedTensorType::get({}, type.getElementType());
      Value none = ConstantOp::create(
          builder, loc,
          DenseElementsAttr::get(scalar,
                                 builder.getZeroAttr(type.getElementType())));
      op = SelectOp::create(builder, loc, first, value, none);
      break;
    }
    }
    // The select of a partial sum is no collective: its coordinate's slice
    // carries the reason.
    if (step.kind != ReshardStep::MakePartial)
      op->setAttr(kReshardAttr, StringAttr::get(context, why));
    value = op->getResult(0);
  }
  return value;
}
