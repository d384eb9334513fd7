//===- FastExp.h - A vectorizable single-precision exp -------------*- C++ -*-===//
//
// Softmax-like kernels spend most of their time in exp. glibc's expf only
// vectorizes under -ffast-math, which would also break the NaN and infinity
// handling the kernels rely on, so this is Cephes' expf written with plain
// arithmetic that the compiler turns into SIMD code: range reduction by
// n = round(x / ln 2), a degree-6 polynomial, and 2^n built in the exponent
// bits. It is within 2 ulp of expf on [-87.3, 88]; below that it returns 0,
// above 88.72 infinity, and NaN stays NaN.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CPU_FASTEXP_H
#define TGC_RUNTIME_CPU_FASTEXP_H

#include <cstdint>
#include <cstring>
#include <limits>

namespace tgc::cpu {

inline float fastExp(float x) {
  // Clamped so that 2^n stays a normal float (NaN goes to the low end); the
  // ends are patched below.
  float xc = x > -87.33654f ? x : -87.33654f;
  xc = xc < 88.0f ? xc : 88.0f;
  // Round to nearest by the 1.5 * 2^23 trick (no libm call, vectorizes).
  float fx = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = xc - fx * 0.693359375f;
  r = r + fx * 2.12194440e-4f;
  float r2 = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r2 + r + 1.0f;
  int32_t bits = ((int32_t)fx + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  float result = p * scale;
  result = x < -87.33654f ? 0.0f : result;
  result = x > 88.72283f ? std::numeric_limits<float>::infinity() : result;
  return x != x ? x : result;
}

} // namespace tgc::cpu

#endif // TGC_RUNTIME_CPU_FASTEXP_H
