#include "gpt/model/attribution.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "autograd/tensor.h"

namespace attograd::gpt {

namespace {

void require_in(const std::vector<int64_t>& picks, int64_t n, const char* what) {
  for (int64_t i : picks)
    if (i < 0 || i >= n)
      throw std::invalid_argument("attention_attribution: " + std::string(what) + " " +
                                  std::to_string(i) + " is out of range: the model has " +
                                  std::to_string(n) + ", numbered 0 to " + std::to_string(n - 1));
}

// While alive, the parameters' gradients go to buffers of their own, dropped at the end: the
// backward passes here must not add into a gradient the caller is accumulating (or into the
// ParameterArena's buffer that an optimizer reads).
class GradientsSetAside {
 public:
  explicit GradientsSetAside(std::vector<Tensor> params) : params_(std::move(params)) {
    for (const Tensor& p : params_) {
      saved_.push_back(p.grad());
      p.set_grad(Tensor());
    }
  }
  ~GradientsSetAside() {
    for (size_t i = 0; i < params_.size(); ++i) params_[i].set_grad(saved_[i]);
  }
  GradientsSetAside(const GradientsSetAside&) = delete;
  GradientsSetAside& operator=(const GradientsSetAside&) = delete;

 private:
  std::vector<Tensor> params_, saved_;
};

// Restores the model's training mode on return.
class EvalMode {
 public:
  explicit EvalMode(GPT& model) : model_(model), was_training_(model.is_training()) {
    model_.eval();
  }
  ~EvalMode() { model_.train(was_training_); }
  EvalMode(const EvalMode&) = delete;
  EvalMode& operator=(const EvalMode&) = delete;

 private:
  GPT& model_;
  bool was_training_;
};

}  // namespace

std::vector<AttributionRow> attention_attribution(GPT& model, std::span<const int64_t> ids,
                                                  const std::vector<int64_t>& layers,
                                                  const std::vector<int64_t>& heads) {
  const GPTConfig& c = model.config();
  const auto T = static_cast<int64_t>(ids.size());
  if (T < 3)
    throw std::invalid_argument(
        "attention_attribution: needs a prompt of at least 3 tokens (query t is scored on the "
        "loss of predicting token t+1, and query 0 has one key), got " +
        std::to_string(T));
  if (T > c.block_size)
    throw std::invalid_argument("attention_attribution: the prompt's " + std::to_string(T) +
                                " tokens exceed the model's block_size " +
                                std::to_string(c.block_size));
  require_in(layers, c.n_layer, "layer");
  require_in(heads, c.n_head, "head");
  const EvalMode eval(model);
  const GradientsSetAside aside(model.parameters());
  const std::vector<int64_t> prompt(ids.begin(), ids.end());
  std::vector<AttributionRow> rows;
  for (int64_t t = 1; t + 1 < T; ++t) {
    // Only query t's next token is scored, so the gradient is of L_t alone.
    std::vector<int64_t> target(static_cast<size_t>(T), kIgnoreTarget);
    target[static_cast<size_t>(t)] = prompt[static_cast<size_t>(t + 1)];
    std::vector<Tensor> weights;
    const Tensor loss = model
                            .forward(Tensor::from_ids(prompt, {1, T}),
                                     Tensor::from_ids(target, {1, T}), nullptr, &weights)
                            .loss;
    for (int64_t l : layers) weights[static_cast<size_t>(l)].retain_grad();
    loss.backward();
    for (int64_t l : layers) {
      const Tensor& w = weights[static_cast<size_t>(l)];
      const Tensor g = w.grad();
      for (int64_t h : heads) {
        AttributionRow r;
        r.layer = l, r.head = h, r.query = t;
        double biggest = -1;
        for (int64_t j = 0; j <= t; ++j) {
          const double a = w.at({0, h, t, j});
          const double change = -a * g.at({0, h, t, j});
          if (a > w.at({0, h, t, r.most_attended})) r.most_attended = j;
          if (std::abs(change) > biggest) {
            biggest = std::abs(change);
            r.largest_change = j;
            r.change = change;
          }
        }
        r.weight = w.at({0, h, t, r.most_attended});
        rows.push_back(r);
      }
    }
  }
  return rows;
}

}  // namespace attograd::gpt
