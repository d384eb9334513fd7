//===- ModelSchema.cpp - The model schema at run time -----------*- C++ -*-===//
//
// The embedded schema text and the enum mappings. The two enums mirror each
// other by value (model.fbs's InitKind and TgAttrs.td's InitKind list the same
// kinds in the same order); the static_asserts below keep them honest.
//
//===----------------------------------------------------------------------===//

#include "frontend/ModelSchema.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"

#include "flatbuffers/idl.h"

#include <utility>

using namespace mlir;
using namespace mlir::tg;
namespace fbs = tgc::model;

StringRef mlir::tg::getModelSchemaText() {
  static const char text[] =
#include "frontend/schema/ModelSchema.inc"
      ;
  return StringRef(text, sizeof(text) - 1);
}

std::unique_ptr<flatbuffers::Parser>
mlir::tg::createModelSchemaParser(bool forceDefaults) {
  flatbuffers::IDLOptions options;
  options.force_defaults = forceDefaults;
  // Unknown fields are errors: a misspelt key must not be dropped silently.
  options.skip_unexpected_fields_in_json = false;
  auto parser = std::make_unique<flatbuffers::Parser>(options);
  std::string text = getModelSchemaText().str();
  if (!parser->Parse(text.c_str()))
    llvm::report_fatal_error(llvm::Twine("the embedded model schema does not "
                                         "parse: ") +
                             parser->error_);
  return parser;
}

const flatbuffers::StructDef *
mlir::tg::lookupModelTable(const flatbuffers::Parser &schema, StringRef name) {
  return schema.LookupStruct(("tgc.model." + name).str());
}

Type mlir::tg::getElementType(MLIRContext *context, fbs::DType dtype) {
  switch (dtype) {
  case fbs::DType::f32:
    return Float32Type::get(context);
  case fbs::DType::bf16:
    return BFloat16Type::get(context);
  case fbs::DType::f16:
    return Float16Type::get(context);
  case fbs::DType::f8e4m3:
    return Float8E4M3FNType::get(context);
  case fbs::DType::f8e5m2:
    return Float8E5M2Type::get(context);
  case fbs::DType::i32:
    return IntegerType::get(context, 32);
  case fbs::DType::i64:
    return IntegerType::get(context, 64);
  case fbs::DType::i1:
    return IntegerType::get(context, 1);
  }
  return Type();
}

std::optional<fbs::DType> mlir::tg::getModelDType(Type type) {
  if (type.isF32())
    return fbs::DType::f32;
  if (type.isBF16())
    return fbs::DType::bf16;
  if (type.isF16())
    return fbs::DType::f16;
  if (isa<Float8E4M3FNType>(type))
    return fbs::DType::f8e4m3;
  if (isa<Float8E5M2Type>(type))
    return fbs::DType::f8e5m2;
  if (type.isSignlessInteger(32))
    return fbs::DType::i32;
  if (type.isSignlessInteger(64))
    return fbs::DType::i64;
  if (type.isSignlessInteger(1))
    return fbs::DType::i1;
  return std::nullopt;
}

StringRef mlir::tg::getDTypeName(fbs::DType dtype) {
  return fbs::EnumNameDType(dtype);
}

std::optional<fbs::DType> mlir::tg::parseDTypeName(StringRef name) {
  for (fbs::DType dtype : fbs::EnumValuesDType())
    if (name == fbs::EnumNameDType(dtype))
      return dtype;
  return std::nullopt;
}

std::string mlir::tg::listDTypeNames() {
  SmallVector<StringRef> names;
  for (fbs::DType dtype : fbs::EnumValuesDType())
    names.push_back(fbs::EnumNameDType(dtype));
  return llvm::join(names, ", ");
}

// The schema and the dialect number the initializer kinds alike.
static_assert((int)fbs::InitKind::zeros == (int)InitKind::zeros);
static_assert((int)fbs::InitKind::normal == (int)InitKind::normal);
static_assert((int)fbs::InitKind::kaiming_normal ==
              (int)InitKind::kaiming_normal);
static_assert((int)fbs::InitKind::file == (int)InitKind::file);
static_assert((int)fbs::InitKind::MAX == (int)InitKind::file);

std::optional<InitKind> mlir::tg::getInitKind(fbs::InitKind kind) {
  if (flatbuffers::IsOutRange(kind, fbs::InitKind::MIN, fbs::InitKind::MAX))
    return std::nullopt;
  return symbolizeInitKind((uint32_t)kind);
}

fbs::InitKind mlir::tg::getModelInitKind(InitKind kind) {
  return (fbs::InitKind)(int)kind;
}

//===----------------------------------------------------------------------===//
// Enum attributes spelled as strings
//===----------------------------------------------------------------------===//

/// The tg enum attributes a model file spells as strings: one entry per
/// enum, whatever ops use it.
template <typename... AttrTs> struct StringEnumList {
  template <typename AttrT>
  using EnumOf = decltype(std::declval<AttrT>().getValue());

  template <typename AttrT>
  static Attribute fromString(MLIRContext *context, StringRef spelling) {
    if (auto value = symbolizeEnum<EnumOf<AttrT>>(spelling))
      return AttrT::get(context, *value);
    return {};
  }

  template <typename AttrT> static SmallVector<StringRef> spellings() {
    return getEnumSpellings<EnumOf<AttrT>>();
  }

  static ArrayRef<StringEnum> all() {
    static const StringEnum list[] = {
        {&fromString<AttrTs>, &spellings<AttrTs>}...};
    return list;
  }

  static std::optional<StringRef> toString(Attribute attr) {
    std::optional<StringRef> out;
    auto visit = [&](auto typed) {
      if (typed)
        out = stringifyEnum(typed.getValue());
    };
    (visit(dyn_cast_if_present<AttrTs>(attr)), ...);
    return out;
  }
};

using ModelFileEnums =
    StringEnumList<ReductionAttr, GeluApproximationAttr, ComparePredicateAttr,
                   LossReductionAttr, OptimizerKindAttr, ScheduleKindAttr>;

ArrayRef<StringEnum> mlir::tg::getStringEnums() {
  return ModelFileEnums::all();
}

std::optional<StringRef> mlir::tg::getEnumString(Attribute attr) {
  return ModelFileEnums::toString(attr);
}

SmallVector<StringRef> mlir::tg::getOptimizerKindSpellings() {
  return ModelFileEnums::spellings<OptimizerKindAttr>();
}

SmallVector<StringRef> mlir::tg::getScheduleKindSpellings() {
  return ModelFileEnums::spellings<ScheduleKindAttr>();
}
