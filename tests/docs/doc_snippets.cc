// Turns the ```cpp blocks of a Markdown file into the source of a Boost.Test module: one test
// case per block, named after the heading above it, with #line directives so that a compile
// error or a failed check points at the Markdown line. Run at build time on docs/api.md (see
// CMakeLists.txt): the document is the one list of snippets, and the test runs every one.
// It is also the one list of the headers they see: the paragraph that starts "The blocks see"
// names them in backquotes (`nn/layers.h`), and each becomes an #include of the generated
// source, after the prelude (std headers, expect(), the test helpers).
//
//   doc_snippets <in.md> <out.cc> <prelude header>
//
// Exits 1 with a one-line message for an unterminated block, a file without any block, or no
// header named before the first block.
#include <cctype>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

namespace {

// "## Losses, and their gradients" -> "losses_and_their_gradients"
std::string slug(const std::string& heading) {
  std::string s;
  for (const char c : heading) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!s.empty() && s.back() != '_') {
      s += '_';
    }
  }
  while (!s.empty() && s.back() == '_') s.pop_back();
  return s.empty() ? "snippet" : s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: doc_snippets <in.md> <out.cc> <prelude header>\n";
    return 1;
  }
  const std::string md = argv[1];
  std::ifstream in(md);
  if (!in) {
    std::cerr << "doc_snippets: cannot read " << md << "\n";
    return 1;
  }
  std::ostringstream out;
  out << "// Generated from " << md
      << " by tests/docs/doc_snippets.cc: edit the Markdown, not this.\n"
      << "#define BOOST_TEST_MODULE api_doc\n#include <boost/test/unit_test.hpp>\n\n#include \""
      << argv[3] << "\"\n";
  std::string line, heading = "snippet";
  std::map<std::string, int> used;  // case names taken, to number repeats
  int line_no = 0, open_at = 0, blocks = 0, headers = 0;
  bool in_headers = false;  // in the paragraph that names the headers
  while (std::getline(in, line)) {
    ++line_no;
    if (blocks == 0 && open_at == 0) {
      if (line.rfind("The blocks see", 0) == 0) in_headers = true;
      if (line.empty()) in_headers = false;
      // Each `dir/name.h` of the paragraph.
      for (size_t at = 0; in_headers && (at = line.find('`', at)) != std::string::npos;) {
        const size_t end = line.find('`', at + 1);
        if (end == std::string::npos) break;
        const std::string name = line.substr(at + 1, end - at - 1);
        if (name.size() > 2 && name.ends_with(".h") && name.find('/') != std::string::npos) {
          out << "#include \"" << name << "\"\n";
          ++headers;
        }
        at = end + 1;
      }
    }
    if (open_at == 0) {
      if (line.rfind("#", 0) == 0) heading = slug(line);
      if (line == "```cpp") {
        if (headers == 0) {
          std::cerr << md << ":" << line_no
                    << ": no header named before the first ```cpp block (a paragraph starting "
                       "\"The blocks see\" names them in backquotes, `nn/layers.h`)\n";
          return 1;
        }
        open_at = line_no;
        const int n = ++used[heading];
        out << "\nBOOST_AUTO_TEST_CASE(" << heading;
        if (n > 1) out << '_' << n;
        out << ") {\n"
            << "#line " << line_no + 1 << " \"" << md << "\"\n";
      }
    } else if (line == "```") {
      out << "}\n";
      open_at = 0;
      ++blocks;
    } else {
      out << line << '\n';
    }
  }
  if (open_at != 0) {
    std::cerr << md << ":" << open_at << ": the ```cpp block is never closed (add a line ```)\n";
    return 1;
  }
  if (blocks == 0) {
    std::cerr << md << ": no ```cpp block found; the test would check nothing\n";
    return 1;
  }
  std::ofstream file(argv[2]);
  file << out.str();
  if (!file.flush()) {
    std::cerr << "doc_snippets: cannot write " << argv[2] << "\n";
    return 1;
  }
  return 0;
}
