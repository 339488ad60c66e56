// Runs a fuzz harness on saved inputs without libFuzzer, so that every build (gcc included)
// replays the seed corpus and every crash ever found: the harness's LLVMFuzzerTestOneInput is
// linked with this main, the standard way to run libFuzzer targets as regression tests.
//
//   fuzz_<target>_regressions PATH...
//
// Each PATH is a file or a directory whose files (not recursive, sorted, dot files skipped)
// are fed to the harness one at a time. Exit 0 when every input ran (a failed property aborts
// inside the harness); 1 when a path is missing or no input was found at all, so that a
// mistyped directory cannot pass by running nothing. Each input's name goes to stderr before
// it runs, so a crash report follows the name of the input that caused it.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<std::filesystem::path> inputs_of(const std::filesystem::path& path) {
  if (!std::filesystem::is_directory(path)) return {path};
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(path))
    if (entry.is_regular_file() && entry.path().filename().string().front() != '.')
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIRECTORY...\n", argv[0]);
    return 1;
  }
  size_t ran = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path path = argv[i];
    if (!std::filesystem::exists(path)) {
      std::fprintf(stderr, "%s: no such file or directory\n", path.c_str());
      return 1;
    }
    for (const std::filesystem::path& file : inputs_of(path)) {
      std::ifstream in(file, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
      if (!in.good() && !in.eof()) {
        std::fprintf(stderr, "%s: cannot read it\n", file.c_str());
        return 1;
      }
      std::fprintf(stderr, "input %s (%zu bytes)\n", file.c_str(), bytes.size());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++ran;
    }
  }
  if (ran == 0) {
    std::fprintf(stderr, "no inputs found: nothing was tested\n");
    return 1;
  }
  std::fprintf(stderr, "%zu inputs ran cleanly\n", ran);
  return 0;
}
