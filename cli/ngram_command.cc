// `attograd ngram`: the lecture's counted n-gram models on a corpus's own splits, the models
// attention is compared with (docs/05-training.md): for each N the contexts train shows, the size
// of the table they make and the val loss, with add-k smoothing (add-one by default, as the
// bigram baseline `train` prints).
#include <cmath>
#include <cstdio>
#include <iostream>

#include "cli/command.h"
#include "gpt/text/char_tokenizer.h"
#include "gpt/text/corpus.h"
#include "gpt/text/dataset.h"
#include "gpt/train/run.h"

namespace attograd::cli {

namespace {

struct NgramArgs {
  std::string corpus = gpt::kDefaultCorpus;
  std::string cache_dir;
  bool keep_cr = false;
  std::vector<int64_t> n{1, 2, 3, 4, 5};
  double k = 1.0;
};

int run(const NgramArgs& a) {
  refuse_repeated(a.n, "--n", "each N is one row of the table");
  gpt::CorpusOptions options;
  options.cache_dir = a.cache_dir;
  options.keep_cr = a.keep_cr;
  options.log = [](const std::string& line) { std::cerr << line << "\n"; };
  const gpt::Corpus corpus = gpt::load_corpus(a.corpus, options);
  const gpt::CharTokenizer tok = gpt::CharTokenizer::from_text(corpus.text);
  // The split of `attograd train` (block_size only bounds batches, which are not drawn here).
  const gpt::Dataset data(tok.encode(corpus.text), 1);
  const auto& train = data.tokens(gpt::Split::train);
  const auto& val = data.tokens(gpt::Split::val);
  // Every row first, so that a corpus too short for one N prints nothing but the error.
  std::vector<gpt::NgramLoss> rows;
  for (const int64_t n : a.n)
    rows.push_back(gpt::ngram_cross_entropy(train, val, tok.vocab_size(), n, a.k));
  std::printf(
      "counted n-grams on %s: char tokenizer (V %lld), %zu train / %zu val tokens, add-%g "
      "smoothing\n%-3s %18s %22s %10s %11s\n",
      corpus.name.c_str(), static_cast<long long>(tok.vocab_size()), train.size(), val.size(), a.k,
      "N", "contexts in train", "table (contexts x V)", "val loss", "perplexity");
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t n = a.n[i];
    const gpt::NgramLoss& r = rows[i];
    std::printf("%-3lld %18lld %22lld %10.4f %11.2f\n", static_cast<long long>(n),
                static_cast<long long>(r.contexts),
                static_cast<long long>(r.contexts * tok.vocab_size()), r.loss, std::exp(r.loss));
  }
  return 0;
}

}  // namespace

void add_ngram_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<NgramArgs>();
  CLI::App* cmd = app.add_subcommand(
      "ngram", "val loss of counted n-gram models (add-k smoothed) on a corpus's splits");
  cmd->add_option("--corpus", a->corpus, "kjv, shakespeare or a UTF-8 file")->capture_default_str();
  cmd->add_option("--cache-dir", a->cache_dir, "where fetched corpora are kept")
      ->check(kOutputPath);
  add_keep_cr_flag(cmd, a->keep_cr);
  cmd->add_option("--n", a->n, "the N of each model (repeat; default 1 to 5)")
      ->check(integer_in(gpt::IntRange{1, 8, "an n-gram of at most 8 tokens"}));
  cmd->add_option("--k", a->k, "add-k smoothing (1 = Laplace's add-one)")
      ->check(kPositive)
      ->capture_default_str();
  cmd->callback([a, &exit_code] { exit_code = run(*a); });
}

}  // namespace attograd::cli
