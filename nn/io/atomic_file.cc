#include "nn/io/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "nn/io/utf8.h"

namespace attograd::nn {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kTempInfix = ".tmp.";
constexpr size_t kRandomChars = 6;  // mkostemp's XXXXXX

bool is_alnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// kill(pid, 0) probes without sending: EPERM means it exists but belongs to another user.
// A zombie still counts as alive, which only keeps a file a little longer.
bool process_exists(pid_t pid) {
  return pid == ::getpid() || ::kill(pid, 0) == 0 || errno == EPERM;
}

// When the process `pid` started, in seconds since the epoch, from Linux's /proc: field 22 of
// /proc/<pid>/stat (clock ticks after boot) plus the boot time, "btime" in /proc/stat. nullopt
// where /proc does not say (another system, a process gone meanwhile).
std::optional<double> process_start_time(pid_t pid) {
  std::ifstream stat_file("/proc/" + std::to_string(pid) + "/stat");
  std::string stat_line;
  if (!std::getline(stat_file, stat_line)) return std::nullopt;
  // "pid (comm) state ppid ...": comm may hold spaces and ')', so count from the last ')'.
  const size_t paren = stat_line.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream fields(stat_line.substr(paren + 1));
  std::string field;
  for (int i = 3; i <= 22 && (fields >> field); ++i) {
  }
  if (!fields) return std::nullopt;  // field now holds starttime, field 22
  std::ifstream proc_stat("/proc/stat");
  long long boot = -1;
  for (std::string key; proc_stat >> key;) {
    if (key == "btime") {
      proc_stat >> boot;
      break;
    }
    proc_stat.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  const long ticks = ::sysconf(_SC_CLK_TCK);
  if (boot < 0 || ticks <= 0) return std::nullopt;
  return static_cast<double>(boot) +
         std::strtod(field.c_str(), nullptr) / static_cast<double>(ticks);
}

// Whether the process that wrote the temporary `path`, named for `owner`, may still be
// writing it. A pid is reused: after a restart, a container's first process is PID 1 again,
// and would keep the temporaries of the PID 1 that was killed for ever. So a live `owner` that
// started after the file was last written cannot be its writer. The 2 s margin covers the
// rounding of the boot time and only ever keeps a file.
bool writer_may_be_alive(pid_t owner, const fs::path& path) {
  if (!process_exists(owner)) return false;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return true;
  const std::optional<double> started = process_start_time(owner);
  if (!started) return true;
  const double written = static_cast<double>(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec * 1e-9;
  return written >= *started - 2.0;
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  std::string name = path_ + std::string(kTempInfix) + std::to_string(::getpid()) + "." +
                     std::string(kRandomChars, 'X');
  fd_ = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd_ < 0) fail("create a temporary file beside it", errno);
  tmp_ = name;
  if (::fchmod(fd_, 0644) != 0) fail("chmod", errno);  // mkostemp makes 0600
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !tmp_.empty()) ::unlink(tmp_.c_str());
}

void AtomicFile::write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t put = ::write(fd_, p, n);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) fail("write", put == 0 ? ENOSPC : errno);
    p += put;
    n -= static_cast<size_t>(put);
  }
}

void AtomicFile::commit() {
  // fsync before rename: otherwise a crash can leave the new name pointing at empty blocks.
  if (::fsync(fd_) != 0) fail("fsync", errno);
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail("close", errno);
  if (::rename(tmp_.c_str(), path_.c_str()) != 0)
    fail("rename the temporary " + tmp_ + " over it", errno);
  committed_ = true;
  const fs::path dir = fs::path(path_).parent_path();
  const int dir_fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  // Some file systems refuse fsync on a directory (EINVAL): nothing more can be done there.
  if (dir_fd < 0 || (::fsync(dir_fd) != 0 && errno != EINVAL)) {
    const int err = errno;
    if (dir_fd >= 0) ::close(dir_fd);
    throw std::runtime_error("wrote '" + path_ + "', but could not fsync its directory (" +
                             std::strerror(err) + "): a crash now may lose the new file");
  }
  ::close(dir_fd);
}

void AtomicFile::fail(const std::string& step, int err) {
  throw std::runtime_error("cannot write '" + path_ + "' (" + step + ": " + std::strerror(err) +
                           "); the previous file is untouched");
}

void write_file_atomically(const fs::path& path, std::string_view bytes) {
  AtomicFile out(path.string());
  out.write(bytes);
  out.commit();
}

void refuse_output_that_is_an_input(const fs::path& output, const std::vector<fs::path>& inputs,
                                    const std::string& option, const fs::path& dir) {
  for (const fs::path& input : inputs) {
    std::error_code ec;
    if (!fs::equivalent(output, input, ec) || ec) continue;
    throw std::invalid_argument(option + " " + dir.string() + ": " + output.string() + " is " +
                                input.string() +
                                ", which this command reads; writing it would destroy it: choose "
                                "another " +
                                option);
  }
}

std::string directory_listing(const fs::path& dir, std::string_view skip) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename() != skip) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  std::string listed;
  for (size_t i = 0; i < names.size() && i < 3; ++i)
    listed += (i ? ", " : "") + escape_bytes(names[i]);
  if (names.size() > 3) listed += " and " + std::to_string(names.size() - 3) + " more";
  return listed;
}

std::optional<pid_t> temp_file_owner(std::string_view name) {
  const size_t infix = name.rfind(kTempInfix);
  if (infix == std::string_view::npos || infix == 0)
    return std::nullopt;                                                 // no target name before it
  const std::string_view rest = name.substr(infix + kTempInfix.size());  // "<pid>.XXXXXX"
  const size_t dot = rest.find('.');
  if (dot == std::string_view::npos || rest.size() - dot - 1 != kRandomChars) return std::nullopt;
  for (char c : rest.substr(dot + 1))
    if (!is_alnum(c)) return std::nullopt;
  long long pid = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + dot, pid);
  if (ec != std::errc() || end != rest.data() + dot || pid <= 0 ||
      pid > std::numeric_limits<pid_t>::max())
    return std::nullopt;
  return static_cast<pid_t>(pid);
}

std::vector<fs::path> remove_stale_temp_files(const fs::path& dir, const StaleSweep& sweep) {
  std::vector<fs::path> removed;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::optional<pid_t> owner = temp_file_owner(name);
    if (!owner) continue;
    const std::string target = name.substr(0, name.rfind(kTempInfix));
    if (std::find(sweep.targets.begin(), sweep.targets.end(), target) == sweep.targets.end())
      continue;  // not a name our writers make here
    const bool may_be_writing =
        sweep.locked ? *owner == ::getpid() : writer_may_be_alive(*owner, it->path());
    std::error_code type_ec;
    if (may_be_writing || !it->is_regular_file(type_ec) || it->is_symlink(type_ec)) continue;
    if (::unlink(it->path().c_str()) != 0 && errno != ENOENT)  // ENOENT: another cleaner was first
      throw std::runtime_error("cannot remove the stale temporary file " + it->path().string() +
                               " (left by process " + std::to_string(*owner) +
                               ", which no longer writes it): " + std::strerror(errno));
    removed.push_back(it->path());
  }
  return removed;
}

}  // namespace attograd::nn
