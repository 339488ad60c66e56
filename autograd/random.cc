#include "autograd/random.h"

#include <cmath>
#include <cstdlib>
#include <numbers>
#include <sstream>
#include <stdexcept>

namespace attograd {

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
  os << engine_ << ' ' << has_spare_ << ' ' << std::hexfloat << spare_;
  return os.str();
}

void Generator::set_state(const std::string& state) {
  std::istringstream is(state);
  std::mt19937_64 engine;
  bool has_spare = false;
  std::string spare_text;
  is >> engine >> has_spare >> spare_text;
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
