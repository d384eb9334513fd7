//===- Import.cpp - Model files to tg IR ------------------------*- C++ -*-===//
//
// Reads a model file (binary .tgm checked by the FlatBuffers verifier, or its
// JSON text form parsed against the embedded schema) and builds
//
//   module attributes {tg.model = NAME, tg.training = {...}} {
//     func.func @forward(params..., inputs...) -> (loss, outputs...)
//   }
//
// Each node becomes the tg op of the same name, built generically from the
// op's registration: attributes are checked against the op's own ODS
// attribute constraints, result types come from the op's shape inference
// (InferTypeOpInterface) where it has one, and every op is verified as soon as
// it is built, so a diagnostic names the node it is about. The few ops whose
// result type a model file spells out (reshape, broadcast_to, cast, constant,
// iota) take it from model-file attributes.
//
// Every error names the file and the place: the JSON line and column where the
// scanner found it, and in the message the path ("params[2] 'wte.weight'",
// "nodes[3] 'fc1' (matmul)", "training.optimizer.kind").
//
//===----------------------------------------------------------------------===//

#include "frontend/JsonLocator.h"
#include "frontend/ModelFile.h"
#include "frontend/ModelSchema.h"
#include "frontend/TableDictionary.h"

#include "dialects/tg/IR/TgDialect.h"
#include "dialects/tg/IR/TgInterfaces.h"
#include "dialects/tg/IR/TgOps.h"
#include "dialects/tg/IR/TgSharding.h"
#include "llvm/ADT/StringSet.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVectorExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "flatbuffers/idl.h"

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace mlir::tg;
namespace fbs = tgc::model;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// The entry of `candidates` closest to `word`, if it is close enough to be
/// worth suggesting.
static std::optional<std::string>
closestMatch(StringRef word, ArrayRef<std::string> candidates) {
  std::optional<std::string> best;
  unsigned bestDistance = std::max<unsigned>(2, word.size() / 3) + 1;
  for (const std::string &candidate : candidates) {
    unsigned distance =
        word.edit_distance(candidate, /*AllowReplacements=*/true, bestDistance);
    if (distance < bestDistance) {
      bestDistance = distance;
      best = candidate;
    }
  }
  return best;
}

static std::string joinNames(ArrayRef<std::string> names) {
  std::string out;
  for (auto [i, name] : llvm::enumerate(names))
    out += (i ? ", " : "") + name;
  return out;
}

static StringRef stringOf(const flatbuffers::String *s) {
  return s ? StringRef(s->c_str(), s->size()) : StringRef();
}

/// The ops a model file may use: the differentiable forward ops, plus
/// constant, iota and compare. Gradient, optimizer and collective ops are
/// created by the compiler's passes.
static bool isModelFileOp(RegisteredOperationName name) {
  if (name.getDialectNamespace() != TgDialect::getDialectNamespace())
    return false;
  return name.hasInterface<DifferentiableOpInterface>() ||
         name.getStringRef() == ConstantOp::getOperationName() ||
         name.getStringRef() == IotaOp::getOperationName() ||
         name.getStringRef() == CompareOp::getOperationName();
}

namespace {

/// The value fields of a node attribute (`{"name": "axis", "i": 1}`).
enum class AttrKind { Int, Float, Bool, String, Ints, Floats };

constexpr AttrKind kAllAttrKinds[] = {AttrKind::Int,  AttrKind::Float,
                                      AttrKind::Bool, AttrKind::String,
                                      AttrKind::Ints, AttrKind::Floats};

StringRef describe(AttrKind kind) {
  switch (kind) {
  case AttrKind::Int:
    return "an integer ('i')";
  case AttrKind::Float:
    return "a float ('f')";
  case AttrKind::Bool:
    return "a bool ('b')";
  case AttrKind::String:
    return "a string ('s')";
  case AttrKind::Ints:
    return "a list of integers ('ints')";
  case AttrKind::Floats:
    return "a list of floats ('floats')";
  }
  return "";
}

/// One node attribute as read from the file.
struct NodeAttr {
  StringRef name;
  AttrKind kind;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  StringRef s;
  SmallVector<int64_t> ints;
  SmallVector<double> floats;
  std::string path;
};

/// Attributes a model file gives some ops in place of a result type.
struct ModelFileAttr {
  StringRef op;
  StringRef name;
  std::initializer_list<AttrKind> kinds;
  bool required;
};

const ModelFileAttr kModelFileAttrs[] = {
    {"reshape", "shape", {AttrKind::Ints}, true},
    {"broadcast_to", "shape", {AttrKind::Ints}, true},
    {"cast", "dtype", {AttrKind::String}, true},
    {"constant", "dtype", {AttrKind::String}, false},
    {"constant", "shape", {AttrKind::Ints}, false},
    {"constant",
     "value",
     {AttrKind::Float, AttrKind::Int, AttrKind::Bool, AttrKind::Floats,
      AttrKind::Ints},
     true},
    {"iota", "dtype", {AttrKind::String}, false},
    {"iota", "shape", {AttrKind::Ints}, true},
};

/// Where a tensor name comes from.
struct TensorDef {
  enum Kind { Param, Input, Node } kind;
  unsigned index;
};

class ModelImporter {
public:
  ModelImporter(StringRef path, MLIRContext *context,
                const JsonLocator *locator, const flatbuffers::Parser &schema,
                const ImportOptions &options)
      : path(path), context(context), locator(locator), schema(schema),
        options(options), builder(context) {}

  OwningOpRef<ModuleOp> run(const fbs::Model &model);

private:
  StringRef path;
  MLIRContext *context;
  const JsonLocator *locator;
  const flatbuffers::Parser &schema;
  ImportOptions options;
  OpBuilder builder;
  const fbs::Model *model = nullptr;

  /// Every tensor name the file defines, and the values built so far.
  llvm::StringMap<TensorDef> defs;
  llvm::StringMap<Value> values;
  int64_t batchSize = 0, seqLen = 0;
  /// The mesh (tgc --mesh, else the training table's), empty for none.
  SmallVector<std::pair<std::string, int64_t>> meshAxes;
  /// The product of the data axes' sizes: batch dims are this many
  /// micro-batches.
  int64_t batchReplicas = 1;

  //===--------------------------------------------------------------------===//
  // Diagnostics
  //===--------------------------------------------------------------------===//

  /// The file position of the value at JSON path `jsonPath`, or of its
  /// nearest enclosing value the scanner saw; line 0 for binary files.
  Location locate(StringRef jsonPath) const {
    if (locator) {
      StringRef p = jsonPath;
      while (true) {
        if (auto pos = locator->find(p))
          return FileLineColLoc::get(context, path, pos->first, pos->second);
        size_t cut = p.find_last_of(".[");
        if (cut == StringRef::npos || cut == 0)
          break;
        p = p.take_front(cut);
      }
      return FileLineColLoc::get(context, path, 1, 1);
    }
    return FileLineColLoc::get(context, path, 0, 0);
  }

  /// An error at `jsonPath` whose message starts with `place: `.
  InFlightDiagnostic error(StringRef jsonPath, const Twine &place) {
    InFlightDiagnostic diag = emitError(locate(jsonPath));
    diag << place << ": ";
    return diag;
  }

  std::string nodePath(unsigned index) const {
    return "nodes[" + std::to_string(index) + "]";
  }

  /// "nodes[3] 'fc1' (matmul)", or "nodes[3] (matmul)" for an unnamed node.
  std::string nodePlace(unsigned index) const {
    const fbs::Node *node = model->nodes()->Get(index);
    std::string place = nodePath(index);
    if (StringRef name = stringOf(node->name()); !name.empty())
      place += " '" + name.str() + "'";
    return place + " (" + stringOf(node->op()).str() + ")";
  }

  std::string defPath(const TensorDef &def) const {
    switch (def.kind) {
    case TensorDef::Param:
      return "params[" + std::to_string(def.index) + "]";
    case TensorDef::Input:
      return "inputs[" + std::to_string(def.index) + "]";
    case TensorDef::Node:
      return nodePath(def.index);
    }
    return "";
  }

  std::string defPlace(const TensorDef &def) const {
    switch (def.kind) {
    case TensorDef::Param:
      return defPath(def) + " '" +
             stringOf(model->params()->Get(def.index)->name()).str() + "'";
    case TensorDef::Input:
      return defPath(def) + " '" +
             stringOf(model->inputs()->Get(def.index)->name()).str() + "'";
    case TensorDef::Node:
      return nodePlace(def.index);
    }
    return "";
  }

  /// A suggestion for a tensor name that is not defined.
  std::string didYouMean(StringRef name) const {
    SmallVector<std::string> known;
    for (const auto &entry : defs)
      known.push_back(entry.getKey().str());
    llvm::sort(known);
    if (auto best = closestMatch(name, known))
      return "; did you mean '" + *best + "'?";
    return "";
  }

  //===--------------------------------------------------------------------===//
  // The parts of a model
  //===--------------------------------------------------------------------===//

  FailureOr<DictionaryAttr> importTraining();
  LogicalResult checkTraining(const fbs::Training &training);
  FailureOr<SmallVector<int64_t>> importParamShape(const std::string &where,
                                                   const Twine &place,
                                                   ArrayRef<int64_t> shape);
  FailureOr<Type> importDType(const std::string &where, const Twine &place,
                              fbs::DType dtype);
  LogicalResult defineTensor(StringRef name, TensorDef def,
                             const std::string &where, const Twine &place);
  FailureOr<DictionaryAttr> importParam(unsigned index, Type &type);
  /// A model file's `sharding` (one entry per dim: mesh axes,
  /// comma-separated) for a tensor of `shape`, checked against the mesh.
  FailureOr<ShardingAttr> importSharding(
      const std::string &where, const Twine &place,
      const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>> *dims,
      ArrayRef<int64_t> shape);
  FailureOr<DictionaryAttr> importInput(unsigned index, Type &type);
  FailureOr<Attribute> importInit(unsigned index, const fbs::Initializer &init);
  LogicalResult buildNode(unsigned index);
  FailureOr<Value> lookupInput(unsigned index, unsigned operand,
                               StringRef name);
  FailureOr<SmallVector<NodeAttr>> readNodeAttrs(unsigned index);
  FailureOr<Attribute> convertNodeAttr(unsigned index,
                                       RegisteredOperationName opName,
                                       const NodeAttr &attr);
  FailureOr<Type> modelFileResultType(unsigned index, StringRef op,
                                      ArrayRef<Value> operands,
                                      ArrayRef<NodeAttr> attrs,
                                      NamedAttrList &odsAttrs);
  Attribute sampleAttr(AttrKind kind);
  Attribute toAttr(const NodeAttr &attr);
  LogicalResult verifyBuiltOp(unsigned index, Operation *op);
};

} // namespace

//===----------------------------------------------------------------------===//
// Training table
//===----------------------------------------------------------------------===//

FailureOr<DictionaryAttr> ModelImporter::importTraining() {
  const fbs::Training *training = model->training();
  if (!training)
    return DictionaryAttr::get(context);
  if (failed(checkTraining(*training)))
    return failure();
  batchSize = options.batchSize.value_or(training->batch_size());
  seqLen = training->seq_len();
  if (options.mesh) {
    meshAxes = *options.mesh;
  } else if (const auto *mesh = training->mesh()) {
    for (unsigned i = 0; i < mesh->size(); ++i)
      meshAxes.emplace_back(stringOf(mesh->Get(i)->name()).str(),
                            mesh->Get(i)->size());
  }
  // The batch dims hold every data replica's micro-batch.
  for (const auto &[axis, size] : meshAxes)
    if (isDataAxis(axis))
      batchReplicas *= size;
  const flatbuffers::StructDef *def = lookupModelTable(schema, "Training");
  DictionaryAttr table = convertTableToDictionary(
      *reinterpret_cast<const flatbuffers::Table *>(training), *def, context);
  if (!options.batchSize)
    return table;
  // The micro-batch the caller chose: the table says it.
  NamedAttrList entries(table);
  entries.set("batch_size", builder.getI64IntegerAttr(*options.batchSize));
  return entries.getDictionary(context);
}

LogicalResult ModelImporter::checkTraining(const fbs::Training &training) {
  auto atLeast = [&](StringRef key, int64_t value, int64_t min) {
    if (value >= min)
      return success();
    std::string where = ("training." + key).str();
    return LogicalResult(error(where, where)
                         << "must be at least " << min << ", got " << value);
  };
  if (failed(atLeast("batch_size", training.batch_size(), 0)) ||
      failed(atLeast("seq_len", training.seq_len(), 0)) ||
      failed(atLeast("grad_accum", training.grad_accum(), 1)) ||
      failed(atLeast("steps", training.steps(), 0)) ||
      failed(atLeast("memory_budget", training.memory_budget(), 0)))
    return failure();

  // Names from a fixed list, with a suggestion for a near miss.
  auto oneOf = [&](StringRef key, const flatbuffers::String *value,
                   ArrayRef<std::string> allowed) -> LogicalResult {
    StringRef v = stringOf(value);
    if (!value || llvm::is_contained(allowed, v.str()))
      return success();
    std::string where = ("training." + key).str();
    InFlightDiagnostic diag = error(where, where);
    diag << "unknown value '" << v << "'; expected one of "
         << joinNames(allowed);
    if (auto best = closestMatch(v, allowed))
      diag << "; did you mean '" << *best << "'?";
    return failure();
  };
  auto finite = [&](StringRef key, double value, double min) -> LogicalResult {
    if (std::isfinite(value) && value >= min)
      return success();
    std::string where = ("training." + key).str();
    return LogicalResult(error(where, where)
                         << "must be a finite number >= " << formatDouble(min)
                         << ", got " << formatDouble(value));
  };
  if (failed(oneOf("precision", training.precision(),
                   {"fp32", "bf16", "fp16", "fp8"})))
    return failure();
  // The kinds are tg enums: the schema table lists their spellings.
  auto strings = [](ArrayRef<StringRef> names) {
    return llvm::map_to_vector(names, [](StringRef n) { return n.str(); });
  };
  if (const fbs::Optimizer *opt = training.optimizer()) {
    if (failed(oneOf("optimizer.kind", opt->kind(),
                     strings(getOptimizerKindSpellings()))) ||
        failed(finite("optimizer.lr", opt->lr(), 0)) ||
        failed(finite("optimizer.beta1", opt->beta1(), 0)) ||
        failed(finite("optimizer.beta2", opt->beta2(), 0)) ||
        failed(finite("optimizer.eps", opt->eps(), 0)) ||
        failed(finite("optimizer.weight_decay", opt->weight_decay(), 0)) ||
        failed(finite("optimizer.momentum", opt->momentum(), 0)) ||
        failed(finite("optimizer.alpha", opt->alpha(), 0)) ||
        failed(finite("optimizer.clip_grad_norm", opt->clip_grad_norm(), 0)))
      return failure();
  }
  if (const fbs::Schedule *sched = training.schedule()) {
    if (failed(oneOf("schedule.kind", sched->kind(),
                     strings(getScheduleKindSpellings()))) ||
        failed(atLeast("schedule.warmup_steps", sched->warmup_steps(), 0)) ||
        failed(atLeast("schedule.total_steps", sched->total_steps(), 0)) ||
        failed(atLeast("schedule.step_size", sched->step_size(), 0)) ||
        failed(atLeast("schedule.decay_steps", sched->decay_steps(), 0)) ||
        failed(finite("schedule.min_lr", sched->min_lr(), 0)) ||
        failed(finite("schedule.gamma", sched->gamma(), 0)) ||
        failed(finite("schedule.max_lr", sched->max_lr(), 0)))
      return failure();
  }
  if (const auto *mesh = training.mesh()) {
    llvm::StringMap<unsigned> seen;
    for (unsigned i = 0; i < mesh->size(); ++i) {
      const fbs::MeshAxis *axis = mesh->Get(i);
      std::string where = "training.mesh[" + std::to_string(i) + "]";
      StringRef name = stringOf(axis->name());
      if (name.empty())
        return error(where, where) << "a mesh axis needs a name";
      if (axis->size() < 1)
        return error(where, where + " '" + name + "'")
               << "size must be at least 1, got " << axis->size();
      auto [it, inserted] = seen.try_emplace(name, i);
      if (!inserted)
        return error(where, where)
               << "mesh axis '" << name << "' is also training.mesh["
               << it->second << "]";
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Parameters and inputs
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>>
ModelImporter::importParamShape(const std::string &where, const Twine &place,
                                ArrayRef<int64_t> shape) {
  int64_t elements = 1;
  for (auto [d, size] : llvm::enumerate(shape)) {
    if (size < 1)
      return LogicalResult(
          error(where + ".shape[" + std::to_string(d) + "]", place)
          << "dim " << d << " is " << size << "; dims must be at least 1");
    std::optional<int64_t> product = llvm::checkedMul(elements, size);
    if (!product)
      return LogicalResult(error(where + ".shape", place)
                           << "the shape has more than 2^63 elements");
    elements = *product;
  }
  return SmallVector<int64_t>(shape);
}

FailureOr<Type> ModelImporter::importDType(const std::string &where,
                                           const Twine &place,
                                           fbs::DType dtype) {
  Type type = getElementType(context, dtype);
  if (!type)
    return LogicalResult(error(where + ".dtype", place)
                         << "unknown dtype " << (int)dtype
                         << "; the schema has " << listDTypeNames());
  return type;
}

LogicalResult ModelImporter::defineTensor(StringRef name, TensorDef def,
                                          const std::string &where,
                                          const Twine &place) {
  if (name.empty())
    return error(where, place) << "a tensor name must not be empty";
  auto [it, inserted] = defs.try_emplace(name, def);
  if (inserted)
    return success();
  TensorDef first = it->second;
  InFlightDiagnostic diag = error(where, place);
  diag << "tensor '" << name << "' is defined twice: here and by "
       << defPlace(first);
  diag.attachNote(locate(defPath(first)))
      << "'" << name << "' is first defined here";
  return failure();
}

FailureOr<Attribute> ModelImporter::importInit(unsigned index,
                                               const fbs::Initializer &init) {
  const fbs::Parameter *param = model->params()->Get(index);
  std::string where = "params[" + std::to_string(index) + "].init";
  std::string place = "params[" + std::to_string(index) + "] '" +
                      stringOf(param->name()).str() + "'";
  std::optional<InitKind> kind = getInitKind(init.kind());
  if (!kind)
    return LogicalResult(error(where + ".kind", place)
                         << "unknown init kind " << (int)init.kind());
  std::string file = stringOf(init.file()).str();
  if (*kind == InitKind::file && !file.empty()) {
    // The file is relative to the model file; the IR holds the absolute path
    // so that later stages need not know where the model file was.
    SmallString<256> resolved;
    if (!llvm::sys::path::is_absolute(file)) {
      if (path != "-" && path != "<stdin>")
        resolved = llvm::sys::path::parent_path(path);
      llvm::sys::path::append(resolved, file);
    } else {
      resolved = file;
    }
    llvm::sys::fs::make_absolute(resolved);
    llvm::sys::path::remove_dots(resolved, /*remove_dot_dot=*/true);
    if (!llvm::sys::fs::exists(resolved))
      return LogicalResult(error(where + ".file", place)
                           << "init file '" << file
                           << "' not found (looked for '" << resolved
                           << "'; the path is relative to the model "
                           << "file)");
    file = resolved.str().str();
  }
  auto emit = [&] { return error(where, place); };
  Attribute attr = InitializerAttr::getChecked(
      emit, context, *kind, APFloat(init.mean()), APFloat(init.std()),
      APFloat(init.low()), APFloat(init.high()), APFloat(init.gain()),
      APFloat(init.value()), StringRef(file), stringOf(init.key()));
  if (!attr)
    return failure();
  return attr;
}

FailureOr<DictionaryAttr> ModelImporter::importParam(unsigned index,
                                                     Type &type) {
  const fbs::Parameter *param = model->params()->Get(index);
  std::string where = "params[" + std::to_string(index) + "]";
  StringRef name = stringOf(param->name());
  std::string place = where + " '" + name.str() + "'";
  if (failed(defineTensor(name, {TensorDef::Param, index}, where, place)))
    return failure();
  auto shape = importParamShape(where, place, readScalarVector(param->shape()));
  auto elementType = importDType(where, place, param->dtype());
  if (failed(shape) || failed(elementType))
    return failure();
  type = RankedTensorType::get(*shape, *elementType);

  NamedAttrList attrs;
  attrs.append(TgDialect::kParamAttr, builder.getStringAttr(name));
  if (const fbs::Initializer *init = param->init()) {
    FailureOr<Attribute> initAttr = importInit(index, *init);
    if (failed(initAttr))
      return failure();
    attrs.append(TgDialect::kInitAttr, *initAttr);
  }
  if (!param->trainable())
    attrs.append(TgDialect::kFrozenAttr, builder.getUnitAttr());
  if (const auto *sharding = param->sharding()) {
    FailureOr<ShardingAttr> pin =
        importSharding(where + ".sharding", place, sharding, *shape);
    if (failed(pin))
      return failure();
    attrs.append(kShardingAttr, *pin);
    attrs.append(kShardingOriginAttr, builder.getStringAttr("pin: " + place));
  }
  if (param->shard()) {
    StringRef preset = stringOf(param->shard());
    if (!llvm::is_contained(shardPresetNames(), preset))
      return LogicalResult(
          error(where + ".shard", place)
          << "unknown sharding preset '" << preset
          << "'; expected dp, zero1, zero2, zero3, tp, sp or megatron");
    attrs.append(kShardPresetAttr,
                 ShardPresetAttr::get(context, *symbolizeShardPreset(preset)));
  }
  return attrs.getDictionary(context);
}

FailureOr<DictionaryAttr> ModelImporter::importInput(unsigned index,
                                                     Type &type) {
  const fbs::Input *input = model->inputs()->Get(index);
  std::string where = "inputs[" + std::to_string(index) + "]";
  StringRef name = stringOf(input->name());
  std::string place = where + " '" + name.str() + "'";
  if (failed(defineTensor(name, {TensorDef::Input, index}, where, place)))
    return failure();
  auto elementType = importDType(where, place, input->dtype());
  if (failed(elementType))
    return failure();
  SmallVector<int64_t> shape = readScalarVector(input->shape());

  // dim_names: one per dim, each "batch", "seq" or "".
  SmallVector<StringRef> dimNames;
  if (const auto *names = input->dim_names()) {
    for (unsigned d = 0; d < names->size(); ++d) {
      StringRef dimName = stringOf(names->Get(d));
      if (!dimName.empty() && dimName != "batch" && dimName != "seq")
        return LogicalResult(
            error(where + ".dim_names[" + std::to_string(d) + "]", place)
            << "dim name '" << dimName
            << "' is not \"batch\", \"seq\" or \"\"");
      dimNames.push_back(dimName);
    }
    if (dimNames.size() != shape.size())
      return LogicalResult(error(where + ".dim_names", place)
                           << "has " << dimNames.size()
                           << " dim_names for a shape of rank "
                           << shape.size());
  }

  // A named dim takes its size from the training table when the table sets
  // it; the file may then write -1 there, or the same size.
  int64_t elements = 1;
  for (auto [d, size] : llvm::enumerate(shape)) {
    StringRef dimName = dimNames.empty() ? StringRef() : dimNames[d];
    int64_t tableSize = dimName == "batch" ? batchSize
                        : dimName == "seq" ? seqLen
                                           : 0;
    StringRef tableKey = dimName == "batch" ? "batch_size" : "seq_len";
    std::string dimWhere = where + ".shape[" + std::to_string(d) + "]";
    if (!dimName.empty() && tableSize > 0) {
      // A batch size the caller chose replaces the file's.
      bool chosen = dimName == "batch" && options.batchSize;
      if (size != -1 && size != tableSize && !chosen)
        return LogicalResult(error(dimWhere, place)
                             << "dim " << d << " is named \"" << dimName
                             << "\" and is " << size << ", but training."
                             << tableKey << " is " << tableSize
                             << " (write -1 or " << tableSize << ")");
      size = tableSize * (dimName == "batch" ? batchReplicas : 1);
    } else if (size == -1 && !dimName.empty()) {
      return LogicalResult(error(dimWhere, place)
                           << "dim " << d << " is -1 (\"" << dimName
                           << "\"), but the training table sets no "
                           << tableKey);
    } else if (size < 1) {
      return LogicalResult(
          error(dimWhere, place)
          << "dim " << d << " is " << size
          << "; dims must be at least 1 (-1 only for dims named "
          << "\"batch\" or \"seq\")");
    }
    std::optional<int64_t> product = llvm::checkedMul(elements, size);
    if (!product)
      return LogicalResult(error(where + ".shape", place)
                           << "the shape has more than 2^63 elements");
    elements = *product;
  }
  type = RankedTensorType::get(shape, *elementType);

  NamedAttrList attrs;
  attrs.append(TgDialect::kInputAttr, builder.getStringAttr(name));
  if (input->dim_names())
    attrs.append(
        TgDialect::kDimNamesAttr,
        builder.getStrArrayAttr(llvm::to_vector_of<StringRef>(dimNames)));
  return attrs.getDictionary(context);
}

//===----------------------------------------------------------------------===//
// Nodes
//===----------------------------------------------------------------------===//

FailureOr<Value> ModelImporter::lookupInput(unsigned index, unsigned operand,
                                            StringRef name) {
  std::string where =
      nodePath(index) + ".inputs[" + std::to_string(operand) + "]";
  if (Value value = values.lookup(name))
    return value;
  auto it = defs.find(name);
  if (it == defs.end())
    return LogicalResult(error(where, nodePlace(index))
                         << "input '" << name
                         << "' is not defined by any param, input or node"
                         << didYouMean(name));
  // Defined by this node or a later one: either the nodes are out of order
  // or the graph has a cycle through this node.
  unsigned later = it->second.index;
  if (later == index)
    return LogicalResult(
        error(where, nodePlace(index))
        << "input '" << name
        << "' is this node's own output: the graph has a cycle");
  // Does the defining node depend on this one? Walk its inputs back.
  SmallVector<unsigned> stack = {later};
  llvm::DenseSet<unsigned> seen;
  bool cycle = false;
  while (!stack.empty() && !cycle) {
    unsigned n = stack.pop_back_val();
    if (!seen.insert(n).second)
      continue;
    const auto *inputs = model->nodes()->Get(n)->inputs();
    for (unsigned j = 0; inputs && j < inputs->size(); ++j) {
      auto def = defs.find(stringOf(inputs->Get(j)));
      if (def == defs.end() || def->second.kind != TensorDef::Node)
        continue;
      if (def->second.index == index)
        cycle = true;
      else if (def->second.index > index)
        stack.push_back(def->second.index);
    }
  }
  InFlightDiagnostic diag = error(where, nodePlace(index));
  diag << "input '" << name << "' is defined later, by " << nodePlace(later);
  if (cycle)
    diag << ", which depends on this node: the graph has a cycle";
  else
    diag << "; nodes must be listed in topological order";
  diag.attachNote(locate(nodePath(later)))
      << "'" << name << "' is defined here";
  return failure();
}

FailureOr<SmallVector<NodeAttr>> ModelImporter::readNodeAttrs(unsigned index) {
  SmallVector<NodeAttr> attrs;
  const auto *list = model->nodes()->Get(index)->attrs();
  if (!list)
    return attrs;
  llvm::StringMap<unsigned> seen;
  for (unsigned k = 0; k < list->size(); ++k) {
    const fbs::Attr *attr = list->Get(k);
    NodeAttr out;
    out.name = stringOf(attr->name());
    out.path = nodePath(index) + ".attrs[" + std::to_string(k) + "]";
    SmallVector<std::pair<AttrKind, StringRef>> set;
    if (attr->i().has_value())
      set.push_back({AttrKind::Int, "i"});
    if (attr->f().has_value())
      set.push_back({AttrKind::Float, "f"});
    if (attr->b().has_value())
      set.push_back({AttrKind::Bool, "b"});
    if (attr->s())
      set.push_back({AttrKind::String, "s"});
    if (attr->ints())
      set.push_back({AttrKind::Ints, "ints"});
    if (attr->floats())
      set.push_back({AttrKind::Floats, "floats"});
    if (set.size() != 1) {
      InFlightDiagnostic diag = error(out.path, nodePlace(index));
      diag << "attribute '" << out.name << "' ";
      if (set.empty())
        return LogicalResult(diag
                             << "has no value; set one of i, f, b, s, ints, "
                             << "floats");
      diag << "sets " << set.size() << " value fields (";
      llvm::interleaveComma(set, diag, [&](auto &p) { diag << p.second; });
      return LogicalResult(diag << "); set exactly one");
    }
    auto [it, inserted] = seen.try_emplace(out.name, k);
    if (!inserted)
      return LogicalResult(error(out.path, nodePlace(index))
                           << "attribute '" << out.name
                           << "' is given twice (also "
                           << "attrs[" << it->second << "])");
    out.kind = set.front().first;
    out.i = attr->i().value_or(0);
    out.f = attr->f().value_or(0);
    out.b = attr->b().value_or(false);
    out.s = stringOf(attr->s());
    out.ints = readScalarVector(attr->ints());
    out.floats = readScalarVector(attr->floats());
    attrs.push_back(std::move(out));
  }
  return attrs;
}

Attribute ModelImporter::sampleAttr(AttrKind kind) {
  switch (kind) {
  case AttrKind::Int:
    return builder.getI64IntegerAttr(0);
  case AttrKind::Float:
    return builder.getF64FloatAttr(0);
  case AttrKind::Bool:
    return builder.getBoolAttr(false);
  case AttrKind::String:
    return builder.getStringAttr("");
  case AttrKind::Ints:
    return builder.getDenseI64ArrayAttr({});
  case AttrKind::Floats:
    return builder.getDenseF64ArrayAttr({});
  }
  return {};
}

Attribute ModelImporter::toAttr(const NodeAttr &attr) {
  switch (attr.kind) {
  case AttrKind::Int:
    return builder.getI64IntegerAttr(attr.i);
  case AttrKind::Float:
    return builder.getF64FloatAttr(attr.f);
  case AttrKind::Bool:
    return builder.getBoolAttr(attr.b);
  case AttrKind::String:
    return builder.getStringAttr(attr.s);
  case AttrKind::Ints:
    return builder.getDenseI64ArrayAttr(attr.ints);
  case AttrKind::Floats:
    return builder.getDenseF64ArrayAttr(attr.floats);
  }
  return {};
}

FailureOr<Attribute>
ModelImporter::convertNodeAttr(unsigned index, RegisteredOperationName opName,
                               const NodeAttr &attr) {
  Attribute value = toAttr(attr);
  // Check the value against the op's own constraint for the attribute; on a
  // mismatch, find the kinds it does accept to say what was expected.
  auto accepts = [&](Attribute candidate,
                     std::string *message = nullptr) -> bool {
    NamedAttrList list;
    list.append(attr.name, candidate);
    ScopedDiagnosticHandler capture(context, [&](Diagnostic &diag) {
      if (message && message->empty())
        *message = diag.str();
      return success();
    });
    return succeeded(opName.verifyInherentAttrs(
        list, [&] { return emitError(UnknownLoc::get(context)); }));
  };
  // A string may name a case of the tg enum the op holds the attribute as.
  const StringEnum *stringEnum = nullptr;
  for (const StringEnum &e : getStringEnums())
    if (accepts(e.fromString(context, e.spellings().front())))
      stringEnum = &e;
  std::string message;
  if (stringEnum && attr.kind == AttrKind::String) {
    if (Attribute named = stringEnum->fromString(context, attr.s))
      return named;
    InFlightDiagnostic diag = error(attr.path, nodePlace(index));
    diag << "attribute '" << attr.name << "' is '" << attr.s
         << "'; expected one of ";
    llvm::interleaveComma(stringEnum->spellings(), diag);
    return LogicalResult(diag);
  }
  if (accepts(value, &message))
    return value;
  SmallVector<StringRef> expected;
  for (AttrKind kind : kAllAttrKinds)
    if (accepts(sampleAttr(kind)) || (kind == AttrKind::String && stringEnum))
      expected.push_back(describe(kind));
  InFlightDiagnostic diag = error(attr.path, nodePlace(index));
  diag << "attribute '" << attr.name << "' ";
  if (expected.empty())
    return LogicalResult(diag << "is not accepted by '" << opName
                              << "': " << message);
  diag << "takes ";
  llvm::interleave(expected, diag, " or ");
  return LogicalResult(diag << ", got " << describe(attr.kind));
}

/// The shape in a `shape` attribute of reshape or broadcast_to: sizes >= 0,
/// and for reshape one -1 that takes what is left of `elements`.
static FailureOr<SmallVector<int64_t>>
resolveShapeAttr(ArrayRef<int64_t> shape, std::optional<int64_t> elements,
                 function_ref<InFlightDiagnostic()> emitError) {
  SmallVector<int64_t> out(shape);
  std::optional<size_t> inferred;
  int64_t known = 1;
  for (auto [d, size] : llvm::enumerate(shape)) {
    if (size == -1 && elements) {
      if (inferred)
        return LogicalResult(emitError()
                             << "attribute 'shape' has more than one -1 "
                             << "(dims " << *inferred << " and " << d << ")");
      inferred = d;
      continue;
    }
    if (size < 0)
      return LogicalResult(emitError()
                           << "attribute 'shape' has dim " << d << " = " << size
                           << (elements ? "; only one dim may be "
                                          "-1, the others >= 0"
                                        : "; dims must be >= 0"));
    std::optional<int64_t> product = llvm::checkedMul(known, size);
    if (!product)
      return LogicalResult(emitError()
                           << "attribute 'shape' has more than 2^63 elements");
    known = *product;
  }
  if (inferred) {
    if (known == 0 || *elements % known != 0)
      return LogicalResult(emitError()
                           << "attribute 'shape' cannot take " << *elements
                           << " elements: the dims other than the -1 hold "
                           << known);
    out[*inferred] = *elements / known;
  }
  return out;
}

FailureOr<Type> ModelImporter::modelFileResultType(unsigned index, StringRef op,
                                                   ArrayRef<Value> operands,
                                                   ArrayRef<NodeAttr> attrs,
                                                   NamedAttrList &odsAttrs) {
  auto find = [&](StringRef name) -> const NodeAttr * {
    for (const NodeAttr &attr : attrs)
      if (attr.name == name)
        return &attr;
    return nullptr;
  };
  auto emitAt = [&](const NodeAttr *attr) {
    return [this, attr, index] {
      return error(attr ? attr->path : nodePath(index), nodePlace(index));
    };
  };
  auto operandType = [&]() -> RankedTensorType {
    return operands.empty() ? RankedTensorType()
                            : dyn_cast<RankedTensorType>(operands[0].getType());
  };
  auto dtypeOf = [&](const NodeAttr *attr) -> FailureOr<Type> {
    if (!attr)
      return Type(builder.getF32Type());
    std::optional<fbs::DType> dtype = parseDTypeName(attr->s);
    if (!dtype)
      return LogicalResult(emitAt(attr)()
                           << "attribute 'dtype' is '" << attr->s
                           << "'; expected one of " << listDTypeNames());
    return getElementType(context, *dtype);
  };

  if (op == "reshape" || op == "broadcast_to") {
    RankedTensorType input = operandType();
    if (!input)
      return LogicalResult(error(nodePath(index), nodePlace(index))
                           << "expects 1 input, got " << operands.size());
    const NodeAttr *shapeAttr = find("shape");
    std::optional<int64_t> elements;
    if (op == "reshape")
      elements = input.getNumElements();
    auto shape = resolveShapeAttr(shapeAttr->ints, elements, emitAt(shapeAttr));
    if (failed(shape))
      return failure();
    return Type(RankedTensorType::get(*shape, input.getElementType()));
  }
  if (op == "cast") {
    RankedTensorType input = operandType();
    if (!input)
      return LogicalResult(error(nodePath(index), nodePlace(index))
                           << "expects 1 input, got " << operands.size());
    FailureOr<Type> element = dtypeOf(find("dtype"));
    if (failed(element))
      return failure();
    return Type(RankedTensorType::get(input.getShape(), *element));
  }
  if (op == "iota") {
    FailureOr<Type> element = dtypeOf(find("dtype"));
    if (failed(element))
      return failure();
    const NodeAttr *shapeAttr = find("shape");
    auto shape =
        resolveShapeAttr(shapeAttr->ints, std::nullopt, emitAt(shapeAttr));
    if (failed(shape))
      return failure();
    return Type(RankedTensorType::get(*shape, *element));
  }

  // constant: `value` is a splat (i, f, b) or every element (ints, floats).
  FailureOr<Type> element = dtypeOf(find("dtype"));
  if (failed(element))
    return failure();
  SmallVector<int64_t> shape;
  if (const NodeAttr *shapeAttr = find("shape")) {
    auto resolved =
        resolveShapeAttr(shapeAttr->ints, std::nullopt, emitAt(shapeAttr));
    if (failed(resolved))
      return failure();
    shape = *resolved;
  }
  auto type = RankedTensorType::get(shape, *element);
  const NodeAttr *value = find("value");
  auto bad = [&]() { return emitAt(value)() << "attribute 'value' "; };
  int64_t count = type.getNumElements();
  bool splat = value->kind == AttrKind::Int || value->kind == AttrKind::Float ||
               value->kind == AttrKind::Bool;
  size_t given =
      value->kind == AttrKind::Ints ? value->ints.size() : value->floats.size();
  if (!splat && (int64_t)given != count)
    return LogicalResult(bad() << "has " << given
                               << " elements for a tensor of " << count);
  if (!splat && count > (int64_t(1) << 24))
    return LogicalResult(bad()
                         << "has " << count << " elements; constants over "
                         << (1 << 24) << " elements belong in an init file");
  size_t n = splat ? 1 : given;
  DenseElementsAttr data;
  if (auto floatType = dyn_cast<FloatType>(*element)) {
    if (value->kind == AttrKind::Bool)
      return LogicalResult(bad()
                           << "is a bool for a " << *element << " constant");
    SmallVector<APFloat> elements;
    for (size_t k = 0; k < n; ++k) {
      double d = value->kind == AttrKind::Float    ? value->f
                 : value->kind == AttrKind::Int    ? (double)value->i
                 : value->kind == AttrKind::Floats ? value->floats[k]
                                                   : (double)value->ints[k];
      APFloat v(d);
      bool lost;
      v.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                &lost);
      elements.push_back(v);
    }
    data = DenseElementsAttr::get(type, elements);
  } else {
    unsigned width = element->getIntOrFloatBitWidth();
    if (value->kind == AttrKind::Float || value->kind == AttrKind::Floats)
      return LogicalResult(bad() << "holds floats for a " << *element
                                 << " constant; use 'i' or 'ints'");
    SmallVector<APInt> elements;
    for (size_t k = 0; k < n; ++k) {
      int64_t v = value->kind == AttrKind::Int    ? value->i
                  : value->kind == AttrKind::Bool ? (int64_t)value->b
                                                  : value->ints[k];
      bool fits = width == 1    ? (v == 0 || v == 1)
                  : width == 32 ? v == (int64_t)(int32_t)v
                                : true;
      if (!fits)
        return LogicalResult(bad() << "holds " << v << ", which does not fit "
                                   << *element);
      elements.push_back(APInt(width, (uint64_t)v, /*isSigned=*/width > 1));
    }
    data = DenseElementsAttr::get(type, elements);
  }
  odsAttrs.append("value", data);
  return Type(type);
}

LogicalResult ModelImporter::verifyBuiltOp(unsigned index, Operation *op) {
  // The op's own diagnostics (shape inference ran before this, the verifier
  // now) are re-emitted with the node's place in front.
  SmallVector<Diagnostic> captured;
  LogicalResult result = success();
  {
    ScopedDiagnosticHandler capture(context, [&](Diagnostic &diag) {
      captured.push_back(std::move(diag));
      return success();
    });
    result = verify(op);
  }
  for (Diagnostic &diag : captured) {
    InFlightDiagnostic out =
        context->getDiagEngine().emit(diag.getLocation(), diag.getSeverity());
    out << nodePlace(index) << ": " << diag.str();
    for (Diagnostic &note : diag.getNotes()) {
      // The verifier's dump of the op in generic form says nothing the
      // node's place does not.
      if (StringRef(note.str()).starts_with("see current operation"))
        continue;
      out.attachNote(note.getLocation()) << note.str();
    }
  }
  return result;
}

LogicalResult ModelImporter::buildNode(unsigned index) {
  const fbs::Node *node = model->nodes()->Get(index);
  std::string where = nodePath(index);
  StringRef op = stringOf(node->op());
  StringRef name = stringOf(node->name());
  const auto *outputs = node->outputs();
  StringRef output =
      outputs && outputs->size() ? stringOf(outputs->Get(0)) : StringRef();

  // The op. An internal op names the pass that creates it; anything else
  // gets the closest op a model file may use.
  std::optional<RegisteredOperationName> opName =
      RegisteredOperationName::lookup(("tg." + op).str(), context);
  if (!opName || !isModelFileOp(*opName)) {
    InFlightDiagnostic diag = error(where + ".op", nodePlace(index));
    if (opName)
      return diag << "'" << op << "' is created by the compiler's passes and "
                  << "cannot appear in a model file";
    SmallVector<std::string> known;
    for (RegisteredOperationName n : context->getRegisteredOperations())
      if (isModelFileOp(n))
        known.push_back(n.getStringRef().drop_front(3).str());
    diag << "unknown op '" << op << "'";
    if (auto best = closestMatch(op, known))
      diag << "; did you mean '" << *best << "'?";
    return failure();
  }

  if (!outputs || outputs->size() != 1)
    return error(where + ".outputs", nodePlace(index))
           << "defines " << (outputs ? outputs->size() : 0)
           << " tensors; a node defines exactly one (its op has one result)";

  // Operands, by tensor name.
  SmallVector<Value> operands;
  if (const auto *inputs = node->inputs()) {
    for (unsigned j = 0; j < inputs->size(); ++j) {
      FailureOr<Value> value = lookupInput(index, j, stringOf(inputs->Get(j)));
      if (failed(value))
        return failure();
      operands.push_back(*value);
    }
  }

  // Attributes: the op's own (checked against its ODS constraints) and the
  // model-file ones that stand for a result type.
  FailureOr<SmallVector<NodeAttr>> attrs = readNodeAttrs(index);
  if (failed(attrs))
    return failure();
  NamedAttrList odsAttrs;
  bool hasModelFileAttrs = false;
  for (const ModelFileAttr &special : kModelFileAttrs) {
    if (special.op != op)
      continue;
    hasModelFileAttrs = true;
    const NodeAttr *attr = nullptr;
    for (const NodeAttr &a : *attrs)
      if (a.name == special.name)
        attr = &a;
    if (!attr) {
      if (special.required)
        return error(where, nodePlace(index))
               << "missing attribute '" << special.name << "'";
      continue;
    }
    if (!llvm::is_contained(special.kinds, attr->kind)) {
      InFlightDiagnostic diag = error(attr->path, nodePlace(index));
      diag << "attribute '" << special.name << "' takes ";
      llvm::interleave(
          special.kinds, diag, [&](AttrKind k) { diag << describe(k); },
          " or ");
      return diag << ", got " << describe(attr->kind);
    }
  }
  for (const NodeAttr &attr : *attrs) {
    bool special = llvm::any_of(kModelFileAttrs, [&](const ModelFileAttr &m) {
      return m.op == op && m.name == attr.name;
    });
    if (special)
      continue;
    bool known = llvm::any_of(opName->getAttributeNames(), [&](StringAttr n) {
      return n.getValue() == attr.name;
    });
    if (!known || attr.name == "operandSegmentSizes") {
      SmallVector<std::string> names;
      for (StringAttr n : opName->getAttributeNames())
        if (n.getValue() != "operandSegmentSizes")
          names.push_back(n.str());
      for (const ModelFileAttr &m : kModelFileAttrs)
        if (m.op == op)
          names.push_back(m.name.str());
      InFlightDiagnostic diag = error(attr.path, nodePlace(index));
      diag << "unknown attribute '" << attr.name << "'";
      if (names.empty())
        return diag << "; " << op << " takes no attributes";
      diag << "; " << op << " takes " << joinNames(names);
      if (auto best = closestMatch(attr.name, names))
        diag << " (did you mean '" << *best << "'?)";
      return failure();
    }
    FailureOr<Attribute> value = convertNodeAttr(index, *opName, attr);
    if (failed(value))
      return failure();
    // A slice's limit of -1 is the dim's end, so that the file need not
    // spell a size that follows the batch or the sequence.
    if (op == "slice" && attr.name == "limit" && !operands.empty())
      if (auto input = dyn_cast<RankedTensorType>(operands[0].getType()))
        if (auto limit = dyn_cast<DenseI64ArrayAttr>(*value);
            limit && limit.size() == input.getRank()) {
          SmallVector<int64_t> ends(limit.asArrayRef());
          for (auto [d, end] : llvm::enumerate(ends))
            if (end == -1)
              end = input.getDimSize(d);
          value = Attribute(builder.getDenseI64ArrayAttr(ends));
        }
    odsAttrs.append(attr.name, *value);
  }

  // Optional operands are positional: layer_norm is x [, weight [, bias]].
  if (opName->hasTrait<OpTrait::AttrSizedOperandSegments>()) {
    if (opName->getStringRef() != LayerNormOp::getOperationName())
      return error(where, nodePlace(index))
             << "the importer does not know how to place the optional "
             << "operands of '" << op << "'";
    if (operands.empty() || operands.size() > 3)
      return error(where + ".inputs", nodePlace(index))
             << "takes 1 to 3 inputs (x, weight, bias), got "
             << operands.size();
    odsAttrs.append("operandSegmentSizes",
                    builder.getDenseI32ArrayAttr(
                        {1, operands.size() >= 2, operands.size() >= 3}));
  }
  // attention is query, key, value [, mask]: say so rather than leave it to
  // ODS's "operand group starting at #3".
  if (opName->getStringRef() == AttentionOp::getOperationName() &&
      operands.size() > 4)
    return error(where + ".inputs", nodePlace(index))
           << "takes 3 or 4 inputs (query, key, value, mask), got "
           << operands.size();

  // Result type: from the model-file attributes, from the op's shape
  // inference, or (for the ops that keep their operand's type: unary math,
  // softmax, the norms, dropout) the first operand's type.
  StringRef nodeName = name.empty() ? output : name;
  Location loc = NameLoc::get(builder.getStringAttr(nodeName), locate(where));
  // The block the node computes for, a fact of the IR from here on (a
  // constant has none: CSE shares it between layers).
  std::string layer = groupOfName(nodeName);
  bool infers = opName->hasInterface<InferTypeOpInterface>();
  Type resultType;
  if (hasModelFileAttrs) {
    FailureOr<Type> type =
        modelFileResultType(index, op, operands, *attrs, odsAttrs);
    if (failed(type))
      return failure();
    resultType = *type;
  } else if (operands.empty()) {
    return error(where, nodePlace(index))
           << "has no inputs; '" << op << "' takes at least one";
  } else if (!infers) {
    resultType = operands.front().getType();
  }

  OperationState state(loc, *opName);
  state.addOperands(operands);
  state.addAttributes(odsAttrs);
  state.addTypes(resultType ? resultType : builder.getNoneType());
  Operation *created = builder.create(state);

  if (!resultType) {
    SmallVector<Type> inferred;
    SmallVector<Diagnostic> captured;
    LogicalResult inferredOk = success();
    {
      ScopedDiagnosticHandler capture(context, [&](Diagnostic &diag) {
        captured.push_back(std::move(diag));
        return success();
      });
      inferredOk = cast<InferTypeOpInterface>(created).inferReturnTypes(
          context, loc, created->getOperands(),
          created->getRawDictionaryAttrs(), created->getPropertiesStorage(),
          created->getRegions(), inferred);
    }
    if (failed(inferredOk) || inferred.size() != 1) {
      for (Diagnostic &diag : captured)
        error(where, nodePlace(index)) << diag.str();
      if (captured.empty())
        error(where, nodePlace(index)) << "the result type cannot be inferred";
      created->erase();
      return failure();
    }
    created->getResult(0).setType(inferred.front());
  }
  if (failed(verifyBuiltOp(index, created))) {
    created->erase();
    return failure();
  }
  if (!isa<ConstantOp>(created))
    setLayer(created, layer);
  Value result = created->getResult(0);
  if (const auto *sharding = node->sharding()) {
    // A pin on the node's output: the value downstream reads it through.
    FailureOr<ShardingAttr> pin =
        importSharding(where + ".sharding", nodePlace(index), sharding,
                       cast<RankedTensorType>(result.getType()).getShape());
    if (failed(pin))
      return failure();
    auto constraint = ShardingConstraintOp::create(builder, loc, result, *pin);
    setLayer(constraint, layer);
    constraint->setAttr(kShardingOriginAttr,
                        builder.getArrayAttr({builder.getStringAttr(
                            ("pin: " + where + " '" + output + "'").str())}));
    result = constraint.getResult();
  }
  values[output] = result;
  return success();
}

FailureOr<ShardingAttr> ModelImporter::importSharding(
    const std::string &where, const Twine &place,
    const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>> *dims,
    ArrayRef<int64_t> shape) {
  if (meshAxes.empty())
    return LogicalResult(error(where, place)
                         << "pins a sharding, but the model has no mesh "
                            "(training.mesh or tgc --mesh)");
  if (dims->size() != shape.size())
    return LogicalResult(error(where, place)
                         << "has " << dims->size()
                         << " entries for a tensor of rank " << shape.size()
                         << " (one per dim: its mesh axes, comma-separated)");
  SmallVector<SmallVector<StringRef>> axes(shape.size());
  llvm::StringSet<> used;
  for (unsigned d = 0; d < dims->size(); ++d) {
    std::string dimWhere = where + "[" + std::to_string(d) + "]";
    SmallVector<StringRef> names;
    StringRef(dims->Get(d)->c_str()).split(names, ',', -1, false);
    int64_t parts = 1;
    for (StringRef name : names) {
      name = name.trim();
      auto axis =
          llvm::find_if(meshAxes, [&](auto &a) { return a.first == name; });
      if (axis == meshAxes.end()) {
        InFlightDiagnostic diag = error(dimWhere, place);
        diag << "unknown mesh axis '" << name << "'; the mesh has ";
        llvm::interleaveComma(meshAxes, diag,
                              [&](auto &a) { diag << "'" << a.first << "'"; });
        return LogicalResult(diag);
      }
      if (name == "pp")
        return LogicalResult(error(dimWhere, place)
                             << "mesh axis 'pp' holds the pipeline stages, "
                                "which split the layers, not tensors");
      if (!used.insert(name).second)
        return LogicalResult(error(dimWhere, place)
                             << "mesh axis '" << name
                             << "' splits the tensor twice");
      parts *= axis->second;
      axes[d].push_back(name);
    }
    if (shape[d] % parts != 0)
      return LogicalResult(error(dimWhere, place)
                           << "dim " << d << " of size " << shape[d]
                           << " does not divide over the " << parts
                           << " processes of '" << dims->Get(d)->str() << "'");
  }
  return ShardingAttr::get(context, "mesh", axes);
}

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp> ModelImporter::run(const fbs::Model &root) {
  model = &root;
  if (root.version() != 1) {
    error("version", "version") << "model file version " << root.version()
                                << " is not supported; this tgc reads "
                                << "version 1";
    return nullptr;
  }
  StringRef modelName = stringOf(root.name());
  if (modelName.empty()) {
    error("name", "name") << "the model needs a non-empty name";
    return nullptr;
  }
  FailureOr<DictionaryAttr> training = importTraining();
  if (failed(training))
    return nullptr;

  // Signature: params, then inputs.
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<Location> argLocs;
  unsigned numParams = root.params() ? root.params()->size() : 0;
  unsigned numInputs = root.inputs() ? root.inputs()->size() : 0;
  for (unsigned i = 0; i < numParams; ++i) {
    Type type;
    FailureOr<DictionaryAttr> attrs = importParam(i, type);
    if (failed(attrs))
      return nullptr;
    argTypes.push_back(type);
    argAttrs.push_back(*attrs);
    argLocs.push_back(NameLoc::get(
        builder.getStringAttr(stringOf(root.params()->Get(i)->name())),
        locate("params[" + std::to_string(i) + "]")));
  }
  for (unsigned i = 0; i < numInputs; ++i) {
    Type type;
    FailureOr<DictionaryAttr> attrs = importInput(i, type);
    if (failed(attrs))
      return nullptr;
    argTypes.push_back(type);
    argAttrs.push_back(*attrs);
    argLocs.push_back(NameLoc::get(
        builder.getStringAttr(stringOf(root.inputs()->Get(i)->name())),
        locate("inputs[" + std::to_string(i) + "]")));
  }

  // Every node's output, before any node is built: a use before its
  // definition is then told apart from a name nothing defines.
  unsigned numNodes = root.nodes() ? root.nodes()->size() : 0;
  for (unsigned n = 0; n < numNodes; ++n) {
    const auto *outputs = root.nodes()->Get(n)->outputs();
    for (unsigned j = 0; outputs && j < outputs->size(); ++j)
      if (failed(
              defineTensor(stringOf(outputs->Get(j)), {TensorDef::Node, n},
                           nodePath(n) + ".outputs[" + std::to_string(j) + "]",
                           nodePlace(n))))
        return nullptr;
  }

  Location fileLoc = locator ? FileLineColLoc::get(context, path, 1, 1)
                             : FileLineColLoc::get(context, path, 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  (*module)->setAttr(TgDialect::kModelAttr, builder.getStringAttr(modelName));
  (*module)->setAttr(TgDialect::kTrainingAttr, *training);
  if (!model->training() && options.mesh)
    meshAxes = *options.mesh;
  builder.setInsertionPointToEnd(module->getBody());
  if (!meshAxes.empty()) {
    SmallVector<StringRef> names;
    SmallVector<int64_t> sizes;
    for (const auto &[axis, size] : meshAxes) {
      // The pipeline's axis: the step's stages (tg.pipeline), which
      // tg-pipeline-split puts back as the mesh's outermost axis once the
      // step is sharded on the others.
      if (axis == "pp") {
        setPipelineStages(*module, {size, 1});
        continue;
      }
      names.push_back(axis);
      sizes.push_back(size);
    }
    if (!names.empty()) {
      auto mesh = MeshOp::create(builder, fileLoc, "mesh",
                                 builder.getStrArrayAttr(names),
                                 builder.getDenseI64ArrayAttr(sizes),
                                 /*elastic=*/nullptr);
      if (!options.elasticAxis.empty())
        mesh.setElasticAttr(builder.getStrArrayAttr({options.elasticAxis}));
    }
  }
  auto func = func::FuncOp::create(builder, fileLoc, "forward",
                                   builder.getFunctionType(argTypes, {}));
  Block *body = func.addEntryBlock();
  // All at once: setting them one by one copies the whole list each time.
  func.setAllArgAttrs(argAttrs);
  for (unsigned i = 0; i < argAttrs.size(); ++i) {
    body->getArgument(i).setLoc(argLocs[i]);
    StringRef name = i < numParams
                         ? stringOf(root.params()->Get(i)->name())
                         : stringOf(root.inputs()->Get(i - numParams)->name());
    values[name] = body->getArgument(i);
  }

  builder.setInsertionPointToEnd(body);
  for (unsigned n = 0; n < numNodes; ++n)
    if (failed(buildNode(n)))
      return nullptr;

  // Results: the loss, then the outputs.
  SmallVector<Value> results;
  SmallVector<std::string> resultNames;
  auto addResult = [&](StringRef name, const std::string &where,
                       const Twine &place) -> LogicalResult {
    if (name.empty())
      return error(where, place) << "names no tensor";
    Value value = values.lookup(name);
    if (!value)
      return error(where, place)
             << "'" << name << "' is not defined by any param, input or "
             << "node" << didYouMean(name);
    if (llvm::is_contained(resultNames, name.str()))
      return error(where, place)
             << "'" << name << "' is already "
             << (resultNames.front() == name ? "the loss" : "an output");
    results.push_back(value);
    resultNames.push_back(name.str());
    return success();
  };
  StringRef loss = stringOf(root.loss());
  if (failed(addResult(loss, "loss", "loss")))
    return nullptr;
  auto lossType = dyn_cast<RankedTensorType>(results.front().getType());
  if (!lossType || lossType.getRank() != 0 ||
      !isa<FloatType>(lossType.getElementType())) {
    error("loss", "loss") << "'" << loss << "' is a "
                          << results.front().getType()
                          << "; the loss must be a float scalar (rank 0), "
                          << "e.g. the result of cross_entropy or "
                          << "reduce_mean over all dims";
    return nullptr;
  }
  if (const auto *outputs = root.outputs())
    for (unsigned k = 0; k < outputs->size(); ++k) {
      std::string where = "outputs[" + std::to_string(k) + "]";
      if (failed(addResult(stringOf(outputs->Get(k)), where, where)))
        return nullptr;
    }
  func::ReturnOp::create(builder, locate("loss"), results);
  func.setType(
      builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  for (auto [r, name] : llvm::enumerate(resultNames))
    func.setResultAttr(r, TgDialect::kOutputAttr, builder.getStringAttr(name));

  if (failed(verify(*module)))
    return nullptr;
  return module;
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

ModelFileFormat mlir::tg::guessModelFileFormat(StringRef path,
                                               StringRef contents) {
  if (path.ends_with_insensitive(".json"))
    return ModelFileFormat::Json;
  if (path.ends_with_insensitive(".tgm"))
    return ModelFileFormat::Binary;
  if (contents.size() >= 8 &&
      contents.substr(4, 4) == tgc::model::ModelIdentifier())
    return ModelFileFormat::Binary;
  return ModelFileFormat::Json;
}

/// Imports a buffer that passed the verifier.
static OwningOpRef<ModuleOp> importVerified(StringRef path, const uint8_t *data,
                                            MLIRContext *context,
                                            const JsonLocator *locator,
                                            const flatbuffers::Parser &schema,
                                            const ImportOptions &options) {
  return ModelImporter(path, context, locator, schema, options)
      .run(*tgc::model::GetModel(data));
}

/// Runs the FlatBuffers verifier on `size` bytes at `data` (8-byte aligned).
static bool verifyModelBuffer(const uint8_t *data, size_t size) {
  flatbuffers::Verifier::Options options;
  options.max_depth = 64;
  options.max_tables = 1000000;
  flatbuffers::Verifier verifier(data, size, options);
  return tgc::model::VerifyModelBuffer(verifier);
}

static OwningOpRef<ModuleOp> importBinary(StringRef path, StringRef contents,
                                          MLIRContext *context,
                                          const ImportOptions &options) {
  Location loc = FileLineColLoc::get(context, path, 0, 0);
  if (contents.size() < 8) {
    emitError(loc) << "not a tgm model file: " << contents.size()
                   << " bytes is too short for a FlatBuffers header";
    return nullptr;
  }
  if (contents.substr(4, 4) != tgc::model::ModelIdentifier()) {
    std::string found;
    for (char c : contents.substr(4, 4))
      found += llvm::isPrint(c)
                   ? std::string(1, c)
                   : llvm::formatv("\\x{0:x-2}", (unsigned char)c).str();
    emitError(loc) << "not a tgm model file: the file identifier at offset 4 "
                   << "is '" << found << "', expected 'TGM1'";
    return nullptr;
  }
  if (contents.size() >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    emitError(loc) << "tgm model file of " << contents.size()
                   << " bytes is over the FlatBuffers limit of 2 GiB";
    return nullptr;
  }
  // An aligned copy: FlatBuffers checks alignment relative to the buffer
  // start, and the reads are only aligned if the start is.
  std::vector<uint64_t> aligned((contents.size() + 7) / 8);
  std::memcpy(aligned.data(), contents.data(), contents.size());
  auto *data = reinterpret_cast<const uint8_t *>(aligned.data());
  if (!verifyModelBuffer(data, contents.size())) {
    emitError(loc) << "corrupt tgm model file: the FlatBuffers verifier "
                   << "rejects it (truncated, or an offset or size points "
                   << "outside the file, or a required field is missing)";
    return nullptr;
  }
  auto schema = createModelSchemaParser(/*forceDefaults=*/true);
  if (auto bad =
          findNonUtf8String(*reinterpret_cast<const flatbuffers::Table *>(
                                tgc::model::GetModel(data)),
                            *lookupModelTable(*schema, "Model"))) {
    emitError(loc) << "corrupt tgm model file: " << *bad
                   << " is not a UTF-8 string";
    return nullptr;
  }
  return importVerified(path, data, context, /*locator=*/nullptr, *schema,
                        options);
}

static OwningOpRef<ModuleOp> importJson(StringRef path, StringRef contents,
                                        MLIRContext *context,
                                        const ImportOptions &options) {
  // FlatBuffers reads a NUL-terminated string: text after an embedded NUL
  // would be ignored silently.
  if (size_t nul = contents.find('\0'); nul != StringRef::npos) {
    StringRef before = contents.take_front(nul);
    unsigned line = before.count('\n') + 1;
    size_t lineStart = before.rfind('\n');
    unsigned col = nul - (lineStart == StringRef::npos ? 0 : lineStart + 1) + 1;
    emitError(FileLineColLoc::get(context, path, line, col))
        << "NUL byte in JSON text (is this a binary .tgm file? pass "
        << "--model-format=tgm)";
    return nullptr;
  }
  auto schema = createModelSchemaParser(/*forceDefaults=*/true);
  std::string text = contents.str();
  if (!schema->ParseJson(text.c_str())) {
    // FlatBuffers reports "LINE: COL: error: MESSAGE" (one line per
    // message); the last error is the one that stopped it.
    StringRef report = schema->error_;
    SmallVector<StringRef> lines;
    report.split(lines, '\n', -1, /*KeepEmpty=*/false);
    StringRef last =
        lines.empty() ? StringRef("error: unknown error") : lines.back();
    unsigned line = 0, col = 0;
    StringRef message = last;
    auto [lineText, rest] = last.split(':');
    auto [colText, rest2] = rest.split(':');
    if (!lineText.trim().getAsInteger(10, line) &&
        !colText.trim().getAsInteger(10, col))
      message = rest2.trim();
    message.consume_front("error: ");
    // FlatBuffers counts columns from 0 and reports the position after the
    // token it stopped at.
    emitError(FileLineColLoc::get(context, path, line, col + 1))
        << "invalid model file: " << message;
    return nullptr;
  }
  const uint8_t *parsed = schema->builder_.GetBufferPointer();
  size_t size = schema->builder_.GetSize();
  std::vector<uint64_t> aligned((size + 7) / 8);
  std::memcpy(aligned.data(), parsed, size);
  auto *data = reinterpret_cast<const uint8_t *>(aligned.data());
  if (!verifyModelBuffer(data, size)) {
    emitError(FileLineColLoc::get(context, path, 1, 1))
        << "invalid model file: the parsed JSON does not verify against the "
        << "schema";
    return nullptr;
  }
  JsonLocator locator(contents);
  return importVerified(path, data, context, &locator, *schema, options);
}

OwningOpRef<ModuleOp> mlir::tg::importModel(StringRef path, StringRef contents,
                                            ModelFileFormat format,
                                            MLIRContext *context,
                                            const ImportOptions &options) {
  context->getOrLoadDialect<TgDialect>();
  context->getOrLoadDialect<func::FuncDialect>();
  if (format == ModelFileFormat::Binary)
    return importBinary(path, contents, context, options);
  return importJson(path, contents, context, options);
}

OwningOpRef<ModuleOp> mlir::tg::importModelFile(StringRef path,
                                                MLIRContext *context,
                                                const ImportOptions &options) {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/false);
  if (std::error_code ec = buffer.getError()) {
    emitError(FileLineColLoc::get(context, path, 0, 0))
        << "cannot read model file: " << ec.message();
    return nullptr;
  }
  StringRef contents = (*buffer)->getBuffer();
  return importModel(path, contents, guessModelFileFormat(path, contents),
                     context, options);
}
