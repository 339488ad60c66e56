#include "gpt/io/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

namespace attograd::gpt {
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

std::vector<fs::path> remove_stale_temp_files(const fs::path& dir) {
  std::vector<fs::path> removed;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::optional<pid_t> owner = temp_file_owner(it->path().filename().string());
    std::error_code type_ec;
    if (!owner || process_exists(*owner) || !it->is_regular_file(type_ec) ||
        it->is_symlink(type_ec))
      continue;
    if (::unlink(it->path().c_str()) != 0 && errno != ENOENT)  // ENOENT: another cleaner was first
      throw std::runtime_error("cannot remove the stale temporary file " + it->path().string() +
                               " (left by process " + std::to_string(*owner) +
                               ", which no longer runs): " + std::strerror(errno));
    removed.push_back(it->path());
  }
  return removed;
}

}  // namespace attograd::gpt
