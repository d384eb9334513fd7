//===- Rng.cpp - A seeded, serialisable random number generator ---*- C++ -*-===//

#include "runtime/core/Rng.h"

#include <cmath>
#include <cstdio>

namespace tgc {

uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

uint64_t hashString(const std::string &text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

void Rng::reseed(uint64_t seed) {
  uint64_t x = seed;
  for (uint64_t &word : s_) {
    x += 0x9e3779b97f4a7c15ULL;
    word = mix64(x);
  }
}

Rng Rng::forStream(uint64_t seed, uint64_t stream, uint64_t substream) {
  return Rng(mix64(mix64(seed ^ 0x5851f42d4c957f2dULL) + stream) ^
             mix64(substream + 0x2545f4914f6cdd1dULL));
}

uint64_t Rng::below(uint64_t n) {
  // Reject the top partial copy of [0, n) so every value is equally likely.
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do {
    x = next();
  } while (x >= limit);
  return x % n;
}

double Rng::normal() {
  double u1 = 1.0 - uniform(); // (0, 1]: log is finite
  double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

std::string Rng::state() const {
  char buffer[65];
  std::snprintf(buffer, sizeof(buffer), "%016llx%016llx%016llx%016llx",
                static_cast<unsigned long long>(s_[0]),
                static_cast<unsigned long long>(s_[1]),
                static_cast<unsigned long long>(s_[2]),
                static_cast<unsigned long long>(s_[3]));
  return buffer;
}

bool Rng::setState(const std::string &text) {
  if (text.size() != 64)
    return false;
  uint64_t words[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < 64; ++i) {
    char c = text[i];
    uint64_t digit;
    if (c >= '0' && c <= '9')
      digit = c - '0';
    else if (c >= 'a' && c <= 'f')
      digit = c - 'a' + 10;
    else
      return false;
    words[i / 16] = (words[i / 16] << 4) | digit;
  }
  if ((words[0] | words[1] | words[2] | words[3]) == 0)
    return false; // xoshiro's one forbidden state
  for (int i = 0; i < 4; ++i)
    s_[i] = words[i];
  return true;
}

} // namespace tgc
