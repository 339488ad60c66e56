// HTTP(S) downloads: the one place attograd reaches the network (named corpora such as Tiny
// Shakespeare, gpt/text/corpus.h). Built with libcurl unless configured without downloads
// (-DATTOGRAD_DOWNLOAD=OFF, or AUTO with no libcurl found: the core build of scripts/core.sh and
// the WebAssembly page). Either way the API is the same; without libcurl, http_get refuses and
// says what brings it (kNoDownloads), and everything else works: a corpus already in the cache
// or a local file needs no download.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace attograd::gpt {

/// Whether this build can download (ATTOGRAD_DOWNLOAD, libcurl).
bool can_download();

/// What a build without downloads says, and how to get them.
inline constexpr std::string_view kNoDownloads =
    "this attograd was built without downloads (-DATTOGRAD_DOWNLOAD=OFF, or no libcurl when it "
    "was configured): install libcurl4-openssl-dev (scripts/install-deps.sh) and configure with "
    "-DATTOGRAD_DOWNLOAD=ON";

/// How long a download may wait.
struct HttpGetOptions {
  /// Seconds to wait for a TCP/TLS connection before giving up.
  long connect_timeout_seconds = 30;
  /// Seconds a download may stall (below 1 KiB/s) before giving up. There is no limit on the
  /// total time, so a slow but working link still succeeds.
  long stall_timeout_seconds = 60;
};

/// GETs `url` (http:// or https:// only, following up to 10 redirects; an HTTP error status is a
/// failure: a 404 page is not a corpus) and returns the body. Throws std::runtime_error naming
/// the URL, curl's explanation and the HTTP status ("downloading URL failed: ... (HTTP 404)"),
/// or a body over max_bytes (stopped there); in a build without downloads, always, with
/// kNoDownloads.
std::string http_get(const std::string& url, size_t max_bytes, const HttpGetOptions& options = {});

}  // namespace attograd::gpt
