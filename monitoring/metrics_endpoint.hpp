// The HTTP endpoint Prometheus scrapes: GET /metrics answers with the exposition text a callback
// produces (text/plain; version=0.0.4; charset=utf-8). Every other path is 404, other methods
// 405. Served by cpp-httplib (Debian's libcpp-httplib-dev) on its own threads, so a slow or
// malicious client never touches training: requests have read/write timeouts, headers are bounded,
// and concurrent scrapes are served by a small thread pool.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace herd::monitoring {

class metrics_endpoint {
public:
  /// Binds `bind_address`:`port` (port 0 picks a free one) and starts serving. Throws
  /// std::runtime_error naming the address when it cannot bind (in use, no permission).
  metrics_endpoint(const std::string& bind_address, int port,
                   std::function<std::string()> exposition);
  /// Stops serving and joins the server's threads. A client that keeps a request open delays
  /// this by at most a few seconds; its thread then finishes on its own, and the callback is
  /// never called again once the destructor has returned.
  ~metrics_endpoint();

  metrics_endpoint(const metrics_endpoint&) = delete;
  metrics_endpoint& operator=(const metrics_endpoint&) = delete;

  /// The port it listens on (the chosen one when constructed with 0).
  int port() const;
  const std::string& bind_address() const;

  /// Scrapes served so far (requests to /metrics answered with 200).
  std::uint64_t scrapes() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace herd::monitoring
