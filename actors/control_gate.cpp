// The control plane's front door; see control_gate.hpp.
#include "actors/control_gate.hpp"

#include "actors/thread_set.hpp"

#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdexcept>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace herd::actors {

namespace {

// "HERDGATE", the protocol version (4 bytes, big-endian), the token's length (2 bytes) and the
// token. The gate answers one byte: accepted or refused (then a line saying why).
constexpr char magic[] = {'H', 'E', 'R', 'D', 'G', 'A', 'T', 'E'};
constexpr std::uint32_t gate_version = 1;
constexpr char accepted = 'A';
constexpr char refused = 'R';
constexpr std::size_t max_token = 1024;
constexpr std::chrono::milliseconds preamble_timeout{3000};

std::string errno_text() {
  return std::strerror(errno);
}

// Waits until `fd` is readable (or closed) for at most `timeout`.
bool wait_readable(int fd, std::chrono::milliseconds timeout) {
  pollfd watched{fd, POLLIN, 0};
  return ::poll(&watched, 1, static_cast<int>(timeout.count())) > 0;
}

bool read_exactly(int fd, void* data, std::size_t size, std::chrono::milliseconds timeout) {
  auto* bytes = static_cast<char*>(data);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (size > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !wait_readable(fd, left))
      return false;
    const ssize_t got = ::recv(fd, bytes, size, 0);
    if (got <= 0)
      return false;
    bytes += got;
    size -= static_cast<std::size_t>(got);
  }
  return true;
}

bool write_all(int fd, const void* data, std::size_t size) {
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t sent = ::send(fd, bytes, size, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR)
      continue;
    if (sent <= 0)
      return false;
    bytes += sent;
    size -= static_cast<std::size_t>(sent);
  }
  return true;
}

int connect_to(const std::string& host, std::uint16_t port, std::string& failure) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int status = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (status != 0) {
    failure = "cannot resolve " + host + ": " + ::gai_strerror(status);
    return -1;
  }
  int fd = -1;
  for (auto* address = found; address != nullptr && fd < 0; address = address->ai_next) {
    fd = ::socket(address->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && ::connect(fd, address->ai_addr, address->ai_addrlen) != 0) {
      failure = "connect to " + host + ":" + std::to_string(port) + ": " + errno_text();
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd >= 0) {
    const int on = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  }
  return fd;
}

int listen_on(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const int status = ::getaddrinfo(host.empty() ? nullptr : host.c_str(),
                                   std::to_string(port).c_str(), &hints, &found);
  if (status != 0)
    throw std::runtime_error("cannot resolve " + host + ": " + ::gai_strerror(status));
  std::string failure = "no address";
  int fd = -1;
  for (auto* address = found; address != nullptr && fd < 0; address = address->ai_next) {
    fd = ::socket(address->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int on = 1;
    if (fd >= 0)
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (fd >= 0 &&
        (::bind(fd, address->ai_addr, address->ai_addrlen) != 0 || ::listen(fd, 64) != 0)) {
      failure = errno_text();
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0)
    throw std::runtime_error(failure);
  return fd;
}

std::uint16_t bound_port(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  if (address.ss_family == AF_INET6)
    return ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
}

// Listening sockets and relays, stopped together: the accept loop and every pump wake up through
// a pipe when the owner goes.
class relay_set {
public:
  relay_set() {
    if (::pipe2(stop_pipe_, O_CLOEXEC) != 0)
      throw std::runtime_error("pipe: " + errno_text());
  }

  ~relay_set() { stop(); }

  void stop() {
    {
      std::lock_guard<std::mutex> guard(mutex_);
      if (stopped_)
        return;
      stopped_ = true;
    }
    const char wake = 'x';
    [[maybe_unused]] auto ignored = ::write(stop_pipe_[1], &wake, 1);
    threads_.join_all();
    ::close(stop_pipe_[0]);
    ::close(stop_pipe_[1]);
  }

  template <class Function>
  void spawn(Function function) {
    std::lock_guard<std::mutex> guard(mutex_);
    if (!stopped_)
      threads_.run(std::move(function));
  }

  // Waits until `fd` is readable; false when the set is stopping.
  bool readable(int fd) {
    pollfd watched[2] = {{fd, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    for (;;) {
      const int ready = ::poll(watched, 2, -1);
      if (ready < 0 && errno == EINTR)
        continue;
      if (ready < 0 || (watched[1].revents & POLLIN) != 0)
        return false;
      return true;
    }
  }

  // Waits until no connection is being relayed, or `timeout` passed.
  void drain(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (active_.load() > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  // Copies both ways between two connected sockets until either side closes; closes both.
  void relay(int a, int b) {
    ++active_;
    auto pump = [this](int from, int to) {
      std::vector<char> buffer(std::size_t{64} * 1024);
      while (readable(from)) {
        const ssize_t got = ::recv(from, buffer.data(), buffer.size(), 0);
        if (got <= 0 || !write_all(to, buffer.data(), static_cast<std::size_t>(got)))
          break;
      }
      // Wakes the other direction's pump.
      ::shutdown(from, SHUT_RDWR);
      ::shutdown(to, SHUT_RDWR);
    };
    std::thread back([pump, a, b] { pump(b, a); });
    pump(a, b);
    back.join();
    ::close(a);
    ::close(b);
    --active_;
  }

private:
  int stop_pipe_[2] = {-1, -1};
  std::mutex mutex_;
  bool stopped_ = false;
  std::atomic<int> active_{0};
  thread_set threads_;
};

std::vector<char> preamble(const std::string& token) {
  std::vector<char> bytes(magic, magic + sizeof magic);
  for (int shift = 24; shift >= 0; shift -= 8)
    bytes.push_back(static_cast<char>((gate_version >> shift) & 0xff));
  bytes.push_back(static_cast<char>((token.size() >> 8) & 0xff));
  bytes.push_back(static_cast<char>(token.size() & 0xff));
  bytes.insert(bytes.end(), token.begin(), token.end());
  return bytes;
}

// Reads and checks a connection's preamble; empty when admitted, else why not.
std::string check_preamble(int fd, const std::string& token) {
  char head[sizeof magic + 6];
  if (!read_exactly(fd, head, sizeof head, preamble_timeout))
    return "no Herd preamble within " + std::to_string(preamble_timeout.count()) + " ms";
  if (std::memcmp(head, magic, sizeof magic) != 0)
    return "not a Herd node (no preamble; a port scanner, or another protocol)";
  std::uint32_t version = 0;
  for (int i = 0; i < 4; ++i)
    version = (version << 8) | static_cast<unsigned char>(head[sizeof magic + i]);
  const std::size_t length =
      (static_cast<std::size_t>(static_cast<unsigned char>(head[sizeof magic + 4])) << 8) |
      static_cast<unsigned char>(head[sizeof magic + 5]);
  if (version != gate_version)
    return "gate protocol " + std::to_string(version) + ", this coordinator speaks " +
           std::to_string(gate_version) + "; run the same Herd version everywhere";
  if (length > max_token)
    return "a token of " + std::to_string(length) + " bytes";
  std::string presented(length, '\0');
  if (length > 0 && !read_exactly(fd, presented.data(), length, preamble_timeout))
    return "the token did not arrive";
  if (presented != token)
    return "wrong cluster.token";
  return {};
}

std::string peer_of(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  char text[INET6_ADDRSTRLEN] = "?";
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    if (address.ss_family == AF_INET)
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&address)->sin_addr, text, sizeof text);
    else if (address.ss_family == AF_INET6)
      ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&address)->sin6_addr, text,
                  sizeof text);
  }
  return text;
}

} // namespace

// -- the coordinator's side ---------------------------------------------------------------------

struct gate_listener::impl {
  int listen_fd = -1;
  std::uint16_t port = 0;
  std::uint16_t inner_port = 0;
  std::string token;
  std::function<void(const std::string&)> on_refused;
  relay_set relays; // last: stopped first

  void accept_loop() {
    while (relays.readable(listen_fd)) {
      const int client = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0)
        continue;
      relays.spawn([this, client] { admit(client); });
    }
  }

  void admit(int client) {
    const std::string why = check_preamble(client, token);
    if (!why.empty()) {
      if (on_refused) // first: by the time the peer reads the answer, the log has it
        on_refused("refused a connection from " + peer_of(client) + ": " + why);
      const std::string answer = std::string(1, refused) + why + "\n";
      write_all(client, answer.data(), answer.size());
      ::close(client);
      return;
    }
    std::string failure;
    const int inner = connect_to("127.0.0.1", inner_port, failure);
    if (inner < 0 || !write_all(client, &accepted, 1)) {
      if (inner >= 0)
        ::close(inner);
      ::close(client);
      return;
    }
    const int on = 1;
    ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    relays.relay(client, inner);
  }
};

gate_listener::gate_listener(const std::string& host, std::uint16_t port, std::uint16_t inner_port,
                             std::string token, std::function<void(const std::string&)> on_refused)
    : impl_(std::make_unique<impl>()) {
  impl_->listen_fd = listen_on(host, port);
  impl_->port = bound_port(impl_->listen_fd);
  impl_->inner_port = inner_port;
  impl_->token = std::move(token);
  impl_->on_refused = std::move(on_refused);
  impl_->relays.spawn([this] { impl_->accept_loop(); });
}

gate_listener::~gate_listener() {
  impl_->relays.stop();
  ::close(impl_->listen_fd);
}

std::uint16_t gate_listener::port() const {
  return impl_->port;
}

void gate_listener::drain(std::chrono::milliseconds timeout) {
  impl_->relays.drain(timeout);
}

// -- a node's side ------------------------------------------------------------------------------

struct gate_dialer::impl {
  int listen_fd = -1;
  std::uint16_t port = 0;
  std::string host;
  std::uint16_t remote_port = 0;
  std::string token;
  mutable std::mutex mutex;
  std::string last_failure;
  relay_set relays; // last: stopped first

  void failed(const std::string& why) {
    std::lock_guard<std::mutex> guard(mutex);
    last_failure = why;
  }

  void accept_loop() {
    while (relays.readable(listen_fd)) {
      const int local = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (local < 0)
        continue;
      relays.spawn([this, local] { dial(local); });
    }
  }

  void dial(int local) {
    std::string failure;
    const int remote = connect_to(host, remote_port, failure);
    if (remote < 0) {
      failed(failure);
      ::close(local);
      return;
    }
    const auto hello = preamble(token);
    char answer = 0;
    if (!write_all(remote, hello.data(), hello.size()) ||
        !read_exactly(remote, &answer, 1, preamble_timeout) || answer != accepted) {
      std::string why = "no answer from the coordinator's gate";
      if (answer == refused) {
        why.clear();
        char c = 0;
        while (read_exactly(remote, &c, 1, preamble_timeout) && c != '\n' && why.size() < 512)
          why += c;
        why = "the coordinator refused this node: " + why;
      }
      failed(why);
      ::close(remote);
      ::close(local);
      return;
    }
    failed({});
    relays.relay(local, remote);
  }
};

gate_dialer::gate_dialer(std::string coordinator_host, std::uint16_t coordinator_port,
                         std::string token)
    : impl_(std::make_unique<impl>()) {
  impl_->listen_fd = listen_on("127.0.0.1", 0);
  impl_->port = bound_port(impl_->listen_fd);
  impl_->host = std::move(coordinator_host);
  impl_->remote_port = coordinator_port;
  impl_->token = std::move(token);
  impl_->relays.spawn([this] { impl_->accept_loop(); });
}

gate_dialer::~gate_dialer() {
  impl_->relays.stop();
  ::close(impl_->listen_fd);
}

std::uint16_t gate_dialer::local_port() const {
  return impl_->port;
}

std::string gate_dialer::last_failure() const {
  std::lock_guard<std::mutex> guard(impl_->mutex);
  return impl_->last_failure;
}

} // namespace herd::actors
