// Autocast: the f32 matrix products of a forward and backward pass in bf16 mixed precision, as
// PyTorch's `with torch.autocast("cpu", dtype=torch.bfloat16):`.
//
// Under an AutocastGuard(MatmulPrecision::bf16) the ops whose op-registry entry has an `autocast`
// text (matmul, linear, linear_gelu and linear_cross_entropy: `attograd gradcheck --markdown`
// lists them under docs/derivatives.md's table) compute their forward product with
// kernels::matmul_bf16:
// both operands rounded to bf16 (ties to even), the products summed in f32, the result, the bias
// and every gradient buffer f32. Each such op records the precision in its graph node when its
// forward runs, and its two VJP products (dA = dC Bᵀ, dB = Aᵀ dC) run in that precision, with the
// incoming gradient rounded to bf16 as well: a backward() called after the guard is gone still
// matches its forward, as in PyTorch, whose bf16 product records bf16 backward kernels.
// Everything else stays f32: the parameters (master weights), their gradients, AdamW's moments,
// attention (its own fused kernel), layer norm, softmax, GELU and the loss. f64 tensors are
// never affected (gradcheck runs in f64 under any guard).
//
// Where it differs from torch.autocast: an autocast product's output stays f32 (PyTorch rounds
// it to bf16 again and hands the following ops bf16 tensors), so the only rounding is that of
// the product's operands, 2^-9 relative each, and the error of a product of K terms is at most
// about 2^-8 Σ_k |a_ik b_kj| (kernels/matmul.h, docs/02-kernels.md).
//
// The state is per thread, as grad mode (NoGradGuard) and torch.autocast's are: two threads
// that train two models (a test beside a benchmark, a page's worker) each choose their own
// precision, and no lock is taken on the hot path. The engine's kernel threads never read it:
// an op reads it once, on the thread that calls it.
#pragma once

#include <cstdint>
#include <iosfwd>

namespace attograd {

/// The precision of an f32 matrix product (matmul, linear, linear_gelu, linear_cross_entropy's
/// logits).
enum class MatmulPrecision : uint8_t {
  f32,   // kernels::matmul: operands and sums in f32 (the default)
  bf16,  // kernels::matmul_bf16: operands rounded to bf16, sums in f32
};

/// MatmulPrecision's names in the enum's order: the one list the training option
/// (`--mixed-precision`), its JSON key and messages use.
inline constexpr const char* kMatmulPrecisionNames[] = {"f32", "bf16"};
/// What each name means, in a few words (--help).
inline constexpr const char* kMatmulPrecisionDescriptions[] = {
    "every product in f32",
    "Linear and matmul products with bf16 operands and f32 sums; weights, gradients, AdamW, "
    "attention, layer norm and the loss stay f32"};

/// "f32" or "bf16".
const char* matmul_precision_name(MatmulPrecision p);
/// Prints matmul_precision_name(p) (messages, test failures).
std::ostream& operator<<(std::ostream& os, MatmulPrecision p);

/// The precision f32 products of ops called on this thread take now: bf16 inside an
/// AutocastGuard(MatmulPrecision::bf16), f32 otherwise (and by default). Thread-local.
MatmulPrecision autocast_precision();

/// Sets this thread's autocast precision for its lifetime and restores the previous one when it
/// ends, also when an exception leaves its scope. Nests: AutocastGuard(f32) inside a bf16 one
/// turns autocast off for a part (torch.autocast(enabled=False)).
///   AutocastGuard bf16(MatmulPrecision::bf16);
///   Tensor loss = model.forward(x, y).loss;  // products in bf16
///   loss.backward();                          // their VJPs in bf16, whether or not the guard is
///                                             // still there: the nodes recorded it
class AutocastGuard {
 public:
  explicit AutocastGuard(MatmulPrecision precision = MatmulPrecision::bf16);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  MatmulPrecision previous_;
};

}  // namespace attograd
