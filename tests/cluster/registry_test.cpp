// The registry actor alone, before any node: a registry that stops on its own ends the wait for
// the run with why.
#include "actors/messages.hpp"
#include "actors/run_parts.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <gtest/gtest.h>
#include <memory>
#include <string>

#include "cluster/registry.hpp"
#include "support/herd_system_config.hpp"

namespace {

using namespace std::chrono_literals;

struct registry_test : ::testing::Test {
  registry_test() : system(herd::testing::herd_system_config()) {
    context->result = std::make_shared<herd::actors::run_outcome>();
    context->config.cluster.min_nodes = 2;
    registry = herd::cluster::spawn_registry(system, context);
  }
  ~registry_test() override {
    if (registry)
      caf::anon_send_exit(registry, caf::exit_reason::kill);
    registry = nullptr;
  }

  caf::actor_system system;
  std::shared_ptr<herd::cluster::registry_context> context =
      std::make_shared<herd::cluster::registry_context>();
  caf::actor registry;
};

// `herd coordinator` waits for this summary: it used to wait forever once its registry was gone.
TEST_F(registry_test, a_registry_that_stops_before_the_run_ends_the_wait_saying_so) {
  ASSERT_FALSE(context->result->wait_for(100ms)); // waiting for nodes: no summary yet
  caf::anon_send_exit(registry, caf::exit_reason::kill);
  ASSERT_TRUE(context->result->wait_for(10s));
  const auto summary = context->result->summary();
  ASSERT_TRUE(summary.has_value());
  EXPECT_FALSE(summary->started);
  EXPECT_EQ(summary->stop_reason, herd::actors::stop_cause::error);
  EXPECT_NE(summary->error.find("the registry stopped: "), std::string::npos) << summary->error;
  EXPECT_NE(summary->error.find("kill"), std::string::npos) << summary->error;
}

// Once the run started, its group coordinator delivers the summary with the run's numbers; the
// registry's end must not pre-empt it with an empty one.
TEST_F(registry_test, a_registry_that_stops_after_the_run_started_leaves_the_summary_to_the_run) {
  context->started = true;
  caf::anon_send_exit(registry, caf::exit_reason::kill);
  registry = nullptr;
  system.await_all_actors_done();
  EXPECT_FALSE(context->result->wait_for(200ms));
}

} // namespace
