#include "gpt/train/run_dir.h"

#include <stdexcept>
#include <system_error>

#include "gpt/io/utf8.h"
#include "gpt/model/checkpoint.h"
#include "gpt/train/plot.h"
#include "gpt/train/run_config.h"
#include "gpt/train/run_logs.h"

namespace attograd::gpt {

std::vector<std::string> run_files() {
  std::vector<std::string> names{kCheckpointFile, kBestCheckpointFile, kRunConfigFile,
                                 kTrainLog.file,  kEvalLog.file,       kBaselinesFile};
  for (const char* stem : kRunPlotStems)
    for (const char* ext : kRunPlotExtensions) names.push_back(std::string(stem) + "." + ext);
  return names;
}

namespace {

const char* kind_of(std::filesystem::file_type type) {
  switch (type) {
    case std::filesystem::file_type::fifo:
      return "a FIFO";
    case std::filesystem::file_type::directory:
      return "a directory";
    case std::filesystem::file_type::socket:
      return "a socket";
    case std::filesystem::file_type::block:
      return "a block device";
    case std::filesystem::file_type::character:
      return "a character device";
    default:
      return "not a regular file";
  }
}

}  // namespace

void refuse_special_run_files(const std::filesystem::path& dir) {
  std::vector<std::string> names = run_files();
  names.push_back(kLockFile);
  for (const std::string& name : names) {
    std::error_code ec;
    const std::filesystem::path path = dir / name;
    const std::filesystem::file_status s = std::filesystem::status(path, ec);  // follows links
    if (ec || s.type() == std::filesystem::file_type::not_found ||
        s.type() == std::filesystem::file_type::regular)
      continue;
    const char* kind = kind_of(s.type());
    throw std::invalid_argument(escape_bytes(path.string()) + " is " + kind +
                                (s.type() == std::filesystem::file_type::fifo ||
                                         s.type() == std::filesystem::file_type::directory
                                     ? ", not a regular file"
                                     : "") +
                                ": a run reads and writes it; remove it, or choose another --out");
  }
}

}  // namespace attograd::gpt
