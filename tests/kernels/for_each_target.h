// Runs a test body once per Highway SIMD target, so that every compiled variant of every kernel
// is checked, not only the one this CPU would pick.
#pragma once

#include <cstdint>

#include <boost/test/unit_test.hpp>

#include "hwy/targets.h"

namespace attograd::kernels::testing {

/// Calls f() once for every target that is both compiled into the kernels and supported by this
/// CPU, best first (e.g. AVX3, AVX2, SSE4, SSSE3, SCALAR). hwy::SetSupportedTargetsForTest makes
/// every HWY_DYNAMIC_DISPATCH pick that target; failures name it through BOOST_TEST_CONTEXT.
/// Normal dispatch is restored afterwards, also when f throws (a failed BOOST_REQUIRE).
template <class F>
void for_each_target(const F& f) {
  struct RestoreDispatch {
    ~RestoreDispatch() { hwy::SetSupportedTargetsForTest(0); }
  } restore;
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    BOOST_TEST_CONTEXT("Highway target " << hwy::TargetName(target)) { f(); }
  }
}

}  // namespace attograd::kernels::testing
