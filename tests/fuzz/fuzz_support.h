// Shared by the fuzz harnesses of tests/fuzz: how an input becomes files, and how a broken
// property stops the run.
//
// A harness is one LLVMFuzzerTestOneInput (libFuzzer's entry point). It feeds its input to a
// loader, accepts the errors the loader's header documents (std::runtime_error,
// std::invalid_argument, ...), and checks what a loaded result promises. Anything else is a
// crash: a sanitizer report, an undocumented exception (std::terminate), or FUZZ_CHECK.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace attograd::fuzz {

/// Prints "fuzz check failed: <what>" on stderr and aborts, so libFuzzer (or the regression
/// runner) reports the input as a crash.
[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz check failed: %s\n", what.c_str());
  std::abort();
}

/// Aborts with `what` (and the condition's text) unless `cond` holds.
#define FUZZ_CHECK(cond, what)                                               \
  do {                                                                       \
    if (!(cond)) ::attograd::fuzz::fail(std::string(what) + " [" #cond "]"); \
  } while (0)

/// A directory of this process's own under $TMPDIR (default /tmp), made on first use and
/// removed at a normal exit (a crash leaves it: scripts/fuzz.sh gives the fuzzers a $TMPDIR of
/// their own and removes that). Harnesses whose loader takes a path write their input here.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path d =
        std::filesystem::temp_directory_path() / ("attograd_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  // Registered once dir is complete, so the handler runs before dir's destructor.
  static const bool removed_at_exit = std::atexit([] {
                                        std::error_code ignored;
                                        std::filesystem::remove_all(scratch_dir(), ignored);
                                      }) == 0;
  (void)removed_at_exit;
  return dir;
}

/// Writes `bytes` to scratch_dir()/name (replacing it) and returns the path.
inline std::filesystem::path write_scratch(const std::string& name, std::string_view bytes) {
  const std::filesystem::path path = scratch_dir() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) fail("cannot write the scratch file " + path.string());
  return path;
}

/// Removes scratch_dir()/name if it exists.
inline void remove_scratch(const std::string& name) {
  std::error_code ignored;
  std::filesystem::remove(scratch_dir() / name, ignored);
}

/// The line that splits an input into two parts for harnesses that take two (a config.json and
/// a model, a vocabulary and a text). Readable, so seeds can be written by hand.
inline constexpr std::string_view kSplitMarker = "\n--8<--\n";

/// (before, after) the first kSplitMarker; after is nullopt when the input has none.
inline std::pair<std::string_view, std::optional<std::string_view>> split_input(
    std::string_view input) {
  const size_t at = input.find(kSplitMarker);
  if (at == std::string_view::npos) return {input, std::nullopt};
  return {input.substr(0, at), input.substr(at + kSplitMarker.size())};
}

/// The input as a string_view.
inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace attograd::fuzz
