// `attograd sample`: text from a checkpoint (or a Hugging Face GPT-2 file), every prompt at every
// temperature (the homework's comparison), each sample streamed as it is generated, then a
// summary table and the generation speed.
#include <chrono>
#include <cstdio>
#include <iostream>

#include "cli/command.h"
#include "cli/model_source.h"
#include "gpt/model/sampler.h"
#include "gpt/text/char_tokenizer.h"
#include "nn/io/utf8.h"

namespace attograd::cli {

namespace {

struct SampleArgs {
  gpt::ModelSource source;
  std::vector<std::string> prompts;
  std::vector<double> temperatures{1.0};
  int64_t max_new_tokens = 200;
  int64_t num_samples = 1;  // per prompt and temperature (nanoGPT's num_samples)
  int64_t top_k = 0;
  double top_p = 1.0;
  uint64_t seed = 1337;
  bool no_kv_cache = false;
};

// Newlines shown as a visible mark so a sample fits one table cell.
std::string one_line(const std::string& s, size_t max_bytes) {
  std::string out;
  for (char ch : s) {
    if (out.size() >= max_bytes) return out + "...";
    out += ch == '\n' ? std::string("\\n") : std::string(1, ch);
  }
  return out;
}

int run(const SampleArgs& a) {
  // Every temperature of a prompt gets the same draws: a repeat would print the same samples.
  refuse_repeated(a.temperatures, "--temperature", "it would draw the same samples again");
  const gpt::Session session = open_model_source(a.source);
  // Checked before generating, not found out mid-sample: a prompt id beyond vocab_size has no
  // embedding, and a sampled id beyond the tokenizer's vocabulary cannot be printed.
  session.require_tokenizer_matches();
  std::vector<std::string> prompts = a.prompts;
  if (prompts.empty()) prompts.push_back("\n");
  std::vector<std::vector<int64_t>> encoded;
  const auto* chars = dynamic_cast<const gpt::CharTokenizer*>(session.tokenizer.get());
  for (const std::string& p : prompts) {
    // A character the model's text lacks, said in the sampler's terms: the tokenizer's own
    // message tells one to rebuild the tokenizer, which a trained model cannot.
    if (chars)
      if (const auto unknown = chars->first_unknown(p))
        throw std::invalid_argument(
            "character " + std::to_string(unknown->position) + " of prompt \"" + p + "\", " +
            nn::describe_code_point(unknown->code_point) +
            ", is not in this model's text: a character model knows only the characters of "
            "the text it was trained on; remove it from --prompt");
    encoded.push_back(session.tokenizer->encode(p));
    if (encoded.back().empty())
      throw std::invalid_argument("prompt \"" + p +
                                  "\" encodes to no tokens: give at least one character, or leave "
                                  "out --prompt to start from a newline");
  }
  for (double t : a.temperatures) gpt::SamplingOptions{t, a.top_k, a.top_p}.validate();

  std::vector<std::tuple<std::string, double, std::string>> table;
  int64_t generated = 0;
  double seconds = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    for (double t : a.temperatures) {
      // Within a prompt every temperature gets the same draws, so the differences come from T
      // alone; each prompt gets its own stream (seed + prompt index), and its samples follow
      // one another in that stream (the first is the one --num-samples 1 prints).
      Generator gen(a.seed + i);
      for (int64_t n = 1; n <= a.num_samples; ++n) {
        const std::string of_n = a.num_samples == 1 ? std::string()
                                                    : " | sample " + std::to_string(n) + " of " +
                                                          std::to_string(a.num_samples);
        std::printf("=== prompt \"%s\" | temperature %g%s%s ===\n%s",
                    one_line(prompts[i], 40).c_str(), t, t == 0 ? " (greedy)" : "", of_n.c_str(),
                    prompts[i].c_str());
        std::fflush(stdout);
        gpt::StreamDecoder stream(*session.tokenizer);
        std::string text;
        gpt::GenerateOptions g;
        g.max_new_tokens = a.max_new_tokens;
        g.sampling = {t, a.top_k, a.top_p};
        g.use_kv_cache = !a.no_kv_cache;
        g.on_token = [&](int64_t id) {
          const std::string piece = stream.push(id);
          text += piece;
          std::fputs(piece.c_str(), stdout);
          std::fflush(stdout);
        };
        const auto start = std::chrono::steady_clock::now();
        try {
          gpt::generate(*session.model, encoded[i], g, gen);
        } catch (...) {
          std::printf("\n");  // end the streamed line, so the error starts on its own
          std::fflush(stdout);
          throw;
        }
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        generated += a.max_new_tokens;
        const std::string rest = stream.flush();
        text += rest;
        std::printf("%s\n\n", rest.c_str());
        table.emplace_back(prompts[i], t, text);
      }
    }
  }
  std::printf("%-20s %-12s %s\n", "prompt", "temperature",
              "sample (first 60 bytes, \\n = newline)");
  for (const auto& [p, t, text] : table)
    std::printf("%-20s %-12g %s\n", one_line(p, 18).c_str(), t, one_line(text, 60).c_str());
  std::fprintf(stderr, "\n%lld tokens in %.2f s: %.1f tokens/s (KV cache %s)\n",
               static_cast<long long>(generated), seconds,
               static_cast<double>(generated) / std::max(seconds, 1e-9),
               a.no_kv_cache                           ? "off"
               : session.kind() == gpt::ModelKind::gpt ? "on"
                                                       : "off: only a GPT has one");
  return 0;
}

}  // namespace

void add_sample_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<SampleArgs>();
  CLI::App* cmd =
      app.add_subcommand("sample", "generate text from a checkpoint or a Hugging Face GPT-2 file");
  add_model_source_options(cmd, a->source);
  cmd->add_option("--prompt", a->prompts, "a prompt (repeat for several)");
  cmd->add_option("--temperature", a->temperatures, "0 = greedy; repeat for several")
      ->check(kNonNegative)
      ->capture_default_str();
  cmd->add_option("--max-new-tokens", a->max_new_tokens, "tokens to generate per sample")
      ->check(integer_in(gpt::limits::count))
      ->capture_default_str();
  cmd->add_option("--num-samples", a->num_samples,
                  "samples per prompt and temperature, drawn one after another")
      ->check(integer_in(gpt::limits::positive_count))
      ->capture_default_str();
  cmd->add_option("--top-k", a->top_k,
                  "keep the k most likely tokens (0 = off; ties at the cut are kept)")
      ->check(integer_in(gpt::limits::count))
      ->capture_default_str();
  cmd->add_option("--top-p", a->top_p, "nucleus sampling mass in (0, 1] (1 = off)")
      ->check(number_in(0, 1, true))
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "sampling seed")->check(kSeed)->capture_default_str();
  cmd->add_flag("--no-kv-cache", a->no_kv_cache,
                "recompute the whole context for every token (for comparison)");
  cmd->callback([a, &exit_code] { exit_code = run(*a); });
}

}  // namespace attograd::cli
