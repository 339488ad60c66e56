#include "gpt/model/language_model.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "autograd/allocator.h"
#include "autograd/engine.h"
#include "autograd/ops.h"
#include "autograd/size_math.h"
#include "gpt/io/fields.h"
#include "gpt/model/bigram_average.h"
#include "gpt/model/field_ranges.h"
#include "nn/io/utf8.h"

namespace attograd::gpt {

namespace {

// The model kinds, one row each: their names (a checkpoint's "model", --model), what each is
// (--help), and the config fields each reads (the others are refused as overrides).
struct KindRow {
  ModelKind kind;
  const char* name;
  const char* description;
  std::vector<std::string> reads;  // GPTConfig field names; empty: every field
  const char* unused_why;          // why an override it does not read is refused
};
const std::vector<KindRow>& kinds() {
  static const std::vector<KindRow> rows = {
      {ModelKind::gpt, "gpt", "the GPT-2 transformer", {}, ""},
      {ModelKind::bigram,
       "bigram",
       "a V x V table of logits: logits = W[token]",
       {"vocab_size", "block_size"},
       "a table of next-token logits: it reads only --block-size"},
      {ModelKind::average,
       "average",
       "the causal mean of the context's token + position embeddings, then ln_f and the tied "
       "head, no attention",
       {"vocab_size", "block_size", "n_embd", "pos_encoding", "bias"},
       "embeddings averaged over the context: no blocks, heads or dropout"},
  };
  return rows;
}
const KindRow& row_of(ModelKind kind) {
  for (const KindRow& r : kinds())
    if (r.kind == kind) return r;
  throw std::logic_error("model_kind: no row for this kind");
}

// GPT-2's weight-decay rule (nanoGPT's configure_optimizers): every 2-D parameter, the
// embeddings and the matrices, decays; biases and LayerNorm gains and shifts do not.
bool decays(const Tensor& p) { return p.dim() >= 2; }

// The bytes `copies` copies of `num_params` parameters in `dtype` take.
size_t parameter_bytes(int64_t num_params, DType dtype, int copies) {
  return checked_mul(
      checked_mul(static_cast<size_t>(num_params), dtype_size(dtype), "parameter bytes"),
      static_cast<size_t>(copies), "parameter bytes");
}

// Throws ConfigRuleError for the first broken rule between c's fields but the parameter limit,
// which counts a GPT's parameters: checked apart for the other kinds (validate_for), and before
// the vocabulary is known (check_config_before_vocab).
void refuse_broken_rules_but_the_limit(const GPTConfig& c) {
  if (const auto rule = c.broken_rule(); rule && *rule != ConfigRule::parameter_limit)
    throw ConfigRuleError(*rule, c);
}

}  // namespace

bool fits_in_memory(int64_t num_params, DType dtype, int copies) {
  const size_t have = physical_memory_bytes();
  return have == 0 || parameter_bytes(num_params, dtype, copies) <= have;
}

void require_memory(int64_t num_params, DType dtype, int copies, const std::string& what,
                    const std::string& label) {
  if (fits_in_memory(num_params, dtype, copies)) return;
  const size_t have = physical_memory_bytes();
  const auto n = static_cast<size_t>(num_params);
  const size_t need = parameter_bytes(num_params, dtype, copies);
  auto gb = [](size_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GB", static_cast<double>(bytes) / 1e9);
    return std::string(buf);
  };
  throw std::runtime_error(label + ": the model's " + std::to_string(n) + " parameters need " +
                           gb(need) + " in " + dtype_name(dtype) + " (" + what +
                           "), more than this machine's " + gb(have) +
                           " of memory; choose a smaller n_layer, n_embd, vocab_size or "
                           "block_size");
}

const char* model_kind_name(ModelKind kind) { return row_of(kind).name; }

const char* model_kind_description(ModelKind kind) { return row_of(kind).description; }

std::vector<std::string> model_kind_names() {
  std::vector<std::string> names;
  for (const KindRow& r : kinds()) names.emplace_back(r.name);
  return names;
}

Choices model_kind_choices() {
  // Built once from the table above, so that the spans stay valid.
  static const auto lists = [] {
    std::pair<std::vector<const char*>, std::vector<const char*>> l;
    for (int i = 0;; ++i) {
      const auto it = std::find_if(kinds().begin(), kinds().end(),
                                   [i](const KindRow& r) { return static_cast<int>(r.kind) == i; });
      if (it == kinds().end()) break;
      l.first.push_back(it->name);
      l.second.push_back(it->description);
    }
    return l;
  }();
  return Choices{lists.first, lists.second};
}

ModelKind parse_model_kind(const std::string& name) {
  for (const KindRow& r : kinds())
    if (name == r.name) return r.kind;
  std::string names;
  for (const KindRow& r : kinds()) {
    if (!names.empty()) names += ", ";
    names += r.name;
  }
  throw std::invalid_argument("unknown model '" + nn::escape_controls(name.substr(0, 40)) +
                              "': choose one of " + names);
}

int64_t num_parameters(ModelKind kind, const GPTConfig& c) {
  const char* what = "num_parameters";
  switch (kind) {
    case ModelKind::gpt:
      return c.num_parameters();
    case ModelKind::bigram:
      return checked_mul(c.vocab_size, c.vocab_size, what);
    case ModelKind::average: {
      const int64_t wte = checked_mul(c.vocab_size, c.n_embd, what);
      const int64_t wpe =
          c.pos_encoding == PosEncoding::learned ? checked_mul(c.block_size, c.n_embd, what) : 0;
      return checked_add(checked_add(wte, wpe, what), (c.bias ? 2 : 1) * c.n_embd, what);
    }
  }
  return 0;
}

void validate_for(ModelKind kind, const GPTConfig& c) {
  if (kind == ModelKind::gpt) return c.validate();
  validate_fields(c, "GPTConfig");
  refuse_broken_rules_but_the_limit(c);
  const int64_t n = num_parameters(kind, c);
  if (n <= limits::max_parameters) return;
  std::string sizes = "vocab_size " + std::to_string(c.vocab_size);
  if (reads_field(kind, "n_embd")) sizes += ", n_embd " + std::to_string(c.n_embd);
  if (kind == ModelKind::average && c.pos_encoding == PosEncoding::learned)
    sizes += ", block_size " + std::to_string(c.block_size);  // its wpe
  throw std::invalid_argument("GPTConfig: the " + std::string(model_kind_name(kind)) +
                              " model of " + sizes + " has " + std::to_string(n) +
                              " parameters, more than the limit of " +
                              std::to_string(limits::max_parameters) + "; choose a smaller model");
}

LanguageModel::LanguageModel(ModelKind kind, const GPTConfig& config, uint64_t seed, DType dtype,
                             std::string label)
    : config_(config),
      dtype_(dtype),
      label_(std::move(label)),
      dropout_gen_(std::make_unique<Generator>(seed + 1)) {
  validate_for(kind, config_);
  if (dtype == DType::i64)
    throw std::invalid_argument(label_ + ": the model dtype must be f32 or f64");
  require_memory(gpt::num_parameters(kind, config_), dtype, 2, "weights and gradients", label_);
  arena_ =
      std::make_unique<nn::ParameterArena>();  // the derived constructor's layers register into it
}

Tensor LanguageModel::register_embeddings(Generator& gen, std::shared_ptr<nn::Embedding>& wte,
                                          std::shared_ptr<nn::Embedding>& wpe) {
  const GPTConfig& c = config_;
  wte =
      register_module("wte", std::make_shared<nn::Embedding>(c.vocab_size, c.n_embd, gen, dtype_));
  if (c.pos_encoding == PosEncoding::learned)
    wpe = register_module("wpe",
                          std::make_shared<nn::Embedding>(c.block_size, c.n_embd, gen, dtype_));
  // A table computed from the config: a buffer that checkpoints need not hold (torch's
  // register_buffer(..., persistent=False)), named as the PyTorch tutorial's PositionalEncoding.
  return c.pos_encoding == PosEncoding::sinusoidal
             ? register_buffer("pe", nn::sinusoidal_table(c.block_size, c.n_embd, dtype_),
                               /*persistent=*/false)
             : Tensor();
}

void LanguageModel::pack_parameters() {
  // The decayed weights first, so that each of param_groups() is one range of the arena.
  std::vector<std::pair<std::string, Tensor>> named = named_parameters();
  std::stable_partition(named.begin(), named.end(),
                        [](const auto& np) { return decays(np.second); });
  arena_->allocate(std::move(named));
}

std::vector<nn::ParamGroup> LanguageModel::param_groups(double weight_decay) const {
  std::vector<nn::ParamGroup> groups{{.params = {}, .weight_decay = weight_decay},
                                     {.params = {}, .weight_decay = 0.0}};
  for (const auto& [name, p] : arena_->named_parameters())
    groups[decays(p) ? 0 : 1].params.push_back(p);
  return groups;
}

void LanguageModel::check_inputs(const Tensor& idx, const Tensor& targets, int64_t past) const {
  const GPTConfig& c = config_;
  if (!idx.defined() || idx.dtype() != DType::i64 || idx.dim() != 2)
    throw std::invalid_argument(
        label_ + ": expected idx as i64 token ids (B, T), got " +
        (idx.defined() ? std::string(dtype_name(idx.dtype())) + " " + shape_str(idx.shape())
                       : std::string("an undefined tensor")));
  const int64_t T = idx.size(1);
  if (past + T > c.block_size)
    throw std::invalid_argument(
        label_ + ": sequence length T = " + std::to_string(T) +
        (past > 0 ? " after " + std::to_string(past) + " cached positions" : std::string()) +
        " exceeds block_size " + std::to_string(c.block_size) +
        " (crop the context to the last block_size tokens)");
  if (T == 0 || idx.size(0) == 0)
    throw std::invalid_argument(label_ + ": empty input " + shape_str(idx.shape()));
  if (targets.defined() && (targets.dtype() != DType::i64 || targets.shape() != idx.shape()))
    throw std::invalid_argument(label_ + ": expected targets i64 " + shape_str(idx.shape()) +
                                " like idx, got " + dtype_name(targets.dtype()) + " " +
                                shape_str(targets.shape()));
  for (const Tensor* t : {&idx, &targets}) {
    if (!t->defined()) continue;
    const Tensor ids_tensor = contiguous(*t);  // t itself when contiguous: read in place
    const int64_t* ids = ids_tensor.data<int64_t>();
    for (int64_t i = 0; i < ids_tensor.numel(); ++i)
      if ((ids[i] < 0 || ids[i] >= c.vocab_size) && !(t == &targets && ids[i] == kIgnoreTarget))
        throw std::out_of_range(
            label_ + ": " + (t == &idx ? "token id " : "target id ") + std::to_string(ids[i]) +
            " at (" + std::to_string(i / T) + ", " + std::to_string(i % T) + ") is outside [0, " +
            std::to_string(c.vocab_size) + ") (vocab_size " + std::to_string(c.vocab_size) + ")");
  }
}

Tensor LanguageModel::add_positions(const Tensor& x, const nn::Embedding* wpe,
                                    const Tensor& sinusoidal, int64_t past) {
  const int64_t T = x.size(1);
  if (wpe != nullptr) {
    Tensor pos = Tensor::empty({T}, DType::i64);
    for (int64_t t = 0; t < T; ++t) pos.data<int64_t>()[t] = past + t;
    return add(x, (*wpe)(pos));  // (T, C) broadcast over B
  }
  if (sinusoidal.defined()) return add(x, slice(sinusoidal, 0, past, past + T));
  return x;
}

void ModelOutput::defer_logits(const Tensor& head_input, const Tensor& head_weight) {
  head_input_ = head_input;
  head_weight_ = head_weight;
  head_input_version_ = head_input.version();
  head_weight_version_ = head_weight.version();
}

const Tensor& ModelOutput::logits() const {
  if (logits_.defined()) return logits_;
  if (!head_input_.defined())
    throw std::logic_error("ModelOutput: no logits (an output no forward filled)");
  if (head_input_.version() != head_input_version_ ||
      head_weight_.version() != head_weight_version_)
    throw std::logic_error(
        "ModelOutput::logits: this training forward fused the head into the loss, and its weights "
        "(or the head's input) were changed in place since (an optimizer step?), so its logits "
        "can no longer be computed; read logits() before step(), or run forward again");
  logits_ = linear(head_input_, head_weight_);  // (B, T, V): what the unfused head computes
  return logits_;
}

ModelOutput LanguageModel::tied_head(const Tensor& x, const Tensor& weight, const Tensor& targets,
                                     double label_smoothing) {
  ModelOutput out;
  if (targets.defined() && grad_enabled()) {
    // Training: the head and the loss as one op, whose (B T, V) logits become their own gradient
    // in the backward, so the largest tensor of the step exists once (ops.h). logits() computes
    // them again if asked.
    out.loss = linear_cross_entropy(x, weight, targets, kIgnoreTarget, label_smoothing);
    out.defer_logits(x, weight);
  } else {
    out.set_logits(linear(x, weight));  // (B, T, V)
    if (targets.defined())
      out.loss = cross_entropy(out.logits(), targets, kIgnoreTarget, label_smoothing);
  }
  return out;
}

double gpt_flops_per_token(const GPTConfig& c, int64_t T) {
  const int64_t wpe = c.pos_encoding == PosEncoding::learned ? c.block_size * c.n_embd : 0;
  const auto n = static_cast<double>(c.num_parameters() - wpe);
  return 6 * n + 12 * static_cast<double>(c.n_layer) * static_cast<double>(c.n_embd) *
                     static_cast<double>(T);
}

bool reads_field(ModelKind kind, const std::string& name) {
  const KindRow& row = row_of(kind);
  return row.reads.empty() ||
         std::find(row.reads.begin(), row.reads.end(), name) != row.reads.end();
}

std::string UnusedOverrideError::sentence(const std::string& subject, ModelKind kind,
                                          const std::string& why, const std::string& removal,
                                          const std::string& other_way) {
  return subject + " does not apply to --model " + model_kind_name(kind) + " (" + why + "); " +
         removal + (other_way.empty() ? "" : ", or " + other_way);
}

UnusedOverrideError::UnusedOverrideError(std::string field, const std::string& flag, ModelKind kind,
                                         std::string why, std::string other_way)
    : std::invalid_argument(sentence(flag, kind, why, "drop it", other_way)),
      field_(std::move(field)),
      kind_(kind),
      why_(std::move(why)),
      other_way_(std::move(other_way)) {}

void refuse_unused_overrides(const ConfigOverrides& a, ModelKind kind,
                             const std::string& init_from) {
  const KindRow& row = row_of(kind);
  GPTConfig::for_each_field([&](const auto& f) {
    if (!a.has(f.name) || reads_field(kind, f.name)) return;
    if (init_from.empty()) throw UnusedOverrideError(f.name, f.flag, kind, row.unused_why);
    throw UnusedOverrideError(f.name, f.flag, kind,
                              std::string(row.unused_why) + "; the model in " +
                                  nn::escape_controls(init_from) + " is one",
                              "");
  });
}

namespace {

// The preset with the overrides applied, before any check.
GPTConfig configured(const ConfigOverrides& a, std::optional<int64_t> tokenizer_vocab,
                     ModelKind kind) {
  GPTConfig c = preset(a.preset);
  if (tokenizer_vocab) c.vocab_size = *tokenizer_vocab;
  c = a.applied_to(c);
  if (kind != ModelKind::gpt) c.n_head = 1;  // else the preset's 3 heads must divide n_embd
  return c;
}

}  // namespace

GPTConfig build_config(const ConfigOverrides& a, std::optional<int64_t> tokenizer_vocab,
                       ModelKind kind) {
  GPTConfig c = configured(a, tokenizer_vocab, kind);
  validate_for(kind, c);
  return c;
}

void check_config_before_vocab(const ConfigOverrides& a, ModelKind kind) {
  refuse_unused_overrides(a, kind);
  const GPTConfig c = configured(a, std::nullopt, kind);  // the preset's vocab_size, for now
  validate_fields(c, "GPTConfig");
  // The average model's own refusals first: with rope it has no use for an even head_dim.
  if (kind == ModelKind::average) AverageModel::check_config(c);
  refuse_broken_rules_but_the_limit(c);
}

}  // namespace attograd::gpt
