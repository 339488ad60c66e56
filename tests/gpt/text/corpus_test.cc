// Tests gpt/text/corpus without the internet: "shakespeare" is served by a loopback HTTP server in
// this process (tests/gpt/http_test_server.h), "kjv" runs the installed bible-kjv, and file
// corpora use temporary files. Every test uses its own temporary cache directory. The cases that
// download are skipped in a build without downloads (-DATTOGRAD_DOWNLOAD=OFF), and the one about
// such a build in a build with them.
#define BOOST_TEST_MODULE corpus
#include <boost/test/unit_test.hpp>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpt/io/sha256.h"
#include "gpt/text/corpus.h"
#include "nn/io/atomic_file.h"
#include "tests/gpt/http_test_server.h"
#include "tests/test_util.h"

using namespace attograd::gpt;
namespace nn = attograd::nn;
using attograd::testing::expect_throw_with;
using attograd::testing::LoopbackHttpServer;
using attograd::testing::TempDir;
namespace fs = std::filesystem;

namespace {

const fs::path kShakespeareFile = fs::path(ATTOGRAD_SHARED_DIR) / "data" / "tinyshakespeare.txt";

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Sets an environment variable for one scope and restores the old value after.
struct ScopedEnv {
  std::string name;
  std::string old;
  bool had;
  ScopedEnv(const std::string& n, const char* value) : name(n) {
    const char* v = std::getenv(name.c_str());
    had = v != nullptr;
    if (had) old = v;
    if (value) {
      ::setenv(name.c_str(), value, 1);
    } else {
      ::unsetenv(name.c_str());
    }
  }
  ~ScopedEnv() {
    if (had) {
      ::setenv(name.c_str(), old.c_str(), 1);
    } else {
      ::unsetenv(name.c_str());
    }
  }
};

// A proxy setting in the environment would send loopback requests elsewhere.
struct NoProxy {
  ScopedEnv a{"no_proxy", "127.0.0.1,localhost"};
  ScopedEnv b{"NO_PROXY", "127.0.0.1,localhost"};
};

bool have_shakespeare() {
  return attograd::testing::data_available(kShakespeareFile,
                                           "../shared is not beside this checkout");
}

bool have_downloads() { return attograd::testing::build_has(can_download(), "downloads"); }

bool have_bible() {
  return attograd::testing::data_available("/usr/bin/bible", "apt-get install bible-kjv");
}

}  // namespace

BOOST_AUTO_TEST_CASE(shakespeare_downloads_once_then_loads_from_the_cache_offline) {
  if (!have_downloads() || !have_shakespeare()) return;
  const NoProxy no_proxy;
  const std::string expected = read_bytes(kShakespeareFile);
  TempDir cache;
  CorpusOptions options;
  options.cache_dir = cache.path;
  std::vector<std::string> notes;
  options.log = [&](const std::string& line) { notes.push_back(line); };

  LoopbackHttpServer server(expected);
  options.shakespeare_url = server.url();
  const Corpus first = load_corpus("shakespeare", options);
  BOOST_TEST(first.name == "shakespeare");
  BOOST_TEST(first.fetched);
  BOOST_TEST(first.text.size() == kShakespeareBytes);
  BOOST_TEST(sha256_hex(first.text) == std::string(kShakespeareSha256));
  BOOST_TEST(first.text == expected);
  BOOST_TEST(first.origin == server.url());
  BOOST_TEST(first.path == cache.path / "tinyshakespeare.txt");
  BOOST_TEST(fs::exists(first.path));
  BOOST_TEST(fs::file_size(first.path) == kShakespeareBytes);
  BOOST_TEST(cache.entries() == std::vector<std::string>{"tinyshakespeare.txt"},
             boost::test_tools::per_element());
  BOOST_TEST(server.requests() == 1);
  BOOST_TEST(!notes.empty());
  BOOST_TEST_MESSAGE(first.describe());

  // With the server gone, only the cache can answer.
  server.stop();
  const Corpus second = load_corpus("shakespeare", options);
  BOOST_TEST(!second.fetched);
  BOOST_TEST(second.text == expected);
  BOOST_TEST(server.requests() == 1);
}

BOOST_AUTO_TEST_CASE(shakespeare_url_comes_from_the_environment_too) {
  if (!have_downloads() || !have_shakespeare()) return;
  const NoProxy no_proxy;
  TempDir cache;
  LoopbackHttpServer server(read_bytes(kShakespeareFile));
  const ScopedEnv url("ATTOGRAD_SHAKESPEARE_URL", server.url("from-env.txt").c_str());
  const ScopedEnv dir("ATTOGRAD_CACHE_DIR", cache.path.c_str());
  const Corpus corpus = load_corpus("shakespeare");  // default options: env decides both
  BOOST_TEST(corpus.origin == server.url("from-env.txt"));
  BOOST_TEST(corpus.path == cache.path / "tinyshakespeare.txt");
  BOOST_TEST(corpus.text.size() == kShakespeareBytes);
}

BOOST_AUTO_TEST_CASE(corrupted_download_is_a_checksum_error_and_caches_nothing) {
  if (!have_downloads() || !have_shakespeare()) return;
  const NoProxy no_proxy;
  std::string corrupted = read_bytes(kShakespeareFile);
  corrupted[corrupted.size() / 2] ^= 0x20;  // one flipped bit: same size, different hash
  TempDir cache;
  LoopbackHttpServer server(corrupted);
  CorpusOptions options;
  options.cache_dir = cache.path;
  options.shakespeare_url = server.url();
  expect_throw_with<std::runtime_error>([&] { load_corpus("shakespeare", options); },
                                        "checksum mismatch");
  expect_throw_with<std::runtime_error>([&] { load_corpus("shakespeare", options); },
                                        "expected sha256 " + std::string(kShakespeareSha256));
  expect_throw_with<std::runtime_error>([&] { load_corpus("shakespeare", options); },
                                        "got sha256 " + sha256_hex(corrupted));
  expect_throw_with<std::runtime_error>([&] { load_corpus("shakespeare", options); },
                                        "nothing was cached");
  BOOST_TEST(cache.entries().empty());

  // A truncated body: the size is named too.
  LoopbackHttpServer short_server(corrupted.substr(0, 1000));
  options.shakespeare_url = short_server.url();
  expect_throw_with<std::runtime_error>([&] { load_corpus("shakespeare", options); },
                                        "(1,000 bytes)");
  BOOST_TEST(cache.entries().empty());
}

BOOST_AUTO_TEST_CASE(http_errors_and_refused_connections_are_clear) {
  if (!have_downloads()) return;
  const NoProxy no_proxy;
  TempDir cache;
  CorpusOptions options;
  options.cache_dir = cache.path;
  LoopbackHttpServer server("irrelevant");
  options.shakespeare_url = server.url("missing");
  expect_throw_with<std::runtime_error>([&] { load_corpus("shakespeare", options); }, "HTTP 404");
  expect_throw_with<std::runtime_error>([&] { load_corpus("shakespeare", options); },
                                        "downloading " + server.url("missing") + " failed");
  server.stop();
  options.shakespeare_url = server.url();  // nobody listens on this port any more
  expect_throw_with<std::runtime_error>([&] { load_corpus("shakespeare", options); },
                                        "downloading " + server.url() + " failed");
  options.shakespeare_url = "ftp://127.0.0.1/input.txt";
  expect_throw_with<std::runtime_error>([&] { load_corpus("shakespeare", options); },
                                        "ftp://127.0.0.1/input.txt");
  BOOST_TEST(cache.entries().empty());
}

BOOST_AUTO_TEST_CASE(a_damaged_cache_file_is_reported_not_used) {
  TempDir cache;
  write_bytes(cache.path / "tinyshakespeare.txt", "First Citizen:\nnot the real file\n");
  CorpusOptions options;
  options.cache_dir = cache.path;
  options.shakespeare_url = "http://127.0.0.1:1/never-contacted";
  expect_throw_with<std::runtime_error>(
      [&] { load_corpus("shakespeare", options); },
      can_download() ? "delete it to download Tiny Shakespeare again"
                     : "replace it with the file from " + options.shakespeare_url);
}

// The cache is read the same way in every build: a build without downloads loads a Tiny
// Shakespeare put there by hand, and checks it.
BOOST_AUTO_TEST_CASE(a_cached_shakespeare_needs_no_download) {
  if (!have_shakespeare()) return;
  TempDir cache;
  write_bytes(cache.path / "tinyshakespeare.txt", read_bytes(kShakespeareFile));
  CorpusOptions options;
  options.cache_dir = cache.path;
  options.shakespeare_url = "http://127.0.0.1:1/never-contacted";
  const Corpus corpus = load_corpus("shakespeare", options);
  BOOST_TEST(!corpus.fetched);
  BOOST_TEST(corpus.text.size() == kShakespeareBytes);
}

// A build without libcurl refuses to download, naming the configure option and the package, and
// the other ways to the same text; it leaves the cache as it was.
BOOST_AUTO_TEST_CASE(a_build_without_downloads_says_how_to_get_them) {
  if (!attograd::testing::build_has(!can_download(), "no downloads (-DATTOGRAD_DOWNLOAD=OFF)"))
    return;
  TempDir cache;
  CorpusOptions options;
  options.cache_dir = cache.path;
  options.shakespeare_url = "http://127.0.0.1:1/never-contacted";
  const std::string cached = (cache.path / "tinyshakespeare.txt").string();
  for (const std::string& needle :
       {"Tiny Shakespeare is not in the cache (" + cached + ") and " + std::string(kNoDownloads),
        std::string("install libcurl4-openssl-dev"), std::string("-DATTOGRAD_DOWNLOAD=ON"),
        "or save " + options.shakespeare_url + " there yourself",
        std::string("or pass a local file path as the corpus")})
    expect_throw_with<std::runtime_error>([&] { load_corpus("shakespeare", options); }, needle);
  expect_throw_with<std::runtime_error>(
      [] { http_get("http://127.0.0.1:1/x", 100); },
      "cannot download http://127.0.0.1:1/x: " + std::string(kNoDownloads));
  BOOST_TEST(cache.entries().empty());
}

BOOST_AUTO_TEST_CASE(kjv_is_extracted_once_as_plain_prose) {
  if (!have_bible()) return;
  TempDir cache;
  CorpusOptions options;
  options.cache_dir = cache.path;
  const Corpus first = load_corpus("kjv", options);
  BOOST_TEST(first.fetched);
  BOOST_TEST(first.name == "kjv");
  BOOST_TEST(first.path == cache.path / "kjv.txt");
  BOOST_TEST(fs::exists(first.path));
  BOOST_TEST(cache.entries() == std::vector<std::string>{"kjv.txt"},
             boost::test_tools::per_element());
  BOOST_TEST(first.text.starts_with(
      "Genesis 1\n\nIn the beginning God created the heaven and the earth.\nAnd the earth was "
      "without form, and void; and darkness was upon the face of the deep. And the Spirit of "
      "God moved upon the face of the waters.\n"));
  BOOST_TEST(first.text.ends_with("\nThe grace of our Lord Jesus Christ be with you all. Amen.\n"));
  BOOST_TEST(
      first.text.find("\n\nRevelation 22\n\nAnd he shewed me a pure river of water of life") !=
      std::string::npos);
  BOOST_TEST(first.text.size() > 3'000'000u);
  BOOST_TEST(first.text.find("\n\nPsalms 23\n\nThe LORD is my shepherd; I shall not want.\n") !=
             std::string::npos);
  // No verse numbers, no indentation, no wrapped lines left.
  BOOST_TEST(first.text.find("  ") == std::string::npos);
  BOOST_TEST(first.text.find("\n ") == std::string::npos);
  BOOST_TEST(first.text.find(" \n") == std::string::npos);
  // Lines: per chapter a heading and a blank line, between chapters a blank line, one line per
  // verse. The KJV has 1,189 chapters and 31,102 verses.
  size_t lines = 0, distinct = 0;
  bool seen[256] = {};
  for (unsigned char c : first.text) {
    lines += c == '\n';
    distinct += !seen[c];
    seen[c] = true;
  }
  BOOST_TEST(lines == 31102u + 2 * 1189u + 1188u);
  BOOST_TEST_MESSAGE("kjv: " << first.text.size() << " bytes, " << lines << " lines, " << distinct
                             << " distinct bytes; " << first.describe());

  const Corpus second = load_corpus("kjv", options);
  BOOST_TEST(!second.fetched);
  BOOST_TEST(second.text == first.text);
}

BOOST_AUTO_TEST_CASE(kjv_without_the_bible_program_says_how_to_install_it) {
  TempDir cache;
  CorpusOptions options;
  options.cache_dir = cache.path;
  options.bible_program = "/nonexistent/bible";
  expect_throw_with<std::runtime_error>(
      [&] { load_corpus("kjv", options); },
      "the default corpus needs Debian's bible-kjv package: sudo apt-get install bible-kjv "
      "(or pass --corpus shakespeare or a file path)");
  options.bible_program = "attograd-no-such-program";  // searched on PATH
  expect_throw_with<std::runtime_error>([&] { load_corpus("kjv", options); },
                                        "sudo apt-get install bible-kjv");
  BOOST_TEST(cache.entries().empty());
}

BOOST_AUTO_TEST_CASE(clean_kjv_unwraps_verses_and_keeps_headings) {
  const std::string raw =
      "\nGenesis 1\n\n"
      "  1 In the beginning God created the heaven and the earth.\n"
      "  2 And the earth was without form, and void; and darkness was upon the face of\n"
      "the deep.  And the Spirit moved. \n"
      "\n1 John 5\n\n"
      "  10 He that believeth\n"
      "on the Son.\n"
      "  11\n"  // a narrow wrap width can leave a verse number alone on its line
      "And this is the record.\n";
  BOOST_TEST(clean_kjv(raw) ==
             "Genesis 1\n\n"
             "In the beginning God created the heaven and the earth.\n"
             "And the earth was without form, and void; and darkness was upon the face of the "
             "deep. And the Spirit moved.\n"
             "\n1 John 5\n\n"
             "He that believeth on the Son.\n"
             "And this is the record.\n");
  expect_throw_with<std::runtime_error>([] { clean_kjv("\nGenesis\n\n  1 text\n"); }, "line 2");
  expect_throw_with<std::runtime_error>([] { clean_kjv("\nGenesis 1\n\n  x text\n"); }, "line 4");
  expect_throw_with<std::runtime_error>([] { clean_kjv("loose text\nmore text\n"); }, "line 1");
  expect_throw_with<std::runtime_error>([] { clean_kjv(""); }, "0 chapter headings");
}

BOOST_AUTO_TEST_CASE(file_corpora_and_their_errors) {
  TempDir dir;
  const fs::path good = dir.path / "good.txt";
  write_bytes(good,
              "\xEF\xBB\xBF"
              "caf\xC3\xA9\n");  // with a byte order mark
  const Corpus corpus = load_corpus(good.string());
  BOOST_TEST(corpus.text == "caf\xC3\xA9\n");  // the mark is gone
  BOOST_TEST(corpus.name == good.string());
  BOOST_TEST(corpus.path == good);
  BOOST_TEST(!corpus.fetched);

  const fs::path missing = dir.path / "missing.txt";
  expect_throw_with<std::runtime_error>([&] { load_corpus(missing.string()); },
                                        missing.string() + " does not exist");
  const fs::path empty = dir.path / "empty.txt";
  write_bytes(empty, "");
  expect_throw_with<std::runtime_error>([&] { load_corpus(empty.string()); },
                                        empty.string() + " is empty");
  const fs::path latin1 = dir.path / "latin1.txt";
  write_bytes(latin1, "na\xEFve caf\xE9");  // ISO-8859-1, not UTF-8
  expect_throw_with<std::runtime_error>([&] { load_corpus(latin1.string()); },
                                        "invalid UTF-8 at byte offset 2");
  expect_throw_with<std::runtime_error>([&] { load_corpus(latin1.string()); },
                                        latin1.string() + " is not valid UTF-8");
  expect_throw_with<std::runtime_error>([&] { load_corpus(dir.path.string()); }, "is a directory");
  expect_throw_with<std::runtime_error>([&] { load_corpus(""); }, "empty corpus name");

  // A name with a newline and an escape byte is one printable line in every message and in the
  // set-up line (describe), missing, empty, or read.
  const std::string odd = (dir.path / "c\nd\x1b[31m.txt").string();
  const std::string shown = (dir.path / "c\\nd\\x1b[31m.txt").string();
  expect_throw_with<std::runtime_error>([&] { load_corpus(odd); }, shown + " does not exist");
  write_bytes(odd, "");
  expect_throw_with<std::runtime_error>([&] { load_corpus(odd); }, shown + " is empty");
  write_bytes(odd, "na\xEFve");
  expect_throw_with<std::runtime_error>([&] { load_corpus(odd); }, shown + " is not valid UTF-8");
  write_bytes(odd, "text\n");
  const std::string line = load_corpus(odd).describe();
  BOOST_TEST(line.find(shown + ": 5 bytes from " + shown) != std::string::npos, line);
  BOOST_TEST(line.find_first_of("\n\x1b") == std::string::npos, line);
}

BOOST_AUTO_TEST_CASE(default_cache_dir_follows_the_environment) {
  ScopedEnv attograd("ATTOGRAD_CACHE_DIR", "/tmp/a");
  ScopedEnv xdg("XDG_CACHE_HOME", "/tmp/xdg");
  ScopedEnv home("HOME", "/tmp/home");
  BOOST_TEST(default_cache_dir() == fs::path("/tmp/a"));
  ::unsetenv("ATTOGRAD_CACHE_DIR");
  BOOST_TEST(default_cache_dir() == fs::path("/tmp/xdg/attograd"));
  ::setenv("XDG_CACHE_HOME", "relative/ignored", 1);
  BOOST_TEST(default_cache_dir() == fs::path("/tmp/home/.cache/attograd"));
  ::unsetenv("XDG_CACHE_HOME");
  ::unsetenv("HOME");
  expect_throw_with<std::runtime_error>([] { default_cache_dir(); }, "ATTOGRAD_CACHE_DIR");
}

BOOST_AUTO_TEST_CASE(atomic_writes_replace_and_leave_no_temporary_file) {
  TempDir dir;
  const fs::path path = dir.path / "out.txt";
  nn::write_file_atomically(path, "first");
  nn::write_file_atomically(path, "second version");
  BOOST_TEST(read_bytes(path) == "second version");
  BOOST_TEST(dir.entries() == std::vector<std::string>{"out.txt"},
             boost::test_tools::per_element());
  expect_throw_with<std::runtime_error>(
      [&] { nn::write_file_atomically(dir.path / "no-such-dir" / "x.txt", "data"); },
      "no-such-dir");
  // A cache directory that cannot be created names itself.
  CorpusOptions options;
  options.cache_dir = path / "sub";  // under a regular file
  expect_throw_with<std::runtime_error>([&] { load_corpus("kjv", options); },
                                        "cannot create the cache directory");
  // Its name as one printable line, as every file a corpus message names: a cache directory
  // comes from the environment (ATTOGRAD_CACHE_DIR, XDG_CACHE_HOME, HOME) and may hold anything.
  options.cache_dir = path / "c\nd\x1b[31m";
  expect_throw_with<std::runtime_error>(
      [&] { load_corpus("kjv", options); },
      "cannot create the cache directory " + (path / "c\\nd\\x1b[31m").string() + ": ");
}

// The example: a CRLF corpus made '\r' a token. CRLF and CR line ends become LF, the
// count is reported, and keep_cr keeps the bytes.
BOOST_AUTO_TEST_CASE(line_ends_of_a_users_file_become_lf) {
  TempDir dir;
  const fs::path file = dir.path / "windows.txt";
  write_bytes(file,
              "\xEF\xBB\xBF"
              "one\r\ntwo\rthree\n\r\nfour\r");
  const Corpus corpus = load_corpus(file.string());
  BOOST_TEST(corpus.text == "one\ntwo\nthree\n\nfour\n");
  BOOST_TEST(corpus.line_ends_normalized == 4u);
  BOOST_TEST(corpus.describe() == file.string() + ": 20 bytes from " + file.string() +
                                      ", 4 CRLF/CR line ends made LF (--keep-cr keeps them)");
  CorpusOptions keep;
  keep.keep_cr = true;
  const Corpus kept = load_corpus(file.string(), keep);
  BOOST_TEST(kept.text == "one\r\ntwo\rthree\n\r\nfour\r");  // only the byte order mark goes
  BOOST_TEST(kept.line_ends_normalized == 0u);
  BOOST_TEST(kept.describe() == file.string() + ": 22 bytes from " + file.string());
  // Plain LF text is left alone and says nothing about line ends.
  const fs::path unix_file = dir.path / "unix.txt";
  write_bytes(unix_file, "a\nb\n");
  BOOST_TEST(load_corpus(unix_file.string()).describe().find("line ends") == std::string::npos);
}

// The page reads a chosen file with the same rule as load_corpus (its bytes arrive from the
// browser, not from a path): the byte order mark goes, CRLF and CR become LF, keep_cr keeps them.
BOOST_AUTO_TEST_CASE(normalize_user_text_is_load_corpus_rule) {
  std::string text = "\xEF\xBB\xBFone\r\ntwo\rthree\n";
  BOOST_TEST(normalize_user_text(text) == 2u);
  BOOST_TEST(text == "one\ntwo\nthree\n");
  std::string kept = "\xEF\xBB\xBFone\r\n";
  BOOST_TEST(normalize_user_text(kept, true) == 0u);
  BOOST_TEST(kept == "one\r\n");
  std::string inner = "a\xEF\xBB\xBF\n";  // only a leading mark is one
  BOOST_TEST(normalize_user_text(inner) == 0u);
  BOOST_TEST(inner == "a\xEF\xBB\xBF\n");
}

// The example: --corpus /dev/zero read until memory ran out. Devices are refused at
// once, files over the limit from their size, and pipes at the limit.
BOOST_AUTO_TEST_CASE(corpus_files_are_size_checked) {
  expect_throw_with<std::runtime_error>(
      [] { load_corpus("/dev/zero"); },
      "corpus file /dev/zero is a character device, not a text file");
  TempDir dir;
  const fs::path file = dir.path / "big.txt";
  write_bytes(file, std::string(1001, 'a'));
  CorpusOptions small;
  small.max_bytes = 1000;
  expect_throw_with<std::runtime_error>(
      [&] { load_corpus(file.string(), small); },
      "corpus file " + file.string() +
          " is 1,001 bytes, over the 1,000-byte limit for a corpus file (it and its "
          "token ids are held in memory); use a smaller file or a part of it");
  small.max_bytes = 1001;
  BOOST_TEST(load_corpus(file.string(), small).text.size() == 1001u);
  // The default limit, against a sparse file of 300 MB that takes no disk space.
  const fs::path huge = dir.path / "huge.txt";
  write_bytes(huge, "");
  fs::resize_file(huge, 300'000'000);
  expect_throw_with<std::runtime_error>([&] { load_corpus(huge.string()); },
                                        "is 300,000,000 bytes, over the 268,435,456-byte limit");
  // A pipe is read to its end, or to the limit.
  const fs::path fifo = dir.path / "fifo";
  BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto previous =
      std::signal(SIGPIPE, SIG_IGN);  // the reader may give up before the writer ends
  auto feed = [&](std::string bytes) {
    return std::thread([&fifo, bytes] {
      const int fd = ::open(fifo.c_str(), O_WRONLY);
      if (fd >= 0) {
        [[maybe_unused]] const ssize_t n = ::write(fd, bytes.data(), bytes.size());
        ::close(fd);
      }
    });
  };
  std::thread writer = feed("piped\r\ntext\r\n");
  const Corpus piped = load_corpus(fifo.string());
  writer.join();
  BOOST_TEST(piped.text == "piped\ntext\n");
  writer = feed(std::string(3000, 'p'));
  small.max_bytes = 1000;
  expect_throw_with<std::runtime_error>([&] { load_corpus(fifo.string(), small); },
                                        "corpus file " + fifo.string() +
                                            " gives more than 1,000 bytes, over the "
                                            "1,000-byte limit");
  writer.join();
  std::signal(SIGPIPE, previous);
}
