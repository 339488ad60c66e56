// `attograd info`: the recitation's dimension exercise. Every parameter's shape and count per
// layer with totals, and the shapes of Q, K, Q Kᵀ, the attention weights and the output for a
// sequence of T tokens.
#include <cstdio>
#include <map>

#include "autograd/kernels/matmul.h"
#include "autograd/kernels/targets.h"
#include "cli/command.h"
#include "cli/config_messages.h"
#include "gpt/model/gpt2.h"

namespace attograd::cli {

namespace {

struct InfoArgs {
  gpt::ConfigOverrides config;
  std::optional<int64_t> T;
};

std::string group_of(const std::string& name) {
  // "h.0.attn.c_attn.weight" -> "h.0"; "wte.weight" -> "wte"
  const size_t dot = name.find('.');
  if (name.rfind("h.", 0) == 0) return name.substr(0, name.find('.', 2));
  return name.substr(0, dot);
}

int run(const InfoArgs& a) {
  gpt::ConfigOverrides ca = a.config;
  if (!ca.has("vocab_size") && ca.preset != "gpt2")
    ca.set(&gpt::GPTConfig::vocab_size, int64_t{65});  // Tiny Shakespeare's characters
  // A broken rule names the options the user gave (a.config's; vocab_size 65 is the preset's).
  const gpt::GPTConfig c =
      naming_options(ConfigOrigins(a.config), [&] { return build_config(ca, std::nullopt); });
  const int64_t T = a.T.value_or(c.block_size);
  if (T < 1 || T > c.block_size)
    throw std::invalid_argument("--T must be in [1, block_size = " + std::to_string(c.block_size) +
                                "], got " + std::to_string(T));
  // Shapes from the config alone: building GPT-2 small here took over 500 MB for a table.
  const auto shapes = gpt::GPT::parameter_shapes(c);
  std::printf(
      "config: vocab_size V %lld, block_size %lld, n_layer %lld, n_head NH %lld, n_embd C %lld, "
      "head_dim HS %lld, %s positions\n\n",
      static_cast<long long>(c.vocab_size), static_cast<long long>(c.block_size),
      static_cast<long long>(c.n_layer), static_cast<long long>(c.n_head),
      static_cast<long long>(c.n_embd), static_cast<long long>(c.head_dim()),
      gpt::pos_encoding_name(c.pos_encoding));
  std::printf("%-32s %-16s %12s\n", "parameter", "shape", "count");
  std::map<std::string, int64_t> groups;
  std::vector<std::string> order;
  int64_t total = 0;
  for (const auto& [name, shape] : shapes) {
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;  // within GPTConfig's limits: no overflow
    std::printf("%-32s %-16s %12lld\n", name.c_str(), shape_str(shape).c_str(),
                static_cast<long long>(numel));
    const std::string g = group_of(name);
    if (!groups.count(g)) order.push_back(g);
    groups[g] += numel;
    total += numel;
  }
  std::printf("\n%-32s %12s\n", "per layer", "count");
  for (const std::string& g : order)
    std::printf("%-32s %12lld\n", g.c_str(), static_cast<long long>(groups[g]));
  std::printf("%-32s %12lld   (the LM head is tied to wte: no extra parameters)\n\n", "total",
              static_cast<long long>(total));

  const long long B = 1, NH = c.n_head, HS = c.head_dim(), C = c.n_embd, V = c.vocab_size, TT = T;
  std::printf("attention shapes for B = 1, T = %lld (per layer):\n", TT);
  std::printf("  x                 (B, T, C)        = (%lld, %lld, %lld)\n", B, TT, C);
  std::printf("  q, k, v = c_attn(x) split         = 3 x (%lld, %lld, %lld)\n", B, TT, C);
  std::printf("  Q, K, V in heads  (B, NH, T, HS)   = (%lld, %lld, %lld, %lld)\n", B, NH, TT, HS);
  std::printf("  Q K^T / sqrt(HS)  (B, NH, T, T)    = (%lld, %lld, %lld, %lld)\n", B, NH, TT, TT);
  std::printf(
      "  attention weights (B, NH, T, T)    = (%lld, %lld, %lld, %lld), causal, rows sum to 1\n", B,
      NH, TT, TT);
  std::printf("  weights V         (B, NH, T, HS)   = (%lld, %lld, %lld, %lld)\n", B, NH, TT, HS);
  std::printf("  heads merged      (B, T, C)        = (%lld, %lld, %lld)\n", B, TT, C);
  std::printf("  logits            (B, T, V)        = (%lld, %lld, %lld)\n\n", B, TT, V);
  std::printf("SIMD target: %s\n", kernels::active_target().c_str());
  const kernels::MatmulBlocking m = kernels::matmul_blocking();
  std::printf(
      "matmul cache blocks: L1d %zu KiB, L2 %zu KiB, L3 %zu MiB -> A block and B panel %zu KiB "
      "each, KC %lld k's\n",
      m.l1d_bytes >> 10, m.l2_bytes >> 10, m.l3_bytes >> 20, m.block_bytes >> 10,
      static_cast<long long>(m.kc));
  return 0;
}

}  // namespace

void add_info_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<InfoArgs>();
  CLI::App* cmd = app.add_subcommand(
      "info", "parameter shapes and counts of a config, and attention's tensor shapes");
  add_config_options(cmd, a->config, true);
  cmd->add_option("--T", a->T, "sequence length for the attention shapes (default block_size)")
      ->check(integer_in(gpt::limits::block_size));
  cmd->callback([a, &exit_code] { exit_code = run(*a); });
}

}  // namespace attograd::cli
