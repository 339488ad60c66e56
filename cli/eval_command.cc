// `attograd eval`: the mean next-token loss (and perplexity) of a model, printed at full float
// precision so it can be compared number for number with another implementation (PyTorch,
// llm.c, Hugging Face transformers).
//
// The model is an attograd checkpoint (--checkpoint) or a Hugging Face GPT-2 model.safetensors
// (--hf-gpt2, read by load_hf_gpt2; n_head from config.json beside it, the standard GPT-2 sizes
// or --n-head). What it is evaluated on:
//
//   --corpus/--split  every token of a corpus split, encoded with the checkpoint's tokenizer
//                     (GPT-2's BPE for --hf-gpt2);
//   --ids FILE        one sequence of whitespace-separated token ids (FILE "-" = stdin), so no
//                     tokenizer is involved: the loss predicts ids[1..n) from ids[0..n-1).
//
// Either way the sequence is cut into consecutive, non-overlapping windows of block_size
// predictions (window k predicts ids[kT+1 .. kT+T] from ids[kT .. kT+T-1]; the last may be
// shorter); each window starts with an empty context. The printed loss is the mean over all
// predictions (each window weighted by its length), in nats per token.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "cli/command.h"
#include "cli/model_source.h"
#include "cli/progress.h"
#include "gpt/text/char_tokenizer.h"
#include "gpt/text/corpus.h"
#include "gpt/text/dataset.h"
#include "nn/io/utf8.h"

namespace attograd::cli {

namespace {

struct EvalArgs {
  gpt::ModelSource source;
  std::string ids;
  std::string corpus = gpt::kDefaultCorpus;
  std::string cache_dir;
  bool keep_cr = false;
  std::string split = "val";
  int64_t max_tokens = 0;
};

const char kWindowsNote[] =
    "The loss predicts every token from the ones before it (with --ids: ids[1..n) from "
    "ids[0..n-1)). "
    "Sequences longer than block_size are evaluated in consecutive, non-overlapping windows of "
    "block_size predictions, each starting from an empty context; the loss is the mean over all "
    "predictions, printed with 9 significant digits (%.9g).";

// The ids of an --ids file: whitespace-separated decimal integers. Throws std::invalid_argument
// naming the file and the offending token (its 1-based position) for anything else, and for
// fewer than 2 ids (no prediction to score).
std::vector<int64_t> read_ids(const std::string& path) {
  std::string text;
  const std::string where = path == "-" ? "--ids stdin" : "--ids file '" + path + "'";
  if (path == "-") {
    // Bounded like a file: `--ids - < /dev/zero` once grew without end.
    text = gpt::read_standard_input("--ids input", "give whitespace-separated token ids");
  } else {
    if (std::filesystem::is_directory(path))
      throw std::invalid_argument(where + " is a directory, not a file of token ids");
    if (!std::filesystem::exists(path))
      throw std::invalid_argument("cannot open " + where +
                                  " (one sequence of whitespace-separated token ids)");
    // Read like a corpus, bounded: `--ids /dev/zero` would otherwise read until memory runs out.
    text = gpt::read_text_file(path, "--ids file", "give a file of whitespace-separated token ids");
  }
  std::vector<int64_t> ids;
  std::istringstream words(text);
  std::string word;
  while (words >> word) {
    int64_t id = 0;
    const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), id);
    if (ec != std::errc() || end != word.data() + word.size())
      throw std::invalid_argument(where + ": token " + std::to_string(ids.size() + 1) + " '" +
                                  word.substr(0, 40) + "' is not an integer token id");
    ids.push_back(id);
  }
  if (ids.size() < 2)
    throw std::invalid_argument(where + " holds " + std::to_string(ids.size()) +
                                " token id(s); the loss needs at least 2 (one prediction)");
  return ids;
}

int run(const EvalArgs& a) {
  a.source.validate();
  // The ids first: a typo in them should not wait for a 500 MB model to load.
  const std::vector<int64_t> ids = a.ids.empty() ? std::vector<int64_t>() : read_ids(a.ids);
  const gpt::Session session = open_model_source(a.source);
  const gpt::GPTConfig& c = session.config();

  if (!ids.empty()) {
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i] < 0 || ids[i] >= c.vocab_size)
        throw std::invalid_argument(
            (a.ids == "-" ? std::string("--ids stdin") : "--ids file '" + a.ids + "'") +
            ": token id " + std::to_string(ids[i]) + " (token " + std::to_string(i + 1) +
            ") is out of range for the model's vocabulary [0, " + std::to_string(c.vocab_size) +
            ")");
    const gpt::SequenceLoss r = session.evaluate(ids);
    std::printf(
        "%s: %lld predictions from %lld token ids, %lld window(s) of block_size %lld\n"
        "loss %.9g nats/token\nperplexity %.9g\n",
        session.path.c_str(), static_cast<long long>(r.predictions),
        static_cast<long long>(ids.size()), static_cast<long long>(r.windows),
        static_cast<long long>(c.block_size), r.mean_nll, r.perplexity);
    return 0;
  }

  session.require_tokenizer_fits("; evaluate token ids with --ids instead of a corpus");
  gpt::CorpusOptions co;
  co.cache_dir = a.cache_dir;
  co.keep_cr = a.keep_cr;
  const gpt::Corpus corpus = gpt::load_corpus(a.corpus, co);
  // A checkpoint trained on another text (a file, or the companion page's text) meets characters
  // of the default kjv it never saw: name the first and the fix, not the tokenizer's vocabulary.
  if (const auto* chars = dynamic_cast<const gpt::CharTokenizer*>(session.tokenizer.get()))
    if (const auto unknown = chars->first_unknown(corpus.text))
      throw std::invalid_argument(
          "corpus " + corpus.name +
          " has characters this checkpoint's tokenizer lacks (the first, " +
          nn::describe_code_point(unknown->code_point) + ", is character " +
          std::to_string(unknown->position) +
          "): the model was trained on another text; pass that text with --corpus" +
          (a.corpus == gpt::kDefaultCorpus
               ? std::string(" (without it, eval reads ") + gpt::kDefaultCorpus + ")"
               : std::string()));
  const gpt::Dataset data(session.tokenizer->encode(corpus.text), c.block_size);
  std::vector<int64_t> tokens =
      data.tokens(a.split == "train" ? gpt::Split::train : gpt::Split::val);
  // Compared as predictions (tokens - 1): max_tokens + 1 would overflow at the largest int64.
  if (a.max_tokens > 0 && tokens.size() > 1 &&
      tokens.size() - 1 > static_cast<uint64_t>(a.max_tokens))
    tokens.resize(static_cast<size_t>(a.max_tokens) + 1);
  if (tokens.size() < 2)
    throw std::invalid_argument(
        "the " + a.split + " split of " + corpus.name + " has " + std::to_string(tokens.size()) +
        " token(s), and a loss needs at least 2 (one to read, one to predict): pass a longer "
        "--corpus" +
        (a.split == "val" ? std::string(", or --split train (val is the last 10%)") : ""));
  // A corpus split can take minutes (GPT-2 small over KJV's val): say how far it is.
  ProgressLine progress("eval");
  const gpt::SequenceLoss r = session.evaluate(
      tokens, [&](int64_t done, int64_t windows) { progress.update(done, windows, "windows"); });
  progress.finish();
  std::printf("%s split of %s: %lld tokens\nloss %.9g nats/token\nperplexity %.9g\n",
              a.split.c_str(), corpus.name.c_str(), static_cast<long long>(r.predictions),
              r.mean_nll, r.perplexity);
  return 0;
}

}  // namespace

void add_eval_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand("eval",
                                     "mean next-token loss and perplexity of a model on a corpus "
                                     "split or a sequence of token ids");
  add_model_source_options(
      cmd, a->source, "n_head from config.json beside it; a corpus is encoded with GPT-2's BPE");
  CLI::Option* ids =
      cmd->add_option("--ids", a->ids,
                      "evaluate one sequence of whitespace-separated token ids from this file "
                      "('-' = stdin) instead of a corpus");
  CLI::Option* corpus = cmd->add_option("--corpus", a->corpus, "kjv, shakespeare or a UTF-8 file")
                            ->capture_default_str();
  CLI::Option* cache =
      cmd->add_option("--cache-dir", a->cache_dir, "where fetched corpora are kept")
          ->check(kOutputPath);
  CLI::Option* keep_cr = add_keep_cr_flag(cmd, a->keep_cr);
  CLI::Option* split = cmd->add_option("--split", a->split, "val (last 10%) or train (first 90%)")
                           ->check(one_of({"val", "train"}))
                           ->capture_default_str();
  CLI::Option* max_tokens = cmd->add_option("--max-tokens", a->max_tokens,
                                            "evaluate at most this many predictions (0 = all)")
                                ->check(integer_in(gpt::limits::count));
  for (CLI::Option* o : {corpus, cache, keep_cr, split, max_tokens}) ids->excludes(o);
  cmd->footer(kWindowsNote);
  cmd->callback([a, &exit_code] { exit_code = run(*a); });
}

}  // namespace attograd::cli
