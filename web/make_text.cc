// Makes the page's shipped text (web/README.md): the book of Genesis from the King James Bible,
// public domain, as the CLI's offline default corpus `kjv` prepares the whole Bible: the output
// of Debian's `bible` program (scripts/wasm.sh runs `bible gen1:1-gen50:26`) made plain prose by
// gpt::clean_kjv, the very function the CLI uses. Genesis alone (about 200 KB) keeps the page
// small; the whole Bible is 4 MB.
//   make_text <bible output> <text out>      (run under node by the build, file system NODERAWFS)
#include <cstdio>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>

#include "gpt/text/corpus.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_text <bible output> <text out>\n");
    return 2;
  }
  try {
    std::ifstream in(argv[1], std::ios::binary);
    if (!in) throw std::runtime_error(std::string("cannot read ") + argv[1]);
    std::stringstream raw;
    raw << in.rdbuf();
    const std::string text = attograd::gpt::clean_kjv(raw.str());
    std::ofstream out(argv[2], std::ios::binary);
    out << text;
    if (!out.flush()) throw std::runtime_error(std::string("cannot write ") + argv[2]);
    std::printf("make_text: %zu bytes of Genesis in %s\n", text.size(), argv[2]);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_text: %s\n", e.what());
    return 1;
  }
}
