// A tiny HTTP/1.1 server on 127.0.0.1 for tests that must not touch the internet.
//
// It listens on an ephemeral port (bind to port 0, ask the kernel which one it got) and a
// background thread answers each request with one fixed body: GET /<anything but "missing">
// gets "200 OK" and the body, GET /missing gets "404 Not Found". It is bounded three ways so a
// broken test can never hang the suite: at most `max_requests` connections, a deadline after
// which the thread stops by itself, and a receive timeout on each connection. stop() (and the
// destructor) ends it at once and closes the port, so a later connect is refused; so does
// reaching max_requests or the deadline.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

namespace attograd::testing {

/// Serves `body` over HTTP on 127.0.0.1 from a background thread until stop().
class LoopbackHttpServer {
 public:
  /// Starts listening at once. Throws std::runtime_error if a socket call fails.
  explicit LoopbackHttpServer(std::string body, int max_requests = 8,
                              std::chrono::seconds lifetime = std::chrono::seconds(60))
      : body_(std::move(body)), max_requests_(max_requests) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) fail("socket");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;  // ephemeral: never collides with another test or service
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) fail("bind");
    if (::listen(listen_fd_, 8) != 0) fail("listen");
    socklen_t len = sizeof addr;
    if (::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      fail("getsockname");
    }
    port_ = ntohs(addr.sin_port);
    const auto deadline = std::chrono::steady_clock::now() + lifetime;
    thread_ = std::thread([this, deadline] { serve(deadline); });
  }

  LoopbackHttpServer(const LoopbackHttpServer&) = delete;
  LoopbackHttpServer& operator=(const LoopbackHttpServer&) = delete;
  ~LoopbackHttpServer() { stop(); }

  /// "http://127.0.0.1:<port>/<path>".
  std::string url(const std::string& path = "input.txt") const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/" + path;
  }
  /// Number of requests answered so far.
  int requests() const { return requests_.load(); }

  /// Stops the thread, which closes the listening socket; idempotent.
  void stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  [[noreturn]] void fail(const char* what) {
    const std::string message =
        std::string("LoopbackHttpServer: ") + what + ": " + std::strerror(errno);
    if (listen_fd_ >= 0) ::close(listen_fd_);
    throw std::runtime_error(message);
  }

  void serve(std::chrono::steady_clock::time_point deadline) {
    while (!stopping_ && requests_ < max_requests_ && std::chrono::steady_clock::now() < deadline) {
      // Poll in short slices so stop() and the deadline take effect promptly.
      pollfd pfd{listen_fd_, POLLIN, 0};
      if (::poll(&pfd, 1, 50) <= 0) continue;
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      answer(fd);
      ::close(fd);
      ++requests_;
    }
    // Closing here, not only in stop(), makes a finished server refuse connections at once
    // instead of leaving a client waiting in the listen backlog.
    ::close(listen_fd_);
    listen_fd_ = -1;
  }

  void answer(int fd) {
    timeval timeout{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    // Read the request head (bounded at 16 KiB); only its first line matters here.
    std::string request;
    char buffer[4096];
    while (request.find("\r\n\r\n") == std::string::npos && request.size() < (16u << 10)) {
      const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n <= 0) return;
      request.append(buffer, static_cast<size_t>(n));
    }
    const bool missing = request.starts_with("GET /missing ");
    const std::string status = missing ? "404 Not Found" : "200 OK";
    const std::string& body = missing ? status : body_;
    const std::string head = "HTTP/1.1 " + status + "\r\nContent-Type: text/plain\r\n" +
                             "Content-Length: " + std::to_string(body.size()) +
                             "\r\nConnection: close\r\n\r\n";
    if (send_all(fd, head)) send_all(fd, body);
  }

  static bool send_all(int fd, const std::string& data) {
    size_t sent = 0;
    while (sent < data.size()) {
      const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }

  std::string body_;
  int max_requests_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> requests_{0};
  std::thread thread_;
};

}  // namespace attograd::testing
