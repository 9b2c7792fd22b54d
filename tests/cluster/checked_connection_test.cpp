// A connection in the clear reaches the coordinator's CAF as the peer's own socket, with no relay
// thread in between; CAF reads it through a checked scribe. These tests attack a real
// coordinator (a cluster_session of this process, so a crash fails the test run) with members'
// connections (the right token) that break CAF's framing: each is dropped alone, the log names
// why, the gate stops counting it, and a node's connection made before and after still works.
#include "actors/messages.hpp"
#include "herd/dataset.hpp"
#include "herd/run_summary.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <gtest/gtest.h>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cluster/cluster_session.hpp"
#include "cluster/remoting.hpp"
#include "support/gate_wire.hpp"

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

// A coordinator that waits for two nodes that never come, in the clear.
struct waiting_coordinator {
  herd::config::run_config config;
  notice_log log;
  std::unique_ptr<herd::cluster::cluster_session> session;

  waiting_coordinator() {
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
        .receive([&](const std::vector<char>&) { answer = "a value"; },
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

// Polls until `condition` holds or `timeout` passed.
template <class Condition>
bool eventually(Condition condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  return condition();
}

TEST(checked_connection, a_member_that_breaks_the_framing_is_dropped_alone_and_others_go_on) {
  waiting_coordinator coordinator;
  const auto port = coordinator.session->port();
  member before(coordinator.config, port);
  ASSERT_TRUE(before.outcome().direct) << "in the clear, CAF should read the socket itself";
  EXPECT_NE(before.ask().find(refused_to_strangers), std::string::npos);

  // The red-team trial's first payload (a client handshake that announces no payload: a null
  // dereference in CAF), a header announcing 4 GB (CAF would allocate it), and the rest of
  // basp_check's rules, each from a connection that passed the gate with the right token.
  const std::vector<std::pair<std::string, std::string>> attacks{
      {"an empty client handshake", std::string(1, '\x01') + std::string(31, '\0')},
      {"a payload of 4 GB announced", frame(client_handshake, "", 0, 0, 0, 0xfffffff0u)},
      {"a server handshake from a node", frame(server_handshake, "x", 1)},
      {"a direct message before the handshake", frame(direct_message, "x", 0, 0, 5)},
      {"an unknown operation", frame(200, "abc")},
  };
  for (const auto& [name, bytes] : attacks) {
    const int attacker = authenticated(port, "");
    ASSERT_GE(attacker, 0) << name;
    send_all(attacker, bytes);
    EXPECT_TRUE(closed_within(attacker, 10s)) << name << " was not dropped";
    ::close(attacker);
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

} // namespace
