// docs/errors.md is the one list of what attograd says to each bad input: this test reads its
// tables when it starts and makes every row a test case of its own (suite = the section, case =
// the bad input, located at the row's line of the document), so the table cannot drift from the
// binary. Each case writes nothing but the row's own files, runs the real binary (ATTOGRAD_CLI)
// in the fixtures' temporary directory, and checks the exit code and that the output holds the
// message. The fixtures (a pico checkpoint trained for one step, hand-edited copies of it, a
// small Hugging Face GPT-2, odd corpora) are written once, before the first row runs; a
// placeholder without a fixture fails its row, never skips it.
//
// A section about a build without one of the optional parts ("## A build without downloads")
// holds what such a build says instead of working: its rows run only in a build without that
// part, and CTest runs the section as a test of its own (errors_doc_test.<section>), shown as
// skipped in a build with the part (tests/cli/CMakeLists.txt).
//
// A document case checks the document itself: every table is a known kind, every row well
// formed and its command a real subcommand, the fixtures table and the fixtures written here
// the same set, and no fewer rows than kMinRows (a parser that found nothing would pass).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "gpt/io/download.h"
#include "gpt/model/checkpoint.h"
#include "nn/io/safetensors.h"
#include "tests/cli/cli_run.h"
#include "tests/gpt/model/hf_fixture.h"
#include "tests/markdown_table.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;
using attograd::testing::CliRun;
using attograd::testing::contains;
using attograd::testing::run_cli;
using attograd::testing::TempDir;

namespace {

const std::string kDoc = ATTOGRAD_ERRORS_DOC;
// The rows docs/errors.md holds today: removing one is a decision, made here too.
constexpr size_t kMinRows = 88;
// Longer than any row needs (the slowest trains pico for a step or two): a row that wrongly
// starts a long run fails instead of stalling the suite.
constexpr int kTimeoutSeconds = 60;

// ---------------------------------------------------------------------------------------------
// The document

/// One row of a "| bad input | command | message | exit code |" table.
struct Row {
  std::string section;    // the "## " heading above the table
  std::string bad_input;  // plain text
  std::string command;    // attograd's arguments, placeholders unsubstituted
  std::string message;    // an exact excerpt of the output, placeholders unsubstituted
  int exit_code = -1;
  size_t line = 0;  // 1-based line in the document
};

struct Doc {
  std::vector<Row> rows;
  std::map<std::string, size_t> fixtures;  // placeholder name ("pico", "text") -> its line
  std::vector<std::string> problems;       // what is malformed, "line N: ..."
};

const std::vector<std::string> kRowHeader = {"bad input", "command", "message", "exit code"};
const std::vector<std::string> kFixtureHeader = {"placeholder", "what the test writes"};
// Rows of library calls, not commands: tests/autograd/library_errors_doc_test.cc runs them.
const std::vector<std::string> kLibraryHeader = {"bad input", "call", "message"};
// Rows of the page's requests: tests/web/requests_test.cc sends them.
const std::vector<std::string> kRequestHeader = {"bad input", "request", "message"};
// {name} or {name:argument}; a brace list such as {femto,pico} is not a placeholder.
const std::regex kPlaceholder(R"(\{([a-z0-9_]+)(?::([^}]*))?\})");

Doc parse(const std::string& path) {
  Doc doc;
  std::ifstream in(path);
  if (!in) {
    doc.problems.push_back("cannot open " + path);
    return doc;
  }
  std::string section, line;
  std::vector<std::string> header;  // of the table being read; empty outside a table
  bool separator_next = false;
  for (size_t n = 1; std::getline(in, line); ++n) {
    const std::string where = "line " + std::to_string(n) + ": ";
    if (line.rfind("## ", 0) == 0) section = attograd::testing::trim_spaces(line.substr(3));
    if (line.empty() || line[0] != '|') {
      header.clear();
      continue;
    }
    if (header.empty()) {  // a new table
      header = attograd::testing::markdown_cells(line);
      separator_next = true;
      if (header != kRowHeader && header != kFixtureHeader && header != kLibraryHeader &&
          header != kRequestHeader)
        doc.problems.push_back(
            where +
            "a table whose header is neither | bad input | command | message | exit code |, "
            "| placeholder | what the test writes |, | bad input | call | message | nor | bad "
            "input | request | message |: its rows would not be tested");
      continue;
    }
    if (separator_next) {
      separator_next = false;
      continue;
    }
    const std::vector<std::string> c = attograd::testing::markdown_cells(line);
    if (c.size() != header.size()) {
      doc.problems.push_back(where + std::to_string(c.size()) + " cells, the header has " +
                             std::to_string(header.size()) + " (escape a | inside a cell as \\|)");
      continue;
    }
    if (header == kFixtureHeader) {
      const auto placeholder = attograd::testing::markdown_code_span(c[0]);
      std::smatch m;
      if (!placeholder || !std::regex_match(*placeholder, m, kPlaceholder))
        doc.problems.push_back(where + "the placeholder " + c[0] +
                               " is not `{name}` or `{name:…}`");
      else if (!doc.fixtures.emplace(m[1], n).second)
        doc.problems.push_back(where + "the placeholder {" + std::string(m[1]) +
                               "} is described twice");
      continue;
    }
    if (header != kRowHeader) continue;
    Row row{section, c[0], "", "", -1, n};
    const auto command = attograd::testing::markdown_code_span(c[1]),
               message = attograd::testing::markdown_code_span(c[2]);
    if (!command || !message || message->empty()) {
      doc.problems.push_back(
          where + "the command and the message must each be one code span, the message not empty");
      continue;
    }
    row.command = *command;
    row.message = *message;
    if (c[3].empty() || c[3].find_first_not_of("0123456789") != std::string::npos ||
        c[3].size() > 3) {
      doc.problems.push_back(where + "the exit code '" + c[3] + "' is not a number");
      continue;
    }
    row.exit_code = std::stoi(c[3]);
    doc.rows.push_back(row);
  }
  return doc;
}

const Doc& doc() {
  static const Doc d = parse(kDoc);
  return d;
}

// A test unit name from prose: lowercase letters and digits, runs of anything else as one '_'.
std::string slug(const std::string& text) {
  std::string out;
  for (unsigned char ch : text) {
    if (std::isalnum(ch) && ch < 0x80)
      out += static_cast<char>(std::tolower(ch));
    else if (!out.empty() && out.back() != '_')
      out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "row" : out;
}

// ---------------------------------------------------------------------------------------------
// The fixtures

// The file `from` with the one occurrence of `from_text` in its safetensors header replaced by
// `to_text`, written to `to`: edits the library's writer refuses to make (overlapping offsets,
// a deeply nested metadata value). The header length is rewritten; the data section is kept.
void copy_with_header_edit(const std::string& from, const std::string& to,
                           const std::string& from_text, const std::string& to_text) {
  std::ifstream in(from, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes.at(i))) << (8 * i);
  std::string header = bytes.substr(8, n);
  const size_t at = header.find(from_text);
  if (at == std::string::npos)
    throw std::runtime_error("fixture: '" + from_text + "' is not in the header of " + from);
  header.replace(at, from_text.size(), to_text);
  std::ofstream out(to, std::ios::binary);
  for (int i = 0; i < 8; ++i)
    out.put(static_cast<char>(static_cast<uint64_t>(header.size()) >> (8 * i)));
  out << header << bytes.substr(8 + n);
}

// The file `from` written to `to` through the library's reader and writer with some metadata
// values set and some tensors added or replaced: a hand edit that is still valid safetensors.
void copy_with(const std::string& from, const std::string& to,
               const std::map<std::string, std::string>& metadata,
               const std::vector<std::pair<std::string, attograd::Tensor>>& tensors) {
  namespace nn = attograd::nn;
  const nn::SafetensorsFile f = nn::SafetensorsFile::read(from);
  nn::SafetensorsWriter w;
  w.metadata = f.metadata();
  for (const auto& [key, value] : metadata) w.metadata[key] = value;
  for (const auto& [name, e] : f.entries())
    w.add(name, f.tensor(name, e.dtype == "F64" ? attograd::DType::f64 : attograd::DType::f32));
  for (const auto& [name, t] : tensors) w.add(name, t);
  w.write(to);
}

// `text` with its one occurrence of `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  if (at == std::string::npos)
    throw std::runtime_error("fixture: '" + from + "' is not in " + text);
  return text.replace(at, from.size(), to);
}

/// The files docs/errors.md's fixtures table describes, written into one temporary directory
/// (removed at exit), and the substitution of placeholders by them.
class Fixtures {
 public:
  /// Writes every fixture. Throws std::runtime_error if one cannot be made.
  Fixtures() : tmp_("errors_doc") {
    namespace nn = attograd::nn;
    files_["tmp"] = tmp_.path.string();
    std::string lf, crlf;
    for (int i = 0; i < 200; ++i) {
      lf += "to be or not to be, that is the question.\n";
      crlf += "to be or not to be, that is the question.\r\n";
    }
    const std::string corpus = files_["corpus"] = tmp_.file("corpus.txt", lf);
    files_["crlf"] = tmp_.file("crlf.txt", crlf);
    files_["latin1"] = tmp_.file("latin1.txt", "caf\xe9 au lait\n");
    files_["huge"] = tmp_.file("huge.txt", "");
    fs::resize_file(files_["huge"], 300'000'000);  // sparse: no disk space

    // The checkpoint every pico row shares, written by the real binary.
    const std::string run = files_["pico_run"] = tmp_ / "pico_run";
    const CliRun trained = run_cli("train --preset pico --corpus " + corpus + " --out " + run +
                                   " --steps 1 --batch-size 2 --eval-iters 1");
    if (trained.exit_code != 0)
      throw std::runtime_error("fixture: training pico failed:\n" + trained.out);
    const std::string pico = files_["pico"] = run + "/ckpt.safetensors";
    const CliRun exported = run_cli("export --checkpoint " + pico + " --out " + (tmp_ / "pico_hf"));
    if (exported.exit_code != 0)
      throw std::runtime_error("fixture: exporting pico failed:\n" + exported.out);
    files_["pico_hf"] = tmp_ / "pico_hf/model.safetensors";
    // Models `attograd export` refuses: a bigram model and a GPT with rotary positions.
    for (const auto& [name, options] :
         {std::pair{"bigram", "--model bigram"}, std::pair{"pico_rope", "--pos-encoding rope"}}) {
      const CliRun r = run_cli("train --preset pico " + std::string(options) + " --corpus " +
                               corpus + " --out " + (tmp_ / (name + std::string("_run"))) +
                               " --steps 1 --batch-size 2 --eval-iters 1");
      if (r.exit_code != 0)
        throw std::runtime_error("fixture: training " + std::string(name) + " failed:\n" + r.out);
      files_[name] = tmp_ / (name + std::string("_run/ckpt.safetensors"));
    }
    const std::string truncated = files_["pico_truncated"] = tmp_ / "pico_truncated.safetensors";
    fs::copy_file(pico, truncated);
    fs::resize_file(truncated, fs::file_size(truncated) - 100);
    const nn::SafetensorsFile file = nn::SafetensorsFile::read(pico);
    const std::string config = file.metadata().at("config");
    const auto with_config = [&](const std::string& name, const std::string& from,
                                 const std::string& to) {
      copy_with(pico, files_[name] = tmp_ / (name + ".safetensors"),
                {{"config", replaced(config, from, to)}}, {});
    };
    with_config("pico_1000_layers", "\"n_layer\":3", "\"n_layer\":1000");
    with_config("pico_million_layers", "\"n_layer\":3", "\"n_layer\":1000000");
    with_config("pico_fractional_n_head", "\"n_head\":3", "\"n_head\":3.9");
    copy_with(pico, files_["pico_small_tokenizer"] = tmp_ / "pico_small_tokenizer.safetensors",
              {{"tokenizer", R"({"data":"abc","kind":"char"})"}}, {});
    fs::create_directories(tmp_.path / "pico_small_tokenizer_run");
    fs::copy_file(files_["pico_small_tokenizer"],
                  (files_["pico_small_tokenizer_run"] = tmp_ / "pico_small_tokenizer_run") +
                      "/ckpt.safetensors");
    fs::create_directories(tmp_.path / "pico_renamed_log_run");
    fs::copy_file(pico, (files_["pico_renamed_log_run"] = tmp_ / "pico_renamed_log_run") +
                            "/ckpt.safetensors");
    tmp_.file("pico_renamed_log_run/train_log.csv",
              "step,loss,LR,grad_norm,tokens_per_s\n1,2.8,0.01,,1000\n");
    copy_with(pico, files_["pico_stray_tensor"] = tmp_ / "pico_stray_tensor.safetensors", {},
              {{"h.0.mlp.c_gate.weight", attograd::Tensor::zeros({6, 24})}});
    copy_with(pico, files_["pico_wrong_shape"] = tmp_ / "pico_wrong_shape.safetensors", {},
              {{"h.0.mlp.c_fc.weight", attograd::Tensor::zeros({6, 12})}});
    // Non-finite values: the first of h.0.ln_1.weight NaN; the first of AdamW's m infinite.
    attograd::Tensor gain = file.tensor("h.0.ln_1.weight", attograd::DType::f32);
    gain.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
    copy_with(pico, files_["pico_nan"] = tmp_ / "pico_nan.safetensors", {},
              {{"h.0.ln_1.weight", gain}});
    attograd::Tensor m = file.tensor("optimizer.m", attograd::DType::f32);
    m.data<float>()[0] = std::numeric_limits<float>::infinity();
    fs::create_directories(tmp_.path / "pico_inf_moment_run");
    copy_with(pico,
              (files_["pico_inf_moment_run"] = tmp_ / "pico_inf_moment_run") + "/ckpt.safetensors",
              {}, {{"optimizer.m", m}});
    copy_with_header_edit(pico,
                          files_["pico_deep_metadata"] = tmp_ / "pico_deep_metadata.safetensors",
                          R"({"__metadata__":{)",
                          R"({"__metadata__":{"deep":)" + std::string(100'000, '[') +
                              std::string(100'000, ']') + ",");
    const auto offsets = [&](const std::string& name) {
      const nn::SafetensorsEntry& e = file.entries().at(name);
      return "\"" + name + "\":{\"data_offsets\":[" + std::to_string(e.begin) + "," +
             std::to_string(e.end) + "]";
    };
    copy_with_header_edit(pico, files_["pico_overlap"] = tmp_ / "pico_overlap.safetensors",
                          offsets("h.0.ln_2.weight"),
                          replaced(offsets("h.0.ln_1.weight"), "ln_1", "ln_2"));

    // A Hugging Face GPT-2, and copies of it beside other config.json files.
    fs::create_directories(tmp_.path / "hf");
    const auto model = attograd::testing::write_small_hf_gpt2(tmp_.path / "hf");
    const std::string hf = files_["hf"] = tmp_ / "hf/model.safetensors";
    const auto hf_copy = [&](const std::string& name,
                             const std::optional<std::string>& config_json) {
      fs::create_directories(tmp_.path / name);
      fs::copy_file(hf, files_[name] = tmp_ / (name + "/model.safetensors"));
      if (config_json) tmp_.file(name + "/config.json", *config_json);
    };
    hf_copy("hf_bad_json", R"({"n_head": 2,)");
    hf_copy("hf_wrong_config", R"({"n_head": 2, "n_layer": 12})");
    hf_copy("hf_no_config", std::nullopt);
    fs::create_directories(tmp_.path / "hf_untied");
    fs::copy_file(tmp_.path / "hf/config.json", tmp_.path / "hf_untied/config.json");
    copy_with(hf, files_["hf_untied"] = tmp_ / "hf_untied/model.safetensors", {},
              {{"lm_head.weight", attograd::neg(model->wte->weight.detach())}});
  }

  /// The directory every command runs in ({tmp}).
  const std::string& dir() const { return files_.at("tmp"); }

  /// Every placeholder name this class can substitute.
  std::set<std::string> names() const {
    std::set<std::string> out{"out", "text"};
    for (const auto& [name, path] : files_) out.insert(name);
    return out;
  }

  /// `text` with each placeholder replaced by its path. The row's own files, {out} (a path
  /// that does not exist) and {text:…} (written now), are named after the row's line, so the
  /// command and the message of a row get the same ones. Throws std::runtime_error for a
  /// placeholder without a fixture.
  std::string substitute(const std::string& text, const Row& row) const {
    std::string out;
    auto begin = text.cbegin();
    for (std::sregex_iterator it(text.begin(), text.end(), kPlaceholder), end; it != end; ++it) {
      const std::smatch& m = *it;
      out.append(begin, m[0].first);
      begin = m[0].second;
      const std::string name = m[1], own = "row" + std::to_string(row.line);
      if (name == "out") {
        out += tmp_ / (own + "_out");
      } else if (name == "text") {
        const std::string path =
            tmp_ / (own + "_" + std::to_string(std::hash<std::string>{}(m[2])) + ".txt");
        if (!fs::exists(path)) tmp_.file(fs::path(path).filename().string(), m[2]);
        out += path;
      } else if (files_.count(name) != 0 && !m[2].matched) {
        out += files_.at(name);
      } else {
        throw std::runtime_error("docs/errors.md line " + std::to_string(row.line) +
                                 ": the placeholder " + m.str() +
                                 " has no fixture; add it to the fixtures table and to Fixtures in "
                                 "tests/cli/errors_doc_test.cc");
      }
    }
    return out.append(begin, text.cend());
  }

 private:
  TempDir tmp_;
  std::map<std::string, std::string> files_;  // placeholder name -> path
};

// Written at the first use, then shared by every row.
const Fixtures& fixtures() {
  static const Fixtures f;
  return f;
}

// The subcommands `attograd --help` lists.
std::set<std::string> subcommands() {
  const CliRun help = run_cli("--help");
  std::set<std::string> out;
  std::istringstream lines(
      help.out.substr(std::min(help.out.size(), help.out.find("Subcommands:"))));
  std::string line;
  std::getline(lines, line);  // "Subcommands:"
  while (std::getline(lines, line) && line.rfind("  ", 0) == 0) {
    std::istringstream words(line);
    std::string name;
    words >> name;
    out.insert(name);
  }
  return out;
}

// The sections about a build without an optional part: title -> whether this build lacks it.
const std::map<std::string, bool> kWithoutPart = {
    {"A build without downloads", !attograd::gpt::can_download()},
};

void run_row(const Row& row) {
  if (const auto part = kWithoutPart.find(row.section); part != kWithoutPart.end())
    if (!attograd::testing::build_has(part->second, "no " + row.section.substr(16))) return;
  const Fixtures& f = fixtures();
  const std::string command = f.substitute(row.command, row),
                    message = f.substitute(row.message, row);
  const CliRun r = run_cli(
      command, true, "cd '" + f.dir() + "' && timeout " + std::to_string(kTimeoutSeconds) + " ");
  BOOST_TEST_CONTEXT("docs/errors.md line " << row.line << " (" << row.section << ": "
                                            << row.bad_input << ")\n$ attograd " << command << "\n"
                                            << r.out) {
    BOOST_TEST(r.exit_code == row.exit_code);
    BOOST_TEST(contains(r.out, message), "the output holds '" << message << "'");
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_document_is_well_formed_and_complete) {
  const Doc& d = doc();
  for (const std::string& problem : d.problems) BOOST_ERROR("docs/errors.md " << problem);
  BOOST_TEST(d.rows.size() >= kMinRows);
  for (const Row& row : d.rows)
    if (row.section.starts_with("A build without"))
      BOOST_TEST(kWithoutPart.count(row.section) == 1u,
                 "docs/errors.md line " << row.line << ": the section '" << row.section
                                        << "' is no part this test knows (kWithoutPart)");
  const std::set<std::string> known = subcommands();
  BOOST_TEST(known.count("train") == 1u);  // --help was read
  std::set<std::string> used, names;
  for (const Row& row : d.rows) {
    BOOST_TEST_CONTEXT("docs/errors.md line " << row.line << ": " << row.command) {
      BOOST_TEST(known.count(row.command.substr(0, row.command.find(' '))) == 1u,
                 "starts with a subcommand");
      BOOST_TEST(names.insert(row.section + "/" + slug(row.bad_input)).second,
                 "its bad input is listed once");
    }
    for (const std::string* s : {&row.command, &row.message})
      for (std::sregex_iterator it(s->begin(), s->end(), kPlaceholder), end; it != end; ++it)
        used.insert((*it)[1]);
  }
  // Each placeholder described is written, each written is described, each is used by a row.
  std::set<std::string> described;
  for (const auto& [name, line] : d.fixtures) described.insert(name);
  BOOST_TEST(described == fixtures().names(), boost::test_tools::per_element());
  for (const std::string& name : described)
    BOOST_TEST(used.count(name) == 1u, "{" << name << "} is used by a row");
}

// One test case per row: suite = section, case = bad input, located at the row's line.
bool init_unit_test() {
  namespace ut = boost::unit_test;
  ut::test_suite& master = ut::framework::master_test_suite();
  master.p_name.value = "errors_doc";
  std::map<std::string, ut::test_suite*> suites;
  std::set<std::string> taken;
  for (const Row& row : doc().rows) {
    ut::test_suite*& suite = suites[row.section];
    if (suite == nullptr) {
      suite = BOOST_TEST_SUITE(slug(row.section));
      master.add(suite);
    }
    std::string name = slug(row.bad_input);
    if (!taken.insert(row.section + "/" + name).second)
      name += "_line_" + std::to_string(row.line);  // reported above
    suite->add(ut::make_test_case([row] { run_row(row); }, name, kDoc, row.line));
  }
  return true;
}

int main(int argc, char* argv[]) {
  return boost::unit_test::unit_test_main(&init_unit_test, argc, argv);
}
