// Tests autograd/kernels/targets.cc: the names of the compiled and supported Highway targets,
// and that the "active" one follows what dispatch would pick.
#define BOOST_TEST_MODULE targets
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "autograd/kernels/targets.h"
#include "hwy/targets.h"

namespace k = attograd::kernels;

BOOST_AUTO_TEST_CASE(active_target_is_the_best_supported_one) {
  const std::vector<std::string> targets = k::supported_targets();
  BOOST_REQUIRE(!targets.empty());
  BOOST_TEST(k::active_target() == targets.front());
  std::string list;
  for (const std::string& t : targets) list += " " + t;
  BOOST_TEST_MESSAGE("Highway targets compiled in and supported here (best first):" << list);
#if defined(HWY_COMPILE_ONLY_STATIC)
  // Static dispatch (the WebAssembly build): one target, the one compiled for, and no fallback.
  BOOST_TEST(targets.size() == 1u);
  BOOST_TEST(targets.front() == std::string(hwy::TargetName(HWY_STATIC_TARGET)));
#else
  // The portable fallback is always compiled in and always runs.
  BOOST_TEST((targets.back() == "SCALAR" || targets.back() == "EMU128"));
#endif
}

BOOST_AUTO_TEST_CASE(active_target_follows_the_test_mock) {
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    BOOST_TEST(k::active_target() == std::string(hwy::TargetName(target)));
    BOOST_TEST(k::supported_targets().size() == 1u);
  }
  hwy::SetSupportedTargetsForTest(0);
  BOOST_TEST(k::supported_targets().size() == hwy::SupportedAndGeneratedTargets().size());
}
