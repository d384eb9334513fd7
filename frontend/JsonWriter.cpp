//===- JsonWriter.cpp - Model files as readable JSON ------------*- C++ -*-===//
//
// The layout follows the nesting level: the root's fields go one per line; a
// vector of tables under the root gets one element per line; a table under
// the root (the training table) gets one field per line; anything deeper is
// written compactly on its line, with ", " and ": " as separators.
//
//===----------------------------------------------------------------------===//

#include "frontend/JsonWriter.h"

#include "frontend/FlatScalar.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Format.h"

#include "flatbuffers/idl.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace mlir::tg;
using flatbuffers::FieldDef;
using flatbuffers::StructDef;

namespace {

class JsonWriter {
public:
  explicit JsonWriter(llvm::raw_ostream &os) : os(os) {}

  void writeRoot(const flatbuffers::Table &table, const StructDef &def);

private:
  llvm::raw_ostream &os;

  static bool isTable(const flatbuffers::Type &type) {
    return type.base_type == flatbuffers::BASE_TYPE_STRUCT && type.struct_def &&
           !type.struct_def->fixed;
  }

  static bool present(const flatbuffers::Table &table, const FieldDef &field) {
    return !field.deprecated && table.CheckField(field.value.offset);
  }

  void writeString(llvm::StringRef s);
  void writeDouble(double value);
  void writeScalar(flatbuffers::BaseType type, const uint8_t *data,
                   const flatbuffers::EnumDef *enumDef);
  void writeVector(const uint8_t *vectorPtr, const flatbuffers::Type &type,
                   bool onePerLine, unsigned indent);
  void writeField(const flatbuffers::Table &table, const FieldDef &field,
                  unsigned level, unsigned indent);
  void writeCompactTable(const flatbuffers::Table &table, const StructDef &def);
  void writeTableFieldsOnLines(const flatbuffers::Table &table,
                               const StructDef &def, unsigned level,
                               unsigned indent);
};

} // namespace

void JsonWriter::writeString(llvm::StringRef s) {
  // The exporter checked that every string is UTF-8, so bytes from 0x80 up
  // are written as they are.
  os << '"';
  for (unsigned char c : s) {
    switch (c) {
    case '"':
      os << "\\\"";
      break;
    case '\\':
      os << "\\\\";
      break;
    case '\n':
      os << "\\n";
      break;
    case '\t':
      os << "\\t";
      break;
    case '\r':
      os << "\\r";
      break;
    default:
      if (c < 0x20 || c == 0x7f)
        os << llvm::format("\\u%04x", c);
      else
        os << c;
    }
  }
  os << '"';
}

void JsonWriter::writeDouble(double value) {
  if (std::isnan(value)) {
    os << "nan";
    return;
  }
  if (std::isinf(value)) {
    os << (value < 0 ? "-inf" : "inf");
    return;
  }
  // The shortest decimal that reads back as the same double.
  char buffer[40];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", digits, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  os << buffer;
  // Keep it visibly a float, as Python's json writes 1.0.
  if (!std::strpbrk(buffer, ".e"))
    os << ".0";
}

void JsonWriter::writeScalar(flatbuffers::BaseType type, const uint8_t *data,
                             const flatbuffers::EnumDef *enumDef) {
  FlatScalar value = readFlatScalar(type, data);
  switch (value.kind) {
  case FlatScalar::Bool:
    os << (value.integer ? "true" : "false");
    return;
  case FlatScalar::Real:
    writeDouble(value.real);
    return;
  case FlatScalar::Unsigned:
    os << static_cast<uint64_t>(value.integer);
    return;
  case FlatScalar::Signed:
  case FlatScalar::NotScalar:
    break;
  }
  if (enumDef)
    if (const flatbuffers::EnumVal *val =
            enumDef->ReverseLookup(value.integer, false)) {
      writeString(val->name);
      return;
    }
  os << value.integer;
}

void JsonWriter::writeVector(const uint8_t *vectorPtr,
                             const flatbuffers::Type &type, bool onePerLine,
                             unsigned indent) {
  auto *vector =
      reinterpret_cast<const flatbuffers::Vector<uint8_t> *>(vectorPtr);
  uint32_t size = vector->size();
  flatbuffers::Type element = type.VectorType();
  if (size == 0) {
    os << "[]";
    return;
  }
  os << "[";
  for (uint32_t i = 0; i < size; ++i) {
    if (onePerLine)
      os << "\n" << std::string(indent + 2, ' ');
    if (element.base_type == flatbuffers::BASE_TYPE_STRING) {
      auto *strings = reinterpret_cast<const flatbuffers::Vector<
          flatbuffers::Offset<flatbuffers::String>> *>(vectorPtr);
      writeString(strings->Get(i)->string_view());
    } else if (isTable(element)) {
      auto *tables = reinterpret_cast<
          const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::Table>> *>(
          vectorPtr);
      writeCompactTable(*tables->Get(i), *element.struct_def);
    } else {
      size_t width = flatbuffers::SizeOf(element.base_type);
      writeScalar(element.base_type, vector->Data() + i * width,
                  element.enum_def);
    }
    if (i + 1 < size)
      os << (onePerLine ? "," : ", ");
  }
  if (onePerLine)
    os << "\n" << std::string(indent, ' ');
  os << "]";
}

void JsonWriter::writeField(const flatbuffers::Table &table,
                            const FieldDef &field, unsigned level,
                            unsigned indent) {
  const flatbuffers::Type &type = field.value.type;
  flatbuffers::voffset_t offset = field.value.offset;
  if (flatbuffers::IsScalar(type.base_type)) {
    auto *data = reinterpret_cast<const uint8_t *>(&table) +
                 table.GetOptionalFieldOffset(offset);
    writeScalar(type.base_type, data, type.enum_def);
  } else if (type.base_type == flatbuffers::BASE_TYPE_STRING) {
    writeString(
        table.GetPointer<const flatbuffers::String *>(offset)->string_view());
  } else if (isTable(type)) {
    auto *sub = table.GetPointer<const flatbuffers::Table *>(offset);
    if (level == 1)
      writeTableFieldsOnLines(*sub, *type.struct_def, level + 1, indent);
    else
      writeCompactTable(*sub, *type.struct_def);
  } else if (type.base_type == flatbuffers::BASE_TYPE_VECTOR) {
    bool onePerLine = level == 1 && isTable(type.VectorType());
    writeVector(table.GetPointer<const uint8_t *>(offset), type, onePerLine,
                indent);
  } else {
    os << "null";
  }
}

void JsonWriter::writeCompactTable(const flatbuffers::Table &table,
                                   const StructDef &def) {
  os << "{";
  bool first = true;
  for (const FieldDef *field : def.fields.vec) {
    if (!present(table, *field))
      continue;
    os << (first ? "" : ", ");
    first = false;
    writeString(field->name);
    os << ": ";
    writeField(table, *field, /*level=*/3, /*indent=*/0);
  }
  os << "}";
}

void JsonWriter::writeTableFieldsOnLines(const flatbuffers::Table &table,
                                         const StructDef &def, unsigned level,
                                         unsigned indent) {
  llvm::SmallVector<const FieldDef *> fields;
  for (const FieldDef *field : def.fields.vec)
    if (present(table, *field))
      fields.push_back(field);
  if (fields.empty()) {
    os << "{}";
    return;
  }
  os << "{";
  for (auto [i, field] : llvm::enumerate(fields)) {
    os << "\n" << std::string(indent + 2, ' ');
    writeString(field->name);
    os << ": ";
    writeField(table, *field, level, indent + 2);
    if (i + 1 < fields.size())
      os << ",";
  }
  os << "\n" << std::string(indent, ' ') << "}";
}

void JsonWriter::writeRoot(const flatbuffers::Table &table,
                           const StructDef &def) {
  writeTableFieldsOnLines(table, def, /*level=*/1, /*indent=*/0);
  os << "\n";
}

void mlir::tg::writeTableAsJson(const flatbuffers::Table &root,
                                const StructDef &def, llvm::raw_ostream &os) {
  JsonWriter(os).writeRoot(root, def);
}
