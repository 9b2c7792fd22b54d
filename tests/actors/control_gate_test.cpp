// The control plane's gate on its own, with plain sockets (no CAF): a dialer with the right token
// relays bytes both ways to what listens behind the gate; a wrong token, another protocol, or
// silence is refused with the reason and never reaches it.
#include "actors/control_gate.hpp"

#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <gtest/gtest.h>
#include <mutex>
#include <netinet/in.h>
#include <random>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using herd::actors::gate_dialer;
using herd::actors::gate_listener;
using namespace std::chrono_literals;

int connect_loopback(std::uint16_t port) {
  const int sock = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(sock, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(sock);
    return -1;
  }
  return sock;
}

// Reads until `size` bytes came or the peer closed; what came.
std::string read_some(int sock, std::size_t size, std::chrono::milliseconds timeout) {
  timeval limit{};
  limit.tv_sec = static_cast<long>(timeout.count() / 1000);
  limit.tv_usec = static_cast<long>((timeout.count() % 1000) * 1000);
  ::setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  std::string text;
  char buffer[4096];
  while (text.size() < size) {
    const ssize_t got = ::recv(sock, buffer, std::min(sizeof buffer, size - text.size()), 0);
    if (got <= 0)
      break;
    text.append(buffer, static_cast<std::size_t>(got));
  }
  return text;
}

// What stands behind the gate (CAF's port in production): echoes every byte back, and counts
// the connections it accepted.
class echo_server {
public:
  echo_server() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address);
    ::listen(listen_fd_, 16);
    socklen_t length = sizeof address;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] {
      for (;;) {
        const int client = ::accept(listen_fd_, nullptr, nullptr);
        if (client < 0)
          return;
        ++accepted_;
        std::lock_guard<std::mutex> guard(mutex_);
        echoes_.emplace_back([client] {
          char buffer[4096];
          for (;;) {
            const ssize_t got = ::recv(client, buffer, sizeof buffer, 0);
            if (got <= 0 ||
                ::send(client, buffer, static_cast<std::size_t>(got), MSG_NOSIGNAL) != got)
              break;
          }
          ::close(client);
        });
      }
    });
  }

  ~echo_server() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    acceptor_.join();
    std::lock_guard<std::mutex> guard(mutex_);
    for (auto& echo : echoes_)
      echo.join();
  }

  std::uint16_t port() const { return port_; }
  int accepted() const { return accepted_.load(); }

private:
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<int> accepted_{0};
  std::thread acceptor_;
  std::mutex mutex_;
  std::vector<std::thread> echoes_;
};

struct refusals {
  std::mutex mutex;
  std::vector<std::string> reasons;
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& why) {
      std::lock_guard<std::mutex> guard(mutex);
      reasons.push_back(why);
    };
  }
  std::string all() {
    std::lock_guard<std::mutex> guard(mutex);
    std::string text;
    for (const auto& reason : reasons)
      text += reason + "\n";
    return text;
  }
};

TEST(control_gate, a_dialer_with_the_token_relays_bytes_both_ways_to_what_stands_behind) {
  echo_server inner;
  refusals refused;
  gate_listener gate("127.0.0.1", 0, inner.port(), "s3cret", refused.sink());
  gate_dialer dialer("127.0.0.1", gate.port(), "s3cret");
  const int sock = connect_loopback(dialer.local_port());
  ASSERT_GE(sock, 0);
  // 1 MB of seeded random bytes, through dialer and gate to the echo and back.
  std::mt19937 generator(5);
  std::string payload(1 << 20, '\0');
  for (auto& byte : payload)
    byte = static_cast<char>(generator());
  std::thread writer([&] {
    ASSERT_EQ(::send(sock, payload.data(), payload.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(payload.size()));
  });
  const std::string echoed = read_some(sock, payload.size(), 20s);
  writer.join();
  ::close(sock);
  EXPECT_EQ(echoed.size(), payload.size());
  EXPECT_TRUE(echoed == payload) << "the relayed bytes differ";
  EXPECT_EQ(inner.accepted(), 1);
  EXPECT_TRUE(dialer.last_failure().empty()) << dialer.last_failure();
  EXPECT_EQ(refused.all(), "");
}

TEST(control_gate, a_wrong_token_is_refused_with_the_reason_and_never_reaches_behind) {
  echo_server inner;
  refusals refused;
  gate_listener gate("127.0.0.1", 0, inner.port(), "s3cret", refused.sink());
  gate_dialer dialer("127.0.0.1", gate.port(), "guess");
  const int sock = connect_loopback(dialer.local_port());
  ASSERT_GE(sock, 0);
  // The dialer closes its side once refused.
  EXPECT_EQ(read_some(sock, 1, 10s), "");
  ::close(sock);
  EXPECT_EQ(dialer.last_failure(), "the coordinator refused this node: wrong cluster.token");
  EXPECT_EQ(inner.accepted(), 0);
  EXPECT_NE(refused.all().find("refused a connection from 127.0.0.1: wrong cluster.token"),
            std::string::npos)
      << refused.all();
}

TEST(control_gate, another_protocol_is_closed_before_anything_reaches_behind) {
  echo_server inner;
  refusals refused;
  gate_listener gate("127.0.0.1", 0, inner.port(), "", refused.sink());
  std::mt19937 generator(9);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const int sock = connect_loopback(gate.port());
    ASSERT_GE(sock, 0);
    std::string garbage(1 + generator() % 2048, '\0');
    for (auto& byte : garbage)
      byte = static_cast<char>(generator());
    ::send(sock, garbage.data(), garbage.size(), MSG_NOSIGNAL);
    const std::string answer = read_some(sock, 4096, 10s);
    ::close(sock);
    // The gate answers 'R' and the reason, then closes.
    ASSERT_FALSE(answer.empty());
    EXPECT_EQ(answer.front(), 'R');
  }
  EXPECT_EQ(inner.accepted(), 0);
  EXPECT_NE(refused.all().find("not a Herd node"), std::string::npos) << refused.all();
}

TEST(control_gate, a_dialer_names_a_coordinator_that_does_not_listen) {
  std::uint16_t closed_port = 0;
  {
    echo_server placeholder; // a port that was free a moment ago
    closed_port = placeholder.port();
  }
  gate_dialer dialer("127.0.0.1", closed_port, "");
  const int sock = connect_loopback(dialer.local_port());
  ASSERT_GE(sock, 0);
  EXPECT_EQ(read_some(sock, 1, 10s), "");
  ::close(sock);
  EXPECT_NE(dialer.last_failure().find("connect to 127.0.0.1:" + std::to_string(closed_port)),
            std::string::npos)
      << dialer.last_failure();
}

TEST(control_gate, a_listen_address_in_use_is_named) {
  echo_server inner;
  gate_listener first("127.0.0.1", 0, inner.port(), "", nullptr);
  try {
    gate_listener second("127.0.0.1", first.port(), inner.port(), "", nullptr);
    FAIL() << "two gates listened on one port";
  } catch (const std::runtime_error& failure) {
    EXPECT_NE(std::string(failure.what()).find("Address already in use"), std::string::npos)
        << failure.what();
  }
}

} // namespace
