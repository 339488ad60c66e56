// The GPT-2 model: parameter counts, whole-model gradient check, causality, tied weights,
// loss at init, memorisation.
#define BOOST_TEST_MODULE gpt2
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <tuple>
#include <vector>

#include "autograd/allocator.h"
#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "gpt/model/gpt2.h"
#include "nn/optim.h"
#include "tests/test_util.h"

using namespace attograd;
using namespace attograd::gpt;
using attograd::testing::allclose;
using attograd::testing::expect_throw_with;
using attograd::testing::randomize_parameters;

namespace {

Tensor random_ids(Generator& gen, int64_t B, int64_t T, int64_t V) {
  std::vector<int64_t> ids(static_cast<size_t>(B * T));
  for (int64_t& id : ids) id = static_cast<int64_t>(gen.below(static_cast<uint64_t>(V)));
  return Tensor::from_ids(ids, {B, T});
}

}  // namespace

// docs/04-gpt.md, "The dimension exercise" and "The whole model, checked by finite differences".
BOOST_AUTO_TEST_CASE(parameter_counts_of_the_teaching_presets) {
  BOOST_TEST(GPT(preset("femto")).num_parameters() == 224);
  BOOST_TEST(GPT(preset("pico")).num_parameters() == 1980);
  GPTConfig rope = preset("pico");
  rope.pos_encoding = PosEncoding::rope;
  BOOST_TEST(GPT(rope).num_parameters() == 1980 - 8 * 6);  // no wpe table
  // femto, whose gradient check covers every parameter: 224 with learned positions, 208 with
  // sinusoidal or RoPE ones (no wpe, 8 x 2).
  for (PosEncoding pos : {PosEncoding::sinusoidal, PosEncoding::rope}) {
    GPTConfig femto = preset("femto");
    femto.pos_encoding = pos;
    BOOST_TEST_INFO(pos_encoding_name(pos));
    BOOST_TEST(femto.num_parameters() == 208);
    BOOST_TEST(GPT(femto).num_parameters() == 208);
  }
  // The table's shapes: Q, K and V of all heads are (B, NH, T, HS), one head's (T, HS).
  for (const auto& [name, n_head, head_dim] :
       {std::tuple{"femto", 1, 2}, std::tuple{"pico", 3, 2}}) {
    BOOST_TEST_INFO(name);
    BOOST_TEST(preset(name).n_head == n_head);
    BOOST_TEST(preset(name).head_dim() == head_dim);
    BOOST_TEST(preset(name).block_size == 8);
  }
}

// docs/04-gpt.md, "Residual connections and layer norm": the block is pre-LN,
// x1 = x + attn(ln_1(x)), y = x1 + mlp(ln_2(x1)), so with both output projections zero it is
// exactly the identity and passes the gradient through unchanged (a post-LN block,
// ln(x + attn(x)), would normalise x instead).
BOOST_AUTO_TEST_CASE(the_block_is_pre_layer_norm) {
  Generator gen(21);
  const Block block(preset("pico"), gen, nullptr, DType::f64);
  randomize_parameters(block.parameters(), gen, 0.5);
  const Tensor x = Tensor::randn({2, 5, 6}, gen, DType::f64);
  const Tensor x1 = add(x, block.attn->forward(block.ln_1->forward(x)));
  const Tensor pre_ln = add(x1, block.mlp->forward(block.ln_2->forward(x1)));
  BOOST_TEST(allclose(block.forward(x).to_vector(), pre_ln.to_vector(), 1e-12, 0));
  const Tensor post_x1 = block.ln_1->forward(add(x, block.attn->forward(x)));
  const Tensor post_ln = block.ln_2->forward(add(post_x1, block.mlp->forward(post_x1)));
  BOOST_TEST(!allclose(block.forward(x).to_vector(), post_ln.to_vector(), 1e-3, 0));

  for (const auto& proj : {block.attn->c_proj, block.mlp->c_proj})
    for (const Tensor* p : {&proj->weight, &proj->bias})
      std::fill(p->data<double>(), p->data<double>() + p->numel(), 0.0);
  Tensor leaf = x.detach();
  leaf.set_requires_grad();
  const Tensor y = block.forward(leaf);
  BOOST_TEST(y.to_vector() == x.to_vector(), boost::test_tools::per_element());
  const Tensor dy = Tensor::randn({2, 5, 6}, gen, DType::f64);
  sum(mul(y, dy)).backward();
  BOOST_TEST(leaf.grad().to_vector() == dy.to_vector(), boost::test_tools::per_element());
}

// GPTConfig::num_parameters counts from the sizes alone what GPT builds, for every combination
// of preset, position encoding and bias.
BOOST_AUTO_TEST_CASE(config_parameter_count_matches_the_built_model) {
  for (const char* name : {"femto", "pico", "nano"})
    for (PosEncoding pos : {PosEncoding::learned, PosEncoding::sinusoidal, PosEncoding::rope})
      for (bool bias : {true, false}) {
        GPTConfig c = preset(name);
        c.pos_encoding = pos;
        c.bias = bias;
        BOOST_TEST_INFO(name << " " << pos_encoding_name(pos) << " bias " << bias);
        const GPT model(c);
        BOOST_TEST(c.num_parameters() == model.num_parameters());
        // parameter_shapes (info's table, no weights allocated) lists exactly what GPT builds.
        const auto named = model.named_parameters();
        const auto shapes = GPT::parameter_shapes(c);
        BOOST_REQUIRE(shapes.size() == named.size());
        for (size_t i = 0; i < named.size(); ++i) {
          BOOST_TEST(shapes[i].first == named[i].first);
          BOOST_TEST(shapes[i].second == named[i].second.shape(), named[i].first);
        }
      }
  BOOST_TEST(preset("gpt2").num_parameters() ==
             124439808);  // GPT-2 small, as Hugging Face counts it
}

// Sizes outside gpt/model/field_ranges.h are refused at once, naming the range, and so is a config
// whose sizes are each in range but make too many parameters, or more than this machine can hold.
BOOST_AUTO_TEST_CASE(absurd_configs_are_refused_before_allocating) {
  // The messages below name 64-bit limits; the WebAssembly build's size_t has 32 (it refuses
  // these configs too, with "parameter bytes: ... exceeds 4294967295").
  if (!attograd::testing::build_has(sizeof(size_t) == 8, "a 64-bit size_t")) return;
  GPTConfig c = preset("pico");
  c.n_layer = 1000000000;
  expect_throw_with<std::invalid_argument>(
      [&] { GPT m(c); }, "GPTConfig: n_layer must be in [1, 1024], got 1000000000");
  c = preset("pico");
  c.block_size = 3074457345618258603;
  c.pos_encoding = PosEncoding::sinusoidal;
  expect_throw_with<std::invalid_argument>(
      [&] { c.validate(); }, "block_size must be in [1, 131072], got 3074457345618258603");
  c = preset("pico");
  c.vocab_size = int64_t{1} << 40;
  expect_throw_with<std::invalid_argument>([&] { c.validate(); },
                                           "vocab_size must be in [1, 1048576]");
  c = preset("gpt2");
  c.n_layer = 1024, c.n_embd = 4096, c.n_head = 16;
  expect_throw_with<std::invalid_argument>(
      [&] { c.validate(); }, "make 206423011328 parameters, more than the limit of 20000000000");
  // Within every limit, yet 18 billion parameters: weights and gradients are 147 GB in f32.
  c.n_layer = 90;
  BOOST_TEST(c.num_parameters() == 18334240768);
  // a machine that can hold it (uint64_t: size_t is 32 bits in the WebAssembly build)
  if (uint64_t{physical_memory_bytes()} >= uint64_t{146'700'000'000}) return;
  expect_throw_with<std::runtime_error>([&] { GPT m(c); }, "parameters need 146.7 GB in f32");
  expect_throw_with<std::runtime_error>([&] { GPT m(c); }, "more than this machine's");
}

// The whole femto model, every one of its 224 parameters, against central differences in f64.
BOOST_AUTO_TEST_CASE(femto_whole_model_gradcheck_in_float64) {
  for (PosEncoding pe : {PosEncoding::learned, PosEncoding::sinusoidal, PosEncoding::rope}) {
    GPTConfig c = preset("femto");
    c.pos_encoding = pe;
    GPT model(c, 42, DType::f64);
    // Scale weights up from GPT-2's tiny init so every path carries a real gradient.
    Generator gen(1);
    randomize_parameters(model.parameters(), gen, 0.5);
    const Tensor idx = random_ids(gen, 2, 8, c.vocab_size),
                 targets = random_ids(gen, 2, 8, c.vocab_size);
    const GradcheckResult r =
        run_gradcheck([&](const std::vector<Tensor>&) { return model.forward(idx, targets).loss; },
                      model.parameters());
    BOOST_TEST_INFO(pos_encoding_name(pe) << ": " << r.message);
    BOOST_TEST(r.passed);
    int64_t checked = 0;
    for (const auto& in : r.inputs) checked += shape_numel(in.shape);
    BOOST_TEST(checked == model.num_parameters());
    BOOST_TEST(checked == (pe == PosEncoding::learned ? 224 : 208));  // docs/04-gpt.md
  }
}

// femto's ln_f normalizes C = 2 numbers (a, b): y = (a - b) / sqrt((a - b)^2 + 4 eps) and -y,
// whose derivative 4 eps / ((a - b)^2 + 4 eps)^(3/2) vanishes once a and b are apart
// (docs/04-gpt.md: why femto stops at the unigram). The engine's backward gives exactly that.
BOOST_AUTO_TEST_CASE(layer_norm_over_two_channels_passes_almost_no_gradient) {
  const double eps = 1e-5;
  for (double d : {1.0, 0.1, 0.01}) {
    const Tensor x = Tensor::from_vector({0.3 + d, 0.3}, {1, 2}, DType::f64).set_requires_grad();
    const Tensor gamma = Tensor::full({2}, 1.0, DType::f64),
                 beta = Tensor::full({2}, 0.0, DType::f64);
    const Tensor y = layer_norm(x, gamma, beta, eps);
    const double expected_y = d / std::sqrt(d * d + 4 * eps);
    BOOST_TEST(y.at({0, 0}) == expected_y, boost::test_tools::tolerance(1e-12));
    BOOST_TEST(y.at({0, 1}) == -expected_y, boost::test_tools::tolerance(1e-12));
    sum(mul(y, Tensor::from_vector({1.0, 0.0}, {1, 2}, DType::f64))).backward();
    const double expected = 4 * eps / std::pow(d * d + 4 * eps, 1.5);
    BOOST_TEST_INFO("a - b = " << d);
    BOOST_TEST(x.grad().at({0, 0}) == expected, boost::test_tools::tolerance(1e-9));
    BOOST_TEST(x.grad().at({0, 1}) == -expected, boost::test_tools::tolerance(1e-9));
  }
  const double at_one = 4 * eps / std::pow(1 + 4 * eps, 1.5);
  BOOST_TEST(at_one == 4.0e-5, boost::test_tools::tolerance(1e-3));  // the docs' figure
}

// pico's LayerNorm over C = 6 numbers keeps C - 2 = 4 degrees of freedom (docs/04-gpt.md): its
// output has mean 0 and mean square 1, so the Jacobian dy/dx has rank 4 (its null space is the
// constant direction and x - mean itself, up to eps). Each row of J by one backward.
BOOST_AUTO_TEST_CASE(layer_norm_keeps_c_minus_two_degrees_of_freedom) {
  const int64_t C = 6;
  const Tensor x =
      Tensor::from_vector({0.9, -1.3, 0.2, 2.1, -0.4, 0.7}, {1, C}, DType::f64).set_requires_grad();
  const Tensor y =
      layer_norm(x, Tensor::full({C}, 1.0, DType::f64), Tensor::full({C}, 0.0, DType::f64), 1e-5);
  double total = 0, squares = 0;
  for (int64_t i = 0; i < C; ++i) total += y.at({0, i}), squares += y.at({0, i}) * y.at({0, i});
  BOOST_TEST(std::abs(total) < 1e-12);
  BOOST_TEST(squares / C == 1.0, boost::test_tools::tolerance(1e-4));
  std::vector<std::vector<double>> J;
  for (int64_t i = 0; i < C; ++i) {
    std::vector<double> unit(static_cast<size_t>(C), 0.0);
    unit[static_cast<size_t>(i)] = 1.0;
    J.push_back(grad(sum(mul(y, Tensor::from_vector(unit, {1, C}, DType::f64))), {x}, Tensor(),
                     /*retain_graph=*/true)[0]
                    .to_vector());
  }
  // Rank by Gaussian elimination with partial pivoting; pivots below 1e-3 of the largest count
  // as zero (the direction eps leaves is 1e-5 of the others).
  int rank = 0;
  double largest = 0;
  for (const auto& row : J)
    for (double v : row) largest = std::max(largest, std::abs(v));
  for (size_t col = 0; col < J.size() && rank < static_cast<int>(J.size()); ++col) {
    size_t pivot = static_cast<size_t>(rank);
    for (size_t r = pivot; r < J.size(); ++r)
      if (std::abs(J[r][col]) > std::abs(J[pivot][col])) pivot = r;
    if (std::abs(J[pivot][col]) < 1e-3 * largest) continue;
    std::swap(J[pivot], J[static_cast<size_t>(rank)]);
    for (size_t r = static_cast<size_t>(rank) + 1; r < J.size(); ++r) {
      const double f = J[r][col] / J[static_cast<size_t>(rank)][col];
      for (size_t c = col; c < J.size(); ++c) J[r][c] -= f * J[static_cast<size_t>(rank)][c];
    }
    ++rank;
  }
  BOOST_TEST(rank == C - 2);
}

BOOST_AUTO_TEST_CASE(pico_loss_at_init_is_near_log_vocab) {
  GPT model(preset("pico"), 7);
  Generator gen(2);
  const Tensor idx = random_ids(gen, 4, 8, 65), targets = random_ids(gen, 4, 8, 65);
  const double loss = model.forward(idx, targets).loss.item();
  BOOST_TEST(std::abs(loss - std::log(65.0)) < 0.1);
}

BOOST_AUTO_TEST_CASE(changing_token_t_leaves_earlier_logits_bit_identical) {
  for (PosEncoding pe : {PosEncoding::learned, PosEncoding::sinusoidal, PosEncoding::rope}) {
    GPTConfig c = preset("pico");
    c.pos_encoding = pe;
    GPT model(c, 3);
    Generator gen(3);
    const Tensor a = random_ids(gen, 1, 8, 65);
    std::vector<int64_t> ids = a.to_ids();
    const int64_t t = 5;
    ids[t] = (ids[t] + 1) % 65;
    const Tensor b = Tensor::from_ids(ids, {1, 8});
    const Tensor la = model.forward(a).logits(), lb = model.forward(b).logits();
    BOOST_TEST(slice(la, 1, 0, t).to_vector() == slice(lb, 1, 0, t).to_vector());  // exact
    BOOST_TEST(slice(la, 1, t, t + 1).to_vector() != slice(lb, 1, t, t + 1).to_vector());
  }
}

// wte is used twice, as the input embedding and (transposed) as the LM head; its gradient is
// the sum of both paths. Each path alone is isolated by detaching wte in the other.
BOOST_AUTO_TEST_CASE(tied_weights_gradient_is_the_sum_of_both_paths) {
  GPT model(preset("femto"), 5, DType::f64);
  Generator gen(4);
  const Tensor idx = random_ids(gen, 2, 8, 65), targets = random_ids(gen, 2, 8, 65);
  model.forward(idx, targets).loss.backward();
  const std::vector<double> total = model.wte->weight.grad().to_vector();

  auto path = [&](bool embedding_path) {
    model.zero_grad();
    const Tensor w = model.wte->weight;
    std::vector<int64_t> pos(8);
    for (int64_t t = 0; t < 8; ++t) pos[t] = t;
    Tensor x = add(embedding(embedding_path ? w : w.detach(), idx),
                   model.wpe->forward(Tensor::from_ids(pos, {8})));
    for (const auto& block : model.h) x = block->forward(x);
    x = model.ln_f->forward(x);
    const Tensor logits = matmul(x, transpose(embedding_path ? w.detach() : w, 0, 1));
    cross_entropy(logits, targets).backward();
    return model.wte->weight.grad().to_vector();
  };
  const std::vector<double> emb = path(true), head = path(false);
  std::vector<double> both(total.size());
  for (size_t i = 0; i < both.size(); ++i) both[i] = emb[i] + head[i];
  BOOST_TEST(allclose(total, both, 1e-15, 0));
  double emb_norm = 0;
  for (double v : emb) emb_norm += std::abs(v);
  BOOST_TEST(emb_norm > 0);  // both paths really contribute
}

// Issue 32: grad(loss, {wte}) on a GPT threw "the tensor is undefined" (every other parameter is
// a trainable leaf the engine handed no buffer). It equals backward()'s wte gradient, and so does
// grad(loss, {h.0.ln_1.weight, wte}) for both; no parameter's .grad is written.
BOOST_AUTO_TEST_CASE(grad_of_some_parameters_equals_backwards) {
  GPT model(preset("femto"), 5, DType::f64);
  Generator gen(4);
  const Tensor idx = random_ids(gen, 2, 8, 65), targets = random_ids(gen, 2, 8, 65);
  model.forward(idx, targets).loss.backward();
  const std::vector<double> wte = model.wte->weight.grad().to_vector();
  const std::vector<double> ln = model.h[0]->ln_1->weight.grad().to_vector();
  model.zero_grad();
  const std::vector<Tensor> g = grad(model.forward(idx, targets).loss, {model.wte->weight});
  BOOST_TEST(allclose(g[0].to_vector(), wte, 1e-15, 1e-13));
  const std::vector<Tensor> two =
      grad(model.forward(idx, targets).loss, {model.h[0]->ln_1->weight, model.wte->weight});
  BOOST_TEST(allclose(two[0].to_vector(), ln, 1e-15, 1e-13));
  BOOST_TEST(allclose(two[1].to_vector(), wte, 1e-15, 1e-13));
  for (const auto& [name, p] : model.named_parameters()) {
    BOOST_TEST_INFO(name);
    double total = 0;
    if (p.grad().defined())
      for (double v : p.grad().to_vector()) total += std::abs(v);
    BOOST_TEST(total == 0.0);
  }
}

// `logits, loss = model(x, y)` while training: the forward fuses the tied head into the loss,
// so the logits are computed when read, from the head's input that forward saw. They are the
// logits forward(x) gives, bit for bit, the loss is their cross-entropy, and they carry the
// graph: backpropagating through them gives the gradients of the unfused forward's logits.
// After the weights change in place (an optimizer step) they can no longer be computed, and
// reading them says so.
BOOST_AUTO_TEST_CASE(training_logits_are_computed_when_read) {
  GPT model(preset("pico"), 11, DType::f64);
  Generator gen(6);
  const Tensor idx = random_ids(gen, 2, 8, 65), targets = random_ids(gen, 2, 8, 65);
  const GPTOutput out = model.forward(idx, targets);
  BOOST_TEST(!out.has_logits());  // not computed by the forward
  const Tensor logits = out.logits();
  BOOST_TEST(out.has_logits());  // computed once, then kept
  BOOST_TEST((logits.shape() == Shape{2, 8, 65}));
  const GPTOutput plain = model.forward(idx);
  BOOST_TEST(logits.to_vector() == plain.logits().to_vector());
  BOOST_TEST(std::abs(cross_entropy(logits, targets).item() - out.loss.item()) < 1e-12);
  // The graph: d(sum of squared logits)/dθ as through the unfused forward's logits.
  auto grads_of = [&](const Tensor& l) {
    model.zero_grad();
    sum(mul(l, l)).backward();
    std::vector<double> g;
    for (const Tensor& p : model.parameters())
      for (double v : p.grad().to_vector()) g.push_back(v);
    return g;
  };
  BOOST_TEST(allclose(grads_of(logits), grads_of(plain.logits()), 1e-12, 1e-12));
  // An optimizer step between the forward and the read: the logits are gone.
  const GPTOutput stale = model.forward(idx, targets);
  stale.loss.backward();
  nn::AdamW opt(model.param_groups(0.1), nn::AdamWOptions(1e-2));
  opt.step();
  expect_throw_with<std::logic_error>([&] { (void)stale.logits(); },
                                      "were changed in place since (an optimizer step?)");
  expect_throw_with<std::logic_error>([] { (void)GPTOutput().logits(); }, "no logits");
}

// The sinusoidal table is a buffer computed from the config: listed by named_buffers(), left
// out of the state dict (torch's persistent=False), so a checkpoint holds only the parameters.
BOOST_AUTO_TEST_CASE(the_position_table_is_a_buffer_no_checkpoint_holds) {
  GPTConfig c = preset("pico");
  c.pos_encoding = PosEncoding::sinusoidal;
  GPT model(c, 1);
  const auto buffers = model.named_buffers();
  BOOST_REQUIRE_EQUAL(buffers.size(), 1u);
  BOOST_TEST(buffers[0].first == "pe");
  BOOST_TEST((buffers[0].second.shape() == Shape{8, 6}));
  BOOST_TEST(buffers[0].second.to_vector() == nn::sinusoidal_table(8, 6, DType::f32).to_vector());
  const auto state = model.state_dict();
  BOOST_TEST(state.size() == model.named_parameters().size());
  for (const auto& [key, t] : state) BOOST_TEST(key != "pe");
  BOOST_TEST(GPT(preset("pico"), 1).named_buffers().empty());  // learned positions: no table
}

BOOST_AUTO_TEST_CASE(pico_memorises_a_fixed_sequence) {
  // 64 tokens cut into 8 windows of block_size 8, trained as one batch with AdamW.
  GPT model(preset("pico"), 11);
  Generator gen(5);
  const Tensor seq = random_ids(gen, 1, 65, 65);
  const std::vector<int64_t> s = seq.to_ids();
  std::vector<int64_t> x, y;
  for (int w = 0; w < 8; ++w)
    for (int t = 0; t < 8; ++t) {
      x.push_back(s[w * 8 + t]);
      y.push_back(s[w * 8 + t + 1]);
    }
  const Tensor idx = Tensor::from_ids(x, {8, 8}), targets = Tensor::from_ids(y, {8, 8});
  nn::AdamW opt(model.param_groups(0.0), nn::AdamWOptions().betas({0.9, 0.95}).eps(1e-8));
  double loss = 0;
  int step = 0;
  for (; step < 300; ++step) {
    model.arena().zero_grad();
    const Tensor l = model.forward(idx, targets).loss;
    loss = l.item();
    if (loss < 0.1) break;
    l.backward();
    opt.step(3e-2);
  }
  BOOST_TEST_MESSAGE("pico memorised 64 tokens to loss " << loss << " in " << step << " steps");
  BOOST_TEST(loss < 0.1);
  BOOST_TEST(step < 300);  // measured: 63 steps
}

// A target of kIgnoreTarget (-1, nanoGPT's ignore_index) pads: the loss is the mean over the
// other positions, in training (linear_cross_entropy) and evaluation (cross_entropy) alike.
BOOST_AUTO_TEST_CASE(ignored_targets_pad_the_batch) {
  GPT model(preset("femto"), 3);
  const Tensor idx = Tensor::from_ids({1, 2, 3, 4}, {1, 4});
  const Tensor padded = Tensor::from_ids({2, kIgnoreTarget, 4, kIgnoreTarget}, {1, 4});
  const Tensor loss = model.forward(idx, padded).loss;  // graph recorded: the fused head
  std::vector<double> picked;
  {
    NoGradGuard no_grad;
    BOOST_TEST(std::abs(model.forward(idx, padded).loss.item() - loss.item()) < 1e-6);
    const Tensor logp = log_softmax(model.forward(idx).logits());  // (1, 4, V)
    picked = {logp.at({0, 0, 2}), logp.at({0, 2, 4})};
  }
  BOOST_TEST(std::abs(loss.item() + (picked[0] + picked[1]) / 2) < 1e-6);
}

BOOST_AUTO_TEST_CASE(bad_inputs_are_clear_errors_before_any_read) {
  GPT model(preset("femto"));
  expect_throw_with<std::out_of_range>(
      [&] {
        model.forward(Tensor::from_ids({1, 65}, {1, 2}));
      },
      "token id 65 at (0, 1) is outside [0, 65)");
  expect_throw_with<std::out_of_range>(
      [&] {
        model.forward(Tensor::from_ids({1, 2}, {1, 2}), Tensor::from_ids({-3, 2}, {1, 2}));
      },
      "target id -3");
  expect_throw_with<std::invalid_argument>(
      [&] {
        model.forward(Tensor::from_ids(std::vector<int64_t>(9, 0), {1, 9}));
      },
      "exceeds block_size 8");
  expect_throw_with<std::invalid_argument>(
      [&] {
        model.forward(Tensor::zeros({1, 2}));
      },
      "expected idx as i64");
  GPTConfig bad = preset("pico");
  bad.n_head = 4;
  expect_throw_with<std::invalid_argument>([&] { GPT m(bad); }, "n_head 4 must divide n_embd 6");
}

// The weights GPT::forward records (what `attograd attention` draws) come from the model's own
// forward: one (B, n_head, T, T) tensor per layer, each row a distribution over the keys up to
// the query (exactly 0 after it), each equal to what that layer's attention applies to the
// block's own input, and recording them leaves the logits as they are.
BOOST_AUTO_TEST_CASE(recorded_attention_weights_come_from_the_forward_pass) {
  for (PosEncoding pe : {PosEncoding::learned, PosEncoding::rope}) {
    BOOST_TEST_INFO(pos_encoding_name(pe));
    GPTConfig c = preset("pico");
    c.pos_encoding = pe;
    GPT model(c, 8, DType::f64);
    Generator gen(9);
    randomize_parameters(model.parameters(), gen, 0.5);
    const int64_t B = 2, T = 7;
    const Tensor idx = random_ids(gen, B, T, c.vocab_size);
    std::vector<Tensor> weights;
    const Tensor logits = model.forward(idx, Tensor(), nullptr, &weights).logits();
    BOOST_TEST(allclose(logits.to_vector(), model.forward(idx).logits().to_vector(), 1e-12, 0));
    BOOST_REQUIRE(weights.size() == 3u);

    // The blocks run by hand from the embeddings: layer l's weights are those its attention
    // computes from ln_1 of the residual stream entering block l.
    Tensor x = model.wte->forward(idx);
    if (model.wpe) x = add(x, model.wpe->forward(Tensor::from_ids({0, 1, 2, 3, 4, 5, 6}, {T})));
    for (size_t l = 0; l < 3; ++l) {
      const Tensor& w = weights[l];
      BOOST_REQUIRE((w.shape() == Shape{B, 3, T, T}));
      Tensor expected;
      model.h[l]->attn->forward(model.h[l]->ln_1->forward(x), nullptr, &expected);
      BOOST_TEST(w.to_vector() == expected.to_vector());  // bit for bit: the same computation
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < 3; ++h)
          for (int64_t t = 0; t < T; ++t) {
            double row_sum = 0;
            for (int64_t j = 0; j < T; ++j) {
              row_sum += w.at({b, h, t, j});
              if (j > t) BOOST_TEST(w.at({b, h, t, j}) == 0.0);
            }
            BOOST_TEST(std::abs(row_sum - 1) <= 1e-12);
          }
      Tensor
          unused;  // the unfused path, as in the recording forward, so x stays bit for bit the same
      x = model.h[l]->forward(x, nullptr, &unused);
    }
  }
}

// The GPT calls its modules through their call, so forward hooks work on it as on torch's: a hook
// on h.1 sees the residual stream after block 1 (the blocks applied by hand), and one on ln_f
// that returns zeros makes every logit 0, so the loss is exactly ln vocab_size.
BOOST_AUTO_TEST_CASE(forward_hooks_on_the_gpts_modules) {
  const GPTConfig c = preset("pico");
  GPT model(c, 5, DType::f64);
  Generator gen(6);
  randomize_parameters(model.parameters(), gen, 0.5);
  const Tensor idx = random_ids(gen, 2, 8, c.vocab_size);
  Tensor residual;
  nn::HookHandle h1 = model.h[1]->register_forward_hook(
      [&](const nn::UnaryModule&, const Tensor&, const Tensor& out) {
        residual = out.detach();
        return std::optional<Tensor>();
      });
  model.forward(idx);
  BOOST_REQUIRE(residual.defined());
  std::vector<int64_t> positions(8);
  for (int64_t t = 0; t < 8; ++t) positions[static_cast<size_t>(t)] = t;
  Tensor x = add(model.wte->forward(idx), model.wpe->forward(Tensor::from_ids(positions, {8})));
  x = model.h[1]->forward(model.h[0]->forward(x));
  BOOST_TEST(allclose(residual.to_vector(), x.to_vector(), 1e-12, 0));
  h1.remove();

  const Tensor targets = random_ids(gen, 2, 8, c.vocab_size);
  BOOST_TEST(std::abs(model.forward(idx, targets).loss.item() - std::log(c.vocab_size)) > 1e-3);
  nn::HookHandle zero = model.ln_f->register_forward_hook(
      [](const nn::UnaryModule&, const Tensor&, const Tensor& out) {
        return std::optional(Tensor::zeros(out.shape(), out.dtype()));
      });
  BOOST_TEST(model.forward(idx, targets).loss.item() == std::log(static_cast<double>(c.vocab_size)),
             boost::test_tools::tolerance(1e-12));
  zero.remove();
}

// Forward hooks run on every call of a module, the calls with a KV cache or recorded attention
// weights included (nn/module.h's UnaryModule): a hook that steers block 1's output gives the same
// logits whether the model reads the context whole or decodes it a token at a time with a cache,
// once per step, seeing the new position only. (Before, the cached calls skipped the blocks'
// hooks while their layers' ran: cached generation ignored the steering.)
BOOST_AUTO_TEST_CASE(forward_hooks_run_in_cached_decoding_and_recorded_attention) {
  const GPTConfig c = preset("pico");
  GPT model(c, 5, DType::f64);
  Generator gen(7);
  randomize_parameters(model.parameters(), gen, 0.5);
  model.eval();
  NoGradGuard no_grad;
  const std::vector<int64_t> ids{3, 1, 4, 1, 5, 9};
  const int64_t T = static_cast<int64_t>(ids.size());
  const Tensor idx = Tensor::from_ids(ids, {1, T});
  const std::vector<double> plain = model.forward(idx).logits().to_vector();
  // A direction added to the residual stream (not a constant: the LayerNorms would remove it).
  std::vector<double> direction(static_cast<size_t>(c.n_embd));
  for (size_t i = 0; i < direction.size(); ++i) direction[i] = 0.1 * static_cast<double>(i);
  const Tensor steering = Tensor::from_vector(direction, {c.n_embd}, DType::f64);
  std::vector<Shape> seen;  // the inputs block 1's hook was called with
  nn::HookHandle steer = model.h[1]->register_forward_hook(
      [&](const nn::UnaryModule&, const Tensor& in, const Tensor& out) {
        seen.push_back(in.shape());
        return std::optional(add(out, steering));
      });
  const std::vector<double> steered = model.forward(idx).logits().to_vector();
  BOOST_TEST(!allclose(steered, plain, 1e-3, 0));  // the hook changes the logits
  KVCache cache;
  std::vector<double> stepped;
  for (int64_t t = 0; t < T; ++t) {
    const Tensor next = Tensor::from_ids({ids[static_cast<size_t>(t)]}, {1, 1});
    const std::vector<double> logits = model.forward(next, Tensor(), &cache).logits().to_vector();
    stepped.insert(stepped.end(), logits.begin(), logits.end());
  }
  BOOST_TEST(allclose(stepped, steered, 1e-10, 0));
  BOOST_REQUIRE_EQUAL(seen.size(), static_cast<size_t>(1 + T));
  for (size_t i = 1; i < seen.size(); ++i) BOOST_TEST((seen[i] == Shape{1, 1, c.n_embd}));
  std::vector<Tensor> weights;
  BOOST_TEST(allclose(model.forward(idx, Tensor(), nullptr, &weights).logits().to_vector(), steered,
                      1e-10, 0));
  BOOST_TEST(seen.size() == static_cast<size_t>(2 + T));
  steer.remove();
}
