//===- DType.h - Element types: sizes, names, conversions ---------*- C++ -*-===//
//
// Sizes and safetensors names of the DType enum in Model.h, the float
// conversions the runtime needs to initialise or feed bf16/f16 buffers, and
// a TensorDesc's element count and shapes (the one the step holds, the one
// files show).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CORE_DTYPE_H
#define TGC_RUNTIME_CORE_DTYPE_H

#include "runtime/core/Model.h"

#include <cstdint>
#include <string>
#include <vector>

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
std::string shapeString(const std::vector<int64_t> &shape);

/// The shape the step functions hold `tensor` in (TensorDesc::shape).
std::vector<int64_t> shapeOf(const TensorDesc &tensor);
/// The shape files show `tensor` in: TensorDesc::fileShape, or `shape` when
/// it has none. Throws tgc::Error when the file shape does not hold the
/// same number of elements (generated code that contradicts itself).
std::vector<int64_t> fileShapeOf(const TensorDesc &tensor);
/// "768x2304", and " (held as 768x3x768)" after it when the file shape is
/// another view than the one the step holds: for messages about files.
std::string fileShapeString(const TensorDesc &tensor);
/// The same for a shape in files and the view `held` (empty: none).
std::string fileShapeString(const std::vector<int64_t> &file,
                            const std::vector<int64_t> &held);

/// Round-to-nearest-even conversions; NaN stays NaN.
uint16_t floatToBF16(float value);
float bf16ToFloat(uint16_t value);
uint16_t floatToHalf(float value);
float halfToFloat(uint16_t value);

/// The OCP 8-bit floating point formats (OCP FP8 v1.0, as Hopper's tensor
/// cores and Transformer Engine use them): E4M3 (bias 7, no infinities,
/// S.1111.111 is NaN, the largest finite 448) and E5M2 (bias 15, IEEE-like
/// infinities and NaNs, the largest finite 57344). From float: round to
/// nearest even, saturating (a magnitude past the largest finite, infinity
/// included, becomes the largest finite of its sign, as CUDA's
/// __NV_SATFINITE conversion does); NaN becomes 0x7f. To float: exact.
uint8_t floatToE4M3(float value);
float e4m3ToFloat(uint8_t value);
uint8_t floatToE5M2(float value);
float e5m2ToFloat(uint8_t value);

/// Stores `count` floats into `dst` of type `dtype` (F32, BF16, F16, the
/// FP8 formats as above, I32, I64; integers are truncated toward zero).
void storeFloats(const float *src, int64_t count, DType dtype, void *dst);

} // namespace tgc

#endif // TGC_RUNTIME_CORE_DTYPE_H
