//===- TgSharding.cpp - Meshes, shardings and collectives -------*- C++ -*-===//
//
// The #tg.sharding attribute (its syntax and the checks it carries alone),
// tg.mesh and tg.sharding_constraint, the verifiers of the collectives that
// change shapes, and the helpers every sharding pass uses to read and write
// the sharding of a value.
//
//===----------------------------------------------------------------------===//

#include "dialects/tg/IR/TgSharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::tg;

//===----------------------------------------------------------------------===//
// #tg.sharding
//===----------------------------------------------------------------------===//

static ArrayAttr stringArray(MLIRContext *context, ArrayRef<StringRef> names) {
  SmallVector<Attribute> attrs;
  for (StringRef name : names)
    attrs.push_back(StringAttr::get(context, name));
  return ArrayAttr::get(context, attrs);
}

ShardingAttr ShardingAttr::get(MLIRContext *context, StringRef mesh,
                               ArrayRef<SmallVector<StringRef>> dims,
                               ArrayRef<StringRef> partial) {
  SmallVector<Attribute> dimAttrs;
  for (const SmallVector<StringRef> &axes : dims)
    dimAttrs.push_back(stringArray(context, axes));
  return get(context, FlatSymbolRefAttr::get(context, mesh),
             ArrayAttr::get(context, dimAttrs), stringArray(context, partial));
}

ShardingAttr ShardingAttr::replicated(MLIRContext *context, StringRef mesh,
                                      int64_t rank) {
  SmallVector<SmallVector<StringRef>> dims(rank);
  return get(context, mesh, dims);
}

SmallVector<StringRef> ShardingAttr::axesOf(int64_t dim) const {
  SmallVector<StringRef> out;
  for (Attribute a : cast<ArrayAttr>(getDims()[dim]))
    out.push_back(cast<StringAttr>(a).getValue());
  return out;
}

SmallVector<StringRef> ShardingAttr::partialAxes() const {
  SmallVector<StringRef> out;
  for (Attribute a : getPartial())
    out.push_back(cast<StringAttr>(a).getValue());
  return out;
}

int64_t ShardingAttr::dimOf(StringRef axis) const {
  for (int64_t d = 0; d < getRank(); ++d)
    if (llvm::is_contained(axesOf(d), axis))
      return d;
  return -1;
}

bool ShardingAttr::isReplicated() const {
  return !isPartial() && llvm::all_of(getDims(), [](Attribute a) {
    return cast<ArrayAttr>(a).empty();
  });
}

ShardingAttr ShardingAttr::withoutPartial() const {
  return get(getContext(), getMesh(), getDims(),
             ArrayAttr::get(getContext(), {}));
}

LogicalResult ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   FlatSymbolRefAttr mesh, ArrayAttr dims,
                                   ArrayAttr partial) {
  if (!mesh)
    return emitError() << "a sharding needs a mesh";
  llvm::StringSet<> seen;
  auto check = [&](Attribute a) -> LogicalResult {
    auto name = dyn_cast<StringAttr>(a);
    if (!name || name.getValue().empty())
      return emitError() << "mesh axes are named by non-empty strings";
    if (!seen.insert(name.getValue()).second)
      return emitError() << "mesh axis \"" << name.getValue()
                         << "\" is used more than once";
    return success();
  };
  for (Attribute dim : dims) {
    auto axes = dyn_cast<ArrayAttr>(dim);
    if (!axes)
      return emitError() << "each dimension's sharding is a list of axes";
    for (Attribute a : axes)
      if (failed(check(a)))
        return failure();
  }
  for (Attribute a : partial)
    if (failed(check(a)))
      return failure();
  return success();
}

// {"a", "b"}
static ParseResult parseAxisSet(AsmParser &parser,
                                SmallVectorImpl<Attribute> &axes) {
  if (parser.parseLBrace())
    return failure();
  if (succeeded(parser.parseOptionalRBrace()))
    return success();
  do {
    std::string name;
    if (parser.parseString(&name))
      return failure();
    axes.push_back(StringAttr::get(parser.getContext(), name));
  } while (succeeded(parser.parseOptionalComma()));
  return parser.parseRBrace();
}

static void printAxisSet(llvm::raw_ostream &os, ArrayAttr axes) {
  os << '{';
  llvm::interleaveComma(axes, os, [&](Attribute a) {
    os << '"' << cast<StringAttr>(a).getValue() << '"';
  });
  os << '}';
}

Attribute ShardingAttr::parse(AsmParser &parser, Type) {
  MLIRContext *context = parser.getContext();
  FlatSymbolRefAttr mesh;
  SmallVector<Attribute> dims, partial;
  if (parser.parseLess() || parser.parseAttribute(mesh) ||
      parser.parseComma() || parser.parseLSquare())
    return {};
  if (failed(parser.parseOptionalRSquare())) {
    do {
      SmallVector<Attribute> axes;
      if (parseAxisSet(parser, axes))
        return {};
      dims.push_back(ArrayAttr::get(context, axes));
    } while (succeeded(parser.parseOptionalComma()));
    if (parser.parseRSquare())
      return {};
  }
  if (succeeded(parser.parseOptionalComma()))
    if (parser.parseKeyword("partial") || parser.parseEqual() ||
        parseAxisSet(parser, partial))
      return {};
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                    context, mesh, ArrayAttr::get(context, dims),
                    ArrayAttr::get(context, partial));
}

void ShardingAttr::print(AsmPrinter &printer) const {
  printer << '<' << getMesh() << ", " << formatSharding(*this) << '>';
}

std::string mlir::tg::formatSharding(ShardingAttr sharding) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << '[';
  llvm::interleaveComma(sharding.getDims(), os, [&](Attribute a) {
    printAxisSet(os, cast<ArrayAttr>(a));
  });
  os << ']';
  if (sharding.isPartial()) {
    os << ", partial = ";
    printAxisSet(os, sharding.getPartial());
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Meshes and the sharding of values
//===----------------------------------------------------------------------===//

static ModuleOp moduleOf(Operation *op) {
  if (auto module = dyn_cast<ModuleOp>(op))
    return module;
  return op->getParentOfType<ModuleOp>();
}

ArrayRef<StringRef> mlir::tg::shardPresetNames() {
  static const SmallVector<StringRef> names = [] {
    SmallVector<StringRef> all;
    for (uint32_t i = 0; i <= getMaxEnumValForShardPreset(); ++i)
      all.push_back(stringifyShardPreset(static_cast<ShardPreset>(i)));
    return all;
  }();
  return names;
}

bool mlir::tg::isTensorParallelPreset(StringRef name) {
  return name == "tp" || isSequenceParallelPreset(name);
}

bool mlir::tg::isSequenceParallelPreset(StringRef name) {
  return name == "sp" || name == "megatron";
}

Operation *mlir::tg::forwardEndOf(func::FuncOp step) {
  Operation *ret = step.getBody().front().getTerminator();
  Operation *end = nullptr;
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    auto metric =
        step.getResultAttrOfType<StringAttr>(i, TgDialect::kMetricAttr);
    if (!metric || metric.getValue() != "loss")
      continue;
    Operation *def = v.getDefiningOp();
    while (isa_and_nonnull<AllReduceOp, AllGatherOp, ReduceScatterOp>(def))
      def = def->getOperand(0).getDefiningOp();
    if (def && (!end || end->isBeforeInBlock(def)))
      end = def;
  }
  return end;
}

DenseSet<Value> mlir::tg::valuesFromBatch(func::FuncOp func) {
  DenseSet<Value> fromBatch;
  for (BlockArgument arg : func.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (!func.getArgAttr(i, TgDialect::kParamAttr) &&
        !func.getArgAttr(i, TgDialect::kStateAttr) &&
        !func.getArgAttr(i, TgDialect::kAccumAttr) &&
        !func.getArgAttr(i, TgDialect::kReducedAttr))
      fromBatch.insert(arg);
  }
  for (Operation &op : func.getBody().front().without_terminator())
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return fromBatch.contains(v); }))
      fromBatch.insert(op.result_begin(), op.result_end());
  return fromBatch;
}

MeshOp mlir::tg::lookupMesh(Operation *from, FlatSymbolRefAttr name) {
  ModuleOp module = moduleOf(from);
  if (!module || !name)
    return {};
  return dyn_cast_or_null<MeshOp>(
      SymbolTable::lookupSymbolIn(module, name.getAttr()));
}

MeshOp mlir::tg::getModuleMesh(Operation *from) {
  ModuleOp module = moduleOf(from);
  if (!module)
    return {};
  auto meshes = module.getOps<MeshOp>();
  return meshes.empty() ? MeshOp() : *meshes.begin();
}

LogicalResult
mlir::tg::verifyShardingFor(ShardingAttr sharding, Type type, MeshOp mesh,
                            function_ref<InFlightDiagnostic()> emitError) {
  if (!mesh)
    return emitError() << "sharding names mesh " << sharding.getMesh()
                       << ", which the module does not define";
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return emitError() << "only a ranked tensor can be sharded, not " << type;
  if (sharding.getRank() != tensor.getRank())
    return emitError() << "sharding has " << sharding.getRank()
                       << " dimensions for a tensor of rank "
                       << tensor.getRank();
  auto known = [&](StringRef axis) -> LogicalResult {
    if (mesh.axisSize(axis) > 0)
      return success();
    InFlightDiagnostic diag = emitError();
    diag << "unknown mesh axis \"" << axis << "\"; mesh @" << mesh.getSymName()
         << " has ";
    llvm::interleaveComma(mesh.getAxisNames(), diag,
                          [&](StringRef a) { diag << '"' << a << '"'; });
    return diag;
  };
  for (int64_t d = 0; d < tensor.getRank(); ++d) {
    int64_t parts = 1;
    for (StringRef axis : sharding.axesOf(d)) {
      if (failed(known(axis)))
        return failure();
      parts *= mesh.axisSize(axis);
    }
    if (tensor.getDimSize(d) % parts != 0) {
      InFlightDiagnostic diag = emitError();
      diag << "dimension " << d << " of size " << tensor.getDimSize(d)
           << " does not divide into " << parts << " pieces over ";
      llvm::interleaveComma(sharding.axesOf(d), diag,
                            [&](StringRef a) { diag << '"' << a << '"'; });
      return diag;
    }
  }
  for (StringRef axis : sharding.partialAxes())
    if (failed(known(axis)))
      return failure();
  return success();
}

SmallVector<int64_t> mlir::tg::localShape(ShardingAttr sharding,
                                          ArrayRef<int64_t> shape,
                                          MeshOp mesh) {
  SmallVector<int64_t> out(shape);
  if (!sharding)
    return out;
  for (int64_t d = 0; d < (int64_t)out.size(); ++d)
    for (StringRef axis : sharding.axesOf(d))
      out[d] /= mesh.axisSize(axis);
  return out;
}

Type mlir::tg::globalType(Type local, ShardingAttr sharding, MeshOp mesh) {
  auto type = dyn_cast<RankedTensorType>(local);
  if (!type || !mesh || sharding.getRank() != type.getRank())
    return local;
  SmallVector<int64_t> shape(type.getShape());
  for (int64_t d = 0; d < type.getRank(); ++d)
    for (StringRef axis : sharding.axesOf(d))
      if (mesh.axisSize(axis) > 0)
        shape[d] *= mesh.axisSize(axis);
  return type.clone(shape);
}

ShardingAttr mlir::tg::getSharding(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    if (!func)
      return {};
    return func.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(),
                                               kShardingAttr);
  }
  Operation *op = value.getDefiningOp();
  auto all = op->getAttrOfType<ArrayAttr>(kShardingAttr);
  unsigned index = cast<OpResult>(value).getResultNumber();
  if (!all || index >= all.size())
    return {};
  return dyn_cast<ShardingAttr>(all[index]);
}

StringRef mlir::tg::getShardingOrigin(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    auto origin = func ? func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                           kShardingOriginAttr)
                       : StringAttr();
    return origin ? origin.getValue() : "";
  }
  auto all =
      value.getDefiningOp()->getAttrOfType<ArrayAttr>(kShardingOriginAttr);
  unsigned index = cast<OpResult>(value).getResultNumber();
  if (!all || index >= all.size())
    return "";
  auto origin = dyn_cast<StringAttr>(all[index]);
  return origin ? origin.getValue() : "";
}

void mlir::tg::setArgShardings(func::FuncOp func,
                               ArrayRef<ArgSharding> shardings) {
  if (shardings.empty())
    return;
  MLIRContext *context = func.getContext();
  SmallVector<DictionaryAttr> dicts;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    dicts.push_back(func.getArgAttrDict(i));
  for (const ArgSharding &s : shardings) {
    NamedAttrList attrs;
    if (dicts[s.index])
      attrs.append(dicts[s.index].getValue());
    attrs.set(kShardingAttr, s.sharding);
    attrs.set(kShardingOriginAttr, StringAttr::get(context, s.origin));
    dicts[s.index] = attrs.getDictionary(context);
  }
  func.setAllArgAttrs(dicts);
}

void mlir::tg::setResultShardings(func::FuncOp func,
                                  ArrayRef<ShardingAttr> shardings) {
  MLIRContext *context = func.getContext();
  SmallVector<DictionaryAttr> dicts;
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i) {
    DictionaryAttr dict = func.getResultAttrDict(i);
    if (i < shardings.size() && shardings[i]) {
      NamedAttrList attrs;
      if (dict)
        attrs.append(dict.getValue());
      attrs.set(kShardingAttr, shardings[i]);
      dict = attrs.getDictionary(context);
    }
    dicts.push_back(dict);
  }
  func.setAllResultAttrs(dicts);
}

void mlir::tg::setSharding(Value value, ShardingAttr sharding,
                           StringRef origin) {
  MLIRContext *context = value.getContext();
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    setArgShardings(cast<func::FuncOp>(arg.getOwner()->getParentOp()),
                    {{arg.getArgNumber(), sharding, origin.str()}});
    return;
  }
  // An op holds one entry per result: a result set later keeps its place,
  // one not set yet is replicated with no origin.
  Operation *op = value.getDefiningOp();
  unsigned index = cast<OpResult>(value).getResultNumber();
  SmallVector<Attribute> shardings, origins;
  for (Value result : op->getResults()) {
    ShardingAttr old = getSharding(result);
    shardings.push_back(
        old ? old
            : ShardingAttr::replicated(
                  context, sharding.getMesh().getValue(),
                  cast<RankedTensorType>(result.getType()).getRank()));
    origins.push_back(StringAttr::get(context, getShardingOrigin(result)));
  }
  shardings[index] = sharding;
  origins[index] = StringAttr::get(context, origin);
  op->setAttr(kShardingAttr, ArrayAttr::get(context, shardings));
  op->setAttr(kShardingOriginAttr, ArrayAttr::get(context, origins));
}

//===----------------------------------------------------------------------===//
// tg.mesh
//===----------------------------------------------------------------------===//

int64_t MeshOp::axisSize(StringRef name) {
  for (auto [axis, size] : llvm::zip(getAxes(), getShape()))
    if (cast<StringAttr>(axis).getValue() == name)
      return size;
  return -1;
}

int64_t MeshOp::getNumProcesses() {
  int64_t n = 1;
  for (int64_t size : getShape())
    n *= size;
  return n;
}

bool MeshOp::isElastic(StringRef name) {
  auto elastic = getElastic();
  return elastic && llvm::any_of(*elastic, [&](Attribute a) {
           return cast<StringAttr>(a).getValue() == name;
         });
}

SmallVector<StringRef> MeshOp::getAxisNames() {
  SmallVector<StringRef> out;
  for (Attribute a : getAxes())
    out.push_back(cast<StringAttr>(a).getValue());
  return out;
}

LogicalResult MeshOp::verify() {
  if (getAxes().empty())
    return emitOpError() << "needs at least one axis";
  if (getAxes().size() != getShape().size())
    return emitOpError() << "has " << getAxes().size() << " axis names for "
                         << getShape().size() << " sizes";
  llvm::StringSet<> seen;
  for (auto [axis, size] : llvm::zip(getAxisNames(), getShape())) {
    if (axis.empty())
      return emitOpError() << "mesh axes are named by non-empty strings";
    if (!seen.insert(axis).second)
      return emitOpError() << "axis \"" << axis << "\" appears twice";
    if (size < 1)
      return emitOpError() << "axis \"" << axis
                           << "\" must have a size of at least 1, got " << size;
  }
  if (auto elastic = getElastic()) {
    for (Attribute a : *elastic)
      if (!seen.contains(cast<StringAttr>(a).getValue()))
        return emitOpError() << "elastic axis " << a << " is not an axis";
    if (elastic->size() > 1)
      return emitOpError() << "has " << elastic->size()
                           << " elastic axes; at most one takes its size "
                              "from the process count";
  }
  return success();
}

// tg.mesh @mesh ["data" = 2, "tp" = 4], an axis optionally `elastic`
ParseResult MeshOp::parse(OpAsmParser &parser, OperationState &result) {
  StringAttr name;
  SmallVector<Attribute> axes, elastic;
  SmallVector<int64_t> shape;
  if (parser.parseSymbolName(name, getSymNameAttrName(result.name),
                             result.attributes) ||
      parser.parseLSquare())
    return failure();
  if (failed(parser.parseOptionalRSquare())) {
    do {
      std::string axis;
      int64_t size = 0;
      if (parser.parseString(&axis) || parser.parseEqual() ||
          parser.parseInteger(size))
        return failure();
      axes.push_back(parser.getBuilder().getStringAttr(axis));
      shape.push_back(size);
      if (succeeded(parser.parseOptionalKeyword("elastic")))
        elastic.push_back(axes.back());
    } while (succeeded(parser.parseOptionalComma()));
    if (parser.parseRSquare())
      return failure();
  }
  result.addAttribute(getAxesAttrName(result.name),
                      parser.getBuilder().getArrayAttr(axes));
  result.addAttribute(getShapeAttrName(result.name),
                      parser.getBuilder().getDenseI64ArrayAttr(shape));
  if (!elastic.empty())
    result.addAttribute(getElasticAttrName(result.name),
                        parser.getBuilder().getArrayAttr(elastic));
  return parser.parseOptionalAttrDict(result.attributes);
}

void MeshOp::print(OpAsmPrinter &printer) {
  printer << ' ';
  printer.printSymbolName(getSymName());
  printer << " [";
  llvm::interleaveComma(
      llvm::zip(getAxisNames(), getShape()), printer, [&](auto entry) {
        printer << '"' << std::get<0>(entry) << "\" = " << std::get<1>(entry);
        if (isElastic(std::get<0>(entry)))
          printer << " elastic";
      });
  printer << ']';
  printer.printOptionalAttrDict((*this)->getAttrs(),
                                {getSymNameAttrName(), getAxesAttrName(),
                                 getShapeAttrName(), getElasticAttrName()});
}

//===----------------------------------------------------------------------===//
// tg.sharding_constraint and the collectives
//===----------------------------------------------------------------------===//

LogicalResult ShardingConstraintOp::verify() {
  return verifyShardingFor(getSharding(), getInput().getType(),
                           lookupMesh(*this, getSharding().getMesh()),
                           [&] { return emitOpError(); });
}

/// The size of `axis` in the module's mesh, or a diagnostic.
static FailureOr<int64_t> collectiveAxisSize(Operation *op, StringRef axis) {
  MeshOp mesh = getModuleMesh(op);
  if (!mesh)
    return op->emitOpError() << "runs over mesh axis \"" << axis
                             << "\" but the module defines no tg.mesh";
  int64_t size = mesh.axisSize(axis);
  if (size < 1)
    return op->emitOpError()
           << "runs over mesh axis \"" << axis << "\", which mesh @"
           << mesh.getSymName() << " does not have";
  return size;
}

/// `gathers`: the result's `dim` is the input's times the axis size;
/// otherwise divided by it. Every other dim and the element type agree.
static LogicalResult verifyReshapingCollective(Operation *op, int64_t dim,
                                               StringRef axis, bool gathers) {
  auto input = cast<RankedTensorType>(op->getOperand(0).getType());
  auto result = cast<RankedTensorType>(op->getResult(0).getType());
  if (dim >= input.getRank())
    return op->emitOpError()
           << "dim " << dim << " is out of range for rank " << input.getRank();
  FailureOr<int64_t> size = collectiveAxisSize(op, axis);
  if (failed(size))
    return failure();
  if (input.getElementType() != result.getElementType() ||
      input.getRank() != result.getRank())
    return op->emitOpError() << "result " << result
                             << " must have the input's rank and element type";
  SmallVector<int64_t> expected(input.getShape());
  if (gathers) {
    expected[dim] *= *size;
  } else {
    if (expected[dim] % *size != 0)
      return op->emitOpError() << "dim " << dim << " of size " << expected[dim]
                               << " does not divide over the " << *size
                               << " processes of \"" << axis << "\"";
    expected[dim] /= *size;
  }
  if (result.getShape() != ArrayRef<int64_t>(expected))
    return op->emitOpError()
           << "result shape must be " << formatShape(expected) << " over the "
           << *size << " processes of \"" << axis << "\", got "
           << formatShape(result.getShape());
  return success();
}

/// A peer `offset` away on `axis`: not this process, and on the axis for
/// some process (|offset| below the axis size).
static LogicalResult verifyPeer(Operation *op, StringRef axis,
                                int64_t offset) {
  FailureOr<int64_t> size = collectiveAxisSize(op, axis);
  if (failed(size))
    return failure();
  if (offset == 0)
    return op->emitOpError() << "offset 0 names this process itself";
  if (offset <= -*size || offset >= *size)
    return op->emitOpError() << "offset " << offset << " reaches past the "
                             << *size << " processes of \"" << axis << "\"";
  return success();
}

LogicalResult SendOp::verify() {
  return verifyPeer(*this, getMeshAxis(), getOffset());
}

LogicalResult RecvOp::verify() {
  return verifyPeer(*this, getMeshAxis(), getOffset());
}

LogicalResult AllGatherOp::verify() {
  return verifyReshapingCollective(*this, getDim(), getMeshAxis(), true);
}

LogicalResult ReduceScatterOp::verify() {
  return verifyReshapingCollective(*this, getDim(), getMeshAxis(), false);
}

LogicalResult AllSliceOp::verify() {
  return verifyReshapingCollective(*this, getDim(), getMeshAxis(), false);
}
