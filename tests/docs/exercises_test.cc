// docs/exercises.md, answer by answer. Each case runs the commands its answer names, exactly as
// the document writes them (a case fails when the document no longer shows its command), from a
// fresh directory that stands in for the reader's checkout, and asserts what the answer says
// the command prints. Exercises 4-6 read the King James Bible (Debian's bible-kjv): CTest runs
// them as `data` cases, skipped without it.
#define BOOST_TEST_MODULE exercises
#include <boost/test/unit_test.hpp>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "autograd/kernels/targets.h"
#include "gpt/train/trainer.h"
#include "tests/cli/cli_run.h"
#include "tests/test_util.h"

namespace {

using attograd::testing::CliRun;
using attograd::testing::contains;
using attograd::testing::TempDir;
namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::string& doc() {
  static const std::string text = read_text(ATTOGRAD_EXERCISES_DOC);
  return text;
}

// Runs one command of the document, as its own line there, in `dir` (where the reader's runs/
// would go) with the corpus cache inside it; the program path the reader types becomes the one
// this build made.
CliRun run_documented(const std::string& command, const TempDir& dir) {
  BOOST_REQUIRE_MESSAGE(contains(doc(), "\n" + command + "\n"),
                        "docs/exercises.md no longer shows: " + command);
  const std::pair<std::string, std::string> programs[] = {
      {"build/cli/attograd ", ATTOGRAD_CLI},
      {"build/examples/attention_by_hand ", ATTENTION_BY_HAND}};
  const std::string env =
      "cd " + dir.path.string() + " && ATTOGRAD_CACHE_DIR=" + (dir / "cache") + " ";
  for (const auto& [typed, built] : programs)
    if (command.starts_with(typed))
      return attograd::testing::run_program(built, command.substr(typed.size()), true, env);
  BOOST_FAIL("not a program of this build: " + command);
  return {};
}

// Two documented commands run one after the other in a fresh folder named `name`; both must
// succeed (their output is the failure's context).
std::pair<CliRun, CliRun> run_both(const std::string& first, const std::string& second,
                                   const std::string& name) {
  const TempDir dir(name);
  std::pair<CliRun, CliRun> runs{run_documented(first, dir), run_documented(second, dir)};
  BOOST_TEST_INFO(runs.first.out << runs.second.out);
  BOOST_REQUIRE(runs.first.exit_code == 0);
  BOOST_REQUIRE(runs.second.exit_code == 0);
  return runs;
}

// `text` with every run of white space one space: a sentence of the document as it reads,
// wherever its lines break.
std::string flat(const std::string& text) {
  std::string out;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c)))
      out += c;
    else if (!out.empty() && out.back() != ' ')
      out += ' ';
  return out;
}

// The integer after `flag ` in `text` (the first such flag); fails the test when there is none.
int64_t flag_value(const std::string& text, const std::string& flag) {
  const size_t at = text.find(flag + " ");
  BOOST_REQUIRE_MESSAGE(at != std::string::npos, "no " << flag << " in the text");
  return std::stoll(text.substr(at + flag.size() + 1));
}

// A line the document shows as output is in the command's output too.
void shown_and_printed(const std::string& line, const CliRun& r) {
  BOOST_TEST(contains(doc(), line), "docs/exercises.md no longer shows: " << line);
  BOOST_TEST(contains(r.out, line), "not printed: " << line);
}

// The numbers of the tensor attention_by_hand prints after `label`, row by row ("-inf" too).
std::vector<double> printed_tensor(const std::string& out, const std::string& label) {
  const size_t at = out.find(label);
  BOOST_REQUIRE_MESSAGE(at != std::string::npos, "no '" << label << "' in the output");
  const size_t open = out.find("tensor(", at), close = out.find(", shape", open);
  std::string body = out.substr(open + 7, close - open - 7);
  for (char& c : body)
    if (c == '[' || c == ']' || c == ',') c = ' ';
  std::istringstream words(body);
  std::vector<double> values;
  for (std::string w; words >> w;) values.push_back(std::strtod(w.c_str(), nullptr));
  return values;
}

// The number after `key` on the first line that has it (NaN when there is none).
double number_after(const std::string& out, const std::string& key) {
  const size_t at = out.find(key);
  return at == std::string::npos ? std::nan("")
                                 : std::strtod(out.c_str() + at + key.size(), nullptr);
}

const std::string kTrain =
    "build/cli/attograd train --preset pico --steps 300 --eval-interval 100 --eval-iters 20 "
    "--log-interval 100 "
    "--out runs/exercise";

// Exercise 4's run, which exercises 5 and 6 read.
CliRun train_exercise_pico(const TempDir& dir) {
  const CliRun r = run_documented(kTrain, dir);
  BOOST_TEST_INFO(r.out);
  BOOST_REQUIRE(r.exit_code == 0);
  return r;
}

bool kjv_available() {
  return attograd::testing::data_available("/usr/bin/bible", "apt-get install bible-kjv");
}

}  // namespace

BOOST_AUTO_TEST_CASE(dimensions_and_parameter_counts) {
  const TempDir dir("exercises_dims");
  const CliRun femto =
      run_documented("build/cli/attograd info --preset femto --vocab-size 73", dir);
  BOOST_TEST_INFO(femto.out);
  BOOST_TEST(femto.exit_code == 0);
  BOOST_TEST(contains(femto.out, "total                                     240   "));
  const CliRun pico =
      run_documented("build/cli/attograd info --preset pico --vocab-size 73 --T 5", dir);
  BOOST_TEST_INFO(pico.out);
  BOOST_TEST(pico.exit_code == 0);
  shown_and_printed(
      "total                                    2028   (the LM head is tied to wte: no extra "
      "parameters)",
      pico);
  shown_and_printed("  Q K^T / sqrt(HS)  (B, NH, T, T)    = (1, 3, 5, 5)", pico);
  shown_and_printed("  attention weights (B, NH, T, T)    = (1, 3, 5, 5), causal, rows sum to 1",
                    pico);
  shown_and_printed("  weights V         (B, NH, T, HS)   = (1, 3, 5, 2)", pico);
  // The answer's count by hand: 12C² + 13C per block, plus wte, wpe and ln_f.
  auto count = [](long V, long C, long n_layer) {
    return V * C + 8 * C + n_layer * (12 * C * C + 13 * C) + 2 * C;
  };
  BOOST_TEST(count(73, 2, 1) == 240);
  BOOST_TEST(count(73, 6, 3) == 2028);
}

// Exercise 7: examples/train_pico.sh's budget (its --steps and --batch-size) against exercise
// 4's (the command above: its --steps at the CLI's default batch), in sequences of the same
// block_size, so in tokens.
BOOST_AUTO_TEST_CASE(the_homework_trains_on_133_times_the_tokens) {
  const std::string text = read_text(ATTOGRAD_SOURCE_DIR "/examples/train_pico.sh");
  const size_t train = text.find("\nbuild/cli/attograd train ");  // the command, not the comments
  BOOST_REQUIRE(train != std::string::npos);
  const std::string script = text.substr(train);
  const int64_t homework = flag_value(script, "--steps") * flag_value(script, "--batch-size");
  BOOST_TEST(!contains(kTrain, "--batch-size"));
  const int64_t exercise = flag_value(kTrain, "--steps") * attograd::gpt::TrainOptions{}.batch_size;
  BOOST_TEST(homework == 1280000);
  BOOST_TEST(exercise == 9600);
  BOOST_TEST(std::lround(static_cast<double>(homework) / exercise) == 133);
  BOOST_TEST(contains(flat(doc()),
                      "20,000 steps of 64 sequences are 133 times exercise 4's tokens (300 steps "
                      "of 32 sequences, the default batch"));
}

BOOST_AUTO_TEST_CASE(attention_by_hand_t3_dk2) {
  const TempDir dir("exercises_t3");
  const CliRun r = run_documented(
      R"(build/examples/attention_by_hand --Q "1,0;0,1;1,1" --K "1,0;0,1;1,1" --V "1,2;3,4;5,6")",
      dir);
  BOOST_TEST_INFO(r.out);
  BOOST_REQUIRE(r.exit_code == 0);
  BOOST_TEST(attograd::testing::allclose(printed_tensor(r.out, "S = Q K^T  shape (3, 3)"),
                                         std::vector<double>{1, 0, 1, 0, 1, 1, 1, 1, 2}, 0, 0));
  BOOST_TEST(attograd::testing::allclose(
      printed_tensor(r.out, "A = row softmax"),
      std::vector<double>{1, 0, 0, 0.3302385, 0.6697615, 0, 0.2482551, 0.2482551, 0.5034898}, 1e-7,
      0));
  BOOST_TEST(attograd::testing::allclose(
      printed_tensor(r.out, "Z = A V (output)  shape (3, 2)"),
      std::vector<double>{1, 2, 2.3395231, 3.3395231, 3.5104695, 4.5104695}, 1e-7, 0));
  BOOST_TEST(contains(r.out, "row sums of A: 1.0000000 1.0000000 1.0000000"));
  BOOST_TEST(
      contains(r.out, "(not 1: outputs are no longer averages): 0.4011121 0.6977758 1.9011121"));
  const std::vector<double> wrong = printed_tensor(r.out, "its wrong Z");
  BOOST_TEST(attograd::testing::allclose({wrong[4], wrong[5]},
                                         std::vector<double>{6.9011121, 8.8022242}, 1e-7, 0));
}

// Exercise 2, part 5: with Q != K, S = Q Kᵀ is not symmetric and K Qᵀ (Q and K swapped) is its
// transpose, yet Z comes out the same for this V.
BOOST_AUTO_TEST_CASE(q_different_from_k) {
  const auto [qk, kq] = run_both(
      R"(build/examples/attention_by_hand --Q "1,0;0,1;1,1" --K "0,1;1,1;1,0" --V "1,2;3,4;5,6")",
      R"(build/examples/attention_by_hand --Q "0,1;1,1;1,0" --K "1,0;0,1;1,1" --V "1,2;3,4;5,6")",
      "exercises_q_ne_k");
  BOOST_TEST(attograd::testing::allclose(printed_tensor(qk.out, "S = Q K^T  shape (3, 3)"),
                                         std::vector<double>{0, 1, 1, 1, 1, 0, 1, 2, 1}, 0, 0));
  BOOST_TEST(attograd::testing::allclose(printed_tensor(kq.out, "S = Q K^T  shape (3, 3)"),
                                         std::vector<double>{0, 1, 1, 1, 1, 2, 1, 0, 1}, 0, 0));
  const std::vector<double> z = {1, 2, 2, 3, 3, 4};
  BOOST_TEST(attograd::testing::allclose(printed_tensor(qk.out, "Z = A V (output)  shape (3, 2)"),
                                         z, 1e-12, 0));
  BOOST_TEST(attograd::testing::allclose(printed_tensor(kq.out, "Z = A V (output)  shape (3, 2)"),
                                         z, 1e-12, 0));
}

BOOST_AUTO_TEST_CASE(the_mask_hides_later_values) {
  const auto [before, after] = run_both(
      R"(build/examples/attention_by_hand --Q "1,0;0,1;1,1" --K "1,0;0,1;1,1" --V "1,2;3,4;5,6")",
      R"(build/examples/attention_by_hand --Q "1,0;0,1;1,1" --K "1,0;0,1;1,1" --V "1,2;3,4;50,60")",
      "exercises_mask");
  const std::vector<double> z0 = printed_tensor(before.out, "Z = A V"),
                            z1 = printed_tensor(after.out, "Z = A V");
  // Rows 0 and 1 are bit for bit the same; only row 2 sees the changed value.
  for (int i = 0; i < 4; ++i) BOOST_TEST(z1[i] == z0[i]);
  BOOST_TEST(attograd::testing::allclose({z1[4], z1[5]},
                                         std::vector<double>{26.1675125, 31.6989211}, 1e-7, 0));
  // Because the weights above the diagonal are exactly 0, after scores of -inf.
  const std::vector<double> masked = printed_tensor(after.out, "causal mask applied"),
                            a = printed_tensor(after.out, "A = row softmax");
  for (int i : {1, 2, 5}) {
    BOOST_TEST(std::isinf(masked[i]));
    BOOST_TEST(masked[i] < 0);
    BOOST_TEST(a[i] == 0.0);
  }
}

BOOST_AUTO_TEST_CASE(train_pico_and_plot) {
  if (!kjv_available()) return;
  const TempDir dir("exercises_train");
  const CliRun r = train_exercise_pico(dir);
  // Step 0: the untrained model is near uniform over the 73 characters, loss ln 73.
  const std::string step0 = r.out.substr(r.out.find("eval at step 0:"));
  BOOST_TEST(std::abs(number_after(step0, "train loss ") - std::log(73.0)) < 0.1);
  BOOST_TEST(std::abs(number_after(step0, "val loss ") - std::log(73.0)) < 0.1);
  // Step 300: below the unigram baseline, above the bigram, at the answer's 2.57.
  const std::string final_line = r.out.substr(r.out.find("final "));
  BOOST_TEST(std::abs(number_after(final_line, "val loss ") - 2.57) < 0.05);
  BOOST_TEST(contains(r.out, "unigram baseline 3.0180"));
  BOOST_TEST(contains(r.out, "the model is below it by"));
  BOOST_TEST(contains(r.out, "add-one bigram 2.3280 (perplexity 10.26): the model is ABOVE it by"));
  // eval_log.csv has steps 0, 100, 200 and 300; gnuplot, where installed, drew the plots.
  const std::string log = read_text(dir.path / "runs/exercise/eval_log.csv");
  BOOST_TEST(contains(log, "\n0,"));
  BOOST_TEST(contains(log, "\n100,"));
  BOOST_TEST(contains(log, "\n200,"));
  BOOST_TEST(contains(log, "\n300,"));
  BOOST_TEST(fs::exists(dir.path / "runs/exercise/train_log.csv"));
  if (std::system("command -v gnuplot > /dev/null 2>&1") == 0)
    for (const char* plot : {"loss.png", "loss.svg", "perplexity.png", "perplexity.svg"})
      BOOST_TEST(fs::file_size(dir.path / "runs/exercise" / plot) > 0, plot);
}

BOOST_AUTO_TEST_CASE(perplexity_is_exp_of_the_mean_loss) {
  if (!kjv_available()) return;
  const TempDir dir("exercises_ppl");
  const CliRun train = train_exercise_pico(dir);
  // The untrained model's perplexity is about V = 73, and exp of its loss (printed to 4 decimals).
  const std::string step0 = train.out.substr(train.out.find("eval at step 0:"));
  const std::string val0 = step0.substr(step0.find("val loss "));
  const double loss0 = number_after(val0, "val loss "), ppl0 = number_after(val0, "(perplexity ");
  BOOST_TEST(std::abs(ppl0 - 73) < 1);
  BOOST_TEST(std::abs(ppl0 - std::exp(loss0)) < 0.01);

  const CliRun r = run_documented(
      "build/cli/attograd eval --checkpoint runs/exercise/ckpt.safetensors --max-tokens 20000",
      dir);
  BOOST_TEST_INFO(r.out);
  BOOST_REQUIRE(r.exit_code == 0);
  BOOST_TEST(contains(r.out, "val split of kjv: 20000 tokens"));
  const double loss = number_after(r.out, "\nloss "), ppl = number_after(r.out, "\nperplexity ");
  BOOST_TEST(std::abs(loss - 2.56) < 0.05);
  BOOST_TEST(std::abs(ppl - 12.9) < 0.7);
  BOOST_TEST(std::abs(ppl - std::exp(loss)) < 1e-6 * ppl);  // both printed to 9 significant digits
  // Question 3: the exponential of the mean over all tokens, not of a mean of batch means.
  BOOST_TEST(std::abs(std::exp((0.5 + 1.0 + 1.5 + 3.0) / 4) - 4.481689) < 1e-6);
  BOOST_TEST(std::abs((std::exp(1.0) + std::exp(3.0)) / 2 - 11.40) < 0.01);
}

BOOST_AUTO_TEST_CASE(temperature_from_greedy_to_noise) {
  if (!kjv_available()) return;
  const TempDir dir("exercises_tau");
  train_exercise_pico(dir);
  const CliRun r = run_documented(
      R"(build/cli/attograd sample --checkpoint runs/exercise/ckpt.safetensors --prompt "And God said" )"
      "--temperature 0 --temperature 0.0001 --temperature 1 --temperature 5 --max-new-tokens 200",
      dir);
  BOOST_TEST_INFO(r.out);
  BOOST_REQUIRE(r.exit_code == 0);
  // Each sample is the text between its header and the next header (or the timing line).
  auto sample = [&](const std::string& header) {
    const std::string h = "=== prompt \"And God said\" | temperature " + header + " ===\n";
    const size_t start = r.out.find(h);
    BOOST_REQUIRE_MESSAGE(start != std::string::npos, "no sample headed " << h);
    const size_t from = start + h.size() + std::string("And God said").size();
    size_t end = r.out.find("\n=== prompt", from);
    if (end == std::string::npos) end = r.out.rfind('\n', r.out.find(" tokens in ", from));
    return r.out.substr(from, end - from);
  };
  auto distinct = [](const std::string& s) { return std::set<char>(s.begin(), s.end()).size(); };
  const std::string greedy = sample("0 (greedy)"), cold = sample("0.0001"), one = sample("1"),
                    hot = sample("5");
  BOOST_TEST_MESSAGE("distinct characters at 0, 1, 5: " << distinct(greedy) << ", " << distinct(one)
                                                        << ", " << distinct(hot));
  BOOST_TEST(greedy.size() >= 200);
  BOOST_TEST(cold == greedy);
  BOOST_TEST(distinct(greedy) <= 12);
  BOOST_TEST(distinct(one) > distinct(greedy));
  BOOST_TEST(distinct(hot) > distinct(one));
  BOOST_TEST(distinct(hot) >= 40);
  BOOST_TEST(distinct(hot) < 73u);  // most of the characters, not all
  // The answer's count, from the run it quotes (AVX3); other SIMD targets round differently.
  BOOST_TEST(contains(flat(doc()), "its 200 characters show 59 of the 73"));
  if (attograd::kernels::active_target() == "AVX3")
    BOOST_TEST(distinct(hot) == 59u);
  else
    BOOST_TEST_MESSAGE("SIMD target " << attograd::kernels::active_target()
                                      << ", not AVX3: the count of 59 is not asserted");
}
