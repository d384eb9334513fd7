//===- TgDialect.cpp - The tg training dialect --------------------*- C++ -*-===//
//
// Registers the ops and attributes and checks the discardable attributes the
// dialect owns: parameter and input markers on function arguments, output
// names on results, and the model name, training table and precision policy
// on the module.
//
//===----------------------------------------------------------------------===//

#include "dialects/tg/IR/TgDialect.h"
#include "dialects/tg/IR/TgOps.h"
#include "dialects/tg/IR/TgSharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"

#include <optional>

#include <cmath>

using namespace mlir;
using namespace mlir::tg;

#include "dialects/tg/IR/TgDialect.cpp.inc"
#include "dialects/tg/IR/TgEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/tg/IR/TgAttrs.cpp.inc"

void TgDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/tg/IR/TgOps.cpp.inc"
      >();
  registerAttributes();
  registerVJPs();
  registerShardingRules();
}

void TgDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/tg/IR/TgAttrs.cpp.inc"
      >();
}

Operation *TgDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                          Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

//===----------------------------------------------------------------------===//
// InitializerAttr
//===----------------------------------------------------------------------===//

LogicalResult
InitializerAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        InitKind kind, APFloat meanF, APFloat stdF,
                        APFloat lowF, APFloat highF, APFloat gainF,
                        APFloat valueF, StringRef file, StringRef key) {
  double mean = meanF.convertToDouble(), std = stdF.convertToDouble(),
         low = lowF.convertToDouble(), high = highF.convertToDouble(),
         gain = gainF.convertToDouble();
  // The fields a kind reads must be finite (hex float literals can spell
  // infinities and NaN).
  auto requireFinite =
      [&](std::initializer_list<std::pair<StringRef, double>> fields)
      -> LogicalResult {
    for (auto [name, value] : fields)
      if (!std::isfinite(value))
        return emitError() << stringifyInitKind(kind) << " initializer needs a"
                           << " finite " << name << ", got "
                           << formatDouble(value);
    return success();
  };
  switch (kind) {
  case InitKind::normal:
    if (failed(requireFinite({{"mean", mean}, {"std", std}})))
      return failure();
    if (!(std >= 0))
      return emitError() << "normal initializer needs std >= 0, got "
                         << formatDouble(std);
    break;
  case InitKind::uniform:
    if (failed(requireFinite({{"low", low}, {"high", high}})))
      return failure();
    if (!(low <= high))
      return emitError() << "uniform initializer needs low <= high, got low "
                         << formatDouble(low) << " and high "
                         << formatDouble(high);
    break;
  case InitKind::xavier_uniform:
  case InitKind::xavier_normal:
  case InitKind::kaiming_uniform:
  case InitKind::kaiming_normal:
    if (failed(requireFinite({{"gain", gain}})))
      return failure();
    if (!(gain > 0))
      return emitError() << stringifyInitKind(kind)
                         << " initializer needs gain > 0, got "
                         << formatDouble(gain);
    break;
  case InitKind::file:
    if (file.empty() || key.empty())
      return emitError() << "file initializer needs both 'file' and 'key'";
    break;
  case InitKind::constant:
    if (failed(requireFinite({{"value", valueF.convertToDouble()}})))
      return failure();
    break;
  case InitKind::zeros:
  case InitKind::ones:
    break;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Discardable attributes
//===----------------------------------------------------------------------===//

/// tg.slot: a value number of a pipelined step.
static LogicalResult verifySlotAttr(Operation *op, NamedAttribute attr) {
  auto slot = dyn_cast<IntegerAttr>(attr.getValue());
  if (!slot || slot.getInt() < 0)
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' must be a non-negative integer";
  return success();
}

static LogicalResult verifyStringAttr(Operation *op, NamedAttribute attr) {
  auto str = dyn_cast<StringAttr>(attr.getValue());
  if (!str || str.getValue().empty())
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' must be a non-empty string";
  return success();
}

/// `tg.sharding` on a function argument or result of type `type`.
static LogicalResult verifyValueSharding(Operation *op, NamedAttribute attr,
                                         Type type, StringRef what) {
  auto sharding = dyn_cast<ShardingAttr>(attr.getValue());
  if (!sharding)
    return op->emitError() << "'" << attr.getName().getValue() << "' on "
                           << what << " must be a #tg.sharding";
  MeshOp mesh = lookupMesh(op, sharding.getMesh());
  // A partitioned function's types are the pieces of the global tensors.
  if (op->hasAttr(kPartitionedAttr))
    type = globalType(type, sharding, mesh);
  return verifyShardingFor(sharding, type, mesh, [&] {
    InFlightDiagnostic diag = op->emitError();
    diag << what << ": ";
    return diag;
  });
}

LogicalResult TgDialect::verifyRegionArgAttribute(Operation *op,
                                                  unsigned regionIndex,
                                                  unsigned argIndex,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  auto func = dyn_cast<FunctionOpInterface>(op);
  Type argType = func && argIndex < func.getNumArguments()
                     ? func.getArgumentTypes()[argIndex]
                     : Type();
  if (name == kParamAttr || name == kInputAttr || name == kOutputAttr ||
      name == kStateAttr || name == kAccumAttr || name == kReducedAttr)
    return verifyStringAttr(op, attr);
  if (name == kSlotAttr)
    return verifySlotAttr(op, attr);
  if (name == kShardingAttr)
    return verifyValueSharding(op, attr, argType,
                               "argument " + std::to_string(argIndex));
  if (name == kShardingOriginAttr) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << name << "' must be a string";
    return success();
  }
  if (name == kShardPresetAttr) {
    if (!isa<ShardPresetAttr>(attr.getValue()))
      return op->emitError() << "'" << name
                             << "' must be #tg<shard dp|zero1|zero2|zero3|tp|"
                                "sp|megatron>, got "
                             << attr.getValue();
    return success();
  }
  if (name == kScalarAttr) {
    auto str = dyn_cast<StringAttr>(attr.getValue());
    if (!str || !llvm::is_contained({"step", "base_lr", "micro_batches"},
                                    str.getValue()))
      return op->emitError()
             << "'" << name
             << "' must be \"step\", \"base_lr\" or \"micro_batches\"";
    return success();
  }
  if (name == kInitAttr) {
    if (!isa<InitializerAttr>(attr.getValue()))
      return op->emitError() << "'" << name << "' on argument " << argIndex
                             << " must be a #tg.init attribute";
    return success();
  }
  if (name == kFrozenAttr) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << name << "' must be a unit attribute";
    return success();
  }
  if (name == kFileShapeAttr) {
    auto shape = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!shape || shape.empty() || shape.size() > 8 ||
        llvm::any_of(shape.asArrayRef(), [](int64_t d) { return d <= 0; }))
      return op->emitError() << "'" << name << "' on argument " << argIndex
                             << " must be an array of 1 to 8 positive sizes";
    // A view of the same elements; after tg-partition the argument is one
    // process's piece.
    auto tensor = dyn_cast_or_null<RankedTensorType>(argType);
    if (tensor && tensor.hasStaticShape() && !op->hasAttr(kPartitionedAttr)) {
      int64_t elements = 1;
      for (int64_t d : shape.asArrayRef())
        elements *= d;
      if (elements != tensor.getNumElements())
        return op->emitError()
               << "'" << name << "' on argument " << argIndex << " has "
               << elements << " elements, its tensor "
               << tensor.getNumElements();
    }
    return success();
  }
  if (name == kDimNamesAttr) {
    auto names = dyn_cast<ArrayAttr>(attr.getValue());
    auto tensor = dyn_cast_or_null<RankedTensorType>(argType);
    if (!names || !llvm::all_of(names, llvm::IsaPred<StringAttr>))
      return op->emitError() << "'" << name << "' must be an array of strings";
    if (tensor && (int64_t)names.size() != tensor.getRank())
      return op->emitError() << "'" << name << "' on argument " << argIndex
                             << " has " << names.size()
                             << " names for a tensor of rank "
                             << tensor.getRank();
    for (Attribute dim : names) {
      StringRef dimName = cast<StringAttr>(dim).getValue();
      if (!dimName.empty() && dimName != "batch" && dimName != "seq")
        return op->emitError() << "'" << name << "' entries must be \"batch\", "
                               << "\"seq\" or \"\", got \"" << dimName << "\"";
    }
    return success();
  }
  return op->emitError() << "unknown tg argument attribute '" << name << "'";
}

LogicalResult TgDialect::verifyRegionResultAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned resultIndex,
                                                     NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kOutputAttr || name == kGradAttr || name == kUpdateAttr ||
      name == kMetricAttr || name == kReducedAttr)
    return verifyStringAttr(op, attr);
  if (name == kSlotAttr)
    return verifySlotAttr(op, attr);
  if (name == kShardingAttr) {
    auto func = dyn_cast<FunctionOpInterface>(op);
    Type type = func && resultIndex < func.getNumResults()
                    ? func.getResultTypes()[resultIndex]
                    : Type();
    return verifyValueSharding(op, attr, type,
                               "result " + std::to_string(resultIndex));
  }
  if (name == kShardingOriginAttr) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << name << "' must be a string";
    return success();
  }
  return op->emitError() << "unknown tg result attribute '"
                         << attr.getName().getValue() << "'";
}

/// The module's own attributes: its model, training table, precision, pipeline
/// and phase. Nothing for an attribute of another kind.
static std::optional<LogicalResult> verifyModuleAttribute(Operation *op,
                                                          NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if ((name == TgDialect::kModelAttr || name == TgDialect::kTrainingAttr ||
       name == TgDialect::kPrecisionAttr || name == TgDialect::kPhaseAttr ||
       name == TgDialect::kPipelineAttr) &&
      !isa<ModuleOp>(op))
    return op->emitError() << "'" << name << "' belongs on the module, not on '"
                           << op->getName() << "'";
  if (name == TgDialect::kModelAttr)
    return verifyStringAttr(op, attr);
  if (name == TgDialect::kLoraAttr) {
    auto all = dyn_cast<ArrayAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !all ||
        !llvm::all_of(all, [](Attribute a) { return isa<LoraAdapterAttr>(a); }))
      return op->emitError()
             << "'" << name << "' must be an array of #tg.lora on the module";
    llvm::StringSet<> bases;
    for (auto adapter : all.getAsRange<LoraAdapterAttr>())
      if (!bases.insert(adapter.getBase()).second)
        return op->emitError()
               << "'" << name << "' adapts '" << adapter.getBase() << "' twice";
    return success();
  }
  if (name == TgDialect::kTrainingAttr) {
    if (!isa<DictionaryAttr>(attr.getValue()))
      return op->emitError() << "'" << name << "' must be a dictionary";
    return success();
  }
  if (name == TgDialect::kPrecisionAttr) {
    if (!isa<PrecisionPolicyAttr>(attr.getValue()))
      return op->emitError()
             << "'" << name << "' must be #tg<precision fp32|bf16>, got "
             << attr.getValue();
    return success();
  }
  if (name == TgDialect::kPipelineAttr) {
    auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
    auto count = [&](StringRef key) {
      auto v = dict ? dict.getAs<IntegerAttr>(key) : IntegerAttr();
      return v ? v.getInt() : 0;
    };
    // tg-pipeline-schedule adds the schedule it wrote and its micro-batch
    // count.
    size_t scheduled = dict && dict.get("schedule") ? 2 : 0;
    if (!dict || dict.size() != 2 + scheduled || count("stages") < 1 ||
        count("virtual_stages") < 1 ||
        (scheduled &&
         (!dict.getAs<StringAttr>("schedule") || count("micro_batches") < 1)))
      return op->emitError()
             << "'" << name
             << "' must be {stages = P, virtual_stages = V} with P and V at "
                "least 1 (and after tg-pipeline-schedule its schedule = "
                "\"name\" and micro_batches = M), got "
             << attr.getValue();
    return success();
  }
  if (name == TgDialect::kPhaseAttr) {
    // The pipeline phase tgc ran the module through (compiler/pipeline).
    if (!isa<IrPhaseAttr>(attr.getValue()))
      return op->emitError() << "'" << name
                             << "' must be #tg<phase NAME> (import, "
                                "precision, autodiff, optimizer, sharding, "
                                "partition, pipeline, fusion, schedule, "
                                "memory or layers), got "
                             << attr.getValue();
    return success();
  }
  return std::nullopt;
}

/// tg-pipeline-split's and tg-pipeline-schedule's: a function's role, the
/// module's transfers, actions and buffers. Nothing for an attribute of another
/// kind.
static std::optional<LogicalResult>
verifyPipelineAttribute(Operation *op, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == TgDialect::kPipelineRoleAttr) {
    auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
    auto kind = dict ? dict.getAs<StringAttr>("kind") : nullptr;
    if (!isa<func::FuncOp>(op) || !kind ||
        !llvm::is_contained(
            {"forward", "backward", "weight", "reduce", "update"},
            kind.getValue()) ||
        !dict.getAs<IntegerAttr>(kind.getValue() == "update" ? "stage"
                                                             : "chunk"))
      return op->emitError()
             << "'" << name
             << "' must be {kind = \"forward\" | \"backward\" | \"weight\" "
                "| \"reduce\", chunk = N} or {kind = \"update\", stage = N} "
                "on a function";
    return success();
  }
  // tg.pipeline_buffers: tg-pipeline-schedule's plan of each stage's slot
  // buffers (passes/pipeline/Chunks.h reads and checks its contents).
  if (name == TgDialect::kPipelineTransfersAttr ||
      name == TgDialect::kPipelineActionsAttr ||
      name == "tg.pipeline_buffers") {
    if (!isa<ModuleOp>(op) || !isa<ArrayAttr>(attr.getValue()))
      return op->emitError()
             << "'" << name << "' must be an array on the module";
    return success();
  }
  return std::nullopt;
}

LogicalResult
LoraAdapterAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        StringRef base, StringRef a, StringRef b, APFloat scale,
                        bool) {
  if (base.empty() || a.empty() || b.empty() || a == b || a == base ||
      b == base)
    return emitError() << "#tg.lora needs three distinct parameter names, got "
                          "base = '"
                       << base << "', a = '" << a << "', b = '" << b << "'";
  if (!(scale.convertToDouble() > 0))
    return emitError() << "#tg.lora needs a positive scale, got "
                       << scale.convertToDouble();
  return success();
}

LogicalResult ArenaAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                int64_t bytes, int64_t live,
                                int64_t alignment) {
  if (live < 0 || live > bytes)
    return emitError() << "#tg.arena needs 0 <= live <= bytes, got live = "
                       << live << ", bytes = " << bytes;
  if (alignment <= 0 || !llvm::isPowerOf2_64(alignment))
    return emitError() << "#tg.arena needs a power-of-two alignment, got "
                       << alignment;
  return success();
}

//===----------------------------------------------------------------------===//
// The memory plan's attributes
//===----------------------------------------------------------------------===//

// #tg.place<[0, view 1, slot 2]>: an offset alone, else the kind's word and
// its number.
Attribute PlaceAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  SmallVector<ResultPlace> places;
  auto parseEntry = [&]() -> ParseResult {
    ResultPlace place;
    if (succeeded(parser.parseOptionalKeyword("view")))
      place.kind = ResultPlace::Kind::View;
    else if (succeeded(parser.parseOptionalKeyword("slot")))
      place.kind = ResultPlace::Kind::Slot;
    if (parser.parseInteger(place.value))
      return failure();
    places.push_back(place);
    return success();
  };
  if (parser.parseLess() ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                     parseEntry) ||
      parser.parseGreater())
    return {};
  return parser.getChecked<PlaceAttr>(loc, parser.getContext(), places);
}

void PlaceAttr::print(AsmPrinter &printer) const {
  printer << "<[";
  llvm::interleaveComma(getPlaces(), printer, [&](const ResultPlace &place) {
    if (place.kind == ResultPlace::Kind::View)
      printer << "view ";
    else if (place.kind == ResultPlace::Kind::Slot)
      printer << "slot ";
    printer << place.value;
  });
  printer << "]>";
}

LogicalResult PlaceAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                ArrayRef<ResultPlace> places) {
  for (auto [n, place] : llvm::enumerate(places))
    if (place.value < 0)
      return emitError() << "#tg.place: result " << n << " has "
                         << (place.kind == ResultPlace::Kind::View   ? "operand"
                             : place.kind == ResultPlace::Kind::Slot ? "slot"
                                                                     : "offset")
                         << " " << place.value << ", which is negative";
  return success();
}

static std::optional<int64_t> valueOfKind(ArrayRef<ResultPlace> places,
                                          unsigned n, ResultPlace::Kind kind) {
  if (n >= places.size() || places[n].kind != kind)
    return std::nullopt;
  return places[n].value;
}

std::optional<int64_t> PlaceAttr::arenaOffset(unsigned n) const {
  return valueOfKind(getPlaces(), n, ResultPlace::Kind::Arena);
}

std::optional<unsigned> PlaceAttr::viewedOperand(unsigned n) const {
  return valueOfKind(getPlaces(), n, ResultPlace::Kind::View);
}

std::optional<int64_t> PlaceAttr::slot(unsigned n) const {
  return valueOfKind(getPlaces(), n, ResultPlace::Kind::Slot);
}

PlaceAttr mlir::tg::placeOf(Operation *op) {
  return op->getAttrOfType<PlaceAttr>(TgDialect::kPlaceAttr);
}

Value mlir::tg::plannedView(Value v) {
  auto r = dyn_cast<OpResult>(v);
  PlaceAttr place = r ? placeOf(r.getOwner()) : nullptr;
  std::optional<unsigned> operand =
      place ? place.viewedOperand(r.getResultNumber()) : std::nullopt;
  if (!operand || *operand >= r.getOwner()->getNumOperands())
    return {};
  return r.getOwner()->getOperand(*operand);
}

LogicalResult SpanAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t offset, int64_t bytes) {
  if (offset < 0 || bytes <= 0)
    return emitError() << "#tg.span needs offset >= 0 and bytes > 0, got "
                          "offset = "
                       << offset << ", bytes = " << bytes;
  return success();
}

/// The bytes of a value of `type`, when it is a tensor of static shape.
static std::optional<int64_t> staticBytes(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape() || !t.getElementType().isIntOrFloat())
    return std::nullopt;
  return tensorBytes(t);
}

LogicalResult
ConstantsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      int64_t bytes, int64_t alignment) {
  if (bytes < 0)
    return emitError() << "#tg.constants needs bytes >= 0, got " << bytes;
  if (alignment <= 0 || !llvm::isPowerOf2_64(alignment))
    return emitError() << "#tg.constants needs a power-of-two alignment, got "
                       << alignment;
  return success();
}

/// A tg.constant's place in its module's constants section (tg.constants):
/// aligned as the section says, and inside it.
static LogicalResult checkConstantOffset(Operation *op, Attribute value) {
  auto offset = dyn_cast<IntegerAttr>(value);
  if (!isa<ConstantOp>(op) || !offset || offset.getInt() < 0)
    return op->emitError() << "'" << TgDialect::kConstantOffsetAttr
                           << "' must be a non-negative offset on a "
                              "tg.constant";
  auto module = op->getParentOfType<ModuleOp>();
  auto section =
      module ? module->getAttrOfType<ConstantsAttr>(TgDialect::kConstantsAttr)
             : nullptr;
  if (!section)
    return op->emitError() << "'" << TgDialect::kConstantOffsetAttr
                           << "' places a constant in a section the module "
                              "does not have (no tg.constants)";
  int64_t at = offset.getInt();
  int64_t bytes = staticBytes(op->getResult(0).getType()).value_or(0);
  if (at % section.getAlignment() != 0)
    return op->emitError() << "'" << TgDialect::kConstantOffsetAttr
                           << "' places the constant at " << at
                           << ", not a multiple of the section's alignment ("
                           << section.getAlignment() << ")";
  if (at + bytes > section.getBytes())
    return op->emitError() << "'" << TgDialect::kConstantOffsetAttr
                           << "' places the constant's bytes [" << at << ", "
                           << at + bytes << ") outside the constants section "
                           << "of " << section.getBytes() << " bytes";
  return success();
}

/// No two constants of the module share bytes of its section.
static LogicalResult checkConstantsApart(ModuleOp module) {
  SmallVector<std::pair<int64_t, ConstantOp>> placed;
  module.walk([&](ConstantOp c) {
    if (auto at = c->getAttrOfType<IntegerAttr>(TgDialect::kConstantOffsetAttr))
      placed.push_back({at.getInt(), c});
  });
  llvm::stable_sort(
      placed, [](const auto &a, const auto &b) { return a.first < b.first; });
  for (size_t i = 1; i < placed.size(); ++i) {
    auto [at, before] = placed[i - 1];
    int64_t end = at + staticBytes(before.getResult().getType()).value_or(0);
    if (placed[i].first < end)
      return placed[i].second.emitError()
             << "'" << TgDialect::kConstantOffsetAttr << "' places the "
             << "constant at " << placed[i].first << ", inside the bytes ["
             << at << ", " << end << ") of another constant";
  }
  return success();
}

/// Bytes [offset, offset + bytes) that `attr` of `op` places in the arena
/// of its function (when it has one): aligned as it says, and inside.
static LogicalResult checkInArena(Operation *op, StringRef attr, int64_t offset,
                                  int64_t bytes) {
  auto func = op->getParentOfType<func::FuncOp>();
  auto arena =
      func ? func->getAttrOfType<ArenaAttr>(TgDialect::kArenaAttr) : nullptr;
  if (!arena)
    return success();
  if (offset % arena.getAlignment() != 0)
    return op->emitError() << "'" << attr << "' places bytes at " << offset
                           << ", not a multiple of the arena's alignment ("
                           << arena.getAlignment() << ")";
  if (offset + bytes > arena.getBytes())
    return op->emitError() << "'" << attr << "' places bytes [" << offset
                           << ", " << offset + bytes
                           << ") outside the arena of " << arena.getBytes()
                           << " bytes";
  return success();
}

/// Each result's place (`place`, tg-plan-memory's tg.place) where it
/// stands: an offset in the arena, outside layer bodies; a view of an
/// operand the op has, with at least the result's bytes; a slot, only in a
/// layer body.
static LogicalResult checkPlaces(Operation *op, PlaceAttr place) {
  if (place.getPlaces().size() != op->getNumResults())
    return op->emitError() << "'" << TgDialect::kPlaceAttr
                           << "' must place each result ("
                           << op->getNumResults() << "), not "
                           << place.getPlaces().size();
  auto func = op->getParentOfType<func::FuncOp>();
  bool inBody = func && func->hasAttr(TgDialect::kLayerBodyAttr);
  for (auto [n, entry] : llvm::enumerate(place.getPlaces())) {
    std::optional<int64_t> bytes = staticBytes(op->getResult(n).getType());
    switch (entry.kind) {
    case ResultPlace::Kind::Arena:
      if (inBody)
        return op->emitError()
               << "'" << TgDialect::kPlaceAttr << "' places result " << n
               << " at offset " << entry.value
               << " in a layer body, whose results are in slots";
      if (bytes &&
          failed(checkInArena(op, TgDialect::kPlaceAttr, entry.value, *bytes)))
        return failure();
      break;
    case ResultPlace::Kind::Slot:
      if (!inBody)
        return op->emitError()
               << "'" << TgDialect::kPlaceAttr << "' places result " << n
               << " in slot " << entry.value
               << " outside a layer body (no tg.layer_body)";
      break;
    case ResultPlace::Kind::View: {
      if (entry.value >= (int64_t)op->getNumOperands())
        return op->emitError()
               << "'" << TgDialect::kPlaceAttr << "' makes result " << n
               << " a view of operand " << entry.value << ", but the op has "
               << op->getNumOperands() << " operands";
      std::optional<int64_t> have =
          staticBytes(op->getOperand(entry.value).getType());
      if (have && bytes && *bytes > *have)
        return op->emitError()
               << "'" << TgDialect::kPlaceAttr << "' makes result " << n << " ("
               << *bytes << " bytes) a view of operand " << entry.value
               << ", which has " << *have << " bytes";
      break;
    }
    }
  }
  return success();
}

/// The memory plan (tg-plan-memory, tg-outline-layers): places, slot tables,
/// the arena, spans. Nothing for an attribute of another kind.
static std::optional<LogicalResult>
verifyMemoryPlanAttribute(Operation *op, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == TgDialect::kLayerBodyAttr) {
    if (!isa<func::FuncOp>(op) || !isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << name
                             << "' must be a string (the first layer) on a "
                                "function";
    return success();
  }
  if (name == TgDialect::kSlotOffsetsAttr) {
    auto values = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!isa<func::CallOp>(op) || !values ||
        llvm::any_of(values.asArrayRef(), [](int64_t v) { return v < 0; }))
      return op->emitError() << "'" << name
                             << "' must list arena offsets (non-negative "
                                "i64s) on the func.call of a layer body";
    return success();
  }
  if (name == TgDialect::kPlaceAttr) {
    auto place = dyn_cast<PlaceAttr>(attr.getValue());
    if (!place || op->getNumResults() == 0)
      return op->emitError()
             << "'" << name << "' must be a #tg.place on an op with results";
    return checkPlaces(op, place);
  }
  if (name == TgDialect::kArenaAttr) {
    if (!isa<func::FuncOp>(op) || !isa<ArenaAttr>(attr.getValue()))
      return op->emitError()
             << "'" << name << "' must be a #tg.arena on a function";
    return success();
  }
  if (name == TgDialect::kConstantsAttr) {
    auto module = dyn_cast<ModuleOp>(op);
    if (!module || !isa<ConstantsAttr>(attr.getValue()))
      return op->emitError()
             << "'" << name << "' must be a #tg.constants on the module";
    return checkConstantsApart(module);
  }
  if (name == TgDialect::kConstantOffsetAttr)
    return checkConstantOffset(op, attr.getValue());
  if (name == TgDialect::kBucketSpanAttr || name == TgDialect::kScratchAttr) {
    // Bytes in the arena: an all-reduce's bucket, the statistics an
    // attention keeps for its gradient.
    bool onRightOp = name == TgDialect::kBucketSpanAttr ? isa<AllReduceOp>(op)
                                                        : isa<AttentionOp>(op);
    auto span = dyn_cast<SpanAttr>(attr.getValue());
    if (!onRightOp || !span)
      return op->emitError()
             << "'" << name << "' must be a #tg.span on a "
             << (name == TgDialect::kBucketSpanAttr ? "tg.all_reduce"
                                                    : "tg.attention");
    return checkInArena(op, name, span.getOffset(), span.getBytes());
  }
  return std::nullopt;
}

/// The sharding plan (tg-propagate-sharding, tg-partition): shardings, their
/// origins, reshards. Nothing for an attribute of another kind.
static std::optional<LogicalResult>
verifyShardingPlanAttribute(Operation *op, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kPartitionedAttr) {
    if (!isa<func::FuncOp>(op) || !isa<UnitAttr>(attr.getValue()))
      return op->emitError()
             << "'" << name << "' must be a unit attribute on a function";
    return success();
  }
  if (name == kShardingAttr || name == kShardingOriginAttr) {
    // One entry per result (on a function they are argument attributes).
    auto all = dyn_cast<ArrayAttr>(attr.getValue());
    if (!all || all.size() != op->getNumResults())
      return op->emitError()
             << "'" << name << "' must hold one entry per result ("
             << op->getNumResults() << ")";
    for (auto [i, entry] : llvm::enumerate(all)) {
      if (name == kShardingOriginAttr) {
        if (!isa<StringAttr>(entry))
          return op->emitError() << "'" << name << "' must hold strings";
        continue;
      }
      auto sharding = dyn_cast<ShardingAttr>(entry);
      if (!sharding)
        return op->emitError() << "'" << name << "' must hold #tg.sharding";
      if (failed(verifyShardingFor(sharding, op->getResult(i).getType(),
                                   lookupMesh(op, sharding.getMesh()),
                                   [&, i = i] {
                                     InFlightDiagnostic diag = op->emitError();
                                     diag << "result " << i << ": ";
                                     return diag;
                                   })))
        return failure();
    }
    return success();
  }
  if (name == kReshardAttr) {
    if (!isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllSliceOp>(op))
      return op->emitError() << "'" << name << "' belongs on a collective";
    return verifyStringAttr(op, attr);
  }
  return std::nullopt;
}

/// What passes record of an op or a function: remat's and the solver's reports,
/// the micro-batches, the layer, the buckets waited for. Nothing for an
/// attribute of another kind.
static std::optional<LogicalResult> verifyRecordAttribute(Operation *op,
                                                          NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == TgDialect::kRematAttr || name == TgDialect::kAutoShardAttr) {
    if (!isa<func::FuncOp>(op) || !isa<DictionaryAttr>(attr.getValue()))
      return op->emitError()
             << "'" << name << "' must be a dictionary on a function";
    return success();
  }
  if (name == TgDialect::kMicroBatchesAttr) {
    auto count = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<func::FuncOp>(op) || !count || count.getInt() < 1)
      return op->emitError()
             << "'" << name << "' must be a count of at least 1 on a function";
    return success();
  }
  if (name == TgDialect::kRecomputeAttr) {
    if (!isa<UnitAttr>(attr.getValue()) || isa<func::FuncOp>(op))
      return op->emitError() << "'" << name
                             << "' must be a unit attribute on an op "
                                "tg-remat copied into the backward";
    return success();
  }
  if (name == TgDialect::kLayerAttr) {
    auto layer = dyn_cast<StringAttr>(attr.getValue());
    if (!layer || layer.getValue().empty())
      return op->emitError() << "'" << name
                             << "' must name the model file's layer or "
                                "module the op computes for, got "
                             << attr.getValue();
    return success();
  }
  return std::nullopt;
}

LogicalResult TgDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  for (auto verify : {verifyModuleAttribute, verifyPipelineAttribute,
                      verifyMemoryPlanAttribute, verifyShardingPlanAttribute,
                      verifyRecordAttribute})
    if (std::optional<LogicalResult> result = verify(op, attr))
      return *result;
  StringRef name = attr.getName().getValue();
  // The memory plan and the schedule as an older tgc printed them.
  if (StringRef now =
          llvm::StringSwitch<StringRef>(name)
              .Case("tg.waits", "a tg.await op of each bucket")
              .Cases({"tg.offsets", "tg.views", "tg.slots"},
                     "the op's tg.place = #tg.place<[...]>")
              .Cases({"tg.arena_bytes", "tg.live_bytes", "tg.arena_alignment"},
                     "the function's tg.arena = #tg.arena<bytes, "
                     "live, alignment>")
              .Default("");
      !now.empty())
    return op->emitError() << "'" << name
                           << "' is IR of an older tgc: it is now " << now
                           << "; compile from the model file again";
  // Parameter and input markers belong on function arguments.
  return op->emitError() << "unknown tg attribute '" << name << "' on '"
                         << op->getName() << "'";
}

//===----------------------------------------------------------------------===//
// Names from the model file
//===----------------------------------------------------------------------===//

std::string mlir::tg::nodeNameOf(Operation *op) {
  SmallVector<Location> work{op->getLoc()};
  while (!work.empty()) {
    Location loc = work.pop_back_val();
    if (auto name = dyn_cast<NameLoc>(loc))
      return name.getName().str();
    if (auto fused = dyn_cast<FusedLoc>(loc))
      for (Location inner : llvm::reverse(fused.getLocations()))
        work.push_back(inner);
    else if (auto site = dyn_cast<CallSiteLoc>(loc))
      work.push_back(site.getCallee());
  }
  return "";
}

StringRef mlir::tg::appliedPrecision(ModuleOp module) {
  auto attr =
      module->getAttrOfType<PrecisionPolicyAttr>(TgDialect::kPrecisionAttr);
  return attr ? stringifyPrecisionPolicy(attr.getValue()) : StringRef();
}

std::optional<IrPhase> mlir::tg::recordedPhase(ModuleOp module) {
  if (auto attr = module->getAttrOfType<IrPhaseAttr>(TgDialect::kPhaseAttr))
    return attr.getValue();
  return std::nullopt;
}

void mlir::tg::setRecordedPhase(ModuleOp module, IrPhase phase) {
  module->setAttr(TgDialect::kPhaseAttr,
                  IrPhaseAttr::get(module.getContext(), phase));
}

PipelineStages mlir::tg::getPipelineStages(ModuleOp module) {
  PipelineStages out;
  if (auto dict =
          module->getAttrOfType<DictionaryAttr>(TgDialect::kPipelineAttr)) {
    if (auto p = dict.getAs<IntegerAttr>("stages"))
      out.stages = std::max<int64_t>(p.getInt(), 1);
    if (auto v = dict.getAs<IntegerAttr>("virtual_stages"))
      out.virtualStages = std::max<int64_t>(v.getInt(), 1);
  }
  return out;
}

void mlir::tg::setPipelineStages(ModuleOp module, PipelineStages stages) {
  Builder b(module.getContext());
  if (stages.stages <= 1 && stages.virtualStages <= 1) {
    module->removeAttr(TgDialect::kPipelineAttr);
    return;
  }
  module->setAttr(
      TgDialect::kPipelineAttr,
      b.getDictionaryAttr(
          {b.getNamedAttr("stages", b.getI64IntegerAttr(stages.stages)),
           b.getNamedAttr("virtual_stages",
                          b.getI64IntegerAttr(stages.virtualStages))}));
}

std::string mlir::tg::groupOfName(StringRef name) {
  std::string layer = layerOfName(name);
  return layer.empty() ? name.split('.').first.str() : layer;
}

StringRef mlir::tg::layerOf(Operation *op) {
  auto layer = op->getAttrOfType<StringAttr>(TgDialect::kLayerAttr);
  return layer ? layer.getValue() : StringRef();
}

std::string mlir::tg::layerOfValue(Value v) {
  if (Operation *def = v.getDefiningOp())
    return layerOf(def).str();
  auto arg = cast<BlockArgument>(v);
  auto func =
      dyn_cast_or_null<FunctionOpInterface>(arg.getOwner()->getParentOp());
  if (!func)
    return "";
  for (StringRef kind : {TgDialect::kParamAttr, TgDialect::kInputAttr,
                         TgDialect::kStateAttr, TgDialect::kAccumAttr})
    if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kind))
      return groupOfName(name.getValue());
  return "";
}

void mlir::tg::setLayer(Operation *op, StringRef layer) {
  if (layer.empty())
    op->removeAttr(TgDialect::kLayerAttr);
  else
    op->setAttr(TgDialect::kLayerAttr,
                StringAttr::get(op->getContext(), layer));
}

/// The innermost LayerStamp installed on some builder (stamps nest).
static thread_local LayerStamp *innermostStamp = nullptr;

mlir::tg::LayerStamp::LayerStamp(OpBuilder &builder, StringRef layer)
    : builder_(builder), outer_(nullptr), previous_(innermostStamp),
      next_(builder.getListener()), layer_(layer) {
  for (LayerStamp *s = innermostStamp; s; s = s->previous_)
    if (next_ == s) {
      outer_ = s;
      next_ = s->next_;
      break;
    }
  builder.setListener(this);
  innermostStamp = this;
}

mlir::tg::LayerStamp::~LayerStamp() {
  builder_.setListener(outer_ ? outer_ : next_);
  innermostStamp = previous_;
}

void mlir::tg::LayerStamp::notifyOperationInserted(
    Operation *op, OpBuilder::InsertPoint previous) {
  if (!layer_.empty() && op->getNumOperands() > 0 &&
      !op->hasAttr(TgDialect::kLayerAttr))
    setLayer(op, layer_);
  if (next_)
    next_->notifyOperationInserted(op, previous);
}

void mlir::tg::LayerStamp::notifyBlockInserted(Block *block, Region *previous,
                                               Region::iterator previousIt) {
  if (next_)
    next_->notifyBlockInserted(block, previous, previousIt);
}

std::string mlir::tg::layerOfName(StringRef name) {
  SmallVector<StringRef> parts;
  name.split(parts, '.');
  for (auto [i, part] : llvm::enumerate(parts))
    if (!part.empty() && llvm::all_of(part, llvm::isDigit) && i > 0)
      return llvm::join(ArrayRef(parts).take_front(i + 1), ".");
  return "";
}
