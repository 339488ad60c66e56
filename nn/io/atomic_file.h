// Files that are never seen half-written, and the temporaries a crash leaves behind.
//
// Every file attograd writes for a later run to read (checkpoints, cached corpora, plots, the
// CSV logs a resume rewrites) goes through AtomicFile: a temporary beside the target (rename(2)
// is atomic only within one file system), written, fsync'ed, renamed over the target, then the
// directory fsync'ed so the rename itself survives a crash. Readers see the old file or the
// complete new one, never a part.
//
// A process killed between creating the temporary and renaming it (kill -9 during a save, a
// power loss) leaves the temporary behind, as large as the file it was writing. Its name says
// whose it was, "<target>.tmp.<pid>.<6 random characters>", so remove_stale_temp_files() can
// delete exactly the temporaries of processes that are gone and never one a live process is
// still writing. A pid can be reused (a container's first process is PID 1 after every
// restart): a live process that started after the file was last written is not its writer.
//
// Every descriptor opened here is close-on-exec: a child process (gnuplot, bible) must not
// inherit a half-written file, nor keep one open after we die.
#pragma once

#include <sys/types.h>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attograd::nn {

/// A temporary file beside `path` that replaces `path` on commit(). Until commit() succeeds,
/// every failure (and the destructor) removes the temporary and leaves `path` untouched.
/// Errors are std::runtime_error "cannot write '<path>' (<step>: <OS error>); the previous file
/// is untouched".
class AtomicFile {
 public:
  /// Creates the temporary "<path>.tmp.<pid>.XXXXXX" (mkostemp, close-on-exec, mode 0644 so
  /// others can read the result like any other file). Throws if it cannot be created (a
  /// missing or read-only directory).
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  /// Appends n bytes. A short write (a full disk) is an error, never a truncated file.
  void write(const void* data, size_t n);
  /// Appends bytes.
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  /// The target's path.
  const std::string& path() const { return path_; }
  /// The temporary's path. Another program may fill the temporary by name (gnuplot writes its
  /// plots there) before commit(); it must have finished writing and closed it by then.
  const std::string& temp_path() const { return tmp_; }
  /// fsyncs and closes the temporary, renames it over the target, then fsyncs the directory.
  /// Should only that last fsync fail, the new file is already in place and the error says so.
  void commit();

 private:
  [[noreturn]] void fail(const std::string& step, int err);

  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

/// Writes `bytes` to `path` through an AtomicFile. Throws std::runtime_error naming the path
/// and the OS error on failure; no temporary is left behind.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

/// Throws std::invalid_argument "<option> <dir>: <output> is <input>, which this command reads;
/// writing it would destroy it: choose another <option>" when the existing file `output` is one
/// of `inputs`: the same path, a hard link, or a symlink to it (std::filesystem::equivalent).
/// Missing files are never the same. Commands that read a file and write a directory call it
/// for each file they will write, before writing any.
void refuse_output_that_is_an_input(const std::filesystem::path& output,
                                    const std::vector<std::filesystem::path>& inputs,
                                    const std::string& option, const std::filesystem::path& dir);

/// The names in `dir` (not in its subdirectories), `skip` left out, sorted and escaped for a
/// message: "a, b, c and 4 more" (at most three named); "" for an empty directory. For the
/// refusals of an occupied output directory, which say what is there.
std::string directory_listing(const std::filesystem::path& dir, std::string_view skip = {});

/// The pid of the process that created `file_name` if it is an AtomicFile temporary
/// ("<target>.tmp.<pid>.XXXXXX", XXXXXX six letters or digits), else nullopt.
std::optional<pid_t> temp_file_owner(std::string_view file_name);

/// Which temporaries remove_stale_temp_files() may delete.
struct StaleSweep {
  /// The target names (file names in the directory) whose temporaries are looked at; any other
  /// file, "notes.txt.tmp.999999.abcdef" included, is never touched: a sweep removes only names
  /// its own writers make.
  std::vector<std::string> targets;
  /// The caller holds the directory's lock, which every writer of these targets holds while it
  /// writes them: then the temporary of any other process is stale, whatever now runs under its
  /// pid (a container's PID 1 is alive and old on the host). Without it, only the temporaries
  /// of processes that are gone are.
  bool locked = false;
};

/// Deletes the AtomicFile temporaries of `sweep.targets` in `dir` (not in its subdirectories)
/// whose writer no longer writes them, and returns their paths. Without the lock: the pid in the
/// name is dead, or belongs to a process that started after the file was last written (Linux's
/// /proc says when; a pid reused, as PID 1 after a container restarts). With it: every pid but
/// this process's own. A temporary a live process may still be writing (this one's included) is
/// kept: it may still be renamed. Only regular files are removed, never a symlink. A missing
/// directory has nothing to remove. Throws std::runtime_error naming the file when one cannot be
/// removed.
std::vector<std::filesystem::path> remove_stale_temp_files(const std::filesystem::path& dir,
                                                           const StaleSweep& sweep);

}  // namespace attograd::nn
