// `attograd gradcheck`: every op's VJP against central differences, printed as a table; the
// op registry's entries listed (--list) or written as the table of docs/derivatives.md
// (--markdown).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "autograd/gradcheck.h"
#include "autograd/op_registry.h"
#include "cli/command.h"
#include "gpt/text/corpus.h"
#include "nn/io/atomic_file.h"

namespace attograd::cli {

namespace {

struct GradcheckArgs {
  std::string op;
  std::string dtype = "f64";
  uint64_t seed = 0;
  GradcheckSizes sizes;
  bool fast = false;
  bool list = false;
  std::string markdown;  // "-" for stdout, else the document whose generated table to rewrite
};

// Throws unless `op` is empty (every op) or names an entry.
void check_op_name(const std::string& op) {
  if (op.empty() || op_registry().find(op) != nullptr) return;
  std::vector<std::string> known;
  for (const OpEntry& e : op_registry().entries()) known.push_back(e.name);
  std::sort(known.begin(), known.end());
  std::string list;
  for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
  throw std::invalid_argument("gradcheck: unknown op '" + op + "'; known ops: " + list);
}

// The formula text for a terminal: the Markdown backticks dropped.
std::string plain(std::string text) {
  std::erase(text, '`');
  return text;
}

// --list: each op with its formulas and the labels of its cases.
int list(const GradcheckArgs& args) {
  for (const OpEntry& e : op_registry().entries()) {
    if (!args.op.empty() && e.name != args.op) continue;
    std::printf("%s  (%s:%d)\n  forward: %s\n  VJP:     %s\n", e.name.c_str(), e.file.c_str(),
                e.line, plain(e.forward).c_str(), plain(e.vjp).c_str());
    for (const GradcheckCase& c : e.cases) std::printf("  case:    %s\n", c.label.c_str());
  }
  return 0;
}

// --markdown: the table to stdout, or into the marked region of a document.
int markdown(const GradcheckArgs& args) {
  const std::string table = derivatives_table(op_registry());
  if (args.markdown == "-") {
    std::fputs(table.c_str(), stdout);
    return 0;
  }
  const std::string document = gpt::read_text_file(
      args.markdown, "--markdown file",
      "give the Markdown file that holds the op table, e.g. docs/derivatives.md",
      gpt::kMaxCorpusBytes, gpt::HeldAs::text);
  std::string updated;
  try {
    updated = replace_generated_region(document, table);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("gradcheck --markdown " + args.markdown + ": " + e.what());
  }
  // Through a symlink to the file it names, with that file's permissions: the atomic rename
  // would otherwise put a new 0644 file where the link was.
  const std::filesystem::path target = std::filesystem::canonical(args.markdown);
  const std::filesystem::perms mode = std::filesystem::status(target).permissions();
  nn::write_file_atomically(target, updated);
  std::filesystem::permissions(target, mode);
  std::printf("wrote the table of %zu ops into %s\n", op_registry().entries().size(),
              args.markdown.c_str());
  return 0;
}

int run(const GradcheckArgs& args) {
  check_op_name(args.op);
  if (args.list) return list(args);
  if (!args.markdown.empty()) return markdown(args);  // '' is refused by refuse_empty_values
  const DType dtype = args.dtype == "f32" ? DType::f32 : DType::f64;
  GradcheckOptions opt = dtype == DType::f32 ? GradcheckOptions::float32() : GradcheckOptions{};
  opt.fast_mode = args.fast;
  opt.seed = args.seed;
  if (dtype == DType::f32)
    std::printf(
        "float32: the step is eps = %g, not 1e-6. Central differences divide a rounding\n"
        "error of ~1e-7 relative by 2 eps, so a tiny step measures rounding, not the slope;\n"
        "eps near the cube root of f32's epsilon balances both (tolerances atol = rtol = %g).\n\n",
        opt.eps, opt.atol);
  std::printf("%-15s %-58s %-6s %12s %12s  %s\n", "op", "case", "input", "max abs err",
              "max rel err", "result");
  int failed = 0, total = 0;
  for (const OpEntry& e : op_registry().entries()) {
    if (!args.op.empty() && e.name != args.op) continue;
    for (const GradcheckCase& c : e.cases) {
      Generator gen(args.seed);
      const GradcheckResult r = run_gradcheck(c.fn, c.make_inputs(gen, dtype, args.sizes), opt);
      for (const GradcheckInputReport& in : r.inputs) {
        std::printf("%-15s %-58s %-6zu %12.3e %12.3e  %s\n", e.name.c_str(), c.label.c_str(),
                    in.index, in.max_abs_err, in.max_rel_err, in.passed ? "PASS" : "FAIL");
      }
      if (!r.repeat_ok)
        std::printf("%-15s %-58s two backward passes disagree  FAIL\n", e.name.c_str(),
                    c.label.c_str());
      ++total;
      if (!r.passed) {
        ++failed;
        std::printf("  -> %s\n", r.message.c_str());
      }
    }
  }
  std::printf("\n%d passed, %d failed\n", total - failed, failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace

void add_gradcheck_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<GradcheckArgs>();
  CLI::App* cmd = app.add_subcommand(
      "gradcheck", "check every op's backward formula against finite differences");
  cmd->add_option("--op", args->op, "check only this op (e.g. softmax)");
  cmd->add_option("--dtype", args->dtype,
                  "f64 (PyTorch's eps 1e-6, atol 1e-5, rtol 1e-3) or f32 (wider step)")
      ->capture_default_str()
      ->check(one_of({"f64", "f32"}));
  cmd->add_option("--seed", args->seed, "seed for inputs and the random upstream gradient")
      ->check(kSeed)
      ->capture_default_str();
  // Element-wise central differences cost two forward passes per input element, so the cost
  // grows with the square of the sizes: 16 keeps every op under a few seconds (use --fast for
  // a directional check at any size).
  cmd->add_option("-B,--batch", args->sizes.B, "B of the (B, T, C) test shapes")
      ->check(integer_in({1, 16}))
      ->capture_default_str();
  cmd->add_option("-T,--time", args->sizes.T, "T of the (B, T, C) test shapes")
      ->check(integer_in({1, 16}))
      ->capture_default_str();
  cmd->add_option("-C,--channels", args->sizes.C, "C of the (B, T, C) test shapes")
      ->check(integer_in({2, 16}))
      ->capture_default_str();
  cmd->add_flag("--fast", args->fast,
                "compare one random directional derivative per input (vᵀ Jᵀ u)");
  CLI::Option* list = cmd->add_flag("--list", args->list,
                                    "list each op's formulas and cases instead of running them");
  cmd->add_option("--markdown", args->markdown,
                  "write the op table between the marker lines of FILE (docs/derivatives.md), "
                  "or to stdout for -")
      ->option_text("FILE")
      ->check(kOutputPath)
      ->excludes(list);
  cmd->callback([args, &exit_code] { exit_code = run(*args); });
}

}  // namespace attograd::cli
