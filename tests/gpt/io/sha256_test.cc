// Tests gpt/io/sha256: the NIST example vectors of FIPS 180-4 (csrc.nist.gov, "SHA256.pdf" and the
// long-message vector), every padding case around the block boundary, and real files against
// the `sha256sum` of GNU coreutils (and OpenSSL's `openssl dgst`, when installed): the digest
// this build records in checkpoints is the one those tools give.
#define BOOST_TEST_MODULE sha256
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "gpt/io/sha256.h"
#include "tests/examples/cli_run.h"
#include "tests/test_util.h"

using attograd::gpt::sha256;
using attograd::gpt::sha256_hex;
using attograd::testing::run_program;
namespace fs = std::filesystem;

namespace {

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The first word a tool prints for `path`: "<hex>  <path>" (sha256sum), "<hex> *<path>"
// (openssl dgst -r).
std::string tool_digest(const std::string& program, const std::string& args, const fs::path& path) {
  const auto r = run_program(program, args + " '" + path.string() + "'", false);
  BOOST_TEST_REQUIRE(r.exit_code == 0, program << " " << args << " failed");
  return r.out.substr(0, r.out.find_first_of(" \n"));
}

}  // namespace

BOOST_AUTO_TEST_CASE(nist_vectors) {
  BOOST_TEST(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // One block.
  BOOST_TEST(sha256_hex("abc") ==
             "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 448 bits: the padding's length no longer fits in the first block, so a second one is added.
  BOOST_TEST(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
             "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // 896 bits.
  BOOST_TEST(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjk"
                        "lmnopqklmnopqrlmnopqrsmnopqrstnopqrstu") ==
             "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  // One million times 'a'.
  BOOST_TEST(sha256_hex(std::string(1'000'000, 'a')) ==
             "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

BOOST_AUTO_TEST_CASE(the_hex_digest_is_the_digest_in_lower_case) {
  const auto digest = sha256("abc");
  BOOST_TEST(digest[0] == 0xba);
  BOOST_TEST(digest[31] == 0xad);
}

// Lengths around each padding case (the rest of a block with room for the 9 bytes of padding,
// without, exactly full), against sha256sum on the same bytes: every byte value occurs.
BOOST_AUTO_TEST_CASE(every_padding_case_matches_sha256sum) {
  const fs::path dir = attograd::testing::fresh_temp_dir("sha256");
  std::string bytes;
  for (int i = 0; i < 300; ++i) bytes += static_cast<char>((i * 131 + 7) & 0xFF);
  for (const size_t n : {1, 54, 55, 56, 57, 63, 64, 65, 111, 119, 120, 127, 128, 129, 191, 300}) {
    const fs::path file = dir / ("bytes" + std::to_string(n));
    std::ofstream(file, std::ios::binary) << bytes.substr(0, n);
    BOOST_TEST(sha256_hex(bytes.substr(0, n)) == tool_digest("sha256sum", "", file), n << " bytes");
  }
  fs::remove_all(dir);
}

// Real files of several megabytes: this test's own executable, and GPT-2's vocabulary.
BOOST_AUTO_TEST_CASE(real_files_match_sha256sum_and_openssl) {
  const fs::path self = fs::read_symlink("/proc/self/exe");
  const fs::path vocab = fs::path(ATTOGRAD_SOURCE_DIR) / "data" / "gpt2" / "encoder.json";
  const bool have_openssl = fs::exists("/usr/bin/openssl");
  if (!have_openssl) BOOST_TEST_MESSAGE("no /usr/bin/openssl: compared with sha256sum only");
  for (const fs::path& file : {self, vocab}) {
    const std::string bytes = read_bytes(file);
    BOOST_TEST_REQUIRE(bytes.size() > 100'000u, file);
    const std::string ours = sha256_hex(bytes);
    BOOST_TEST(ours == tool_digest("sha256sum", "", file), file);
    if (have_openssl) BOOST_TEST(ours == tool_digest("/usr/bin/openssl", "dgst -sha256 -r", file));
    BOOST_TEST_MESSAGE(file.string() << ": " << bytes.size() << " bytes, sha256 " << ours);
  }
}
