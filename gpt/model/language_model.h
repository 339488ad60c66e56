// LanguageModel: what the trainer, the sampler, evaluation and checkpoints need of a
// next-token model, so that the lecture's models train and sample the same way:
//   gpt      the GPT-2 transformer (gpt/model/gpt2.h)
//   bigram   a V x V table of logits, logits = W[token] (lecture 19's model,
//   gpt/model/bigram_average.h) average  each position's causal mean of the context embeddings,
//   then GPT's LayerNorm and
//            tied head, with no attention (the lecture's first step, gpt/model/bigram_average.h)
// All three keep their parameters in one arena (decayed weights first), so AdamW, gradient
// clipping and checkpoints treat them alike.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/random.h"
#include "autograd/tensor.h"
#include "gpt/model/config.h"
#include "nn/layers.h"
#include "nn/module.h"
#include "nn/optim.h"

namespace attograd::gpt {

/// The model families `attograd train --model` builds.
enum class ModelKind { gpt, bigram, average };

/// "gpt", "bigram" or "average" (the name a checkpoint's metadata "model" holds).
const char* model_kind_name(ModelKind kind);
/// What the model of `kind` is, in a few words (the CLI's --help for --model).
const char* model_kind_description(ModelKind kind);
/// Every kind's name, in the enum's order: the list the CLI checks --model against.
std::vector<std::string> model_kind_names();
/// Parses a name; throws std::invalid_argument listing the valid names.
ModelKind parse_model_kind(const std::string& name);
/// The kinds' names and descriptions in the enum's order, as a field table's range.
Choices model_kind_choices();

/// The number of trainable parameters of the model of `kind` that `config` builds, from the
/// sizes alone (nothing is allocated). Throws std::overflow_error if it does not fit int64_t.
int64_t num_parameters(ModelKind kind, const GPTConfig& config);

/// GPTConfig::validate for the model of `kind`: a GPT's own; for the bigram and average models
/// every rule but the parameter limit, which counts that model's parameters (num_parameters(kind,
/// c)) rather than a GPT's of the same sizes (`--model average --n-embd 24000` was refused as
/// 20.7e9 parameters, its preset's 3 GPT layers, where the average model has 1.8 M). Throws
/// std::invalid_argument (ConfigRuleError for a rule between fields).
void validate_for(ModelKind kind, const GPTConfig& c);

/// The floating-point operations one trained token costs a GPT of config `c` on sequences of T
/// tokens, forward and backward: 6 N + 12 n_layer n_embd T, N the parameters but the learned
/// position table wpe (a lookup, not a matmul). 6 N is the matmuls (2 N forward, 4 N backward:
/// the gradients of the inputs and of the weights), 12 n_layer n_embd T attention's Q Kᵀ and
/// A V over the T positions (PaLM, Chowdhery et al. 2022, appendix B; nanoGPT's estimate_mfu,
/// which counts the causal mask's skipped half too). An estimate: the norms, GELU, softmax and
/// AdamW are left out. Throws std::overflow_error as GPTConfig::num_parameters.
double gpt_flops_per_token(const GPTConfig& c, int64_t T);

/// What refuse_unused_overrides throws: std::invalid_argument naming the override by its flag
/// ("--n-layer does not apply to --model bigram (...); drop it, or train --model gpt"), carrying
/// the field and its reason, so that a front end can name it as it was given (the CLI: a config
/// file's key, with the file). `other_way` is the fix besides removing the override ("train
/// --model gpt"), or "" where there is none (a model read from train --init-from's file).
class UnusedOverrideError : public std::invalid_argument {
 public:
  UnusedOverrideError(std::string field, const std::string& flag, ModelKind kind, std::string why,
                      std::string other_way = "train --model gpt");
  /// The field's name in GPTConfig's table ("n_layer").
  const std::string& field() const { return field_; }
  /// The same refusal with the override named as `subject` ("model.n_layer of config file
  /// 'run.json'") and removed by `removal` ("remove the key from that file") in place of "drop
  /// it"; the other way, if any, follows.
  std::string said_of(const std::string& subject, const std::string& removal) const {
    return said_of(subject, removal, other_way_);
  }
  /// The same with the other way named as the front end offers it ("set kind to 'gpt'" in the
  /// page's requests), or "" for none.
  std::string said_of(const std::string& subject, const std::string& removal,
                      const std::string& other_way) const {
    return sentence(subject, kind_, why_, removal, other_way);
  }

 private:
  static std::string sentence(const std::string& subject, ModelKind kind, const std::string& why,
                              const std::string& removal, const std::string& other_way);
  std::string field_;
  ModelKind kind_;
  std::string why_;
  std::string other_way_;
};

/// Throws UnusedOverrideError naming the first override the model of `kind` would ignore: a
/// bigram reads only block_size (and the vocabulary); the average model also n_embd,
/// pos_encoding and the bias; the GPT reads them all. `init_from`, when not empty, is the file
/// the model was read from (train --init-from, where the kind is the file's, not a choice): the
/// refusal names it and offers no other model.
void refuse_unused_overrides(const ConfigOverrides& overrides, ModelKind kind,
                             const std::string& init_from = "");

/// Whether the model of `kind` reads the GPTConfig field `name` (the GPT reads every field).
bool reads_field(ModelKind kind, const std::string& name);

/// The preset with the overrides applied; vocab_size from the tokenizer (`tokenizer_vocab`)
/// unless overridden. For the bigram and average models, which have no heads, n_head is 1 (so
/// any n_embd is valid). Throws std::invalid_argument for an unknown preset or an inconsistent
/// result (GPTConfig::validate).
GPTConfig build_config(const ConfigOverrides& overrides, std::optional<int64_t> tokenizer_vocab,
                       ModelKind kind = ModelKind::gpt);

/// build_config's checks that hold whatever the vocabulary turns out to be, for a caller that
/// can run them before it reads the corpus (train: a large corpus takes a while to read and
/// tokenize, and a wrong --n-head must not wait for it): refuse_unused_overrides, each field in
/// its range, the average model's own refusals (AverageModel::check_config: rope, a huge
/// block_size), and the rules between fields except the parameter count (ConfigRule::
/// parameter_limit, which vocab_size decides with the rest). Throws what build_config, or the
/// model's constructor, would.
void check_config_before_vocab(const ConfigOverrides& overrides, ModelKind kind);

/// Refuses a model this machine cannot hold before it is built: allocated, it would fill the
/// memory (and be killed by the kernel) long before one allocation failed. `copies` copies of the
/// `num_params` parameters in `dtype` must fit in physical memory: 2 for a model (the arena holds
/// weights and gradients), 4 for training with AdamW (its two moments too; activations come on
/// top). Throws std::runtime_error naming `label`, the size in GB, `what` the copies are, and the
/// fix.
void require_memory(int64_t num_params, DType dtype, int copies, const std::string& what,
                    const std::string& label);

/// The copies of the parameters training holds (require_memory's `copies`): weights, gradients
/// and AdamW's two moments.
inline constexpr int kTrainingCopies = 4;

/// The copies a size that a message suggests for training must fit (fits_in_memory's `copies`):
/// the training state twice, so that following the suggestion leaves half the memory to the
/// activations, the system and the rest (the training state alone at the limit of physical
/// memory passes require_memory and is then killed for memory).
inline constexpr int kSuggestedTrainingCopies = 2 * kTrainingCopies;

/// Whether require_memory with these arguments passes (true where the memory is unknown), for a
/// caller that suggests sizes: a fix must not lead to the next refusal.
bool fits_in_memory(int64_t num_params, DType dtype, int copies);

/// A target that adds no loss and no gradient (padding), nanoGPT's ignore_index: see
/// cross_entropy in autograd/ops.h.
constexpr int64_t kIgnoreTarget = -1;

/// The output of a forward pass: logits() and loss, as nanoGPT's `logits, loss = model(x, y)`.
class ModelOutput {
 public:
  /// Scalar mean cross-entropy over the B*T positions whose target is not kIgnoreTarget (0 if all
  /// are; label-smoothed when asked); undefined without targets.
  Tensor loss;

  /// The logits (B, T, vocab_size), in the model's dtype, part of the graph when it was
  /// recorded. A training forward (targets given, grad mode on) of a model with a tied head
  /// computes the head inside the loss (linear_cross_entropy), so that the (B T, V) logits, the
  /// largest tensor of a step, exist once and become their own gradient; the logits are then
  /// computed here on the first call, from the head's input and weight that forward saw: what
  /// the unfused head computes (forward(idx) gives the same numbers when dropout is off) and,
  /// in grad mode before backward(), a graph to backpropagate through. The cost is paid only
  /// when read: one more (B T, C) x (C, V)
  /// product and the (B, T, V) tensor (GPT-2 small at B = 8, T = 1024: 2 * 8192 * 768 * 50257
  /// = 0.63 TFLOP, a third of the head's share of a step, and 1.6 GB in f32), which is why the
  /// forward does not compute them unasked. Throws std::logic_error when the
  /// weights or the head's input were changed in place since that forward (an optimizer step:
  /// the logits it computed are gone; read them before step(), or run forward again), and for
  /// an output without logits (a default-constructed one).
  const Tensor& logits() const;
  /// True when logits() returns without computing anything (they were computed in the forward,
  /// or read once already).
  bool has_logits() const { return logits_.defined(); }

  /// For a model's forward: the logits it computed.
  void set_logits(Tensor logits) { logits_ = std::move(logits); }
  /// For a model's forward that fused its head into the loss: logits() computes
  /// linear(head_input, head_weight) on demand, if neither has changed by then.
  void defer_logits(const Tensor& head_input, const Tensor& head_weight);

 private:
  mutable Tensor logits_;
  Tensor head_input_, head_weight_;
  uint64_t head_input_version_ = 0, head_weight_version_ = 0;
};

/// A next-token language model over token ids [0, config().vocab_size) with contexts of at most
/// config().block_size tokens. Parameter names are the checkpoint's tensor names.
class LanguageModel : public nn::Module {
 public:
  ~LanguageModel() override = default;
  virtual ModelKind kind() const = 0;

  /// idx: i64 (B, T) token ids with 1 <= T <= block_size and ids in [0, vocab_size);
  /// targets: i64 (B, T) in [0, vocab_size) or kIgnoreTarget, or undefined. Both are checked
  /// before any memory is read: std::invalid_argument for a shape problem, std::out_of_range
  /// for an id. label_smoothing ε in [0, 1] (PyTorch's; cross_entropy in autograd/ops.h) makes
  /// the loss (1 − ε)(−log p_target) + ε mean_c(−log p_c): the trainer's loss only, never an
  /// evaluation's (a perplexity is of the plain cross-entropy); std::invalid_argument outside.
  virtual ModelOutput forward(const Tensor& idx, const Tensor& targets = Tensor(),
                              double label_smoothing = 0.0) const = 0;

  const GPTConfig& config() const { return config_; }
  DType dtype() const { return dtype_; }
  /// The optimizer groups of GPT-2 / nanoGPT's configure_optimizers: weight_decay on the 2-D
  /// weights (embeddings, matrices), none on biases and LayerNorm parameters. Each group is one
  /// contiguous range of the arena (decayed weights first), so AdamW updates each in one pass
  /// and keeps its moments in arena order (what checkpoints store).
  std::vector<nn::ParamGroup> param_groups(double weight_decay) const;
  /// The single buffer behind every parameter and gradient (what optimizers update).
  nn::ParameterArena& arena() { return *arena_; }
  const nn::ParameterArena& arena() const { return *arena_; }
  /// The generator dropout draws from (part of the training state a checkpoint saves).
  Generator& dropout_generator() { return *dropout_gen_; }

 protected:
  /// Validates config (GPTConfig::validate) and dtype (f32 or f64, else std::invalid_argument),
  /// and refuses, with std::runtime_error before anything is allocated, a model that needs more
  /// than this machine's physical memory. `label` starts every error message ("GPT"). Opens the
  /// arena the derived constructor's layers register their parameters in.
  LanguageModel(ModelKind kind, const GPTConfig& config, uint64_t seed, DType dtype,
                std::string label);
  /// The input layer GPT and AverageModel share: registers wte (vocab_size, n_embd) and, with
  /// learned positions, wpe (block_size, n_embd), drawing their init from `gen` in that order,
  /// and returns the (block_size, n_embd) table with sinusoidal positions, registered as the
  /// non-persistent buffer "pe" (else undefined).
  Tensor register_embeddings(Generator& gen, std::shared_ptr<nn::Embedding>& wte,
                             std::shared_ptr<nn::Embedding>& wpe);
  /// Allocates the arena (open since this constructor) with the registered parameters, decayed
  /// weights first, and initialises them; call once, at the end of the derived constructor.
  void pack_parameters();
  /// The checks forward() promises, for positions past .. past + T - 1 (past: cached positions).
  void check_inputs(const Tensor& idx, const Tensor& targets, int64_t past = 0) const;
  /// x (B, T, C) plus the positions past .. past + T - 1: rows of the learned table wpe when
  /// given, else of the fixed `sinusoidal` table when defined, else x itself (RoPE, or none).
  static Tensor add_positions(const Tensor& x, const nn::Embedding* wpe, const Tensor& sinusoidal,
                              int64_t past);
  /// The tied head and the loss: logits = x weightᵀ, x (B, T, C), weight (V, C). While training
  /// with targets, the two run as one op (linear_cross_entropy) and the logits are computed only
  /// if read (ModelOutput::logits).
  /// label_smoothing as forward's.
  static ModelOutput tied_head(const Tensor& x, const Tensor& weight, const Tensor& targets,
                               double label_smoothing = 0.0);

  GPTConfig config_;
  DType dtype_;
  std::string label_;
  std::unique_ptr<Generator> dropout_gen_;
  std::unique_ptr<nn::ParameterArena> arena_;
};

}  // namespace attograd::gpt
