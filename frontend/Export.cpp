//===- Export.cpp - tg IR to model files ------------------------*- C++ -*-===//
//
// Writes a module as the importer produces it (@forward with tg.param and
// tg.input arguments, tg.output results, tg.model and tg.training on the
// module) back as a model file, binary or JSON. Importing the result gives
// the same IR: node names come from the ops' NameLocs, tensor names from the
// argument and result attributes and otherwise from the node names, and the
// training dictionary is written key for key.
//
//===----------------------------------------------------------------------===//

#include "frontend/JsonWriter.h"
#include "frontend/ModelFile.h"
#include "frontend/ModelSchema.h"
#include "frontend/TableDictionary.h"

#include "dialects/tg/IR/TgDialect.h"
#include "dialects/tg/IR/TgInterfaces.h"
#include "dialects/tg/IR/TgOps.h"
#include "dialects/tg/IR/TgSharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include "flatbuffers/idl.h"

using namespace mlir;
using namespace mlir::tg;
namespace fbs = tgc::model;

namespace {

class ModelExporter {
public:
  ModelExporter(ModuleOp module) : module(module) {}

  LogicalResult run(ModelFileFormat format, llvm::raw_ostream &os);

private:
  ModuleOp module;
  flatbuffers::FlatBufferBuilder fbb;
  DenseMap<Value, std::string> tensorNames;
  /// Per op, the attribute values an op gets when the file leaves them out.
  DenseMap<OperationName, DictionaryAttr> defaultAttrs;
  llvm::StringSet<> usedNames;

  using StringOffset = flatbuffers::Offset<flatbuffers::String>;

  StringOffset string(StringRef s) {
    return fbb.CreateString(s.data(), s.size());
  }

  flatbuffers::Offset<flatbuffers::Vector<StringOffset>>
  strings(ArrayRef<std::string> list) {
    std::vector<StringOffset> offsets;
    for (const std::string &s : list)
      offsets.push_back(string(s));
    return fbb.CreateVector(offsets);
  }

  LogicalResult nameTensors(func::FuncOp forward);
  DictionaryAttr getDefaultAttrs(OperationName name);
  FailureOr<RankedTensorType> staticTensor(Operation *where, Type type,
                                           const Twine &what);
  FailureOr<flatbuffers::Offset<fbs::Initializer>>
  writeInit(InitializerAttr init);
  FailureOr<flatbuffers::Offset<fbs::Node>> writeNode(Operation *op);
  FailureOr<flatbuffers::Offset<fbs::Attr>>
  writeAttr(Operation *op, StringRef name, Attribute value);
  FailureOr<SmallVector<flatbuffers::Offset<fbs::Attr>>>
  writeModelFileAttrs(Operation *op);
};

} // namespace

/// The ops a model file can hold (as the importer accepts them).
static bool isModelFileOp(Operation *op) {
  return isa<DifferentiableOpInterface, ConstantOp, IotaOp, CompareOp>(op);
}

FailureOr<RankedTensorType>
ModelExporter::staticTensor(Operation *where, Type type, const Twine &what) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape() ||
      !getModelDType(tensor.getElementType()))
    return LogicalResult(emitError(where->getLoc())
                         << what << " has type " << type
                         << "; a model file holds statically shaped tensors "
                         << "of " << listDTypeNames());
  return tensor;
}

LogicalResult ModelExporter::nameTensors(func::FuncOp forward) {
  // Arguments are named by their markers; returned values by tg.output;
  // the rest by their node's name, made unique.
  for (BlockArgument arg : forward.getArguments()) {
    auto param = forward.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                      TgDialect::kParamAttr);
    auto input = forward.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                      TgDialect::kInputAttr);
    if (!param == !input)
      return emitError(forward.getLoc())
             << "argument " << arg.getArgNumber() << " of @forward needs "
             << "exactly one of tg.param and tg.input to be written to a "
             << "model file";
    StringRef name = (param ? param : input).getValue();
    if (!usedNames.insert(name).second)
      return emitError(forward.getLoc())
             << "tensor name '" << name << "' is used by two arguments";
    tensorNames[arg] = name.str();
  }
  auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
  for (auto [r, value] : llvm::enumerate(ret.getOperands())) {
    auto output =
        forward.getResultAttrOfType<StringAttr>(r, TgDialect::kOutputAttr);
    if (!output)
      return emitError(forward.getLoc())
             << "result " << r << " of @forward has no "
             << "tg.output name";
    auto it = tensorNames.find(value);
    if (it != tensorNames.end()) {
      if (it->second != output.getValue())
        return emitError(forward.getLoc())
               << "result " << r << " (tg.output = \"" << output.getValue()
               << "\") returns the tensor named '" << it->second
               << "'; a model file names results by their tensors, so a "
               << "tensor cannot be returned under another name or twice";
      continue;
    }
    if (!usedNames.insert(output.getValue()).second)
      return emitError(forward.getLoc())
             << "tensor name '" << output.getValue() << "' is used twice";
    tensorNames[value] = output.getValue().str();
  }
  unsigned counter = 0;
  for (Operation &op : forward.getBody().front().without_terminator()) {
    for (Value result : op.getResults()) {
      if (tensorNames.count(result))
        continue;
      std::string base = nodeNameOf(&op);
      std::string name = base;
      while (name.empty() || usedNames.contains(name))
        name = (base.empty() ? "t" : base + ".") + std::to_string(counter++);
      usedNames.insert(name);
      tensorNames[result] = name;
    }
  }
  return success();
}

DictionaryAttr ModelExporter::getDefaultAttrs(OperationName name) {
  auto it = defaultAttrs.find(name);
  if (it != defaultAttrs.end())
    return it->second;
  // Creating an op fills in its DefaultValuedAttrs; a scratch op with no
  // operands shows what they are.
  MLIRContext *context = name.getContext();
  OperationState state(UnknownLoc::get(context), name);
  Operation *scratch = Operation::create(state);
  NamedAttrList defaults;
  for (StringAttr attrName : name.getAttributeNames())
    if (std::optional<Attribute> value = scratch->getInherentAttr(attrName);
        value && *value)
      defaults.append(attrName, *value);
  scratch->destroy();
  return defaultAttrs[name] = defaults.getDictionary(context);
}

FailureOr<flatbuffers::Offset<fbs::Initializer>>
ModelExporter::writeInit(InitializerAttr init) {
  // Only the fields that differ from the schema's defaults (which are the
  // attribute's defaults too), and always the kind.
  StringOffset file, key;
  if (!init.getFile().empty())
    file = string(init.getFile());
  if (!init.getKey().empty())
    key = string(init.getKey());
  fbs::InitializerBuilder b(fbb);
  b.add_kind(getModelInitKind(init.getKind()));
  auto add = [&](const APFloat &value, double fallback, auto setter) {
    double v = value.convertToDouble();
    if (!(v == fallback && std::signbit(v) == std::signbit(fallback)))
      (b.*setter)(v);
  };
  add(init.getMean(), 0.0, &fbs::InitializerBuilder::add_mean);
  add(init.getStd(), 1.0, &fbs::InitializerBuilder::add_std);
  add(init.getLow(), -1.0, &fbs::InitializerBuilder::add_low);
  add(init.getHigh(), 1.0, &fbs::InitializerBuilder::add_high);
  add(init.getGain(), 1.0, &fbs::InitializerBuilder::add_gain);
  add(init.getValue(), 0.0, &fbs::InitializerBuilder::add_value);
  if (!file.IsNull())
    b.add_file(file);
  if (!key.IsNull())
    b.add_key(key);
  return b.Finish();
}

FailureOr<flatbuffers::Offset<fbs::Attr>>
ModelExporter::writeAttr(Operation *op, StringRef name, Attribute value) {
  StringOffset nameOffset = string(name);
  std::optional<StringRef> text = getEnumString(value);
  if (auto s = dyn_cast<StringAttr>(value))
    text = s.getValue();
  if (text) {
    StringOffset str = string(*text);
    fbs::AttrBuilder b(fbb);
    b.add_name(nameOffset);
    b.add_s(str);
    return b.Finish();
  }
  if (auto ints = dyn_cast<DenseI64ArrayAttr>(value)) {
    auto vec = fbb.CreateVector(ints.asArrayRef().data(), ints.size());
    fbs::AttrBuilder b(fbb);
    b.add_name(nameOffset);
    b.add_ints(vec);
    return b.Finish();
  }
  if (auto floats = dyn_cast<DenseF64ArrayAttr>(value)) {
    auto vec = fbb.CreateVector(floats.asArrayRef().data(), floats.size());
    fbs::AttrBuilder b(fbb);
    b.add_name(nameOffset);
    b.add_floats(vec);
    return b.Finish();
  }
  fbs::AttrBuilder b(fbb);
  b.add_name(nameOffset);
  if (auto boolean = dyn_cast<BoolAttr>(value)) {
    b.add_b(boolean.getValue());
  } else if (auto integer = dyn_cast<IntegerAttr>(value);
             integer && integer.getType().isSignlessInteger(64)) {
    b.add_i(integer.getInt());
  } else if (auto real = dyn_cast<FloatAttr>(value);
             real && real.getType().isF64()) {
    b.add_f(real.getValueAsDouble());
  } else {
    b.Finish(); // Closes the table; the export fails anyway.
    return LogicalResult(emitError(op->getLoc())
                         << "attribute '" << name << "' = " << value
                         << " has no model file encoding (i64, f64, bool, "
                         << "string, array<i64> or array<f64>)");
  }
  return b.Finish();
}

/// reshape, broadcast_to, cast, constant and iota: their result type, spelled
/// as the attributes the importer reads it from.
FailureOr<SmallVector<flatbuffers::Offset<fbs::Attr>>>
ModelExporter::writeModelFileAttrs(Operation *op) {
  SmallVector<flatbuffers::Offset<fbs::Attr>> attrs;
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  auto dtypeAttr = [&]() -> FailureOr<flatbuffers::Offset<fbs::Attr>> {
    std::optional<fbs::DType> dtype = getModelDType(type.getElementType());
    return writeAttr(op, "dtype",
                     StringAttr::get(op->getContext(), getDTypeName(*dtype)));
  };
  auto shapeAttr = [&]() {
    return writeAttr(op, "shape",
                     DenseI64ArrayAttr::get(op->getContext(), type.getShape()));
  };
  auto push = [&](FailureOr<flatbuffers::Offset<fbs::Attr>> attr) {
    if (succeeded(attr))
      attrs.push_back(*attr);
    return succeeded(attr);
  };
  if (isa<ReshapeOp, BroadcastToOp>(op)) {
    if (!push(shapeAttr()))
      return failure();
    return attrs;
  }
  if (isa<CastOp>(op)) {
    if (!push(dtypeAttr()))
      return failure();
    return attrs;
  }
  if (isa<IotaOp>(op)) {
    if (!push(dtypeAttr()) || !push(shapeAttr()))
      return failure();
    return attrs;
  }
  auto constant = cast<ConstantOp>(op);
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense)
    return LogicalResult(emitError(op->getLoc())
                         << "only dense constants can be written to a model "
                         << "file");
  if (!push(dtypeAttr()))
    return failure();
  if (type.getRank() > 0 && !push(shapeAttr()))
    return failure();
  StringOffset name = string("value");
  Type element = type.getElementType();
  flatbuffers::Offset<fbs::Attr> value;
  if (isa<FloatType>(element)) {
    auto toDouble = [](APFloat v) {
      bool lost;
      v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
      return v.convertToDouble();
    };
    if (dense.isSplat()) {
      double v = toDouble(dense.getSplatValue<APFloat>());
      fbs::AttrBuilder b(fbb);
      b.add_name(name);
      b.add_f(v);
      value = b.Finish();
    } else {
      std::vector<double> values;
      for (APFloat v : dense.getValues<APFloat>())
        values.push_back(toDouble(v));
      auto vec = fbb.CreateVector(values);
      fbs::AttrBuilder b(fbb);
      b.add_name(name);
      b.add_floats(vec);
      value = b.Finish();
    }
  } else {
    bool isBool = element.isInteger(1);
    auto toInt = [&](const APInt &v) {
      return isBool ? (int64_t)v.getZExtValue() : v.getSExtValue();
    };
    if (dense.isSplat()) {
      int64_t v = toInt(dense.getSplatValue<APInt>());
      fbs::AttrBuilder b(fbb);
      b.add_name(name);
      if (isBool)
        b.add_b(v != 0);
      else
        b.add_i(v);
      value = b.Finish();
    } else {
      std::vector<int64_t> values;
      for (APInt v : dense.getValues<APInt>())
        values.push_back(toInt(v));
      auto vec = fbb.CreateVector(values);
      fbs::AttrBuilder b(fbb);
      b.add_name(name);
      b.add_ints(vec);
      value = b.Finish();
    }
  }
  attrs.push_back(value);
  return attrs;
}

FailureOr<flatbuffers::Offset<fbs::Node>>
ModelExporter::writeNode(Operation *op) {
  if (isa<ShardingConstraintOp>(op))
    return LogicalResult(emitError(op->getLoc())
                         << "a sharding pin on a computed value "
                            "(tg.sharding_constraint) cannot be written to a "
                            "model file yet; pin the node by hand");
  if (op->getDialect() == nullptr ||
      op->getDialect()->getNamespace() != TgDialect::getDialectNamespace() ||
      !isModelFileOp(op))
    return LogicalResult(emitError(op->getLoc())
                         << "'" << op->getName()
                         << "' cannot be written to a model file: a model "
                         << "file holds the forward ops of the tg dialect");
  if (op->getNumResults() != 1 || op->getNumRegions() != 0)
    return LogicalResult(emitError(op->getLoc())
                         << "a model file node has exactly one result");
  if (failed(staticTensor(op, op->getResult(0).getType(), "the result")))
    return failure();

  // Operands, positionally: an absent optional operand can only be left off
  // at the end.
  if (auto norm = dyn_cast<LayerNormOp>(op);
      norm && norm.getBias() && !norm.getWeight())
    return LogicalResult(emitError(op->getLoc())
                         << "a layer_norm with a bias but no weight cannot be "
                         << "written to a model file (its inputs are "
                         << "positional: x, weight, bias)");
  SmallVector<std::string> inputs;
  for (Value operand : op->getOperands())
    inputs.push_back(tensorNames.lookup(operand));

  // Attributes: the model-file ones of reshape, broadcast_to, cast,
  // constant and iota, then the op's own that differ from their defaults
  // (import fills the defaults in again).
  SmallVector<flatbuffers::Offset<fbs::Attr>> attrs;
  if (isa<ReshapeOp, BroadcastToOp, CastOp, ConstantOp, IotaOp>(op)) {
    auto special = writeModelFileAttrs(op);
    if (failed(special))
      return failure();
    attrs = *special;
  }
  std::optional<RegisteredOperationName> opName = op->getRegisteredInfo();
  for (StringAttr name : opName->getAttributeNames()) {
    if (name.getValue() == "operandSegmentSizes" ||
        (isa<ConstantOp>(op) && name.getValue() == "value"))
      continue;
    std::optional<Attribute> value = op->getInherentAttr(name);
    if (!value || !*value || getDefaultAttrs(op->getName()).get(name) == *value)
      continue;
    auto attr = writeAttr(op, name.getValue(), *value);
    if (failed(attr))
      return failure();
    attrs.push_back(*attr);
  }
  // tg.layer is the importer's reading of the node's name: the name says
  // it again.
  for (NamedAttribute attr : op->getDiscardableAttrs())
    if (attr.getName() != TgDialect::kLayerAttr)
      return emitError(op->getLoc())
             << "attribute '" << attr.getName().getValue()
             << "' cannot be written to a model file";

  // The node's name says its layer to the importer: one that would say
  // another (printed IR has no locations, so its nodes are named by their
  // outputs) is written under the layer.
  std::string nodeName = nodeNameOf(op);
  if (StringRef layer = layerOf(op); !layer.empty()) {
    std::string named =
        nodeName.empty() ? tensorNames.lookup(op->getResult(0)) : nodeName;
    if (groupOfName(named) != layer)
      nodeName = (layer + "." + named).str();
  }
  StringOffset name = nodeName.empty() ? StringOffset() : string(nodeName);
  StringOffset opString = string(op->getName().stripDialect());
  auto inputsVec = strings(inputs);
  auto outputsVec = strings({tensorNames.lookup(op->getResult(0))});
  auto attrsVec = fbb.CreateVector(attrs.data(), attrs.size());
  fbs::NodeBuilder b(fbb);
  if (!name.IsNull())
    b.add_name(name);
  b.add_op(opString);
  if (!inputs.empty())
    b.add_inputs(inputsVec);
  b.add_outputs(outputsVec);
  if (!attrs.empty())
    b.add_attrs(attrsVec);
  return b.Finish();
}

LogicalResult ModelExporter::run(ModelFileFormat format,
                                 llvm::raw_ostream &os) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward || forward.isExternal())
    return emitError(module.getLoc())
           << "no @forward function with a body: a model file holds a "
           << "module as --import-model produces it";
  if (!forward.getBody().hasOneBlock())
    return emitError(forward.getLoc()) << "@forward must have one block";
  auto modelName = module->getAttrOfType<StringAttr>(TgDialect::kModelAttr);
  if (!modelName || modelName.getValue().empty())
    return emitError(module.getLoc()) << "the module has no tg.model name";
  if (forward.getNumResults() == 0)
    return emitError(forward.getLoc())
           << "@forward returns nothing; result 0 must "
           << "be the loss";
  if (failed(nameTensors(forward)))
    return failure();

  MeshOp mesh = getModuleMesh(module);
  int64_t batchReplicas = 1;
  if (mesh)
    for (auto [axis, size] : llvm::zip(mesh.getAxisNames(), mesh.getShape()))
      if (isDataAxis(axis))
        batchReplicas *= size;
  auto schema = createModelSchemaParser(/*forceDefaults=*/true);
  // Training keys are written even when equal to the schema's defaults: the
  // dictionary says what the model file sets.
  fbb.ForceDefaults(true);

  // Parameters and inputs, each in argument order.
  std::vector<flatbuffers::Offset<fbs::Parameter>> params;
  std::vector<flatbuffers::Offset<fbs::Input>> inputs;
  for (BlockArgument arg : forward.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto type =
        staticTensor(forward, arg.getType(), "argument " + std::to_string(i));
    if (failed(type))
      return failure();
    fbs::DType dtype = *getModelDType(type->getElementType());
    StringOffset name = string(tensorNames[arg]);
    // Batch dims hold every data replica's micro-batch; the file holds one.
    SmallVector<int64_t> dims(type->getShape());
    if (auto names =
            forward.getArgAttrOfType<ArrayAttr>(i, TgDialect::kDimNamesAttr))
      for (auto [d, n] : llvm::enumerate(names))
        if (cast<StringAttr>(n).getValue() == "batch" && d < dims.size() &&
            dims[d] % batchReplicas == 0)
          dims[d] /= batchReplicas;
    auto shape = fbb.CreateVector(dims.data(), dims.size());
    if (forward.getArgAttr(i, TgDialect::kParamAttr)) {
      flatbuffers::Offset<fbs::Initializer> init;
      if (auto attr = forward.getArgAttrOfType<InitializerAttr>(
              i, TgDialect::kInitAttr)) {
        auto written = writeInit(attr);
        if (failed(written))
          return failure();
        init = *written;
      }
      // A pin: per dim, its axes comma-separated; and the preset.
      flatbuffers::Offset<flatbuffers::Vector<StringOffset>> sharding;
      // (Shardings a pass chose are not pins: they are not written.)
      auto pin = forward.getArgAttrOfType<ShardingAttr>(i, kShardingAttr);
      StringRef origin = getShardingOrigin(arg);
      if (pin && (origin.empty() || origin.starts_with("pin:"))) {
        SmallVector<std::string> dims;
        for (int64_t d = 0; d < pin.getRank(); ++d)
          dims.push_back(llvm::join(pin.axesOf(d), ","));
        sharding = strings(dims);
      }
      StringOffset preset;
      if (auto own =
              forward.getArgAttrOfType<ShardPresetAttr>(i, kShardPresetAttr))
        preset = string(stringifyShardPreset(own.getValue()));
      fbs::ParameterBuilder b(fbb);
      b.add_name(name);
      b.add_shape(shape);
      if (dtype != fbs::DType::f32)
        b.add_dtype(dtype);
      if (!init.IsNull())
        b.add_init(init);
      if (forward.getArgAttr(i, TgDialect::kFrozenAttr))
        b.add_trainable(false);
      if (!sharding.IsNull())
        b.add_sharding(sharding);
      if (!preset.IsNull())
        b.add_shard(preset);
      params.push_back(b.Finish());
      continue;
    }
    flatbuffers::Offset<flatbuffers::Vector<StringOffset>> dimNames;
    if (auto names =
            forward.getArgAttrOfType<ArrayAttr>(i, TgDialect::kDimNamesAttr)) {
      SmallVector<std::string> list;
      for (Attribute a : names)
        list.push_back(cast<StringAttr>(a).str());
      dimNames = strings(list);
    }
    fbs::InputBuilder b(fbb);
    b.add_name(name);
    b.add_shape(shape);
    if (dtype != fbs::DType::f32)
      b.add_dtype(dtype);
    if (!dimNames.IsNull())
      b.add_dim_names(dimNames);
    inputs.push_back(b.Finish());
  }

  std::vector<flatbuffers::Offset<fbs::Node>> nodes;
  for (Operation &op : forward.getBody().front().without_terminator()) {
    auto node = writeNode(&op);
    if (failed(node))
      return failure();
    nodes.push_back(*node);
  }

  auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
  StringOffset loss = string(tensorNames.lookup(ret.getOperand(0)));
  SmallVector<std::string> outputNames;
  for (Value v : ret.getOperands().drop_front())
    outputNames.push_back(tensorNames.lookup(v));
  auto outputs = strings(outputNames);

  flatbuffers::Offset<fbs::Training> training;
  if (auto dict =
          module->getAttrOfType<DictionaryAttr>(TgDialect::kTrainingAttr)) {
    if (mesh && !dict.get("mesh")) {
      // The mesh tgc --mesh gave: the table carries it.
      SmallVector<Attribute> axes;
      for (auto [axis, size] : llvm::zip(mesh.getAxisNames(), mesh.getShape()))
        axes.push_back(DictionaryAttr::get(
            module.getContext(),
            {NamedAttribute(StringAttr::get(module.getContext(), "name"),
                            StringAttr::get(module.getContext(), axis)),
             NamedAttribute(
                 StringAttr::get(module.getContext(), "size"),
                 IntegerAttr::get(IntegerType::get(module.getContext(), 64),
                                  size))}));
      NamedAttrList entries(dict);
      entries.set("mesh", ArrayAttr::get(module.getContext(), axes));
      dict = entries.getDictionary(module.getContext());
    }
    auto table = buildTableFromDictionary(
        fbb, dict, *lookupModelTable(*schema, "Training"), "tg.training",
        [&] { return emitError(module.getLoc()); });
    if (failed(table))
      return failure();
    training = flatbuffers::Offset<fbs::Training>(*table);
  } else if (module->hasAttr(TgDialect::kTrainingAttr)) {
    return emitError(module.getLoc()) << "tg.training must be a dictionary";
  }

  StringOffset name = string(modelName.getValue());
  auto paramsVec = fbb.CreateVector(params);
  auto inputsVec = fbb.CreateVector(inputs);
  auto nodesVec = fbb.CreateVector(nodes);
  fbs::ModelBuilder b(fbb);
  b.add_name(name);
  if (!params.empty())
    b.add_params(paramsVec);
  if (!inputs.empty())
    b.add_inputs(inputsVec);
  b.add_nodes(nodesVec);
  b.add_loss(loss);
  if (!outputNames.empty())
    b.add_outputs(outputs);
  if (!training.IsNull())
    b.add_training(training);
  fbs::FinishModelBuffer(fbb, b.Finish());
  const auto *root = reinterpret_cast<const flatbuffers::Table *>(
      fbs::GetModel(fbb.GetBufferPointer()));
  const flatbuffers::StructDef &modelDef = *lookupModelTable(*schema, "Model");
  if (auto bad = findNonUtf8String(*root, modelDef))
    return emitError(module.getLoc())
           << "the model file's " << *bad << " would not be UTF-8; model "
           << "files hold UTF-8 strings";

  if (format == ModelFileFormat::Binary) {
    os.write(reinterpret_cast<const char *>(fbb.GetBufferPointer()),
             fbb.GetSize());
    return success();
  }
  writeTableAsJson(*root, modelDef, os);
  return success();
}

LogicalResult mlir::tg::exportModel(ModuleOp module, ModelFileFormat format,
                                    llvm::raw_ostream &os) {
  return ModelExporter(module).run(format, os);
}
