// `attograd sample`: text from a trained checkpoint, every prompt at every temperature (the
// homework's comparison), each sample streamed as it is generated, then a summary table.
#include <cstdio>
#include <iostream>

#include "examples/cli/command.h"
#include "gpt/char_tokenizer.h"
#include "gpt/checkpoint.h"
#include "gpt/sampler.h"

namespace attograd::cli {

namespace {

struct SampleArgs {
  std::string checkpoint = "runs/pico/ckpt.safetensors";
  std::vector<std::string> prompts;
  std::vector<double> temperatures{1.0};
  int64_t max_new_tokens = 200;
  int64_t top_k = 0;
  double top_p = 1.0;
  uint64_t seed = 1337;
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
  const gpt::SafetensorsFile file = gpt::SafetensorsFile::read(a.checkpoint);
  const gpt::CheckpointInfo info = gpt::read_checkpoint_info(file);
  if (info.tokenizer_kind != "char")
    throw std::invalid_argument("this checkpoint uses the '" + info.tokenizer_kind + "' tokenizer, which sample does not support yet");
  const gpt::CharTokenizer tok = gpt::CharTokenizer::from_string(info.tokenizer_data);
  const std::unique_ptr<gpt::GPT> model = gpt::load_model(file);
  std::vector<std::string> prompts = a.prompts;
  if (prompts.empty()) prompts.push_back(tok.token_text(0));  // a neutral start: the first vocabulary entry
  std::vector<std::vector<int64_t>> encoded;
  for (const std::string& p : prompts) encoded.push_back(tok.encode(p));  // fails early, naming an unknown char
  for (double t : a.temperatures) gpt::SamplingOptions{t, a.top_k, a.top_p}.validate();

  std::vector<std::tuple<std::string, double, std::string>> table;
  for (size_t i = 0; i < prompts.size(); ++i) {
    for (double t : a.temperatures) {
      std::printf("=== prompt \"%s\" | temperature %g%s ===\n%s", one_line(prompts[i], 40).c_str(), t,
                  t == 0 ? " (greedy)" : "", prompts[i].c_str());
      std::fflush(stdout);
      Generator gen(a.seed);  // the same draws for every pair: differences come from T alone
      std::string text;
      gpt::generate(*model, encoded[i], a.max_new_tokens, gpt::SamplingOptions{t, a.top_k, a.top_p}, gen,
                    [&](int64_t id) {
                      const std::string piece = tok.token_text(id);
                      text += piece;
                      std::fputs(piece.c_str(), stdout);
                      std::fflush(stdout);
                    });
      std::printf("\n\n");
      table.emplace_back(prompts[i], t, text);
    }
  }
  std::printf("%-20s %-12s %s\n", "prompt", "temperature", "sample (first 60 bytes, \\n = newline)");
  for (const auto& [p, t, text] : table) std::printf("%-20s %-12g %s\n", one_line(p, 18).c_str(), t, one_line(text, 60).c_str());
  return 0;
}

}  // namespace

void add_sample_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<SampleArgs>();
  CLI::App* cmd = app.add_subcommand("sample", "generate text from a checkpoint");
  cmd->add_option("--checkpoint", a->checkpoint, "an attograd checkpoint")->capture_default_str();
  cmd->add_option("--prompt", a->prompts, "a prompt (repeat for several)");
  cmd->add_option("--temperature", a->temperatures, "0 = greedy; repeat for several")->capture_default_str();
  cmd->add_option("--max-new-tokens", a->max_new_tokens, "tokens to generate per sample")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--top-k", a->top_k, "keep the k most likely tokens (0 = off; ties at the cut are kept)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--top-p", a->top_p, "nucleus sampling mass in (0, 1] (1 = off)");
  cmd->add_option("--seed", a->seed, "sampling seed")->capture_default_str();
  cmd->callback([a, &exit_code] { exit_code = run(*a); });
}

}  // namespace attograd::cli
