// `attograd eval`: the mean loss and perplexity of a checkpoint on a corpus split, over every
// token of the split (non-overlapping windows of block_size), printed at full precision.
#include <cmath>
#include <cstdio>

#include "autograd/engine.h"
#include "examples/cli/command.h"
#include "gpt/char_tokenizer.h"
#include "gpt/checkpoint.h"
#include "gpt/corpus.h"
#include "gpt/dataset.h"
#include "gpt/trainer.h"

namespace attograd::cli {

namespace {

struct EvalArgs {
  std::string checkpoint = "runs/pico/ckpt.safetensors";
  std::string corpus = "kjv";
  std::string cache_dir;
  std::string split = "val";
  int64_t max_tokens = 0;
};

int run(const EvalArgs& a) {
  const gpt::SafetensorsFile file = gpt::SafetensorsFile::read(a.checkpoint);
  const gpt::CheckpointInfo info = gpt::read_checkpoint_info(file);
  if (info.tokenizer_kind != "char")
    throw std::invalid_argument("this checkpoint uses the '" + info.tokenizer_kind + "' tokenizer, which eval does not support yet");
  const gpt::CharTokenizer tok = gpt::CharTokenizer::from_string(info.tokenizer_data);
  const std::unique_ptr<gpt::GPT> model = gpt::load_model(file);
  gpt::CorpusOptions co;
  co.cache_dir = a.cache_dir;
  const gpt::Corpus corpus = gpt::load_corpus(a.corpus, co);
  const int64_t T = model->config().block_size;
  const gpt::Dataset data(tok.encode(corpus.text), T);
  std::vector<int64_t> tokens = data.tokens(a.split == "train" ? gpt::Split::train : gpt::Split::val);
  if (a.max_tokens > 0 && static_cast<int64_t>(tokens.size()) > a.max_tokens + 1) tokens.resize(a.max_tokens + 1);
  if (tokens.size() < 2) throw std::invalid_argument("the " + a.split + " split has fewer than 2 tokens");

  NoGradGuard no_grad;
  model->eval();
  gpt::PerplexityMeter meter;
  const int64_t n = static_cast<int64_t>(tokens.size()) - 1;  // predictions available
  for (int64_t start = 0; start < n; start += T) {
    const int64_t len = std::min(T, n - start);
    const std::vector<int64_t> x(tokens.begin() + start, tokens.begin() + start + len);
    const std::vector<int64_t> y(tokens.begin() + start + 1, tokens.begin() + start + len + 1);
    const double loss = model->forward(Tensor::from_ids(x, {1, len}), Tensor::from_ids(y, {1, len})).loss.item();
    meter.add(loss * static_cast<double>(len), len);
  }
  std::printf("%s split of %s: %lld tokens\nloss %.9g nats/token\nperplexity %.9g\n", a.split.c_str(), corpus.name.c_str(),
              static_cast<long long>(meter.tokens()), meter.mean_nll(), meter.perplexity());
  return 0;
}

}  // namespace

void add_eval_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand("eval", "loss and perplexity of a checkpoint on a corpus");
  cmd->add_option("--checkpoint", a->checkpoint, "an attograd checkpoint")->capture_default_str();
  cmd->add_option("--corpus", a->corpus, "kjv, shakespeare or a UTF-8 file")->capture_default_str();
  cmd->add_option("--cache-dir", a->cache_dir, "where fetched corpora are kept");
  cmd->add_option("--split", a->split, "val (last 10%) or train (first 90%)")->check(CLI::IsMember({"val", "train"}))->capture_default_str();
  cmd->add_option("--max-tokens", a->max_tokens, "evaluate at most this many predictions (0 = all)")->check(CLI::NonNegativeNumber);
  cmd->callback([a, &exit_code] { exit_code = run(*a); });
}

}  // namespace attograd::cli
