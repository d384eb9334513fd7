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
// Branch-free on purpose: GCC keeps -ftrapping-math by default and will not
// if-convert a select whose arm is a floating-point operation it sank into
// the branch ("control flow in loop"), so the patches at the ends of the
// range are bit masks on the result, and every loop that calls fastExp
// vectorizes (test/unit/cpu/FastExpTest.cpp checks the masks give the same
// bits as the selects they replace).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CPU_FASTEXP_H
#define TGC_RUNTIME_CPU_FASTEXP_H

#include <cstdint>
#include <cstring>

namespace tgc::cpu {

namespace detail {
inline uint32_t floatBits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  return bits;
}
inline float bitsFloat(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof(x));
  return x;
}
} // namespace detail

/// exp(hi + lo) for a `lo` far smaller than one ulp of `hi` would resolve:
/// the range reduction is on `hi` alone and `lo` joins the reduced argument,
/// so an argument known to more than float precision (exp(-x^2 / 2) with
/// x^2 split in two) keeps its accuracy. fastExp(x) is fastExpSplit(x, 0).
/// The ends are those of `hi`: 0 below -87.33654, infinity above 88.72283,
/// NaN for a NaN `hi`.
inline float fastExpSplit(float hi, float lo) {
  // Clamped so that 2^n stays a normal float (NaN goes to the low end); the
  // ends are patched below. Masks here too: with selects, GCC threads the
  // three cases and computes the polynomial on one path only.
  uint32_t aboveLow = hi > -87.33654f ? 0xFFFFFFFFu : 0u;
  uint32_t belowHigh = hi < 88.0f ? 0xFFFFFFFFu : 0u;
  uint32_t xcBits = (detail::floatBits(hi) & aboveLow) |
                    (detail::floatBits(-87.33654f) & ~aboveLow);
  xcBits = (xcBits & (belowHigh | ~aboveLow)) |
           (detail::floatBits(88.0f) & ~(belowHigh | ~aboveLow));
  float xc = detail::bitsFloat(xcBits);
  // Round to nearest by the 1.5 * 2^23 trick (no libm call, vectorizes).
  float fx = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = xc - fx * 0.693359375f;
  r = r + fx * 2.12194440e-4f;
  r = r + lo;
  float r2 = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r2 + r + 1.0f;
  float scale = detail::bitsFloat((uint32_t)((int32_t)fx + 127) << 23);
  uint32_t result = detail::floatBits(p * scale);
  // The ends as masks (see the file comment): 0 below the range, infinity
  // above it, the NaN itself for a NaN.
  uint32_t inRange = hi >= -87.33654f ? 0xFFFFFFFFu : 0u;
  uint32_t above = hi > 88.72283f ? 0xFFFFFFFFu : 0u;
  uint32_t nan = hi != hi ? 0xFFFFFFFFu : 0u;
  result &= inRange;
  result = (result & ~above) | (0x7F800000u & above);
  result = (result & ~nan) | (detail::floatBits(hi) & nan);
  return detail::bitsFloat(result);
}

inline float fastExp(float x) { return fastExpSplit(x, 0.0f); }

} // namespace tgc::cpu

#endif // TGC_RUNTIME_CPU_FASTEXP_H
