// Small assertions shared by the tests: allclose (tests/allclose.h), tensors, exceptions, data
// and temporary files; skipping a case is tests/skip.h.
#pragma once

#include <unistd.h>
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "autograd/tensor.h"
#include "tests/allclose.h"
#include "tests/files.h"
#include "tests/skip.h"

namespace attograd::testing {

/// Checks a tensor's shape and values.
inline void expect_tensor(const Tensor& t, const Shape& shape, const std::vector<double>& expected,
                          double atol) {
  BOOST_TEST_INFO("shape " << shape_str(t.shape()) << " vs expected " << shape_str(shape));
  BOOST_TEST((t.shape() == shape));
  BOOST_TEST(allclose(t.to_vector(), expected, atol, 0));
}

/// Overwrites each parameter with N(0, std²) draws from gen (element by element, in order, in
/// the parameter's dtype). Tests use weights far larger than GPT-2's init (std 0.5 against
/// 0.02) so that attention is far from uniform and every path carries a real gradient.
inline void randomize_parameters(const std::vector<Tensor>& parameters, Generator& gen,
                                 double std) {
  for (const Tensor& p : parameters) {
    const Tensor r = Tensor::randn(p.shape(), gen, p.dtype(), std);
    dispatch_floating(p.dtype(), "randomize_parameters", [&]<typename T>() {
      std::copy(r.data<T>(), r.data<T>() + r.numel(), p.data<T>());
    });
  }
}

/// Whether `needle` occurs in `s` (a line of a log, a message).
inline bool contains(const std::string& s, const std::string& needle) {
  return s.find(needle) != std::string::npos;
}

/// Runs f and checks it throws E with a message containing `needle`.
template <typename E, typename F>
void expect_throw_with(F&& f, const std::string& needle) {
  try {
    f();
  } catch (const E& e) {
    BOOST_TEST_INFO("message: " << e.what());
    BOOST_TEST(std::string(e.what()).find(needle) != std::string::npos);
    return;
  }
  BOOST_FAIL("expected an exception whose message contains '" + needle + "'");
}

/// Whether data from outside the checkout (../shared/data, a Debian package's file) is there for
/// a test case that needs it: `if (!data_available(path, "apt-get install bible-kjv")) return;`.
/// Skipped (skip_case) when it is absent.
inline bool data_available(const std::filesystem::path& path, const std::string& how_to_get_it) {
  if (std::filesystem::exists(path)) return true;
  skip_case(path.string() + " is absent (" + how_to_get_it + ")");
  return false;
}

/// Whether this build is the kind a test case is about: `if (!build_has(gpt::can_download(),
/// "downloads (ATTOGRAD_DOWNLOAD)")) return;` for a case that needs downloads, or
/// `build_has(!gpt::can_download(), "no downloads")` for one about a build without them.
/// Skipped (skip_case) otherwise.
inline bool build_has(bool has, const std::string& what) {
  if (has) return true;
  skip_case("the case is about a build with " + what + ", and this build is another");
  return false;
}

/// ../shared/data/<name>, the data the team shares beside the checkout (tinyshakespeare.txt).
inline std::filesystem::path shared_data(const std::string& name) {
  return std::filesystem::path(ATTOGRAD_SHARED_DIR) / "data" / name;
}

}  // namespace attograd::testing
