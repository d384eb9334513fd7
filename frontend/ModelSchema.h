//===- ModelSchema.h - The model schema at run time -------------*- C++ -*-===//
//
// What import and export share about frontend/schema/model.fbs: the schema
// text compiled into the library (the JSON form is parsed against it, and its
// field list drives the generic table conversions), and the mapping between
// the schema's dtype and initializer enums and MLIR types and #tg.init kinds.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_FRONTEND_MODELSCHEMA_H
#define TGC_FRONTEND_MODELSCHEMA_H

#include "dialects/tg/IR/TgDialect.h"
#include "frontend/schema/model_generated.h"

#include "mlir/IR/Types.h"
#include "llvm/ADT/StringRef.h"

#include <memory>
#include <optional>

namespace flatbuffers {
class Parser;
struct StructDef;
} // namespace flatbuffers

namespace mlir::tg {

/// The text of frontend/schema/model.fbs as it was when the tool was built.
llvm::StringRef getModelSchemaText();

/// A FlatBuffers IDL parser that has read the model schema. With
/// `forceDefaults`, JSON parsed by it keeps every scalar the text spells out,
/// even one equal to its default, so presence in the buffer means presence in
/// the text. Never null: the embedded schema is checked by the tests.
std::unique_ptr<flatbuffers::Parser>
createModelSchemaParser(bool forceDefaults);

/// The schema's definition of table `name` ("Training"), or null.
const flatbuffers::StructDef *
lookupModelTable(const flatbuffers::Parser &schema, llvm::StringRef name);

/// The MLIR element type of a schema dtype; null for a value outside the
/// enum (a binary file may hold any byte there).
Type getElementType(MLIRContext *context, tgc::model::DType dtype);

/// The schema dtype of an MLIR element type, if the schema has one.
std::optional<tgc::model::DType> getModelDType(Type elementType);

/// The schema's name of a dtype ("f32", "bf16", ...), as the JSON form and
/// the `dtype` attribute of cast and constant nodes spell it.
llvm::StringRef getDTypeName(tgc::model::DType dtype);

/// The dtype named `name` in the schema, if any.
std::optional<tgc::model::DType> parseDTypeName(llvm::StringRef name);

/// All dtype names, comma separated, for diagnostics.
std::string listDTypeNames();

/// The #tg.init kind of a schema initializer kind; nullopt outside the enum.
std::optional<InitKind> getInitKind(tgc::model::InitKind kind);

/// The schema initializer kind of a #tg.init kind.
tgc::model::InitKind getModelInitKind(InitKind kind);

/// A tg enum attribute (`#tg<reduction mean>`) as a model file spells it:
/// a string (`"mean"`), so the file format does not change when the
/// dialect turns a string attribute into an enum.
struct StringEnum {
  /// The attribute `spelling` names; null when it names none.
  Attribute (*fromString)(MLIRContext *context, llvm::StringRef spelling);
  /// Every spelling, in the enum's order.
  llvm::SmallVector<llvm::StringRef> (*spellings)();
};

/// The tg enums a model file spells as strings.
llvm::ArrayRef<StringEnum> getStringEnums();

/// The model-file string of `attr` when it is one of getStringEnums().
std::optional<llvm::StringRef> getEnumString(Attribute attr);

/// The strings the training table's `optimizer.kind` takes: the cases of
/// tg.optimizer_update's kind (#tg<optimizer adamw>).
llvm::SmallVector<llvm::StringRef> getOptimizerKindSpellings();

/// The strings the training table's `schedule.kind` takes: the cases of
/// tg.lr_schedule's kind (#tg<schedule cosine>).
llvm::SmallVector<llvm::StringRef> getScheduleKindSpellings();

} // namespace mlir::tg

#endif // TGC_FRONTEND_MODELSCHEMA_H
