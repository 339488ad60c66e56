// Tests autograd/kernels/bf16.h, the scalar f32 <-> bf16 conversions: rounding to nearest with
// ties to even at the edges of the 16 dropped bits, the special values, and bits PyTorch gave for
// random floats. (The SIMD rounding inside matmul_bf16 is tested against these in matmul_test.)
#define BOOST_TEST_MODULE bf16
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "autograd/kernels/bf16.h"

namespace k = attograd::kernels;

namespace {

float from_bits(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

struct Case {
  uint32_t f32;
  uint16_t bf16;
  const char* what;
};

}  // namespace

// 1 has bf16 bits 0x3F80; its bf16 neighbours are 2^-7 apart, so 2^-8 is half way.
BOOST_AUTO_TEST_CASE(bf16_rounds_to_nearest_ties_to_even) {
  const Case cases[] = {
      {0x3F800000, 0x3F80, "1"},
      {0x3F808000, 0x3F80, "1 + 2^-8: a tie, to the even 1"},
      {0x3F808001, 0x3F81, "1 + 2^-8 + 2^-23: just above the tie, up"},
      {0x3F807FFF, 0x3F80, "just below the tie, down"},
      {0x3F80C000, 0x3F81, "1 + 3 2^-9: above the tie, up to 1 + 2^-7"},
      {0x3F818000, 0x3F82, "1 + 2^-7 + 2^-8: a tie, to the even 1 + 2^-6"},
      {0xBF80C000, 0xBF81, "-(1 + 3 2^-9): the same, negative"},
      {0x3DCCCCCD, 0x3DCD, "0.1f -> 0.10009765625"},
      {0x3FFFFFFF, 0x4000, "just below 2: carries into the exponent"},
      {0x80000000, 0x8000, "-0 keeps its sign"},
      {0x00000001, 0x0000, "the smallest subnormal, to 0"},
      {0x00018000, 0x0002, "a subnormal tie, to even"},
      {0x7F7F0000, 0x7F7F, "the largest bf16 stays"},
      {0x7F7F8000, 0x7F80, "half way above the largest bf16: a tie, to the even infinity"},
      {0x7F7FFFFF, 0x7F80, "the largest f32 overflows to infinity"},
      {0x7F800000, 0x7F80, "+inf"},
      {0xFF800000, 0xFF80, "-inf"},
  };
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT(c.what) { BOOST_TEST(k::bf16_from_f32(from_bits(c.f32)) == c.bf16); }
  }
  BOOST_TEST(k::f32_from_bf16(0x3F81) == 1.0078125f);
  BOOST_TEST(k::round_to_bf16(0.1f) == 0.10009765625f);
}

// Every NaN, quiet or signalling, either sign, becomes PyTorch's quiet NaN 0x7FC0 (adding the
// rounding bias to a NaN's bits could otherwise give an infinity or -0).
BOOST_AUTO_TEST_CASE(bf16_nan_stays_nan) {
  for (const uint32_t nan : {0x7FC00000u, 0x7F800001u, 0x7FFFFFFFu, 0xFFFFFFFFu, 0xFF800001u}) {
    BOOST_TEST_CONTEXT("f32 bits 0x" << std::hex << nan) {
      BOOST_TEST(k::bf16_from_f32(from_bits(nan)) == 0x7FC0);
      BOOST_TEST(std::isnan(k::round_to_bf16(from_bits(nan))));
    }
  }
}

// torch.randn(8, generator=torch.Generator().manual_seed(7)) * [1, 10, 100, 1e-3, 1e5, 1e-20,
// 3e38, 0.5], and the bits of its .to(torch.bfloat16).
BOOST_AUTO_TEST_CASE(bf16_matches_pytorch) {
  const uint32_t f32[] = {0xbe165174, 0x40fb90b2, 0x42bd5d44, 0xba920f2f,
                          0x48251dc1, 0x9e290739, 0xfea08689, 0x3f1dbed1};
  const uint16_t torch_bf16[] = {0xbe16, 0x40fc, 0x42bd, 0xba92, 0x4825, 0x9e29, 0xfea1, 0x3f1e};
  for (int i = 0; i < 8; ++i) BOOST_TEST(k::bf16_from_f32(from_bits(f32[i])) == torch_bf16[i]);
}

// Over random normal floats: the result is the nearer of the two bf16 around x (at most half a
// bf16 step, 2^-8 of x's binade, away), and rounding twice changes nothing.
BOOST_AUTO_TEST_CASE(bf16_is_the_nearest_and_idempotent) {
  std::mt19937 rng(5);
  // positive normals below the largest bf16 (above it, ties and beyond round to infinity)
  std::uniform_int_distribution<uint32_t> bits(0x00800000u, 0x7F7F0000u);
  for (int i = 0; i < 100000; ++i) {
    const float x = from_bits(bits(rng)) * (i % 2 == 0 ? 1.0f : -1.0f);
    const float r = k::round_to_bf16(x);
    const float step = std::ldexp(1.0f, std::ilogb(x) - 7);  // bf16 spacing in x's binade
    if (!(std::abs(r - x) <= step / 2) || k::round_to_bf16(r) != r) {
      BOOST_ERROR("x = " << x << " rounds to " << r << ", bf16 step " << step);
      break;
    }
  }
  BOOST_TEST(true);
}
