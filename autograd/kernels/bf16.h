// bfloat16 ("brain floating point", Google Brain; Kalamkar et al. 2019, "A Study of BFLOAT16 for
// Deep Learning Training"): the upper 16 bits of an IEEE float32. Sign, f32's 8 exponent bits
// (so f32's range, no overflow where f32 has none) and 7 stored mantissa bits (8 significant:
// neighbours 2^-7 apart in [1, 2), a relative rounding error of at most 2^-9). Two bf16 multiply
// exactly into an f32 (8 + 8 significant bits <= 24), which is why a bf16 GEMM accumulating in
// f32 loses precision only where its inputs are rounded.
//
// The scalar conversions: the specification that the SIMD packing in matmul.cc follows, the
// scalar twin's rounding (matmul_ref.h) and the tests' oracle. Kernel code, raw scalars only.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace attograd::kernels {

/// The bf16 bits nearest to x: round to nearest, ties to even; +-inf stay +-inf, a finite x
/// beyond the largest bf16 (~3.3895e38) rounds to +-inf, every NaN becomes the quiet NaN 0x7FC0.
/// Bit for bit PyTorch's `x.to(torch.bfloat16)` (c10/util/BFloat16.h, round_to_nearest_even):
/// adding 0x7FFF plus the lowest kept bit to the f32 bits carries into the kept half exactly when
/// the dropped half is above one half, or equal to it with an odd kept half.
inline uint16_t bf16_from_f32(float x) {
  if (std::isnan(x)) return 0x7FC0;  // the carry could turn a NaN's bits into an infinity or 0
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

/// The f32 of the same value (exact: bf16 is f32 with the lower 16 bits zero).
inline float f32_from_bf16(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

/// x rounded to the nearest bf16, as an f32 (PyTorch: `x.to(torch.bfloat16).float()`).
inline float round_to_bf16(float x) { return f32_from_bf16(bf16_from_f32(x)); }

}  // namespace attograd::kernels
