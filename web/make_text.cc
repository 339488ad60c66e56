// Makes the page's shipped texts (web/README.md) from the King James Bible, public domain, as the
// CLI's offline default corpus `kjv` prepares it: the output of Debian's `bible` program
// (web/CMakeLists.txt runs `bible gen1:1-gen50:26` for Genesis, about 200 KB, the page's default,
// and `bible gen1:1-rev22:21`, the CLI's range, for the whole Bible, 4 MB, train_pico.sh's corpus)
// made plain prose by gpt::clean_kjv, the very function the CLI uses.
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
    std::printf("make_text: %zu bytes in %s\n", text.size(), argv[2]);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_text: %s\n", e.what());
    return 1;
  }
}
