// The one seeded random generator: the same seed gives the same run, on any machine.
//
// std::mt19937_64's output sequence is fixed by the C++ standard, but std::normal_distribution
// is not (libstdc++ and libc++ differ), so the distributions are written out here.
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace attograd {

/// Seeded pseudo-random source (Mersenne Twister 64) with portable uniform and normal draws.
class Generator {
 public:
  explicit Generator(uint64_t seed = 1337) : engine_(seed) {}

  /// Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  /// Uniform integer in [0, n); n must be positive.
  uint64_t below(uint64_t n);
  /// Standard normal N(0, 1) by the Box-Muller transform.
  double normal();

  /// Restarts the stream as a new Generator(seed) would.
  void reseed(uint64_t seed) {
    engine_.seed(seed);
    has_spare_ = false;
  }

  /// The full engine state as text, for checkpoints (bit-exact resume).
  std::string state() const;
  /// Restores a state produced by state(); throws std::invalid_argument if malformed.
  void set_state(const std::string& state);

 private:
  std::mt19937_64 engine_;
  bool has_spare_ = false;
  double spare_ = 0;
};

}  // namespace attograd
