//===- DType.cpp - Element types: sizes, names, conversions -------*- C++ -*-===//

#include "runtime/core/DType.h"

#include "runtime/core/Error.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace tgc {

int64_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::BF16:
  case DType::F16:
    return 2;
  case DType::F8E4M3:
  case DType::F8E5M2:
  case DType::I1:
    return 1;
  case DType::I64:
    return 8;
  }
  throw Error("unknown dtype " + std::to_string(static_cast<int>(dtype)));
}

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::BF16:
    return "BF16";
  case DType::F16:
    return "F16";
  case DType::F8E4M3:
    return "F8_E4M3";
  case DType::F8E5M2:
    return "F8_E5M2";
  case DType::I32:
    return "I32";
  case DType::I64:
    return "I64";
  case DType::I1:
    return "BOOL";
  }
  return "?";
}

bool parseDType(const std::string &name, DType &dtype) {
  static const DType all[] = {DType::F32,    DType::BF16, DType::F16,
                              DType::F8E4M3, DType::F8E5M2, DType::I32,
                              DType::I64,    DType::I1};
  for (DType candidate : all) {
    if (name == dtypeName(candidate)) {
      dtype = candidate;
      return true;
    }
  }
  return false;
}

bool isFloatDType(DType dtype) {
  return dtype == DType::F32 || dtype == DType::BF16 || dtype == DType::F16 ||
         dtype == DType::F8E4M3 || dtype == DType::F8E5M2;
}

int64_t numElements(const TensorDesc &tensor) {
  int64_t count = 1;
  for (int i = 0; i < tensor.rank; ++i)
    count *= tensor.shape[i];
  return count;
}

std::string shapeString(const int64_t *shape, int rank) {
  if (rank == 0)
    return "scalar";
  std::string text;
  for (int i = 0; i < rank; ++i) {
    if (i)
      text += "x";
    text += std::to_string(shape[i]);
  }
  return text;
}

std::string shapeString(const TensorDesc &tensor) {
  return shapeString(tensor.shape, tensor.rank);
}

std::string shapeString(const std::vector<int64_t> &shape) {
  return shapeString(shape.data(), static_cast<int>(shape.size()));
}

std::vector<int64_t> shapeOf(const TensorDesc &tensor) {
  return std::vector<int64_t>(tensor.shape, tensor.shape + tensor.rank);
}

std::vector<int64_t> fileShapeOf(const TensorDesc &tensor) {
  if (tensor.fileRank <= 0)
    return shapeOf(tensor);
  if (tensor.fileRank > kMaxRank)
    throw Error(std::string("tensor ") + tensor.name + " has a file shape of " +
                "rank " + std::to_string(tensor.fileRank) + ", above " +
                std::to_string(kMaxRank));
  std::vector<int64_t> shape(tensor.fileShape,
                             tensor.fileShape + tensor.fileRank);
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  if (count != numElements(tensor))
    throw Error(std::string("tensor ") + tensor.name + " has file shape " +
                shapeString(shape) + " (" + std::to_string(count) +
                " elements) but shape " + shapeString(tensor) + " (" +
                std::to_string(numElements(tensor)) +
                " elements): not a view of it");
  return shape;
}

std::string fileShapeString(const TensorDesc &tensor) {
  return fileShapeString(fileShapeOf(tensor), shapeOf(tensor));
}

std::string fileShapeString(const std::vector<int64_t> &file,
                            const std::vector<int64_t> &held) {
  if (held.empty() || held == file)
    return shapeString(file);
  return shapeString(file) + " (held as " + shapeString(held) + ")";
}

uint16_t floatToBF16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if (std::isnan(value))
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float bf16ToFloat(uint16_t value) {
  uint32_t bits = static_cast<uint32_t>(value) << 16;
  float result;
  std::memcpy(&result, &bits, 4);
  return result;
}

uint16_t floatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint32_t sign = (bits >> 16) & 0x8000;
  uint32_t magnitude = bits & 0x7fffffff;
  if (magnitude > 0x7f800000) // NaN
    return static_cast<uint16_t>(sign | 0x7e00);
  if (magnitude >= 0x477ff000) // rounds to >= 65520: infinity
    return static_cast<uint16_t>(sign | 0x7c00);
  if (magnitude < 0x38800000) { // subnormal half (or zero)
    // value * 2^24 rounded to nearest even is the subnormal's mantissa.
    float absValue;
    std::memcpy(&absValue, &magnitude, 4);
    float scaled = absValue * 16777216.0f; // exact: a power of two
    uint32_t mantissa = static_cast<uint32_t>(std::nearbyint(scaled));
    return static_cast<uint16_t>(sign | mantissa);
  }
  uint32_t rounding = 0xfff + ((magnitude >> 13) & 1);
  magnitude += rounding;
  return static_cast<uint16_t>(sign | ((magnitude - 0x38000000) >> 13));
}

float halfToFloat(uint16_t value) {
  uint32_t sign = static_cast<uint32_t>(value & 0x8000) << 16;
  uint32_t exponent = (value >> 10) & 0x1f;
  uint32_t mantissa = value & 0x3ff;
  float result;
  if (exponent == 0) {
    result = std::ldexp(static_cast<float>(mantissa), -24);
    if (sign)
      result = -result;
    return result;
  }
  uint32_t bits;
  if (exponent == 31)
    bits = sign | 0x7f800000 | (mantissa << 13);
  else
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  std::memcpy(&result, &bits, 4);
  return result;
}

namespace {

/// One of the OCP FP8 formats: exponent bias and mantissa bits, its largest
/// finite code (sign off) and whether exponent field all-ones is a normal
/// binade (E4M3) or infinities and NaNs (E5M2).
struct Fp8Format {
  int bias, mantissaBits;
  uint8_t maxFinite;
  bool ieeeSpecials;
};
constexpr Fp8Format kE4M3{7, 3, 0x7e, false};
constexpr Fp8Format kE5M2{15, 2, 0x7b, true};

float fp8ToFloat(uint8_t code, const Fp8Format &f) {
  bool negative = code & 0x80;
  int exponent = (code & 0x7f) >> f.mantissaBits;
  int mantissa = code & ((1 << f.mantissaBits) - 1);
  int top = (1 << (7 - f.mantissaBits)) - 1; // the all-ones exponent
  float magnitude;
  if ((code & 0x7f) > f.maxFinite) {
    magnitude = f.ieeeSpecials && exponent == top && mantissa == 0
                    ? std::numeric_limits<float>::infinity()
                    : std::numeric_limits<float>::quiet_NaN();
  } else if (exponent == 0) {
    magnitude =
        std::ldexp(static_cast<float>(mantissa), 1 - f.bias - f.mantissaBits);
  } else {
    magnitude = std::ldexp(static_cast<float>((1 << f.mantissaBits) | mantissa),
                           exponent - f.bias - f.mantissaBits);
  }
  return negative ? -magnitude : magnitude;
}

uint8_t floatToFp8(float value, const Fp8Format &f) {
  if (std::isnan(value))
    return 0x7f;
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint8_t sign = (bits >> 24) & 0x80;
  uint32_t magnitude = bits & 0x7fffffff;
  float absValue;
  std::memcpy(&absValue, &magnitude, 4);
  if (absValue >= fp8ToFloat(f.maxFinite, f)) // infinity included
    return sign | f.maxFinite;
  int shift = 23 - f.mantissaBits;
  if (absValue < std::ldexp(1.0f, 1 - f.bias)) {
    // Subnormal (or zero): the value in units of the smallest subnormal,
    // rounded to nearest even; 1 << mantissaBits is the smallest normal.
    float units = std::ldexp(absValue, f.bias - 1 + f.mantissaBits);
    return sign | static_cast<uint8_t>(std::nearbyint(units));
  }
  // Normal: float's mantissa rounded to nearest even at the FP8 format's
  // last bit (a carry moves to the next binade, as it should), the
  // exponent rebiased.
  magnitude += (uint32_t(1) << (shift - 1)) - 1 + ((magnitude >> shift) & 1);
  uint32_t code = (magnitude >> shift) -
                  (static_cast<uint32_t>(127 - f.bias) << f.mantissaBits);
  return sign | static_cast<uint8_t>(code);
}

} // namespace

uint8_t floatToE4M3(float value) { return floatToFp8(value, kE4M3); }
float e4m3ToFloat(uint8_t value) { return fp8ToFloat(value, kE4M3); }
uint8_t floatToE5M2(float value) { return floatToFp8(value, kE5M2); }
float e5m2ToFloat(uint8_t value) { return fp8ToFloat(value, kE5M2); }

void storeFloats(const float *src, int64_t count, DType dtype, void *dst) {
  switch (dtype) {
  case DType::F32:
    std::memcpy(dst, src, count * 4);
    return;
  case DType::BF16: {
    auto *out = static_cast<uint16_t *>(dst);
    for (int64_t i = 0; i < count; ++i)
      out[i] = floatToBF16(src[i]);
    return;
  }
  case DType::F16: {
    auto *out = static_cast<uint16_t *>(dst);
    for (int64_t i = 0; i < count; ++i)
      out[i] = floatToHalf(src[i]);
    return;
  }
  case DType::F8E4M3:
  case DType::F8E5M2: {
    auto *out = static_cast<uint8_t *>(dst);
    for (int64_t i = 0; i < count; ++i)
      out[i] =
          dtype == DType::F8E4M3 ? floatToE4M3(src[i]) : floatToE5M2(src[i]);
    return;
  }
  case DType::I32: {
    auto *out = static_cast<int32_t *>(dst);
    for (int64_t i = 0; i < count; ++i)
      out[i] = static_cast<int32_t>(src[i]);
    return;
  }
  case DType::I64: {
    auto *out = static_cast<int64_t *>(dst);
    for (int64_t i = 0; i < count; ++i)
      out[i] = static_cast<int64_t>(src[i]);
    return;
  }
  default:
    throw Error(std::string("cannot store floats as ") + dtypeName(dtype));
  }
}

} // namespace tgc
