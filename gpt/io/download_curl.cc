// gpt/io/download.h with libcurl (ATTOGRAD_DOWNLOAD=ON, or AUTO with libcurl found).
#include <curl/curl.h>

#include <memory>
#include <mutex>
#include <stdexcept>

#include "gpt/io/download.h"

namespace attograd::gpt {

namespace {

void curl_global_once() {
  // curl_global_init is not thread-safe and must run before any other curl call.
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      throw std::runtime_error("curl_global_init failed: cannot download anything");
    }
  });
}

struct Download {
  std::string body;
  size_t max_bytes = 0;
  bool too_big = false;
};

size_t append_body(char* data, size_t size, size_t count, void* user) {
  auto* download = static_cast<Download*>(user);
  const size_t n = size * count;
  if (download->body.size() + n > download->max_bytes) {
    download->too_big = true;
    return 0;  // makes curl abort with CURLE_WRITE_ERROR
  }
  download->body.append(data, n);
  return n;
}

}  // namespace

bool can_download() { return true; }

std::string http_get(const std::string& url, size_t max_bytes, const HttpGetOptions& options) {
  curl_global_once();
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) throw std::runtime_error("curl_easy_init failed: cannot download " + url);
  Download download;
  download.max_bytes = max_bytes;
  char error_buffer[CURL_ERROR_SIZE] = {0};
  CURL* h = curl.get();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);  // a 404 page is not a corpus
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);     // no SIGALRM in a multi-threaded program
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, options.connect_timeout_seconds);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, options.stall_timeout_seconds);
  curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");  // gzip if offered; curl decodes it
  curl_easy_setopt(h, CURLOPT_USERAGENT, "attograd (libcurl)");
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &download);
  const CURLcode code = curl_easy_perform(h);
  if (code != CURLE_OK) {
    long http_status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &http_status);
    std::string why = error_buffer[0] ? error_buffer : curl_easy_strerror(code);
    if (download.too_big) {
      why = "the response is larger than " + std::to_string(max_bytes) + " bytes";
    }
    throw std::runtime_error("downloading " + url + " failed: " + why +
                             (http_status ? " (HTTP " + std::to_string(http_status) + ")" : ""));
  }
  return std::move(download.body);
}

}  // namespace attograd::gpt
