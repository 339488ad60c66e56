// Tests gpt/model/attribution: the rows it returns against a plain forward's attention weights,
// that it leaves the model's gradients and mode as they were, and its refusals. (Its numbers on
// a trained pico are asserted through the CLI by figures_script_test.)
#define BOOST_TEST_MODULE attribution
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <memory>
#include <vector>

#include "gpt/model/attribution.h"
#include "tests/test_util.h"

using namespace attograd;
using namespace attograd::gpt;
using attograd::testing::expect_throw_with;
using attograd::testing::randomize_parameters;

namespace {

std::unique_ptr<GPT> pico_like(uint64_t seed) {
  GPTConfig c = preset("pico");
  c.vocab_size = 11;
  auto model = std::make_unique<GPT>(c, seed, DType::f64);
  Generator gen(seed);
  randomize_parameters(model->parameters(), gen, 0.5);  // weights that attend somewhere
  return model;
}

}  // namespace

BOOST_AUTO_TEST_CASE(rows_name_each_querys_most_attended_key_as_the_forward_weighs_it) {
  const auto owner = pico_like(3);
  GPT& model = *owner;
  const std::vector<int64_t> ids = {1, 4, 4, 7, 2, 9, 0};
  const auto T = static_cast<int64_t>(ids.size());
  const std::vector<AttributionRow> rows = attention_attribution(model, ids, {0, 2}, {0, 1, 2});
  BOOST_TEST_REQUIRE(rows.size() == static_cast<size_t>((T - 2) * 2 * 3));
  std::vector<Tensor> weights;
  model.forward(Tensor::from_ids(ids, {1, T}), Tensor(), nullptr, &weights);
  size_t i = 0;
  int differ = 0;
  for (int64_t t = 1; t + 1 < T; ++t)
    for (int64_t l : {0, 2})
      for (int64_t h : {0, 1, 2}) {
        const AttributionRow& r = rows[i++];
        BOOST_TEST_CONTEXT("query " << t << " layer " << l << " head " << h) {
          BOOST_TEST((r.query == t && r.layer == l && r.head == h));
          const Tensor& w = weights[static_cast<size_t>(l)];
          int64_t top = 0;
          for (int64_t j = 1; j <= t; ++j)
            if (w.at({0, h, t, j}) > w.at({0, h, t, top})) top = j;
          BOOST_TEST(r.most_attended == top);
          BOOST_TEST(r.weight == w.at({0, h, t, top}));
          BOOST_TEST(r.largest_change <= t);  // a key the query can see
          BOOST_TEST(std::isfinite(r.change));
          BOOST_TEST(r.change != 0.0);
          differ += r.differ();
        }
      }
  // Random weights attend and matter in different places somewhere: the comparison has both.
  BOOST_TEST(differ > 0);
  BOOST_TEST(differ < static_cast<int>(rows.size()));
}

BOOST_AUTO_TEST_CASE(the_models_gradients_and_mode_are_left_as_they_were) {
  const auto owner = pico_like(4);
  GPT& model = *owner;
  model.train();
  const std::vector<Tensor> params = model.parameters();
  for (const Tensor& p : params) p.set_grad(Tensor::full(p.shape(), 0.25, p.dtype()));
  attention_attribution(model, std::vector<int64_t>{1, 2, 3, 4}, {0}, {0});
  BOOST_TEST(model.is_training());
  for (const Tensor& p : params) {
    const std::vector<double> g = p.grad().to_vector();
    BOOST_TEST(std::all_of(g.begin(), g.end(), [](double v) { return v == 0.25; }));
  }
}

BOOST_AUTO_TEST_CASE(short_prompts_and_unknown_layers_are_refused) {
  const auto owner = pico_like(5);
  GPT& model = *owner;
  expect_throw_with<std::invalid_argument>(
      [&] {
        attention_attribution(model, std::vector<int64_t>{1, 2}, {0}, {0});
      },
      "needs a prompt of at least 3 tokens");
  expect_throw_with<std::invalid_argument>(
      [&] {
        attention_attribution(model, std::vector<int64_t>{1, 2, 3}, {3}, {0});
      },
      "layer 3 is out of range: the model has 3, numbered 0 to 2");
  expect_throw_with<std::invalid_argument>(
      [&] {
        attention_attribution(model, std::vector<int64_t>{1, 2, 3}, {0}, {-1});
      },
      "head -1 is out of range");
}
