// lecture/attention_figures.h, the numbers behind chapter 3's step-by-step figures, on a size
// other than the figure's (n_embd 8, 4 heads, T = 5): the split taken apart adds up to the
// layer's own forward, and chapter 3's worked example 1 holds the chapter's Q, K and V.
#define BOOST_TEST_MODULE attention_figures_test
#include <boost/test/unit_test.hpp>

#include "autograd/ops.h"
#include "lecture/attention_figures.h"
#include "tests/test_util.h"

using namespace attograd;
using namespace attograd::lecture;
using attograd::testing::allclose;

BOOST_AUTO_TEST_CASE(the_split_adds_up_to_the_layers_forward) {
  const MultiHeadSplit s = MultiHeadExample{8, 4, 5, 3}.compute();
  BOOST_TEST(s.head_dim == 2);
  BOOST_REQUIRE_EQUAL(s.weights.size(), 4u);
  BOOST_REQUIRE_EQUAL(s.head_out.size(), 4u);
  // c_proj of the concat is the fused op's output; the concat is the heads side by side.
  BOOST_TEST(allclose(s.out.to_vector(), s.layer_out.to_vector(), 1e-12, 0));
  for (int64_t h = 0; h < 4; ++h) {
    BOOST_TEST(slice(s.concat, 1, 2 * h, 2 * h + 2).to_vector() == s.head_out[h].to_vector());
    // Each head's weights: rows of a distribution over keys 0 .. t, exactly 0 after t.
    for (int64_t t = 0; t < 5; ++t) {
      double sum = 0;
      for (int64_t j = 0; j < 5; ++j) {
        sum += s.weights[h].at({t, j});
        if (j > t) BOOST_TEST(s.weights[h].at({t, j}) == 0.0);
      }
      BOOST_TEST(sum == 1.0, boost::test_tools::tolerance(1e-12));
    }
  }
  testing::expect_throw_with<std::invalid_argument>(
      [] {
        MultiHeadExample{6, 4, 3, 1}.compute();
      },
      "n_head");
}

BOOST_AUTO_TEST_CASE(two_token_example_is_the_chapters) {
  const AttentionInputs in = two_token_example();
  BOOST_TEST(in.Q.to_vector() == std::vector<double>({1, 2}), boost::test_tools::per_element());
  BOOST_TEST(in.K.to_vector() == std::vector<double>({1, 3}), boost::test_tools::per_element());
  BOOST_TEST(in.V.to_vector() == std::vector<double>({10, 20}), boost::test_tools::per_element());
  BOOST_TEST((in.Q.shape() == Shape{2, 1}));
}
