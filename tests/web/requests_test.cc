// The page's request API (web/attograd_api.h: attograd_call, JSON in and out) called natively,
// as the page's module is called: each request's fields are read as strictly as a config file
// (issue 31, kind 11), the workbench's matrices are bounded (kind 12), and a refused request
// leaves the model as it was. The page's own tests (tests/web/api_test.js, in the WebAssembly
// build) check the numbers through JavaScript.
#define BOOST_TEST_MODULE requests
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>

#include "gpt/train/run.h"
#include "lecture/attention_by_hand.h"
#include "tests/markdown_table.h"
#include "web/attograd_api.h"

namespace {

using json = nlohmann::json;

// The reply to `request` (the request's text, so that a key can be given twice).
json call_text(const std::string& request) { return json::parse(attograd_call(request.c_str())); }
json call(const json& request) { return call_text(request.dump()); }

// The error of a refused request ("" when it was answered).
std::string error_of(const json& reply) {
  return reply.contains("error") ? reply["error"].get<std::string>() : "";
}

// A text for model_new: 40 characters a line, long enough for femto's block_size 8 in both
// splits.
std::string training_text() {
  std::string text;
  for (int i = 0; i < 20; ++i) text += "the quick brown fox jumps over the dog.\n";
  return text;
}

}  // namespace

// The lenient reads the issue found, each now refused with the request, the field and the value.
BOOST_AUTO_TEST_CASE(numbers_are_read_as_strictly_as_a_config_file) {
  const std::pair<std::string, std::string> cases[] = {
      // 1e300 became INT64_MIN (an undefined float-to-integer cast), 512.9 built 512 rows.
      {R"({"cmd": "positions", "T": 1e300})",
       "request 'positions': T is 1e+300, expected an integer in [1, 512]"},
      {R"({"cmd": "positions", "T": 512.9})",
       "request 'positions': T is 512.9, expected an integer in [1, 512]"},
      {R"({"cmd": "positions", "T": null})",
       "request 'positions': T is null, expected an integer in [1, 512]"},
      {R"({"cmd": "positions", "T": "8"})",
       "request 'positions': T is \"8\", expected an integer in [1, 512]"},
      // 2.99 ran 2 steps (checked before the model is looked for).
      {R"({"cmd": "train", "steps": 2.99})",
       "request 'train': steps is 2.99, expected an integer in [1, 100000]"},
      // A repeated cmd ran the last one.
      {R"({"cmd": "ops", "cmd": "info"})",
       "the request has the key 'cmd' twice (a JSON parser keeps only one of them"},
      {R"({"cmd": "sample", "prompt": "a", "seed": -5})",
       "request 'sample': seed is -5, expected an integer in [0, 18446744073709551615]"},
      {R"({"cmd": "sample", "prompt": "a", "top_p": 0})",
       "request 'sample': top_p is 0, expected a finite number in (0, 1]"},
      {R"({"cmd": "gradcheck", "op": "relu", "seed": 1.5})",
       "request 'gradcheck': seed is 1.5, expected an integer in [0, 18446744073709551615]"},
      {R"({"cmd": "order", "words": ["dog", 7]})",
       "request 'order': words is [\"dog\",7], expected an array of 1 to 16 strings"},
      {R"({"cmd": "positions", "T": 4, "n_embed": 8})",
       "request 'positions' has no field 'n_embed' (did you mean 'n_embd'?); its fields are cmd, "
       "T and n_embd"},
      {R"({"cmd": "infoo"})", "unknown request 'infoo' (did you mean 'info'?)"},
      {R"([{"cmd": "info"}])", "a request is a JSON object whose \"cmd\" names a command"},
      {R"({"cmd": "info")", "the request is not valid JSON"},
  };
  // Names and paths are printed by the messages that refuse them: a NUL cut the message (and a
  // path) short, a C1 control was printed raw, and a 50 MB name came back whole.
  const std::string long_op = R"({"cmd": "gradcheck", "op": ")" + std::string(5000, 'x') + "\"}";
  const std::pair<std::string, std::string> names[] = {
      {R"({"cmd": "gradcheck", "op": "x\u0085y\u0000z"})",
       R"(request 'gradcheck': op is "x\u0085y\u0000z", expected a name of at most 256 bytes )"
       "without control characters"},
      {R"({"cmd": "attention", "Q": "1", "K": "1", "V": "1", "softmax_by": "r\u0000"})",
       R"(request 'attention': softmax_by is "r\u0000", expected a name)"},
      {R"({"cmd": "load", "path": "/tmp/a.safetensors\u0000junk"})",
       R"(request 'load': path is "/tmp/a.safetensors\u0000junk", expected a name of at most )"
       "4096 bytes"},
      {R"({"cmd": "order", "words": ["dog", "x\u0085"]})", R"(words is "x\u0085", expected)"},
      {long_op, "request 'gradcheck': op is \"" + std::string(56, 'x') + "..., expected"},
      {R"({"cmd": "info", "k\u0085)" + std::string(300, 'k') + R"(": 1})",
       R"(request 'info' has no field 'k\u0085kkkkkkkkkkk)"},
  };
  for (const auto& [request, message] : names) {
    BOOST_TEST_CONTEXT(request.substr(0, 100)) {
      const std::string error = error_of(call_text(request));
      BOOST_TEST(error.find(message) != std::string::npos, error);
      BOOST_TEST(error.size() < 400u);
    }
  }
  for (const auto& [request, message] : cases) {
    BOOST_TEST_CONTEXT(request) {
      const std::string error = error_of(call_text(request));
      BOOST_TEST(error.find(message) != std::string::npos, error);
    }
  }
  // The same field read strictly is read exactly: T 3, n_embd 4 is sin/cos of position 0 and 1.
  const json table = call({{"cmd", "positions"}, {"T", 3}, {"n_embd", 4}})["ok"]["table"];
  BOOST_TEST(table.size() == 3u);
  BOOST_TEST(table[0].dump() == "[0.0,1.0,0.0,1.0]");
  BOOST_TEST(std::abs(table[1][0].get<double>() - std::sin(1.0)) < 1e-15);
}

// model_new reads the model's settings and the training options through --config's tables: an
// unknown key was ignored, a fractional n_layer truncated, a negative seed wrapped. A refused
// request changes nothing: the model built before trains on.
BOOST_AUTO_TEST_CASE(model_new_reads_the_config_tables_and_a_refusal_keeps_the_model) {
  const std::string text = training_text();
  const json made =
      call({{"cmd", "model_new"}, {"text", text}, {"max_steps", 10}, {"seed", 3}, {"beta2", 0.99}});
  BOOST_REQUIRE_MESSAGE(made.contains("ok"), made.dump());
  BOOST_TEST(made["ok"]["options"]["beta2"].get<double>() == 0.99);
  BOOST_TEST(made["ok"]["options"]["seed"].get<uint64_t>() == 3u);
  BOOST_TEST(call({{"cmd", "train"}, {"steps", 2}})["ok"]["step"].get<int64_t>() == 2);

  const std::pair<json, std::string> refused[] = {
      {{{"n_layers", 2}},
       "request 'model_new' has no field 'n_layers' (did you mean 'n_layer'?); its fields are "
       "cmd, text_file, text, kind, preset, block_size, n_layer"},
      {{{"n_layer", 2.5}},
       "request 'model_new': n_layer (--n-layer) is 2.5, expected an integer in [1, 1024]"},
      {{{"seed", -5}},
       "request 'model_new': seed (--seed) is -5, expected an integer in [0, "
       "18446744073709551615]"},
      {{{"learning_rate", "1e-3"}},
       "request 'model_new': learning_rate (--lr) is \"1e-3\", expected a finite number > 0"},
      {{{"vocab_size", 70}}, "request 'model_new' has no field 'vocab_size'"},
      {{{"text_file", "/nonexistent"}}, "has both 'text' and 'text_file'"},
  };
  for (const auto& [extra, message] : refused) {
    json request = {{"cmd", "model_new"}, {"text", text}};
    request.update(extra);
    BOOST_TEST_CONTEXT(request.dump().substr(0, 80)) {
      const std::string error = error_of(call(request));
      BOOST_TEST(error.find(message) != std::string::npos, error);
    }
  }
  // A setting the model's kind never reads is refused as `train --model bigram` refuses it, but
  // named by the request's key (the page has no flags); a bigram or average model has one head,
  // so the preset's 3 need not divide its n_embd.
  const std::string unused =
      error_of(call({{"cmd", "model_new"}, {"text", text}, {"kind", "bigram"}, {"n_layer", 4}}));
  BOOST_TEST(unused.find("request 'model_new': n_layer does not apply to --model bigram") !=
                 std::string::npos,
             unused);
  BOOST_TEST(
      unused.find("remove n_layer from the request, or set kind to 'gpt'") != std::string::npos,
      unused);
  BOOST_TEST(unused.find("--n-layer") == std::string::npos, unused);
  // The model of the first request, 2 steps trained, goes on.
  BOOST_TEST(call({{"cmd", "train"}, {"steps", 1}})["ok"]["step"].get<int64_t>() == 3);
  const json average = call({{"cmd", "model_new"},
                             {"text", text},
                             {"kind", "average"},
                             {"preset", "pico"},
                             {"n_embd", 4}});
  BOOST_TEST(average.contains("ok"), average.dump().substr(0, 300));
  // Every field `attograd train`'s config holds is read, with its name: an enum by its name.
  const json bf16 =
      call({{"cmd", "model_new"}, {"text", text}, {"mixed_precision", "bf16"}, {"n_layer", 2}});
  BOOST_REQUIRE_MESSAGE(bf16.contains("ok"), bf16.dump());
  BOOST_TEST(bf16["ok"]["options"]["mixed_precision"].get<std::string>() == "bf16");
  BOOST_TEST(bf16["ok"]["config"]["n_layer"].get<int64_t>() == 2);
}

// The workbench's matrices: at most lecture::kMaxMatrixSide (64) rows and numbers a row, which
// info gives the page; 2,000 rows made 570 MB of tables and a 100 MB reply (kind 12).
// The page sets a model up with the library's own call (gpt/train/prepare.h), as `attograd
// train` does: on the same text the same config, the same splits and the same baselines, to the
// bit, and too short a text refused with train's message.
BOOST_AUTO_TEST_CASE(model_new_sets_up_as_attograd_train_does) {
  const std::string text = training_text();
  const json made = call({{"cmd", "model_new"}, {"text", text}, {"preset", "femto"}});
  BOOST_REQUIRE_MESSAGE(made.contains("ok"), made.dump());
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("attograd_requests_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "text.txt", std::ios::binary) << text;
  attograd::gpt::RunRequest rq;
  rq.corpus = (dir / "text.txt").string();
  rq.out_dir = (dir / "run").string();
  rq.config.preset = "femto";
  rq.threads = 1;
  std::ostringstream log;
  const auto run = attograd::gpt::start(rq, attograd::gpt::Communicator::world(), log);
  const json& ok = made["ok"];
  BOOST_TEST(ok["config"]["vocab_size"].get<int64_t>() == run->model().config().vocab_size);
  BOOST_TEST(ok["config"]["n_embd"].get<int64_t>() == run->model().config().n_embd);
  BOOST_TEST(ok["train_tokens"].get<int64_t>() == run->data().size(attograd::gpt::Split::train));
  BOOST_TEST(ok["val_tokens"].get<int64_t>() == run->data().size(attograd::gpt::Split::val));
  BOOST_TEST(ok["unigram_loss"].get<double>() == run->baselines().unigram);
  BOOST_TEST(ok["bigram_loss"].get<double>() == run->baselines().bigram);
  std::filesystem::remove_all(dir);
  // 12 characters: a val split of 2, no window of femto's block_size 8.
  BOOST_TEST(error_of(call({{"cmd", "model_new"}, {"text", "abcdefghijkl"}})) ==
             "the corpus is too short: its val split has 2 tokens, but a window of block_size "
             "8 needs 9 (the val split is the last 10%); use a longer corpus or a smaller "
             "block_size");
}

BOOST_AUTO_TEST_CASE(the_workbench_takes_at_most_64_rows_and_columns) {
  BOOST_TEST(call({{"cmd", "info"}})["ok"]["workbench_max"].get<size_t>() ==
             attograd::lecture::kMaxMatrixSide);
  std::string column = "1";
  for (int t = 1; t < 64; ++t) column += ";" + std::to_string(t % 7);
  const json ok = call({{"cmd", "attention"}, {"Q", column}, {"K", column}, {"V", column}});
  BOOST_REQUIRE_MESSAGE(ok.contains("ok"), ok.dump().substr(0, 200));
  BOOST_TEST(ok["ok"]["T"].get<int64_t>() == 64);
  const std::string error =
      error_of(call({{"cmd", "attention"}, {"Q", column + ";1"}, {"K", column}, {"V", column}}));
  BOOST_TEST(error ==
             "Q has 65 rows: at most 64 are read (T <= 64), so that every T x T table of the "
             "steps stays readable; remove rows");
  std::string wide = "1";
  for (int c = 1; c < 65; ++c) wide += ",1";
  BOOST_TEST(error_of(call({{"cmd", "attention"}, {"Q", wide}, {"K", wide}, {"V", "1"}})) ==
             "Q: row 1 has 65 numbers: at most 64 are read (d_k and d_v <= 64); remove columns");
}

// The workbench's heads: split -> attend -> concat. Each head's steps are those of a one-head
// request on its own columns (scaled by its own sqrt(d_k / h)), and Z is their outputs side by
// side; heads that do not split d_k and d_v evenly are refused with the fix.
BOOST_AUTO_TEST_CASE(the_workbench_heads_are_one_head_requests_on_their_columns) {
  const json two = call({{"cmd", "attention"},
                         {"Q", "1, 0; 0, 1; 1, 1"},
                         {"K", "1, 0; 0, 1; 1, 1"},
                         {"V", "1, 2; 3, 4; 5, 6"},
                         {"heads", 2}});
  BOOST_REQUIRE_MESSAGE(two.contains("ok"), two.dump().substr(0, 200));
  const json& heads = two["ok"]["heads"];
  BOOST_REQUIRE(heads.size() == 2u);
  const char* columns[2][3] = {{"1; 0; 1", "1; 0; 1", "1; 3; 5"},
                               {"0; 1; 1", "0; 1; 1", "2; 4; 6"}};
  for (size_t h = 0; h < 2; ++h) {
    const json one = call(
        {{"cmd", "attention"}, {"Q", columns[h][0]}, {"K", columns[h][1]}, {"V", columns[h][2]}});
    BOOST_REQUIRE(one.contains("ok"));
    BOOST_TEST(heads[h]["weights"] == one["ok"]["weights"]);
    BOOST_TEST(heads[h]["out"] == one["ok"]["out"]);
    for (size_t t = 0; t < 3; ++t)
      BOOST_TEST(two["ok"]["out"][t][h].get<double>() == one["ok"]["out"][t][0].get<double>());
  }
  // Head 0's last query sees keys 1, 0, 1 (scores 1, 0, 1 over sqrt(1)): Z[2, 0] by hand.
  const double e = std::exp(1.0), z = (1 * e + 3 * 1 + 5 * e) / (2 * e + 1);
  BOOST_TEST(two["ok"]["out"][2][0].get<double>() == z, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(error_of(call({{"cmd", "attention"},
                            {"Q", "1, 2, 3"},
                            {"K", "1, 2, 3"},
                            {"V", "1, 2"},
                            {"heads", 2}})) ==
             "heads is 2, but d_k = 3 and d_v = 2 do not both split into 2 equal parts: give Q, K "
             "and V a multiple of 2 columns, or use fewer heads");
}

// attograd_api_native reads one request a line, each line bounded: a stream with no line break
// grew one string until the machine ran out of memory. A NUL byte in a line is refused rather
// than the text after it dropped.
BOOST_AUTO_TEST_CASE(the_native_program_bounds_its_request_lines) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("requests_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto run = [&](const std::string& input_redirect) {
    const std::string command = std::string(ATTOGRAD_API_NATIVE) + " " + input_redirect + " > " +
                                (dir / "out").string() + " 2> " + (dir / "err").string();
    const int status = std::system(command.c_str());
    std::ostringstream out, err;
    out << std::ifstream(dir / "out").rdbuf();
    err << std::ifstream(dir / "err").rdbuf();
    return std::tuple(WIFEXITED(status) ? WEXITSTATUS(status) : -1, out.str(), err.str());
  };
  const auto [zero_code, zero_out, zero_err] = run("< /dev/zero");
  BOOST_TEST(zero_code == 1);
  BOOST_TEST(zero_out.empty());
  BOOST_TEST(zero_err ==
             "attograd_api_native: a request line is longer than 536870912 bytes (twice the "
             "largest corpus, 256 MiB); send one JSON request a line\n");
  {
    std::ofstream in(dir / "in", std::ios::binary);
    in << "{\"cmd\": \"positions\", \"T\": 1, \"n_embd\": 2}\n";
    in << std::string("{\"cmd\": \"info\"}\0{", 17) << "\n";
    in << "{\"cmd\": \"positions\", \"T\": 1, \"n_embd\": 2}";  // no final line break
  }
  const auto [code, out, err] = run("< " + (dir / "in").string());
  BOOST_TEST(code == 0);
  const std::string row = R"({"ok":{"T":1,"n_embd":2,"table":[[0.0,1.0]]}})";
  BOOST_TEST(out ==
             row + "\n" +
                 R"({"error":"the request holds a NUL byte: send JSON text, one request a line"})" +
                 "\n" + row + "\n");
  std::filesystem::remove_all(dir);
}

// docs/errors.md's "The page's requests": each row's request is refused with its message.
BOOST_AUTO_TEST_CASE(the_refusals_docs_errors_md_lists) {
  const auto rows = attograd::testing::section_table(ATTOGRAD_ERRORS_DOC, "## The page's requests",
                                                     {"bad input", "request", "message"});
  BOOST_TEST(rows.size() >= 9u);
  for (const attograd::testing::TableRow& row : rows) {
    BOOST_TEST_CONTEXT("docs/errors.md:" << row.line << ": " << row.cells[0]) {
      const auto request = attograd::testing::markdown_code_span(row.cells[1]);
      const auto message = attograd::testing::markdown_code_span(row.cells[2]);
      BOOST_TEST_REQUIRE((request && message && !message->empty()));
      const std::string error = error_of(call_text(*request));
      BOOST_TEST(error.find(*message) != std::string::npos, error);
    }
  }
}
