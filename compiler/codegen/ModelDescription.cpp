//===- ModelDescription.cpp - What both emitters tell the runtime -*- C++ -*-===//
//
// The argument roles of @train_step, the data roles of @forward's inputs and
// the ModelDesc tables, shared by EmitCpp.cpp and EmitCuda.cpp.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/ModelDescription.h"

#include "dialects/tg/IR/TgOps.h"
#include "dialects/tg/IR/TgSharding.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace mlir::tg;

//===----------------------------------------------------------------------===//
// C++ spellings
//===----------------------------------------------------------------------===//

std::string mlir::tg::floatLiteral(double v) {
  if (std::isinf(v))
    return v > 0 ? "INFINITY" : "-INFINITY";
  if (std::isnan(v))
    return "NAN";
  return llvm::formatv("{0:e9}f", v).str();
}

std::string mlir::tg::intList(ArrayRef<int64_t> values) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "{";
  llvm::interleaveComma(values, os);
  if (values.empty())
    os << "0";
  os << "}";
  return s;
}

std::string mlir::tg::describeLoc(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return llvm::formatv("{0}:{1}", file.getFilename(), file.getLine()).str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations()) {
      std::string s = describeLoc(inner);
      if (!s.empty())
        return s;
    }
  return "";
}

std::string mlir::tg::dtypeName(Type t) {
  if (t.isF32())
    return "tgc::DType::F32";
  if (t.isBF16())
    return "tgc::DType::BF16";
  if (t.isF16())
    return "tgc::DType::F16";
  if (t.isInteger(32))
    return "tgc::DType::I32";
  if (t.isInteger(64))
    return "tgc::DType::I64";
  if (t.isInteger(1))
    return "tgc::DType::I1";
  return "tgc::DType::F32";
}

namespace {

//===----------------------------------------------------------------------===//
// Tables
//===----------------------------------------------------------------------===//

struct TableNumbers {
  DictionaryAttr dict;
  double get(StringRef key, double fallback) const {
    Attribute a = dict ? dict.get(key) : Attribute();
    if (auto f = dyn_cast_or_null<FloatAttr>(a))
      return f.getValueAsDouble();
    if (auto i = dyn_cast_or_null<IntegerAttr>(a))
      return (double)i.getValue().getSExtValue();
    return fallback;
  }
  TableNumbers sub(StringRef key) const {
    return {dict ? dict.getAs<DictionaryAttr>(key) : DictionaryAttr()};
  }
};

/// Which axes of `mesh` split each dim of a tensor sharded as `sharding`:
/// one bitmask per dim (bit i: the mesh's axis i), all 0 without a mesh.
SmallVector<int64_t> splitAxesOf(ShardingAttr sharding, int64_t rank,
                                 MeshOp mesh) {
  SmallVector<int64_t> masks(rank, 0);
  if (!sharding || !mesh)
    return masks;
  SmallVector<StringRef> axes = mesh.getAxisNames();
  for (int64_t d = 0; d < rank && d < sharding.getRank(); ++d)
    for (StringRef axis : sharding.axesOf(d))
      for (auto [i, name] : llvm::enumerate(axes))
        if (name == axis)
          masks[d] |= int64_t(1) << i;
  return masks;
}

/// The whole tensor's shape of a value of `type` (what one process holds)
/// sharded as `sharding`: each split dim times the sizes of its axes.
SmallVector<int64_t> globalShape(Type type, ShardingAttr sharding,
                                 MeshOp mesh) {
  auto t = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(t.getShape());
  if (!mesh)
    return shape;
  SmallVector<int64_t> masks = splitAxesOf(sharding, t.getRank(), mesh);
  for (auto [d, mask] : llvm::enumerate(masks))
    for (auto [i, size] : llvm::enumerate(mesh.getShape()))
      if (mask & (int64_t(1) << i))
        shape[d] *= size;
  return shape;
}

} // namespace

std::string mlir::tg::tensorDesc(StringRef name, Type type,
                                 ShardingAttr sharding, MeshOp mesh,
                                 bool global, ArrayRef<int64_t> fileShape) {
  auto t = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape = global ? globalShape(type, sharding, mesh)
                                      : SmallVector<int64_t>(t.getShape());
  SmallVector<int64_t> masks = splitAxesOf(sharding, t.getRank(), mesh);
  bool hasFileShape = !fileShape.empty() && fileShape != ArrayRef(shape);
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "{\"" << name << "\", " << dtypeName(t.getElementType()) << ", "
     << t.getRank() << ", " << intList(shape);
  if (hasFileShape || llvm::any_of(masks, [](int64_t m) { return m != 0; }))
    os << ", " << intList(masks);
  if (hasFileShape)
    os << ", " << fileShape.size() << ", " << intList(fileShape);
  os << "}";
  return s;
}

namespace {

std::string initSpec(InitializerAttr init) {
  if (!init)
    return "{tgc::InitKind::Zeros, 0, 1, -1, 1, 1, 0, \"\", \"\"}";
  static const char *kinds[] = {"Zeros",         "Ones",          "Constant",
                                "Normal",        "Uniform",       "XavierUniform",
                                "XavierNormal",  "KaimingUniform", "KaimingNormal",
                                "File"};
  auto quote = [](StringRef s) {
    std::string q = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\')
        q += '\\';
      q += c;
    }
    return q + "\"";
  };
  // Every digit of the doubles: a std of 0.02 / sqrt(2 * 12) must not come
  // out as 0.00.
  auto number = [](APFloat f) {
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.17g", f.convertToDouble());
    return std::string(buffer);
  };
  return llvm::formatv("{tgc::InitKind::{0}, {1}, {2}, {3}, {4}, {5}, {6}, "
                       "{7}, {8}}",
                       kinds[(int)init.getKind()], number(init.getMean()),
                       number(init.getStd()), number(init.getLow()),
                       number(init.getHigh()), number(init.getGain()),
                       number(init.getValue()), quote(init.getFile()),
                       quote(init.getKey()))
      .str();
}

/// The data role of each batch input (see InputRole in Model.h).
FailureOr<SmallVector<std::string>> assignRoles(func::FuncOp forward) {
  SmallVector<std::string> roles;
  int tokenInputs = 0;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    auto name = forward.getArgAttrOfType<StringAttr>(i, TgDialect::kInputAttr);
    if (!name)
      continue;
    auto type = cast<RankedTensorType>(forward.getArgument(i).getType());
    SmallVector<StringRef> dims;
    if (auto names =
            forward.getArgAttrOfType<ArrayAttr>(i, TgDialect::kDimNamesAttr))
      for (Attribute a : names)
        dims.push_back(cast<StringAttr>(a).getValue());
    bool isInt = type.getElementType().isInteger(32) ||
                 type.getElementType().isInteger(64);
    bool seqOnly = dims.size() == 1 && dims[0] == "seq";
    bool batchSeq = dims.size() == 2 && dims[0] == "batch" && dims[1] == "seq";
    if (isInt && seqOnly) {
      roles.push_back("Positions");
    } else if (isInt && (batchSeq || (dims.empty() && type.getRank() == 2))) {
      if (tokenInputs >= 2)
        return forward.emitError("cannot tell what data feeds input '")
               << name.getValue() << "': a third [batch, seq] integer input";
      roles.push_back(tokenInputs++ == 0 ? "Tokens" : "Targets");
    } else if (isInt && type.getRank() == 1) {
      roles.push_back("Labels");
    } else if (isa<FloatType>(type.getElementType())) {
      roles.push_back("Features");
    } else {
      return forward.emitError("cannot tell what data feeds input '")
             << name.getValue() << "' of type " << type;
    }
  }
  return roles;
}

/// The bound every value of the integer input `input` must stay under: the
/// rows of each embedding table it indexes and the classes of each loss it
/// labels, followed through the ops that only move values around; 0 when
/// it indexes nothing.
int64_t indexLimit(Value input) {
  int64_t limit = 0;
  auto tighten = [&](int64_t bound) {
    limit = limit == 0 ? bound : std::min(limit, bound);
  };
  SmallVector<Value> work{input};
  DenseSet<Value> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    for (Operation *user : v.getUsers()) {
      if (auto e = dyn_cast<EmbeddingOp>(user)) {
        if (e.getIndices() == v)
          tighten(cast<RankedTensorType>(e.getTable().getType()).getDimSize(0));
      } else if (auto ce = dyn_cast<CrossEntropyOp>(user)) {
        if (ce.getLabels() == v)
          tighten(cast<RankedTensorType>(ce.getLogits().getType())
                      .getShape()
                      .back());
      } else if (isa<ReshapeOp, FlattenOp, SliceOp, TransposeOp,
                     BroadcastToOp, ConcatOp>(user)) {
        work.push_back(user->getResult(0));
      }
    }
  }
  return limit;
}

} // namespace

//===----------------------------------------------------------------------===//
// StepSignature
//===----------------------------------------------------------------------===//

FailureOr<StepSignature> StepSignature::analyze(ModuleOp module,
                                                StringRef backend) {
  StepSignature sig;
  sig.forward = module.lookupSymbol<func::FuncOp>("forward");
  sig.trainStep = module.lookupSymbol<func::FuncOp>("train_step");
  if (!sig.forward || !sig.trainStep)
    return module.emitError(backend)
           << ": the module needs @forward and @train_step (run tg-autodiff "
              "and tg-optimizer)";
  func::FuncOp forward = sig.forward, step = sig.trainStep;
  auto roles = assignRoles(forward);
  if (failed(roles))
    return failure();
  sig.roles = std::move(*roles);
  auto modelName = module->getAttrOfType<StringAttr>(TgDialect::kModelAttr);
  sig.modelName = modelName ? modelName.getValue().str() : "model";

  // @train_step: params, state, inputs, accumulated gradients, scalars.
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    if (step.getArgAttr(i, TgDialect::kParamAttr))
      sig.paramArgs.push_back(i);
    else if (step.getArgAttr(i, TgDialect::kStateAttr))
      sig.stateArgs.push_back(i);
    else if (step.getArgAttr(i, TgDialect::kInputAttr))
      sig.inputArgs.push_back(i);
    else if (step.getArgAttr(i, TgDialect::kAccumAttr))
      sig.accumArgs.push_back(i);
    else if (auto s =
                 step.getArgAttrOfType<StringAttr>(i, TgDialect::kScalarAttr))
      sig.scalarArgs[i] = s.getValue();
    else
      return step.emitError(backend)
             << ": argument " << i << " of @train_step has no tg role attribute";
  }
  // io.grads holds one buffer per trainable parameter, in @forward's order.
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    if (auto name =
            forward.getArgAttrOfType<StringAttr>(i, TgDialect::kParamAttr))
      if (!forward.getArgAttr(i, TgDialect::kFrozenAttr))
        sig.gradIndex.try_emplace(name.getValue(), sig.gradIndex.size());
  for (unsigned i : sig.accumArgs) {
    StringRef name =
        step.getArgAttrOfType<StringAttr>(i, TgDialect::kAccumAttr).getValue();
    if (!sig.gradIndex.count(name))
      return step.emitError(backend) << ": accumulated gradient of '" << name
                                     << "', which is not a trainable parameter";
  }
  for (auto [k, i] : llvm::enumerate(sig.paramArgs))
    sig.paramIndex[step.getArgAttrOfType<StringAttr>(i, TgDialect::kParamAttr)
                       .getValue()] = k;
  for (auto [k, i] : llvm::enumerate(sig.stateArgs))
    sig.stateIndex[step.getArgAttrOfType<StringAttr>(i, TgDialect::kStateAttr)
                       .getValue()] = k;

  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    (forward.getArgAttr(i, TgDialect::kParamAttr) ? sig.fwdParams
                                                  : sig.fwdInputs)
        .push_back(i);
  for (unsigned i : sig.fwdInputs)
    sig.valueLimits.push_back(indexLimit(forward.getArgument(i)));

  auto bind = [](SmallVector<std::string> &bindings, ArrayRef<unsigned> args,
                 StringRef field) {
    for (auto [k, i] : llvm::enumerate(args))
      bindings[i] = llvm::formatv("io.{0}[{1}]", field, k).str();
  };
  sig.trainBindings.resize(step.getNumArguments());
  bind(sig.trainBindings, sig.paramArgs, "params");
  bind(sig.trainBindings, sig.stateArgs, "state");
  bind(sig.trainBindings, sig.inputArgs, "inputs");
  for (unsigned i : sig.accumArgs)
    sig.trainBindings[i] =
        llvm::formatv("io.grads[{0}]",
                      sig.gradIndex.lookup(
                          step.getArgAttrOfType<StringAttr>(
                                  i, TgDialect::kAccumAttr)
                              .getValue()))
            .str();
  sig.forwardBindings.resize(forward.getNumArguments());
  bind(sig.forwardBindings, sig.fwdParams, "params");
  bind(sig.forwardBindings, sig.fwdInputs, "inputs");
  return sig;
}

std::string StepSignature::trainArgument(unsigned i) const {
  return i < trainBindings.size() ? trainBindings[i] : "";
}

std::string StepSignature::trainArgumentOrScalar(unsigned i,
                                                 StringRef scalars) const {
  std::string buffer = trainArgument(i);
  if (!buffer.empty())
    return buffer;
  StringRef scalar = scalarArgs.lookup(i);
  return (scalars + (scalar == "step"      ? "step"
                     : scalar == "base_lr" ? "baseLr"
                                           : "microBatches"))
      .str();
}

std::string StepSignature::forwardArgument(unsigned i) const {
  return forwardBindings[i];
}

StringRef StepSignature::metricField(unsigned r) const {
  auto metric =
      trainStep.getResultAttrOfType<StringAttr>(r, TgDialect::kMetricAttr);
  if (!metric)
    return "";
  return llvm::StringSwitch<StringRef>(metric.getValue())
      .Case("loss", "loss")
      .Case("grad_norm", "gradNorm")
      .Default("lr");
}

FailureOr<std::string> StepSignature::updateTarget(unsigned r,
                                                   StringRef backend) const {
  auto update =
      trainStep.getResultAttrOfType<StringAttr>(r, TgDialect::kUpdateAttr);
  if (!update)
    return trainStep.emitError(backend)
           << ": result " << r
           << " of @train_step is neither an update nor a metric";
  if (paramIndex.count(update.getValue()))
    return llvm::formatv("io.params[{0}]", paramIndex.lookup(update.getValue()))
        .str();
  if (stateIndex.count(update.getValue()))
    return llvm::formatv("io.state[{0}]", stateIndex.lookup(update.getValue()))
        .str();
  return trainStep.emitError(backend)
         << ": result " << r << " of @train_step updates '" << update.getValue()
         << "', which is no parameter or optimizer state";
}

FailureOr<int> StepSignature::gradResultIndex(func::FuncOp forwardBackward,
                                              unsigned r,
                                              StringRef backend) const {
  auto grad =
      forwardBackward.getResultAttrOfType<StringAttr>(r, TgDialect::kGradAttr);
  if (!grad)
    return -1;
  auto it = gradIndex.find(grad.getValue());
  if (it == gradIndex.end())
    return forwardBackward.emitError(backend)
           << ": gradient of '" << grad.getValue()
           << "', which is not a trainable parameter";
  return (int)it->second;
}

//===----------------------------------------------------------------------===//
// The tables
//===----------------------------------------------------------------------===//

FailureOr<int> mlir::tg::meshAxisIndex(Operation *op, StringRef axis,
                                       StringRef backend) {
  MeshOp mesh = getModuleMesh(op);
  if (!mesh)
    return -1;
  for (auto [i, name] : llvm::enumerate(mesh.getAxisNames()))
    if (name == axis)
      return (int)i;
  return op->emitError(backend)
         << ": mesh axis \"" << axis << "\" is not an axis of @"
         << mesh.getSymName();
}

StringRef mlir::tg::commReduceOp(Reduction reduction) {
  switch (reduction) {
  case Reduction::sum:
    return "tgc::comm::ReduceOp::Sum";
  case Reduction::mean:
    return "tgc::comm::ReduceOp::Mean";
  }
  llvm_unreachable("unknown reduction");
}

int64_t mlir::tg::runsBefore(Type type, int64_t dim) {
  auto shape = cast<RankedTensorType>(type).getShape();
  int64_t runs = 1;
  for (int64_t d = 0; d < dim && d < (int64_t)shape.size(); ++d)
    runs *= shape[d];
  return runs;
}

/// The sharding of parameter `name`: on @forward's argument `i`, else on
/// @train_step's argument of that parameter (tg-partition records both).
static ShardingAttr paramSharding(const StepSignature &sig, unsigned i,
                                  StringRef name) {
  if (auto sharding =
          sig.forward.getArgAttrOfType<ShardingAttr>(i, kShardingAttr))
    return sharding;
  func::FuncOp step = sig.trainStep;
  for (unsigned a = 0; a < step.getNumArguments(); ++a)
    if (auto param =
            step.getArgAttrOfType<StringAttr>(a, TgDialect::kParamAttr))
      if (param.getValue() == name)
        return step.getArgAttrOfType<ShardingAttr>(a, kShardingAttr);
  return {};
}

/// The module's tg.lora when it names adapters, else null.
static ArrayAttr loraAdapters(ModuleOp module) {
  auto loras =
      module ? module->getAttrOfType<ArrayAttr>(TgDialect::kLoraAttr) : nullptr;
  return loras && !loras.empty() ? loras : nullptr;
}

void mlir::tg::emitModelTables(const StepSignature &sig,
                               llvm::raw_ostream &os) {
  func::FuncOp forward = sig.forward, step = sig.trainStep;
  MeshOp mesh = getModuleMesh(step);
  // The shape in files tg-split-fused-projections gave a parameter (and
  // tg-optimizer its moments); empty when it is the shape.
  auto fileShapeOf = [](func::FuncOp func, unsigned i) {
    auto attr =
        func.getArgAttrOfType<DenseI64ArrayAttr>(i, TgDialect::kFileShapeAttr);
    return attr ? attr.asArrayRef() : ArrayRef<int64_t>();
  };
  os << "\nconst tgc::ParamDesc kParams[] = {\n";
  for (unsigned i : sig.fwdParams) {
    auto name = forward.getArgAttrOfType<StringAttr>(i, TgDialect::kParamAttr);
    auto init =
        forward.getArgAttrOfType<InitializerAttr>(i, TgDialect::kInitAttr);
    bool trainable = !forward.getArgAttr(i, TgDialect::kFrozenAttr);
    ShardingAttr sharding = paramSharding(sig, i, name.getValue());
    Type type = forward.getArgument(i).getType();
    os << "    {"
       << tensorDesc(name.getValue(), type, sharding, mesh, /*global=*/true,
                     fileShapeOf(forward, i))
       << ", " << initSpec(init) << ", " << (trainable ? "true" : "false")
       << "},\n";
  }
  // io.grads: what @forward_backward returns for each trainable parameter
  // (a partial sum over the data axes keeps the whole shape).
  os << "};\n\nconst tgc::TensorDesc kGrads[] = {\n";
  auto module = step->getParentOfType<ModuleOp>();
  auto fb = module ? module.lookupSymbol<func::FuncOp>("forward_backward")
                   : func::FuncOp();
  SmallVector<std::pair<int64_t, std::string>> grads;
  if (fb)
    for (unsigned r = 0; r < fb.getNumResults(); ++r)
      if (auto name =
              fb.getResultAttrOfType<StringAttr>(r, TgDialect::kGradAttr))
        if (sig.gradIndex.count(name.getValue()))
          grads.emplace_back(
              sig.gradIndex.lookup(name.getValue()),
              tensorDesc(name.getValue(), fb.getResultTypes()[r],
                         fb.getResultAttrOfType<ShardingAttr>(r, kShardingAttr),
                         mesh));
  llvm::sort(grads);
  for (auto &[k, desc] : grads)
    os << "    " << desc << ",\n";
  if (grads.empty())
    os << "    {\"\", tgc::DType::F32, 0, {0}},\n";
  os << "};\n\nconst tgc::StateDesc kState[] = {\n";
  for (unsigned i : sig.stateArgs) {
    StringRef full =
        step.getArgAttrOfType<StringAttr>(i, TgDialect::kStateAttr).getValue();
    auto [param, slot] = full.rsplit('.');
    Type type = step.getArgument(i).getType();
    auto sharding = step.getArgAttrOfType<ShardingAttr>(i, kShardingAttr);
    os << "    {"
       << tensorDesc(full, type, sharding, mesh, /*global=*/true,
                     fileShapeOf(step, i))
       << ", \"" << param << "\", \"" << slot << "\"},\n";
  }
  if (sig.stateArgs.empty())
    os << "    {{\"\", tgc::DType::F32, 0, {0}}, \"\", \"\"},\n";
  // Inputs keep their local shape: the loader fills one process's batch.
  os << "};\n\nconst tgc::InputDesc kInputs[] = {\n";
  for (auto [k, i] : llvm::enumerate(sig.fwdInputs)) {
    auto name = forward.getArgAttrOfType<StringAttr>(i, TgDialect::kInputAttr);
    os << "    {"
       << tensorDesc(name ? name.getValue() : "input",
                     forward.getArgument(i).getType(),
                     forward.getArgAttrOfType<ShardingAttr>(i, kShardingAttr),
                     mesh, /*global=*/false)
       << ", tgc::InputRole::" << sig.roles[k] << ", " << sig.valueLimits[k]
       << "},\n";
  }
  os << "};\n\nconst tgc::TensorDesc kOutputs[] = {\n";
  FunctionType fwdType = forward.getFunctionType();
  for (unsigned r = 1; r < fwdType.getNumResults(); ++r) {
    auto name =
        forward.getResultAttrOfType<StringAttr>(r, TgDialect::kOutputAttr);
    os << "    " << tensorDesc(name ? name.getValue() : "output",
                               fwdType.getResult(r))
       << ",\n";
  }
  if (fwdType.getNumResults() <= 1)
    os << "    {\"\", tgc::DType::F32, 0, {0}},\n";
  os << "};\n";

  // tg-lora's adapters, which --merge-lora folds into their weights.
  if (ArrayAttr loras = loraAdapters(module)) {
    os << "\nconst tgc::LoraDesc kLoras[] = {\n";
    for (auto lora : loras.getAsRange<LoraAdapterAttr>())
      os << "    {\"" << lora.getBase() << "\", \"" << lora.getA() << "\", \""
         << lora.getB() << "\", "
         << floatLiteral(lora.getScale().convertToDouble()) << ", "
         << (lora.getTransposed() ? "true" : "false") << "},\n";
    os << "};\n";
  }

  // The mesh; an axis splits the batch when it splits dim 0 of a batch
  // input of @train_step.
  if (!mesh)
    return;
  llvm::DenseSet<StringRef> batchAxes;
  for (unsigned a = 0; a < step.getNumArguments(); ++a) {
    if (!step.getArgAttr(a, TgDialect::kInputAttr))
      continue;
    auto sharding = step.getArgAttrOfType<ShardingAttr>(a, kShardingAttr);
    if (sharding && sharding.getRank() > 0)
      for (StringRef axis : sharding.axesOf(0))
        batchAxes.insert(axis);
  }
  os << "\nconst tgc::MeshAxisDesc kMesh[] = {\n";
  for (auto [name, size] : llvm::zip(mesh.getAxisNames(), mesh.getShape()))
    os << "    {\"" << name << "\", " << size << ", "
       << (batchAxes.contains(name) ? 1 : 0) << ", "
       << (mesh.isElastic(name) ? 1 : 0) << "},\n";
  os << "};\n";
}

double mlir::tg::trainingNumber(ModuleOp module, ArrayRef<StringRef> path,
                                double fallback) {
  TableNumbers table{
      module->getAttrOfType<DictionaryAttr>(TgDialect::kTrainingAttr)};
  for (StringRef key : path.drop_back())
    table = table.sub(key);
  return table.get(path.back(), fallback);
}

LogicalResult mlir::tg::checkTensorSizes(ModuleOp module, int64_t limitBytes,
                                         StringRef target) {
  // Saturating: a [1e12, 1e12] tensor's byte count does not fit int64_t.
  auto bytesOf = [](RankedTensorType t) -> uint64_t {
    uint64_t elem = t.getElementType().isIntOrFloat()
                        ? (t.getElementType().getIntOrFloatBitWidth() + 7) / 8
                        : 8;
    uint64_t bytes = elem;
    for (int64_t d : t.getShape()) {
      bool overflow = false;
      bytes = llvm::SaturatingMultiply(bytes, (uint64_t)std::max<int64_t>(d, 0),
                                       &overflow);
    }
    return bytes;
  };
  auto tooBig = [&](Operation *op, Value v) -> LogicalResult {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || bytesOf(t) <= (uint64_t)limitBytes)
      return success();
    return op->emitError() << "a tensor of " << bytesOf(t) << " bytes ("
                           << t << ") does not fit " << target;
  };
  for (auto func : module.getOps<func::FuncOp>()) {
    for (BlockArgument arg : func.getArguments())
      if (failed(tooBig(func, arg)))
        return failure();
    WalkResult walk = func.walk([&](Operation *op) {
      for (Value r : op->getResults())
        if (failed(tooBig(op, r)))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
  }
  return success();
}

std::string mlir::tg::trainingDefaults(const StepSignature &sig,
                                       ModuleOp module) {
  TableNumbers table{
      module->getAttrOfType<DictionaryAttr>(TgDialect::kTrainingAttr)};
  int64_t batch = (int64_t)table.get("batch_size", 0);
  int64_t seq = (int64_t)table.get("seq_len", 0);
  if (!sig.fwdInputs.empty() && batch == 0) {
    auto t = cast<RankedTensorType>(
        sig.forward.getArgument(sig.fwdInputs[0]).getType());
    batch = t.getRank() ? t.getDimSize(0) : 1;
  }
  return llvm::formatv("{{/*batchSize=*/{0}, /*seqLen=*/{1}, /*steps=*/{2}, "
                       "/*seed=*/{3}, /*lr=*/{4}, /*gradAccum=*/{5}}",
                       batch, seq, (int64_t)table.get("steps", 100),
                       (int64_t)table.get("seed", 0),
                       floatLiteral(table.sub("optimizer").get("lr", 1e-3)),
                       (int64_t)table.get("grad_accum", 1))
      .str();
}

void mlir::tg::emitModelDesc(const StepSignature &sig, ModuleOp module,
                             StringRef deviceOps, StringRef flopsPerStep,
                             StringRef arenaBytes, llvm::raw_ostream &os,
                             bool pipelined) {
  os << "const tgc::ModelDesc kModel = {\n"
     << "    \"" << sig.modelName << "\",\n"
     << "    " << sig.fwdParams.size() << ", kParams,\n"
     << "    " << sig.stateArgs.size() << ", kState,\n"
     << "    " << sig.fwdInputs.size() << ", kInputs,\n"
     << "    " << (sig.forward.getFunctionType().getNumResults() - 1)
     << ", kOutputs,\n"
     << "    " << trainingDefaults(sig, module) << ",\n"
     << (pipelined ? "    /*trainStep=*/nullptr" : "    train_step")
     << ",\n    /*accumulate=*/"
     << (sig.accumArgs.empty() || pipelined ? "nullptr" : "grad_step")
     << ",\n    " << (pipelined ? "/*evalStep=*/nullptr" : "eval_step")
     << ",\n    " << (pipelined ? "/*gradStep=*/nullptr" : "grad_step") << ",\n"
     << "    /*device=*/" << deviceOps << ",\n"
     << "    /*flopsPerStep=*/" << flopsPerStep << ",\n"
     << "    /*arenaBytes=*/" << arenaBytes << ",\n";
  if (MeshOp mesh = getModuleMesh(sig.trainStep))
    os << "    /*numMeshAxes=*/" << mesh.getShape().size()
       << ", /*mesh=*/kMesh,\n";
  else
    os << "    /*numMeshAxes=*/0, /*mesh=*/nullptr,\n";
  os << "    /*grads=*/kGrads,\n";
  os << "    /*pipeline=*/" << (pipelined ? "&kPipeline" : "nullptr") << ",\n";
  if (ArrayAttr loras = loraAdapters(module))
    os << "    /*numLoras=*/" << loras.size() << ", /*loras=*/kLoras,\n";
  os << "};\n\n"
     << "int main(int argc, char **argv) { return tgc::runTraining(kModel, "
        "argc, argv); }\n";
}
