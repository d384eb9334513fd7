//===- TableDictionary.h - Schema tables as MLIR dictionaries ---*- C++ -*-===//
//
// The training table travels through the compiler as the module attribute
// `tg.training`, a DictionaryAttr keyed by the schema's field names. These
// conversions walk the schema's own field list (flatbuffers::StructDef), so a
// field added to model.fbs reaches the IR and comes back out without code
// changes here: integers become i64 IntegerAttr, doubles f64 FloatAttr, bools
// BoolAttr, strings StringAttr, sub-tables DictionaryAttr and vectors
// ArrayAttr.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_FRONTEND_TABLEDICTIONARY_H
#define TGC_FRONTEND_TABLEDICTIONARY_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Support/LLVM.h"

#include "flatbuffers/flatbuffers.h"

#include <cstring>
#include <optional>
#include <string>

namespace flatbuffers {
struct StructDef;
} // namespace flatbuffers

namespace mlir::tg {

/// The fields of `table` (a table of type `def`) as a dictionary. A field the
/// buffer does not hold is left out, so the dictionary says exactly what the
/// model file set, except inside vectors of tables: their elements are records
/// (a mesh axis is a name and a size) and get every field, defaults included.
DictionaryAttr convertTableToDictionary(const flatbuffers::Table &table,
                                        const flatbuffers::StructDef &def,
                                        MLIRContext *context);

/// Builds a table of type `def` holding the entries of `dict`; every entry is
/// written, even one equal to the schema's default, so a round trip keeps
/// the dictionary as it was. An entry the schema does not have, or of the
/// wrong kind, is an error that names `path` ("tg.training.optimizer").
FailureOr<flatbuffers::uoffset_t>
buildTableFromDictionary(flatbuffers::FlatBufferBuilder &builder,
                         DictionaryAttr dict, const flatbuffers::StructDef &def,
                         StringRef path,
                         function_ref<InFlightDiagnostic()> emitError);

/// The path ("nodes[3].name") of the first string in `table` (a verified table
/// of type `def`) that is not UTF-8, if any. FlatBuffers strings are UTF-8,
/// its JSON parser insists on it, and the verifier does not check.
std::optional<std::string> findNonUtf8String(const flatbuffers::Table &table,
                                             const flatbuffers::StructDef &def);

/// The elements of a vector of 8-byte scalars, copied out: the verifier checks
/// the alignment of a vector's length but not of its elements, so a crafted
/// buffer can place them where a direct load would be misaligned.
template <typename T>
SmallVector<T> readScalarVector(const flatbuffers::Vector<T> *vector) {
  SmallVector<T> values;
  if (!vector)
    return values;
  values.resize(vector->size());
  if (!values.empty())
    std::memcpy(values.data(), vector->Data(), values.size() * sizeof(T));
  return values;
}

} // namespace mlir::tg

#endif // TGC_FRONTEND_TABLEDICTIONARY_H
