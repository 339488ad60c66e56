// Corpora by name: kjv (Debian bible-kjv), shakespeare (download + sha256), or a UTF-8 file.
// The choices (cleaning, caching, errors) are explained at the top of corpus.h.
#include "gpt/text/corpus.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "gpt/io/sha256.h"
#include "gpt/io/subprocess.h"
#include "nn/io/atomic_file.h"
#include "nn/io/utf8.h"

namespace attograd::gpt {
namespace fs = std::filesystem;
namespace {

// A path as a message shows it: one printable line, since a name with a newline or an escape
// sequence in it (the cache's comes from ATTOGRAD_CACHE_DIR, XDG_CACHE_HOME or HOME) must not
// break the message or drive the terminal. Every message of this file names its files so.
std::string shown(const fs::path& path) { return nn::escape_controls(path.string()); }

// "<what> <path>" for a message.
std::string named_file(const std::string& what, const fs::path& path) {
  return what + " " + shown(path);
}

// The verse range that spans the whole Bible; `bible` clamps nothing here, it is exact.
constexpr const char* kBibleRange = "gen1:1-rev22:21";
constexpr const char* kKjvCacheName = "kjv.txt";
constexpr const char* kShakespeareCacheName = "tinyshakespeare.txt";
// What to do about a corpus file, or a cache file, that cannot be read.
constexpr const char* kFileFix = "pass kjv, shakespeare or the path of a UTF-8 text file";
constexpr const char* kCacheFix = "delete it to fetch the corpus again";

std::string getenv_string(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

// 4302811 -> "4,302,811": sizes in messages are read by people.
std::string with_commas(size_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// What a non-regular file is, for messages.
std::string file_kind(mode_t mode) {
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Makes every CRLF and every lone CR an LF, in place; returns how many line ends changed.
// Windows (CRLF) and classic Mac (CR) line ends would otherwise make '\r' a token: every line
// break costs two tokens and samples print raw carriage returns.
size_t normalize_line_ends(std::string& text) {
  size_t changed = 0, out = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r') {
      ++changed;
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
      text[out++] = '\n';
    } else {
      text[out++] = text[i];
    }
  }
  text.resize(out);
  return changed;
}

// A corpus must be non-empty UTF-8; `what` names it in the message.
void check_text(const std::string& text, const std::string& what) {
  if (text.empty()) {
    throw std::runtime_error(what + " is empty; a corpus needs text to learn from");
  }
  if (auto error = nn::find_utf8_error(text)) {
    throw std::runtime_error(what + " is not valid UTF-8: " + error->message() +
                             "; convert it first, e.g. iconv -f LATIN1 -t UTF-8 in.txt > out.txt");
  }
}

fs::path cache_dir_of(const CorpusOptions& options) {
  const fs::path dir = options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw std::runtime_error("cannot create the cache directory " + shown(dir) + ": " +
                             (ec ? ec.message() : std::string("exists and is not a directory")) +
                             "; set ATTOGRAD_CACHE_DIR to a writable directory");
  }
  return dir;
}

void note(const CorpusOptions& options, const std::string& message) {
  if (options.log) options.log(message);
}

// An earlier run killed while writing the cache leaves its temporary behind (as large as the
// corpus); the next fetch clears those of processes that are gone.
void remove_stale_temporaries(const fs::path& dir, const CorpusOptions& options) {
  for (const fs::path& stale :
       nn::remove_stale_temp_files(dir, {.targets = {kKjvCacheName, kShakespeareCacheName}}))
    note(options, "removed " + shown(stale) + ", left by an interrupted run");
}

// ----- kjv -------------------------------------------------------------------------------------

// The executable for options.bible_program, or an empty path if there is none. A name
// without '/' is searched on $PATH like a shell would, so the error can be ours (with the fix)
// instead of sh's "command not found".
fs::path find_program(const std::string& program) {
  auto executable = [](const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (program.find('/') != std::string::npos) return executable(program) ? fs::path(program) : "";
  std::string path_var = getenv_string("PATH");
  if (path_var.empty()) path_var = "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= path_var.size()) {
    size_t end = path_var.find(':', start);
    if (end == std::string::npos) end = path_var.size();
    const std::string dir = path_var.substr(start, end - start);
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / program;
    if (executable(candidate)) return candidate;
    start = end + 1;
  }
  return "";
}

// Runs `bible gen1:1-rev22:21` and returns what it prints. No shell: the program's path is one
// argument, whatever it holds.
std::string run_bible(const fs::path& program) {
  // COLUMNS pins the wrap width so the raw output is the same in any terminal (clean_kjv
  // unwraps anyway); its stdin is empty because bible turns interactive when it expects input.
  const std::string command = "COLUMNS=80 " + program.string() + " " + kBibleRange;
  RunOptions options;
  options.capture_stdout = true;
  options.max_output = kMaxCorpusBytes;
  options.env = {"COLUMNS=80"};
  const std::optional<ProgramResult> done =
      run_program({program.string(), kBibleRange}, "", options);
  if (!done || done->status != 0)
    throw std::runtime_error("`" + command + "` " +
                             (done ? describe_status(*done) : std::string("was not found")) +
                             "; is bible-kjv-text installed? sudo apt-get install bible-kjv "
                             "(or pass --corpus shakespeare or a file path)");
  return done->out;
}

Corpus load_kjv(const CorpusOptions& options) {
  Corpus corpus;
  corpus.name = "kjv";
  corpus.origin = std::string("`bible ") + kBibleRange + "` (Debian bible-kjv)";
  const fs::path dir = cache_dir_of(options);
  corpus.path = dir / kKjvCacheName;
  std::error_code ec;
  if (fs::exists(corpus.path, ec)) {
    corpus.text = read_text_file(corpus.path, "cached corpus", kCacheFix, options.max_bytes);
    check_text(corpus.text,
               "cached corpus " + shown(corpus.path) + " (delete it to extract the Bible again)");
    return corpus;
  }
  const fs::path program = find_program(options.bible_program);
  if (program.empty()) {
    throw std::runtime_error(
        "the default corpus needs Debian's bible-kjv package: sudo apt-get install bible-kjv "
        "(or pass --corpus shakespeare or a file path); no program '" +
        options.bible_program + "' was found");
  }
  remove_stale_temporaries(dir, options);
  note(options,
       "extracting the King James Bible with " + shown(program) + " into " + shown(corpus.path));
  corpus.text = clean_kjv(run_bible(program));
  check_text(corpus.text, "the King James Bible extracted by " + shown(program));
  nn::write_file_atomically(corpus.path, corpus.text);
  corpus.fetched = true;
  return corpus;
}

// ----- shakespeare -----------------------------------------------------------------------------

// Throws unless `bytes` is exactly Tiny Shakespeare. `what` names the bytes in the message.
void verify_shakespeare(const std::string& bytes, const std::string& what, const std::string& fix) {
  const std::string actual = sha256_hex(bytes);
  if (actual != kShakespeareSha256 || bytes.size() != kShakespeareBytes) {
    throw std::runtime_error("checksum mismatch for " + what + ": expected sha256 " +
                             std::string(kShakespeareSha256) + " (" +
                             with_commas(kShakespeareBytes) + " bytes), got sha256 " + actual +
                             " (" + with_commas(bytes.size()) + " bytes); " + fix);
  }
}

Corpus load_shakespeare(const CorpusOptions& options) {
  Corpus corpus;
  corpus.name = "shakespeare";
  corpus.origin = options.shakespeare_url;
  if (corpus.origin.empty()) corpus.origin = getenv_string("ATTOGRAD_SHAKESPEARE_URL");
  if (corpus.origin.empty()) corpus.origin = kShakespeareUrl;
  const fs::path dir = cache_dir_of(options);
  corpus.path = dir / kShakespeareCacheName;
  std::error_code ec;
  if (fs::exists(corpus.path, ec)) {
    // The cache was verified before it was written; checking again catches a file edited or
    // damaged since, which would otherwise silently change every result.
    corpus.text = read_text_file(corpus.path, "cached corpus", kCacheFix, options.max_bytes);
    verify_shakespeare(corpus.text, "the cached " + shown(corpus.path),
                       can_download() ? "delete it to download Tiny Shakespeare again"
                                      : "replace it with the file from " + corpus.origin);
    return corpus;
  }
  if (!can_download())
    throw std::runtime_error("Tiny Shakespeare is not in the cache (" + shown(corpus.path) +
                             ") and " + std::string(kNoDownloads) + "; or save " + corpus.origin +
                             " there yourself (its sha256 is checked), or pass a local file "
                             "path as the corpus");
  remove_stale_temporaries(dir, options);
  note(options, "downloading Tiny Shakespeare from " + corpus.origin);
  try {
    corpus.text = http_get(corpus.origin, options.max_bytes, options.download);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string(e.what()) +
                             "; check the network or the URL (ATTOGRAD_SHAKESPEARE_URL), or pass "
                             "a local file path as the corpus");
  }
  verify_shakespeare(corpus.text, corpus.origin,
                     "the download is corrupt or the URL serves another file; nothing was cached");
  nn::write_file_atomically(corpus.path, corpus.text);
  note(options, "cached Tiny Shakespeare at " + shown(corpus.path));
  corpus.fetched = true;
  return corpus;
}

// ----- a file ----------------------------------------------------------------------------------

Corpus load_file(std::string_view spec, const CorpusOptions& options) {
  Corpus corpus;
  corpus.name = std::string(spec);
  corpus.path = fs::path(spec);
  corpus.origin = corpus.path.string();
  corpus.text = read_text_file(corpus.path, "corpus file", kFileFix, options.max_bytes);
  corpus.line_ends_normalized = normalize_user_text(corpus.text, options.keep_cr);
  check_text(corpus.text, named_file("corpus file", corpus.path));
  return corpus;
}

// ----- clean_kjv helpers -----------------------------------------------------------------------

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Appends `text` to `out` with every run of whitespace made one space and none at its ends.
void append_collapsed(std::string& out, std::string_view text) {
  bool wrote = false, pending_space = false;
  for (char c : text) {
    if (is_space(c)) {
      pending_space = wrote;
      continue;
    }
    if (pending_space) out += ' ';
    pending_space = false;
    wrote = true;
    out += c;
  }
}

}  // namespace

// ----- public ----------------------------------------------------------------------------------

namespace {

// The bytes of the open descriptor `fd` (a `what` called `named` in messages), refused or bounded
// as read_text_file documents. A terminal is read like a pipe (tokenize typed by hand).
std::string read_bounded(int fd, const std::string& what, const std::string& named,
                         const std::string& fix, size_t max_bytes, HeldAs held) {
  const std::string limit =
      with_commas(max_bytes) + "-byte limit for a " + what +
      (held == HeldAs::text_and_ids ? " (it and its token ids are" : " (it is") +
      " held in memory); use a smaller file or a part of it";
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw std::runtime_error("cannot stat " + named + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw std::runtime_error(named + " is a directory; " + fix);
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !::isatty(fd))
    throw std::runtime_error(named + " is " + file_kind(st.st_mode) + ", not a text file; " + fix);
  if (S_ISREG(st.st_mode) && static_cast<uintmax_t>(st.st_size) > max_bytes)
    throw std::runtime_error(named + " is " + with_commas(static_cast<size_t>(st.st_size)) +
                             " bytes, over the " + limit);
  std::string bytes;
  if (S_ISREG(st.st_mode)) bytes.reserve(static_cast<size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error("error reading " + named + ": " + std::strerror(errno));
    if (n == 0) break;
    // A file that grew since fstat, or a pipe, is held to the same limit.
    if (bytes.size() + static_cast<size_t>(n) > max_bytes)
      throw std::runtime_error(named + " gives more than " + with_commas(max_bytes) +
                               " bytes, over the " + limit);
    bytes.append(buffer, static_cast<size_t>(n));
  }
  return bytes;
}

}  // namespace

std::string read_text_file(const fs::path& path, const std::string& what, const std::string& fix,
                           size_t max_bytes, HeldAs held) {
  const std::string named = named_file(what, path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) throw std::runtime_error(named + " does not exist; " + fix);
    throw std::runtime_error("cannot open " + named + ": " + std::strerror(err));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  return read_bounded(fd, what, named, fix, max_bytes, held);
}

std::string read_standard_input(const std::string& what, const std::string& fix, size_t max_bytes,
                                HeldAs held) {
  return read_bounded(STDIN_FILENO, what, what + " (standard input)", fix, max_bytes, held);
}

std::string Corpus::describe() const {
  std::string line = nn::escape_controls(name) + ": " + with_commas(text.size()) + " bytes";
  // Names as one printable line each (a file name may hold a newline or an escape byte).
  const std::string shown_path = shown(path);
  if (origin != path.string()) {
    line += (fetched ? ", fetched from " : ", from ") + nn::escape_controls(origin) +
            ", cached at " + shown_path;
  } else {
    line += " from " + shown_path;
  }
  if (line_ends_normalized > 0) {
    line += ", " + with_commas(line_ends_normalized) +
            " CRLF/CR line ends made LF (--keep-cr keeps them)";
  }
  return line;
}

size_t normalize_user_text(std::string& text, bool keep_cr) {
  // A byte order mark only announces the encoding; as a character it would become a token.
  if (text.starts_with("\xEF\xBB\xBF")) text.erase(0, 3);
  return keep_cr ? 0 : normalize_line_ends(text);
}

Corpus load_corpus(std::string_view spec, const CorpusOptions& options) {
  if (spec.empty()) {
    throw std::runtime_error(
        "empty corpus name; pass kjv (the default), shakespeare, or the path of a UTF-8 text "
        "file");
  }
  if (spec == "kjv") return load_kjv(options);
  if (spec == "shakespeare") return load_shakespeare(options);
  return load_file(spec, options);
}

std::string recorded_corpus_spec(std::string_view spec) {
  if (spec.empty() || spec == "kjv" || spec == "shakespeare") return std::string(spec);
  return fs::absolute(fs::path(spec)).lexically_normal().string();
}

fs::path default_cache_dir() {
  if (std::string dir = getenv_string("ATTOGRAD_CACHE_DIR"); !dir.empty()) return dir;
  // The XDG base directory spec says relative values are invalid and must be ignored.
  if (std::string xdg = getenv_string("XDG_CACHE_HOME"); !xdg.empty() && xdg.front() == '/') {
    return fs::path(xdg) / "attograd";
  }
  if (std::string home = getenv_string("HOME"); !home.empty()) {
    return fs::path(home) / ".cache" / "attograd";
  }
  throw std::runtime_error(
      "cannot choose a cache directory: none of ATTOGRAD_CACHE_DIR, XDG_CACHE_HOME or HOME is "
      "set; set ATTOGRAD_CACHE_DIR to a writable directory");
}

std::string clean_kjv(std::string_view bible_output) {
  std::string out;
  out.reserve(bible_output.size());
  std::string verse;      // the verse being joined from its wrapped lines
  bool in_verse = false;  // a verse number has been read and its text not yet written
  bool after_blank = true;
  size_t headings = 0, verses = 0, line_number = 0;
  auto flush_verse = [&] {
    if (!in_verse) return;
    out += verse;
    out += '\n';
    verse.clear();
    in_verse = false;
  };
  auto bad_line = [&](std::string_view line, const std::string& why) {
    return std::runtime_error("unexpected output from bible at line " +
                              std::to_string(line_number) + " (" + why + "): \"" +
                              std::string(line.substr(0, 80)) +
                              "\"; expected \"Book N\" headings and \"  N text\" verses");
  };

  size_t start = 0;
  while (start < bible_output.size()) {
    size_t end = bible_output.find('\n', start);
    if (end == std::string_view::npos) end = bible_output.size();
    std::string_view line = bible_output.substr(start, end - start);
    start = end + 1;
    ++line_number;
    while (!line.empty() && is_space(line.back())) line.remove_suffix(1);

    if (line.empty()) {  // ends a verse; the next unindented line is a heading
      flush_verse();
      after_blank = true;
      continue;
    }
    if (is_space(line.front())) {  // "  12 text": a new verse with its number
      size_t i = 0;
      while (i < line.size() && is_space(line[i])) ++i;
      const size_t digits = i;
      while (i < line.size() && is_digit(line[i])) ++i;
      // A narrow $COLUMNS can leave the number alone on its line ("  20"), text below.
      if (i == digits || (i < line.size() && line[i] != ' ')) {
        throw bad_line(line, "an indented line that does not start with a verse number");
      }
      flush_verse();
      append_collapsed(verse, line.substr(i));
      in_verse = true;
      ++verses;
    } else if (after_blank) {  // "Genesis 1", "Song of Solomon 2", "1 John 5"
      const size_t space = line.rfind(' ');
      if (space == std::string_view::npos || space + 1 == line.size() ||
          line.find_first_not_of("0123456789", space + 1) != std::string_view::npos) {
        throw bad_line(line, "a line after a blank line that is not a \"Book N\" heading");
      }
      flush_verse();
      if (headings > 0) out += '\n';  // a blank line between chapters
      append_collapsed(out, line);
      out += "\n\n";
      ++headings;
    } else {  // the wrapped rest of the current verse
      if (!in_verse) throw bad_line(line, "a continuation line outside any verse");
      if (!verse.empty()) verse += ' ';
      append_collapsed(verse, line);
    }
    after_blank = false;
  }
  flush_verse();
  if (verses == 0 || headings == 0) {
    throw std::runtime_error("unexpected output from bible: " + std::to_string(headings) +
                             " chapter headings and " + std::to_string(verses) + " verses in " +
                             with_commas(bible_output.size()) +
                             " bytes; is bible-kjv-text installed?");
  }
  return out;
}

}  // namespace attograd::gpt
