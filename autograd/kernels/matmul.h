// Matrix multiply C (M, N) = op(A) (M, K) @ op(B) (K, N), where op is identity or transpose.
//
// One kernel serves the forward and both backward products, because the VJP of C = A B is
// dA = dC Bᵀ and dB = Aᵀ dC: the same product with the transpose flags flipped. The flags let
// a transposed VIEW (a Tensor whose last two strides are swapped) go straight in, no copy.
// Scalar reference twin: matmul_ref.h.
//
// matmul_bf16 is the same product in bf16 mixed precision (bf16.h): the operands rounded to bf16
// as they are packed, their products summed in f32. On a CPU with AVX512-BF16 its inner loop is
// vdpbf16ps, two bf16 multiply-adds per f32 lane per instruction where an FMA does one.
//
// matmul_gelu and matmul_bf16_gelu are the forward of GPT-2's c_fc with its GELU fused in.
#pragma once

#include <cstddef>
#include <cstdint>

namespace attograd::kernels {

/// The k's of one cache block of the packed kernel: each C[i, j] is summed in blocks of this many
/// k's in order, then the blocks' sums in order. Fixed, not read from the caches, because it
/// decides the rounding: the same bits on every machine of one SIMD target.
inline constexpr int64_t kMatmulBlockK = 256;

/// The packed kernel's cache blocking on this CPU, as `attograd info` prints it.
struct MatmulBlocking {
  int64_t kc;  // k's per block: kMatmulBlockK
  // Sizes as Linux reports them (/sys/devices/system/cpu/cpu0/cache), else sysconf, else the
  // Zen 5's:
  size_t l1d_bytes;    // the core's L1 data cache (48 KiB where the system says nothing)
  size_t l2_bytes;     // the core's L2 (1 MiB where the system says nothing)
  size_t l3_bytes;     // one L3 instance (32 MiB where the system says nothing): an operand
                       // packed once for several uses must fit in half of it
  size_t block_bytes;  // packed bytes of an A block (MC x KC) and of a B panel (KC x NC): half of
                       // the L2 each, between 64 KiB and 4 MiB
};

/// matmul's and matmul_bf16's blocks, from the caches' sizes the OS reports (asked once). MC and
/// NC (rows of an A block, columns of a B panel: block_bytes over a packed line of kc k's) change
/// no sum, so results do not depend on them: only the speed does.
MatmulBlocking matmul_blocking();

/// For tests and benchmarks: block as if the core's L2 held `bytes` (0: the CPU's own again).
/// Results stay the same bits (see matmul_blocking); not meant to change while a matmul runs.
void set_matmul_l2_bytes(size_t bytes);

/// C (M, N) = op(A) @ op(B) + bias, or C += op(A) @ op(B) + bias when accumulate is true.
///   a: row-major (M, K) when !a_trans, or row-major (K, M) when a_trans (A is its transpose).
///   b: row-major (K, N) when !b_trans, or row-major (N, K) when b_trans (the nn.Linear weight
///      layout: y = x Wᵀ reads W's rows contiguously).
///   c: row-major (M, N); must not alias a or b. K may be 0 (C = bias or 0, or C += bias).
///   bias: (N,) added to every row of the product, or null (the fused bias of nn.Linear).
/// Packed and cache-blocked (GotoBLAS/BLIS); C is split over the engine's threads
/// (thread_pool.h) when M * N * K is large enough to pay for one. Each C[i, j] is summed in blocks
/// of kMatmulBlockK (256) k's in order, so the result is the same for any number of threads and
/// any cache size (but a K > 256 sum is not the plain left-to-right sum of the reference twin:
/// compare with a tolerance).
template <typename T>
void matmul(T* c, const T* a, const T* b, int64_t M, int64_t K, int64_t N, bool a_trans,
            bool b_trans, bool accumulate, const T* bias = nullptr);

/// y (M, N) = gelu(h), h = op(A) @ op(B) + bias, and slope (M, N) = gelu'(h) when slope is not
/// null: GPT-2's c_fc and its GELU (tanh form, gelu.h) as one product, for the fused op
/// linear_gelu. Each tile of h gets GELU as soon as its last k block is stored, while it is in
/// the L1, instead of a second pass over h in memory; and gelu'(h) is all a VJP needs of h, so
/// the op saves the slope and GELU's tanh is computed once a step instead of in both passes.
/// h is summed as matmul sums it (the same blocks, tiles and threads), then y and slope take
/// gelu.cc's formulas (gelu-inl.h). Layouts, bias and K = 0 as matmul; y and slope must not
/// alias a, b or each other; y is overwritten (no accumulate).
template <typename T>
void matmul_gelu(T* y, T* slope, const T* a, const T* b, int64_t M, int64_t K, int64_t N,
                 bool a_trans, bool b_trans, const T* bias = nullptr);

/// C (M, N) (+)= bf16(op(A)) @ bf16(op(B)) + bias in bf16 mixed precision, all buffers f32, same
/// layouts, aliasing rule and K = 0 as matmul: every element of A and B is rounded to the nearest
/// bf16 (bf16_from_f32: ties to even, as PyTorch's `.to(torch.bfloat16)`), the products (exact
/// in f32) are summed in f32 in the same blocks of 256 k's, and C, the bias and the accumulation
/// stay f32 (unlike PyTorch's autocast, whose product is rounded to bf16 again).
/// Where the dispatched target is AVX3 and the CPU has AMX-BF16 (Intel since Sapphire Rapids;
/// matmul_bf16_uses_amx), the products run on AMX's tile unit (tdpbf16ps: a 16 x 16 f32 tile
/// += 16 x 32 bf16 times 32 x 16 bf16, 16,384 flops an instruction); else, where the CPU has
/// AVX512-BF16 (matmul_bf16_uses_avx512_bf16), on vdpbf16ps. Both flush subnormal inputs and
/// results to zero (|x| < 1.2e-38) and add the two products of a pair of k's in their own order;
/// on every other target the bf16 values are widened to f32 and fed to FMAs, which
/// gives the scalar twin's sum exactly for K <= 256. Every shape takes the packed kernel (no
/// few-row or thin path: those would need their own rounding), so M <= 4 or N < 32 cost more
/// than with matmul. Results do not depend on the number of threads.
void matmul_bf16(float* c, const float* a, const float* b, int64_t M, int64_t K, int64_t N,
                 bool a_trans, bool b_trans, bool accumulate, const float* bias = nullptr);

/// matmul_gelu in matmul_bf16's precision: h = bf16(op(A)) @ bf16(op(B)) + bias summed in f32
/// as matmul_bf16 sums it, then y = gelu(h) and slope = gelu'(h) in f32, as matmul_gelu.
void matmul_bf16_gelu(float* y, float* slope, const float* a, const float* b, int64_t M, int64_t K,
                      int64_t N, bool a_trans, bool b_trans, const float* bias = nullptr);

/// Whether matmul_bf16 runs on AMX here: the dispatched Highway target is AVX3, the CPU has
/// AMX-TILE and AMX-BF16 (cpuid, asked once), Linux granted the process the tiles' register
/// state (arch_prctl ARCH_REQ_XCOMP_PERM, asked once when the library loads: Linux 5.16 and
/// later; an older kernel or another OS leaves AMX off), and allow_amx has not turned it off.
bool matmul_bf16_uses_amx();

/// Whether matmul_bf16 runs on vdpbf16ps here: not on AMX (above), the dispatched Highway target
/// is AVX3, the CPU has AVX512-BF16 (asked once, `__builtin_cpu_supports`), and
/// allow_avx512_bf16 has not turned it off. Otherwise it runs on the portable widening path.
bool matmul_bf16_uses_avx512_bf16();

/// For tests and benchmarks: false makes matmul_bf16 leave AMX out (then vdpbf16ps or the
/// widening path run, as above) so that every path can be checked and timed on one machine; true
/// (the default) allows it again. Not meant to change while a matmul_bf16 runs.
void allow_amx(bool allowed);

/// For tests and benchmarks: false makes matmul_bf16 take the portable widening path even where
/// vdpbf16ps is available, so that both paths can be checked and timed on one machine; true (the
/// default) allows it again. Not meant to change while a matmul_bf16 runs.
void allow_avx512_bf16(bool allowed);

}  // namespace attograd::kernels
