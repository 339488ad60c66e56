// Whether this build runs under AddressSanitizer, for the tests and instruments that change what
// they do there: malloc is ASan's (instruments/malloc_counter.h counts nothing), and every load is
// checked, which makes the largest kernel products minutes long (tests/kernels/matmul_test.cc runs
// fewer).
#pragma once

// gcc defines __SANITIZE_ADDRESS__; clang (before 18) answers only __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define ATTOGRAD_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTOGRAD_UNDER_ASAN 1
#endif
#endif

namespace attograd::instruments {

/// True when compiled with AddressSanitizer (scripts/sanitize.sh, scripts/fuzz.sh).
#if defined(ATTOGRAD_UNDER_ASAN)
inline constexpr bool kUnderAddressSanitizer = true;
#else
inline constexpr bool kUnderAddressSanitizer = false;
#endif

}  // namespace attograd::instruments
