// `attograd figure`: the figures of the attention and GPT chapters that are not a trained
// model's, each as a CSV of its numbers and a drawing. The numbers come from the functions the
// model itself uses (nn::sinusoidal_table, nn::apply_rope, the causal_mask op, gpt::GPT's
// parameters), so a figure shows what attograd computes, not a re-derivation of it.
//
//   sinusoidal  the position table added to the embeddings, (block_size, n_embd): sinusoidal.csv
//               (a row per position) and a heatmap
//   rope        one q/k channel pair (1, 0.5) rotated by RoPE at positions 0 .. block_size-1,
//               for every pair of a head (up to 4 drawn): rope.csv (pos, pair, the input pair,
//               the rotated pair, its norm and angle) and the arrows, one panel per pair
//   mask        causal_mask of zero scores (block_size, block_size): mask.csv (0 or -inf) and
//               its softmax, the causal average, as a heatmap with the masked cells grey
//   rope-qk     RoPE's two-dimensional point: a q and a k of one channel pair (head_dim 2)
//               rotated by their positions m and n, for every m, n < block_size: rope-qk.csv
//               (m, n, the rotated q and k, their dot product, m - n) and the drawing: two (m, n)
//               with the same m - n as arrows, and every score against m - n
//   scaling     chapter 3's sqrt(d_k) experiment (lecture::ScalingExperiment): the
//               mean largest softmax weight against d_k, with and without the scale:
//               scaling.csv (d_k, var(q.k), both means) and the plot
//   blocks      the GPT's block diagram: blocks.csv (every parameter with its shape and count)
//               and blocks.dot, rendered to blocks.svg when Graphviz is installed
//   attention-steps  chapter 3's 2-token worked example step by step (lecture::
//               causal_attention_steps): Q, K, V, S = Q Kᵀ, S / √d_k, the mask, A and Z = A V as
//               heatmaps with their values; attention-steps.csv (step, row, col, value)
//   heads       one multi-head layer taken apart (lecture::MultiHeadExample): q, k, v split into
//               n_head heads, each head's weights and output, the concat and c_proj's output;
//               heads.csv (panel, row, col, value)
//   pre-post-ln the block's data flow pre-LN (gpt::Block, GPT-2) beside post-LN (Vaswani et al.),
//               each stage with its RMS (gpt::layer_norm_placement): pre-post-ln.csv and .dot,
//               rendered to .svg when Graphviz is installed
//
// Sizes come from --preset and its overrides (--n-embd, --n-head, --block-size ...); scaling and
// attention-steps have the chapter's fixed sizes. A figure refuses the options it does not read
// (figure_kinds).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <numbers>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "cli/command.h"
#include "cli/config_messages.h"
#include "cli/out_dir.h"
#include "cli/render_dot.h"
#include "gpt/io/figures.h"
#include "gpt/model/gpt2.h"
#include "gpt/model/layer_norm_placement.h"
#include "lecture/attention_by_hand.h"
#include "lecture/attention_figures.h"
#include "nn/io/atomic_file.h"
#include "nn/layers.h"

namespace attograd::cli {

namespace {

struct FigureArgs {
  std::string kind;
  gpt::ConfigOverrides config;
  bool preset_given = false;
  std::string out = "runs/figures";
};

// The figures, one row each: the name, what it shows (--help) and the config fields it reads
// (GPTConfig's names; "*": every field). An option for a field a figure does not read is refused
// rather than checked and ignored.
struct FigureKind {
  const char* name;
  const char* help;
  std::vector<std::string> reads;
};
const std::vector<FigureKind>& figure_kinds() {
  static const std::vector<FigureKind> kinds = {
      {"sinusoidal", "the position table", {"block_size", "n_embd"}},
      {"rope", "a q pair rotated at each position", {"block_size", "n_embd", "n_head"}},
      {"rope-qk", "q at m and k at n: the score depends on m - n", {"block_size"}},
      {"scaling", "the softmax's peak against d_k, with and without sqrt(d_k)", {}},
      {"mask", "the causal mask", {"block_size"}},
      {"blocks", "the GPT's block diagram", {"*"}},
      {"attention-steps", "the 2-token example: S, scaled, masked, A, Z = A V", {}},
      {"heads", "heads split, attend, concat", {"block_size", "n_embd", "n_head"}},
      {"pre-post-ln",
       "the block pre-LN beside post-LN",
       {"block_size", "n_embd", "n_head", "n_layer", "bias", "pos_encoding"}},
  };
  return kinds;
}

bool reads(const FigureKind& kind, const std::string& field) {
  return std::find(kind.reads.begin(), kind.reads.end(), "*") != kind.reads.end() ||
         std::find(kind.reads.begin(), kind.reads.end(), field) != kind.reads.end();
}

// Throws std::invalid_argument when `a` gives a size option (or, to scaling, --preset) that the
// figure does not read, naming those it reads.
void refuse_unread_options(const FigureKind& kind, const FigureArgs& a) {
  std::vector<std::string> unread, read;
  if (a.preset_given && kind.reads.empty()) unread.push_back("--preset");
  gpt::GPTConfig::for_each_field([&](const auto& f) {
    if (reads(kind, f.name))
      read.push_back(f.flag);
    else if (a.config.has(f.name))
      unread.push_back(f.flag);
  });
  if (unread.empty()) return;
  throw std::invalid_argument(
      std::string("figure ") + kind.name + " reads " +
      (read.empty() ? std::string("no size option (it has the chapter's fixed sizes)")
                    : "only " + gpt::join_names(read, "and") + " (over --preset's)") +
      "; " + gpt::join_names(unread, "and") + (unread.size() == 1 ? " is" : " are") +
      " not used by it: drop " + (unread.size() == 1 ? "it" : "them"));
}

// A number as the CSV files write it: enough digits to read the double back exactly.
std::string num(double v) {
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Through an AtomicFile: a symlink named like the output is replaced, never written through.
void write_file(const std::string& path, const std::string& text) {
  nn::write_file_atomically(path, text);
}

// Tick labels 0 .. n-1, every `step`-th shown (the rest blank) so that long axes stay legible.
std::vector<std::string> index_labels(int64_t n) {
  const int64_t step = n <= 16 ? 1 : n <= 64 ? 8 : 16;
  std::vector<std::string> labels;
  for (int64_t i = 0; i < n; ++i) labels.push_back(i % step == 0 ? std::to_string(i) : "");
  return labels;
}

void say_drawn(bool drawn, const std::string& stem) {
  if (drawn) std::printf("drew %s.svg and .png\n", stem.c_str());
}

void sinusoidal(const gpt::GPTConfig& c, const std::string& stem) {
  const int64_t T = c.block_size, C = c.n_embd;
  const Tensor pe = nn::sinusoidal_table(T, C, DType::f64);
  std::string csv = "pos";
  for (int64_t j = 0; j < C; ++j) (csv += ",pe") += std::to_string(j);
  csv += '\n';
  gpt::Heatmap map{
      "", "position pos", "channel (even 2i: sin, odd 2i+1: cos)", index_labels(T), index_labels(C),
      {}};
  for (int64_t t = 0; t < T; ++t) {
    csv += std::to_string(t);
    for (int64_t j = 0; j < C; ++j) {
      const double v = pe.at({t, j});
      (csv += ',') += num(v);
      map.values.push_back(v);
    }
    csv += '\n';
  }
  write_file(stem + ".csv", csv);
  std::printf("wrote %s.csv: the sinusoidal table (%lld positions, %lld channels)\n", stem.c_str(),
              static_cast<long long>(T), static_cast<long long>(C));
  map.title = "sinusoidal positions PE (block_size " + std::to_string(T) + ", n_embd " +
              std::to_string(C) + ")";
  say_drawn(gpt::write_heatmaps({{stem, "", {map}, 1, -1, 1, false, true}}, std::cerr), stem);
}

void rope(const gpt::GPTConfig& c, const std::string& stem) {
  const int64_t T = c.block_size, HS = c.head_dim(), pairs = HS / 2;
  // Every position holds the same q: pair i is (channel i, channel i + HS/2) = (1, 0.5).
  const double x_in = 1.0, y_in = 0.5;
  std::vector<double> q(static_cast<size_t>(T * HS));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < pairs; ++i) q[t * HS + i] = x_in, q[t * HS + i + pairs] = y_in;
  const Tensor rotated = nn::apply_rope(Tensor::from_vector(q, {T, HS}, DType::f64));

  std::string csv = "pos,pair,x_in,y_in,x,y,norm,angle\n";
  const int64_t drawn = std::min<int64_t>(pairs, 4);
  std::string data, plot;
  for (int64_t i = 0; i < pairs; ++i) {
    if (i < drawn) data += "$pair" + std::to_string(i) + " << EOD\n";
    for (int64_t t = 0; t < T; ++t) {
      const double x = rotated.at({t, i}), y = rotated.at({t, i + pairs});
      // The angle it was turned by, measured from the output, in [0, 2π).
      double angle = std::atan2(y, x) - std::atan2(y_in, x_in);
      angle = std::fmod(angle + 4 * std::numbers::pi, 2 * std::numbers::pi);
      csv += std::to_string(t) + "," + std::to_string(i) + "," + num(x_in) + "," + num(y_in) + "," +
             num(x) + "," + num(y) + "," + num(std::hypot(x, y)) + "," + num(angle) + "\n";
      if (i < drawn) data += std::to_string(t) + " " + num(x) + " " + num(y) + "\n";
    }
    if (i < drawn) data += "EOD\n";
  }
  write_file(stem + ".csv", csv);
  std::printf(
      "wrote %s.csv: q pair (%g, %g) rotated at positions 0..%lld, %lld pair(s) of head_dim %lld\n",
      stem.c_str(), x_in, y_in, static_cast<long long>(T - 1), static_cast<long long>(pairs),
      static_cast<long long>(HS));
  // Each panel's axes are its pair's two channels, and its title says how fast the pair turns,
  // θ_i = 10000^(-2i/head_dim) radians per position: pairs 2 and 3, whose arrows overlap, are
  // seen to turn by too little to part.
  plot = data + "set multiplot layout 1," + std::to_string(drawn) +
         " title 'RoPE: q = (1, 0.5) in every channel pair i, turned by pos \u00b7 \u03b8_i, " +
         "\u03b8_i = 10000^(-2i/head_dim), head_dim " + std::to_string(HS) +
         "; arrows labelled by pos'\n" +
         "set size ratio -1\nset xrange [-1.5:1.5]\nset yrange [-1.5:1.5]\nset grid\nunset key\n";
  for (int64_t i = 0; i < drawn; ++i) {
    const std::string d = "$pair" + std::to_string(i);
    char theta[64];
    std::snprintf(theta, sizeof theta, "%.3g", std::pow(10000.0, -2.0 * i / HS));
    // Turned by less than 0.2 rad from position 0 to the last, the arrows lie on one another.
    const bool overlap = std::pow(10000.0, -2.0 * i / HS) * static_cast<double>(T - 1) < 0.2;
    plot += "set title 'pair " + std::to_string(i) + ": \u03b8_" + std::to_string(i) + " = " +
            theta + " rad per position" + (overlap ? " (the arrows overlap)" : "") +
            "'\nset xlabel 'channel " + std::to_string(i) +
            " (first of the pair)'\nset ylabel 'channel " + std::to_string(i + pairs) +
            " (i + head_dim/2)'\n" + "plot " + d +
            " using (0):(0):2:3:1 with vectors head filled lc palette, " + d +
            " using ($2 * 1.15):($3 * 1.15):(sprintf('%d', $1)) with labels font ',8'\n";
  }
  plot += "unset multiplot\n";
  say_drawn(gpt::write_figure(stem, "unset colorbox\n" + plot, 360 * drawn, 420, std::cerr), stem);
}

// RoPE's 2-d point: with head_dim 2 there is one channel pair, turned by pos radians
// (10000^0 = 1). q = (1, 0.5) at position m and k = (0.8, -0.6) at position n, both rotated by
// nn::apply_rope itself; their dot product depends on m - n alone, as the angle between them does.
void rope_qk(const gpt::GPTConfig& c, const std::string& stem) {
  const int64_t T = c.block_size;
  std::vector<double> q, k;
  for (int64_t t = 0; t < T; ++t) q.insert(q.end(), {1.0, 0.5}), k.insert(k.end(), {0.8, -0.6});
  const Tensor rq = nn::apply_rope(Tensor::from_vector(q, {T, 2}, DType::f64)),
               rk = nn::apply_rope(Tensor::from_vector(k, {T, 2}, DType::f64));
  std::string csv = "m,n,q_x,q_y,k_x,k_y,score,m_minus_n\n", scores = "$scores << EOD\n";
  for (int64_t m = 0; m < T; ++m)
    for (int64_t n = 0; n < T; ++n) {
      const double score = rq.at({m, 0}) * rk.at({n, 0}) + rq.at({m, 1}) * rk.at({n, 1});
      csv += std::to_string(m) + "," + std::to_string(n) + "," + num(rq.at({m, 0})) + "," +
             num(rq.at({m, 1})) + "," + num(rk.at({n, 0})) + "," + num(rk.at({n, 1})) + "," +
             num(score) + "," + std::to_string(m - n) + "\n";
      scores += std::to_string(m - n) + " " + num(score) + "\n";
    }
  write_file(stem + ".csv", csv);
  std::printf(
      "wrote %s.csv: q (1, 0.5) at m and k (0.8, -0.6) at n rotated by RoPE (head_dim 2), m, n "
      "< %lld\n",
      stem.c_str(), static_cast<long long>(T));
  // Left: (m, n) = (1, 0) solid and (T-2, T-3) dashed, the same m - n = 1: each pair turned by a
  // different angle, the angle between q and k the same.
  const int64_t m2 = T - 2, n2 = T - 3;
  auto arrow = [&](const Tensor& r, int64_t pos, const char* colour, int dash, const char* name) {
    return "set arrow from 0,0 to " + num(r.at({pos, 0})) + "," + num(r.at({pos, 1})) +
           " head filled lw 2 dt " + std::to_string(dash) + " lc rgb '" + colour + "'\n" +
           "set label '" + name + " at " + std::to_string(pos) + "' at " +
           num(1.18 * r.at({pos, 0})) + "," + num(1.18 * r.at({pos, 1})) + " center tc rgb '" +
           colour + "'\n";
  };
  std::string plot = scores +
                     "EOD\nset multiplot layout 1,2 title 'RoPE: q turned by m, k by n; "
                     "their dot product depends only on m - n'\n" +
                     "set title 'q at m, k at n: (1, 0) solid, (" + std::to_string(m2) + ", " +
                     std::to_string(n2) +
                     ") dashed'\nset size ratio -1\nset xrange [-1.5:1.5]\n"
                     "set yrange [-1.5:1.5]\nset grid\nunset key\nset xlabel 'channel 0'\n"
                     "set ylabel 'channel 1'\n" +
                     arrow(rq, 1, "#0000c0", 1, "q") + arrow(rk, 0, "#c00000", 1, "k") +
                     arrow(rq, m2, "#0000c0", 2, "q") + arrow(rk, n2, "#c00000", 2, "k") +
                     "plot NaN notitle\nunset arrow\nunset label\n"
                     "set title 'score <rope(q, m), rope(k, n)> for all " +
                     std::to_string(T * T) + " (m, n)'\nset size noratio\nset xrange [" +
                     std::to_string(-T) + ":" + std::to_string(T) +
                     "]\nset autoscale y\nset xlabel 'm - n'\n"
                     "set ylabel 'score'\nplot $scores using 1:2 with points pt 7 ps 0.8 "
                     "lc rgb '#0000c0'\nunset multiplot\n";
  say_drawn(gpt::write_figure(stem, plot, 900, 440, std::cerr), stem);
}

// Chapter 3's sqrt(d_k) experiment, as the lecture program prints it: for each d_k, the mean over
// queries of the largest softmax weight, unscaled and scaled, between 1/T (uniform) and 1
// (one-hot).
void scaling(const std::string& stem) {
  const lecture::ScalingExperiment experiment;
  std::string csv = "d_k,score_variance,mean_max_unscaled,mean_max_scaled\n",
              data = "$rows << EOD\n";
  for (const lecture::ScalingRow& r : experiment.measure()) {
    const std::string row = std::to_string(r.d_k) + "," + num(r.score_variance) + "," +
                            num(r.mean_max_unscaled) + "," + num(r.mean_max_scaled);
    csv += row + "\n";
    data += row + "\n";
  }
  write_file(stem + ".csv", csv);
  std::printf("wrote %s.csv: var(q.k) and the mean largest softmax weight for d_k %lld .. %lld\n",
              stem.c_str(), static_cast<long long>(experiment.d_ks.front()),
              static_cast<long long>(experiment.d_ks.back()));
  const std::string T = std::to_string(experiment.T);
  const std::string plot =
      data + "EOD\nset datafile separator ','\nset logscale x 2\nset xrange [" +
      std::to_string(experiment.d_ks.front()) + ":" + std::to_string(experiment.d_ks.back()) +
      "]\nset yrange [0:1.05]\nset grid\nset key bottom right\n"
      "set title 'the largest softmax weight against d_k (" +
      std::to_string(experiment.draws) + " queries, T = " + T + " keys, q, k ~ N(0, I))'\n" +
      "set xlabel 'd_k (log scale)'\nset ylabel 'mean largest weight'\n"
      "plot $rows using 1:3 with linespoints pt 7 lw 2 lc rgb '#c00000' title 'softmax(q\u00b7k): "
      "saturates', $rows using 1:4 with linespoints pt 7 lw 2 lc rgb '#0000c0' title "
      "'softmax(q\u00b7k / \u221ad_k)', 1.0 / " +
      T + " with lines dt 2 lc rgb '#808080' title 'uniform: 1/" + T +
      "', 1 with lines dt 2 lc rgb '#000000' title 'one-hot: 1'\n";
  say_drawn(gpt::write_figure(stem, plot, 720, 440, std::cerr), stem);
}

void mask(const gpt::GPTConfig& c, const std::string& stem) {
  const int64_t T = c.block_size;
  const Tensor masked = causal_mask(Tensor::zeros({T, T}, DType::f64));
  const Tensor weights = softmax(masked);
  std::string csv = "query\\key";
  for (int64_t j = 0; j < T; ++j) (csv += ',') += std::to_string(j);
  csv += '\n';
  gpt::Heatmap map{"softmax(causal_mask(0)); grey: masked",
                   "query t",
                   "key j",
                   index_labels(T),
                   index_labels(T),
                   {}};
  for (int64_t t = 0; t < T; ++t) {
    csv += std::to_string(t);
    for (int64_t j = 0; j < T; ++j) {
      const double m = masked.at({t, j});
      (csv += ',') += num(m);
      map.values.push_back(std::isinf(m) ? std::nan("") : weights.at({t, j}));
    }
    csv += '\n';
  }
  write_file(stem + ".csv", csv);
  std::printf("wrote %s.csv: causal_mask of zero scores (%lld x %lld)\n", stem.c_str(),
              static_cast<long long>(T), static_cast<long long>(T));
  say_drawn(gpt::write_heatmaps({{stem, "", {map}, 1, 0, 1, T <= 16, false, 3}}, std::cerr), stem);
}

// The GPT's block diagram as DOT: one node per module of gpt::GPT, labelled with its parameters'
// names and shapes as the model holds them; residual additions as circles.
void blocks(const gpt::GPTConfig& c, const std::string& stem) {
  const gpt::GPT model(c, 1337);
  const auto named = model.named_parameters();
  std::string csv = "parameter,shape,count\n";
  int64_t total = 0;
  for (const auto& [name, p] : named) {
    std::string shape;
    for (int64_t d : p.shape()) shape += (shape.empty() ? "" : "x") + std::to_string(d);
    csv += name + "," + shape + "," + std::to_string(p.numel()) + "\n";
    total += p.numel();
  }
  csv += "total,," + std::to_string(total) + "\n";
  write_file(stem + ".csv", csv);

  // "weight (18, 6)\lbias (18)\l" for the parameters under `prefix`, and their count.
  auto params = [&](const std::string& prefix) {
    std::string lines;
    int64_t n = 0;
    for (const auto& [name, p] : named) {
      if (name.rfind(prefix, 0) != 0) continue;
      std::string shape;
      for (int64_t d : p.shape()) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
      lines += name.substr(prefix.size()) + " (" + shape + ")\\l";
      n += p.numel();
    }
    return lines + std::to_string(n) + " parameters\\l";
  };
  const std::string C = std::to_string(c.n_embd), x = "(B, T, " + C + ")";
  std::ostringstream d;
  d << "digraph gpt {\n  rankdir=TB;\n  fontname=\"Sans\";\n  node [shape=box, "
       "style=\"rounded,filled\", fillcolor=\"#eef3fb\", "
       "fontname=\"Sans\", fontsize=10];\n  edge [fontname=\"Sans\", fontsize=9];\n"
    << "  label=\"GPT (" << c.n_layer << " layers, " << c.n_head << " heads, n_embd " << c.n_embd
    << ", block_size " << c.block_size << ", vocab_size " << c.vocab_size << ", "
    << gpt::pos_encoding_name(c.pos_encoding) << " positions): " << total
    << " parameters\";\n  labelloc=t;\n"
    << "  idx [label=\"idx (B, T) token ids\", shape=plaintext, style=\"\"];\n"
    << "  wte [label=\"wte: Embedding\\l" << params("wte.") << "\"];\n  idx -> wte;\n";
  std::string in = "embed";
  d << "  embed [label=\"+\", shape=circle, fillcolor=white];\n  wte -> embed [label=\" " << x
    << "\"];\n";
  if (c.pos_encoding == gpt::PosEncoding::learned)
    d << "  wpe [label=\"wpe: Embedding\\l" << params("wpe.")
      << "\"];\n  wpe -> embed [label=\" positions\"];\n";
  else if (c.pos_encoding == gpt::PosEncoding::sinusoidal)
    d << "  pe [label=\"sinusoidal table (" << c.block_size << ", " << C
      << ")\\lfixed: no parameters\\l\"];\n"
      << "  pe -> embed [label=\" positions\"];\n";
  d << "  drop [label=\"dropout p = " << c.dropout << "\"];\n  embed -> drop;\n";
  in = "drop";
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = "h." + std::to_string(l) + ".", id = "h" + std::to_string(l) + "_";
    d << "  subgraph cluster_" << l << " {\n    label=\"" << p << " Block (pre-LayerNorm)\";\n"
      << "    style=rounded; color=\"#8096b8\";\n"
      << "    " << id << "ln_1 [label=\"ln_1: LayerNorm\\l" << params(p + "ln_1.") << "\"];\n"
      << "    " << id << "attn [label=\"attn: CausalSelfAttention\\l" << c.n_head
      << " heads of head_dim " << c.head_dim()
      << (c.pos_encoding == gpt::PosEncoding::rope ? ", RoPE on q, k" : "")
      << "\\lsoftmax(causal_mask(q k\u1d40 / \u221ahead_dim)) v\\l" << params(p + "attn.")
      << "\"];\n"
      << "    " << id << "add_1 [label=\"+\", shape=circle, fillcolor=white];\n"
      << "    " << id << "ln_2 [label=\"ln_2: LayerNorm\\l" << params(p + "ln_2.") << "\"];\n"
      << "    " << id << "mlp [label=\"mlp: MLP (c_fc, GELU, c_proj)\\l" << params(p + "mlp.")
      << "\"];\n"
      << "    " << id << "add_2 [label=\"+\", shape=circle, fillcolor=white];\n  }\n"
      << "  " << in << " -> " << id << "ln_1 [label=\" " << x << "\"];\n"
      << "  " << in << " -> " << id << "add_1 [style=dashed, label=\" residual\"];\n"
      << "  " << id << "ln_1 -> " << id << "attn;\n  " << id << "attn -> " << id << "add_1;\n"
      << "  " << id << "add_1 -> " << id << "ln_2;\n  " << id << "ln_2 -> " << id << "mlp;\n"
      << "  " << id << "mlp -> " << id << "add_2;\n"
      << "  " << id << "add_1 -> " << id << "add_2 [style=dashed, label=\" residual\"];\n";
    in = id + "add_2";
  }
  d << "  ln_f [label=\"ln_f: LayerNorm\\l" << params("ln_f.") << "\"];\n  " << in << " -> ln_f;\n"
    << "  head [label=\"lm_head: logits = x wte\u1d40\\ltied to wte: no parameters of its "
       "own\\l\"];\n"
    << "  ln_f -> head;\n  wte -> head [style=dotted, label=\" same matrix\"];\n"
    << "  loss [label=\"loss = cross_entropy(logits, targets)\", shape=plaintext, style=\"\"];\n"
    << "  head -> loss [label=\" (B, T, " << c.vocab_size << ")\"];\n}\n";
  write_file(stem + ".dot", d.str());
  std::printf("wrote %s.csv (%zu parameter tensors, %lld parameters) and %s.dot\n", stem.c_str(),
              named.size(), static_cast<long long>(total), stem.c_str());
  if (render_svg(d.str(), stem + ".svg"))
    std::printf("rendered %s.svg\n", stem.c_str());
  else
    std::printf("%s\n", render_svg_hint(stem + ".dot", stem + ".svg").c_str());
}

// One matrix of a step figure as CSV rows "step,row,col,value" (-inf kept as it is).
void append_cells(std::string& csv, const std::string& step, const Tensor& m) {
  for (int64_t r = 0; r < m.size(0); ++r)
    for (int64_t c = 0; c < m.size(1); ++c)
      csv +=
          step + "," + std::to_string(r) + "," + std::to_string(c) + "," + num(m.at({r, c})) + "\n";
}

// A matrix as a heatmap panel on its own scale: cells above the diagonal grey when `causal`
// (the mask's -inf, and the weights' exact zeros there), as in every attention map.
gpt::Heatmap panel(const std::string& title, const std::string& row_axis,
                   const std::string& col_axis, const Tensor& m, std::vector<std::string> cols,
                   gpt::HeatmapScale scale, bool causal = false) {
  std::vector<std::string> rows;
  for (int64_t r = 0; r < m.size(0); ++r) rows.push_back(std::to_string(r));
  if (cols.empty())
    for (int64_t c = 0; c < m.size(1); ++c) cols.push_back(std::to_string(c));
  gpt::Heatmap h{title, row_axis, col_axis, rows, cols, {}, scale};
  for (int64_t r = 0; r < m.size(0); ++r)
    for (int64_t c = 0; c < m.size(1); ++c)
      h.values.push_back(causal && c > r ? std::nan("") : m.at({r, c}));
  return h;
}

// The smallest and largest finite value of `ms`: one scale for matrices compared by colour.
gpt::HeatmapScale range_of(std::initializer_list<Tensor> ms) {
  double lo = INFINITY, hi = -INFINITY;
  for (const Tensor& m : ms)
    for (const double v : m.to_vector())
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  return {lo, hi > lo ? hi : lo + 1, false};
}

// A signed scale symmetric about 0 (red negative, blue positive) over `ms`.
gpt::HeatmapScale signed_range_of(const std::vector<Tensor>& ms) {
  double most = 0;
  for (const Tensor& m : ms)
    for (const double v : m.to_vector()) most = std::max(most, std::abs(v));
  return {-most, most > 0 ? most : 1, true};
}

// Chapter 3's worked example 1 (T = 2, d_k = 1) as lecture::causal_attention_steps computes it,
// one panel per step: the inputs, S = Q Kᵀ, S / √d_k, the mask, A and Z = A V. Q and K share a
// scale, S and its scaled and masked forms another, and Z is drawn on V's scale: each output is
// a weighted average of V's rows, so its colour lies between theirs.
void attention_steps(const std::string& stem) {
  const lecture::AttentionInputs in = lecture::two_token_example();
  const lecture::AttentionSteps s = lecture::causal_attention_steps(in.Q, in.K, in.V);
  std::string csv = "step,row,col,value\n";
  const std::pair<const char*, const Tensor*> steps[] = {
      {"Q", &in.Q},          {"K", &in.K},      {"V", &in.V}, {"S", &s.qk}, {"S_scaled", &s.scores},
      {"masked", &s.masked}, {"A", &s.weights}, {"Z", &s.out}};
  for (const auto& [name, m] : steps) append_cells(csv, name, *m);
  write_file(stem + ".csv", csv);
  const int64_t T = in.Q.size(0), d_k = in.Q.size(1);
  std::printf("wrote %s.csv: the worked example's Q, K, V and every step (T = %lld, d_k = %lld)\n",
              stem.c_str(), static_cast<long long>(T), static_cast<long long>(d_k));
  const gpt::HeatmapScale qk = range_of({in.Q, in.K}), scores = range_of({s.qk, s.scores}),
                          values = range_of({in.V});
  const std::string scaled = "S / \u221ad_k (d_k = " + std::to_string(d_k) + ")";
  gpt::HeatmapFigure f{
      stem,
      "chapter 3's worked example 1, step by step (T = " + std::to_string(T) +
          ", d_k = " + std::to_string(d_k) + ")",
      {panel("Q (T, d_k)", "position t", "channel", in.Q, {}, qk),
       panel("K (T, d_k)", "position j", "channel", in.K, {}, qk),
       panel("V (T, d_v)", "position j", "channel", in.V, {}, values),
       panel("S = Q K\u1d40", "query t", "key j", s.qk, {}, scores),
       panel(scaled, "query t", "key j", s.scores, {}, scores),
       panel("mask: -inf above the diagonal (grey)", "query t", "key j", s.masked, {}, scores,
             true),
       panel("A = softmax of each row", "query t", "key j", s.weights, {}, {0, 1, false}, true),
       panel("Z = A V, on V's scale", "query t", "channel", s.out, {}, values)},
      3,
      0,
      1,
      true};
  say_drawn(gpt::write_heatmaps({f}, std::cerr), stem);
}

// One multi-head layer taken apart (lecture::MultiHeadExample at the config's n_embd, n_head
// and T = block_size): q, k, v with their channels labelled by head, each head's weights (on
// the figure's 0-1 scale) and output, the concat and c_proj's output.
void heads(const gpt::GPTConfig& c, const std::string& stem) {
  const lecture::MultiHeadSplit s =
      lecture::MultiHeadExample{c.n_embd, c.n_head, c.block_size}.compute();
  const int64_t HS = s.head_dim, C = c.n_embd, NH = c.n_head;
  std::string csv = "panel,row,col,value\n";
  append_cells(csv, "x", s.x);
  append_cells(csv, "q", s.q);
  append_cells(csv, "k", s.k);
  append_cells(csv, "v", s.v);
  for (int64_t h = 0; h < NH; ++h) append_cells(csv, "A" + std::to_string(h), s.weights[h]);
  for (int64_t h = 0; h < NH; ++h) append_cells(csv, "y" + std::to_string(h), s.head_out[h]);
  append_cells(csv, "concat", s.concat);
  append_cells(csv, "out", s.out);
  write_file(stem + ".csv", csv);
  std::printf(
      "wrote %s.csv: %lld heads of head_dim %lld, split, attended and concatenated (T = "
      "%lld)\n",
      stem.c_str(), static_cast<long long>(NH), static_cast<long long>(HS),
      static_cast<long long>(c.block_size));
  // Channel c of q, k, v or the concat belongs to head c / head_dim: "h1:0" is head 1's first.
  std::vector<std::string> by_head, numbered;  // numbered: 0, 1, ... (panel's default)
  for (int64_t j = 0; j < C; ++j)
    by_head.push_back("h" + std::to_string(j / HS) + ":" + std::to_string(j % HS));
  const gpt::HeatmapScale qkv = signed_range_of({s.q, s.k, s.v}),
                          outs = signed_range_of({s.concat}), mixed = signed_range_of({s.out});
  const std::string channel = "channel (h<head>:<i>)";
  gpt::HeatmapFigure f{stem,
                       "multi-head attention, n_embd " + std::to_string(C) + ", " +
                           std::to_string(NH) + " heads of head_dim " + std::to_string(HS) +
                           ": split c_attn(x) by head, attend per head, concat, c_proj",
                       {panel("q = split 1 of c_attn(x)", "position t", channel, s.q, by_head, qkv),
                        panel("k = split 2", "position t", channel, s.k, by_head, qkv),
                        panel("v = split 3", "position t", channel, s.v, by_head, qkv)},
                       std::max<int64_t>(3, NH),
                       0,
                       1,
                       true};
  for (int64_t h = 0; h < NH; ++h) {
    gpt::Heatmap a = panel("head " + std::to_string(h) + ": A = softmax(q_h k_h\u1d40 / \u221a" +
                               std::to_string(HS) + ")",
                           "query t", "key j", s.weights[h], {}, {}, true);
    a.scale.reset();  // the figure's 0-1 scale, with its colour box on the right
    f.panels.push_back(a);
  }
  for (int64_t h = 0; h < NH; ++h) {
    std::vector<std::string> cols(by_head.begin() + h * HS, by_head.begin() + (h + 1) * HS);
    f.panels.push_back(panel("head " + std::to_string(h) + ": y_h = A v_h", "position t", channel,
                             s.head_out[h], cols, outs));
  }
  f.panels.push_back(
      panel("concat: the heads side by side", "position t", channel, s.concat, by_head, outs));
  f.panels.push_back(
      panel("out = c_proj(concat): heads mixed", "position t", "channel", s.out, numbered, mixed));
  say_drawn(gpt::write_heatmaps({f}, std::cerr), stem);
}

// The block's data flow both ways (gpt::layer_norm_placement on a block of the config, T =
// block_size, x of RMS 3), as DOT: one column per layout, each stage a box with its RMS,
// residual additions as circles, the residual stream dashed.
void pre_post_ln(const gpt::GPTConfig& c, const std::string& stem) {
  const gpt::LayerNormPlacement p = gpt::layer_norm_placement(c, c.block_size);
  std::string csv = "layout,stage,value\n";
  auto rms = [](const gpt::BlockStage& s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", gpt::mean_rms(s.value));
    return std::string(buf);
  };
  std::ostringstream d;
  d << "digraph ln {\n  rankdir=TB;\n  fontname=\"Sans\";\n  newrank=true;\n"
    << "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#eef3fb\", fontname=\"Sans\", "
       "fontsize=10];\n  edge [fontname=\"Sans\", fontsize=9];\n"
    << "  label=\"one block of n_embd " << c.n_embd << ", " << c.n_head << " heads at GPT-2's "
    << "initialisation, on " << c.block_size
    << " tokens x ~ N(0, 3²): a stream grown past unit scale\nin each box, the RMS over the "
       "channels, mean over the tokens\";\n  labelloc=t;\n";
  struct Layout {
    const char* id;
    const char* title;
    const gpt::BlockLayout* layout;
    // The stages that are residual additions, each with the stage its dashed edge comes from
    // (the stream before the sub-block), and the stages that are a layer norm's output.
    std::vector<std::pair<size_t, size_t>> adds;
    std::vector<size_t> norms;
  };
  const Layout layouts[] = {
      {"pre", "pre-LN: attograd's Block (GPT-2)", &p.pre_ln, {{3, 0}, {6, 3}}, {1, 4}},
      {"post", "post-LN: Vaswani et al. 2017, same weights", &p.post_ln, {{2, 0}, {5, 3}}, {3, 6}}};
  for (const Layout& l : layouts) {
    const std::string layout_name = l.id == std::string("pre") ? "pre-LN" : "post-LN";
    for (const gpt::BlockStage& s : l.layout->stages)
      csv += layout_name + "," + s.name + "," + num(gpt::mean_rms(s.value)) + "\n";
    csv += layout_name + ",|dL/dx| / |dL/dy|," + num(l.layout->grad_ratio) + "\n";
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.3f", l.layout->grad_ratio);
    d << "  subgraph cluster_" << l.id << " {\n    label=\"" << l.title
      << "\\ngradient reaching x: |dL/dx| / |dL/dy| = " << ratio
      << "\";\n    style=rounded; color=\"#8096b8\";\n";
    const auto& st = l.layout->stages;
    for (size_t i = 0; i < st.size(); ++i) {
      bool add = false;
      for (const auto& a : l.adds) add = add || a.first == i;
      const bool norm = std::find(l.norms.begin(), l.norms.end(), i) != l.norms.end();
      d << "    " << l.id << i << " [label=\"" << st[i].name << "\\nRMS " << rms(st[i]) << "\""
        << (add    ? ", shape=ellipse, fillcolor=white"
            : norm ? ", fillcolor=\"#fdeccd\""
                   : "")
        << "];\n";
    }
    d << "  }\n";
    for (size_t i = 1; i < st.size(); ++i)
      d << "  " << l.id << i - 1 << " -> " << l.id << i << ";\n";
    for (const auto& [to, from] : l.adds)
      d << "  " << l.id << from << " -> " << l.id << to
        << " [style=dashed, constraint=false, label=\" residual\"];\n";
  }
  d << "}\n";
  write_file(stem + ".csv", csv);
  write_file(stem + ".dot", d.str());
  std::printf("wrote %s.csv (each stage's RMS, pre-LN and post-LN) and %s.dot\n", stem.c_str(),
              stem.c_str());
  if (render_svg(d.str(), stem + ".svg"))
    std::printf("rendered %s.svg\n", stem.c_str());
  else
    std::printf("%s\n", render_svg_hint(stem + ".dot", stem + ".svg").c_str());
}

// A drawing of more cells than this is unreadable (and a mask of block_size 131072 would need
// 137 GB): the figures are for looking at, so their sizes are refused beyond it.
constexpr int64_t kMaxDrawn = 1024;
// The figures' own, smaller limits: numbers printed in every cell (heads), pairs drawn (rope-qk),
// blocks in a diagram (blocks), tokens a block's RMS needs (pre-post-ln). `figure --help` lists
// them from these constants.
constexpr int64_t kRopeQkMinT = 4, kRopeQkMaxT = 64;
constexpr int64_t kHeadsMaxT = 8, kHeadsMaxEmbd = 12, kHeadsMaxHead = 4;
constexpr int64_t kPrePostMinEmbd = 3, kPrePostMaxT = 64;
constexpr int64_t kBlocksMaxLayers = 48;
// The block diagram builds the model to read its parameters' shapes: 48 layers of n_embd 1,024
// (600 M parameters) took 4.7 GB and 93 s to draw boxes; GPT-2 small's 124 M take 18 s.
constexpr int64_t kBlocksMaxParameters = 200'000'000;

std::string limits_help() {
  const auto n = [](int64_t v) { return std::to_string(v); };
  return "Limits: block_size <= " + n(kMaxDrawn) +
         " for every kind but blocks (rope-qk, heads and pre-post-ln lower, below); sinusoidal "
         "and rope n_embd <= " +
         n(kMaxDrawn) + ", sinusoidal an even n_embd, rope an even head_dim; rope-qk " +
         n(kRopeQkMinT) + " <= block_size <= " + n(kRopeQkMaxT) +
         "; heads block_size <= " + n(kHeadsMaxT) + ", n_embd <= " + n(kHeadsMaxEmbd) +
         " and n_head <= " + n(kHeadsMaxHead) + "; pre-post-ln " + n(kPrePostMinEmbd) +
         " <= n_embd <= " + n(kMaxDrawn) + " and block_size <= " + n(kPrePostMaxT) +
         "; blocks n_layer <= " + n(kBlocksMaxLayers) + " and at most " + n(kBlocksMaxParameters) +
         " parameters (--preset gpt2 has 124 M).";
}

// The first of the figure's own limits that `c` breaks, as the message that names the option to
// change, or nullopt. Checked on the preset with the user's overrides before the config's own
// checks (GPTConfig::validate), so that a size the figure refuses anyway is named by the figure's
// limit, not by the model's parameter cap. The model's rules (sinusoidal's even n_embd, rope's
// even head_dim) are not repeated here: run() gives those figures' configs their encoding, and
// build_config checks them.
std::optional<std::string> broken_limit(const std::string& kind, const gpt::GPTConfig& c) {
  const auto fail = [&](const std::string& what, const std::string& fix) {
    return "figure " + kind + ": " + what + "; choose " + fix;
  };
  const auto n = [](int64_t v) { return std::to_string(v); };
  if ((kind == "sinusoidal" || kind == "rope") && c.n_embd > kMaxDrawn)
    return fail("n_embd " + n(c.n_embd) + " is more channels than a figure can show",
                "--n-embd <= " + n(kMaxDrawn));
  if (kind == "rope-qk" && c.block_size < kRopeQkMinT)
    return fail("block_size " + n(c.block_size) +
                    " gives too few positions to draw the score against m - n",
                "--block-size >= " + n(kRopeQkMinT));
  if (kind == "rope-qk" && c.block_size > kRopeQkMaxT)
    return fail("block_size " + n(c.block_size) + " would draw " + n(c.block_size * c.block_size) +
                    " (m, n) pairs",
                "--block-size <= " + n(kRopeQkMaxT));
  if (kind == "heads") {
    // Only the sizes over their limits are named, each with its option.
    std::string what, fix;
    const auto over = [&](const std::string& field, int64_t value, int64_t max,
                          const std::string& option) {
      if (value <= max) return;
      what += (what.empty() ? "" : ", ") + field + " " + n(value);
      fix += (fix.empty() ? "" : " and ") + option + " <= " + n(max);
    };
    over("T = block_size", c.block_size, kHeadsMaxT, "--block-size");
    over("n_embd", c.n_embd, kHeadsMaxEmbd, "--n-embd");
    over("n_head", c.n_head, kHeadsMaxHead, "--n-head");
    if (!what.empty()) return fail(what + " would print too many numbers to read", fix);
  }
  // One block of n_embd C has 12 C^2 parameters: n_embd 8192 allocated gigabytes for two RMS.
  if (kind == "pre-post-ln" && c.n_embd > kMaxDrawn)
    return fail("n_embd " + n(c.n_embd) + " channels is more than the stages' RMS needs",
                "--n-embd <= " + n(kMaxDrawn));
  // A layer norm over one channel outputs beta (the channel minus its own mean); over two, +-1
  // whatever the input, so no gradient reaches x through it (post-LN's ratio was 7.6e-08).
  if (kind == "pre-post-ln" && c.n_embd < kPrePostMinEmbd)
    return fail(
        "n_embd " + n(c.n_embd) +
            " leaves a layer norm no freedom (its output is 0 for one channel, +-1 for two), so "
            "the two layouts cannot be compared",
        "--n-embd >= " + n(kPrePostMinEmbd));
  if (kind == "pre-post-ln" && c.block_size > kPrePostMaxT)
    return fail("block_size " + n(c.block_size) + " tokens is more than the stages' RMS needs",
                "--block-size <= " + n(kPrePostMaxT));
  // After the figures' own, smaller limits, so that the limit an error names is the one to meet.
  if (kind != "blocks" && c.block_size > kMaxDrawn)
    return fail("block_size " + n(c.block_size) + " is more positions than a figure can show",
                "--block-size <= " + n(kMaxDrawn));
  if (kind == "blocks" && c.n_layer > kBlocksMaxLayers)
    return fail("n_layer " + n(c.n_layer) + " is more blocks than a diagram can show",
                "--n-layer <= " + n(kBlocksMaxLayers));
  // block_size counts only where positions are learned (wpe); sinusoidal and RoPE have none.
  const bool learned = c.pos_encoding == gpt::PosEncoding::learned;
  if (kind == "blocks" && c.num_parameters() > kBlocksMaxParameters)
    return fail(
        "n_layer " + n(c.n_layer) + ", n_embd " + n(c.n_embd) + ", vocab_size " + n(c.vocab_size) +
            (learned ? " and block_size " + n(c.block_size) : "") + " make " +
            n(c.num_parameters()) + " parameters, which the diagram builds to read their shapes",
        "a config of at most " + n(kBlocksMaxParameters) + " parameters (smaller --n-layer, " +
            "--n-embd" + (learned ? ", --vocab-size or --block-size" : " or --vocab-size") +
            "; --preset gpt2 has 124 M)");
  return std::nullopt;
}

// Throws std::invalid_argument with broken_limit's message when `c` breaks one.
void check_limits(const std::string& kind, const gpt::GPTConfig& c) {
  if (const auto message = broken_limit(kind, c)) throw std::invalid_argument(*message);
}

int run(const FigureArgs& a) {
  const FigureKind& kind = *std::find_if(figure_kinds().begin(), figure_kinds().end(),
                                         [&](const FigureKind& k) { return a.kind == k.name; });
  refuse_unread_options(kind, a);
  // A figure draws only the fields it reads; the others are set so that they cannot fail the
  // config's own checks: the preset's head count need not divide a figure's n_embd, nor its
  // n_layer and vocab_size make too many parameters (heads at n_embd 32768 named --n-layer and
  // --vocab-size, which heads refuses).
  gpt::ConfigOverrides overrides = a.config;
  ConfigOrigins origins(a.config);  // a broken rule names the options the user gave
  origins.in_command("figure " + a.kind);
  // A value the fix suggests must pass this figure's own limits too.
  origins.accepting(
      [kind_name = a.kind](const gpt::GPTConfig& c) { return !broken_limit(kind_name, c); });
  const auto decide = [&](auto member, auto value, const std::string& field) {
    overrides.set(member, value);
    origins.fixed(field, "figure " + a.kind + "'s");
  };
  if (!reads(kind, "n_head")) decide(&gpt::GPTConfig::n_head, int64_t{1}, "n_head");
  if (!reads(kind, "n_layer")) decide(&gpt::GPTConfig::n_layer, int64_t{1}, "n_layer");
  if (!reads(kind, "vocab_size")) decide(&gpt::GPTConfig::vocab_size, int64_t{1}, "vocab_size");
  // sinusoidal and rope draw the model's own encodings (nn::sinusoidal_table, nn::apply_rope),
  // so the model's rules for them hold: an even n_embd, an even head_dim (GPTConfig's rules,
  // checked by build_config and said as for any model's options).
  if (a.kind == "sinusoidal")
    decide(&gpt::GPTConfig::pos_encoding, gpt::PosEncoding::sinusoidal, "pos_encoding");
  if (a.kind == "rope")
    decide(&gpt::GPTConfig::pos_encoding, gpt::PosEncoding::rope, "pos_encoding");
  check_limits(a.kind, overrides.applied_to(gpt::preset(overrides.preset)));
  const gpt::GPTConfig c =
      naming_options(origins, [&] { return build_config(overrides, std::nullopt); });
  create_out_dir(a.out, "--out");
  const std::string stem = a.out + "/" + a.kind;
  if (a.kind == "sinusoidal")
    sinusoidal(c, stem);
  else if (a.kind == "rope")
    rope(c, stem);
  else if (a.kind == "rope-qk")
    rope_qk(c, stem);
  else if (a.kind == "scaling")
    scaling(stem);
  else if (a.kind == "mask")
    mask(c, stem);
  else if (a.kind == "attention-steps")
    attention_steps(stem);
  else if (a.kind == "heads")
    heads(c, stem);
  else if (a.kind == "pre-post-ln")
    pre_post_ln(c, stem);
  else
    blocks(c, stem);
  return 0;
}

}  // namespace

void add_figure_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<FigureArgs>();
  CLI::App* cmd =
      app.add_subcommand("figure",
                         "the docs' figures of positions, the causal mask, attention step by "
                         "step, heads split and concatenated, and the GPT's blocks and "
                         "layer norms, as CSV data and drawings");
  std::vector<std::string> names, described;
  for (const FigureKind& k : figure_kinds()) {
    names.push_back(k.name);
    described.push_back(std::string(k.name) + " (" + k.help + ")");
  }
  cmd->add_option("kind", a->kind, gpt::join_names(described))->check(one_of(names))->required();
  add_config_options(cmd, a->config, /*with_vocab=*/true);
  cmd->add_option("--out", a->out,
                  "directory for <kind>.csv and the drawing (<kind>.svg, .png or .dot)")
      ->check(kOutputPath)
      ->capture_default_str();
  cmd->footer(
      "Sizes: sinusoidal uses block_size x n_embd, rope head_dim = n_embd / n_head and positions "
      "0 .. block_size-1, rope-qk positions 0 .. block_size-1 (head_dim 2), scaling chapter 3's "
      "fixed sizes (d_k 2 .. 512, T = 8), mask block_size, blocks the whole config, "
      "attention-steps chapter 3's worked example 1 (T = 2, d_k = 1), heads n_embd and n_head "
      "with T = block_size, pre-post-ln one block of the config on T = block_size tokens.\n" +
      limits_help());
  cmd->callback([a, cmd, &exit_code] {
    a->preset_given = cmd->count("--preset") > 0;
    exit_code = run(*a);
  });
}

}  // namespace attograd::cli
