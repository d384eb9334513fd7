//===- FlatScalar.h - A reflected FlatBuffers scalar, decoded ------*- C++ -*-===//
//
// The importer's table dictionaries (TableDictionary.cpp) and the JSON writer
// (JsonWriter.cpp) both read scalars of tables they only know through the
// reflected schema: one decoder for both.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_FRONTEND_FLATSCALAR_H
#define TGC_FRONTEND_FLATSCALAR_H

#include "flatbuffers/idl.h"

#include <cstdint>
#include <cstring>

namespace mlir::tg {

/// A scalar field or vector element as the value it holds.
struct FlatScalar {
  enum Kind { Bool, Real, Signed, Unsigned, NotScalar } kind = NotScalar;
  double real = 0;
  /// Bool (0 or 1), Signed, and Unsigned's bits (uint64 read as int64).
  int64_t integer = 0;
};

/// The scalar of base type `type` stored at `data` (bounds already checked).
inline FlatScalar readFlatScalar(flatbuffers::BaseType type,
                                 const uint8_t *data) {
  auto load = [&](auto zero) {
    decltype(zero) value;
    std::memcpy(&value, data, sizeof(value));
    return value;
  };
  FlatScalar s;
  switch (type) {
  case flatbuffers::BASE_TYPE_BOOL:
    return {FlatScalar::Bool, 0, load(uint8_t()) != 0};
  case flatbuffers::BASE_TYPE_FLOAT:
    return {FlatScalar::Real, load(float()), 0};
  case flatbuffers::BASE_TYPE_DOUBLE:
    return {FlatScalar::Real, load(double()), 0};
  case flatbuffers::BASE_TYPE_CHAR:
    return {FlatScalar::Signed, 0, load(int8_t())};
  case flatbuffers::BASE_TYPE_UCHAR:
  case flatbuffers::BASE_TYPE_UTYPE:
    return {FlatScalar::Signed, 0, load(uint8_t())};
  case flatbuffers::BASE_TYPE_SHORT:
    return {FlatScalar::Signed, 0, load(int16_t())};
  case flatbuffers::BASE_TYPE_USHORT:
    return {FlatScalar::Signed, 0, load(uint16_t())};
  case flatbuffers::BASE_TYPE_INT:
    return {FlatScalar::Signed, 0, load(int32_t())};
  case flatbuffers::BASE_TYPE_UINT:
    return {FlatScalar::Signed, 0, load(uint32_t())};
  case flatbuffers::BASE_TYPE_LONG:
    return {FlatScalar::Signed, 0, load(int64_t())};
  case flatbuffers::BASE_TYPE_ULONG:
    return {FlatScalar::Unsigned, 0, load(int64_t())};
  default:
    return s;
  }
}

} // namespace mlir::tg

#endif // TGC_FRONTEND_FLATSCALAR_H
