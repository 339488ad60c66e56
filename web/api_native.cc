// attograd_api_native: the page's API (attograd_api.cc) as a native program, one JSON request per
// line on stdin and one reply per line on stdout. The parity test (tests/web/parity_test.js) sends
// the same requests to it and to the WebAssembly module, and compares the losses, gradients and
// attention weights the two builds compute. Checkpoint paths are paths of this machine.
//   printf '%s\n' '{"cmd": "info"}' | build/web/attograd_api_native
#include <iostream>
#include <string>

#include "web/attograd_api.h"

int main() {
  std::ios::sync_with_stdio(false);
  for (std::string line; std::getline(std::cin, line);) {
    if (line.empty()) continue;
    std::cout << attograd_call(line.c_str()) << '\n' << std::flush;
  }
  return 0;
}
