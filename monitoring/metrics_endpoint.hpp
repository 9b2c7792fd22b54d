// The HTTP endpoint Prometheus scrapes: GET /metrics answers with the exposition text a callback
// produces (text/plain; version=0.0.4; charset=utf-8). Every other path is 404, other methods
// 405. One thread serves every connection through poll(), so a slow or idle client never holds up
// a scrape, and metrics_endpoint_limits bounds what clients can take: connections, descriptors,
// time and memory.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace herd::monitoring {

/// What clients may take from an endpoint. The defaults suit Prometheus, which sends its request
/// as soon as it has connected and reads the reply at once.
struct metrics_endpoint_limits {
  /// Connections open at once. The endpoint lowers it to 1/16 of the process's soft descriptor
  /// limit (RLIMIT_NOFILE), so with the usual 1,024 it holds at most 64 sockets besides its
  /// listening one and one eventfd. At the cap a new connection replaces the oldest open one
  /// (those whose reply is already sent first, then those still sending their request), which is
  /// then closed without a reply: idle clients cannot lock scrapers out.
  std::size_t max_connections = 64;
  /// From accept to the last byte of the request head. A client that has not sent it by then gets
  /// 408 and is disconnected, however steadily it trickles; one that sent nothing is just closed.
  std::chrono::milliseconds request_deadline{5000};
  /// From the reply's first byte to its last; a client that reads slower is disconnected.
  std::chrono::milliseconds reply_deadline{10000};
  /// Request line and headers together; a longer head is answered 431 (414 when the request line
  /// alone is longer).
  std::size_t max_request_head_bytes = 8192;
};

class metrics_endpoint {
public:
  /// Binds `bind_address`:`port` (port 0 picks a free one) and starts serving. Throws
  /// std::runtime_error naming the address when it cannot bind (in use, no permission), and
  /// std::invalid_argument when a limit is zero.
  metrics_endpoint(const std::string& bind_address, int port,
                   std::function<std::string()> exposition, metrics_endpoint_limits limits = {});
  /// Stops serving, closes every connection and joins the serving thread: at once, or as soon as
  /// a running call of the callback returns. The callback is never called again afterwards.
  ~metrics_endpoint();

  metrics_endpoint(const metrics_endpoint&) = delete;
  metrics_endpoint& operator=(const metrics_endpoint&) = delete;

  /// The port it listens on (the chosen one when constructed with 0).
  int port() const;
  /// The address it listens on ("[::1]" given is "::1").
  const std::string& bind_address() const;
  /// Where to scrape it: "http://127.0.0.1:9464/metrics", "http://[::1]:9464/metrics"; this
  /// host's name where it listens on every address (0.0.0.0, ::).
  std::string url() const;

  /// The limits it applies: those it was given, with max_connections lowered to fit the
  /// descriptor limit.
  const metrics_endpoint_limits& limits() const;

  /// Scrapes served so far (requests to /metrics answered with 200).
  std::uint64_t scrapes() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace herd::monitoring
