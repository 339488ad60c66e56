// gpt/io/download.h in a build without libcurl (-DATTOGRAD_DOWNLOAD=OFF): every download refused,
// saying which option and package bring them.
#include <stdexcept>

#include "gpt/io/download.h"

namespace attograd::gpt {

bool can_download() { return false; }

std::string http_get(const std::string& url, size_t, const HttpGetOptions&) {
  throw std::runtime_error("cannot download " + url + ": " + std::string(kNoDownloads));
}

}  // namespace attograd::gpt
