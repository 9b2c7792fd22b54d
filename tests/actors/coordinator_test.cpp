// The group coordinator on its own, without workers: what it does with messages that do not
// belong to its run.
#include "actors/group_coordinator.hpp"
#include "actors/messages.hpp"

#include <chrono>
#include <future>
#include <gtest/gtest.h>

#include "support/session_config.hpp"

namespace {

using herd::actors::stop_cause;
using namespace herd::actors;

// A coordinator whose workers report through messages (a cluster's: no step inbox) is told that
// an inbox holds reports: it ignores that, and stops and reports as usual.
TEST(group_coordinator, an_inbox_wake_without_an_inbox_changes_nothing) {
  caf::actor_system_config config;
  add_message_types(config);
  caf::actor_system system{config};
  coordinator_setup setup;
  setup.config = herd::testing::small_session_config(2, 8);
  setup.samples_per_epoch = 64;
  std::promise<run_summary> finished;
  setup.on_finished = [&finished](run_summary summary, std::shared_ptr<const std::vector<float>>) {
    finished.set_value(std::move(summary));
  };
  auto summary = finished.get_future();
  const auto coordinator = spawn_group_coordinator(system, std::move(setup));
  caf::anon_send(coordinator, inbox_atom::value);
  caf::anon_send(coordinator, stop_atom::value);
  ASSERT_EQ(summary.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "the coordinator did not finish";
  const auto ended = summary.get();
  EXPECT_EQ(ended.stop_reason, stop_cause::interrupted);
  EXPECT_TRUE(ended.error.empty()) << ended.error;
  EXPECT_EQ(ended.steps, 0u);
}

} // namespace
