// The one seeded random generator: the same seed gives the same run, on any machine.
//
// std::mt19937_64's output sequence is fixed by the C++ standard, but std::normal_distribution
// is not (libstdc++ and libc++ differ), so the distributions are written out here. So is the
// engine itself (Mt19937_64 below): the standard fixes its outputs but not how its state is held
// between them, and the text of that state, which checkpoints store, differs between libstdc++
// (the native build) and libc++ (the WebAssembly build), so a checkpoint written by one could not
// be resumed or opened by the other.
#pragma once

#include <cstdint>
#include <istream>
#include <string>

namespace attograd {

/// The 64-bit Mersenne Twister of the C++ standard ([rand.predef]: the outputs of
/// std::mt19937_64, the 10000th of a default-seeded one 9981545732273789042), held as libstdc++
/// holds it: 312 words twisted a block at a time and the index of the next one. Its text, the
/// 312 words and the index separated by spaces, is libstdc++'s text for std::mt19937_64, which
/// every checkpoint written so far holds, and is the same in every build.
class Mt19937_64 {
 public:
  static constexpr int kWords = 312;
  explicit Mt19937_64(uint64_t seed = 5489) { seed_with(seed); }
  void seed_with(uint64_t seed);
  uint64_t operator()() {
    if (next_ >= kWords) twist();
    uint64_t z = words_[next_++];
    z ^= (z >> 29) & 0x5555555555555555ULL;
    z ^= (z << 17) & 0x71D67FFFEDA60000ULL;
    z ^= (z << 37) & 0xFFF7EEE000000000ULL;
    return z ^ (z >> 43);
  }
  /// "w0 w1 ... w311 index", decimal.
  std::string text() const;
  /// Reads text() from `is`; sets is's failbit (and changes nothing) when it is not 312 words
  /// and an index in [0, 312].
  void read(std::istream& is);

 private:
  void twist();
  uint64_t words_[kWords];
  int next_ = kWords;
};

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
    engine_.seed_with(seed);
    has_spare_ = false;
  }

  /// The full engine state as text, for checkpoints (bit-exact resume).
  std::string state() const;
  /// Restores a state produced by state(); throws std::invalid_argument if malformed.
  void set_state(const std::string& state);

 private:
  Mt19937_64 engine_;
  bool has_spare_ = false;
  double spare_ = 0;
};

/// The process's default generator (torch.default_generator): what draws a layer's init when
/// the layer is built without a Generator of its own (`nn::Linear(in, out)`). Seeded 1337 at
/// start, as Generator(), so a program that never seeds still runs the same every time. One per
/// process and not thread-safe: build such layers on one thread, or pass each its own Generator.
Generator& default_generator();

/// Reseeds default_generator() (torch.manual_seed(seed)).
void manual_seed(uint64_t seed);

}  // namespace attograd
