// The node's side of the rendezvous (registry_store) against a stand-in registry in this process:
// a read waiting for a key ends as soon as the registry is gone or a stop signal came, not when
// its timeout (the rest of cluster.join-timeout-s, ten minutes by default) runs out.
#include "actors/messages.hpp"
#include "comm/errors.hpp"

#include <caf/all.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <gtest/gtest.h>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster/registry_store.hpp"
#include "support/herd_system_config.hpp"

namespace {

using namespace std::chrono_literals;
using herd::actors::store_get_atom;
using herd::comm::comm_error;
using herd::comm::outcome;

using bytes = std::vector<char>;

// A registry that answers reads of "set" at once, refuses "refused" (as the coordinator does
// when the run ended before the key was set) and keeps every other read waiting.
caf::behavior waiting_registry(caf::event_based_actor* self,
                               std::shared_ptr<std::vector<caf::response_promise>> waiting) {
  return {[self, waiting](store_get_atom,
                          const std::string& key) -> caf::result<herd::actors::wire_bytes> {
    if (key == "set")
      return herd::actors::wire_bytes{{'o', 'k'}};
    if (key == "refused")
      return caf::make_error(caf::sec::runtime_error, "the run ended before it started");
    waiting->push_back(self->make_response_promise());
    return waiting->back();
  }};
}

struct registry_store_test : ::testing::Test {
  registry_store_test() : system(herd::testing::herd_system_config()) {
    registry = system.spawn(waiting_registry, waiting);
  }
  ~registry_store_test() override {
    caf::anon_send_exit(registry, caf::exit_reason::kill);
    registry = nullptr;
  }

  // What get() threw, or outcome::done with no exception.
  outcome outcome_of(herd::cluster::registry_store& store, std::chrono::milliseconds timeout,
                     std::string* message = nullptr, const std::string& key = "unset") {
    try {
      store.get(key, timeout);
    } catch (const comm_error& failure) {
      if (message != nullptr)
        *message = failure.what();
      return failure.kind();
    }
    return outcome::done;
  }

  // The system first: destroyed last, after the promises and the handle that refer to its actors.
  caf::actor_system system;
  std::shared_ptr<std::vector<caf::response_promise>> waiting =
      std::make_shared<std::vector<caf::response_promise>>();
  caf::actor registry;
};

TEST_F(registry_store_test, a_key_that_is_set_is_read) {
  herd::cluster::registry_store store(system, registry);
  EXPECT_EQ(store.get("set", 5s), (bytes{'o', 'k'}));
}

TEST_F(registry_store_test, a_key_never_set_ends_the_read_at_its_timeout) {
  herd::cluster::registry_store store(system, registry);
  std::string message;
  EXPECT_EQ(outcome_of(store, 300ms, &message), outcome::timeout);
  EXPECT_NE(message.find("rendezvous key unset not set by the other nodes (waited up to 300 ms)"),
            std::string::npos)
      << message;
}

// The coordinator's no is an answer, not a timeout: it said it was refused (it said it waited out
// its timeout), and refusal() holds the coordinator's reason for the node to lead with.
TEST_F(registry_store_test, a_key_the_registry_refuses_ends_the_read_at_once_as_a_refusal) {
  herd::cluster::registry_store store(system, registry);
  std::string message;
  EXPECT_EQ(outcome_of(store, 60s, &message, "refused"), outcome::failed) << message;
  EXPECT_NE(message.find("rendezvous key refused will not be set: the coordinator refused it"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find("waited"), std::string::npos) << message;
  ASSERT_TRUE(store.refusal().has_value());
  EXPECT_NE(store.refusal()->find("the run ended before it started"), std::string::npos)
      << *store.refusal();
}

// The coordinator killed while a node's rendezvous waits: the read used to wait out its whole
// timeout, and the node said nothing for ten minutes.
TEST_F(registry_store_test, the_registry_gone_ends_the_read_at_once_as_a_lost_peer) {
  herd::cluster::registry_store store(system, registry);
  auto read = std::async(std::launch::async, [&] {
    std::string message;
    const auto kind = outcome_of(store, 60s, &message);
    return std::make_pair(kind, message);
  });
  std::this_thread::sleep_for(200ms); // the read waits
  caf::anon_send_exit(registry, caf::exit_reason::kill);
  const auto [kind, message] = read.get();
  EXPECT_EQ(kind, outcome::peer_lost) << message;
  EXPECT_NE(message.find("lost the coordinator while waiting for rendezvous key unset"),
            std::string::npos)
      << message;
}

// systemctl stop while the data plane connects: one signal ends the wait.
TEST_F(registry_store_test, a_stop_signal_ends_the_read) {
  std::atomic<bool> stop{false};
  herd::cluster::registry_store store(system, registry, [&stop] { return stop.load(); });
  auto read = std::async(std::launch::async, [&] { return outcome_of(store, 60s); });
  std::this_thread::sleep_for(200ms);
  stop = true;
  EXPECT_EQ(read.get(), outcome::failed);
}

// A rendezvous left to a thread of its own may outlive the node's actor system: close() ends the
// read under way and waits for it, lets go of the registry, and every later call is refused
// instead of reaching a system that may be gone.
TEST_F(registry_store_test, a_closed_store_ends_the_read_under_way_and_refuses_later_calls) {
  herd::cluster::registry_store store(system, registry);
  auto read = std::async(std::launch::async, [&] { return outcome_of(store, 60s); });
  std::this_thread::sleep_for(200ms); // the read waits
  EXPECT_TRUE(store.close());
  EXPECT_EQ(read.wait_for(0s), std::future_status::ready) << "close() returned before the read";
  EXPECT_EQ(read.get(), outcome::failed);
  std::string message;
  EXPECT_EQ(outcome_of(store, 5s, &message, "set"), outcome::failed);
  EXPECT_NE(message.find("this node stopped using the rendezvous"), std::string::npos) << message;
  EXPECT_THROW(store.set("key", {'x'}), comm_error);
}

// A rendezvous thread left in Gloo's connect after its reads: CAF keeps the system's logger in a
// thread-local of each thread that made a scoped actor, and the system's destructor waits for the
// logger, so a node whose data plane hung never ended after a stop signal. The store's calls leave
// nothing of the system on their thread.
TEST(registry_store_alone, a_thread_that_read_keys_and_lives_on_does_not_hold_the_systems_end) {
  std::promise<void> read;
  std::promise<void> let_go;
  auto released = let_go.get_future().share();
  std::thread connecting;
  // The system is made, used and destroyed on a thread of its own (CAF clears the destroying
  // thread's reference, not another's), which must end while the reading thread lives on.
  auto node = std::async(std::launch::async, [&] {
    caf::actor_system system{herd::testing::herd_system_config()};
    auto waiting = std::make_shared<std::vector<caf::response_promise>>();
    auto registry = system.spawn(waiting_registry, waiting);
    auto store = std::make_shared<herd::cluster::registry_store>(system, registry);
    connecting = std::thread([store, &read, released] {
      EXPECT_EQ(store->get("set", 5s), (bytes{'o', 'k'}));
      read.set_value();
      released.wait(); // as a thread in Gloo's connect, alive after its last read
    });
    read.get_future().wait();
    EXPECT_TRUE(store->close());
    caf::anon_send_exit(registry, caf::exit_reason::kill);
  });
  const bool in_time = node.wait_for(30s) == std::future_status::ready;
  EXPECT_TRUE(in_time) << "the actor system's end waited for the reading thread";
  let_go.set_value();
  node.wait();
  connecting.join();
}

} // namespace
