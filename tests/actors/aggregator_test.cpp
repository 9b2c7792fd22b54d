// The aggregator, with the test playing coordinator, node reducers and workers: across processes,
// a round whose members all live on a node that is lost is settled by that loss alone; in one
// process, a reduction the data plane fails is reported in the plane's words and delivers nothing,
// and a member that stops is left out as soon as it is gone.
#include "actors/aggregator.hpp"
#include "actors/aggregator_rounds.hpp"
#include "actors/messages.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "support/delegating_plane.hpp"

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

// Round `round` of `members` (their actors `handles`), of `kind`.
group_plan hand_made_plan(std::uint64_t round, std::vector<std::int32_t> members,
                          std::vector<caf::actor> handles, round_kind kind) {
  group_plan plan;
  plan.round = round;
  plan.members = std::move(members);
  plan.member_handles = std::move(handles);
  plan.kind = kind;
  return plan;
}

// A node reducer's answer to the aggregator's contribution_asks: it asks each of `workers` (by
// index) in turn, as the real one does, and answers with what they said.
caf::result<contribution_answers> gather(caf::event_based_actor* self,
                                         const std::vector<caf::actor>& workers,
                                         const contribution_asks& asks) {
  auto promise = self->make_response_promise<contribution_answers>();
  auto got = std::make_shared<contribution_answers>();
  auto waiting = std::make_shared<std::size_t>(asks.workers.size());
  for (std::int32_t index : asks.workers)
    self->request(workers.at(static_cast<std::size_t>(index)), caf::infinite,
                  contribute_atom::value, asks.round, asks.step)
        .then([=](const contribution& answer) mutable {
          got->answers.push_back(answer);
          if (--*waiting == 0)
            promise.deliver(*got);
        });
  return promise;
}

caf::behavior idle_reducer(caf::event_based_actor* self, std::vector<caf::actor> workers) {
  return {
      [](const reduce_order&) {},
      [self, workers](const contribution_asks& asks) { return gather(self, workers, asks); },
  };
}

TEST(aggregator_across_nodes, members_of_a_lost_node_are_reported_unanswered_when_it_goes) {
  caf::actor_system_config config;
  add_message_types(config);
  caf::actor_system system{config};
  caf::scoped_actor coordinator{system};
  auto worker = system.spawn<mute_worker>();
  const std::vector<caf::actor> workers{worker, worker}; // worker 1 on node 1
  auto first_reducer = system.spawn(idle_reducer, workers);
  auto second_reducer = system.spawn(idle_reducer, workers);
  aggregator_setup setup;
  setup.results = herd::comm::buffer_pool::create(4);
  setup.contribution_timeout = std::chrono::minutes(10); // only the node's loss can settle it
  setup.worker_nodes = {0, 1};
  setup.node_reducers = {first_reducer, second_reducer};
  auto aggregator = spawn_aggregator(system, setup, coordinator);

  const auto plan = hand_made_plan(7, {1}, {worker}, round_kind::partial);
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

// Answers every contribution request with a fresh gradient and forwards what it is given.
caf::behavior giving_worker(caf::event_based_actor* self, std::int32_t index,
                            const caf::actor& observer) {
  return {
      [index](contribute_atom, std::uint64_t round, std::uint64_t step) {
        return contribution{index, round, step, freshness::fresh, 16, 0};
      },
      [self, observer](const round_result& result) { self->send(observer, result); },
  };
}

// A node reducer that answers every order after 300 ms, saying its reduction took `seconds`.
caf::behavior timed_reducer(caf::event_based_actor* self, std::int32_t node, double seconds,
                            std::vector<caf::actor> workers) {
  return {
      [self, workers](const contribution_asks& asks) { return gather(self, workers, asks); },
      [self, node, seconds](const reduce_order& order) {
        auto promise = self->make_response_promise<reduce_done>();
        self->delayed_anon_send(self, std::chrono::milliseconds(300), caf::tick_atom::value,
                                order.round);
        self->become(caf::keep_behavior,
                     [self, promise, node, seconds](caf::tick_atom, std::uint64_t round) mutable {
                       promise.deliver(reduce_done{round, node, {}, seconds});
                       self->unbecome();
                     });
      },
      [](commit_atom, std::uint64_t, bool) {},
  };
}

// A round's data-plane time is the shortest any node measured: a node that got its order first
// waited for the others' (a coordinator paused while sending them made it wait), and the round's
// time on the aggregator's side counts the orders' and answers' way too. It used to be that wall
// time, and a 3 s pause of the coordinator read as a 3 s reduction.
TEST(aggregator_across_nodes, a_rounds_data_plane_time_is_the_shortest_a_node_measured) {
  caf::actor_system_config config;
  add_message_types(config);
  caf::actor_system system{config};
  caf::scoped_actor coordinator{system};
  const std::vector<caf::actor> workers{system.spawn(giving_worker, 0, caf::actor(coordinator)),
                                        system.spawn(giving_worker, 1, caf::actor(coordinator))};
  const std::vector<caf::actor> reducers{system.spawn(timed_reducer, 0, 2.0, workers),   // waited
                                         system.spawn(timed_reducer, 1, 0.05, workers)}; // the ring
  aggregator_setup setup;
  setup.results = herd::comm::buffer_pool::create(4);
  setup.worker_nodes = {0, 1};
  setup.node_reducers = reducers;
  auto aggregator = spawn_aggregator(system, setup, coordinator);
  const auto plan = hand_made_plan(3, {0, 1}, workers, round_kind::full_sync);
  coordinator->send(aggregator, plan);
  std::optional<group_done> report;
  coordinator->receive_while([&] { return !report; })(
      [&](const group_done& done) { report = done; }, [](const round_result&) {},
      caf::after(std::chrono::seconds(30)) >> [&] { report = group_done{}; });
  ASSERT_TRUE(report);
  EXPECT_TRUE(report->result.ok()) << report->result.message();
  EXPECT_EQ(report->reduce_seconds, 0.05); // not the 0.3 s the answers took, nor 2 s
  for (const auto& actor : workers)
    coordinator->send_exit(actor, caf::exit_reason::user_shutdown);
  for (const auto& actor : reducers)
    coordinator->send_exit(actor, caf::exit_reason::user_shutdown);
  coordinator->send_exit(aggregator, caf::exit_reason::user_shutdown);
}

// Ends the test's actors.
void stop_all(caf::scoped_actor& coordinator, const std::vector<caf::actor>& workers,
              const caf::actor& aggregator) {
  for (const auto& actor : workers)
    coordinator->send_exit(actor, caf::exit_reason::user_shutdown);
  coordinator->send_exit(aggregator, caf::exit_reason::user_shutdown);
}

// A local plane with `count` workers' send buffers (4 floats each) attached.
struct attached_plane {
  explicit attached_plane(int count)
      : plane(herd::comm::make_local_plane(herd::kernels::cpu_ops())),
        sends(static_cast<std::size_t>(count), std::vector<float>(4, 1.0f)) {
    for (int worker = 0; worker < count; ++worker)
      EXPECT_TRUE(plane->attach(worker, sends[static_cast<std::size_t>(worker)].data(), 4).ok());
  }
  std::shared_ptr<herd::comm::data_plane> plane;
  std::vector<std::vector<float>> sends;
};

// What the test's coordinator hears of a round: its report, and the results that reached its
// giving workers once `results` did (an empty report after 30 s).
struct heard_round {
  group_done report;
  int delivered = 0;
};
heard_round hear_round(caf::scoped_actor& coordinator, int results) {
  std::optional<group_done> report;
  int delivered = 0;
  coordinator->receive_while([&] { return !report || delivered < results; })(
      [&](const group_done& done) { report = done; }, [&](const round_result&) { ++delivered; },
      caf::after(std::chrono::seconds(30)) >> [&] { report = group_done{}; });
  return {*report, delivered};
}

// A member that never answers is given up after contribution_timeout (one timer for the round);
// the members that answered are reduced and get the result.
TEST(aggregator_in_one_process, a_member_silent_past_the_contribution_timeout_is_left_out) {
  caf::actor_system_config config;
  add_message_types(config);
  caf::actor_system system{config};
  caf::scoped_actor coordinator{system};
  const attached_plane local(3);
  aggregator_setup setup;
  setup.plane = local.plane;
  setup.results = herd::comm::buffer_pool::create(4);
  setup.contribution_timeout = std::chrono::milliseconds(300);
  const std::vector<caf::actor> workers{system.spawn(giving_worker, 0, caf::actor(coordinator)),
                                        system.spawn<mute_worker>(),
                                        system.spawn(giving_worker, 2, caf::actor(coordinator))};
  auto aggregator = spawn_aggregator(system, setup, coordinator);

  const auto plan = hand_made_plan(5, {0, 1, 2}, workers, round_kind::partial);
  const auto sent = std::chrono::steady_clock::now();
  coordinator->send(aggregator, plan);
  const auto [report, delivered] = hear_round(coordinator, 2);
  EXPECT_GE(std::chrono::steady_clock::now() - sent, std::chrono::milliseconds(300))
      << "given up before its timeout";
  EXPECT_EQ(report.round, 5u);
  EXPECT_TRUE(report.result.ok()) << report.result.message();
  EXPECT_EQ(report.members, (std::vector<std::int32_t>{0, 2}));
  EXPECT_EQ(report.unanswered, std::vector<std::int32_t>{1});
  ASSERT_EQ(report.unanswered_reasons.size(), 1u);
  EXPECT_EQ(report.unanswered_reasons[0], "no contribution within 300 ms");
  EXPECT_EQ(delivered, 2) << "both members that answered get the result";
  stop_all(coordinator, workers, aggregator);
}

// In one process a member is asked with a plain message, not a request: when it stops before it
// answers (or was gone before it was asked), its monitor settles it at once, long before the
// contribution timeout, and the round goes on with the others.
TEST(aggregator_in_one_process, a_member_that_stops_is_left_out_at_once) {
  caf::actor_system_config config;
  add_message_types(config);
  caf::actor_system system{config};
  caf::scoped_actor coordinator{system};
  const attached_plane local(4);
  aggregator_setup setup;
  setup.plane = local.plane;
  setup.results = herd::comm::buffer_pool::create(4);
  setup.contribution_timeout = std::chrono::seconds(60);
  const auto gone = system.spawn<mute_worker>();
  coordinator->send_exit(gone, caf::exit_reason::user_shutdown);
  coordinator->wait_for(gone);
  const auto stopping = system.spawn<mute_worker>();
  const std::vector<caf::actor> workers{system.spawn(giving_worker, 0, caf::actor(coordinator)),
                                        stopping, gone,
                                        system.spawn(giving_worker, 3, caf::actor(coordinator))};
  auto aggregator = spawn_aggregator(system, setup, coordinator);

  const auto sent = std::chrono::steady_clock::now();
  coordinator->send(aggregator, hand_made_plan(9, {0, 1, 2, 3}, workers, round_kind::partial));
  std::this_thread::sleep_for(std::chrono::milliseconds(100)); // asked, and silent
  coordinator->send_exit(stopping, caf::exit_reason::user_shutdown);
  const auto [report, delivered] = hear_round(coordinator, 2);
  EXPECT_LT(std::chrono::steady_clock::now() - sent, std::chrono::seconds(30))
      << "waited for the contribution timeout";
  EXPECT_EQ(report.round, 9u);
  EXPECT_TRUE(report.result.ok()) << report.result.message();
  EXPECT_EQ(report.members, (std::vector<std::int32_t>{0, 3}));
  auto unanswered = report.unanswered;
  std::sort(unanswered.begin(), unanswered.end());
  EXPECT_EQ(unanswered, (std::vector<std::int32_t>{1, 2}));
  ASSERT_EQ(report.unanswered_reasons.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i)
    EXPECT_EQ(report.unanswered_reasons[i].rfind(
                  "worker " + std::to_string(report.unanswered[i]) + " stopped: ", 0),
              0u)
        << report.unanswered_reasons[i];
  EXPECT_EQ(delivered, 2) << "both members that answered get the result";
  stop_all(coordinator, workers, aggregator);
}

// A round reduces its members' send buffers with the plan's weights: given weights as given, or
// renormalised over the members that answered; uniform over those that answered; uniform over
// every planned member (a silent one counting as zeros) under missing-members = zero.
TEST(aggregator_in_one_process, a_round_reduces_its_members_with_the_planned_weights) {
  caf::actor_system_config config;
  add_message_types(config);
  caf::actor_system system{config};
  caf::scoped_actor coordinator{system};
  attached_plane local(4);
  const std::vector<std::vector<float>> sends{
      {1, 2, 3, 4}, {10, 20, 30, 40}, {100, 200, 300, 400}, {7, 7, 7, 7}};
  for (std::size_t w = 0; w < 4; ++w)
    std::copy(sends[w].begin(), sends[w].end(), local.sends[w].begin());
  aggregator_setup setup;
  setup.plane = local.plane;
  setup.results = herd::comm::buffer_pool::create(4);
  setup.contribution_timeout = std::chrono::milliseconds(300);
  const std::vector<caf::actor> workers{system.spawn(giving_worker, 0, caf::actor(coordinator)),
                                        system.spawn(giving_worker, 1, caf::actor(coordinator)),
                                        system.spawn(giving_worker, 2, caf::actor(coordinator)),
                                        system.spawn<mute_worker>()};
  auto aggregator = spawn_aggregator(system, setup, coordinator);
  struct weighed {
    std::vector<std::int32_t> members;
    weighting weights;
    std::vector<float> given;
    std::vector<float> expected;
  };
  const std::vector<weighed> rounds{
      {{0, 1, 2}, weighting::given, {0.5f, 0.3f, 0.2f}, {23.5f, 47, 70.5f, 94}},
      {{0, 1, 3}, weighting::given, {0.5f, 0.3f, 0.2f}, {4.375f, 8.75f, 13.125f, 17.5f}},
      {{0, 1, 2, 3}, weighting::uniform, {}, {37, 74, 111, 148}},
      {{0, 1, 2, 3}, weighting::uniform_planned, {}, {27.75f, 55.5f, 83.25f, 111}}};
  std::uint64_t number = 0;
  for (const auto& round : rounds) {
    std::vector<caf::actor> handles;
    for (auto member : round.members)
      handles.push_back(workers[static_cast<std::size_t>(member)]);
    auto plan = hand_made_plan(++number, round.members, handles, round_kind::partial);
    plan.weights = round.weights;
    plan.member_weights = round.given;
    coordinator->send(aggregator, plan);
    std::optional<group_done> report;
    std::vector<std::vector<float>> results;
    const std::size_t answering =
        round.members.back() == 3 ? round.members.size() - 1 : round.members.size();
    coordinator->receive_while([&] { return !report || results.size() < answering; })(
        [&](const group_done& done) { report = done; },
        [&](const round_result& result) { results.push_back(result.data->to_host()); },
        caf::after(std::chrono::seconds(30)) >> [&] { report = group_done{}; });
    ASSERT_TRUE(report->result.ok()) << "round " << number << ": " << report->result.message();
    ASSERT_EQ(results.size(), answering) << "round " << number;
    for (const auto& result : results) {
      ASSERT_EQ(result.size(), 4u);
      for (std::size_t i = 0; i < 4; ++i)
        EXPECT_FLOAT_EQ(result[i], round.expected[i]) << "round " << number << ", float " << i;
    }
  }
  stop_all(coordinator, workers, aggregator);
}

// A round none of whose members answered has nothing to reduce and no one to give a result to:
// it is aborted, not reported as completed "divided by the 0 that answered".
TEST(aggregator_in_one_process, a_round_no_member_answered_is_aborted) {
  caf::actor_system_config config;
  add_message_types(config);
  caf::actor_system system{config};
  caf::scoped_actor coordinator{system};
  aggregator_setup setup;
  setup.plane = herd::comm::make_local_plane(herd::kernels::cpu_ops());
  setup.results = herd::comm::buffer_pool::create(4);
  setup.contribution_timeout = std::chrono::milliseconds(100);
  const std::vector<caf::actor> workers{system.spawn<mute_worker>(), system.spawn<mute_worker>()};
  auto aggregator = spawn_aggregator(system, setup, coordinator);
  const auto plan = hand_made_plan(7, {0, 1}, workers, round_kind::partial);
  coordinator->send(aggregator, plan);
  std::optional<group_done> report;
  coordinator->receive([&](const group_done& done) { report = done; },
                       caf::after(std::chrono::seconds(30)) >> [] {});
  ASSERT_TRUE(report);
  EXPECT_TRUE(report->aborted);
  EXPECT_FALSE(report->result.ok());
  EXPECT_EQ(report->result.message(), "no member answered");
  EXPECT_EQ(report->unanswered, (std::vector<std::int32_t>{0, 1}));
  stop_all(coordinator, workers, aggregator);
}

TEST(aggregator_in_one_process, a_reduction_the_plane_fails_is_reported_and_delivers_nothing) {
  caf::actor_system_config config;
  add_message_types(config);
  caf::actor_system system{config};
  caf::scoped_actor coordinator{system};
  std::shared_ptr<herd::comm::data_plane> local =
      herd::comm::make_local_plane(herd::kernels::cpu_ops());
  std::vector<std::vector<float>> sends(2, std::vector<float>(4, 1.0f));
  for (int worker = 0; worker < 2; ++worker)
    ASSERT_TRUE(local->attach(worker, sends[static_cast<std::size_t>(worker)].data(), 4).ok());
  aggregator_setup setup;
  // Fault injection as c10d's tests do it: the local plane, with group_reduce alone overridden.
  setup.plane = std::make_shared<herd::testing::failing_reduce_plane>(
      local, herd::comm::status{herd::comm::outcome::peer_lost, "rank 1 failed: injected"});
  setup.results = herd::comm::buffer_pool::create(4);
  const std::vector<caf::actor> workers{system.spawn(giving_worker, 0, caf::actor(coordinator)),
                                        system.spawn(giving_worker, 1, caf::actor(coordinator))};
  auto aggregator = spawn_aggregator(system, setup, coordinator);

  const auto plan = hand_made_plan(3, {0, 1}, workers, round_kind::full_sync);
  coordinator->send(aggregator, plan);
  std::optional<group_done> report;
  bool delivered = false;
  coordinator->receive_while([&] {
    return !report;
  })([&](const group_done& done) { report = done; }, [&](const round_result&) { delivered = true; },
     caf::after(std::chrono::seconds(30)) >> [&] { report = group_done{}; });
  coordinator->receive([&](const round_result&) { delivered = true; },
                       caf::after(std::chrono::milliseconds(200)) >> [] {});
  EXPECT_EQ(report->round, 3u);
  EXPECT_EQ(report->members, (std::vector<std::int32_t>{0, 1}));
  EXPECT_EQ(report->result.kind(), herd::comm::outcome::peer_lost);
  EXPECT_EQ(report->result.message(), "rank 1 failed: injected");
  EXPECT_FALSE(report->aborted);
  EXPECT_FALSE(delivered) << "a member got the result of a reduction that failed";
  for (const auto& actor : {aggregator, workers[0], workers[1]})
    coordinator->send_exit(actor, caf::exit_reason::user_shutdown);
}

// A finished round's state serves the next round: it starts as a new one would, every answer,
// position, failure and report of the old round gone, with the old round's memory.
TEST(aggregator_rounds, a_reopened_round_starts_fresh_with_the_finished_ones_memory) {
  aggregator_rounds rounds;
  auto& first = rounds.open(7);
  first.plan.round = 7;
  first.plan.members = {0, 3, 5};
  first.answers.assign(3, std::nullopt);
  first.answers[1] = contribution{3, 7, 0, freshness::fresh, 8, 6, false};
  first.settled.assign(3, true);
  first.position_of = {0, -1, -1, 1, -1, 2};
  first.outstanding = 1;
  first.plan_failures.unanswered = {5};
  first.plan_failures.reasons = {"timed out"};
  first.report.members = {0, 3};
  first.reducing_nodes = {1};
  first.reduce_failure = {herd::comm::outcome::peer_lost, "node 1 was lost"};
  first.node_seconds = 0.25;
  const auto* answers_memory = first.answers.data();
  EXPECT_TRUE(rounds.holds(7));
  rounds.close(rounds.find(7));
  EXPECT_FALSE(rounds.holds(7));

  auto& second = rounds.open(8);
  EXPECT_TRUE(rounds.holds(8));
  EXPECT_EQ(rounds.in_flight().size(), 1u);
  EXPECT_TRUE(second.plan.members.empty());
  EXPECT_TRUE(second.answers.empty());
  EXPECT_TRUE(second.settled.empty());
  EXPECT_EQ(second.position_of, (std::vector<std::int32_t>(6, -1)))
      << "a worker of the old round is no member of the new one";
  EXPECT_EQ(second.outstanding, 0u);
  EXPECT_TRUE(second.plan_failures.unanswered.empty());
  EXPECT_TRUE(second.plan_failures.reasons.empty());
  EXPECT_TRUE(second.report.members.empty());
  EXPECT_TRUE(second.reducing_nodes.empty());
  EXPECT_TRUE(second.reduce_failure.ok());
  EXPECT_FALSE(second.node_seconds.has_value());
  second.answers.assign(3, std::nullopt);
  EXPECT_EQ(second.answers.data(), answers_memory) << "the old round's memory, not new";

  auto& third = rounds.open(9); // nothing finished meanwhile: a state of its own
  EXPECT_EQ(rounds.in_flight().size(), 2u);
  EXPECT_TRUE(third.answers.empty());
  EXPECT_TRUE(third.position_of.empty());
}

} // namespace
