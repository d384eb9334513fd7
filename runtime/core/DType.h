//===- DType.h - Element types: sizes, names, conversions ---------*- C++ -*-===//
//
// Sizes and safetensors names of the DType enum in Model.h, and the float
// conversions the runtime needs to initialise or feed bf16/f16 buffers.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CORE_DTYPE_H
#define TGC_RUNTIME_CORE_DTYPE_H

#include "runtime/core/Model.h"

#include <cstdint>
#include <string>

namespace tgc {

/// Bytes per element (I1 is stored as one byte, like safetensors' BOOL).
int64_t dtypeSize(DType dtype);

/// The safetensors dtype string: F32, BF16, F16, F8_E4M3, F8_E5M2, I32, I64,
/// BOOL.
const char *dtypeName(DType dtype);

/// Parses a safetensors dtype string; false when it is not one the runtime
/// knows.
bool parseDType(const std::string &name, DType &dtype);

bool isFloatDType(DType dtype);

/// Number of elements of a tensor (1 for rank 0).
int64_t numElements(const TensorDesc &tensor);

/// "64x10" ("scalar" for rank 0).
std::string shapeString(const TensorDesc &tensor);
std::string shapeString(const int64_t *shape, int rank);

/// Round-to-nearest-even conversions; NaN stays NaN.
uint16_t floatToBF16(float value);
float bf16ToFloat(uint16_t value);
uint16_t floatToHalf(float value);
float halfToFloat(uint16_t value);

/// Stores `count` floats into `dst` of type `dtype` (F32, BF16, F16, I32,
/// I64; integers are truncated toward zero).
void storeFloats(const float *src, int64_t count, DType dtype, void *dst);

} // namespace tgc

#endif // TGC_RUNTIME_CORE_DTYPE_H
