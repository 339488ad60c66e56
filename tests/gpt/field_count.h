// The number of fields of an aggregate struct, counted by the compiler, so that a test can check
// that a list of a struct's fields (its JSON keys) names every one of them: a field added to the
// struct and not to the list fails the test.
#pragma once

#include <cstddef>
#include <utility>

namespace attograd::testing {

namespace detail {
// Converts to any field type; only used unevaluated, in a requires-expression.
struct AnyField {
  template <typename T>
  operator T() const;
};

template <typename S, size_t... I>
constexpr bool brace_initializable(std::index_sequence<I...>) {
  return requires { S{(static_cast<void>(I), AnyField{})...}; };
}
}  // namespace detail

/// The number of fields of the aggregate S: the most initializers S{...} takes. Each field must
/// be initializable from one value (no nested aggregates or C arrays, which brace elision would
/// count field by field).
template <typename S, size_t N = 0>
constexpr size_t field_count() {
  if constexpr (detail::brace_initializable<S>(std::make_index_sequence<N + 1>()))
    return field_count<S, N + 1>();
  else
    return N;
}

}  // namespace attograd::testing
