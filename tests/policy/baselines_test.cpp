// The papers' baselines as grouping policies, on scripted arrivals and on a virtual clock:
// local SGD (a round of one worker after each of its local steps, a global average of everyone
// every `period` steps, nothing in between) and the asynchronous parameter server (every arrival
// a round of that worker alone, started at once, waiting for nobody). docs/algorithms.md defines
// both.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <queue>
#include <vector>

#include "herd/run_config.hpp"
#include "policy/async.hpp"
#include "policy/local_sgd.hpp"
#include "support/arrivals.hpp"

namespace {

using herd::policy::async_policy;
using herd::policy::group_decision;
using herd::policy::local_sgd_policy;
using herd::policy::round_kind;
using herd::testing::iota;
using herd::testing::ready;

TEST(local_sgd_policy, a_step_between_averages_is_a_round_of_its_worker_alone) {
  local_sgd_policy policy(4);
  EXPECT_TRUE(policy.set_live_workers(iota(3)).empty());
  for (std::uint64_t step = 1; step <= 3; ++step)
    for (int worker = 0; worker < 3; ++worker) {
      const auto decisions = policy.on_ready(ready(worker, step));
      ASSERT_EQ(decisions.size(), 1u) << "worker " << worker << ", step " << step;
      EXPECT_EQ(decisions[0].members, std::vector<int>{worker});
      EXPECT_EQ(decisions[0].kind, round_kind::partial);
      EXPECT_EQ(decisions[0].step, step);
      EXPECT_EQ(decisions[0].fresh_arrivals, 1u);
      EXPECT_EQ(decisions[0].weights, herd::policy::weighting::uniform)
          << "a model averaged alone, weight exactly 1: the model is unchanged";
    }
  EXPECT_EQ(policy.averaged_step(), 0u);
}

TEST(local_sgd_policy, every_period_th_step_averages_everyone_once_the_last_has_finished_it) {
  local_sgd_policy policy(2);
  policy.set_live_workers(iota(3));
  for (int worker = 0; worker < 3; ++worker)
    policy.on_ready(ready(worker, 1));
  EXPECT_TRUE(policy.on_ready(ready(2, 2)).empty()) << "worker 2 waits for the others";
  EXPECT_TRUE(policy.on_ready(ready(0, 2)).empty());
  const auto average = policy.on_ready(ready(1, 2));
  ASSERT_EQ(average.size(), 1u);
  EXPECT_EQ(average[0].members, iota(3));
  EXPECT_EQ(average[0].kind, round_kind::full_sync);
  EXPECT_EQ(average[0].step, 2u);
  EXPECT_EQ(average[0].fresh_arrivals, 3u);
  EXPECT_EQ(policy.averaged_step(), 2u);
}

TEST(local_sgd_policy, a_lost_worker_no_longer_holds_the_average_up) {
  local_sgd_policy policy(1);
  policy.set_live_workers(iota(3));
  EXPECT_TRUE(policy.on_ready(ready(0, 1)).empty());
  EXPECT_TRUE(policy.on_ready(ready(1, 1)).empty());
  const auto average = policy.set_live_workers({0, 1});
  ASSERT_EQ(average.size(), 1u);
  EXPECT_EQ(average[0].members, (std::vector<int>{0, 1}));
  EXPECT_TRUE(policy.on_ready(ready(2, 2)).empty()) << "worker 2 was declared lost";
}

TEST(local_sgd_policy, its_state_survives_a_checkpoint) {
  local_sgd_policy policy(2);
  policy.set_live_workers(iota(2));
  policy.on_ready(ready(0, 1));
  policy.on_ready(ready(0, 2));
  local_sgd_policy resumed(2);
  resumed.load_state(policy.save_state());
  policy.on_ready(ready(1, 1));
  resumed.on_ready(ready(1, 1));
  EXPECT_EQ(policy.on_ready(ready(1, 2)).size(), 1u);
  EXPECT_EQ(resumed.on_ready(ready(1, 2)).size(), 1u) << "worker 0 had reached step 2";
}

// Workers of different speeds on a virtual clock, driven as the coordinator and the workers do: a
// worker takes its next step once the round that took its step's model has finished (rounds finish
// at once here). Every worker must be in a global average after exactly its steps period,
// 2 period, ..., and in a round of its own after every other step: nothing else.
TEST(local_sgd_policy, on_a_virtual_clock_everyone_averages_exactly_every_period_steps) {
  constexpr int workers = 4;
  constexpr int period = 3;
  constexpr std::uint64_t steps = 12;
  const double step_time[workers] = {1.0, 1.7, 2.3, 5.0}; // worker 3 is the straggler
  local_sgd_policy policy(period);
  policy.set_live_workers(iota(workers));

  using event = std::pair<double, int>; // (time a step ends, worker)
  std::priority_queue<event, std::vector<event>, std::greater<>> ends;
  std::vector<std::uint64_t> done(workers, 0);
  std::vector<std::vector<std::uint64_t>> global_at(workers), alone_at(workers);
  for (int worker = 0; worker < workers; ++worker)
    ends.push({step_time[worker], worker});
  while (!ends.empty()) {
    const auto [now, worker] = ends.top();
    ends.pop();
    const std::uint64_t step = ++done[static_cast<std::size_t>(worker)];
    for (const group_decision& round : policy.on_ready(ready(worker, step, now))) {
      for (int member : round.members) {
        auto& rounds = round.members.size() == 1 && round.kind == round_kind::partial
                           ? alone_at[static_cast<std::size_t>(member)]
                           : global_at[static_cast<std::size_t>(member)];
        rounds.push_back(done[static_cast<std::size_t>(member)]);
        if (done[static_cast<std::size_t>(member)] < steps) // its model is back: the next step
          ends.push({now + step_time[member], member});
      }
      if (round.kind == round_kind::full_sync) {
        EXPECT_EQ(round.members, iota(workers)) << "a global average is everyone's";
        EXPECT_EQ(round.step % period, 0u);
      }
    }
  }
  for (int worker = 0; worker < workers; ++worker) {
    const auto index = static_cast<std::size_t>(worker);
    EXPECT_EQ(done[index], steps) << "worker " << worker << " finished its steps";
    EXPECT_EQ(global_at[index], (std::vector<std::uint64_t>{3, 6, 9, 12})) << "worker " << worker;
    std::vector<std::uint64_t> others;
    for (std::uint64_t step = 1; step <= steps; ++step)
      if (step % period != 0)
        others.push_back(step);
    EXPECT_EQ(alone_at[index], others) << "worker " << worker;
  }
}

TEST(local_sgd_policy, make_policy_builds_it_with_its_period) {
  herd::config::run_config config;
  config.train.algorithm = "local-sgd";
  config.local_sgd.period = 5;
  const auto policy = herd::policy::make_policy(config);
  EXPECT_EQ(policy->name(), "local-sgd");
  EXPECT_TRUE(policy->exchanges_models());
  EXPECT_FALSE(policy->blends_late_models());
  EXPECT_EQ(dynamic_cast<const local_sgd_policy&>(*policy).period(), 5);
}

TEST(async_policy, every_arrival_is_a_round_of_its_worker_alone_started_at_once) {
  async_policy policy;
  EXPECT_TRUE(policy.set_live_workers(iota(3)).empty());
  EXPECT_TRUE(policy.applies_at_server());
  EXPECT_FALSE(policy.exchanges_models()) << "workers send gradients";
  // Rounds of different workers overlap: none waits for another to finish.
  for (const int worker : {2, 0, 2, 1, 2}) {
    const auto decisions = policy.on_ready(ready(worker, 1));
    ASSERT_EQ(decisions.size(), 1u);
    EXPECT_EQ(decisions[0].members, std::vector<int>{worker});
    EXPECT_EQ(decisions[0].kind, round_kind::partial);
    EXPECT_EQ(decisions[0].fresh_arrivals, 1u);
  }
  EXPECT_TRUE(policy.on_group_done({}).empty());
  policy.set_live_workers({0, 1});
  EXPECT_TRUE(policy.on_ready(ready(2, 2)).empty()) << "worker 2 was declared lost";
}

// A slow worker holds nobody back: on a virtual clock where worker 0 is 10x slower, the fast ones
// get a round for every step they finish, as soon as they finish it.
TEST(async_policy, a_slow_worker_does_not_hold_the_others_back) {
  async_policy policy;
  policy.set_live_workers(iota(3));
  const double step_time[3] = {10.0, 1.0, 1.0};
  std::map<int, int> rounds;
  for (double now = 1.0; now <= 20.0; now += 1.0)
    for (int worker = 0; worker < 3; ++worker)
      if (static_cast<int>(now) % static_cast<int>(step_time[worker]) == 0)
        for (const auto& round : policy.on_ready(ready(worker, 1, now)))
          ++rounds[round.members.front()];
  EXPECT_EQ(rounds[0], 2);
  EXPECT_EQ(rounds[1], 20);
  EXPECT_EQ(rounds[2], 20);
}

} // namespace
