// The aggregator across processes, with the test playing coordinator, node reducers and workers:
// a round whose members all live on a node that is lost is settled by that loss alone.
#include "actors/aggregator.hpp"
#include "actors/messages.hpp"

#include <gtest/gtest.h>
#include <optional>
#include <vector>

namespace {

using namespace herd::actors;

// A worker that takes contribution requests and never answers them while it lives.
class mute_worker final : public caf::event_based_actor {
public:
  using caf::event_based_actor::event_based_actor;

  caf::behavior make_behavior() override {
    return {
        [this](contribute_atom, std::uint64_t, std::uint64_t) -> caf::result<contribution> {
          pending_.push_back(make_response_promise<contribution>());
          return pending_.back();
        },
    };
  }

  void on_exit() override { pending_.clear(); } // a promise holds this actor

private:
  std::vector<caf::typed_response_promise<contribution>> pending_;
};

caf::behavior idle_reducer() {
  return {[](const reduce_order&) {}};
}

TEST(aggregator_across_nodes, members_of_a_lost_node_are_reported_unanswered_when_it_goes) {
  caf::actor_system_config config;
  add_message_types(config);
  caf::actor_system system{config};
  caf::scoped_actor coordinator{system};
  auto first_reducer = system.spawn(idle_reducer);
  auto second_reducer = system.spawn(idle_reducer);
  auto worker = system.spawn<mute_worker>();
  aggregator_setup setup;
  setup.results = herd::comm::buffer_pool::create(4);
  setup.contribution_timeout = std::chrono::minutes(10); // only the node's loss can settle it
  setup.worker_nodes = {0, 1};
  setup.node_reducers = {first_reducer, second_reducer};
  auto aggregator = spawn_aggregator(system, setup, coordinator);

  group_plan plan;
  plan.round = 7;
  plan.members = {1};
  plan.member_handles = {worker};
  plan.kind = round_kind::partial;
  coordinator->send(aggregator, plan);
  coordinator->send_exit(second_reducer, caf::exit_reason::user_shutdown); // node 1 is lost

  std::optional<group_done> report;
  coordinator->receive([&](const group_done& done) { report = done; },
                       caf::after(std::chrono::seconds(30)) >> [] {});
  ASSERT_TRUE(report) << "the round was not settled by its node's loss";
  EXPECT_EQ(report->round, 7u);
  EXPECT_TRUE(report->members.empty());
  EXPECT_EQ(report->unanswered, std::vector<std::int32_t>{1});
  ASSERT_EQ(report->unanswered_reasons.size(), 1u);
  EXPECT_NE(report->unanswered_reasons[0].find("node 1 lost"), std::string::npos)
      << report->unanswered_reasons[0];
  for (const auto& actor : {aggregator, worker, first_reducer})
    coordinator->send_exit(actor, caf::exit_reason::user_shutdown);
}

} // namespace
