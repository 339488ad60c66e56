// Corpora: the text a model trains on, named by a spec string.
//
//   spec            text                                         where it comes from
//   "kjv"           the King James Bible (default, offline)      Debian's bible-kjv package
//   "shakespeare"   Tiny Shakespeare, 1,115,394 bytes             downloaded once, sha256-checked
//   anything else   the file at that path (UTF-8)                 the file itself
//
// ## A user's file
//
// - Line ends are made LF: every CRLF (Windows) and every lone CR (classic Mac OS) becomes one
//   '\n', so '\r' never becomes a token (it would make each line break cost two tokens, and
//   samples would print raw carriage returns). Corpus::line_ends_normalized counts them and
//   describe() says so. CorpusOptions::keep_cr (`--keep-cr`) keeps the bytes as they are.
// - A leading UTF-8 byte order mark (EF BB BF) is dropped: it marks the encoding and is not
//   part of the text.
// - Size: at most CorpusOptions::max_bytes (kMaxCorpusBytes, 256 MiB, by default): the text,
//   and its token ids at 8 bytes each, are held in memory. A regular file over it is refused
//   from its size before anything is read; a pipe (a FIFO, `<(zcat corpus.gz)`) is read until
//   its end or the limit. Devices (/dev/zero, which never ends), sockets and directories are
//   refused at once.
//
// A named spec wins over a file of the same name in the working directory; write "./kjv" to
// load such a file.
//
// ## The cache
//
// "kjv" and "shakespeare" are made once and then read from a cache directory:
// CorpusOptions::cache_dir if set, else $ATTOGRAD_CACHE_DIR, else $XDG_CACHE_HOME/attograd,
// else $HOME/.cache/attograd (created if missing). Cache files are written atomically (a
// temporary file in the same directory, flushed and fsync'ed, then renamed over the final
// name, see nn/io/atomic_file.h), so a crash or a concurrent run never leaves a half-written
// corpus behind: the cache file is either absent or complete. The temporary of a run killed
// mid-write is removed by the next fetch. Files: kjv.txt, tinyshakespeare.txt. Delete one to
// make it again.
//
// ## "kjv": how the Bible becomes plain prose
//
// `bible gen1:1-rev22:21` (from bible-kjv, data in bible-kjv-text) prints every chapter as
//
//     <blank>
//     Genesis 1
//     <blank>
//       1 In the beginning God created the heaven and the earth.
//       2 And the earth was without form, and void; and darkness was upon the face of
//     the deep. And the Spirit of God moved upon the face of the waters.
//
// i.e. a heading, then each verse indented with its number and wrapped at $COLUMNS - 1
// columns (79 by default; load_corpus sets COLUMNS=80 so the raw output never depends on the
// caller's terminal). clean_kjv() turns this into
//
//     Genesis 1
//
//     In the beginning God created the heaven and the earth.
//     And the earth was without form, and void; and darkness was upon the face of the deep. And
//     the Spirit of God moved upon the face of the waters.
//     ...
//
//     Genesis 2
//
// Decisions, and why:
// - Verse numbers and the indentation go: they are reference apparatus, not prose, and a
//   character model would spend capacity learning to count (1, 2, ... 176) instead of English.
// - Wrapped lines are joined: the wrap column is an artifact of the printer ($COLUMNS even
//   changes it), and a break in mid-sentence teaches the model nothing. One verse per line
//   keeps the text's own unit, much as Tiny Shakespeare has one line of verse per line.
// - "Genesis 1"-style chapter headings stay, each followed by a blank line, with a blank line
//   between chapters: they are the document structure (like Shakespeare's speaker names), and
//   a sampled "Psalms 23" followed by psalm-like text is a nice sign of learning.
// - Whitespace runs inside a verse become one space and trailing spaces go (the source has
//   one stray double space, Joshua 7:2, and one trailing space, Mark 10:19).
// - The result is pure ASCII: 4,153,204 bytes, 73 distinct characters including '\n', 1,189
//   chapter headings and 31,102 verse lines (34,668 lines in all), identical for any wrap
//   width from 20 columns up. Each verse line equals the verse as `bible -f` prints it
//   unwrapped, less its reference (checked when this was written; corpus_test checks the
//   line count and the first and last verses).
//
// ## "shakespeare"
//
// Downloaded (gpt/io/download.h) from CorpusOptions::shakespeare_url, else
// $ATTOGRAD_SHAKESPEARE_URL, else kShakespeareUrl, then checked against kShakespeareSha256
// (gpt/io/sha256.h) and kShakespeareBytes before anything is written: a mismatch names both hashes
// and sizes and leaves no file in the cache. Every later load reads the cache (no network) and
// checks the hash again. A build without downloads (-DATTOGRAD_DOWNLOAD=OFF) reads the cache
// just the same, and when the file is not there says which option brings downloads, and that
// the file saved there by hand is accepted once its sha256 matches.
//
// ## Errors
//
// load_corpus throws std::runtime_error for every failure, because every failure is about
// data from outside the program (a file, a package, the network) rather than a bug in the
// caller: a CLI catches one type and prints its message. Messages name the file, URL or
// program involved and say how to fix it. Text that is not UTF-8 names the byte offset.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "gpt/io/download.h"

namespace attograd::gpt {

/// The corpus used when the user names none (train, eval, ngram and the library's RunRequest):
/// offline, public domain, and a Debian package.
inline constexpr char kDefaultCorpus[] = "kjv";

/// Where Tiny Shakespeare is downloaded from by default (Andrej Karpathy's char-rnn repository).
inline constexpr std::string_view kShakespeareUrl =
    "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt";
/// sha256 of the Tiny Shakespeare file, lower-case hex.
inline constexpr std::string_view kShakespeareSha256 =
    "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed";
/// Size of the Tiny Shakespeare file in bytes.
inline constexpr size_t kShakespeareBytes = 1115394;

/// The largest corpus load_corpus accepts, in bytes (256 MiB); downloads are held to it too.
inline constexpr size_t kMaxCorpusBytes = size_t{256} << 20;

/// How load_corpus finds, fetches and caches corpora. The defaults suit the CLI.
struct CorpusOptions {
  /// Where "kjv" and "shakespeare" are cached; empty means default_cache_dir().
  std::filesystem::path cache_dir;
  /// Where "shakespeare" is downloaded from; empty means $ATTOGRAD_SHAKESPEARE_URL if set and
  /// non-empty, else kShakespeareUrl. Only http:// and https:// URLs are accepted.
  std::string shakespeare_url;
  /// The bible-kjv program: a name searched on $PATH, or a path (anything with a '/').
  std::string bible_program = "bible";
  /// How long a download of "shakespeare" may wait.
  HttpGetOptions download;
  /// Keep a user's file's CRLF and CR line ends as they are (normally each becomes LF).
  bool keep_cr = false;
  /// The largest file accepted, in bytes.
  size_t max_bytes = kMaxCorpusBytes;
  /// Receives one-line progress notes ("downloading ... from ..."); null means silent.
  std::function<void(const std::string&)> log;
};

/// The help of the option that sets CorpusOptions::keep_cr (`--keep-cr` of every command that
/// reads a corpus).
inline constexpr const char* kKeepCrHelp =
    "keep a corpus file's CRLF and CR line ends as they are (by default each becomes LF, so '\\r' "
    "is never a token)";

/// A loaded corpus: its text and where it came from, for the CLI to print.
struct Corpus {
  /// "kjv", "shakespeare", or the path as the user gave it.
  std::string name;
  /// The whole text, valid UTF-8, never empty.
  std::string text;
  /// The file the text was read from or written to: the cache file, or the user's file.
  std::filesystem::path path;
  /// Its original source: the download URL, the bible command line, or the file path.
  std::string origin;
  /// True if this call downloaded or extracted the text (false: read from a file or cache).
  bool fetched = false;
  /// How many CRLF or CR line ends of a user's file were made LF (0 with keep_cr).
  size_t line_ends_normalized = 0;

  /// One line for the CLI, e.g. "kjv: 4,153,204 bytes, fetched from `bible gen1:1-rev22:21`
  /// (Debian bible-kjv), cached at /root/.cache/attograd/kjv.txt", or "notes.txt: 2,048 bytes
  /// from notes.txt, 64 CRLF/CR line ends made LF (--keep-cr keeps them)".
  std::string describe() const;
};

/// Loads the corpus named by `spec` (see the table at the top of this file), fetching and
/// caching it on first use. Throws std::runtime_error on any failure: an empty spec; a missing
/// bible program ("the default corpus needs Debian's bible-kjv package: sudo apt-get install
/// bible-kjv (or pass --corpus shakespeare or a file path)"); a failed download (naming the URL
/// and the curl or HTTP error); "shakespeare" not yet cached in a build without downloads
/// (naming the configure option and the package, kNoDownloads); a checksum mismatch (naming
/// expected and actual sha256 and sizes); a missing, unreadable, empty or non-UTF-8 file (naming
/// the path, and the byte offset of the first invalid UTF-8 sequence); a device, socket or
/// directory given as the file; a file over options.max_bytes ("is 300,000,000 bytes, over the
/// 268,435,456-byte limit for a corpus"); a cache directory that cannot be created. A user's file
/// has its byte order mark dropped and its line ends made LF (see "A user's file" above).
Corpus load_corpus(std::string_view spec, const CorpusOptions& options = {});

/// What load_corpus does to a user's file once read (see "A user's file" above), for any other
/// reader of a user's text (the companion page's file): drops a leading UTF-8 byte order mark
/// and, unless keep_cr, makes every CRLF and lone CR one LF. Returns how many line ends changed.
size_t normalize_user_text(std::string& text, bool keep_cr = false);

/// `spec` as a checkpoint records it: a corpus name (kjv, shakespeare) as it is, a file path made
/// absolute and normal, so that `train --resume` finds the file from any working directory.
std::string recorded_corpus_spec(std::string_view spec);

/// The cache directory used when CorpusOptions::cache_dir is empty: $ATTOGRAD_CACHE_DIR, else
/// $XDG_CACHE_HOME/attograd (only if absolute, as the XDG spec requires), else
/// $HOME/.cache/attograd. Does not create it. Throws std::runtime_error if none of the three
/// variables is usable.
std::filesystem::path default_cache_dir();

/// Turns the output of `bible gen1:1-rev22:21` into plain prose as described at the top of
/// this file. Throws std::runtime_error naming the line number and the line if the output is
/// not in the expected format (a heading "Book N" after a blank line, verses "  N text",
/// continuation lines), or if it holds no verse at all.
std::string clean_kjv(std::string_view bible_output);

/// What a file read whole is held as, which its size limit's message gives as the reason:
/// text that is then tokenized (a corpus: the text and its token ids), or the text alone (a
/// config file, a Markdown table).
enum class HeldAs { text_and_ids, text };

/// Reads a user's file whole, as bytes: a regular file of at most max_bytes, or a pipe (a FIFO,
/// `<(zcat corpus.gz)`) until its end or max_bytes. Throws std::runtime_error naming
/// "<what> <path>": a missing file, a directory, a device (/dev/zero would never end) or a
/// socket, each followed by `fix`; a file over max_bytes ("is 300,000,000 bytes, over the
/// 268,435,456-byte limit for a <what> (it and its token ids are held in memory)", or "(it is
/// held in memory)" for HeldAs::text), checked from its size before anything is read; an OS
/// error. Opened close-on-exec.
std::string read_text_file(const std::filesystem::path& path, const std::string& what,
                           const std::string& fix, size_t max_bytes = kMaxCorpusBytes,
                           HeldAs held = HeldAs::text_and_ids);

/// Reads standard input whole, held to read_text_file's rules: a regular file or a pipe (or a
/// terminal) until its end or max_bytes, a device such as `< /dev/zero` refused. Throws
/// std::runtime_error naming "<what> (standard input)", followed by `fix` where one helps.
std::string read_standard_input(const std::string& what, const std::string& fix,
                                size_t max_bytes = kMaxCorpusBytes,
                                HeldAs held = HeldAs::text_and_ids);

}  // namespace attograd::gpt
