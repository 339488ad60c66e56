// `attograd attention`: the attention weights a model applies to a prompt, every layer and head
// (or the chosen ones), as CSV and as heatmaps, with the prompt's tokens on both axes: query
// rows, key columns. The weights come from the model's own forward (GPT::forward records them),
// so each row is the distribution that query's output was averaged with.
//
// Files in --out: layer<L>_head<H>.csv (a header row of key labels, then one row per query: its
// label and its T weights; a label is the token's position, a colon and the token, "3: ", so
// each is unique even where the prompt repeats a token), layer<L>_head<H>.png/.svg (labelled
// the same way, a space drawn as ␣, with a colour bar from 0 to 1), and
// all_heads.png/.svg (every chosen head in a grid, one row per layer) when more than one head is
// shown. With --attribution, also attribution.csv: the printed comparison's rows at full
// precision (the page's parity test, tests/web/parity_test.js, compares its own with them).
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>

#include "autograd/engine.h"
#include "cli/command.h"
#include "cli/model_source.h"
#include "cli/out_dir.h"
#include "gpt/io/figures.h"
#include "gpt/model/attribution.h"
#include "nn/io/atomic_file.h"
#include "nn/io/utf8.h"

namespace attograd::cli {

namespace {

struct AttentionArgs {
  gpt::ModelSource source;
  std::string prompt;
  std::optional<int64_t> layer, head;
  std::string out = "runs/attention";
  bool attribution = false;
};

// A CSV field: quoted (quotes doubled) when it holds a comma or a quote (RFC 4180), or begins or
// ends with a space (which some readers would trim).
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"") == std::string::npos && !s.starts_with(' ') && !s.ends_with(' '))
    return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// The chosen index or every index in [0, n); a chosen one out of range is an error naming n.
std::vector<int64_t> chosen(const std::optional<int64_t>& pick, int64_t n, const char* option,
                            const char* what) {
  if (!pick) {
    std::vector<int64_t> all(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) all[i] = i;
    return all;
  }
  if (*pick < 0 || *pick >= n)
    throw std::invalid_argument(std::string(option) + " " + std::to_string(*pick) +
                                " is out of range: the model has " + std::to_string(n) + " " +
                                what + ", numbered 0 to " + std::to_string(n - 1));
  return {*pick};
}

// "Attention is not explanation", measured (gpt/model/attribution.h): one line per (layer, head,
// query) for the queries 1 .. T-2, and how often the most-attended key is not the one whose
// term, dropped from the head's output (the other weights left as they are, not renormalised),
// changes the query's next-token loss most; the same rows, unrounded, in `csv_path`.
void print_attribution(gpt::GPT& model, const std::vector<int64_t>& ids,
                       const std::vector<int64_t>& layers, const std::vector<int64_t>& heads,
                       const std::vector<std::string>& labels, const std::string& csv_path) {
  std::printf(
      "\nattribution: per query t, the most-attended key against the key whose term weight x "
      "value,\n"
      "dropped from the head's output, changes the loss of predicting token t+1 most\n"
      "(first order: -weight x dloss/dweight, in nats)\n"
      "layer  head  query  most attended (weight)    largest change, term dropped\n");
  int64_t differ = 0;
  const std::vector<gpt::AttributionRow> rows =
      gpt::attention_attribution(model, ids, layers, heads);
  std::ostringstream csv;
  csv << "layer,head,query,most_attended,weight,largest_change,change,differ\n";
  for (const gpt::AttributionRow& r : rows) {
    differ += r.differ();
    char buf[160];
    std::snprintf(buf, sizeof buf, "%lld,%lld,%lld,%lld,%.9g,%lld,%.9g,%d\n",
                  static_cast<long long>(r.layer), static_cast<long long>(r.head),
                  static_cast<long long>(r.query), static_cast<long long>(r.most_attended),
                  r.weight, static_cast<long long>(r.largest_change), r.change, r.differ() ? 1 : 0);
    csv << buf;
    std::printf("%-6lld %-5lld %-6lld %-3lld %-8s (%.3f)  %-3lld %-8s (%+.4f)%s\n",
                static_cast<long long>(r.layer), static_cast<long long>(r.head),
                static_cast<long long>(r.query), static_cast<long long>(r.most_attended),
                ("\"" + labels[r.most_attended] + "\"").c_str(), r.weight,
                static_cast<long long>(r.largest_change),
                ("\"" + labels[r.largest_change] + "\"").c_str(), r.change,
                r.differ() ? "  differ" : "");
  }
  std::printf(
      "the most-attended key is not the one whose dropped term changes the loss most for %lld of "
      "%zu "
      "(layer, head, query)\n",
      static_cast<long long>(differ), rows.size());
  nn::write_file_atomically(csv_path, csv.str());
}

int run(const AttentionArgs& a) {
  const gpt::Session m = open_model_source(a.source);
  m.require_tokenizer_fits();
  gpt::GPT& model = m.gpt();
  const gpt::GPTConfig& c = m.config();
  const std::vector<int64_t> layers = chosen(a.layer, c.n_layer, "--layer", "layers");
  const std::vector<int64_t> heads = chosen(a.head, c.n_head, "--head", "heads");
  const std::vector<int64_t> ids = m.tokenizer->encode(a.prompt);  // names an unknown character
  const int64_t T = static_cast<int64_t>(ids.size());
  if (T == 0)
    throw std::invalid_argument("--prompt \"" + nn::escape_bytes(a.prompt) +
                                "\" encodes to no tokens");
  if (T > c.block_size)
    throw std::invalid_argument(
        "--prompt encodes to " + std::to_string(T) + " tokens, more than the model's block_size " +
        std::to_string(c.block_size) + ": shorten it (attention spans one context window)");

  if (a.attribution && T < 3)
    throw std::invalid_argument(
        "--attribution needs a prompt of at least 3 tokens: query t is scored on the loss of "
        "predicting token t+1, and query 0 sees only itself");
  std::vector<Tensor> weights;  // per layer (1, n_head, T, T)
  {
    NoGradGuard no_grad;
    model.eval();
    model.forward(Tensor::from_ids(ids, {1, T}), Tensor(), nullptr, &weights);
  }
  // Tokens as printable one-line labels. In the figures each is drawn as its position, a colon
  // and the token, a space as ␣ ("3:␣"; GPT-2's " the" would otherwise look like "the"): a prompt
  // that repeats a token ("And God " has two d and two spaces) still tells its rows apart.
  std::vector<std::string> labels, drawn;
  for (int64_t id : ids) {
    labels.push_back(nn::escape_bytes(m.tokenizer->token_bytes(id)));
    std::string d = std::to_string(drawn.size()) + ":";
    for (char ch : labels.back()) d += ch == ' ' ? std::string("\u2423") : std::string(1, ch);
    drawn.push_back(d);
  }
  create_out_dir(a.out, "--out");
  std::printf("%s: %lld tokens:", m.path.c_str(), static_cast<long long>(T));
  for (const std::string& l : labels) std::printf(" \"%s\"", l.c_str());
  std::printf(
      "\n\nmean weight over queries 1..T-1 on their own token, the previous one and the first:\n"
      "layer  head  self    previous  first\n");

  std::vector<gpt::HeatmapFigure> figures;
  gpt::HeatmapFigure grid{a.out + "/all_heads",
                          "attention weights of \"" + a.prompt + "\"",
                          {},
                          static_cast<int64_t>(heads.size()),
                          0,
                          1,
                          false};
  for (int64_t l : layers) {
    const Tensor& w = weights[static_cast<size_t>(l)];
    for (int64_t h : heads) {
      const std::string stem = a.out + "/layer" + std::to_string(l) + "_head" + std::to_string(h);
      std::ostringstream csv;
      // Each label is position:token ("0:A", "3: "): a prompt may repeat a token, and a program
      // reading the file needs a unique name per column.
      auto label = [&](int64_t t) { return csv_field(std::to_string(t) + ":" + labels[t]); };
      csv << "query\\key";
      for (int64_t j = 0; j < T; ++j) csv << ',' << label(j);
      csv << '\n';
      gpt::Heatmap map{"layer " + std::to_string(l) + ", head " + std::to_string(h),
                       "query",
                       "key",
                       drawn,
                       drawn,
                       {}};
      double self = 0, previous = 0, first = 0;
      for (int64_t t = 0; t < T; ++t) {
        csv << label(t);
        for (int64_t j = 0; j < T; ++j) {
          const double v = w.at({0, h, t, j});
          char buf[32];
          std::snprintf(buf, sizeof buf, ",%.9g", v);
          csv << buf;
          map.values.push_back(j > t ? std::nan("")
                                     : v);  // the causal mask drawn grey, not as a white 0
        }
        csv << '\n';
        if (t > 0) {
          self += w.at({0, h, t, t});
          previous += w.at({0, h, t, t - 1});
          first += w.at({0, h, t, 0});
        }
      }
      // Through an AtomicFile: a symlink named like the CSV is replaced, never written through.
      nn::write_file_atomically(stem + ".csv", csv.str());
      if (T > 1) {
        const double n = static_cast<double>(T - 1);
        std::printf("%-6lld %-5lld %-7.3f %-9.3f %.3f\n", static_cast<long long>(l),
                    static_cast<long long>(h), self / n, previous / n, first / n);
      } else {
        std::printf("%-6lld %-5lld (one token: it can only attend to itself, weight 1)\n",
                    static_cast<long long>(l), static_cast<long long>(h));
      }
      grid.panels.push_back(map);
      figures.push_back({stem, "", {std::move(map)}, 1, 0, 1, T <= 16});
    }
  }
  if (a.attribution) {
    print_attribution(model, ids, layers, heads, labels, a.out + "/attribution.csv");
  }
  const size_t n_maps = grid.panels.size();
  if (n_maps > 1) figures.push_back(std::move(grid));
  std::printf("\nwrote %s/layer<L>_head<H>.csv for %zu head(s)%s\n", a.out.c_str(), n_maps,
              a.attribution ? " and attribution.csv" : "");
  if (gpt::write_heatmaps(figures, std::cerr))
    std::printf("heatmaps: %s/layer<L>_head<H>.png and .svg%s\n", a.out.c_str(),
                n_maps > 1 ? ", all of them in all_heads.png and .svg" : "");
  return 0;
}

}  // namespace

void add_attention_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<AttentionArgs>();
  CLI::App* cmd = app.add_subcommand(
      "attention",
      "the attention weights of every layer and head for a prompt, as CSV and heatmaps");
  add_model_source_options(cmd, a->source);
  cmd->add_option("--prompt", a->prompt,
                  "the text whose attention to show (at most block_size tokens)")
      ->required();
  cmd->add_option("--layer", a->layer, "show only this layer (0 = the first)")
      ->check(integer_in({0, gpt::limits::n_layer.max - 1}));
  cmd->add_option("--head", a->head, "show only this head (0 = the first)")
      ->check(integer_in({0, gpt::limits::n_head.max - 1}));
  cmd->add_option("--out", a->out, "directory for the CSV files and heatmaps")
      ->check(kOutputPath)
      ->capture_default_str();
  cmd->add_flag("--attribution", a->attribution,
                "also print, per query, the most-attended key next to the key whose term "
                "(weight x value), dropped from the head's output, changes the loss of the next "
                "prompt token most (first order: -weight x dloss/dweight), and write the rows to "
                "attribution.csv");
  cmd->footer(
      "Rows are queries, columns keys: row t is the distribution query t averaged the values with. "
      "Each row sums to 1, and keys after the query get exactly 0 (the causal mask).");
  cmd->callback([a, &exit_code] { exit_code = run(*a); });
}

}  // namespace attograd::cli
