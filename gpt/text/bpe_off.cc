// gpt/text/bpe_tokenizer.h in a build without PCRE2 (-DATTOGRAD_BPE=OFF: the WebAssembly page, for
// which Debian packages no PCRE2): GPT-2's tokenizer cannot be made, and saying so is all this
// file does. The char tokenizer, which femto, pico and the lecture models use, is unaffected.
// No BpeTokenizer object can exist here (both ways of making one throw), so its virtual
// members, which the vtable needs, are never called.
#include <stdexcept>
#include <string>

#include "gpt/text/bpe_tokenizer.h"

namespace attograd::gpt {
namespace {
[[noreturn]] void refuse(const std::string& what) {
  throw std::runtime_error(what +
                           ": this attograd was built without GPT-2's BPE tokenizer "
                           "(-DATTOGRAD_BPE=OFF, or no PCRE2 when it was configured; the "
                           "WebAssembly build never has it): use the char tokenizer, or a native "
                           "build with libpcre2-dev installed (scripts/install-deps.sh)");
}
}  // namespace

struct BpeTokenizer::Impl {};

BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;
BpeTokenizer::~BpeTokenizer() = default;

BpeTokenizer BpeTokenizer::gpt2() { refuse("cannot load the gpt2 tokenizer"); }
std::vector<std::filesystem::path> BpeTokenizer::gpt2_files() {
  refuse("cannot find the gpt2 tokenizer's files");
}

BpeTokenizer BpeTokenizer::from_files(const std::filesystem::path& encoder_json,
                                      const std::filesystem::path&) {
  refuse("cannot load a BPE vocabulary from '" + encoder_json.string() + "'");
}

std::vector<int64_t> BpeTokenizer::encode(std::string_view) const { refuse("BPE encode"); }
std::string BpeTokenizer::decode(std::span<const int64_t>) const { refuse("BPE decode"); }
std::string BpeTokenizer::token_bytes(int64_t) const { refuse("BPE token_bytes"); }

}  // namespace attograd::gpt
