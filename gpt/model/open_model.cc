#include "gpt/model/open_model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "autograd/engine.h"
#include "gpt/model/perplexity.h"
#include "nn/io/utf8.h"

namespace attograd::gpt {

std::string checkpoint_file(const std::string& path) {
  if (!std::filesystem::is_directory(path)) return path;
  const std::filesystem::path file = std::filesystem::path(path) / kCheckpointFile;
  if (!std::filesystem::exists(file))
    throw std::invalid_argument(
        "'" + nn::escape_controls(path) + "' is a directory without " + kCheckpointFile +
        ": pass a checkpoint file or the --out directory of an attograd train run");
  return file.string();
}

namespace {

std::unique_ptr<Tokenizer> tokenizer_of(const nn::SafetensorsFile& file) {
  const CheckpointInfo info = read_checkpoint_info(file, Moments::skip);
  return load_tokenizer(info.tokenizer_kind, info.tokenizer_data);
}

}  // namespace

// Every command that opens an attograd checkpoint (sample, eval, attention, train --resume)
// comes through here, so a checkpoint whose parts disagree is refused by all of them alike:
// training sets vocab_size to the tokenizer's size, so any other pair was edited or mixed up
// (eval --corpus and attention once accepted a 3-character tokenizer for 16 rows of wte).
Session open_checkpoint_file(const nn::SafetensorsFile& file) {
  Session s;
  s.path = file.path();
  s.tokenizer = tokenizer_of(file);
  s.model = load_language_model(file);
  s.require_tokenizer_matches();
  return s;
}

GPT& Session::gpt() const {
  if (model->kind() != ModelKind::gpt)
    throw std::runtime_error(
        "'" + path + "' holds " + (model->kind() == ModelKind::average ? "an " : "a ") +
        model_kind_name(model->kind()) +
        " model (checkpoint metadata 'model'), not a GPT; this needs a GPT checkpoint "
        "(sample and eval take every model kind)");
  return static_cast<GPT&>(*model);
}

void Session::require_tokenizer_fits(const std::string& hint) const {
  if (tokenizer->vocab_size() > config().vocab_size)
    throw std::invalid_argument(
        "the " + tokenizer->kind() + " tokenizer has " + std::to_string(tokenizer->vocab_size()) +
        " tokens but the model's vocab_size is " + std::to_string(config().vocab_size) + hint);
}

void Session::require_tokenizer_matches() const {
  if (config().vocab_size != tokenizer->vocab_size())
    throw std::invalid_argument("the model's vocab_size " + std::to_string(config().vocab_size) +
                                " does not match its " + tokenizer->kind() + " tokenizer's " +
                                std::to_string(tokenizer->vocab_size()) + " tokens (" + path + ")");
}

SequenceLoss Session::evaluate(
    const std::vector<int64_t>& tokens,
    const std::function<void(int64_t windows_done, int64_t windows)>& progress) const {
  if (tokens.size() < 2)
    throw std::invalid_argument(
        "a sequence of " + std::to_string(tokens.size()) +
        " token(s) has no prediction to score; the loss needs at least 2 tokens");
  NoGradGuard no_grad;
  model->eval();
  const int64_t T = config().block_size;
  const int64_t n = static_cast<int64_t>(tokens.size()) - 1;  // predictions available
  const int64_t full = n / T, windows = full + (n % T > 0 ? 1 : 0);
  const int64_t per_batch = std::max<int64_t>(1, kEvalTokensPerBatch / T);
  PerplexityMeter meter;
  std::vector<int64_t> x, y;
  // Windows [first, first + B) of length len, as one (B, len) batch: the window's total nats
  // are its mean loss times its tokens.
  auto add_batch = [&](int64_t first, int64_t B, int64_t len) {
    x.clear(), y.clear();
    for (int64_t w = first; w < first + B; ++w) {
      const auto start = tokens.begin() + w * T;
      x.insert(x.end(), start, start + len);
      y.insert(y.end(), start + 1, start + len + 1);
    }
    const double loss =
        model->forward(Tensor::from_ids(x, {B, len}), Tensor::from_ids(y, {B, len})).loss.item();
    meter.add(loss * static_cast<double>(B * len), B * len);
    if (progress) progress(first + B, windows);
  };
  for (int64_t first = 0; first < full; first += per_batch)
    add_batch(first, std::min(per_batch, full - first), T);
  if (full < windows) add_batch(full, 1, n - full * T);
  SequenceLoss r;
  r.windows = windows;
  // A NaN or infinite loss is not a result to print: the weights are broken.
  if (!std::isfinite(meter.mean_nll()))
    throw std::runtime_error("the loss is " + std::to_string(meter.mean_nll()) +
                             ": the weights in " + path +
                             " are not finite (a diverged run?); evaluate an earlier checkpoint");
  r.mean_nll = meter.mean_nll();
  r.perplexity = meter.perplexity();
  r.predictions = meter.tokens();
  return r;
}

Session open_checkpoint(const std::string& path) {
  return open_checkpoint_file(nn::SafetensorsFile::read(checkpoint_file(path)));
}

std::unique_ptr<Tokenizer> open_checkpoint_tokenizer(const std::string& path) {
  return tokenizer_of(nn::SafetensorsFile::read(checkpoint_file(path)));
}

Session open_hf_gpt2(const std::string& path, int64_t n_head_override) {
  Session s;
  s.path = path;
  s.model = load_hf_gpt2(nn::SafetensorsFile::read(path), n_head_override);
  s.tokenizer = load_tokenizer("gpt2", "gpt2");  // HF files carry no tokenizer: GPT-2's own BPE
  return s;
}

InitWeights open_init_weights(const std::string& path, int64_t n_head_override,
                              std::optional<double> dropout) {
  std::string file_path = path;
  if (std::filesystem::is_directory(path)) {
    const std::filesystem::path dir(path);
    if (std::filesystem::exists(dir / kCheckpointFile))
      file_path = (dir / kCheckpointFile).string();
    else if (std::filesystem::exists(dir / "model.safetensors"))
      file_path = (dir / "model.safetensors").string();
    else
      throw std::invalid_argument("--init-from '" + nn::escape_controls(path) +
                                  "' is a directory without " + kCheckpointFile +
                                  " (an attograd run) or model.safetensors (a Hugging Face "
                                  "GPT-2): name the file");
  }
  // nanoGPT's --init_from names a model its Python downloads; attograd reads a file only.
  if (std::error_code ec; !std::filesystem::exists(path, ec))
    for (const char* name : {"gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"})
      if (path == name)
        throw std::invalid_argument(
            "--init-from " + path + ": there is no file or directory '" + path +
            "' (nanoGPT downloads its weights by that name; attograd reads them from disk): get "
            "model.safetensors and config.json from https://huggingface.co/" +
            path + "/tree/main into a directory, e.g. `huggingface-cli download " + path +
            " model.safetensors config.json --local-dir " + path + "`, then pass --init-from " +
            path);
  const nn::SafetensorsFile file = nn::SafetensorsFile::read(file_path);
  InitWeights w;
  w.session.path = file.path();
  // An attograd checkpoint holds its config in the metadata; a Hugging Face file has none.
  w.hf_gpt2 = file.metadata().count("config") == 0;
  if (w.hf_gpt2) {
    require_training_memory(file, "train --init-from", n_head_override);
    w.session.model = load_hf_gpt2(file, n_head_override, DType::f32, dropout);
    w.session.tokenizer = load_tokenizer("gpt2", "gpt2");
    return w;
  }
  if (n_head_override > 0)
    throw std::invalid_argument("--n-head is for a Hugging Face file without config.json; '" +
                                file.path() +
                                "' is an attograd checkpoint, whose config fixes n_head: drop "
                                "--n-head");
  require_training_memory(file, "train --init-from");
  const CheckpointInfo info = read_checkpoint_info(file, Moments::skip);
  if (info.training) w.step = info.training->step;
  w.session.tokenizer = load_tokenizer(info.tokenizer_kind, info.tokenizer_data);
  w.session.model = load_language_model(file, DType::f32, dropout);
  w.session.require_tokenizer_matches();
  return w;
}

std::string InitWeights::describe() const {
  const std::string from = hf_gpt2 ? "the Hugging Face GPT-2 file " : "the attograd checkpoint ";
  const std::string trained =
      step ? " (trained " + std::to_string(*step) + (*step == 1 ? " step)" : " steps)")
           : std::string();
  return "weights of " + from + session.path + trained + ", " + session.tokenizer->kind() +
         " tokenizer; step 0, fresh AdamW state";
}

void ModelSource::validate() const {
  if (checkpoint.empty() == hf_gpt2.empty())
    throw std::invalid_argument(
        "give exactly one of --checkpoint (an attograd checkpoint) or --hf-gpt2 "
        "(a Hugging Face GPT-2 model.safetensors)");
}

Session open_model(const ModelSource& source) {
  source.validate();
  return source.hf_gpt2.empty() ? open_checkpoint(source.checkpoint)
                                : open_hf_gpt2(source.hf_gpt2, source.n_head);
}

}  // namespace attograd::gpt
