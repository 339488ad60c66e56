// Sampling: temperature, top-k (ties kept), top-p, greedy, and context cropping.
#define BOOST_TEST_MODULE sampler
#include <boost/test/unit_test.hpp>
#include <cmath>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "gpt/model/sampler.h"
#include "tests/test_util.h"

using namespace attograd;
using namespace attograd::gpt;
using attograd::testing::allclose;
using attograd::testing::expect_throw_with;
using attograd::testing::randomize_parameters;

namespace {
SamplingOptions with(double temperature, int64_t top_k = 0, double top_p = 1.0) {
  return {temperature, top_k, top_p};
}
}  // namespace

BOOST_AUTO_TEST_CASE(temperature_scales_the_softmax) {
  const std::vector<double> logits{1, 3, 2};
  BOOST_TEST(allclose(next_token_probabilities(logits, with(1)), {0.09003057, 0.6652409, 0.2447285},
                      1e-7, 0));
  BOOST_TEST(allclose(next_token_probabilities(logits, with(0.5)),
                      {0.01587624, 0.8668133, 0.1173104}, 1e-7, 0));
  BOOST_TEST(allclose(next_token_probabilities(logits, with(2)), {0.1863237, 0.5064804, 0.3071959},
                      1e-7, 0));
}

BOOST_AUTO_TEST_CASE(tiny_and_zero_temperature_pick_the_argmax) {
  const std::vector<double> logits{1, 3, 2};
  const std::vector<double> p = next_token_probabilities(logits, with(1e-6));
  for (double x : p) BOOST_TEST(std::isfinite(x));
  BOOST_TEST(allclose(p, {0, 1, 0}, 0, 0));
  BOOST_TEST(allclose(next_token_probabilities(logits, with(0)), {0, 1, 0}, 0, 0));
  Generator gen(1);
  for (int i = 0; i < 100; ++i)
    BOOST_TEST(sample_index(next_token_probabilities(logits, with(1e-6)), gen) == 1);
  // Greedy ties go to the lowest id.
  BOOST_TEST(allclose(next_token_probabilities({2, 5, 5}, with(0)), {0, 1, 0}, 0, 0));
  expect_throw_with<std::invalid_argument>([&] { next_token_probabilities(logits, with(-1)); },
                                           "temperature must be >= 0");
  expect_throw_with<std::invalid_argument>([&] { next_token_probabilities(logits, with(1, 0, 0)); },
                                           "top_p must be in (0, 1]");
}

// An infinite temperature would sample uniformly whatever the model says: refused like NaN.
BOOST_AUTO_TEST_CASE(an_infinite_temperature_is_refused) {
  expect_throw_with<std::invalid_argument>(
      [] {
        next_token_probabilities({1, 2}, with(INFINITY));
      },
      "temperature must be >= 0 (0 means greedy) and finite, got inf");
  expect_throw_with<std::invalid_argument>(
      [] {
        next_token_probabilities({1, 2}, with(NAN));
      },
      "and finite, got nan");
}

BOOST_AUTO_TEST_CASE(extreme_temperatures_and_nan_logits) {
  // x / T would overflow at T = 1e-308; (x - max) / T does not.
  BOOST_TEST(allclose(next_token_probabilities({1, 3, 2}, with(1e-308)), {0, 1, 0}, 0, 0));
  BOOST_TEST(allclose(next_token_probabilities({1, 3, 2}, with(1e300)), {1.0 / 3, 1.0 / 3, 1.0 / 3},
                      1e-12, 0));
  expect_throw_with<std::runtime_error>(
      [] {
        next_token_probabilities({1, NAN, 2}, with(1));
      },
      "NaN logit");
  expect_throw_with<std::runtime_error>(
      [] {
        next_token_probabilities({1, NAN, 2}, with(0));
      },
      "NaN logit");
  expect_throw_with<std::runtime_error>(
      [] {
        next_token_probabilities({INFINITY, 1}, with(1));
      },
      "infinite logits");
}

BOOST_AUTO_TEST_CASE(top_k_larger_than_vocab_is_off) {
  BOOST_TEST(allclose(next_token_probabilities({0.3, -0.2, 0.9}, with(1, 10)),
                      {0.2916600, 0.1769007, 0.5314392}, 1e-7, 0));
}

BOOST_AUTO_TEST_CASE(top_k_keeps_ties_at_the_cut) {
  // k = 2: the second-largest logit is 2, held by ids 2, 3 and 5; all three are kept (nanoGPT's
  // rule), ids 1 and 4 never.
  const std::vector<double> logits{4, -1, 2, 2, 0, 2};
  const std::vector<double> p = next_token_probabilities(logits, with(1, 2));
  BOOST_TEST(p[1] == 0.0);
  BOOST_TEST(p[4] == 0.0);
  const double z = std::exp(4.0) + 3 * std::exp(2.0);
  BOOST_TEST(allclose(
      p, {std::exp(4.0) / z, 0, std::exp(2.0) / z, std::exp(2.0) / z, 0, std::exp(2.0) / z}, 1e-15,
      0));
  Generator gen(2);
  std::vector<int> counts(6, 0);
  for (int i = 0; i < 20000; ++i) ++counts[sample_index(p, gen)];
  BOOST_TEST(counts[1] == 0);
  BOOST_TEST(counts[4] == 0);
  BOOST_TEST(counts[3] > 0);
}

BOOST_AUTO_TEST_CASE(top_p_keeps_the_smallest_nucleus) {
  // p = [0.090, 0.665, 0.245]: mass 0.7 needs the two most likely tokens.
  BOOST_TEST(allclose(next_token_probabilities({1, 3, 2}, with(1, 0, 0.7)),
                      {0, 0.7310586, 0.2689414}, 1e-7, 0));
  BOOST_TEST(allclose(next_token_probabilities({1, 3, 2}, with(1, 0, 0.5)), {0, 1, 0}, 1e-15, 0));
}

// transformers #18976: probabilities [0.3, 0.1, 0.1, 0.5] with top_p 0.8 must keep two tokens,
// although softmax gives 0.29999999999999993 and the sum of the two falls just below 0.8.
BOOST_AUTO_TEST_CASE(top_p_at_an_exact_boundary_keeps_the_nucleus_only) {
  const std::vector<double> logits{std::log(0.3), std::log(0.1), std::log(0.1), std::log(0.5)};
  const std::vector<double> p = next_token_probabilities(logits, with(1, 0, 0.8));
  BOOST_TEST(allclose(p, {0.375, 0, 0, 0.625}, 1e-12, 0));
  // The other boundaries: exactly the top token's mass keeps it alone; a hair above a boundary
  // keeps the next token; top_p 1 keeps all.
  BOOST_TEST(allclose(next_token_probabilities(logits, with(1, 0, 0.5)), {0, 0, 0, 1}, 1e-12, 0));
  BOOST_TEST(allclose(next_token_probabilities(logits, with(1, 0, 0.8 + 1e-6)),
                      {0.3 / 0.9, 0.1 / 0.9, 0, 0.5 / 0.9}, 1e-12, 0));
  BOOST_TEST(
      allclose(next_token_probabilities(logits, with(1, 0, 1)), {0.3, 0.1, 0.1, 0.5}, 1e-12, 0));
}

BOOST_AUTO_TEST_CASE(sampling_frequencies_match_probabilities) {
  const std::vector<double> p{0.2, 0.5, 0.3};
  Generator gen(3);
  std::vector<int> counts(3, 0);
  const int n = 100000;
  for (int i = 0; i < n; ++i) ++counts[sample_index(p, gen)];
  for (int i = 0; i < 3; ++i)
    BOOST_TEST(std::abs(counts[i] / double(n) - p[i]) < 0.01);  // ~6 sigma
}

BOOST_AUTO_TEST_CASE(context_is_cropped_to_block_size) {
  GPTConfig c = preset("femto");
  c.block_size = 4;
  c.vocab_size = 11;
  GPT model(c, 9);
  // Larger weights than the init so greedy picks vary with the context.
  Generator init(4);
  randomize_parameters(model.parameters(), init, 1.0);
  for (const std::vector<int64_t>& prompt :
       {std::vector<int64_t>{1, 2, 3}, std::vector<int64_t>{5, 1, 0, 9, 2, 7}}) {
    Generator gen(5);
    std::vector<int64_t> streamed;
    GenerateOptions g;
    g.max_new_tokens = 10;
    g.sampling = with(0);
    g.use_kv_cache = false;
    g.on_token = [&](int64_t id) { streamed.push_back(id); };
    const std::vector<int64_t> out = generate(model, prompt, g, gen);
    BOOST_TEST(out.size() == prompt.size() + 10);
    BOOST_TEST(std::vector<int64_t>(out.begin() + prompt.size(), out.end()) == streamed);
    NoGradGuard no_grad;
    for (size_t i = prompt.size(); i < out.size(); ++i) {
      // Greedy token i is the argmax of a forward over the last <= 4 tokens before it.
      const size_t T = std::min<size_t>(i, 4);
      const std::vector<int64_t> ctx(out.begin() + (i - T), out.begin() + i);
      const Tensor logits =
          model.forward(Tensor::from_ids(ctx, {1, static_cast<int64_t>(T)})).logits();
      const std::vector<double> last = slice(logits, 1, T - 1, T).to_vector();
      BOOST_TEST(out[i] == std::max_element(last.begin(), last.end()) - last.begin());
    }
  }
  Generator gen(6);
  GenerateOptions g;
  g.max_new_tokens = 3;
  expect_throw_with<std::invalid_argument>([&] { generate(model, {}, g, gen); }, "prompt is empty");
  expect_throw_with<std::out_of_range>([&] { generate(model, {11}, g, gen); }, "token id 11");
}

// Greedy generation with and without the KV cache: the same tokens and logits for 50 tokens,
// well past block_size (where the cache is rebuilt from the cropped context each step).
BOOST_AUTO_TEST_CASE(kv_cache_gives_the_same_tokens_and_logits) {
  for (PosEncoding pe : {PosEncoding::learned, PosEncoding::sinusoidal, PosEncoding::rope}) {
    GPTConfig c = preset("pico");
    c.block_size = 16;
    c.vocab_size = 13;
    c.pos_encoding = pe;
    GPT model(c, 10);
    Generator init(7);
    randomize_parameters(model.parameters(), init, 0.5);
    auto run = [&](bool cached) {
      GenerateOptions g;
      g.max_new_tokens = 50;
      g.sampling = with(0);
      g.use_kv_cache = cached;
      std::vector<std::vector<double>> logits;
      g.on_logits = [&](const std::vector<double>& l) { logits.push_back(l); };
      Generator gen(8);
      const std::vector<int64_t> ids = generate(model, {3, 1, 4, 1, 5}, g, gen);
      return std::make_pair(ids, logits);
    };
    const auto [ids_cached, logits_cached] = run(true);
    const auto [ids_plain, logits_plain] = run(false);
    BOOST_TEST_INFO(pos_encoding_name(pe));
    BOOST_TEST(ids_cached == ids_plain);
    BOOST_REQUIRE_EQUAL(logits_cached.size(), 50u);
    for (size_t i = 0; i < logits_cached.size(); ++i)
      BOOST_TEST(allclose(logits_cached[i], logits_plain[i], 1e-5, 0));
  }
}

// The model's cache is allocated once, (B, NH, block_size, HS) per layer, on the first forward:
// later steps write into the same buffers; a step past block_size is refused, and a rebuild
// from the cropped context after clear() reuses the buffers.
BOOST_AUTO_TEST_CASE(kv_cache_steps_reuse_their_buffers) {
  GPTConfig c = preset("pico");
  c.block_size = 16;
  c.vocab_size = 13;
  GPT model(c, 11);
  NoGradGuard no_grad;
  model.eval();
  KVCache cache;
  model.forward(Tensor::from_ids({3, 1, 4, 1, 5}, {1, 5}), Tensor(), &cache);
  BOOST_REQUIRE_EQUAL(cache.layers.size(), static_cast<size_t>(c.n_layer));
  std::vector<const float*> buffers;
  for (const nn::LayerKVCache& l : cache.layers) {
    BOOST_TEST(l.capacity() == c.block_size);
    buffers.push_back(l.keys().data<float>());
    buffers.push_back(l.values().data<float>());
  }
  auto same_buffers = [&] {
    for (size_t i = 0; i < cache.layers.size(); ++i) {
      BOOST_TEST(cache.layers[i].keys().data<float>() == buffers[2 * i]);
      BOOST_TEST(cache.layers[i].values().data<float>() == buffers[2 * i + 1]);
    }
  };
  for (int64_t t = 5; t < c.block_size; ++t) {
    model.forward(Tensor::from_ids({t % 13}, {1, 1}), Tensor(), &cache);
    BOOST_TEST(cache.length() == t + 1);
    same_buffers();
  }
  expect_throw_with<std::invalid_argument>(
      [&] {
        model.forward(Tensor::from_ids({2}, {1, 1}), Tensor(), &cache);
      },
      "after 16 cached positions exceeds block_size 16");
  BOOST_TEST(cache.length() == c.block_size);
  std::vector<int64_t> context(static_cast<size_t>(c.block_size));
  for (int64_t t = 0; t < c.block_size; ++t) context[t] = (t + 1) % 13;
  cache.clear();
  const Tensor rebuilt =
      model.forward(Tensor::from_ids(context, {1, c.block_size}), Tensor(), &cache).logits();
  BOOST_TEST(cache.length() == c.block_size);
  same_buffers();
  BOOST_TEST(allclose(
      rebuilt.to_vector(),
      model.forward(Tensor::from_ids(context, {1, c.block_size})).logits().to_vector(), 1e-5, 0));
  // Another batch size with positions cached is refused (the cache is remade empty for it).
  cache.clear();
  model.forward(Tensor::from_ids({1, 2}, {1, 2}), Tensor(), &cache);
  expect_throw_with<std::invalid_argument>(
      [&] {
        model.forward(Tensor::from_ids({1, 2}, {2, 1}), Tensor(), &cache);
      },
      "another batch size or model");
}

// The CDF boundaries, with u given: torch.searchsorted(probs.cumsum(0), u, right=True) for
// probs [0.25, 0, 0.5, 0.25] and u = 0, 0.25⁻, 0.25, 0.75⁻, 0.75, 1⁻ (x⁻ = the double below x)
// gives [0, 0, 2, 2, 3, 3]: an interval is closed below and open above, and the empty interval
// of the zero probability (id 1) is never hit.
BOOST_AUTO_TEST_CASE(sample_index_cdf_boundaries_match_torch_searchsorted) {
  const std::vector<double> p{0.25, 0, 0.5, 0.25};
  const double us[] = {0.0,  std::nextafter(0.25, 0.0), 0.25, std::nextafter(0.75, 0.0),
                       0.75, std::nextafter(1.0, 0.0)};
  const int64_t expected[] = {0, 0, 2, 2, 3, 3};
  for (size_t i = 0; i < std::size(us); ++i) {
    BOOST_TEST_INFO("u = " << us[i]);
    BOOST_TEST(sample_index(p, us[i]) == expected[i]);
  }
  // A leading zero probability: u = 0 picks id 1, not id 0 (torch: 1).
  BOOST_TEST(sample_index({0, 0.5, 0.5}, 0.0) == 1);
  // Probabilities that sum to just under 1 (ten 0.1s: 0.9999999999999999): u above the sum
  // still gives the last non-zero id, where searchsorted would run past the end.
  BOOST_TEST(sample_index(std::vector<double>(10, 0.1), std::nextafter(1.0, 0.0)) == 9);
  // The Generator overload draws u = gen.uniform().
  Generator a(8), b(8);
  BOOST_TEST(sample_index(p, a) == sample_index(p, b.uniform()));
  expect_throw_with<std::invalid_argument>([&] { sample_index(p, 1.0); },
                                           "sample_index: u must be in [0, 1), got 1");
  expect_throw_with<std::invalid_argument>([&] { sample_index(p, std::nan("")); },
                                           "u must be in [0, 1)");
}
