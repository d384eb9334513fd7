//===- Rng.h - A seeded, serialisable random number generator -----*- C++ -*-===//
//
// xoshiro256** seeded through splitmix64. Unlike <random>'s engines and
// distributions, every draw here is specified (no implementation-defined
// distribution algorithms, no hidden cached values), so the same seed gives
// the same numbers with any standard library, and the whole state is four
// words that a checkpoint stores as text for a bit-exact resume.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CORE_RNG_H
#define TGC_RUNTIME_CORE_RNG_H

#include <cstdint>
#include <string>

namespace tgc {

class Rng {
public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }

  /// An independent stream for (seed, stream, substream), e.g. one per
  /// parameter and chunk, so results do not depend on the order or the
  /// thread that draws them.
  static Rng forStream(uint64_t seed, uint64_t stream, uint64_t substream = 0);

  void reseed(uint64_t seed);

  uint64_t next() {
    uint64_t result = rotl(s_[1] * 5, 7) * 9;
    uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  /// Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  /// Uniform integer in [0, n) without modulo bias (n > 0).
  uint64_t below(uint64_t n);

  /// Standard normal by Box-Muller; consumes exactly two draws per call.
  double normal();

  /// The state as 64 hex digits, and back; setState returns false on text
  /// that is not such a state.
  std::string state() const;
  bool setState(const std::string &text);

private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

/// 64-bit FNV-1a of a string (stable across runs and platforms).
uint64_t hashString(const std::string &text);

/// splitmix64's finaliser: a good 64-bit mix.
uint64_t mix64(uint64_t x);

} // namespace tgc

#endif // TGC_RUNTIME_CORE_RNG_H
