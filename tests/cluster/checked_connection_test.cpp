// An admitted connection reaches the coordinator's CAF as the peer's own socket (with TLS, with
// the session the gate began on it), with no relay thread in between; CAF reads it through a
// checked scribe. These tests attack a real coordinator (a cluster_session of this process, so a
// crash fails the test run), in the clear and with TLS, with members' connections (the right
// token and certificate) that break CAF's framing: each is dropped alone, the log names why, the
// gate stops counting it, and a node's connection made before and after still works.
#include "actors/messages.hpp"
#include "herd/dataset.hpp"
#include "herd/run_summary.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cluster/cluster_session.hpp"
#include "cluster/remoting.hpp"
#include "support/eventually.hpp"
#include "support/gate_wire.hpp"
#include "support/temp_directory.hpp"
#include "support/test_certificates.hpp"

namespace {

using namespace herd::testing::gate_wire;
using namespace std::chrono_literals;

// The coordinator's notices (a dropped connection among them).
class notice_log : public herd::actors::run_observer {
public:
  void on_notice(std::string_view text) override {
    std::lock_guard<std::mutex> guard(mutex_);
    text_ += std::string(text) + "\n";
  }
  std::string text() {
    std::lock_guard<std::mutex> guard(mutex_);
    return text_;
  }

private:
  std::mutex mutex_;
  std::string text_;
};

// A coordinator that waits for two nodes that never come; with `tls`, the cluster has a CA, and
// the coordinator and its members share one certificate (for localhost and 127.0.0.1).
struct waiting_coordinator {
  herd::testing::temp_directory dir;
  herd::config::run_config config;
  notice_log log;
  std::unique_ptr<herd::cluster::cluster_session> session;

  explicit waiting_coordinator(bool tls) {
    if (tls) {
      const auto d = dir.path().string();
      if (!herd::testing::make_certificate_authority(d, "ca") ||
          !herd::testing::make_signed_certificate(d, "member", "ca"))
        throw std::runtime_error("openssl could not make the test certificates");
      config.cluster.tls_ca = dir.file("ca.pem");
      config.cluster.tls_cert = dir.file("member.pem");
      config.cluster.tls_key = dir.file("member.key");
    }
    config.train.workers = 2;
    config.data.dataset = "synthetic";
    config.cluster.min_nodes = 2;
    herd::cluster::cluster_options options;
    options.listen_host = "127.0.0.1";
    options.observer = &log;
    session = std::make_unique<herd::cluster::cluster_session>(
        config,
        std::make_shared<herd::models::train_test_split>(
            herd::models::make_synthetic_split(64, 16, 24, 5, 3)),
        options);
  }
  ~waiting_coordinator() {
    session->request_stop();
    session->wait_for(30s);
  }
};

// A node's actor system, connected through the gate: asks the registry for a rendezvous key,
// which it refuses to a process that never joined. The answer proves the connection works.
class member {
public:
  member(const herd::config::run_config& config, std::uint16_t port)
      : system_(configured(system_config_, config)),
        gate_("127.0.0.1", port, herd::cluster::gate_settings_of(config.cluster)) {
    registry_ = herd::cluster::remote_through_gate(system_, gate_, outcome_, 10s);
  }

  const herd::cluster::gate_connection& outcome() const { return outcome_; }

  std::string ask() {
    if (!registry_)
      return "not connected: " + outcome_.why;
    caf::scoped_actor self{system_};
    std::string answer;
    self->request(registry_, 10s, herd::actors::store_get_atom::value, std::string("any-key"))
        .receive([&](const herd::actors::wire_bytes&) { answer = "a value"; },
                 [&](caf::error& error) { answer = system_.render(error); });
    return answer;
  }

private:
  static caf::actor_system_config& configured(caf::actor_system_config& system_config,
                                              const herd::config::run_config& config) {
    herd::cluster::configure_remoting(system_config, config.cluster);
    return system_config;
  }

  caf::actor_system_config system_config_; // first: the system keeps a reference to it
  caf::actor_system system_;
  herd::cluster::gate_dialer gate_;
  herd::cluster::gate_connection outcome_;
  caf::actor registry_;
};

constexpr const char* refused_to_strangers = "for welcomed nodes only";

using herd::testing::eventually;

// A member's connection that sends `bytes` once admitted, and sees whether the coordinator hangs
// up.
class attacker {
public:
  attacker(const herd::config::run_config& config, std::uint16_t port)
      : gate_("127.0.0.1", port, herd::cluster::gate_settings_of(config.cluster)),
        connection_(gate_.open()) {
    if (connection_.caf_fd >= 0 && !connection_.tls) // plain: read with deadlines
      ::fcntl(connection_.caf_fd, F_SETFL, ::fcntl(connection_.caf_fd, F_GETFL, 0) & ~O_NONBLOCK);
  }
  ~attacker() {
    if (connection_.caf_fd >= 0)
      ::close(connection_.caf_fd);
  }
  bool admitted() const { return connection_.caf_fd >= 0; }
  bool secure() const { return connection_.tls != nullptr; }

  void send(const std::string& bytes) {
    if (connection_.tls)
      ASSERT_TRUE(connection_.tls->write_all(bytes.data(), bytes.size(),
                                             herd::cluster::gate_clock::now() + 10s));
    else
      send_all(connection_.caf_fd, bytes);
  }

  // True when the coordinator closed the connection within `timeout` (what it sent first, its
  // own handshake, is read and dropped).
  bool dropped_within(std::chrono::milliseconds timeout) {
    if (!connection_.tls)
      return closed_within(connection_.caf_fd, timeout);
    const auto deadline = herd::cluster::gate_clock::now() + timeout;
    char buffer[4096];
    while (herd::cluster::gate_clock::now() < deadline) {
      std::size_t moved = 0;
      const auto status = connection_.tls->read_some(buffer, sizeof buffer, moved);
      if (status == herd::cluster::link_status::closed ||
          status == herd::cluster::link_status::failed)
        return true;
      if (status == herd::cluster::link_status::would_block)
        std::this_thread::sleep_for(5ms);
    }
    return false;
  }

private:
  herd::cluster::gate_dialer gate_;
  herd::cluster::gate_connection connection_;
};

class checked_connection : public ::testing::TestWithParam<bool> {};

TEST_P(checked_connection, a_member_that_breaks_the_framing_is_dropped_alone_and_others_go_on) {
  waiting_coordinator coordinator(GetParam());
  const auto port = coordinator.session->port();
  member before(coordinator.config, port);
  EXPECT_NE(before.ask().find(refused_to_strangers), std::string::npos);

  // The red-team trial's first payload (a client handshake that announces no payload: a null
  // dereference in CAF), a header announcing 4 GB (CAF would allocate it), and the rest of
  // basp_check's rules, each from a connection that passed the gate as a member.
  const std::vector<std::pair<std::string, std::string>> attacks{
      {"an empty client handshake", std::string(1, '\x01') + std::string(31, '\0')},
      {"a payload of 4 GB announced", frame(client_handshake, "", 0, 0, 0, 0xfffffff0u)},
      {"a server handshake from a node", frame(server_handshake, "x", 1)},
      {"a direct message before the handshake", frame(direct_message, "x", 0, 0, 5)},
      {"an unknown operation", frame(200, "abc")},
  };
  for (const auto& [name, bytes] : attacks) {
    attacker peer(coordinator.config, port);
    ASSERT_TRUE(peer.admitted()) << name;
    ASSERT_EQ(peer.secure(), GetParam());
    peer.send(bytes);
    EXPECT_TRUE(peer.dropped_within(10s)) << name << " was not dropped";
  }
  const auto log = coordinator.log.text();
  EXPECT_NE(log.find("dropped the node connection from 127.0.0.1: it broke the control protocol "
                     "(frame 1: a client handshake without a payload)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("a payload of 4294967280 bytes (at most"), std::string::npos) << log;
  // Only the member's connection is left: CAF let go of every attacker's.
  EXPECT_TRUE(eventually([&] { return coordinator.session->connections() == 1; }, 10s))
      << coordinator.session->connections() << " connections";

  // The member's connection is untouched, and a new one gets in.
  EXPECT_NE(before.ask().find(refused_to_strangers), std::string::npos);
  member after(coordinator.config, port);
  EXPECT_NE(after.ask().find(refused_to_strangers), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(clear_and_tls, checked_connection, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "tls" : "clear";
                         });

} // namespace
