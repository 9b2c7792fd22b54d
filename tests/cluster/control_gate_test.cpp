// The control plane's gate on its own, with plain sockets (no CAF): a dialer with the right token
// reaches what stands behind the gate (CAF in production; here the test holds the peer's socket
// the gate hands over, and with TLS the session on it) and bytes go both ways; a wrong token,
// another protocol or silence is refused alone, and nothing it sent reaches behind. With TLS, the
// token travels encrypted and plain bytes are refused alone. (What a member sends once admitted
// is checked by CAF's reader: checked_connection_test.)
#include "herd/config.hpp"

#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <memory>
#include <mutex>
#include <netinet/in.h>
#include <poll.h>
#include <random>
#include <string>
#include <sys/resource.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "cluster/control_gate.hpp"
#include "cluster/gate_link.hpp"
#include "cluster/remoting.hpp"
#include "support/forked_call.hpp"
#include "support/gate_wire.hpp"
#include "support/temp_directory.hpp"
#include "support/test_certificates.hpp"

namespace {

using herd::cluster::admitted_connection;
using herd::cluster::gate_connection;
using herd::cluster::gate_dialer;
using herd::cluster::gate_failure;
using herd::cluster::gate_listener;
using herd::cluster::gate_settings;
using herd::testing::temp_directory;
using namespace std::chrono_literals;
using namespace herd::testing::gate_wire;

// What stands behind the gate: collects the connections the gate hands over.
class behind_the_gate {
public:
  ~behind_the_gate() {
    for (auto& connection : connections_)
      if (connection.fd >= 0)
        ::close(connection.fd);
  }

  gate_listener::admit_function admit() {
    return [this](admitted_connection connection) {
      std::lock_guard<std::mutex> guard(mutex_);
      connections_.push_back(std::move(connection));
      changed_.notify_all();
      return true;
    };
  }

  int admitted() {
    std::lock_guard<std::mutex> guard(mutex_);
    return static_cast<int>(connections_.size());
  }

  // The descriptor of the `index`th connection handed over, once it was (or -1 after `timeout`).
  int end(std::size_t index, std::chrono::milliseconds timeout = 10s) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, timeout, [&] { return connections_.size() > index; });
    return connections_.size() > index ? connections_[index].fd : -1;
  }

  // The TLS session of the `index`th connection (null in the clear).
  std::shared_ptr<herd::cluster::gate_link> tls(std::size_t index) {
    std::lock_guard<std::mutex> guard(mutex_);
    return connections_.at(index).tls;
  }

  // Closes the `index`th connection and lets go of it, as CAF does when a peer leaves.
  void let_go(std::size_t index) {
    std::lock_guard<std::mutex> guard(mutex_);
    auto& connection = connections_.at(index);
    ::close(connection.fd);
    connection.fd = -1;
    connection.hold.reset();
  }

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<admitted_connection> connections_;
};

struct notices {
  std::mutex mutex;
  std::vector<std::string> lines;
  gate_listener::notice_function sink() {
    return [this](const std::string& line) {
      std::lock_guard<std::mutex> guard(mutex);
      lines.push_back(line);
    };
  }
  std::string all() {
    std::lock_guard<std::mutex> guard(mutex);
    std::string text;
    for (const auto& line : lines)
      text += line + "\n";
    return text;
  }
};

gate_settings with_token(const std::string& token) {
  gate_settings settings;
  settings.token = token;
  return settings;
}

// The cluster section's keys reach the gate: the token, the TLS files, and whether certificates
// must name their peer (cluster.tls-check-names, on unless turned off).
TEST(control_gate, the_cluster_sections_keys_reach_the_gate) {
  herd::config::cluster_section cluster;
  EXPECT_TRUE(herd::cluster::gate_settings_of(cluster).check_names);
  cluster.token = "s3cret";
  cluster.tls_ca = "ca.pem";
  cluster.tls_cert = "node.pem";
  cluster.tls_key = "node.key";
  cluster.tls_check_names = false;
  const auto settings = herd::cluster::gate_settings_of(cluster);
  EXPECT_EQ(settings.token, "s3cret");
  EXPECT_EQ(settings.tls.ca, "ca.pem");
  EXPECT_EQ(settings.tls.cert, "node.pem");
  EXPECT_EQ(settings.tls.key, "node.key");
  EXPECT_FALSE(settings.check_names);
}

// In the clear no thread stands between the peers: each side's CAF gets the socket itself.
TEST(control_gate, a_dialer_with_the_token_reaches_behind_and_frames_go_both_ways) {
  behind_the_gate behind;
  notices log;
  gate_listener gate("127.0.0.1", 0, with_token("s3cret"), behind.admit(), log.sink());
  gate_dialer dialer("127.0.0.1", gate.port(), with_token("s3cret"));
  const gate_connection node = dialer.open();
  ASSERT_GE(node.caf_fd, 0) << node.why;
  EXPECT_EQ(node.failure, gate_failure::none);
  const int coordinator = behind.end(0);
  ASSERT_GE(coordinator, 0);
  EXPECT_EQ(node.tls, nullptr);
  EXPECT_EQ(behind.tls(0), nullptr);
  // The same TCP connection on both sides: each end's local address is the other's peer.
  sockaddr_in node_local{}, coordinator_peer{};
  socklen_t length = sizeof node_local;
  ::getsockname(node.caf_fd, reinterpret_cast<sockaddr*>(&node_local), &length);
  length = sizeof coordinator_peer;
  ::getpeername(coordinator, reinterpret_cast<sockaddr*>(&coordinator_peer), &length);
  EXPECT_EQ(node_local.sin_port, coordinator_peer.sin_port);
  // The gate handed both over non-blocking (CAF wants them so); this test reads with deadlines.
  for (int fd : {node.caf_fd, coordinator})
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL, 0) & ~O_NONBLOCK);
  // 1 MB of seeded random payload each way, in frames the check lets through.
  const std::string up = frame(client_handshake, random_bytes(1000, 1)) +
                         frame(direct_message, random_bytes(1 << 20, 2), 0, 0, 7);
  const std::string down = frame(server_handshake, random_bytes(1000, 3), 1) +
                           frame(direct_message, random_bytes(1 << 20, 4), 0, 9, 3);
  std::thread writer([&] {
    send_all(node.caf_fd, up);
    send_all(coordinator, down);
  });
  const std::string arrived_up = read_some(coordinator, up.size(), 20s);
  const std::string arrived_down = read_some(node.caf_fd, down.size(), 20s);
  writer.join();
  EXPECT_TRUE(arrived_up == up) << "the node's bytes arrived changed (" << arrived_up.size()
                                << " of " << up.size() << " bytes)";
  EXPECT_TRUE(arrived_down == down) << "the coordinator's bytes arrived changed ("
                                    << arrived_down.size() << " of " << down.size() << " bytes)";
  EXPECT_EQ(gate.connections(), 1);
  ::close(node.caf_fd);
  // The node's end closing closes the coordinator's.
  EXPECT_TRUE(closed_within(coordinator, 10s));
  // The gate counts the connection until what stands behind lets go of it.
  EXPECT_EQ(gate.connections(), 1);
  behind.let_go(0);
  EXPECT_EQ(gate.connections(), 0);
  EXPECT_EQ(log.all(), "");
}

TEST(control_gate, a_wrong_token_is_refused_with_the_reason_and_never_reaches_behind) {
  behind_the_gate behind;
  notices log;
  gate_listener gate("127.0.0.1", 0, with_token("s3cret"), behind.admit(), log.sink());
  gate_dialer dialer("127.0.0.1", gate.port(), with_token("guess"));
  const gate_connection node = dialer.open();
  EXPECT_EQ(node.caf_fd, -1);
  EXPECT_EQ(node.failure, gate_failure::refused);
  EXPECT_EQ(node.why, "the coordinator refused this node: wrong cluster.token");
  EXPECT_EQ(behind.admitted(), 0);
  EXPECT_NE(log.all().find("refused a connection from 127.0.0.1: wrong cluster.token"),
            std::string::npos)
      << log.all();
}

// A token where the coordinator has none, and none where it has one: each refusal says which.
TEST(control_gate, a_token_only_one_side_has_is_refused_saying_which_side) {
  behind_the_gate behind;
  notices log;
  gate_listener open_gate("127.0.0.1", 0, with_token(""), behind.admit(), log.sink());
  gate_dialer with("127.0.0.1", open_gate.port(), with_token("s3cret"));
  EXPECT_EQ(with.open().why, "the coordinator refused this node: this coordinator has no "
                             "cluster.token: remove it from the node, or give the coordinator "
                             "the same one");
  gate_listener guarded("127.0.0.1", 0, with_token("s3cret"), behind.admit(), log.sink());
  gate_dialer without("127.0.0.1", guarded.port(), with_token(""));
  EXPECT_EQ(without.open().why, "the coordinator refused this node: this coordinator requires a "
                                "cluster.token: give the node the coordinator's "
                                "(cluster.token-file)");
  EXPECT_EQ(behind.admitted(), 0);
}

TEST(control_gate, another_protocol_is_closed_before_anything_reaches_behind) {
  behind_the_gate behind;
  notices log;
  gate_listener gate("127.0.0.1", 0, with_token(""), behind.admit(), log.sink());
  std::mt19937 generator(9);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const int sock = connect_loopback(gate.port());
    ASSERT_GE(sock, 0);
    const std::string garbage = random_bytes(1 + generator() % 2048, generator());
    ::send(sock, garbage.data(), garbage.size(), MSG_NOSIGNAL);
    const std::string answer = read_some(sock, 4096, 10s);
    ::close(sock);
    // The gate answers 'R' and the reason, then closes.
    ASSERT_FALSE(answer.empty());
    EXPECT_EQ(answer.front(), 'R');
  }
  EXPECT_EQ(behind.admitted(), 0);
  EXPECT_NE(log.all().find("not a Herd node"), std::string::npos) << log.all();
}

// A node of another Herd is refused at the gate, by name: its hello, of another shape, would
// otherwise reach a coordinator that cannot read it and drops it, leaving the node waiting out
// cluster.join-timeout-s without a word. Herd before cluster protocol 20 sent gate version 2.
TEST(control_gate, a_node_of_another_cluster_protocol_is_refused_naming_both_versions) {
  behind_the_gate behind;
  notices log;
  gate_listener gate("127.0.0.1", 0, with_token("t"), behind.admit(), log.sink());
  const int sock = connect_loopback(gate.port());
  ASSERT_GE(sock, 0);
  send_all(sock, preamble("t", 2));
  const std::string answer = read_some(sock, 4096, 10s);
  ::close(sock);
  EXPECT_EQ(answer, "Ra node of cluster protocol 2, this coordinator speaks " +
                        std::to_string(herd::actors::cluster_protocol_version) +
                        "; run the same Herd version everywhere\n");
  EXPECT_EQ(behind.admitted(), 0);
}

TEST(control_gate, a_dialer_names_a_coordinator_that_does_not_listen) {
  std::uint16_t closed_port = 0;
  {
    behind_the_gate placeholder_behind;
    gate_listener placeholder("127.0.0.1", 0, with_token(""), placeholder_behind.admit(), nullptr);
    closed_port = placeholder.port(); // a port that was free a moment ago
  }
  gate_dialer dialer("127.0.0.1", closed_port, with_token(""));
  const gate_connection node = dialer.open();
  EXPECT_EQ(node.caf_fd, -1);
  EXPECT_EQ(node.failure, gate_failure::unreachable);
  EXPECT_NE(node.why.find("connect to 127.0.0.1:" + std::to_string(closed_port)), std::string::npos)
      << node.why;
}

TEST(control_gate, a_listen_address_in_use_is_named) {
  behind_the_gate behind;
  gate_listener first("127.0.0.1", 0, with_token(""), behind.admit(), nullptr);
  try {
    gate_listener second("127.0.0.1", first.port(), with_token(""), behind.admit(), nullptr);
    FAIL() << "two gates listened on one port";
  } catch (const std::runtime_error& failure) {
    EXPECT_NE(std::string(failure.what())
                  .find("Address already in use (another process listens "
                        "on this port: a coordinator still running?"),
              std::string::npos)
        << failure.what();
  }
}

// One address holding its share of silent connections cannot keep a node out: the node, from
// another address of the loopback network, gets in while they wait out their deadline.
TEST(control_gate, silent_connections_from_one_address_do_not_keep_other_nodes_out) {
  behind_the_gate behind;
  gate_settings settings = with_token("t");
  settings.handshake_timeout = 20s;
  gate_listener gate("127.0.0.1", 0, settings, behind.admit(), nullptr);
  std::vector<int> silent;
  for (int i = 0; i < 3 * gate_listener::max_pending_per_address; ++i) {
    const int sock = connect_loopback(gate.port());
    ASSERT_GE(sock, 0);
    silent.push_back(sock);
  }
  // From 127.0.0.2: another address (the whole 127/8 network is loopback on Linux).
  const int sock = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  local.sin_addr.s_addr = htonl(0x7f000002);
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&local), sizeof local), 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(gate.port());
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(sock, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  const auto hello = preamble("t");
  send_all(sock, hello);
  EXPECT_EQ(read_some(sock, 1, 5s), "A");
  ::close(sock);
  // The silent ones beyond the share were closed at once, unread.
  int closed = 0;
  for (int fd : silent) {
    closed += closed_within(fd, 100ms) ? 1 : 0;
    ::close(fd);
  }
  EXPECT_EQ(closed, 2 * gate_listener::max_pending_per_address);
}

// CPU seconds this process has used, all its threads together.
double process_cpu_seconds() {
  rusage used{};
  ::getrusage(RUSAGE_SELF, &used);
  return static_cast<double>(used.ru_utime.tv_sec + used.ru_stime.tv_sec) +
         static_cast<double>(used.ru_utime.tv_usec + used.ru_stime.tv_usec) * 1e-6;
}

// Out of descriptors, the gate pauses accepting and says why, rather than spinning on the
// connections waiting in the backlog. In a child process: it lowers its own descriptor limit.
TEST(control_gate, out_of_descriptors_it_pauses_accepting_and_says_why) {
  const auto outcome = herd::testing::run_forked(
      [] {
        behind_the_gate behind;
        notices log;
        gate_listener gate("127.0.0.1", 0, with_token("t"), behind.admit(), log.sink());
        // Every descriptor below the limit in use but one: that one goes to the connecting side.
        const int limit = ::open("/dev/null", O_RDONLY) + 2;
        const rlimit lowered{static_cast<rlim_t>(limit), static_cast<rlim_t>(limit)};
        ::setrlimit(RLIMIT_NOFILE, &lowered);
        while (::open("/dev/null", O_RDONLY) >= 0) {
        }
        ::close(limit - 1);
        const int sock = connect_loopback(gate.port()); // the gate cannot accept it: no descriptor
        if (sock < 0)
          return std::string("could not connect: ") + std::strerror(errno);
        std::this_thread::sleep_for(300ms); // the notice comes at the first failed accept
        const double before = process_cpu_seconds();
        std::this_thread::sleep_for(1500ms);
        return "cpu " + std::to_string(process_cpu_seconds() - before) + "\n" + log.all();
      },
      60s);
  ASSERT_TRUE(outcome.finished) << outcome.report;
  ASSERT_EQ(outcome.report.rfind("cpu ", 0), 0u) << outcome.report;
  const double cpu = std::stod(outcome.report.substr(4));
  // Spinning, the accept thread takes a core for the 1.5 s; pausing 100 ms at a time, nothing.
  EXPECT_LT(cpu, 0.3) << outcome.report;
  EXPECT_NE(outcome.report.find("cannot accept a connection: Too many open files (pausing; "),
            std::string::npos)
      << outcome.report;
}

// -- TLS --------------------------------------------------------------------------------------

// A cluster CA and certificates it signed for a coordinator and a node.
struct certificates {
  temp_directory dir;
  bool made = false;
  certificates() {
    const std::string d = dir.path().string();
    made = herd::testing::make_certificate_authority(d, "ca") &&
           herd::testing::make_signed_certificate(d, "coordinator", "ca") &&
           herd::testing::make_signed_certificate(d, "node", "ca");
  }
  gate_settings settings(const std::string& name, const std::string& token) const {
    gate_settings result = with_token(token);
    result.tls = {dir.file("ca.pem"), dir.file(name + ".pem"), dir.file(name + ".key")};
    return result;
  }
  /// Another certificate of this CA, for the alternative names `alt_names`.
  bool add(const std::string& name, const std::string& alt_names) const {
    return herd::testing::make_signed_certificate(dir.path().string(), name, "ca", alt_names);
  }
};

// A TCP relay between a client and the gate that keeps a copy of every byte it passes.
class recording_proxy {
public:
  explicit recording_proxy(std::uint16_t target) : target_(target) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address);
    ::listen(listen_fd_, 4);
    socklen_t length = sizeof address;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~recording_proxy() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    thread_.join();
  }
  std::uint16_t port() const { return port_; }
  std::string recorded() {
    std::lock_guard<std::mutex> guard(mutex_);
    return recorded_;
  }

private:
  void run() {
    const int client = ::accept(listen_fd_, nullptr, nullptr);
    if (client < 0)
      return;
    const int server = connect_loopback(target_);
    auto pump = [this](int from, int to) {
      char buffer[4096];
      for (ssize_t got; (got = ::recv(from, buffer, sizeof buffer, 0)) > 0;) {
        {
          std::lock_guard<std::mutex> guard(mutex_);
          recorded_.append(buffer, static_cast<std::size_t>(got));
        }
        if (::send(to, buffer, static_cast<std::size_t>(got), MSG_NOSIGNAL) != got)
          break;
      }
      ::shutdown(from, SHUT_RDWR);
      ::shutdown(to, SHUT_RDWR);
    };
    std::thread back([&] { pump(server, client); });
    pump(client, server);
    back.join();
    ::close(client);
    ::close(server);
  }

  std::uint16_t target_;
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::string recorded_;
};

// Sends and reads as CAF does: through the connection's TLS session.
void send_through(herd::cluster::gate_link& tls, const std::string& bytes) {
  ASSERT_TRUE(tls.write_all(bytes.data(), bytes.size(), herd::cluster::gate_clock::now() + 10s));
}

std::string read_through(herd::cluster::gate_link& tls, std::size_t size) {
  std::string bytes(size, '\0');
  return tls.read_exactly(bytes.data(), size, herd::cluster::gate_clock::now() + 10s)
             ? bytes
             : std::string();
}

// A TLS file that cannot serve is refused naming its key and what is wrong with it, in words
// where OpenSSL's codes would say "no start line" or "key values mismatch".
TEST(control_gate_tls, unusable_files_are_refused_naming_the_key_and_the_problem) {
  const certificates made;
  ASSERT_TRUE(made.made) << "openssl could not make the test certificates";
  auto refusal = [](const herd::cluster::tls_files& files) -> std::string {
    try {
      herd::cluster::tls_context context(herd::cluster::tls_context::side::server, files);
    } catch (const herd::config::invalid_config& refused) {
      return refused.errors().front().key + " | " + refused.what();
    }
    return "accepted";
  };
  const auto ca = made.dir.file("ca.pem");
  const auto cert = made.dir.file("coordinator.pem");
  const auto key = made.dir.file("coordinator.key");
  EXPECT_EQ(refusal({ca, cert, key}), "accepted");
  EXPECT_EQ(refusal({ca, key, key}),
            "cluster.tls-cert | cluster.tls-cert = " + key + ": no PEM certificate in this file");
  EXPECT_EQ(refusal({ca, cert, cert}),
            "cluster.tls-key | cluster.tls-key = " + cert + ": no PEM private key in this file");
  EXPECT_EQ(refusal({key, cert, key}),
            "cluster.tls-ca | cluster.tls-ca = " + key + ": no PEM certificate in this file");
  EXPECT_EQ(refusal({cert, cert, key}),
            "cluster.tls-ca | cluster.tls-ca = " + cert +
                ": holds no CA certificate (none of its certificates may sign others); give the "
                "cluster CA's certificate, not a node's");
  EXPECT_EQ(refusal({ca, cert, made.dir.file("node.key")}),
            "cluster.tls-key | cluster.tls-key = " + made.dir.file("node.key") +
                ": this key does not belong to the certificate cluster.tls-cert = " + cert);
  // A certificate the CA did not sign: every peer would refuse it, minutes later, elsewhere.
  const certificates other;
  ASSERT_TRUE(other.made) << "openssl could not make the test certificates";
  const auto stranger = other.dir.file("node.pem");
  EXPECT_EQ(refusal({ca, stranger, other.dir.file("node.key")}),
            "cluster.tls-cert | cluster.tls-cert = " + stranger +
                " does not verify against cluster.tls-ca = " + ca +
                " (unable to get local issuer certificate): every process's certificate must "
                "come from the cluster CA, or its peers refuse it");
}

TEST(control_gate_tls, the_token_and_the_frames_travel_encrypted) {
  certificates certs;
  ASSERT_TRUE(certs.made) << "openssl could not make the test certificates";
  behind_the_gate behind;
  notices log;
  const std::string token = "token-that-must-not-be-seen-on-the-wire";
  gate_listener gate("127.0.0.1", 0, certs.settings("coordinator", token), behind.admit(),
                     log.sink());
  recording_proxy wire(gate.port());
  gate_dialer dialer("127.0.0.1", wire.port(), certs.settings("node", token));
  const gate_connection node = dialer.open();
  ASSERT_GE(node.caf_fd, 0) << node.why << "\n" << log.all();
  ASSERT_GE(behind.end(0), 0);
  const auto coordinator = behind.tls(0);
  ASSERT_NE(coordinator, nullptr);
  ASSERT_NE(node.tls, nullptr);
  const std::string secret_payload = "model-parameters-in-a-control-message";
  const std::string up = frame(client_handshake, secret_payload);
  send_through(*node.tls, up);
  EXPECT_EQ(read_through(*coordinator, up.size()), up);
  const std::string down = frame(server_handshake, "the coordinator's answer", 1);
  send_through(*coordinator, down);
  EXPECT_EQ(read_through(*node.tls, down.size()), down);
  const std::string seen = wire.recorded();
  EXPECT_GT(seen.size(), up.size() + down.size());
  EXPECT_EQ(seen.find(token), std::string::npos) << "the token crossed the wire in the clear";
  EXPECT_EQ(seen.find("HERDGATE"), std::string::npos) << "the preamble crossed in the clear";
  EXPECT_EQ(seen.find(secret_payload), std::string::npos);
  ::close(node.caf_fd);
}

// The red-team trial's second finding: plain bytes after the preamble made a TLS coordinator lose
// every node. Now they fail that connection's TLS handshake and nothing else.
TEST(control_gate_tls, plain_bytes_are_refused_alone_and_tls_peers_go_on) {
  certificates certs;
  ASSERT_TRUE(certs.made) << "openssl could not make the test certificates";
  behind_the_gate behind;
  notices log;
  gate_listener gate("127.0.0.1", 0, certs.settings("coordinator", "t"), behind.admit(),
                     log.sink());
  gate_dialer dialer("127.0.0.1", gate.port(), certs.settings("node", "t"));
  const gate_connection good = dialer.open();
  ASSERT_GE(good.caf_fd, 0) << good.why << "\n" << log.all();
  ASSERT_GE(behind.end(0), 0);
  const auto good_behind = behind.tls(0);
  ASSERT_NE(good_behind, nullptr);
  ASSERT_NE(good.tls, nullptr);

  std::mt19937 generator(17);
  for (int attempt = 0; attempt < 20; ++attempt) {
    const int sock = connect_loopback(gate.port());
    ASSERT_GE(sock, 0);
    const std::string plain = attempt == 0   ? std::string(32, '\0')
                              : attempt == 1 ? preamble("t") + frame(client_handshake, "x")
                                             : random_bytes(1 + generator() % 600, generator());
    ::send(sock, plain.data(), plain.size(), MSG_NOSIGNAL);
    EXPECT_TRUE(closed_within(sock, 10s)) << "attempt " << attempt;
    ::close(sock);
  }
  // A node without the TLS settings is told what is missing.
  gate_dialer plain_node("127.0.0.1", gate.port(), with_token("t"));
  const gate_connection refused = plain_node.open();
  EXPECT_EQ(refused.failure, gate_failure::refused);
  EXPECT_NE(refused.why.find("this coordinator requires TLS"), std::string::npos) << refused.why;
  EXPECT_EQ(behind.admitted(), 1);
  EXPECT_NE(log.all().find("TLS handshake failed"), std::string::npos) << log.all();
  // The TLS node's connection still carries frames.
  const std::string hello = frame(client_handshake, "still here");
  send_through(*good.tls, hello);
  EXPECT_EQ(read_through(*good_behind, hello.size()), hello);
  ::close(good.caf_fd);
}

// Before TLS and the token, anyone may send part of the gate's magic word and wait, or send part
// of it and close: neither keeps a gate thread busy.
TEST(control_gate_tls, a_peer_that_sends_part_of_the_magic_word_costs_no_cpu) {
  certificates certs;
  ASSERT_TRUE(certs.made) << "openssl could not make the test certificates";
  behind_the_gate behind;
  gate_listener gate("127.0.0.1", 0, certs.settings("coordinator", "t"), behind.admit(), nullptr);
  std::vector<int> waiting;
  for (int i = 0; i < 4; ++i) {
    waiting.push_back(connect_loopback(gate.port()));
    ASSERT_GE(waiting.back(), 0);
    send_all(waiting.back(), "HERD");
  }
  const int closing = connect_loopback(gate.port());
  ASSERT_GE(closing, 0);
  send_all(closing, "HE");
  ::shutdown(closing, SHUT_WR);
  const double before = process_cpu_seconds();
  std::this_thread::sleep_for(1500ms);
  // Spinning, five threads would take both cores of the machine for the 1.5 s.
  EXPECT_LT(process_cpu_seconds() - before, 0.3);
  for (int sock : waiting) {
    EXPECT_TRUE(closed_within(sock, 10s)); // at the handshake's deadline
    ::close(sock);
  }
  EXPECT_TRUE(closed_within(closing, 10s));
  ::close(closing);
  EXPECT_EQ(behind.admitted(), 0);
}

// A node with TLS dialling a coordinator without it: the coordinator's log names the mismatch,
// not a port scanner.
TEST(control_gate_tls, a_tls_node_at_a_coordinator_without_tls_is_named_in_its_log) {
  certificates certs;
  ASSERT_TRUE(certs.made) << "openssl could not make the test certificates";
  behind_the_gate behind;
  notices log;
  gate_listener gate("127.0.0.1", 0, with_token(""), behind.admit(), log.sink());
  gate_dialer node("127.0.0.1", gate.port(), certs.settings("node", ""));
  // The node's side in words too, not OpenSSL's "wrong version number".
  const auto why = node.open().why;
  EXPECT_NE(why.find("the coordinator at 127.0.0.1:" + std::to_string(gate.port()) +
                     " answered in the clear: it does not use TLS"),
            std::string::npos)
      << why;
  EXPECT_EQ(behind.admitted(), 0);
  EXPECT_NE(log.all().find("a TLS client (a node with cluster.tls-* set?), but this coordinator "
                           "does not use TLS"),
            std::string::npos)
      << log.all();
}

TEST(control_gate_tls, a_certificate_another_ca_signed_fails_the_handshake_and_is_named) {
  certificates certs;
  certificates other;
  ASSERT_TRUE(certs.made && other.made) << "openssl could not make the test certificates";
  behind_the_gate behind;
  notices log;
  gate_listener gate("127.0.0.1", 0, certs.settings("coordinator", ""), behind.admit(), log.sink());
  gate_dialer stranger("127.0.0.1", gate.port(), other.settings("node", ""));
  const gate_connection attempt = stranger.open();
  EXPECT_EQ(attempt.failure, gate_failure::tls);
  EXPECT_NE(attempt.why.find("TLS handshake with the coordinator failed"), std::string::npos)
      << attempt.why;
  // The node checked the coordinator's certificate against its own CA, and says so.
  EXPECT_NE(attempt.why.find("the coordinator's certificate failed verification against the "
                             "cluster CA (cluster.tls-ca = " +
                             other.dir.file("ca.pem") + "): "),
            std::string::npos)
      << attempt.why;
  EXPECT_EQ(behind.admitted(), 0);
  // The coordinator's log puts the refusal on the node's side, not its own.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (log.all().find("ended the TLS handshake") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  EXPECT_NE(log.all().find("the node at 127.0.0.1 ended the TLS handshake"), std::string::npos)
      << log.all();
  EXPECT_NE(log.all().find("it refused this coordinator's certificate: another CA than the "
                           "node's cluster.tls-ca signed it, or it does not name the address"),
            std::string::npos)
      << log.all();
}

// The other way round: the node trusts the coordinator, but the coordinator does not trust the
// node's certificate (another CA signed it). Under TLS 1.3 the refusal arrives after the node's
// handshake returned; it is still a TLS failure, which the node does not retry, naming its own
// certificate, not a gate that did not answer.
TEST(control_gate_tls, a_node_certificate_the_coordinator_does_not_trust_is_a_tls_failure) {
  certificates certs;
  certificates other;
  ASSERT_TRUE(certs.made && other.made) << "openssl could not make the test certificates";
  behind_the_gate behind;
  notices log;
  gate_listener gate("127.0.0.1", 0, certs.settings("coordinator", ""), behind.admit(), log.sink());
  // It trusts the coordinator's CA besides its own (one that trusted only the coordinator's would
  // not start: its own certificate would not verify).
  const auto both = other.dir.file("both-ca.pem");
  ASSERT_EQ(std::system(
                ("cat " + certs.dir.file("ca.pem") + " " + other.dir.file("ca.pem") + " > " + both)
                    .c_str()),
            0);
  auto settings = other.settings("node", "");
  settings.tls.ca = both;
  gate_dialer stranger("127.0.0.1", gate.port(), settings);
  const gate_connection attempt = stranger.open();
  EXPECT_EQ(attempt.failure, gate_failure::tls) << attempt.why;
  EXPECT_NE(attempt.why.find("the coordinator refused this node's certificate"), std::string::npos)
      << attempt.why;
  EXPECT_EQ(behind.admitted(), 0);
}

// The dialer gets through the gate (and its connection is closed again).
void expect_admitted(gate_dialer& dialer, notices& log) {
  const gate_connection admitted = dialer.open();
  EXPECT_GE(admitted.caf_fd, 0) << admitted.why << "\n" << log.all();
  if (admitted.caf_fd >= 0)
    ::close(admitted.caf_fd);
}

TEST(control_gate_tls, a_node_whose_certificate_names_another_address_is_refused_with_both) {
  certificates certs;
  ASSERT_TRUE(certs.made && certs.add("elsewhere", "DNS:node9.invalid,IP:10.9.9.9"))
      << "openssl could not make the test certificates";
  behind_the_gate behind;
  notices log;
  gate_listener gate("127.0.0.1", 0, certs.settings("coordinator", "t"), behind.admit(),
                     log.sink());
  gate_dialer impostor("127.0.0.1", gate.port(), certs.settings("elsewhere", "t"));
  const gate_connection refused = impostor.open();
  EXPECT_EQ(refused.failure, gate_failure::refused);
  EXPECT_NE(refused.why.find("is not for 127.0.0.1, the address it connects from"),
            std::string::npos)
      << refused.why;
  EXPECT_NE(refused.why.find("DNS:node9.invalid, IP:10.9.9.9"), std::string::npos) << refused.why;
  EXPECT_NE(log.all().find("refused a connection from 127.0.0.1"), std::string::npos) << log.all();
  EXPECT_EQ(behind.admitted(), 0);
  // A node whose certificate names its address by a DNS name that resolves to it joins.
  ASSERT_TRUE(certs.add("by-name", "DNS:localhost"));
  gate_dialer named("127.0.0.1", gate.port(), certs.settings("by-name", "t"));
  const gate_connection admitted = named.open();
  EXPECT_GE(admitted.caf_fd, 0) << admitted.why << "\n" << log.all();
  EXPECT_GE(behind.end(0), 0) << "admitted behind the gate";
  if (admitted.caf_fd >= 0)
    ::close(admitted.caf_fd);
}

TEST(control_gate_tls, a_coordinator_whose_certificate_names_another_host_is_refused_by_the_node) {
  certificates certs;
  ASSERT_TRUE(certs.made && certs.add("elsewhere", "IP:10.9.9.9"))
      << "openssl could not make the test certificates";
  behind_the_gate behind;
  notices log;
  gate_listener gate("127.0.0.1", 0, certs.settings("elsewhere", "t"), behind.admit(), log.sink());
  gate_dialer node("127.0.0.1", gate.port(), certs.settings("node", "t"));
  const gate_connection attempt = node.open();
  EXPECT_EQ(attempt.failure, gate_failure::tls);
  EXPECT_NE(attempt.why.find("the coordinator's certificate is not for 127.0.0.1 (it names "
                             "CN=elsewhere, IP:10.9.9.9); dial an address or name the certificate "
                             "names, or reissue it"),
            std::string::npos)
      << attempt.why;
  EXPECT_EQ(behind.admitted(), 0);
  // Dialled by a name its certificate carries, the coordinator is accepted.
  gate_listener named_gate("127.0.0.1", 0, certs.settings("coordinator", "t"), behind.admit(),
                           log.sink());
  gate_dialer by_name("localhost", named_gate.port(), certs.settings("node", "t"));
  expect_admitted(by_name, log);
}

// A gate listening on every IPv6 and IPv4 address sees an IPv4 node as ::ffff:a.b.c.d; the node's
// certificate names a.b.c.d.
TEST(control_gate_tls, an_ipv4_node_of_a_dual_stack_gate_is_checked_by_its_ipv4_address) {
  certificates certs;
  ASSERT_TRUE(certs.made) << "openssl could not make the test certificates";
  behind_the_gate behind;
  notices log;
  std::unique_ptr<gate_listener> gate;
  try {
    gate = std::make_unique<gate_listener>("::", 0, certs.settings("coordinator", "t"),
                                           behind.admit(), log.sink());
  } catch (const std::runtime_error& no_ipv6) {
    GTEST_SKIP() << "no IPv6 here: " << no_ipv6.what();
  }
  gate_dialer node("127.0.0.1", gate->port(), certs.settings("node", "t"));
  expect_admitted(node, log);
}

TEST(control_gate_tls, without_name_checks_any_certificate_the_ca_signed_is_a_member) {
  certificates certs;
  ASSERT_TRUE(certs.made && certs.add("elsewhere", "IP:10.9.9.9"))
      << "openssl could not make the test certificates";
  behind_the_gate behind;
  notices log;
  auto coordinator = certs.settings("elsewhere", "t");
  coordinator.check_names = false;
  gate_listener gate("127.0.0.1", 0, coordinator, behind.admit(), log.sink());
  auto member = certs.settings("elsewhere", "t");
  member.check_names = false;
  gate_dialer node("127.0.0.1", gate.port(), member);
  expect_admitted(node, log);
}

// A TLS write that would block (the peer reads nothing and the socket is full) goes on where it
// stopped once the peer reads, from a buffer that has moved meanwhile, as CAF's writer retries:
// every byte arrives, in order.
TEST(control_gate_tls, a_write_that_would_block_goes_on_from_a_moved_buffer) {
  using herd::cluster::gate_clock;
  using herd::cluster::gate_link;
  using herd::cluster::link_status;
  using herd::cluster::tls_context;
  certificates certs;
  ASSERT_TRUE(certs.made);
  const tls_context server_side(tls_context::side::server,
                                {certs.dir.file("ca.pem"), certs.dir.file("coordinator.pem"),
                                 certs.dir.file("coordinator.key")});
  const tls_context client_side(
      tls_context::side::client,
      {certs.dir.file("ca.pem"), certs.dir.file("node.pem"), certs.dir.file("node.key")});
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  const int small = 64 * 1024;
  ::setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  gate_link server(fds[0], &server_side);
  gate_link client(fds[1], &client_side);
  herd::cluster::handshake_result server_handshake;
  std::thread accepting([&] { server_handshake = server.handshake(gate_clock::now() + 10s); });
  const auto client_handshake = client.handshake(gate_clock::now() + 10s);
  accepting.join();
  ASSERT_TRUE(client_handshake.ok()) << client_handshake.describe();
  ASSERT_TRUE(server_handshake.ok()) << server_handshake.describe();

  std::string payload(8u << 20, '\0');
  for (std::size_t i = 0; i < payload.size(); ++i)
    payload[i] = static_cast<char>(i * 7 % 251);
  std::size_t sent = 0;
  bool blocked = false;
  while (!blocked && sent < payload.size()) {
    std::size_t moved = 0;
    const auto status = client.write_some(payload.data() + sent, payload.size() - sent, moved);
    blocked = status == link_status::would_block;
    ASSERT_TRUE(blocked || status == link_status::done) << client.failure();
    sent += moved;
  }
  ASSERT_TRUE(blocked) << "8 MiB never filled the socket";
  EXPECT_EQ(client.write_wants(), POLLOUT);

  std::string received(payload.size(), '\0');
  bool read_all = false;
  std::thread reading([&] {
    read_all = server.read_exactly(received.data(), received.size(), gate_clock::now() + 20s);
  });
  // The rest, from a copy at another address each time the write would block.
  std::string rest = payload.substr(sent);
  std::size_t offset = 0;
  const auto deadline = gate_clock::now() + 20s;
  while (offset < rest.size() && gate_clock::now() < deadline) {
    std::size_t moved = 0;
    const auto status = client.write_some(rest.data() + offset, rest.size() - offset, moved);
    ASSERT_TRUE(status == link_status::done || status == link_status::would_block)
        << client.failure();
    offset += moved;
    if (status == link_status::would_block) {
      rest = std::string(rest.substr(offset)); // moved: the retry passes the same bytes elsewhere
      offset = 0;
      pollfd ready{client.fd(), client.write_wants(), 0};
      ::poll(&ready, 1, 1000);
    }
  }
  reading.join();
  ASSERT_TRUE(read_all);
  EXPECT_TRUE(received == payload) << "bytes lost, repeated or reordered";
}

TEST(control_gate_tls, an_unusable_tls_file_is_named_with_its_key) {
  certificates certs;
  ASSERT_TRUE(certs.made) << "openssl could not make the test certificates";
  gate_settings settings = certs.settings("coordinator", "");
  settings.tls.key = certs.dir.file("node.key"); // another certificate's key
  behind_the_gate behind;
  try {
    gate_listener gate("127.0.0.1", 0, settings, behind.admit(), nullptr);
    FAIL() << "a key that does not belong to the certificate was accepted";
  } catch (const std::runtime_error& failure) {
    EXPECT_NE(std::string(failure.what()).find("cluster.tls-key = " + settings.tls.key),
              std::string::npos)
        << failure.what();
  }
  settings = certs.settings("node", "");
  settings.tls.ca = certs.dir.file("missing.pem");
  try {
    gate_dialer dialer("127.0.0.1", 1, settings);
    FAIL() << "a missing CA file was accepted";
  } catch (const std::runtime_error& failure) {
    EXPECT_NE(std::string(failure.what()).find("cluster.tls-ca = " + settings.tls.ca),
              std::string::npos)
        << failure.what();
  }
}

} // namespace
