// attograd_api_native: the page's API (attograd_api.cc) as a native program, one JSON request per
// line on stdin and one reply per line on stdout. The parity test (tests/web/parity_test.js) sends
// the same requests to it and to the WebAssembly module, and compares the losses, gradients and
// attention weights the two builds compute. Checkpoint paths are paths of this machine.
//   printf '%s\n' '{"cmd": "info"}' | build/web/attograd_api_native
#include <cstdio>
#include <cstring>
#include <string>

#include "gpt/text/corpus.h"
#include "web/attograd_api.h"

namespace {

// The longest request line read: the largest corpus `train` reads (kMaxCorpusBytes, 256 MiB)
// as a JSON string, with room for escapes. Without a bound, a stream with no line break
// (`< /dev/zero`) grew the line until the machine ran out of memory (issue 31).
constexpr size_t kMaxRequestBytes = 2 * attograd::gpt::kMaxCorpusBytes;

// Answers one request line; a NUL byte would end the C string early, leaving the rest unread.
void answer(const std::string& line) {
  if (line.empty()) return;
  if (line.find('\0') != std::string::npos)
    std::printf("%s\n",
                R"({"error":"the request holds a NUL byte: send JSON text, one request a line"})");
  else
    std::printf("%s\n", attograd_call(line.c_str()));
  std::fflush(stdout);
}

}  // namespace

int main() {
  std::string line;
  char chunk[1 << 16];
  for (size_t got; (got = std::fread(chunk, 1, sizeof chunk, stdin)) > 0;) {
    for (size_t at = 0; at < got;) {
      const char* end = static_cast<const char*>(std::memchr(chunk + at, '\n', got - at));
      const size_t take = (end != nullptr ? static_cast<size_t>(end - chunk) : got) - at;
      if (line.size() + take > kMaxRequestBytes) {
        std::fprintf(stderr,
                     "attograd_api_native: a request line is longer than %zu bytes (twice the "
                     "largest corpus, 256 MiB); send one JSON request a line\n",
                     kMaxRequestBytes);
        return 1;
      }
      line.append(chunk + at, take);
      at += take;
      if (end == nullptr) break;
      ++at;  // the line break
      answer(line);
      line.clear();
    }
  }
  answer(line);
  return 0;
}
