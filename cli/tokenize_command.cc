// `attograd tokenize`: text -> token ids, or ids -> text with --decode, with GPT-2's BPE or a
// character vocabulary (from a checkpoint or a corpus). Reads its argument, or stdin when there
// is none, and writes only the result to stdout, so
//
//     attograd tokenize < book.txt | attograd tokenize --decode
//
// gives book.txt back byte for byte: encode prints the ids space-separated on one line, decode
// prints exactly the text (adding no newline of its own).
#include <charconv>
#include <iostream>
#include <iterator>
#include <sstream>

#include "cli/command.h"
#include "gpt/model/open_model.h"
#include "gpt/text/bpe_tokenizer.h"
#include "gpt/text/char_tokenizer.h"
#include "gpt/text/corpus.h"
#include "gpt/text/tokenizer.h"
#include "nn/io/utf8.h"

namespace attograd::cli {

namespace {

struct TokenizeArgs {
  std::vector<std::string> text;
  bool decode = false;
  std::string tokenizer;  // empty: the checkpoint's, else char with --corpus (train's), else gpt2
  std::string checkpoint;
  std::string corpus;
  std::string cache_dir;
  bool keep_cr = false;
  bool allow_special = false;
  bool pieces = false;
};

// The tokenizer the options ask for. Throws std::invalid_argument naming the conflicting or
// missing option.
std::unique_ptr<gpt::Tokenizer> make_tokenizer(const TokenizeArgs& a) {
  if (!a.checkpoint.empty()) {
    std::unique_ptr<gpt::Tokenizer> tok = gpt::open_checkpoint_tokenizer(a.checkpoint);
    if (!a.tokenizer.empty() && a.tokenizer != tok->kind())
      throw std::invalid_argument("--tokenizer " + a.tokenizer +
                                  " does not match the tokenizer of " + a.checkpoint + " ('" +
                                  tok->kind() + "'); drop --tokenizer to use the checkpoint's");
    return tok;
  }
  // train's default is the char tokenizer of its corpus: with --corpus, tokenize's is too.
  if (a.tokenizer == "char" || (a.tokenizer.empty() && !a.corpus.empty())) {
    if (a.corpus.empty())
      throw std::invalid_argument(
          "--tokenizer char needs a vocabulary: pass --checkpoint PATH (a model trained with "
          "it) or --corpus SPEC (the text to build it from, as in `attograd train`)");
    gpt::CorpusOptions options;
    options.cache_dir = a.cache_dir;
    options.keep_cr = a.keep_cr;
    options.log = [](const std::string& line) {
      std::cerr << line << "\n";
    };  // stdout is for the result
    return std::make_unique<gpt::CharTokenizer>(
        gpt::CharTokenizer::from_text(gpt::load_corpus(a.corpus, options).text));
  }
  if (!a.corpus.empty())
    throw std::invalid_argument(
        "--corpus builds a char vocabulary; GPT-2's is fixed (pass --tokenizer char)");
  return std::make_unique<gpt::BpeTokenizer>(gpt::BpeTokenizer::gpt2());
}

// Token bytes as a quoted, one-line string (see nn::escape_bytes).
std::string quote(const std::string& bytes) { return "\"" + nn::escape_bytes(bytes) + "\""; }

// Whitespace-separated integers. Throws std::invalid_argument naming the first word that is not
// one.
std::vector<int64_t> parse_ids(const std::string& text) {
  std::vector<int64_t> ids;
  std::istringstream in(text);
  std::string word;
  for (size_t n = 1; in >> word; ++n) {
    int64_t id = 0;
    const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), id);
    if (ec != std::errc() || end != word.data() + word.size())
      throw std::invalid_argument("tokenize --decode: word " + std::to_string(n) + ", '" +
                                  word.substr(0, 40) +
                                  "', is not a token id; expected whitespace-separated integers");
    ids.push_back(id);
  }
  return ids;
}

int run(const TokenizeArgs& a) {
  if (a.text.size() > 1 && !a.decode)
    throw std::invalid_argument(
        "tokenize: got " + std::to_string(a.text.size()) +
        " arguments; quote the text so it is one argument (its spaces are tokens too), "
        "or pipe it on stdin");
  const std::unique_ptr<gpt::Tokenizer> tok = make_tokenizer(a);
  const auto* bpe = dynamic_cast<const gpt::BpeTokenizer*>(tok.get());
  if (a.allow_special && bpe == nullptr)
    throw std::invalid_argument("--allow-special applies to the gpt2 tokenizer only (this one is " +
                                tok->kind() + ")");

  std::string input;
  if (a.text.empty()) {
    // Bounded like a corpus file: `tokenize < /dev/zero` once grew without end.
    input = gpt::read_standard_input("tokenize input", "pipe text (or ids with --decode)");
  } else {
    for (size_t i = 0; i < a.text.size(); ++i) {
      if (i > 0) input += ' ';  // --decode 31373 220 995 as separate arguments
      input += a.text[i];
    }
  }

  if (a.decode) {
    const std::vector<int64_t> ids = parse_ids(input);
    if (a.pieces) {
      for (int64_t id : ids) std::cout << id << '\t' << quote(tok->token_bytes(id)) << '\n';
    } else {
      const std::string text = tok->decode(ids);
      std::cout.write(text.data(), static_cast<std::streamsize>(text.size()));
    }
    std::cout << std::flush;
    return 0;
  }
  const std::vector<int64_t> ids =
      bpe != nullptr
          ? bpe->encode(input, a.allow_special ? gpt::AllowSpecial::yes : gpt::AllowSpecial::no)
          : tok->encode(input);
  if (a.pieces) {
    for (int64_t id : ids) std::cout << id << '\t' << quote(tok->token_bytes(id)) << '\n';
  } else {
    for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
    std::cout << '\n';
  }
  std::cout << std::flush;
  return 0;
}

}  // namespace

void add_tokenize_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<TokenizeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize", "text to token ids (or ids to text with --decode), GPT-2 BPE or char");
  cmd->add_option("text", a->text,
                  "the text to encode, or the ids to decode (default: read stdin)");
  cmd->add_flag("--decode", a->decode, "read whitespace-separated ids and print their text");
  cmd->add_option("--tokenizer", a->tokenizer,
                  "char (needs --checkpoint or --corpus; the default with --corpus, as "
                  "`attograd train`'s) or gpt2 (GPT-2's 50,257-token BPE, the default "
                  "without either); default with --checkpoint: its own")
      ->check(one_of(gpt::tokenizer_kinds()));
  // No CLI::ExistingFile: a run directory is a checkpoint too (gpt::checkpoint_file), and a
  // missing path gets open_checkpoint_tokenizer's own message.
  auto* checkpoint = cmd->add_option("--checkpoint", a->checkpoint,
                                     "use the tokenizer of this attograd checkpoint (e.g. "
                                     "runs/pico/ckpt.safetensors, or the run directory runs/pico)");
  cmd->add_option("--corpus", a->corpus,
                  "build a char vocabulary from this corpus (kjv, shakespeare, or a "
                  "UTF-8 file), as `attograd train` does")
      ->excludes(checkpoint);
  cmd->add_option("--cache-dir", a->cache_dir,
                  "where fetched corpora are kept (default ~/.cache/attograd)")
      ->check(kOutputPath);
  add_keep_cr_flag(cmd, a->keep_cr);
  cmd->add_flag("--allow-special", a->allow_special,
                "gpt2: encode <|endoftext|> as its special id 50256 "
                "(by default it is ordinary text)");
  cmd->add_flag("--pieces", a->pieces, "one token per line: its id and its bytes, quoted");
  cmd->callback([a, &exit_code] { exit_code = run(*a); });
}

}  // namespace attograd::cli
