#include "autograd/random.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numbers>
#include <sstream>
#include <stdexcept>

namespace attograd {

void Mt19937_64::seed_with(uint64_t seed) {
  words_[0] = seed;
  for (int i = 1; i < kWords; ++i)
    words_[i] =
        6364136223846793005ULL * (words_[i - 1] ^ (words_[i - 1] >> 62)) + static_cast<uint64_t>(i);
  next_ = kWords;
}

void Mt19937_64::twist() {
  constexpr int kShift = 156;  // m
  constexpr uint64_t kUpper = ~uint64_t{0} << 31, kLower = ~kUpper;
  constexpr uint64_t kMatrix = 0xB5026F5AA96619E9ULL;
  const auto mix = [&](uint64_t upper_of, uint64_t lower_of, uint64_t with) {
    const uint64_t y = (upper_of & kUpper) | (lower_of & kLower);
    return with ^ (y >> 1) ^ ((y & 1) ? kMatrix : 0);
  };
  for (int k = 0; k < kWords - kShift; ++k)
    words_[k] = mix(words_[k], words_[k + 1], words_[k + kShift]);
  for (int k = kWords - kShift; k < kWords - 1; ++k)
    words_[k] = mix(words_[k], words_[k + 1], words_[k + kShift - kWords]);
  words_[kWords - 1] = mix(words_[kWords - 1], words_[0], words_[kShift - 1]);
  next_ = 0;
}

Generator& default_generator() {
  static Generator gen;
  return gen;
}

void manual_seed(uint64_t seed) { default_generator().reseed(seed); }

std::string Mt19937_64::text() const {
  std::ostringstream os;
  for (int i = 0; i < kWords; ++i) os << words_[i] << ' ';
  os << next_;
  return os.str();
}

void Mt19937_64::read(std::istream& is) {
  uint64_t words[kWords];
  int next = -1;
  for (uint64_t& w : words) is >> w;
  is >> next;
  if (is.fail() || next < 0 || next > kWords) {
    is.setstate(std::ios::failbit);
    return;
  }
  std::copy(words, words + kWords, words_);
  next_ = next;
}

uint64_t Generator::below(uint64_t n) {
  if (n == 0) throw std::invalid_argument("Generator::below: n must be positive");
  // Rejection sampling removes the modulo bias of engine_() % n.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t r;
  do r = engine_();
  while (r >= limit);
  return r % n;
}

double Generator::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  // Box-Muller: two uniforms give two independent normals; keep the second for the next call.
  const double u1 = 1.0 - uniform();  // (0, 1]: log(0) is never taken
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  spare_ = r * std::sin(2.0 * std::numbers::pi * u2);
  has_spare_ = true;
  return r * std::cos(2.0 * std::numbers::pi * u2);
}

std::string Generator::state() const {
  std::ostringstream os;
  os.precision(17);
  os << engine_.text() << ' ' << has_spare_ << ' ' << std::hexfloat << spare_;
  return os.str();
}

void Generator::set_state(const std::string& state) {
  std::istringstream is(state);
  Mt19937_64 engine;
  bool has_spare = false;
  std::string spare_text;
  engine.read(is);
  is >> has_spare >> spare_text;
  // The state comes from a file: all of it must parse, the spare normal included (strtod
  // reads the hexfloat exactly), with nothing after it.
  char* end = nullptr;
  const double spare = is.fail() ? 0.0 : std::strtod(spare_text.c_str(), &end);
  if (is.fail() || end != spare_text.c_str() + spare_text.size() || !std::isfinite(spare) ||
      !(is >> std::ws).eof())
    throw std::invalid_argument("Generator::set_state: malformed generator state");
  engine_ = engine;
  has_spare_ = has_spare;
  spare_ = spare;
}

}  // namespace attograd
