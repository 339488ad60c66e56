// SHA-256 (FIPS 180-4, section 6.2), attograd's own: the digest that identifies a corpus. A
// download is checked against it (gpt/text/corpus.h), and a checkpoint records it so that `train
// --resume` refuses a corpus whose text has changed.
//
// Why not OpenSSL, which the project used before: the rule is that a well-kept library beats
// code of our own, unless the library cannot go where the engine must go. Resume needs the
// digest in every build, the WebAssembly one included, and OpenSSL is not available there; a
// fallback beside it would be two code paths for one fact. This one is about 60 lines in the
// standard's own words, checked against the NIST vectors and against `sha256sum` on real files
// (tests/gpt/io/sha256_test.cc). Scalar, it hashes 100-200 MB/s on the 2-core reference VM: 30 ms
// for the King James Bible, about 2 s for the largest corpus (256 MiB), less than encoding it
// takes; speed is not what it is for.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace attograd::gpt {

/// The 32-byte SHA-256 digest of `bytes`. Allocates nothing and never throws.
std::array<uint8_t, 32> sha256(std::string_view bytes);

/// sha256() as 64 lower-case hex digits, as `sha256sum` prints it.
std::string sha256_hex(std::string_view bytes);

}  // namespace attograd::gpt
