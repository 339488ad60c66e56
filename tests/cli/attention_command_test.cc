// `attograd attention` through the real binary: the CSV files hold the prompt's tokens and the
// weights of the model's own forward (compared with GPT::forward in this process), the heatmaps
// are drawn per head, and bad input is a one-line error.
#define BOOST_TEST_MODULE attention_command
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "gpt/model/checkpoint.h"
#include "gpt/text/char_tokenizer.h"
#include "tests/cli/cli_run.h"
#include "tests/gpt/model/hf_fixture.h"
#include "tests/test_util.h"

using namespace attograd;
using namespace attograd::gpt;
using attograd::testing::contains;
using attograd::testing::randomize_parameters;
using attograd::testing::read_file;
using attograd::testing::run_cli;
using attograd::testing::TempDir;
using attograd::testing::write_small_hf_gpt2;

namespace {

// A CSV file as rows of fields; a quoted field may hold commas and doubled quotes (RFC 4180).
std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  BOOST_REQUIRE_MESSAGE(in, "cannot open " + path);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields(1);
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"')
        fields.back() += '"', ++i;
      else if (c == '"')
        quoted = !quoted;
      else if (c == ',' && !quoted)
        fields.emplace_back();
      else
        fields.back() += c;
    }
    rows.push_back(fields);
  }
  return rows;
}

// The CSV label of each token: its position, a colon, the token as printable text ("3: ").
std::vector<std::string> positioned(const std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  for (size_t i = 0; i < tokens.size(); ++i) out.push_back(std::to_string(i) + ":" + tokens[i]);
  return out;
}

// Checks that every CSV of `dir` for the model's layers and heads holds the weights `model`
// records for `ids`: the header is the query\key cell and the tokens' labels (position:token),
// each row the query's label and its weights (exactly 0 after the query, summing to 1).
void expect_csv_matches_forward(const std::string& dir, const GPT& model,
                                const std::vector<int64_t>& ids,
                                const std::vector<std::string>& tokens) {
  const int64_t T = static_cast<int64_t>(ids.size());
  const std::vector<std::string> labels = positioned(tokens);
  std::vector<Tensor> weights;
  {
    NoGradGuard no_grad;
    model.forward(Tensor::from_ids(ids, {1, T}), Tensor(), nullptr, &weights);
  }
  for (int64_t l = 0; l < model.config().n_layer; ++l)
    for (int64_t h = 0; h < model.config().n_head; ++h) {
      const std::string path =
          dir + "/layer" + std::to_string(l) + "_head" + std::to_string(h) + ".csv";
      BOOST_TEST_INFO(path);
      const auto rows = read_csv(path);
      BOOST_REQUIRE(rows.size() == static_cast<size_t>(T + 1));
      std::vector<std::string> header{"query\\key"};
      header.insert(header.end(), labels.begin(), labels.end());
      BOOST_TEST(rows[0] == header, boost::test_tools::per_element());
      for (int64_t t = 0; t < T; ++t) {
        BOOST_REQUIRE(rows[t + 1].size() == static_cast<size_t>(T + 1));
        BOOST_TEST(rows[t + 1][0] == labels[t]);
        double row_sum = 0;
        for (int64_t j = 0; j < T; ++j) {
          const double v = std::stod(rows[t + 1][j + 1]);
          row_sum += v;
          if (j > t) BOOST_TEST(rows[t + 1][j + 1] == "0");
          BOOST_TEST(std::abs(v - weights[l].at({0, h, t, j})) <= 1e-8);
        }
        BOOST_TEST(std::abs(row_sum - 1) <= 1e-6);
      }
    }
}

bool gnuplot_installed() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

// A pico whose char vocabulary is the characters of `text`, its weights set by `init` (GPT-2's
// init when empty), saved as dir/ckpt.safetensors.
struct CharPico {
  CharTokenizer tok;
  std::unique_ptr<GPT> model;
  std::string ckpt;
  CharPico(const TempDir& dir, const std::string& text, const std::function<void(GPT&)>& init = {})
      : tok(CharTokenizer::from_text(text)), ckpt(dir / "ckpt.safetensors") {
    GPTConfig c = preset("pico");
    c.vocab_size = tok.vocab_size();
    model = std::make_unique<GPT>(c, 5);
    if (init) init(*model);
    save_checkpoint(ckpt, *model, tok.kind(), tok.serialize());
  }
};

}  // namespace

// With c_attn's weights and biases zero, q = k = 0: every score is equal, and attention is the
// causal average of chapter 3 (row t is 1/(t+1) on keys 0..t). The CSV must say exactly that.
BOOST_AUTO_TEST_CASE(equal_scores_give_the_causal_average) {
  const TempDir dir("attention_uniform");
  const CharPico pico(dir, "ab, d\"", [](GPT& model) {
    for (const auto& block : model.h)
      for (const Tensor* p : {&block->attn->c_attn->weight, &block->attn->c_attn->bias})
        std::fill(p->data<float>(), p->data<float>() + p->numel(), 0.0f);
  });
  const std::string& ckpt = pico.ckpt;
  const std::string out = dir / "maps";
  const auto r = run_cli("attention --checkpoint " + ckpt + " --prompt 'ab, d\"' --out " + out);
  BOOST_TEST_INFO(r.out);
  BOOST_REQUIRE(r.exit_code == 0);
  BOOST_TEST(contains(r.out, ckpt + ": 6 tokens: \"a\" \"b\" \",\" \" \" \"d\" \"\\\"\"\n"));
  // Queries 1..5 put 1/(t+1) on themselves, on the previous token and on the first.
  const double mean = (1.0 / 2 + 1.0 / 3 + 1.0 / 4 + 1.0 / 5 + 1.0 / 6) / 5;  // 0.290
  char line[80];
  std::snprintf(line, sizeof line, "2      1     %-7.3f %-9.3f %.3f\n", mean, mean, mean);
  BOOST_TEST(contains(r.out, line));
  BOOST_TEST(contains(r.out, "wrote " + out + "/layer<L>_head<H>.csv for 9 head(s)"));

  const auto rows = read_csv(out + "/layer2_head1.csv");
  BOOST_REQUIRE(rows.size() == 7u);
  // Labels are each token's position and the token as printable text: a quote escaped as \"
  // (then CSV-quoted with the comma and the trailing space).
  const std::vector<std::string> header{"query\\key", "0:a", "1:b", "2:,", "3: ", "4:d", "5:\\\""};
  BOOST_TEST(rows[0] == header, boost::test_tools::per_element());
  const std::vector<std::string> row2{"2:,", "0.333333343", "0.333333343", "0.333333343", "0", "0",
                                      "0"};
  BOOST_TEST(rows[3] == row2, boost::test_tools::per_element());  // f32's nearest to 1/3
  const std::vector<std::string> row1{"1:b", "0.5", "0.5", "0", "0", "0", "0"};
  BOOST_TEST(rows[2] == row1, boost::test_tools::per_element());
  expect_csv_matches_forward(out, *pico.model, pico.tok.encode("ab, d\""),
                             {"a", "b", ",", " ", "d", "\\\""});

  if (!gnuplot_installed()) {
    BOOST_TEST(contains(r.out, "apt-get install gnuplot-nox"));
    BOOST_TEST_MESSAGE("skipped the heatmap checks: gnuplot is not installed");
    return;
  }
  for (int l = 0; l < 3; ++l)
    for (int h = 0; h < 3; ++h) {
      const std::string stem = out + "/layer" + std::to_string(l) + "_head" + std::to_string(h);
      BOOST_TEST(std::filesystem::file_size(stem + ".png") > 0u);
      const std::string svg = read_file(stem + ".svg");
      BOOST_TEST(contains(svg, "layer " + std::to_string(l) + ", head " + std::to_string(h)));
      BOOST_TEST(contains(svg, "0.33"));  // the cell values are printed on a small map
    }
  const std::string grid = read_file(out + "/all_heads.svg");
  BOOST_TEST(contains(grid, "layer 2, head 2"));
  BOOST_TEST(contains(grid, "\u2423"));  // the space token, drawn visibly
}

// A model far from uniform: the CSV is what GPT::forward records, and --layer/--head select.
BOOST_AUTO_TEST_CASE(csv_holds_the_forward_weights_and_layer_head_select) {
  const TempDir dir("attention_random");
  const CharPico pico(dir, "the cat sat", [](GPT& model) {
    Generator gen(7);
    randomize_parameters(model.parameters(), gen, 0.7);
  });
  const std::string& ckpt = pico.ckpt;
  const std::string out = dir / "all";
  const auto r = run_cli("attention --checkpoint " + ckpt + " --prompt 'the cat' --out " + out);
  BOOST_TEST_INFO(r.out);
  BOOST_REQUIRE(r.exit_code == 0);
  expect_csv_matches_forward(out, *pico.model, pico.tok.encode("the cat"),
                             {"t", "h", "e", " ", "c", "a", "t"});

  const std::string one = dir / "one";
  const auto s = run_cli("attention --checkpoint " + ckpt +
                         " --prompt 'the cat' --layer 1 --head 2 --out " + one);
  BOOST_REQUIRE(s.exit_code == 0);
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(one))
    files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  const std::vector<std::string> expected =
      gnuplot_installed()
          ? std::vector<std::string>{"layer1_head2.csv", "layer1_head2.png", "layer1_head2.svg"}
          : std::vector<std::string>{"layer1_head2.csv"};
  BOOST_TEST(files == expected, boost::test_tools::per_element());
  BOOST_TEST(read_file(one + "/layer1_head2.csv") == read_file(out + "/layer1_head2.csv"));
}

// A prompt that repeats a token ("a" twice) and holds a bare space twice: the tokens alone would
// name two columns "a" and two " ", so every label carries its position, and a space is quoted so
// that no reader trims it. A program can then read the file by column name.
BOOST_AUTO_TEST_CASE(labels_are_unique_with_repeated_tokens_and_spaces) {
  const TempDir dir("attention_labels");
  const CharPico pico(dir, "a d");
  const std::string out = dir / "maps";
  const auto r = run_cli("attention --checkpoint " + pico.ckpt + " --prompt 'a a d' --out " + out +
                         " --layer 0 --head 0");
  BOOST_TEST_INFO(r.out);
  BOOST_REQUIRE(r.exit_code == 0);
  const std::string csv = read_file(out + "/layer0_head0.csv");
  BOOST_TEST(csv.starts_with("query\\key,0:a,\"1: \",2:a,\"3: \",4:d\n"));
  const auto rows = read_csv(out + "/layer0_head0.csv");
  BOOST_REQUIRE(rows.size() == 6u);
  const std::vector<std::string> header{"query\\key", "0:a", "1: ", "2:a", "3: ", "4:d"};
  BOOST_TEST(rows[0] == header, boost::test_tools::per_element());
  BOOST_TEST(std::set<std::string>(rows[0].begin(), rows[0].end()).size() == rows[0].size());
  std::set<std::string> queries;
  for (size_t t = 1; t < rows.size(); ++t) {
    BOOST_TEST(rows[t][0] == header[t]);  // each row is labelled as its column
    queries.insert(rows[t][0]);
  }
  BOOST_TEST(queries.size() == 5u);
}

BOOST_AUTO_TEST_CASE(bad_inputs_are_one_line_errors) {
  const TempDir dir("attention_errors");
  const std::string ckpt = CharPico(dir, "abcdefghij").ckpt;
  const std::string base = "attention --checkpoint " + ckpt + " --out " + (dir / "out");
  const std::vector<std::pair<std::string, std::string>> cases{
      {" --prompt abc --layer 3",
       "attograd: error: --layer 3 is out of range: the model has 3 layers, numbered 0 to 2\n"},
      {" --prompt abc --layer -1", "--layer: must be an integer in [0, 1023], got -1"},
      {" --prompt abc --layer 010",
       "--layer: 010 has leading zeros, which would be read as octal; write 10"},
      {" --prompt abc --head 3",
       "attograd: error: --head 3 is out of range: the model has 3 heads, numbered 0 to 2\n"},
      {" --prompt ''", "--prompt: is empty: give a value, or leave the option out for its default"},
      {" --prompt abcdefghi",
       "attograd: error: --prompt encodes to 9 tokens, more than the model's block_size 8: shorten "
       "it (attention spans "
       "one context window)\n"},
      {" --prompt abz", "character 'z' (U+007A) at position 2"},
      {" --prompt abc --hf-gpt2 " + ckpt, "give exactly one of --checkpoint"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = run_cli(base + args);
    BOOST_TEST_INFO(args << ": " << r.out);
    BOOST_TEST(r.exit_code == 2);
    BOOST_TEST(contains(r.out, message));
    BOOST_TEST(!std::filesystem::exists(dir / "out"));  // nothing is written before the checks
  }
  const std::string file = dir.file("a_file", "");
  const auto not_dir = run_cli("attention --checkpoint " + ckpt + " --prompt abc --out " + file);
  BOOST_TEST(not_dir.exit_code == 2);
  BOOST_TEST(not_dir.out == "attograd: error: --out " + file +
                                ": cannot create the directory (Not a directory); "
                                "choose another --out\n");
  const auto missing = run_cli("attention --checkpoint " + ckpt);
  BOOST_TEST(missing.exit_code == 2);
  BOOST_TEST(contains(missing.out, "--prompt is required"));
  const auto no_file =
      run_cli("attention --checkpoint " + (dir / "none.safetensors") + " --prompt a");
  BOOST_TEST(no_file.exit_code == 2);
  BOOST_TEST(contains(no_file.out, "does not exist"));
}

// A Hugging Face GPT-2 file (random weights, GPT-2's 50257-token vocabulary): the prompt is
// encoded with GPT-2's BPE, its tokens label the CSV, and the weights are the model's.
BOOST_AUTO_TEST_CASE(works_on_a_hugging_face_gpt2_file) {
  const TempDir dir("attention_hf");
  const auto model = write_small_hf_gpt2(dir.path);
  const std::string path = dir / "model.safetensors";
  const std::string out = dir / "maps";
  const auto r =
      run_cli("attention --hf-gpt2 " + path + " --prompt 'Hello world, hi' --out " + out);
  BOOST_TEST_INFO(r.out);
  BOOST_REQUIRE(r.exit_code == 0);
  BOOST_TEST(contains(r.out, ": 4 tokens: \"Hello\" \" world\" \",\" \" hi\""));
  const std::vector<int64_t> ids{15496, 995, 11,
                                 23105};  // GPT-2's ids of Hello, ' world', ',', ' hi'
  expect_csv_matches_forward(out, *model, ids, {"Hello", " world", ",", " hi"});
}
