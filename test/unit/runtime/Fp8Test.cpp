//===- Fp8Test.cpp - The OCP FP8 conversions, against the spec ---*- C++
//-*-===//
//
// floatToE4M3/E5M2 and back against a reference written from the OCP 8-bit
// floating point specification (v1.0), not from the conversions: each
// code's value from the spec's formula and its named points (the largest
// finite, the smallest normal and subnormal, the NaNs and E5M2's
// infinities); each float's code as the nearest finite code by brute force
// over all 256 (a tie to the code whose last bit is 0, as round to nearest
// even), saturated past the largest finite. The floats tried: every code's
// value, the midpoints between neighbours and the floats next to them, and
// a million random ones over every binade.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/DType.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <limits>
#include <random>
#include <vector>

namespace {

/// A format as the spec defines it.
struct Spec {
  const char *name;
  int exponentBits, mantissaBits, bias;
  bool ieeeSpecials; // E5M2: exponent all ones is Inf/NaN; E4M3: only
                     // S.1111.111 is NaN
  uint8_t (*encode)(float);
  float (*decode)(uint8_t);
};

const Spec kSpecs[] = {
    {"E4M3", 4, 3, 7, false, tgc::floatToE4M3, tgc::e4m3ToFloat},
    {"E5M2", 5, 2, 15, true, tgc::floatToE5M2, tgc::e5m2ToFloat},
};

/// The spec's value of `code`: (-1)^S 2^(E - bias) (1 + M / 2^m), or for
/// E = 0, (-1)^S 2^(1 - bias) (M / 2^m).
double specValue(const Spec &s, uint8_t code) {
  int sign = code >> 7;
  int e = (code >> s.mantissaBits) & ((1 << s.exponentBits) - 1);
  int m = code & ((1 << s.mantissaBits) - 1);
  int allOnes = (1 << s.exponentBits) - 1;
  double v;
  if (s.ieeeSpecials && e == allOnes)
    v = m == 0 ? INFINITY : NAN;
  else if (!s.ieeeSpecials && e == allOnes && m == (1 << s.mantissaBits) - 1)
    v = NAN;
  else if (e == 0)
    v = std::pow(2.0, 1 - s.bias) * (m / std::pow(2.0, s.mantissaBits));
  else
    v = std::pow(2.0, e - s.bias) * (1 + m / std::pow(2.0, s.mantissaBits));
  return sign ? -v : v;
}

/// The code of `x` by brute force over `table` (specValue of each code):
/// the nearest finite code (the even one on a tie), saturated; NaN is 0x7f.
uint8_t referenceCode(const std::vector<double> &table, float x) {
  if (std::isnan(x))
    return 0x7f;
  double best = INFINITY;
  int bestCode = -1;
  bool negative = std::signbit(x);
  double largest = 0;
  for (int c = 0; c < 128; ++c)
    if (std::isfinite(table[c]))
      largest = std::max(largest, table[c]);
  for (int c = 0; c < 128; ++c) {
    uint8_t code = static_cast<uint8_t>(negative ? c | 0x80 : c);
    double v = table[code];
    if (!std::isfinite(v))
      continue;
    double d = std::fabs(v - static_cast<double>(x));
    // Past the largest finite (infinity included) it saturates to the
    // largest magnitude; the distances alone would tie in double there.
    if (std::fabs(x) >= largest)
      d = -std::fabs(v);
    if (d < best || (d == best && (code & 1) == 0)) {
      best = d;
      bestCode = code;
    }
  }
  return static_cast<uint8_t>(bestCode);
}

TEST(Fp8, CodesHaveTheSpecsValues) {
  for (const Spec &s : kSpecs)
    for (int c = 0; c < 256; ++c) {
      double want = specValue(s, static_cast<uint8_t>(c));
      float got = s.decode(static_cast<uint8_t>(c));
      if (std::isnan(want))
        EXPECT_TRUE(std::isnan(got)) << s.name << " code " << c;
      else
        EXPECT_EQ(static_cast<double>(got), want) << s.name << " code " << c;
    }
}

TEST(Fp8, NamedPointsOfTheSpec) {
  EXPECT_EQ(tgc::e4m3ToFloat(0x7e), 448.0f);
  EXPECT_EQ(tgc::e4m3ToFloat(0xfe), -448.0f);
  EXPECT_EQ(tgc::e4m3ToFloat(0x08), std::ldexp(1.0f, -6));
  EXPECT_EQ(tgc::e4m3ToFloat(0x01), std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isnan(tgc::e4m3ToFloat(0x7f)));
  EXPECT_TRUE(std::isnan(tgc::e4m3ToFloat(0xff)));
  EXPECT_EQ(tgc::e4m3ToFloat(0x78), 256.0f); // S.1111.000 is a number
  EXPECT_EQ(tgc::e5m2ToFloat(0x7b), 57344.0f);
  EXPECT_EQ(tgc::e5m2ToFloat(0x04), std::ldexp(1.0f, -14));
  EXPECT_EQ(tgc::e5m2ToFloat(0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(tgc::e5m2ToFloat(0x7c), INFINITY);
  EXPECT_EQ(tgc::e5m2ToFloat(0xfc), -INFINITY);
  for (uint8_t nan : {0x7d, 0x7e, 0x7f, 0xfd, 0xfe, 0xff})
    EXPECT_TRUE(std::isnan(tgc::e5m2ToFloat(nan)));
  EXPECT_TRUE(std::signbit(tgc::e4m3ToFloat(0x80)));
  EXPECT_EQ(tgc::floatToE4M3(-0.0f), 0x80);
  EXPECT_EQ(tgc::floatToE5M2(-0.0f), 0x80);
}

TEST(Fp8, SaturatesAndKeepsNaN) {
  EXPECT_EQ(tgc::floatToE4M3(INFINITY), 0x7e);
  EXPECT_EQ(tgc::floatToE4M3(-INFINITY), 0xfe);
  EXPECT_EQ(tgc::floatToE4M3(1e6f), 0x7e);
  EXPECT_EQ(tgc::floatToE4M3(464.0f), 0x7e); // the tie above 448, too
  EXPECT_EQ(tgc::floatToE5M2(INFINITY), 0x7b);
  EXPECT_EQ(tgc::floatToE5M2(-1e9f), 0xfb);
  EXPECT_EQ(tgc::floatToE4M3(NAN), 0x7f);
  EXPECT_EQ(tgc::floatToE5M2(NAN), 0x7f);
}

TEST(Fp8, RoundsToNearestEvenAsTheReference) {
  std::mt19937 rng(20261202);
  for (const Spec &s : kSpecs) {
    std::vector<float> tries;
    std::vector<float> values;
    for (int c = 0; c < 128; ++c)
      if (double v = specValue(s, static_cast<uint8_t>(c)); std::isfinite(v))
        values.push_back(static_cast<float>(v));
    for (size_t i = 0; i < values.size(); ++i) {
      for (float v : {values[i], -values[i]})
        tries.push_back(v);
      if (i + 1 < values.size()) {
        float mid = (values[i] + values[i + 1]) / 2; // exact in float
        for (float v :
             {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)})
          for (float signed_ : {v, -v})
            tries.push_back(signed_);
      }
    }
    // Past the largest finite and its tie, and random floats of every
    // binade from below the smallest subnormal to past the largest.
    for (float v : {values.back() * 1.03125f, values.back() * 2, 3e38f})
      tries.push_back(v);
    std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
    std::uniform_int_distribution<int> exponent(-30, 20), sign(0, 1);
    for (int i = 0; i < 1000000; ++i) {
      float v = std::ldexp(mantissa(rng), exponent(rng));
      tries.push_back(sign(rng) ? -v : v);
    }
    std::vector<double> table(256);
    for (int c = 0; c < 256; ++c)
      table[c] = specValue(s, static_cast<uint8_t>(c));
    int wrong = 0;
    for (float x : tries) {
      uint8_t want = referenceCode(table, x), got = s.encode(x);
      if (want != got && ++wrong <= 5)
        ADD_FAILURE() << s.name << ": " << x << " (" << std::hexfloat << x
                      << std::defaultfloat << ") -> 0x" << std::hex << int(got)
                      << ", the spec's nearest is 0x" << int(want);
    }
    EXPECT_EQ(wrong, 0) << s.name << " of " << tries.size() << " floats";
  }
}

TEST(Fp8, StoreFloatsConverts) {
  const float src[] = {1.0f, -2.5f, 1000.0f, 0.001f};
  uint8_t e4m3[4], e5m2[4];
  tgc::storeFloats(src, 4, tgc::DType::F8E4M3, e4m3);
  tgc::storeFloats(src, 4, tgc::DType::F8E5M2, e5m2);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(e4m3[i], tgc::floatToE4M3(src[i]));
    EXPECT_EQ(e5m2[i], tgc::floatToE5M2(src[i]));
  }
  EXPECT_EQ(tgc::e4m3ToFloat(e4m3[2]), 448.0f); // saturated
}

} // namespace
