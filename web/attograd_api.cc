// The companion page's interface to the engine (web/README.md): one C function, JSON in and JSON
// out, compiled to WebAssembly with the rest of attograd (scripts/wasm.sh) and wrapped for
// JavaScript by web/attograd.js.
//
// Why one extern "C" function and not embind: nothing of C++ crosses the boundary, so every
// exception the engine throws is caught here and becomes {"error": "<the engine's message>"},
// which attograd.js turns into a JavaScript Error with that message. Emscripten 3.1.6's embind
// would hand JavaScript a bare pointer for a C++ exception (its message getter came later), and
// brings a larger runtime. Numbers travel as JSON: the page's models are tiny (femto 232
// parameters, pico 2,028) and the workbench's matrices a few rows, so JSON costs nothing next to
// the maths. Checkpoints travel as files in emscripten's in-memory file system, written and read
// by the same code as the CLI's (Trainer::save, open_checkpoint), which attograd.js moves to and
// from JavaScript bytes.
//
// The module holds one model at a time (the page trains one, in a Web Worker): "model_new" or
// "load" replaces it. Requests ({"cmd": ...}, fields below each handler) and their answers are
// listed in web/README.md. Shapes: T the tokens of a prompt, d_k the width of Q and K, d_v of V,
// n_head heads, V the vocabulary.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <numbers>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "autograd/kernels/targets.h"
#include "autograd/op_registry.h"
#include "autograd/ops.h"
#include "autograd/random.h"
#include "gpt/io/json_fields.h"
#include "gpt/model/attribution.h"
#include "gpt/model/bigram_average.h"
#include "gpt/model/config.h"
#include "gpt/model/field_ranges.h"
#include "gpt/model/gpt2.h"
#include "gpt/model/language_model.h"
#include "gpt/model/open_model.h"
#include "gpt/model/sampler.h"
#include "gpt/text/char_tokenizer.h"
#include "gpt/text/corpus.h"
#include "gpt/text/dataset.h"
#include "gpt/train/prepare.h"
#include "gpt/train/trainer.h"
#include "lecture/attention_by_hand.h"
#include "nn/io/strict_json.h"
#include "nn/io/utf8.h"
#include "nn/layers.h"
#include "web/attograd_api.h"

namespace attograd::web {
namespace {

using json = nlohmann::json;

// x as JSON, which has no NaN or infinity: those as the strings "nan", "inf" and "-inf".
json number_json(double x) {
  if (std::isfinite(x)) return x;
  return std::isnan(x) ? "nan" : x > 0 ? "inf" : "-inf";
}

// A (rows, cols) tensor as nested arrays; -inf (the causal mask's entries) as null, which JSON
// cannot spell otherwise, and an overflow to +inf or a NaN as the strings "inf" and "nan" (so
// that the page does not draw them as the mask's -inf).
json matrix_json(const Tensor& t) {
  const std::vector<double> v = t.to_vector();
  const int64_t rows = t.size(0), cols = t.size(1);
  json out = json::array();
  for (int64_t r = 0; r < rows; ++r) {
    json row = json::array();
    for (int64_t c = 0; c < cols; ++c) {
      const double x = v[static_cast<size_t>(r * cols + c)];
      row.push_back(std::isinf(x) && x < 0 ? json(nullptr) : number_json(x));
    }
    out.push_back(row);
  }
  return out;
}

json vector_json(const Tensor& t) { return t.to_vector(); }

// A request's fields, read as strictly as a config file (issue 31, kind 11): through
// gpt::JsonFields' getters and read_config_section, the readers of --config and the checkpoint
// metadata. A number where an integer belongs (512.9, 1e300), a value outside its range (seed
// -5), null, a value of another type and a key the command does not read are refused with the
// command, the key and the value named; an absent key takes its default. The request's text is
// read by nn::parse_json, which refuses a key given twice ("cmd" twice ran the last one).
// Every handler reads all of its fields, then calls finish() before it changes anything, so a
// refused request leaves the model as it was.
class Request {
 public:
  /// `request` is the parsed request, whose "cmd" is `cmd`.
  Request(json request, std::string cmd)
      : fields_(std::move(request), "request '" + cmd + "'"), cmd_(std::move(cmd)) {}

  std::string string(const std::string& key) {
    need(key);
    return fields_.string(key);
  }
  std::string string(const std::string& key, const std::string& fallback) {
    return has(key) ? fields_.string(key) : fallback;
  }
  /// A name (a kind, preset, op, dtype, word) or a path: a string of at most `max` bytes
  /// without control characters. Every message that names one prints it, and a NUL would cut
  /// that message, or a path, short (issue 31).
  std::string name(const std::string& key, const std::string& fallback, size_t max = 256) {
    return has(key) ? checked_name(key, fields_.string(key), max) : fallback;
  }
  std::string name(const std::string& key, size_t max = 256) {
    need(key);
    return checked_name(key, fields_.string(key), max);
  }
  bool boolean(const std::string& key, bool fallback) {
    return has(key) ? fields_.boolean(key) : fallback;
  }
  int64_t integer(const std::string& key, int64_t fallback, int64_t lo, int64_t hi) {
    return has(key) ? fields_.integer(key, lo, hi) : fallback;
  }
  /// An integer in [0, 2^64), or nullopt when absent.
  std::optional<uint64_t> seed(const std::string& key) {
    return has(key) ? std::optional(fields_.unsigned_integer(key)) : std::nullopt;
  }
  double number(const std::string& key, double fallback, gpt::RealRange r) {
    return has(key) ? fields_.number(key, r) : fallback;
  }
  /// An array of 1 to `max` strings.
  std::vector<std::string> strings(const std::string& key, size_t max) {
    need(key);
    const json& v = fields_.object().at(key);
    const auto is_string = [](const json& x) { return x.is_string(); };
    if (!v.is_array() || v.empty() || v.size() > max || !std::all_of(v.begin(), v.end(), is_string))
      throw std::invalid_argument(what() + ": " + key + " is " + nn::json_excerpt(v) +
                                  ", expected an array of 1 to " + std::to_string(max) +
                                  " strings");
    std::vector<std::string> out;
    for (const json& word : v) out.push_back(checked_name(key, word.get<std::string>(), 256));
    return out;
  }
  /// The rows of S's table that `keep` accepts and a config file holds, read as --config reads
  /// them (gpt::read_config_section: "request 'model_new': beta2 (--beta2) is 1, expected a
  /// finite number in [0, 1)"); returns the names given.
  template <class S, class Keep>
  std::set<std::string> section(S& s, Keep keep) {
    S::for_each_field([&](const auto& f) {
      if (f.in_config_files() && keep(f)) has(f.name);
    });
    return gpt::read_config_section(fields_.object(), s, what(), keep);
  }
  /// Whether `key` is given; the command reads it either way (finish does not refuse it).
  bool has(const std::string& key) {
    if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.push_back(key);
    return fields_.has(key);
  }

  /// Refuses a key no getter asked for, naming the nearest one and every key the command reads.
  void finish() {
    finished_ = true;
    const json& request = fields_.object();
    for (auto it = request.begin(); it != request.end(); ++it) {
      if (std::find(known_.begin(), known_.end(), it.key()) != known_.end()) continue;
      const std::string near = gpt::nearest_name(it.key(), known_);
      throw std::invalid_argument(what() + " has no field '" + nn::json_key_text(it.key()) + "'" +
                                  (near.empty() ? "" : " (did you mean '" + near + "'?)") +
                                  "; its fields are " + gpt::join_names(known_, "and"));
    }
  }
  bool finished() const { return finished_; }

 private:
  std::string what() const { return "request '" + cmd_ + "'"; }
  // A field the command cannot do without.
  void need(const std::string& key) {
    if (!has(key)) throw std::invalid_argument(what() + " needs the field '" + key + "'");
  }
  std::string checked_name(const std::string& key, const std::string& value, size_t max) const {
    if (value.size() > max || !gpt::path_to_write_problem(value).empty())
      throw std::invalid_argument(what() + ": " + key + " is " + nn::json_excerpt(json(value)) +
                                  ", expected a name of at most " + std::to_string(max) +
                                  " bytes without control characters");
    return value;
  }

  gpt::JsonFields fields_;
  std::string cmd_;
  std::vector<std::string> known_{"cmd"};  // the keys the command reads, in the order asked
  bool finished_ = false;
};

// ---------------------------------------------------------------------------------------------
// Part 1, the attention workbench: the lecture's steps on the student's Q, K, V, with its
// toggles. Defaults (scaled, causal, softmax by row) are causal_attention_steps' computation.

// The steps of one head: Q, K (T, d_k) and V (T, d_v) in, each intermediate out.
struct HeadSteps {
  Tensor qk, scores, masked, weights, out;  // (T, T) four times, then (T, d_v)
};

// S = Q Kᵀ / sqrt(d_k); the mask; A = softmax over rows (or, the lecture's bug, columns); Z = A V.
HeadSteps attend(const Tensor& Q, const Tensor& K, const Tensor& V, bool scale, bool causal,
                 bool by_row) {
  HeadSteps s;
  s.qk = matmul(Q, transpose(K, -2, -1));
  s.scores = scale ? mul_scalar(s.qk, 1.0 / std::sqrt(static_cast<double>(Q.size(1)))) : s.qk;
  s.masked = causal ? causal_mask(s.scores) : s.scores;
  s.weights = by_row ? softmax(s.masked) : lecture::column_softmax(s.masked);
  s.out = matmul(s.weights, V);
  return s;
}

// One head's steps as JSON: its inputs, its (T, T) matrices with their sums, its output.
json head_json(const Tensor& Q, const Tensor& K, const Tensor& V, const HeadSteps& s) {
  return {{"d_k", Q.size(1)},
          {"d_v", V.size(1)},
          {"Q", matrix_json(Q)},
          {"K", matrix_json(K)},
          {"V", matrix_json(V)},
          {"qk", matrix_json(s.qk)},
          {"scores", matrix_json(s.scores)},
          {"masked", matrix_json(s.masked)},
          {"weights", matrix_json(s.weights)},
          {"row_sums", vector_json(sum(s.weights, {1}))},
          {"column_sums", vector_json(sum(s.weights, {0}))},
          {"out", matrix_json(s.out)}};
}

//   {"cmd": "attention", "Q": "1;2", "K": "1;3", "V": "10;20",
//    "scale": true, "causal": true, "softmax_by": "row" | "column", "heads": 1}
// With "heads": h > 1 (h dividing d_k and d_v), multi-head attention without projections, as
// nn::CausalSelfAttention splits its q, k and v (lecture::MultiHeadExample takes it apart the
// same way): head i attends with Q's and K's channels i·d_k/h .. (i+1)·d_k/h - 1 and V's
// likewise, scaled by sqrt(d_k / h); Z is the heads' outputs side by side (concat). The answer
// then holds "heads", each head's steps as head_json gives them, and Z as "out"; with one head,
// the steps are fields of the answer itself.
json attention(Request& r) {
  const std::string q_text = r.string("Q"), k_text = r.string("K"), v_text = r.string("V");
  const bool scale = r.boolean("scale", true), causal = r.boolean("causal", true);
  const std::string by = r.name("softmax_by", "row");
  const int64_t n_head = r.integer("heads", 1, 1, static_cast<int64_t>(lecture::kMaxMatrixSide));
  r.finish();
  if (by != "row" && by != "column")
    throw std::invalid_argument("softmax_by must be 'row' or 'column', got '" + by + "'");
  // The lecture library's parser and shape check: the same messages as attention_by_hand, and
  // its limit of 64 rows (T) and numbers a row (lecture::kMaxMatrixSide).
  const Tensor Q = lecture::parse_matrix(q_text, "Q");
  const Tensor K = lecture::parse_matrix(k_text, "K");
  const Tensor V = lecture::parse_matrix(v_text, "V");
  lecture::check_attention_shapes(Q, K, V);
  const int64_t T = Q.size(0), d_k = Q.size(1), d_v = V.size(1);
  if (d_k % n_head != 0 || d_v % n_head != 0)
    throw std::invalid_argument(
        "heads is " + std::to_string(n_head) + ", but d_k = " + std::to_string(d_k) +
        " and d_v = " + std::to_string(d_v) + " do not both split into " + std::to_string(n_head) +
        " equal parts: give Q, K and V a multiple of " + std::to_string(n_head) +
        " columns, or use fewer heads");

  // split -> attend -> concat (one head: the whole of Q, K and V).
  const int64_t hk = d_k / n_head, hv = d_v / n_head;
  std::vector<Tensor> outs;
  json heads = json::array(), single;
  for (int64_t h = 0; h < n_head; ++h) {
    const Tensor Qh = n_head == 1 ? Q : slice(Q, 1, h * hk, (h + 1) * hk);
    const Tensor Kh = n_head == 1 ? K : slice(K, 1, h * hk, (h + 1) * hk);
    const Tensor Vh = n_head == 1 ? V : slice(V, 1, h * hv, (h + 1) * hv);
    const HeadSteps s = attend(Qh, Kh, Vh, scale, causal, by == "row");
    outs.push_back(s.out);
    (n_head == 1 ? single : heads.emplace_back()) = head_json(Qh, Kh, Vh, s);
  }
  const Tensor out = n_head == 1 ? outs[0] : concat(std::span<const Tensor>(outs), 1);
  for (const double z : out.to_vector())
    if (!std::isfinite(z))
      throw std::invalid_argument(
          "the output Z overflowed to a non-finite number: use smaller values in Q, K or V");

  // Whether each Z[t, c] lies within the range of V's column c, as a weighted average must.
  const std::vector<double> v = V.to_vector(), z = out.to_vector();
  json outside = json::array();
  for (int64_t c = 0; c < d_v; ++c) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (int64_t t = 0; t < T; ++t) {
      lo = std::min(lo, v[static_cast<size_t>(t * d_v + c)]);
      hi = std::max(hi, v[static_cast<size_t>(t * d_v + c)]);
    }
    const double slack = 1e-9 * std::max(1.0, std::max(std::abs(lo), std::abs(hi)));
    for (int64_t t = 0; t < T; ++t) {
      const double x = z[static_cast<size_t>(t * d_v + c)];
      if (x < lo - slack || x > hi + slack)
        outside.push_back({{"t", t}, {"c", c}, {"z", x}, {"min", lo}, {"max", hi}});
    }
  }
  json answer = n_head == 1 ? std::move(single) : json{{"heads", std::move(heads)}};
  answer.update({{"T", T},
                 {"d_k", d_k},
                 {"d_v", d_v},
                 {"n_head", n_head},
                 {"Q", matrix_json(Q)},
                 {"K", matrix_json(K)},
                 {"V", matrix_json(V)},
                 {"out", matrix_json(out)},
                 {"out_outside_range_of_V", outside}});
  return answer;
}

// ---------------------------------------------------------------------------------------------
// Part 2, positions: the library's sinusoidal table, its rotary embedding, and the lecture's
// order example.

// {"cmd": "positions", "T", "n_embd"}: nn::sinusoidal_table (T, n_embd), the table a GPT with
// pos_encoding sinusoidal adds to its token embeddings.
json positions(Request& r) {
  const int64_t T = r.integer("T", 32, 1, 512);
  const int64_t C = r.integer("n_embd", 16, 2, 512);
  r.finish();
  return {{"T", T}, {"n_embd", C}, {"table", matrix_json(nn::sinusoidal_table(T, C, DType::f64))}};
}

// The angles, in [0, 2π), by which nn::apply_rope turns each of the d/2 channel pairs (i, i + d/2)
// at position `pos`: read off its rotation of the pairs' unit vectors (1, 0), so that the dial
// shows the library's rotation, not a second copy of its formula.
std::vector<double> rope_angles(int64_t d, int64_t pos) {
  std::vector<double> unit(static_cast<size_t>(d), 0.0);
  std::fill(unit.begin(), unit.begin() + d / 2, 1.0);
  const std::vector<double> turned =
      nn::apply_rope(Tensor::from_vector(unit, {1, d}, DType::f64), pos).to_vector();
  std::vector<double> angles;
  for (int64_t i = 0; i < d / 2; ++i) {
    const double a =
        std::atan2(turned[static_cast<size_t>(i + d / 2)], turned[static_cast<size_t>(i)]);
    angles.push_back(a < 0 ? a + 2 * std::numbers::pi : a);
  }
  return angles;
}

// {"cmd": "rope", "q": "1, 0.5", "k": "0.7, -0.2", "m", "n"}: q rotated to position m and k to
// position n by nn::apply_rope (one row each, of the same even length d, read by the workbench's
// parser), and their dot product, which depends on m and n only through m - n; beside it the dot
// product without rotation. "pairs" gives, per channel pair i, its frequency θ_i (the angle at
// position 1), its angles at m and at n (m·θ_i and n·θ_i, turned into [0, 2π)) and the angle
// between them ((m - n)·θ_i, likewise), for the page's dials.
json rope(Request& r) {
  const std::string q = r.string("q"), k = r.string("k");
  const int64_t m = r.integer("m", 0, 0, 100000), n = r.integer("n", 0, 0, 100000);
  r.finish();
  const Tensor Q = lecture::parse_matrix(q, "q");
  const Tensor K = lecture::parse_matrix(k, "k");
  const int64_t d = Q.size(1);
  if (Q.size(0) != 1 || K.size(0) != 1 || K.size(1) != d || d % 2 != 0 || d > 64)
    throw std::invalid_argument(
        "q and k need one row each of the same even length, 2 to 64 (RoPE rotates pairs of "
        "channels); q is " +
        std::to_string(Q.size(0)) + "x" + std::to_string(d) + " and k is " +
        std::to_string(K.size(0)) + "x" + std::to_string(K.size(1)));
  const Tensor rq = nn::apply_rope(Q, m), rk = nn::apply_rope(K, n);
  const double score = sum(mul(rq, rk)).item(), plain = sum(mul(Q, K)).item();
  // As the workbench refuses Z: an infinite score would reach the page as JSON's null.
  for (const double x : {score, plain})
    if (!std::isfinite(x))
      throw std::invalid_argument(
          "the score q·k overflowed to a non-finite number: use smaller values in q or k");
  const std::vector<double> theta = rope_angles(d, 1), at_m = rope_angles(d, m),
                            at_n = rope_angles(d, n);
  json pairs = json::array();
  for (size_t i = 0; i < theta.size(); ++i)
    pairs.push_back({{"theta", theta[i]},
                     {"angle_m", at_m[i]},
                     {"angle_n", at_n[i]},
                     {"angle_difference",
                      std::fmod(at_m[i] - at_n[i] + 2 * std::numbers::pi, 2 * std::numbers::pi)}});
  return {{"q_rotated", vector_json(reshape(rq, {d}))},
          {"k_rotated", vector_json(reshape(rk, {d}))},
          {"score", score},
          {"score_without_rope", plain},
          {"pairs", pairs}};
}

// {"cmd": "order", "words": ["dog", "bites", "man"], "positions": bool}: the lecture's order
// argument on its toy embeddings (lecture::embed_words), plus the sinusoidal table when
// `positions`: the mean over the tokens, and unmasked self-attention with q = k = v = x
// (lecture::self_attention), one output row per word.
json order(Request& r) {
  const std::vector<std::string> words = r.strings("words", 16);
  const bool positions = r.boolean("positions", false);
  r.finish();
  Tensor x = lecture::embed_words(words);
  if (positions) x = add(x, nn::sinusoidal_table(x.size(0), x.size(1), DType::f64));
  return {{"words", words},
          {"x", matrix_json(x)},
          {"mean", vector_json(mean(x, {0}))},
          {"attention", matrix_json(lecture::self_attention(x, false))}};
}

// ---------------------------------------------------------------------------------------------
// Parts 3 and 4: one model, its tokenizer, and (when it was made here) its data and trainer.
struct Workspace {
  std::unique_ptr<gpt::LanguageModel> model;
  std::unique_ptr<gpt::Tokenizer> tokenizer;
  std::unique_ptr<gpt::Dataset> data;     // only for a model made by model_new
  std::unique_ptr<gpt::Trainer> trainer;  // ditto
  gpt::TrainOptions options;
  Generator sample_gen{1337};
};
Workspace& workspace() {
  static Workspace w;
  return w;
}

Workspace& require_model() {
  Workspace& w = workspace();
  if (!w.model) throw std::logic_error("no model yet: build one (model_new) or load a checkpoint");
  return w;
}

// The settings the model's kind reads (reads_field), from GPTConfig's table under their JSON
// names, as a checkpoint's config writes them (json_fields): a bigram has no layers, heads or
// embedding, so the page must not show it "n_layer 1" that it never used.
json config_json(const gpt::LanguageModel& model) {
  json j = {{"kind", gpt::model_kind_name(model.kind())},
            {"parameters", gpt::num_parameters(model.kind(), model.config())}};
  static const auto fields = gpt::json_fields<gpt::GPTConfig>();
  const json all = gpt::fields_to_json(model.config(), fields);
  for (const auto& field : all.items())
    if (gpt::reads_field(model.kind(), field.key())) j[field.key()] = field.value();
  return j;
}

// {"cmd": "model_new", "kind": "gpt" | "bigram" | "average", "preset": "femto" (default) or
//  any preset, every key of a config file's "model" section but vocab_size ("n_layer",
//  "n_head", "n_embd", "block_size", "dropout", "bias", "pos_encoding": override the preset),
//  "text": the corpus (or "text_file": its path in the module's file system), "seed" (of the
//  weights and the batches), and every key of a config file's "train" section, the training
//  options of `attograd train` under their JSON names ("batch_size", "learning_rate", "min_lr",
//  "warmup_steps", "max_steps", "eval_iters", "beta2", "label_smoothing", "mixed_precision":
//  "f32" | "bf16", ...)}
// Answers the config, the splits' sizes, the counted baselines, the options it trains with and
// "line_ends_made_lf": how many CRLF or CR line ends of a file were made LF.
json model_new(Request& r) {
  // A file the student dropped is passed as bytes in the module's file system ("text_file", at
  // a path named after the file), so that its UTF-8 is checked here, with the byte offset of a
  // bad sequence.
  const bool from_file = r.has("text_file");
  if (from_file && r.has("text"))
    throw std::invalid_argument(
        "request 'model_new' has both 'text' and 'text_file': give the text to train on once");
  const std::string path = from_file ? r.name("text_file", 4096) : "";
  std::string text = from_file ? "" : r.string("text");
  const gpt::ModelKind kind = gpt::parse_model_kind(r.name("kind", "gpt"));
  // The model's settings and the training options as a config file's "model" and "train"
  // sections hold them (gpt/train/run_config.h), each row under its JSON name with its range:
  // every option `attograd train` takes reaches the page by itself.
  gpt::ConfigOverrides overrides;
  overrides.preset = r.name("preset", "femto");
  overrides.given = r.section(overrides.values, [](const auto& f) {
    return std::string_view(f.name) != "vocab_size";  // the vocabulary is the text's
  });
  gpt::TrainOptions options;
  r.section(options, [](const auto&) { return true; });
  // "seed" (a TrainOptions row, read above) seeds the batches and the weights alike.
  const uint64_t seed = options.seed;
  r.finish();
  const std::string source =
      from_file ? std::filesystem::path(path).filename().string() : "the text";
  if (from_file) text = gpt::read_text_file(path, "text file", "drop a UTF-8 text file");
  // A file is read as `attograd train --corpus` reads one (load_corpus's rule, without
  // --keep-cr): no byte order mark, LF line ends, so '\r' is never a token here either.
  const size_t line_ends_made_lf = from_file ? gpt::normalize_user_text(text) : 0;
  if (const auto bad = nn::find_utf8_error(text))
    throw std::invalid_argument(source + " is not UTF-8 text: " + bad->message() +
                                "; save it as UTF-8 (an editor's \"Save as\" offers the encoding)");
  options.corpus = "page";
  options.validate();
  // As `attograd train` sets a new model up (gpt/train/prepare.h): the char tokenizer of the
  // text, the model (a setting its kind never reads, a bigram's n_layer, is refused), the splits
  // (too short a text is refused now, not at the first step) and the counted baselines the
  // curves are drawn against.
  std::ostream quiet(nullptr);
  gpt::SetUpReport report(quiet);
  gpt::Prepared prepared = [&] {
    try {
      return gpt::prepare_new(text, {kind, overrides, "char", seed}, options.block_size, report);
    } catch (const gpt::UnusedOverrideError& e) {
      // Named by the request's key: the library's sentence names the CLI's flag ("--n-layer"),
      // and the page has no flags.
      throw std::invalid_argument(e.said_of("request 'model_new': " + e.field(),
                                            "remove " + e.field() + " from the request",
                                            "set kind to 'gpt'"));
    }
  }();

  Workspace& w = workspace();
  w.trainer.reset();  // it refers to the model and data it replaces
  w.model = std::move(prepared.model);
  w.data = std::move(prepared.data);
  w.options = options;
  w.trainer = std::make_unique<gpt::Trainer>(*w.model, *w.data, options, prepared.tokenizer->kind(),
                                             prepared.tokenizer->serialize(), "");
  w.tokenizer = std::move(prepared.tokenizer);
  return {{"config", config_json(*w.model)},
          {"options", json::parse(w.options.to_json())},
          {"line_ends_made_lf", line_ends_made_lf},
          {"train_tokens", w.data->size(gpt::Split::train)},
          {"val_tokens", w.data->size(gpt::Split::val)},
          {"unigram_loss", prepared.baselines.unigram},
          {"bigram_loss", prepared.baselines.bigram}};
}

Workspace& require_trainer() {
  Workspace& w = require_model();
  if (!w.trainer)
    throw std::logic_error(
        "this model was loaded from a checkpoint without its text: build a model from a text "
        "(model_new) to train or evaluate it");
  return w;
}

// {"cmd": "train", "steps": n}: n optimizer steps; each step's training loss, and "next_eval":
// the step of the next evaluation by the run's eval_interval and eval_early
// (TrainOptions::next_eval, the schedule `attograd train` follows; 0: none), which the page's
// worker trains up to and evaluates at.
json train(Request& r) {
  const int64_t steps = r.integer("steps", 1, 1, 100000);
  r.finish();
  Workspace& w = require_trainer();
  json losses = json::array();
  try {
    for (int64_t i = 0; i < steps; ++i) losses.push_back(w.trainer->train_step());
  } catch (const gpt::NonFiniteLoss& e) {
    // The trainer's fix names the CLI's --lr and --grad-clip; the page has a learning rate box
    // (read at Build) and no clipping setting.
    throw std::runtime_error(e.what_happened() +
                             " Lower the learning rate (part 3's learning rate box, e.g. to a "
                             "tenth) and press Build to start a new model with it");
  }
  return {{"step", w.trainer->step()},
          {"losses", losses},
          {"lr_max_steps", w.options.max_steps},
          {"next_eval", w.options.next_eval(w.trainer->step())}};
}

// {"cmd": "evaluate"}: mean loss and perplexity over eval_iters fixed batches of each split, and
// "next_eval" as train answers it (so that a run started with the step-0 evaluation, as
// `attograd train` starts, knows where the next one is).
json evaluate(Request& request) {
  request.finish();
  Workspace& w = require_trainer();
  const gpt::EvalResult r = w.trainer->evaluate();
  return {{"step", r.step},         {"train_loss", r.train_loss},
          {"val_loss", r.val_loss}, {"train_ppl", r.train_ppl},
          {"val_ppl", r.val_ppl},   {"next_eval", w.options.next_eval(r.step)}};
}

// The prompt's ids, refused when empty or longer than the model's context.
std::vector<int64_t> encode_prompt(const Workspace& w, const std::string& prompt,
                                   bool for_sampling) {
  // A character the model's text lacks, in the page's words: the tokenizer's own message names
  // its C++ function and its "vocabulary".
  if (const auto* chars = dynamic_cast<const gpt::CharTokenizer*>(w.tokenizer.get()))
    if (const auto unknown = chars->first_unknown(prompt))
      throw std::invalid_argument(
          "character " + std::to_string(unknown->position) + " of the prompt, " +
          nn::describe_code_point(unknown->code_point) +
          ", is not in this model's text: a character model knows only the characters of the "
          "text it was trained on. Remove it from the prompt");
  std::vector<int64_t> ids = w.tokenizer->encode(prompt);
  if (ids.empty()) throw std::invalid_argument("the prompt is empty: type at least one character");
  const int64_t block_size = w.model->config().block_size;
  if (!for_sampling && static_cast<int64_t>(ids.size()) > block_size)
    throw std::invalid_argument("the prompt is " + std::to_string(ids.size()) +
                                " tokens, longer than this model's context (block_size " +
                                std::to_string(block_size) + "): shorten it to at most " +
                                std::to_string(block_size) + " characters");
  return ids;
}

// "Attention is not explanation" for the prompt `ids` (gpt/model/attribution.h, what `attograd
// attention --attribution` prints): per (layer, head, query) for the queries 1 .. T-2, the
// most-attended key against the key whose dropped term changes the loss of predicting token t+1
// most, and how many differ; or, for a model without attention or a prompt under 3 tokens,
// no rows and the reason.
json attribution_json(Workspace& w, const std::vector<int64_t>& ids) {
  auto* g = dynamic_cast<gpt::GPT*>(w.model.get());
  const auto none = [](const std::string& reason) {
    return json{{"rows", json::array()}, {"differ", 0}, {"reason", reason}};
  };
  if (g == nullptr)
    return none(std::string("this model has no attention (") +
                gpt::model_kind_name(w.model->kind()) + "), so there is nothing to attribute");
  if (ids.size() < 3)
    return none("the prompt has " + std::to_string(ids.size()) +
                " token(s): the comparison needs at least 3 (query t is scored on the loss of "
                "predicting token t+1, and query 0 sees only itself)");
  std::vector<int64_t> layers, heads;
  for (int64_t l = 0; l < g->config().n_layer; ++l) layers.push_back(l);
  for (int64_t h = 0; h < g->config().n_head; ++h) heads.push_back(h);
  json rows = json::array();
  int64_t differ = 0;
  for (const gpt::AttributionRow& r : gpt::attention_attribution(*g, ids, layers, heads)) {
    differ += r.differ();
    rows.push_back({{"layer", r.layer},
                    {"head", r.head},
                    {"query", r.query},
                    {"most_attended", r.most_attended},
                    {"weight", r.weight},
                    {"largest_change", r.largest_change},
                    {"change", r.change},
                    {"differ", r.differ()}});
  }
  return {{"rows", rows}, {"differ", differ}, {"reason", nullptr}};
}

// {"cmd": "forward", "prompt": text}: its tokens, every layer's attention weights
// [layer][head][query][key] (a GPT's; none for bigram and average), the next-token
// probabilities after the last token, and "attribution" (attribution_json: {"rows": [{layer,
// head, query, most_attended, weight, largest_change, change, differ}] in the order (query,
// layer, head), "differ": how many rows differ, "reason": why there are no rows, or null}).
json forward(Request& r) {
  const std::string prompt = r.string("prompt");
  r.finish();
  Workspace& w = require_model();
  const std::vector<int64_t> ids = encode_prompt(w, prompt, false);
  const int64_t T = static_cast<int64_t>(ids.size());
  std::vector<Tensor> attention;
  Tensor logits;
  {
    NoGradGuard no_grad;
    w.model->eval();
    const Tensor idx = Tensor::from_ids(ids, {1, T});
    if (auto* g = dynamic_cast<gpt::GPT*>(w.model.get())) {
      logits = g->forward(idx, Tensor(), nullptr, &attention).logits();
    } else {
      logits = w.model->forward(idx).logits();
    }
  }
  // One backward pass per query, in eval mode, with the gradients the trainer accumulates set
  // aside (attention_attribution restores them).
  const json attribution = attribution_json(w, ids);
  w.model->train();
  json layers = json::array();
  for (const Tensor& a : attention) {  // (1, n_head, T, T)
    json heads = json::array();
    for (int64_t h = 0; h < a.size(1); ++h)
      heads.push_back(matrix_json(reshape(slice(a, 1, h, h + 1), {T, T})));
    layers.push_back(heads);
  }
  json tokens = json::array();
  for (const int64_t id : ids) tokens.push_back(w.tokenizer->token_bytes(id));
  const std::vector<double> last = slice(logits, 1, T - 1, T).to_vector();  // (1, 1, V)
  return {{"tokens", tokens},
          {"attention", layers},
          {"next_token_probabilities", gpt::next_token_probabilities(last, {})},
          {"attribution", attribution}};
}

// {"cmd": "sample", "prompt", "max_new_tokens", "temperature", "top_k", "top_p", "seed",
//  "bars"}: the generated text and, at each step k, what the page draws as bars: "steps"[k],
// the `bars` most likely next tokens [{token, p}] with their probabilities after temperature,
// top-k and top-p; "chosen"[k], the token drawn at step k {token, p, rank} (rank 0 is the most
// likely; it may lie outside the bars, as a sample may); and "rest"[k] {p, tokens}, how many
// tokens are neither among the bars nor chosen and their total probability, so that each step's
// bars, its chosen token (when outside them) and its rest sum to 1. The page asks for one token
// at a time (max_new_tokens 1, the prompt growing), so that the text and the bars follow the
// generation; the seed, given only with the first, makes that the same text as one request for
// all of them (one draw from the generator per token).
json sample(Request& r) {
  const std::string prompt_text = r.string("prompt");
  gpt::GenerateOptions options;
  options.max_new_tokens = r.integer("max_new_tokens", 100, 1, 10000);
  // The ranges of `attograd sample`'s --temperature, --top-k and --top-p.
  options.sampling.temperature = r.number("temperature", 1.0, gpt::limits::non_negative);
  options.sampling.top_k = r.integer("top_k", 0, 0, std::numeric_limits<int64_t>::max());
  options.sampling.top_p = r.number("top_p", 1.0, gpt::RealRange{0, 1, true, false});
  const int64_t bars = r.integer("bars", 8, 1, 1000);
  const std::optional<uint64_t> seed = r.seed("seed");
  r.finish();
  options.sampling.validate();
  Workspace& w = require_model();
  const std::vector<int64_t> prompt = encode_prompt(w, prompt_text, true);
  json steps = json::array(), chosen = json::array(), rest = json::array();
  std::vector<double> p;    // this step's next-token distribution (V,)
  std::vector<bool> shown;  // whether each token is among this step's bars
  options.on_logits = [&](const std::vector<double>& logits) {
    p = gpt::next_token_probabilities(logits, options.sampling);
    std::vector<int64_t> order(p.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
    const size_t k = std::min(order.size(), static_cast<size_t>(bars));
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&](int64_t a, int64_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
    json top = json::array();
    shown.assign(p.size(), false);
    for (size_t i = 0; i < k; ++i) {
      top.push_back({{"token", w.tokenizer->token_bytes(order[i])}, {"p", p[order[i]]}});
      shown[static_cast<size_t>(order[i])] = true;
    }
    steps.push_back(top);
  };
  // The drawn token, its rank in the bars' order (more likely first, ties by id), and the rest.
  options.on_token = [&](int64_t id) {
    const double p_id = p[static_cast<size_t>(id)];
    int64_t rank = 0, others = 0;
    double others_p = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      const auto t = static_cast<int64_t>(i);
      if (p[i] > p_id || (p[i] == p_id && t < id)) ++rank;
      if (!shown[i] && t != id) {
        ++others;
        others_p += p[i];
      }
    }
    chosen.push_back({{"token", w.tokenizer->token_bytes(id)}, {"p", p_id}, {"rank", rank}});
    rest.push_back({{"p", others_p}, {"tokens", others}});
  };
  if (seed) w.sample_gen.reseed(*seed);
  const std::vector<int64_t> out = gpt::generate(*w.model, prompt, options, w.sample_gen);
  const std::vector<int64_t> generated(out.begin() + static_cast<std::ptrdiff_t>(prompt.size()),
                                       out.end());
  return {{"text", w.tokenizer->decode(generated)},
          {"steps", steps},
          {"chosen", chosen},
          {"rest", rest}};
}

// {"cmd": "batch_loss", "text", "rows"}: the loss of the model on one fixed batch, and the
// gradient of that loss for every parameter, in eval mode (no dropout): the numbers the parity
// test (tests/web/parity_test.js) compares between this module and the same file built natively
// (api_native.cc). The batch is cut from `text` encoded by the model's tokenizer: `rows` (B)
// windows of block_size + 1 tokens, window b starting at token b * (block_size + 1); each
// window's first block_size tokens are the input and its last block_size the targets.
// Returns {"loss", "gradients": {name: [values, row-major]}, "max_abs_gradient"}.
json batch_loss(Request& r) {
  const int64_t B = r.integer("rows", 4, 1, 1024);
  const std::string text = r.string("text");
  r.finish();
  Workspace& w = require_model();
  const int64_t T = w.model->config().block_size;
  const std::vector<int64_t> ids = w.tokenizer->encode(text);
  if (static_cast<int64_t>(ids.size()) < B * (T + 1))
    throw std::invalid_argument(
        "the text is " + std::to_string(ids.size()) + " tokens; " + std::to_string(B) +
        " rows of block_size + 1 = " + std::to_string(T + 1) + " tokens need " +
        std::to_string(B * (T + 1)) + ": give a longer text or fewer rows");
  std::vector<int64_t> x, y;
  for (int64_t b = 0; b < B; ++b) {
    const auto start = ids.begin() + static_cast<std::ptrdiff_t>(b * (T + 1));
    x.insert(x.end(), start, start + T);
    y.insert(y.end(), start + 1, start + T + 1);
  }
  w.model->eval();
  w.model->zero_grad();
  const Tensor loss =
      w.model->forward(Tensor::from_ids(x, {B, T}), Tensor::from_ids(y, {B, T})).loss;
  loss.backward();
  json gradients = json::object();
  double largest = 0;
  for (const auto& [name, p] : w.model->named_parameters()) {
    const std::vector<double> g = p.grad().to_vector();
    for (const double v : g) largest = std::max(largest, std::abs(v));
    gradients[name] = g;
  }
  // The trainer's next step starts from zero gradients as it always does (it zeroes them
  // itself); the model goes back to training mode as train() expects.
  w.model->zero_grad();
  w.model->train();
  return {{"loss", loss.item()}, {"gradients", gradients}, {"max_abs_gradient", largest}};
}

// {"cmd": "save", "path"}: the CLI's checkpoint (Trainer::save: weights, config, tokenizer,
// optimizer state) written to `path` in the module's file system.
json save(Request& r) {
  const std::string path = r.name("path", 4096);
  r.finish();
  Workspace& w = require_trainer();
  w.trainer->save(path);
  return {{"path", path}, {"step", w.trainer->step()}};
}

// {"cmd": "load", "path"}: a checkpoint the CLI (or save) wrote, as `attograd sample` opens it.
// The model can then be looked at and sampled from; training it needs its text (model_new).
json load(Request& r) {
  const std::string path = r.name("path", 4096);
  r.finish();
  gpt::Session s = gpt::open_checkpoint(path);
  s.require_tokenizer_matches();
  Workspace& w = workspace();
  w.trainer.reset();
  w.data.reset();
  w.model = std::move(s.model);
  w.tokenizer = std::move(s.tokenizer);
  return {{"config", config_json(*w.model)}, {"tokenizer", w.tokenizer->kind()}};
}

// ---------------------------------------------------------------------------------------------
// Part 5: the ops and their gradient checks, as `attograd gradcheck` prints them.
json ops(Request& r) {
  r.finish();
  json out = json::array();
  for (const OpEntry& e : op_registry().entries()) {
    json cases = json::array();
    for (const GradcheckCase& c : e.cases) cases.push_back(c.label);
    out.push_back({{"name", e.name}, {"forward", e.forward}, {"vjp", e.vjp}, {"cases", cases}});
  }
  return out;
}

// {"cmd": "gradcheck", "op", "dtype": "f64" | "f32", "seed"}: each case's analytic VJP against
// central differences (run_gradcheck), with the largest errors per input.
json gradcheck(Request& r) {
  const std::string name = r.name("op");
  const std::string dtype_name = r.name("dtype", "f64");
  const uint64_t seed = r.seed("seed").value_or(0);
  r.finish();
  const OpEntry* entry = op_registry().find(name);
  if (entry == nullptr) throw std::invalid_argument("unknown op '" + name + "'");
  if (dtype_name != "f64" && dtype_name != "f32")
    throw std::invalid_argument("dtype must be f64 or f32, got '" + dtype_name + "'");
  const DType dtype = dtype_name == "f32" ? DType::f32 : DType::f64;
  GradcheckOptions options = dtype == DType::f32 ? GradcheckOptions::float32() : GradcheckOptions{};
  options.seed = seed;
  json cases = json::array();
  for (const GradcheckCase& c : entry->cases) {
    Generator gen(options.seed);
    const GradcheckResult r = run_gradcheck(c.fn, c.make_inputs(gen, dtype, {}), options);
    json inputs = json::array();
    for (const GradcheckInputReport& in : r.inputs)
      inputs.push_back({{"index", in.index},
                        {"shape", std::vector<int64_t>(in.shape.begin(), in.shape.end())},
                        {"max_abs_err", in.max_abs_err},
                        {"max_rel_err", in.max_rel_err},
                        {"passed", in.passed},
                        {"detail", in.detail}});
    cases.push_back({{"label", c.label},
                     {"passed", r.passed},
                     {"repeat_ok", r.repeat_ok},
                     {"message", r.message},
                     {"inputs", inputs}});
  }
  return {{"op", name},         {"forward", entry->forward}, {"vjp", entry->vjp},
          {"eps", options.eps}, {"atol", options.atol},      {"rtol", options.rtol},
          {"cases", cases}};
}

// A matrix as the workbench's text, rows separated by ';' (what parse_matrix reads back).
std::string matrix_text(const Tensor& t) {
  const std::vector<double> v = t.to_vector();
  std::string text;
  for (int64_t r = 0; r < t.size(0); ++r) {
    for (int64_t c = 0; c < t.size(1); ++c) {
      const json x = v[static_cast<size_t>(r * t.size(1) + c)];
      text += (c ? ", " : (r ? "; " : "")) + x.dump();
    }
  }
  return text;
}

// The workbench's presets: the lecture's worked examples (docs/03-attention.md, asserted by
// tests/examples/attention_by_hand_test.cc), "dog bites man" from the lecture library's toy
// embeddings with Q = K = V = x as in its order argument, the lecture's start (every score 0, so
// that A is uniform over the visible keys and Z the running mean of V: the chapter's
// "Averaging the context" example) and two heads that attend differently ("heads": the
// workbench's heads selector, 1 when absent).
json workbench_presets() {
  const std::string x = matrix_text(lecture::embed_words({"dog", "bites", "man"}));
  return json::array({
      {{"name", "lecture"},
       {"title", "the lecture's 2 tokens: Q = [1, 2], K = [1, 3], V = [10, 20]"},
       {"Q", "1; 2"},
       {"K", "1; 3"},
       {"V", "10; 20"}},
      {{"name", "t3"},
       {"title", "T = 3, d_k = 2 exercise"},
       {"Q", "1, 0; 0, 1; 1, 1"},
       {"K", "1, 0; 0, 1; 1, 1"},
       {"V", "1, 2; 3, 4; 5, 6"}},
      {{"name", "dog"},
       {"title", "\"dog bites man\": Q = K = V = the toy embeddings"},
       {"Q", x},
       {"K", x},
       {"V", x}},
      {{"name", "average"},
       {"title", "averaging the context: Q = K = 0, so Z is the running mean of V"},
       {"Q", "0; 0; 0"},
       {"K", "0; 0; 0"},
       {"V", "1, 10; 2, 20; 3, 30"}},
      // Head 0 (channels 0 and 1 of Q and K, column 0 of V): every query matches token 0's key
      // only, so it copies V[0, 0]; head 1 (channels 2 and 3, column 1): each query matches its
      // own key, so it copies its own row's V[t, 1]. One head over all four channels mixes both.
      {{"name", "two_heads"},
       {"title", "two heads: one looks at the first token, one at the current token"},
       {"Q", "5, 0, 5, 0; 5, 0, 0, 5; 5, 0, -5, -5"},
       {"K", "5, 0, 5, 0; 0, 0, 0, 5; 0, 0, -5, -5"},
       {"V", "1, 10; 2, 20; 3, 30"},
       {"heads", 2}},
  });
}

// `attograd train`'s flags of the training options, each with the JSON name model_new reads it
// under ({"--lr": "learning_rate", ...}, TrainOptions' table): the page reads
// examples/train_pico.sh's command through it, so that its homework preset is that command.
json train_flags() {
  json flags = json::object();
  gpt::TrainOptions::for_each_field([&](const auto& f) {
    if (f.in_config_files()) flags[f.flag] = f.name;
  });
  return flags;
}

json info(Request& r) {
  r.finish();
  return {{"target", kernels::active_target()},
          {"presets", {"femto", "pico"}},
          {"model_kinds", {"gpt", "bigram", "average"}},
          {"workbench_presets", workbench_presets()},
          // The most rows (T) and numbers a row (d_k, d_v) the workbench's matrices may have.
          {"workbench_max", lecture::kMaxMatrixSide},
          // `attograd train`'s defaults, for the page's boxes that are derived from them.
          {"train_defaults", json::parse(gpt::TrainOptions{}.to_json())},
          {"train_flags", train_flags()}};
}

// The commands, each with its handler: the one list dispatch and its error read.
constexpr std::pair<const char*, json (*)(Request&)> kCommands[] = {{"attention", attention},
                                                                    {"positions", positions},
                                                                    {"rope", rope},
                                                                    {"order", order},
                                                                    {"model_new", model_new},
                                                                    {"train", train},
                                                                    {"evaluate", evaluate},
                                                                    {"forward", forward},
                                                                    {"sample", sample},
                                                                    {"batch_loss", batch_loss},
                                                                    {"save", save},
                                                                    {"load", load},
                                                                    {"ops", ops},
                                                                    {"gradcheck", gradcheck},
                                                                    {"info", info}};

json dispatch(const char* text) {
  json request = nn::parse_json(text, "the request");
  std::vector<std::string> names;
  for (const auto& command : kCommands) names.emplace_back(command.first);
  const auto cmd = request.is_object() ? request.find("cmd") : request.end();
  if (!request.is_object() || cmd == request.end() || !cmd->is_string())
    throw std::invalid_argument("a request is a JSON object whose \"cmd\" names a command: " +
                                gpt::join_names(names));
  const std::string name = cmd->get<std::string>();
  for (const auto& [command, handler] : kCommands) {
    if (name != command) continue;
    Request r(std::move(request), name);
    json answer = handler(r);
    // Each handler refuses unknown fields before it changes anything; one that forgot would
    // accept any typo silently.
    if (!r.finished()) throw std::logic_error("request '" + name + "' did not check its fields");
    return answer;
  }
  const std::string near = gpt::nearest_name(name, names);
  throw std::invalid_argument("unknown request '" + nn::json_key_text(name) + "'" +
                              (near.empty() ? "" : " (did you mean '" + near + "'?)") +
                              "; the requests are " + gpt::join_names(names, "and"));
}

}  // namespace
}  // namespace attograd::web

extern "C" const char* attograd_call(const char* request) {
  static std::string reply;
  using attograd::web::json;
  try {
    reply = json{{"ok", attograd::web::dispatch(request)}}.dump();
  } catch (const std::bad_alloc&) {
    // The page's engine has at most 2 GB (WebAssembly's memory): a 250 MB text, its tokens and
    // their copies do not fit, though the command line reads it. Said, not "std::bad_alloc".
    reply = json{{"error",
                  "the engine ran out of memory: the page's WebAssembly engine has at most 2 GB, "
                  "and a text of more than about 150 MB with its tokens does not fit. Use a "
                  "smaller text here, or train on this one with the command line (attograd "
                  "train --corpus)"}}
                .dump();
  } catch (const std::exception& e) {
    // Non-UTF-8 text inside a message would make dump() throw: replace it.
    reply =
        json{{"error", std::string(e.what())}}.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  return reply.c_str();
}
