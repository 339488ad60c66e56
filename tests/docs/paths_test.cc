// Every repository path named in the docs and in the code's comments exists: a renamed or
// deleted file otherwise leaves a reader following a dead pointer to a file that is gone.
//
// A path is a word that starts with one of the tree's top-level folders (autograd/, nn/, gpt/,
// examples/, tests/, docs/, bench/, scripts/, .ci/) and is not itself inside another path
// (build/cli/attograd is a build product, not a source path). Brace lists expand
// (gpt/model/checkpoint.{h,cc} names two files), * matches within a name (tests/kernels/*_test.cc),
// and a module without its extension names its files (gpt/train/trainer, gpt/train/trainer.*).
#define BOOST_TEST_MODULE docs_paths
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/files.h"

using attograd::testing::read_file;

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = ATTOGRAD_SOURCE_DIR;

// The files whose text is read: the docs, the README and every source, script and CMake file
// of the tree (not build directories, not test data).
std::vector<fs::path> files_to_read() {
  std::vector<fs::path> out{kRoot / "README.md", kRoot / "CMakeLists.txt"};
  const std::set<std::string> exts{".md", ".h", ".cc", ".sh", ".py", ".txt", ".cmake"};
  for (const char* top : {"autograd", "nn", "gpt", "lecture", "options", "instruments", "examples",
                          "tests", "docs", "bench", "scripts", ".ci"}) {
    if (!fs::exists(kRoot / top)) continue;
    for (const auto& e : fs::recursive_directory_iterator(kRoot / top)) {
      if (!e.is_regular_file()) continue;
      const std::string rel = fs::relative(e.path(), kRoot).string();
      if (rel.find("/corpus/") != std::string::npos ||
          rel.find("/regressions/") != std::string::npos)
        continue;
      if (exts.count(e.path().extension().string()) || e.path().filename() == "run")
        out.push_back(e.path());
    }
  }
  return out;
}

// a/{b,c}.d -> a/b.d, a/c.d (one brace list, as the docs write them).
std::vector<std::string> expand_braces(const std::string& path) {
  const size_t open = path.find('{'), close = path.find('}');
  if (open == std::string::npos || close == std::string::npos || close < open) return {path};
  std::vector<std::string> out;
  std::stringstream items(path.substr(open + 1, close - open - 1));
  for (std::string item; std::getline(items, item, ',');)
    out.push_back(path.substr(0, open) + item + path.substr(close + 1));
  return out;
}

// Whether a name (no '/') matches a pattern with * wildcards.
bool matches(const std::string& name, const std::string& pattern) {
  std::string re;
  for (char c : pattern)
    re += c == '*' ? std::string(".*")
                   : std::string(std::isalnum(static_cast<unsigned char>(c)) ? "" : "\\") + c;
  return std::regex_match(name, std::regex(re));
}

bool path_exists(const std::string& path) {
  if (fs::exists(kRoot / path)) return true;
  const fs::path p = kRoot / path;
  if (!fs::is_directory(p.parent_path())) return false;
  const std::string last = p.filename().string();
  std::string pattern = last.ends_with(".*")                  ? last
                        : last.find('.') == std::string::npos ? last + ".*"
                                                              : last;
  if (pattern.find('*') == std::string::npos) return false;
  for (const auto& e : fs::directory_iterator(p.parent_path()))
    if (matches(e.path().filename().string(), pattern)) return true;
  return false;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_path_named_in_docs_and_comments_exists) {
  // group 2: a path; group 1 keeps it from starting inside a longer word or path
  const std::regex path_re(
      R"((^|[^A-Za-z0-9_./~$-])((?:autograd|nn|gpt|lecture|options|instruments|examples|tests|docs|bench|scripts|\.ci)/[A-Za-z0-9_./{},*-]*[A-Za-z0-9_}*]))");
  size_t checked = 0;
  for (const fs::path& file : files_to_read()) {
    const std::string text = read_file(file);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), path_re);
         it != std::sregex_iterator(); ++it) {
      std::string path = (*it)[2];
      while (path.ends_with(".") || path.ends_with(",")) path.pop_back();  // end of a sentence
      for (const std::string& p : expand_braces(path)) {
        ++checked;
        BOOST_TEST_INFO(fs::relative(file, kRoot).string() << " names " << p);
        BOOST_TEST(path_exists(p));
      }
    }
  }
  BOOST_TEST(checked > 200u);  // the scan found the tree's many references
}

namespace {

// The lines of `text`, each without its leading and trailing spaces.
std::vector<std::string> trimmed_lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t a = line.find_first_not_of(' '), b = line.find_last_not_of(' ');
    out.push_back(a == std::string::npos ? "" : line.substr(a, b - a + 1));
  }
  return out;
}

}  // namespace

// docs/README.md's reading path starts with `bash examples/train_pico.sh`, then runs the programs
// it names under build/: the script must build each of them (the CLI's target is attograd_cli),
// or a reader who followed the path finds the second step missing.
BOOST_AUTO_TEST_CASE(train_pico_builds_every_program_of_the_reading_path) {
  const std::string readme = read_file(kRoot / "docs/README.md");
  std::string build_line;
  for (const std::string& line : trimmed_lines(read_file(kRoot / "examples/train_pico.sh")))
    if (line.starts_with("cmake --build ")) build_line = line + " ";
  BOOST_REQUIRE_MESSAGE(!build_line.empty(), "examples/train_pico.sh builds nothing");
  const std::regex program_re(R"(\n(build/(cli|examples)/([A-Za-z0-9_]+)))");
  std::set<std::string> programs;
  for (auto it = std::sregex_iterator(readme.begin(), readme.end(), program_re);
       it != std::sregex_iterator(); ++it)
    programs.insert((*it)[2] == "cli" ? std::string((*it)[3]) + "_cli" : std::string((*it)[3]));
  BOOST_TEST(programs.size() >= 2u);  // attograd and attention_by_hand
  for (const std::string& target : programs) {
    BOOST_TEST_INFO("target " << target << " in: " << build_line);
    BOOST_TEST(build_line.find(" " + target + " ") != std::string::npos);
  }
}

// Code the docs quote as a file's own lines is that file's: each line of the ```cpp block that
// follows `marker` in `doc` is a line of `source` (leading spaces aside).
BOOST_AUTO_TEST_CASE(quoted_code_is_the_code) {
  struct Quote {
    const char *doc, *marker, *source;
  };
  for (const Quote& q :
       {Quote{"docs/04-gpt.md", "The lines of `Block::forward` (`gpt/model/gpt2.cc`)",
              "gpt/model/gpt2.cc"}}) {
    BOOST_TEST_INFO(q.doc << ", after: " << q.marker);
    const std::string doc = read_file(kRoot / q.doc);
    const size_t at = doc.find(q.marker);
    BOOST_REQUIRE(at != std::string::npos);
    const size_t open = doc.find("```cpp\n", at), close = doc.find("\n```", open);
    BOOST_REQUIRE(open != std::string::npos);
    BOOST_REQUIRE(close != std::string::npos);
    const std::vector<std::string> source = trimmed_lines(read_file(kRoot / q.source));
    const std::vector<std::string> quoted = trimmed_lines(doc.substr(open + 7, close - open - 7));
    BOOST_TEST(!quoted.empty());
    for (const std::string& line : quoted) {
      BOOST_TEST_INFO(q.source << " has no line: " << line);
      const bool found = std::find(source.begin(), source.end(), line) != source.end();
      BOOST_TEST(found);
    }
  }
}

namespace {

// GitHub's anchor of a heading: lower case, spaces to '-', only letters, digits, '_' and '-'
// kept ("Why divide by √d_k" -> "why-divide-by-d_k"; the docs' headings are ASCII but for
// symbols, which GitHub drops too).
std::string heading_anchor(const std::string& heading) {
  std::string anchor;
  for (unsigned char c : heading) {
    if (std::isalnum(c) || c == '_' || c == '-')
      anchor += static_cast<char>(std::tolower(c));
    else if (c == ' ')
      anchor += '-';
  }
  return anchor;
}

// The anchors of a Markdown file's headings, outside fenced code blocks.
std::set<std::string> anchors_of(const fs::path& md) {
  std::set<std::string> anchors;
  bool fenced = false;
  for (const std::string& line : trimmed_lines(read_file(md))) {
    if (line.starts_with("```")) fenced = !fenced;
    if (fenced || !line.starts_with("#")) continue;
    const size_t text = line.find_first_not_of("# ");
    if (text != std::string::npos) anchors.insert(heading_anchor(line.substr(text)));
  }
  return anchors;
}

// Every test source under tests/ by its file name without .cc ("layers_test").
std::map<std::string, fs::path> test_sources() {
  std::map<std::string, fs::path> sources;
  for (const auto& e : fs::recursive_directory_iterator(kRoot / "tests"))
    if (e.is_regular_file() && e.path().extension() == ".cc")
      sources[e.path().stem().string()] = e.path();
  return sources;
}

}  // namespace

// Whether `source` defines the Boost test case `name`: BOOST_AUTO_TEST_CASE(name), or with
// more arguments (BOOST_FIXTURE_TEST_CASE(name, F), BOOST_DATA_TEST_CASE(name, data, ...),
// BOOST_AUTO_TEST_CASE_TEMPLATE(name, T, Types)).
bool defines_case(const std::string& source, const std::string& name) {
  for (const char* opening : {"_TEST_CASE(", "_TEST_CASE_TEMPLATE("})
    for (const char* after : {")", ","})
      if (source.find(opening + name + after) != std::string::npos) return true;
  return false;
}

// In every docs/*.md: each relative link reaches a file (and, into a Markdown file with
// #anchor, one of its headings), and each test the text names as `file_test: case` is a test
// case of a file_test.cc somewhere under the tests folder. docs/lecture-map.md, the lecture's
// topics mapped to the companion, is made of such links and names.
BOOST_AUTO_TEST_CASE(links_and_cited_tests_in_docs_resolve) {
  const std::string map = read_file(kRoot / "docs/lecture-map.md");
  BOOST_TEST(map.find("CMU 07-280, Lecture 20") != std::string::npos);
  BOOST_TEST(read_file(kRoot / "docs/README.md").find("](lecture-map.md)") != std::string::npos);
  const std::map<std::string, fs::path> sources = test_sources();
  const std::regex link(R"(\]\(([^)#\s]+)(?:#([^)\s]+))?\))"), cited(R"(`(\w+_test): (\w+)`)");
  for (const auto& e : fs::directory_iterator(kRoot / "docs")) {
    if (e.path().extension() != ".md") continue;
    const std::string doc = e.path().filename().string(), text = read_file(e.path());
    size_t links = 0, tests = 0;
    for (std::sregex_iterator m(text.begin(), text.end(), link), end; m != end; ++m) {
      const std::string target = (*m)[1], anchor = (*m)[2];
      if (target.starts_with("http://") || target.starts_with("https://")) continue;
      ++links;
      BOOST_TEST_INFO(doc << " links to " << target << (anchor.empty() ? "" : "#") << anchor);
      const fs::path file = kRoot / "docs" / target;
      BOOST_TEST(fs::exists(file));
      if (!anchor.empty() && file.extension() == ".md" && fs::exists(file))
        BOOST_TEST(anchors_of(file).count(anchor) == 1u);
    }
    for (std::sregex_iterator m(text.begin(), text.end(), cited), end; m != end; ++m, ++tests) {
      const std::string file = (*m)[1], test_case = (*m)[2];
      BOOST_TEST_INFO(doc << " names " << file << ": " << test_case);
      const auto source = sources.find(file);
      BOOST_TEST((source != sources.end() && defines_case(read_file(source->second), test_case)));
    }
    if (doc == "lecture-map.md") {
      BOOST_TEST(links >= 30u);  // the map is read, not skipped
      BOOST_TEST(tests >= 25u);
    }
  }
}
