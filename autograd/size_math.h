// Checked arithmetic on sizes: element counts, byte counts, products of dimensions.
//
// A size that wraps is the worst kind of bug: T * C computed modulo 2^64 allocates a small
// buffer that the loops then overrun. Every product or sum of sizes that is not already bounded
// by a buffer that exists goes through checked_mul / checked_add (built on the compiler's
// __builtin_mul_overflow / __builtin_add_overflow), which throw std::overflow_error naming what
// was being computed and both operands:
//
//   sinusoidal_table T * C: 3074457345618258603 * 6 exceeds 9223372036854775807
//
// `what` is a string, or a callable returning one when the description costs something to build
// (a shape printed in full): it is only called on overflow.
#pragma once

#include <concepts>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

namespace attograd {

namespace detail {

/// Throws std::overflow_error "<what>: <a> <op> <b> exceeds <max>".
[[noreturn]] void throw_size_overflow(const std::string& what, const char* op, const std::string& a,
                                      const std::string& b, const std::string& max);

template <std::integral I, typename What>
[[noreturn]] void size_overflow(const What& what, const char* op, I a, I b) {
  std::string description;
  if constexpr (std::is_invocable_v<const What&>)
    description = what();
  else
    description = std::string_view(what);
  throw_size_overflow(description, op, std::to_string(a), std::to_string(b),
                      std::to_string(std::numeric_limits<I>::max()));
}

}  // namespace detail

/// a * b for sizes of one integer type (int64_t, size_t, ...). Throws std::overflow_error
/// naming `what`, a and b when the product does not fit the type.
template <std::integral I, typename What>
I checked_mul(I a, I b, const What& what) {
  I out;
  if (__builtin_mul_overflow(a, b, &out)) [[unlikely]]
    detail::size_overflow(what, "*", a, b);
  return out;
}

/// a + b for sizes of one integer type. Throws std::overflow_error naming `what`, a and b when
/// the sum does not fit the type.
template <std::integral I, typename What>
I checked_add(I a, I b, const What& what) {
  I out;
  if (__builtin_add_overflow(a, b, &out)) [[unlikely]]
    detail::size_overflow(what, "+", a, b);
  return out;
}

}  // namespace attograd
