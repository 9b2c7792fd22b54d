// The /metrics endpoint (metrics_endpoint.hpp): one thread, non-blocking sockets and poll().
//
// Why not a general HTTP library: cpp-httplib, which served this before, timed each read rather
// than the request and queued accepted sockets without bound for a pool of four threads, so four
// clients trickling a byte at a time blocked every scrape and a thousand idle ones used up the
// process's descriptors. Here each connection lives through three phases, each with one deadline
// (request head, reply, lingering close), one thread multiplexes them all, and the number open is
// capped. Every reply closes its connection (no keep-alive): Prometheus connects once per scrape
// either way. This file is the connection machinery; http_request.cpp reads request heads, decides
// which are refused, and writes the replies' bytes.
#include "monitoring/metrics_endpoint.hpp"

#include "kernels/check.hpp"
#include "monitoring/http_request.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdexcept>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

namespace herd::monitoring {

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr const char* exposition_content_type = "text/plain; version=0.0.4; charset=utf-8";

// The connection cap is at most this fraction of the soft descriptor limit, so the endpoint can
// never be what pushes training into "Too many open files".
constexpr rlim_t descriptor_share_divisor = 16;
// After its reply the server shuts down its sending side and reads until the client closes, at
// most this long and this much: closing with unread bytes (a body, the rest of a refused head)
// makes the kernel send a reset, which can destroy the reply before the client has read it.
constexpr auto linger_time = 2s;
constexpr std::size_t linger_max_bytes = std::size_t{1} << 20;
// How long accepting pauses when the process is out of descriptors or memory.
constexpr auto accept_pause = 100ms;
constexpr std::size_t read_chunk_bytes = 4096;

// "::1" -> "[::1]": an IPv6 address before ":port" or in a URL is bracketed.
std::string host_part(const std::string& address) {
  return address.find(':') != std::string::npos ? "[" + address + "]" : address;
}

// "[::1]" -> "::1": the bracketed form a user copies from a URL binds as the address it holds.
std::string unbracketed(const std::string& address) {
  if (address.size() >= 2 && address.front() == '[' && address.back() == ']')
    return address.substr(1, address.size() - 2);
  return address;
}

std::string endpoint_name(const std::string& address, int port) {
  return host_part(address) + ":" + std::to_string(port);
}

/// Owns one descriptor; closes it when destroyed or reset.
class file_descriptor {
public:
  file_descriptor() = default;
  explicit file_descriptor(int descriptor) : descriptor_(descriptor) {}
  ~file_descriptor() { reset(); }
  file_descriptor(file_descriptor&& other) noexcept
      : descriptor_(std::exchange(other.descriptor_, -1)) {}
  file_descriptor& operator=(file_descriptor&& other) noexcept {
    if (this != &other) {
      reset();
      descriptor_ = std::exchange(other.descriptor_, -1);
    }
    return *this;
  }
  file_descriptor(const file_descriptor&) = delete;
  file_descriptor& operator=(const file_descriptor&) = delete;

  int get() const { return descriptor_; }
  bool is_open() const { return descriptor_ >= 0; }
  void reset() {
    if (descriptor_ >= 0)
      ::close(descriptor_);
    descriptor_ = -1;
  }

private:
  int descriptor_ = -1;
};

enum class connection_phase {
  reading_request, // until the head is complete: request_deadline from accept
  writing_reply,   // until the last byte is sent: reply_deadline
  lingering,       // sending side shut, reading until the client closes: linger_time
};

struct connection {
  file_descriptor socket;
  connection_phase phase = connection_phase::reading_request;
  clock_type::time_point accepted_at;
  clock_type::time_point deadline;
  std::string received;
  std::string outgoing;
  std::size_t sent_bytes = 0;
  std::size_t drained_bytes = 0;
};

/// Which connection goes first when the cap is reached: one whose reply is out, then one still
/// sending its request, then one still being answered; the oldest first within each.
int eviction_order(connection_phase phase) {
  switch (phase) {
  case connection_phase::lingering:
    return 0;
  case connection_phase::reading_request:
    return 1;
  case connection_phase::writing_reply:
    return 2;
  }
  return 2;
}

/// Closes with a reset instead of a FIN: the kernel drops what is still queued for a client that
/// stopped reading rather than keep trying to deliver it.
void close_abortively(file_descriptor& socket) {
  const linger abort_at_once{1, 0};
  ::setsockopt(socket.get(), SOL_SOCKET, SO_LINGER, &abort_at_once, sizeof(abort_at_once));
  socket.reset();
}

class server {
public:
  server(file_descriptor listener, file_descriptor wake, std::function<std::string()> exposition,
         const metrics_endpoint_limits& limits)
      : listener_(std::move(listener)), wake_(std::move(wake)), exposition_(std::move(exposition)),
        limits_(limits) {
    // A GET carries no body: the default bound on one (4 KiB) is kept.
    request_limits_.max_head_bytes = limits.max_request_head_bytes;
  }

  /// Serves until stop(); called on the serving thread.
  void run();
  /// Makes run() return, from any thread.
  void stop() {
    const std::uint64_t one = 1;
    // An eventfd write of 1 fails only if the counter would overflow, which means it is set.
    [[maybe_unused]] const auto written = ::write(wake_.get(), &one, sizeof(one));
  }
  std::uint64_t scrapes() const { return scrapes_.load(std::memory_order_relaxed); }

private:
  int poll_timeout_ms(clock_type::time_point now) const;
  void serve(connection& client, clock_type::time_point now);
  void read_request(connection& client, clock_type::time_point now);
  void write_reply(connection& client, clock_type::time_point now);
  void drain(connection& client);
  void expire(connection& client, clock_type::time_point now);
  void start_reply(connection& client, const http_reply& answer, clock_type::time_point now);
  void start_lingering(connection& client, clock_type::time_point now);
  void accept_connections(clock_type::time_point now);
  void evict_one();
  void drop_closed();
  http_reply reply_to(const request_parse& parse);
  http_reply exposition_reply();
  void report_once(const std::string& problem);

  file_descriptor listener_;
  file_descriptor wake_;
  std::function<std::string()> exposition_;
  metrics_endpoint_limits limits_;
  http_request_limits request_limits_;
  std::vector<connection> connections_;
  clock_type::time_point accepting_paused_until_{};
  bool reported_ = false;
  std::atomic<std::uint64_t> scrapes_{0};
};

void server::run() {
  std::vector<pollfd> watched;
  for (;;) {
    const auto before_poll = clock_type::now();
    watched.clear();
    watched.push_back({wake_.get(), POLLIN, 0});
    // poll() skips a negative descriptor: that is how accepting pauses.
    const bool accepting = before_poll >= accepting_paused_until_;
    watched.push_back({accepting ? listener_.get() : -1, POLLIN, 0});
    for (const auto& client : connections_) {
      const short events = client.phase == connection_phase::writing_reply ? POLLOUT : POLLIN;
      watched.push_back({client.socket.get(), events, 0});
    }
    const int ready =
        ::poll(watched.data(), static_cast<nfds_t>(watched.size()), poll_timeout_ms(before_poll));
    if (ready < 0) {
      if (errno == EINTR)
        continue;
      std::fprintf(stderr, "herd: metrics endpoint stopped serving: poll failed: %s\n",
                   std::strerror(errno));
      return;
    }
    if (watched[0].revents != 0)
      return;

    const auto now = clock_type::now();
    for (std::size_t index = 0; index < connections_.size(); ++index) {
      if (watched[index + 2].revents != 0)
        serve(connections_[index], now);
    }
    for (auto& client : connections_) {
      if (client.socket.is_open() && now >= client.deadline)
        expire(client, now);
    }
    drop_closed();
    if (watched[1].revents != 0)
      accept_connections(now);
  }
}

int server::poll_timeout_ms(clock_type::time_point now) const {
  auto earliest = clock_type::time_point::max();
  for (const auto& client : connections_)
    earliest = std::min(earliest, client.deadline);
  if (accepting_paused_until_ > now)
    earliest = std::min(earliest, accepting_paused_until_);
  if (earliest == clock_type::time_point::max())
    return -1; // nothing to time out: only a client or stop() wakes the thread
  if (earliest <= now)
    return 0;
  // Rounded up, so the thread does not wake just before a deadline and spin until it.
  const auto wait = std::chrono::ceil<std::chrono::milliseconds>(earliest - now);
  return static_cast<int>(std::min<std::chrono::milliseconds::rep>(wait.count(), 60'000));
}

/// Moves `client` on after poll() reported it ready. Every phase reads or writes, and so learns of
/// errors and hang-ups from that call itself.
void server::serve(connection& client, clock_type::time_point now) {
  try {
    switch (client.phase) {
    case connection_phase::reading_request:
      read_request(client, now);
      break;
    case connection_phase::writing_reply:
      write_reply(client, now);
      break;
    case connection_phase::lingering:
      drain(client);
      break;
    }
  } catch (const std::exception& error) {
    // Out of memory for one client's buffers: drop that client, keep serving the others.
    report_once(std::string("dropped a connection: ") + error.what());
    client.socket.reset();
  }
}

void server::read_request(connection& client, clock_type::time_point now) {
  char chunk[read_chunk_bytes];
  for (;;) {
    const auto count = ::recv(client.socket.get(), chunk, sizeof(chunk), 0);
    if (count == 0) {
      client.socket.reset(); // the client gave up before its request was complete
      return;
    }
    if (count < 0) {
      if (errno == EINTR)
        continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        client.socket.reset();
      return;
    }
    const auto searched_bytes = client.received.size();
    client.received.append(chunk, static_cast<std::size_t>(count));
    const auto parse = parse_request(client.received, request_limits_, searched_bytes);
    if (parse.outcome != request_outcome::need_more_bytes) {
      start_reply(client, reply_to(parse), now);
      return;
    }
  }
}

void server::start_reply(connection& client, const http_reply& answer, clock_type::time_point now) {
  client.received = std::string(); // frees the buffer; whatever follows the head is drained
  client.outgoing = format_reply(answer);
  client.sent_bytes = 0;
  client.phase = connection_phase::writing_reply;
  client.deadline = now + limits_.reply_deadline;
  write_reply(client, now); // usually the whole reply fits in the socket buffer at once
}

void server::write_reply(connection& client, clock_type::time_point now) {
  while (client.sent_bytes < client.outgoing.size()) {
    const auto count =
        ::send(client.socket.get(), client.outgoing.data() + client.sent_bytes,
               client.outgoing.size() - client.sent_bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (count < 0) {
      if (errno == EINTR)
        continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        client.socket.reset(); // the client is gone
      return;
    }
    client.sent_bytes += static_cast<std::size_t>(count);
  }
  start_lingering(client, now);
}

void server::start_lingering(connection& client, clock_type::time_point now) {
  client.outgoing = std::string();
  client.phase = connection_phase::lingering;
  client.deadline = now + linger_time;
  client.drained_bytes = 0;
  ::shutdown(client.socket.get(), SHUT_WR);
}

void server::drain(connection& client) {
  char chunk[read_chunk_bytes];
  for (;;) {
    const auto count = ::recv(client.socket.get(), chunk, sizeof(chunk), 0);
    if (count < 0 && errno == EINTR)
      continue;
    if (count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return;
    if (count <= 0) {
      client.socket.reset(); // the client closed (or failed): done
      return;
    }
    client.drained_bytes += static_cast<std::size_t>(count);
    if (client.drained_bytes > linger_max_bytes) {
      client.socket.reset();
      return;
    }
  }
}

void server::expire(connection& client, clock_type::time_point now) {
  switch (client.phase) {
  case connection_phase::reading_request:
    if (client.received.empty()) {
      client.socket.reset(); // it never said anything; nothing is unread, so this is a clean FIN
      return;
    }
    start_reply(client,
                text_reply(408, "408 request timeout: the request did not arrive in full within " +
                                    std::to_string(limits_.request_deadline.count()) + " ms\n"),
                now);
    return;
  case connection_phase::writing_reply:
    close_abortively(client.socket);
    return;
  case connection_phase::lingering:
    client.socket.reset();
    return;
  }
}

void server::accept_connections(clock_type::time_point now) {
  // At most one cap's worth per wake, so a flood of connections cannot starve those already open.
  for (std::size_t accepted = 0; accepted < limits_.max_connections; ++accepted) {
    file_descriptor socket(
        ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!socket.is_open()) {
      switch (errno) {
      case EAGAIN:
#if EAGAIN != EWOULDBLOCK
      case EWOULDBLOCK:
#endif
        return;
      // Errors of the connection that was to be accepted, not of the listener (accept(2)).
      case EINTR:
      case ECONNABORTED:
      case EPROTO:
      case ENETDOWN:
      case ENOPROTOOPT:
      case EHOSTDOWN:
      case ENONET:
      case EHOSTUNREACH:
      case EOPNOTSUPP:
      case ENETUNREACH:
        continue;
      default:
        // EMFILE, ENFILE, ENOBUFS, ENOMEM: the process or the host is short of descriptors or
        // memory. The pending connections wait in the backlog; retrying at once would spin.
        report_once(std::string("cannot accept a connection: ") + std::strerror(errno) +
                    " (pausing; if it is 'Too many open files', raise the limit with ulimit -n)");
        accepting_paused_until_ = now + accept_pause;
        return;
      }
    }
    if (connections_.size() >= limits_.max_connections)
      evict_one();
    connection fresh;
    fresh.socket = std::move(socket);
    fresh.accepted_at = now;
    fresh.deadline = now + limits_.request_deadline;
    connections_.push_back(std::move(fresh));
    // The request has usually arrived with the handshake: answer it before anything can evict it.
    serve(connections_.back(), now);
    if (!connections_.back().socket.is_open())
      connections_.pop_back();
  }
}

void server::evict_one() {
  const auto victim = std::min_element(connections_.begin(), connections_.end(),
                                       [](const connection& left, const connection& right) {
                                         const auto left_order = eviction_order(left.phase);
                                         const auto right_order = eviction_order(right.phase);
                                         return left_order != right_order
                                                    ? left_order < right_order
                                                    : left.accepted_at < right.accepted_at;
                                       });
  if (victim == connections_.end())
    return;
  if (victim->phase == connection_phase::writing_reply)
    close_abortively(victim->socket);
  connections_.erase(victim);
}

void server::drop_closed() {
  connections_.erase(
      std::remove_if(connections_.begin(), connections_.end(),
                     [](const connection& client) { return !client.socket.is_open(); }),
      connections_.end());
}

/// The reply to a request head that is complete or refused.
http_reply server::reply_to(const request_parse& parse) {
  if (auto refusal = refusal_for(parse, request_limits_))
    return *std::move(refusal);
  auto answer = exposition_reply();
  answer.head_only = parse.request.method == "HEAD";
  return answer;
}

http_reply server::exposition_reply() {
  http_reply answer;
  try {
    answer.body = exposition_();
  } catch (const std::exception& error) {
    return text_reply(500, std::string("500 internal error: producing the metrics failed: ") +
                               error.what() + "\n");
  } catch (...) {
    return text_reply(500, "500 internal error: producing the metrics failed\n");
  }
  answer.content_type = exposition_content_type;
  scrapes_.fetch_add(1, std::memory_order_relaxed);
  return answer;
}

void server::report_once(const std::string& problem) {
  if (reported_)
    return;
  reported_ = true;
  std::fprintf(stderr, "herd: metrics endpoint: %s\n", problem.c_str());
}

/// The limits as given, checked, with the cap lowered to a share of the descriptor limit.
metrics_endpoint_limits applied_limits(metrics_endpoint_limits limits) {
  HERD_CHECK(limits.max_connections > 0, "metrics_endpoint_limits.max_connections is 0");
  HERD_CHECK(limits.request_deadline.count() > 0, "metrics_endpoint_limits.request_deadline is "
                                                      << limits.request_deadline.count() << " ms");
  HERD_CHECK(limits.reply_deadline.count() > 0, "metrics_endpoint_limits.reply_deadline is "
                                                    << limits.reply_deadline.count() << " ms");
  HERD_CHECK(limits.max_request_head_bytes > 0,
             "metrics_endpoint_limits.max_request_head_bytes is 0");
  rlimit descriptors{};
  if (::getrlimit(RLIMIT_NOFILE, &descriptors) == 0 && descriptors.rlim_cur != RLIM_INFINITY) {
    const auto share = std::max<rlim_t>(1, descriptors.rlim_cur / descriptor_share_divisor);
    limits.max_connections =
        static_cast<std::size_t>(std::min<rlim_t>(limits.max_connections, share));
  }
  return limits;
}

/// A listening, non-blocking socket on `address`:`port`; `bound_port` receives the port. Throws
/// std::runtime_error naming the address when it cannot.
file_descriptor listen_on(const std::string& address, int port, int& bound_port) {
  const auto failure = [&](const std::string& reason) {
    return std::runtime_error("cannot serve metrics on " + endpoint_name(address, port) + ": " +
                              reason);
  };
  if (port < 0 || port > 65535)
    throw failure("the port must be in 0..65535 (0 picks a free one)");

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int resolved = ::getaddrinfo(address.empty() ? nullptr : address.c_str(),
                                     std::to_string(port).c_str(), &hints, &found);
  if (resolved != 0)
    throw failure(std::string("the address does not resolve to one this host can bind (") +
                  ::gai_strerror(resolved) + ")");
  const std::unique_ptr<addrinfo, void (*)(addrinfo*)> addresses(found, ::freeaddrinfo);

  int last_error = 0;
  for (const addrinfo* candidate = found; candidate != nullptr; candidate = candidate->ai_next) {
    file_descriptor listener(::socket(candidate->ai_family,
                                      candidate->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                                      candidate->ai_protocol));
    if (!listener.is_open()) {
      last_error = errno;
      continue;
    }
    // SO_REUSEADDR allows a quick restart; not SO_REUSEPORT, with which a second process could
    // bind the same port and the kernel would split the scrapes between the two.
    const int yes = 1;
    ::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    sockaddr_storage bound{};
    socklen_t bound_size = sizeof(bound);
    // The backlog holds connections beyond what the thread has accepted yet; they cost no
    // descriptor of this process.
    if (::bind(listener.get(), candidate->ai_addr, candidate->ai_addrlen) != 0 ||
        ::listen(listener.get(), SOMAXCONN) != 0 ||
        // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
        ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&bound), &bound_size) != 0) {
      last_error = errno;
      continue;
    }
    // NOLINTBEGIN(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    bound_port = bound.ss_family == AF_INET6
                     ? ntohs(reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port)
                     : ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
    // NOLINTEND(cppcoreguidelines-pro-type-reinterpret-cast)
    return listener;
  }
  throw failure(std::string(last_error != 0 ? std::strerror(last_error) : "no address to bind") +
                " (choose another address or port)");
}

} // namespace

struct metrics_endpoint::impl {
  std::string bind_address;
  int port = 0;
  metrics_endpoint_limits limits;
  std::unique_ptr<server> serving;
  std::thread serving_thread;
};

metrics_endpoint::metrics_endpoint(const std::string& bind_address, int port,
                                   std::function<std::string()> exposition,
                                   metrics_endpoint_limits limits)
    : impl_(std::make_unique<impl>()) {
  HERD_CHECK(static_cast<bool>(exposition),
             "metrics_endpoint needs a callback that returns the exposition text");
  impl_->bind_address = unbracketed(bind_address);
  impl_->limits = applied_limits(limits);
  auto listener = listen_on(impl_->bind_address, port, impl_->port);
  file_descriptor wake(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake.is_open())
    throw std::runtime_error("cannot serve metrics on " + endpoint_name(impl_->bind_address, port) +
                             ": eventfd failed: " + std::strerror(errno));
  impl_->serving = std::make_unique<server>(std::move(listener), std::move(wake),
                                            std::move(exposition), impl_->limits);
  // Connections that arrive before the thread runs wait in the listen backlog.
  impl_->serving_thread = std::thread([serving = impl_->serving.get()] {
    try {
      serving->run();
    } catch (const std::exception& error) {
      std::fprintf(stderr, "herd: metrics endpoint stopped serving: %s\n", error.what());
    } catch (...) {
      std::fprintf(stderr, "herd: metrics endpoint stopped serving\n");
    }
  });
}

metrics_endpoint::~metrics_endpoint() {
  impl_->serving->stop();
  // The thread blocks only in poll(), which stop() wakes, and in the callback, which the caller
  // promises returns; once joined, the server's destructor closes every connection.
  impl_->serving_thread.join();
}

int metrics_endpoint::port() const {
  return impl_->port;
}

const std::string& metrics_endpoint::bind_address() const {
  return impl_->bind_address;
}

std::string metrics_endpoint::url() const {
  const auto& address = impl_->bind_address;
  // Every address: this host's name reaches it from elsewhere, "0.0.0.0" does not.
  std::string host = address;
  if (address.empty() || address == "0.0.0.0" || address == "::") {
    char name[256] = {};
    host = ::gethostname(name, sizeof name - 1) == 0 && name[0] != '\0' ? name : "localhost";
  }
  return "http://" + host_part(host) + ":" + std::to_string(impl_->port) + "/metrics";
}

const metrics_endpoint_limits& metrics_endpoint::limits() const {
  return impl_->limits;
}

std::uint64_t metrics_endpoint::scrapes() const {
  return impl_->serving->scrapes();
}

} // namespace herd::monitoring
