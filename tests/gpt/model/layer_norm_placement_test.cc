// gpt/model/layer_norm_placement.h on a config other than the figure's (pico with RoPE, 5
// tokens): the pre-LN layout is the Block attograd runs, each layout's stages are what their
// names say, and the gradient's straight path is whole in pre-LN and divided by the stream's
// scale in post-LN (docs/04-gpt.md, "Pre-LN and post-LN").
#define BOOST_TEST_MODULE layer_norm_placement_test
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "autograd/ops.h"
#include "gpt/model/layer_norm_placement.h"
#include "tests/test_util.h"

using namespace attograd;
using namespace attograd::gpt;
using attograd::testing::allclose;

namespace {

GPTConfig rope_pico() {
  GPTConfig c = preset("pico");
  c.pos_encoding = PosEncoding::rope;
  return c;
}

// Per token (row of x (T, C)): the mean over the channels and the RMS about it.
void expect_normalised(const Tensor& x, const std::string& name) {
  const int64_t T = x.size(0), C = x.size(1);
  for (int64_t t = 0; t < T; ++t) {
    double mean = 0, square = 0;
    for (int64_t c = 0; c < C; ++c) mean += x.at({t, c}) / static_cast<double>(C);
    for (int64_t c = 0; c < C; ++c)
      square += (x.at({t, c}) - mean) * (x.at({t, c}) - mean) / static_cast<double>(C);
    BOOST_TEST_INFO(name << ", token " << t);
    BOOST_TEST(std::abs(mean) < 1e-12);
    BOOST_TEST(std::abs(std::sqrt(square) - 1) < 1e-3);  // γ = 1, β = 0 at initialisation
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(pre_ln_is_the_block_and_each_stage_is_what_it_names) {
  const LayerNormPlacement p = layer_norm_placement(rope_pico(), 5, 3.0, 99);
  const auto& pre = p.pre_ln.stages;
  const auto& post = p.post_ln.stages;
  BOOST_REQUIRE_EQUAL(pre.size(), 7u);
  BOOST_REQUIRE_EQUAL(post.size(), 7u);
  BOOST_TEST(allclose(pre.back().value.to_vector(), p.block_out.to_vector(), 1e-12, 0));
  // The residual additions: pre-LN's x1 = x + attn(ln_1(x)) and y = x1 + mlp(ln_2(x1)),
  // post-LN's x + attn(x) and x1 + mlp(x1).
  using Sum = std::tuple<const std::vector<BlockStage>*, int, int, int>;
  for (const auto& [stages, sum, a, b] :
       {Sum{&pre, 3, 0, 2}, Sum{&pre, 6, 3, 5}, Sum{&post, 2, 0, 1}, Sum{&post, 5, 3, 4}})
    BOOST_TEST(((*stages)[sum].value.to_vector() ==
                add((*stages)[a].value, (*stages)[b].value).to_vector()));
  using Norm = std::pair<const std::vector<BlockStage>*, int>;
  for (const auto& [stages, i] : {Norm{&pre, 1}, Norm{&pre, 4}, Norm{&post, 3}, Norm{&post, 6}})
    expect_normalised((*stages)[i].value, (*stages)[i].name);
  BOOST_TEST(pre[0].value.to_vector() == post[0].value.to_vector());  // the same x
}

// The straight path: pre-LN passes dL/dy to x nearly whole at any scale of x; post-LN's layer
// norms divide it by the stream's scale, so doubling x halves it.
BOOST_AUTO_TEST_CASE(post_ln_divides_the_gradient_by_the_streams_scale) {
  const LayerNormPlacement at3 = layer_norm_placement(rope_pico(), 5, 3.0, 99),
                           at6 = layer_norm_placement(rope_pico(), 5, 6.0, 99);
  for (const LayerNormPlacement* p : {&at3, &at6})
    BOOST_TEST(std::abs(p->pre_ln.grad_ratio - 1) < 0.05);
  BOOST_TEST(at3.post_ln.grad_ratio < 0.5);
  BOOST_TEST(at6.post_ln.grad_ratio / at3.post_ln.grad_ratio == 0.5,
             boost::test_tools::tolerance(0.05));
  BOOST_TEST(std::abs(mean_rms(at6.pre_ln.stages.front().value) /
                          mean_rms(at3.pre_ln.stages.front().value) -
                      2) < 1e-12);  // the same draws, scaled
}
