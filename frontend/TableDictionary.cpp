//===- TableDictionary.cpp - Schema tables as MLIR dictionaries ---*- C++ -*-===//
//
// Both directions walk flatbuffers::StructDef::fields in declaration order.
// The buffers they read have passed the typed FlatBuffers verifier, so every
// table and vector a field points at is in bounds; vector elements of 8-byte
// scalars are still copied out rather than loaded (see readScalarVector).
//
//===----------------------------------------------------------------------===//

#include "frontend/TableDictionary.h"

#include "frontend/FlatScalar.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ConvertUTF.h"

#include "flatbuffers/idl.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::tg;
using flatbuffers::BaseType;
using flatbuffers::FieldDef;
using flatbuffers::StructDef;

//===----------------------------------------------------------------------===//
// Table to dictionary
//===----------------------------------------------------------------------===//

static bool isTable(const flatbuffers::Type &type) {
  return type.base_type == flatbuffers::BASE_TYPE_STRUCT && type.struct_def &&
         !type.struct_def->fixed;
}

static int64_t defaultInteger(const FieldDef &field) {
  int64_t value = 0;
  flatbuffers::StringToNumber(field.value.constant.c_str(), &value);
  return value;
}

static double defaultDouble(const FieldDef &field) {
  double value = 0;
  flatbuffers::StringToNumber(field.value.constant.c_str(), &value);
  return value;
}

/// A scalar of base type `type` stored at `data` (already bounds-checked).
static Attribute scalarAttr(Builder &b, BaseType type, const uint8_t *data,
                            const flatbuffers::EnumDef *enumDef) {
  FlatScalar value = readFlatScalar(type, data);
  switch (value.kind) {
  case FlatScalar::Bool:
    return b.getBoolAttr(value.integer != 0);
  case FlatScalar::Real:
    return b.getF64FloatAttr(value.real);
  case FlatScalar::NotScalar:
    return {};
  case FlatScalar::Signed:
  case FlatScalar::Unsigned:
    break;
  }
  if (enumDef)
    if (const flatbuffers::EnumVal *val =
            enumDef->ReverseLookup(value.integer, false))
      return b.getStringAttr(val->name);
  return b.getI64IntegerAttr(value.integer);
}

static DictionaryAttr convertTable(const flatbuffers::Table &table,
                                   const StructDef &def, MLIRContext *context,
                                   bool withDefaults);

static Attribute convertVector(const uint8_t *vectorPtr,
                               const flatbuffers::Type &type,
                               MLIRContext *context) {
  Builder b(context);
  auto *vector =
      reinterpret_cast<const flatbuffers::Vector<uint8_t> *>(vectorPtr);
  uint32_t size = vector->size();
  const uint8_t *data = vector->Data();
  SmallVector<Attribute> elements;
  elements.reserve(size);
  flatbuffers::Type element = type.VectorType();
  for (uint32_t i = 0; i < size; ++i) {
    if (element.base_type == flatbuffers::BASE_TYPE_STRING) {
      auto *strings = reinterpret_cast<const flatbuffers::Vector<
          flatbuffers::Offset<flatbuffers::String>> *>(vectorPtr);
      const flatbuffers::String *s = strings->Get(i);
      elements.push_back(b.getStringAttr(s ? s->string_view() : ""));
    } else if (isTable(element)) {
      auto *tables = reinterpret_cast<
          const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::Table>> *>(
          vectorPtr);
      elements.push_back(convertTable(*tables->Get(i), *element.struct_def,
                                      context, /*withDefaults=*/true));
    } else if (flatbuffers::IsScalar(element.base_type)) {
      size_t width = flatbuffers::SizeOf(element.base_type);
      elements.push_back(
          scalarAttr(b, element.base_type, data + i * width, element.enum_def));
    } else {
      return {};
    }
  }
  return b.getArrayAttr(elements);
}

static DictionaryAttr convertTable(const flatbuffers::Table &table,
                                   const StructDef &def, MLIRContext *context,
                                   bool withDefaults) {
  Builder b(context);
  NamedAttrList entries;
  for (const FieldDef *field : def.fields.vec) {
    if (field->deprecated)
      continue;
    const flatbuffers::Type &type = field->value.type;
    flatbuffers::voffset_t offset = field->value.offset;
    bool present = table.CheckField(offset);
    Attribute value;
    if (flatbuffers::IsScalar(type.base_type)) {
      if (present) {
        // Table scalars are aligned (the verifier checked each field).
        auto *data = reinterpret_cast<const uint8_t *>(&table) +
                     table.GetOptionalFieldOffset(offset);
        value = scalarAttr(b, type.base_type, data, type.enum_def);
      } else if (withDefaults && !field->IsOptional()) {
        if (flatbuffers::IsFloat(type.base_type))
          value = b.getF64FloatAttr(defaultDouble(*field));
        else if (flatbuffers::IsBool(type.base_type))
          value = b.getBoolAttr(defaultInteger(*field) != 0);
        else
          value = b.getI64IntegerAttr(defaultInteger(*field));
      }
    } else if (!present) {
      continue;
    } else if (type.base_type == flatbuffers::BASE_TYPE_STRING) {
      auto *s = table.GetPointer<const flatbuffers::String *>(offset);
      value = b.getStringAttr(s->string_view());
    } else if (isTable(type)) {
      auto *sub = table.GetPointer<const flatbuffers::Table *>(offset);
      value = convertTable(*sub, *type.struct_def, context, withDefaults);
    } else if (type.base_type == flatbuffers::BASE_TYPE_VECTOR) {
      value = convertVector(table.GetPointer<const uint8_t *>(offset), type,
                            context);
    }
    if (value)
      entries.append(field->name, value);
  }
  return entries.getDictionary(context);
}

DictionaryAttr
mlir::tg::convertTableToDictionary(const flatbuffers::Table &table,
                                   const StructDef &def, MLIRContext *context) {
  return convertTable(table, def, context, /*withDefaults=*/false);
}

//===----------------------------------------------------------------------===//
// UTF-8
//===----------------------------------------------------------------------===//

static bool isUtf8(const flatbuffers::String *s) {
  if (!s)
    return true;
  const auto *begin = reinterpret_cast<const llvm::UTF8 *>(s->data());
  return llvm::isLegalUTF8String(&begin, begin + s->size());
}

static std::optional<std::string> findNonUtf8(const flatbuffers::Table &table,
                                              const StructDef &def,
                                              const std::string &path) {
  for (const FieldDef *field : def.fields.vec) {
    const flatbuffers::Type &type = field->value.type;
    flatbuffers::voffset_t offset = field->value.offset;
    if (field->deprecated || !table.CheckField(offset))
      continue;
    std::string here = (path.empty() ? "" : path + ".") + field->name;
    if (type.base_type == flatbuffers::BASE_TYPE_STRING) {
      if (!isUtf8(table.GetPointer<const flatbuffers::String *>(offset)))
        return here;
    } else if (isTable(type)) {
      if (auto found =
              findNonUtf8(*table.GetPointer<const flatbuffers::Table *>(offset),
                          *type.struct_def, here))
        return found;
    } else if (type.base_type == flatbuffers::BASE_TYPE_VECTOR) {
      flatbuffers::Type element = type.VectorType();
      if (element.base_type == flatbuffers::BASE_TYPE_STRING) {
        auto *strings = table.GetPointer<const flatbuffers::Vector<
            flatbuffers::Offset<flatbuffers::String>> *>(offset);
        for (uint32_t i = 0; i < strings->size(); ++i)
          if (!isUtf8(strings->Get(i)))
            return here + "[" + std::to_string(i) + "]";
      } else if (isTable(element)) {
        auto *tables = table.GetPointer<const flatbuffers::Vector<
            flatbuffers::Offset<flatbuffers::Table>> *>(offset);
        for (uint32_t i = 0; i < tables->size(); ++i)
          if (auto found = findNonUtf8(*tables->Get(i), *element.struct_def,
                                       here + "[" + std::to_string(i) + "]"))
            return found;
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string>
mlir::tg::findNonUtf8String(const flatbuffers::Table &table,
                            const StructDef &def) {
  return findNonUtf8(table, def, "");
}

//===----------------------------------------------------------------------===//
// Dictionary to table
//===----------------------------------------------------------------------===//

namespace {

/// Writes one dictionary as one table; children (strings, vectors, sub-tables)
/// go into the buffer first, as FlatBuffers requires.
class TableWriter {
public:
  TableWriter(flatbuffers::FlatBufferBuilder &builder,
              function_ref<InFlightDiagnostic()> emitError)
      : builder(builder), emitError(emitError) {}

  FailureOr<flatbuffers::uoffset_t> write(DictionaryAttr dict,
                                          const StructDef &def, StringRef path);

private:
  flatbuffers::FlatBufferBuilder &builder;
  function_ref<InFlightDiagnostic()> emitError;

  InFlightDiagnostic error(StringRef path, StringRef key) {
    InFlightDiagnostic diag = emitError();
    diag << path << "." << key << ": ";
    return diag;
  }

  FailureOr<flatbuffers::uoffset_t>
  writeVector(Attribute value, const FieldDef &field, StringRef path);
  /// A checked scalar, ready to add once its table is started.
  struct Scalar {
    const FieldDef *field;
    int64_t integer;
    double real;
  };
  FailureOr<Scalar> convertScalar(const FieldDef &field, Attribute value,
                                  StringRef path);
  void addScalar(const Scalar &scalar);
};

} // namespace

/// `value` as an integer of schema type `type`, or failure when it is not an
/// integer attribute or does not fit.
static FailureOr<int64_t> integerOf(Attribute value, BaseType type) {
  auto attr = dyn_cast<IntegerAttr>(value);
  if (!attr || attr.getType().isInteger(1))
    return failure();
  int64_t v = attr.getValue().getSExtValue();
  auto fits = [&](auto zero) {
    using T = decltype(zero);
    return v >= (int64_t)std::numeric_limits<T>::min() &&
           (uint64_t)v <= (uint64_t)std::numeric_limits<T>::max();
  };
  bool ok;
  switch (type) {
  case flatbuffers::BASE_TYPE_CHAR:
    ok = fits(int8_t());
    break;
  case flatbuffers::BASE_TYPE_UCHAR:
  case flatbuffers::BASE_TYPE_UTYPE:
    ok = v >= 0 && fits(uint8_t());
    break;
  case flatbuffers::BASE_TYPE_SHORT:
    ok = fits(int16_t());
    break;
  case flatbuffers::BASE_TYPE_USHORT:
    ok = v >= 0 && fits(uint16_t());
    break;
  case flatbuffers::BASE_TYPE_INT:
    ok = fits(int32_t());
    break;
  case flatbuffers::BASE_TYPE_UINT:
    ok = v >= 0 && fits(uint32_t());
    break;
  default:
    ok = true;
  }
  if (!ok)
    return failure();
  return v;
}

static const char *kindName(BaseType type) {
  if (flatbuffers::IsBool(type))
    return "a bool";
  if (flatbuffers::IsFloat(type))
    return "a float";
  if (type == flatbuffers::BASE_TYPE_INT || type == flatbuffers::BASE_TYPE_UINT)
    return "a 32-bit integer";
  return "an integer";
}

FailureOr<TableWriter::Scalar> TableWriter::convertScalar(const FieldDef &field,
                                                          Attribute value,
                                                          StringRef path) {
  BaseType type = field.value.type.base_type;
  Scalar scalar{&field, 0, 0};
  if (flatbuffers::IsBool(type)) {
    auto b = dyn_cast<BoolAttr>(value);
    if (!b)
      return error(path, field.name) << "expected a bool, got " << value;
    scalar.integer = b.getValue();
    return scalar;
  }
  if (flatbuffers::IsFloat(type)) {
    if (auto f = dyn_cast<FloatAttr>(value))
      scalar.real = f.getValueAsDouble();
    else if (auto i = dyn_cast<IntegerAttr>(value);
             i && !i.getType().isInteger(1))
      scalar.real = (double)i.getValue().getSExtValue();
    else
      return error(path, field.name) << "expected a float, got " << value;
    return scalar;
  }
  if (auto name = dyn_cast<StringAttr>(value);
      name && field.value.type.enum_def) {
    const flatbuffers::EnumVal *val =
        field.value.type.enum_def->Lookup(name.str());
    if (!val)
      return error(path, field.name)
             << "unknown enum value '" << name.getValue() << "'";
    scalar.integer = val->GetAsInt64();
    return scalar;
  }
  FailureOr<int64_t> v = integerOf(value, type);
  if (failed(v))
    return error(path, field.name)
           << "expected " << kindName(type) << ", got " << value;
  scalar.integer = *v;
  return scalar;
}

void TableWriter::addScalar(const Scalar &scalar) {
  flatbuffers::voffset_t offset = scalar.field->value.offset;
  int64_t integer = scalar.integer;
  switch (scalar.field->value.type.base_type) {
  case flatbuffers::BASE_TYPE_FLOAT:
    builder.AddElement<float>(offset, (float)scalar.real);
    break;
  case flatbuffers::BASE_TYPE_DOUBLE:
    builder.AddElement<double>(offset, scalar.real);
    break;
  case flatbuffers::BASE_TYPE_BOOL:
  case flatbuffers::BASE_TYPE_UCHAR:
  case flatbuffers::BASE_TYPE_UTYPE:
    builder.AddElement<uint8_t>(offset, (uint8_t)integer);
    break;
  case flatbuffers::BASE_TYPE_CHAR:
    builder.AddElement<int8_t>(offset, (int8_t)integer);
    break;
  case flatbuffers::BASE_TYPE_SHORT:
    builder.AddElement<int16_t>(offset, (int16_t)integer);
    break;
  case flatbuffers::BASE_TYPE_USHORT:
    builder.AddElement<uint16_t>(offset, (uint16_t)integer);
    break;
  case flatbuffers::BASE_TYPE_INT:
    builder.AddElement<int32_t>(offset, (int32_t)integer);
    break;
  case flatbuffers::BASE_TYPE_UINT:
    builder.AddElement<uint32_t>(offset, (uint32_t)integer);
    break;
  default:
    builder.AddElement<int64_t>(offset, integer);
    break;
  }
}

FailureOr<flatbuffers::uoffset_t>
TableWriter::writeVector(Attribute value, const FieldDef &field,
                         StringRef path) {
  auto array = dyn_cast<ArrayAttr>(value);
  if (!array)
    return error(path, field.name) << "expected an array, got " << value;
  flatbuffers::Type element = field.value.type.VectorType();
  std::string elementPath = (path + "." + field.name).str();
  if (element.base_type == flatbuffers::BASE_TYPE_STRING) {
    std::vector<std::string> strings;
    for (Attribute a : array) {
      auto s = dyn_cast<StringAttr>(a);
      if (!s)
        return error(path, field.name) << "expected strings, got " << a;
      strings.push_back(s.str());
    }
    return builder.CreateVectorOfStrings(strings).o;
  }
  if (isTable(element)) {
    std::vector<flatbuffers::Offset<flatbuffers::Table>> tables;
    for (auto [i, a] : llvm::enumerate(array)) {
      auto dict = dyn_cast<DictionaryAttr>(a);
      if (!dict)
        return error(path, field.name) << "expected dictionaries, got " << a;
      auto table = write(dict, *element.struct_def,
                         elementPath + "[" + std::to_string(i) + "]");
      if (failed(table))
        return failure();
      tables.push_back(flatbuffers::Offset<flatbuffers::Table>(*table));
    }
    return builder.CreateVector(tables).o;
  }
  if (flatbuffers::IsInteger(element.base_type) &&
      !flatbuffers::IsBool(element.base_type)) {
    std::vector<int64_t> values;
    for (Attribute a : array) {
      if (failed(integerOf(a, flatbuffers::BASE_TYPE_LONG)))
        return error(path, field.name) << "expected integers, got " << a;
      FailureOr<int64_t> v = integerOf(a, element.base_type);
      if (failed(v))
        return error(path, field.name)
               << "expected " << kindName(element.base_type) << ", got " << a;
      values.push_back(*v);
    }
    // In the schema's own width (pipeline_cuts is [int]).
    auto as = [&](auto zero) {
      using T = decltype(zero);
      std::vector<T> narrow(values.begin(), values.end());
      return builder.CreateVector(narrow).o;
    };
    switch (element.base_type) {
    case flatbuffers::BASE_TYPE_CHAR:
      return as(int8_t());
    case flatbuffers::BASE_TYPE_UCHAR:
    case flatbuffers::BASE_TYPE_UTYPE:
      return as(uint8_t());
    case flatbuffers::BASE_TYPE_SHORT:
      return as(int16_t());
    case flatbuffers::BASE_TYPE_USHORT:
      return as(uint16_t());
    case flatbuffers::BASE_TYPE_INT:
      return as(int32_t());
    case flatbuffers::BASE_TYPE_UINT:
      return as(uint32_t());
    case flatbuffers::BASE_TYPE_ULONG:
      return as(uint64_t());
    default:
      return as(int64_t());
    }
  }
  if (element.base_type == flatbuffers::BASE_TYPE_DOUBLE) {
    std::vector<double> values;
    for (Attribute a : array) {
      auto f = dyn_cast<FloatAttr>(a);
      if (!f)
        return error(path, field.name) << "expected floats, got " << a;
      values.push_back(f.getValueAsDouble());
    }
    return builder.CreateVector(values).o;
  }
  return error(path, field.name) << "this kind of vector is not supported";
}

FailureOr<flatbuffers::uoffset_t>
TableWriter::write(DictionaryAttr dict, const StructDef &def, StringRef path) {
  // Keys the schema does not know.
  for (NamedAttribute entry : dict) {
    const FieldDef *field = def.fields.Lookup(entry.getName().str());
    if (!field || field->deprecated) {
      SmallVector<std::string> known;
      for (const FieldDef *f : def.fields.vec)
        if (!f->deprecated)
          known.push_back(f->name);
      return error(path, entry.getName().getValue())
             << "no such field in the model schema's " << def.name
             << " table (it has " << llvm::join(known, ", ") << ")";
    }
  }

  // Children first; scalars are checked before the table starts.
  SmallVector<std::pair<const FieldDef *, flatbuffers::uoffset_t>> children;
  SmallVector<Scalar> scalars;
  for (const FieldDef *field : def.fields.vec) {
    Attribute value = field->deprecated ? Attribute() : dict.get(field->name);
    if (!value) {
      if (field->IsRequired())
        return error(path, field->name) << "required field is missing";
      continue;
    }
    const flatbuffers::Type &type = field->value.type;
    if (flatbuffers::IsScalar(type.base_type)) {
      FailureOr<Scalar> scalar = convertScalar(*field, value, path);
      if (failed(scalar))
        return failure();
      scalars.push_back(*scalar);
      continue;
    }
    FailureOr<flatbuffers::uoffset_t> child = failure();
    if (type.base_type == flatbuffers::BASE_TYPE_STRING) {
      auto s = dyn_cast<StringAttr>(value);
      if (!s)
        return error(path, field->name) << "expected a string, got " << value;
      child = builder.CreateString(s.getValue().data(), s.size()).o;
    } else if (isTable(type)) {
      auto sub = dyn_cast<DictionaryAttr>(value);
      if (!sub)
        return error(path, field->name)
               << "expected a dictionary, got " << value;
      child = write(sub, *type.struct_def, (path + "." + field->name).str());
    } else if (type.base_type == flatbuffers::BASE_TYPE_VECTOR) {
      child = writeVector(value, *field, path);
    } else {
      return error(path, field->name) << "this kind of field is not supported";
    }
    if (failed(child))
      return failure();
    children.push_back({field, *child});
  }

  flatbuffers::uoffset_t start = builder.StartTable();
  for (const Scalar &scalar : scalars)
    addScalar(scalar);
  for (auto [field, child] : children)
    builder.AddOffset(field->value.offset, flatbuffers::Offset<void>(child));
  return builder.EndTable(start);
}

FailureOr<flatbuffers::uoffset_t> mlir::tg::buildTableFromDictionary(
    flatbuffers::FlatBufferBuilder &builder, DictionaryAttr dict,
    const StructDef &def, StringRef path,
    function_ref<InFlightDiagnostic()> emitError) {
  return TableWriter(builder, emitError).write(dict, def, path);
}
