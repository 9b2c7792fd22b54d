// Partial reduce (docs/algorithms.md, "Partial reduce") as plain classes: the staleness weights,
// the isolation guard, and the grouping policy on scripted arrival sequences and on a deterministic
// discrete-event cluster (no actors); last, the data plane's group average under those weights.
#include "comm/data_plane.hpp"
#include "herd/ops.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <gtest/gtest.h>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "policy/preduce.hpp"
#include "preduce_cluster.hpp"
#include "support/arrivals.hpp"

namespace {

using namespace preduce_testing;

// -- staleness weights --------------------------------------------------------------------------

TEST(staleness_weighting, staleness_is_steps_behind_the_freshest_member) {
  EXPECT_EQ(staleness_weighting::staleness({5, 3, 5, 1}), (std::vector<std::uint64_t>{0, 2, 0, 4}));
  EXPECT_EQ(staleness_weighting::staleness({7}), (std::vector<std::uint64_t>{0}));
  EXPECT_EQ(staleness_weighting::staleness({2, 9}), (std::vector<std::uint64_t>{7, 0}));
}

TEST(staleness_weighting, decay_zero_is_the_uniform_average) {
  std::mt19937_64 rng(31);
  const staleness_weighting uniform(0.0);
  for (std::size_t members = 1; members <= 16; ++members) {
    std::vector<std::uint64_t> steps(members);
    for (auto& step : steps)
      step = 100 + rng() % 50;
    const auto weights = uniform.weights(steps);
    ASSERT_EQ(weights.size(), members);
    for (float weight : weights)
      EXPECT_NEAR(weight, 1.0 / static_cast<double>(members), 1e-7) << members << " members";
  }
}

TEST(staleness_weighting, weights_sum_to_one_and_fall_strictly_with_staleness) {
  std::mt19937_64 rng(47);
  for (double decay : {0.1, 0.5, 1.0, 2.0}) {
    const staleness_weighting weighting(decay);
    EXPECT_EQ(weighting.decay(), decay);
    for (int trial = 0; trial < 200; ++trial) {
      const std::size_t members = 1 + rng() % 12;
      std::vector<std::uint64_t> steps(members);
      for (auto& step : steps)
        step = 1000 + rng() % 11;
      const auto weights = weighting.weights(steps);
      const auto staleness = staleness_weighting::staleness(steps);
      ASSERT_EQ(weights.size(), members);
      EXPECT_NEAR(sum(weights), 1.0, 1e-6) << "decay " << decay;
      for (std::size_t i = 0; i < members; ++i) {
        EXPECT_GT(weights[i], 0.0f);
        for (std::size_t j = 0; j < members; ++j) {
          if (staleness[i] < staleness[j]) {
            EXPECT_GT(weights[i], weights[j])
                << "decay " << decay << ": staleness " << staleness[i] << " vs " << staleness[j];
          } else if (staleness[i] == staleness[j]) {
            EXPECT_FLOAT_EQ(weights[i], weights[j]);
          }
          // w_i / w_j = exp(-decay * (s_i - s_j)).
          const double expected_ratio = std::exp(
              -decay * (static_cast<double>(staleness[i]) - static_cast<double>(staleness[j])));
          EXPECT_NEAR(static_cast<double>(weights[i]) / static_cast<double>(weights[j]) /
                          expected_ratio,
                      1.0, 1e-5)
              << "decay " << decay;
        }
      }
    }
  }
}

TEST(staleness_weighting, a_negative_decay_is_refused) {
  EXPECT_THROW(staleness_weighting(-0.1), std::invalid_argument);
}

TEST(staleness_weighting, a_single_member_weighs_one) {
  EXPECT_EQ(staleness_weighting(0.5).weights({42}), std::vector<float>{1.0f});
}

// -- isolation guard ----------------------------------------------------------------------------

TEST(isolation_guard, a_disabled_guard_never_intervenes) {
  isolation_guard guard(0);
  EXPECT_FALSE(guard.enabled());
  guard.set_live_workers(iota(8));
  for (int round = 0; round < 50; ++round) {
    EXPECT_FALSE(guard.intervention_due());
    guard.record_group({0, 1});
  }
  EXPECT_FALSE(guard.intervention_due());
}

TEST(isolation_guard, intervention_is_due_when_the_groups_left_are_the_merges_still_needed) {
  isolation_guard guard(4);
  EXPECT_TRUE(guard.enabled());
  guard.set_live_workers(iota(4));
  EXPECT_EQ(guard.components(), 4u);
  EXPECT_FALSE(guard.intervention_due()) << "4 groups left, 3 merges needed";

  EXPECT_FALSE(guard.record_group({0, 1}));
  EXPECT_EQ(guard.components(), 3u);
  EXPECT_EQ(guard.groups_since_connected(), 1u);
  EXPECT_FALSE(guard.intervention_due()) << "3 groups left, 2 merges needed";

  EXPECT_FALSE(guard.record_group({1, 0})); // joins nothing
  EXPECT_EQ(guard.components(), 3u);
  EXPECT_EQ(guard.groups_since_connected(), 2u);
  EXPECT_TRUE(guard.intervention_due()) << "2 groups left, 2 merges needed";
  EXPECT_TRUE(guard.same_component(0, 1));
  EXPECT_FALSE(guard.same_component(0, 2));
  EXPECT_FALSE(guard.same_component(2, 3));

  EXPECT_FALSE(guard.record_group({1, 2}));
  EXPECT_EQ(guard.components(), 2u);
  EXPECT_TRUE(guard.same_component(0, 2));
  EXPECT_TRUE(guard.intervention_due()) << "1 group left, 1 merge needed";

  EXPECT_TRUE(guard.record_group({3, 0})) << "every worker connected: a new period";
  EXPECT_EQ(guard.components(), 4u);
  EXPECT_EQ(guard.groups_since_connected(), 0u);
  EXPECT_FALSE(guard.same_component(0, 1));
  EXPECT_FALSE(guard.intervention_due());
}

TEST(isolation_guard, a_larger_group_merges_several_components_and_workers_need_not_be_dense) {
  isolation_guard guard(3);
  guard.set_live_workers({1, 4, 6, 9});
  EXPECT_EQ(guard.components(), 4u);
  EXPECT_FALSE(guard.record_group({1, 6, 9}));
  EXPECT_EQ(guard.components(), 2u);
  EXPECT_TRUE(guard.same_component(1, 9));
  EXPECT_FALSE(guard.same_component(4, 9));
  EXPECT_TRUE(guard.record_group({4, 6}));
  EXPECT_EQ(guard.components(), 4u);
}

TEST(isolation_guard, new_live_workers_start_a_new_period) {
  isolation_guard guard(5);
  guard.set_live_workers(iota(6));
  guard.record_group({0, 1});
  guard.record_group({2, 3});
  EXPECT_EQ(guard.components(), 4u);
  guard.set_live_workers({0, 1, 2, 3, 5});
  EXPECT_EQ(guard.components(), 5u);
  EXPECT_EQ(guard.groups_since_connected(), 0u);
  EXPECT_FALSE(guard.same_component(0, 1));
}

// connect_every 0: the period follows the live workers and the group size, and can always be met.
TEST(isolation_guard, the_automatic_period_follows_the_workers_and_the_group_size) {
  EXPECT_EQ(isolation_guard::min_connecting_groups(1, 2), 0u);
  EXPECT_EQ(isolation_guard::min_connecting_groups(2, 2), 1u);
  EXPECT_EQ(isolation_guard::min_connecting_groups(18, 2), 17u) << "P - 1 merges in pairs";
  EXPECT_EQ(isolation_guard::min_connecting_groups(256, 2), 255u);
  EXPECT_EQ(isolation_guard::min_connecting_groups(256, 4), 85u) << "ceil(255 / 3)";
  EXPECT_EQ(isolation_guard::min_connecting_groups(10, 4), 3u) << "ceil(9 / 3)";
  EXPECT_EQ(isolation_guard::min_connecting_groups(4, 64), 1u) << "a group of all";
  for (std::size_t workers : {2u, 4u, 17u, 18u, 32u, 64u, 256u, 1024u})
    for (std::size_t group_size : {2u, 3u, 4u, 8u}) {
      const auto period = isolation_guard::automatic_connect_every(workers, group_size);
      EXPECT_GE(period, 16u);
      EXPECT_GE(period, 4 * isolation_guard::min_connecting_groups(workers, group_size))
          << workers << " workers in groups of " << group_size;
    }
  isolation_guard guard(-1, 2);
  EXPECT_TRUE(guard.enabled());
  guard.set_live_workers(iota(32));
  EXPECT_EQ(guard.period(), 124u) << "4 * 31";
  guard.set_live_workers(iota(4));
  EXPECT_EQ(guard.period(), 16u) << "never below the old fixed 16";
  EXPECT_EQ(isolation_guard(7, 2).period(), 7u) << "an explicit setting stays";
  EXPECT_EQ(isolation_guard(0, 2).period(), 0u) << "off";
}

TEST(isolation_guard, a_single_live_worker_is_always_connected) {
  isolation_guard guard(2);
  guard.set_live_workers({3});
  EXPECT_EQ(guard.components(), 1u);
  EXPECT_FALSE(guard.intervention_due());
}

// -- FIFO grouping and the wait window ----------------------------------------------------------

TEST(preduce_policy, groups_the_first_group_size_ready_workers_or_all_after_the_wait_window) {
  preduce_policy policy(plain_settings(3, 0.01));
  EXPECT_EQ(policy.name(), "preduce");
  EXPECT_TRUE(policy.exchanges_models());
  EXPECT_TRUE(policy.set_live_workers(iota(6)).empty());
  EXPECT_FALSE(policy.next_deadline().has_value()) << "nobody queued";

  EXPECT_TRUE(policy.on_ready(ready(0, 1, 0.0)).empty());
  // Alone, worker 0 has nothing to gain from its window's end; a deadline, if any, is that end.
  if (const auto lone = policy.next_deadline()) {
    EXPECT_NEAR(*lone, 0.0 + 0.01, 1e-12);
  }
  EXPECT_TRUE(policy.on_ready(ready(1, 1, 0.001)).empty());
  ASSERT_TRUE(policy.next_deadline().has_value());
  EXPECT_NEAR(*policy.next_deadline(), 0.0 + 0.01, 1e-12) << "the oldest queued worker's window";
  EXPECT_EQ(policy.queued(), 2u);

  const auto first = policy.on_ready(ready(2, 1, 0.002));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(sorted(first[0].members), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(first[0].kind, round_kind::partial);
  EXPECT_EQ(first[0].weights, weighting::given);
  EXPECT_FALSE(first[0].intervention);
  EXPECT_EQ(policy.queued(), 0u);
  EXPECT_FALSE(policy.next_deadline().has_value()) << "the queue emptied";

  EXPECT_TRUE(policy.on_ready(ready(3, 1, 0.003)).empty());
  EXPECT_TRUE(policy.on_ready(ready(4, 1, 0.004)).empty());
  ASSERT_TRUE(policy.next_deadline().has_value());
  EXPECT_NEAR(*policy.next_deadline(), 0.003 + 0.01, 1e-12);
  EXPECT_TRUE(policy.on_time(0.008).empty()) << "before the window closed";
  EXPECT_EQ(policy.queued(), 2u);
  const auto second = policy.on_time(*policy.next_deadline());
  ASSERT_EQ(second.size(), 1u) << "the window closed with two queued";
  EXPECT_EQ(sorted(second[0].members), (std::vector<int>{3, 4}));
  EXPECT_EQ(second[0].kind, round_kind::partial);
  EXPECT_EQ(policy.queued(), 0u);
}

TEST(preduce_policy, a_lone_queued_worker_never_forms_a_group_when_others_are_live) {
  preduce_policy policy(plain_settings(3, 0.01));
  policy.set_live_workers(iota(4));
  EXPECT_TRUE(policy.on_ready(ready(2, 1, 0.0)).empty());
  for (double now : {0.005, 0.01, 0.02, 1.0, 100.0})
    EXPECT_TRUE(policy.on_time(now).empty()) << "t=" << now;
  EXPECT_EQ(policy.queued(), 1u);
  // Its window closed long ago: the next arrival forms a window group at once, in on_ready.
  const auto decisions = policy.on_ready(ready(0, 1, 100.5));
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(sorted(decisions[0].members), (std::vector<int>{0, 2}));
}

TEST(preduce_policy, the_wait_window_is_also_checked_when_a_worker_arrives) {
  preduce_policy policy(plain_settings(4, 0.01));
  policy.set_live_workers(iota(8));
  EXPECT_TRUE(policy.on_ready(ready(5, 1, 0.0)).empty());
  EXPECT_TRUE(policy.on_ready(ready(1, 1, 0.001)).empty());
  const auto decisions = policy.on_ready(ready(6, 1, 0.02));
  ASSERT_EQ(decisions.size(), 1u) << "the oldest waited 0.02 s > 0.01 s: all three go";
  EXPECT_EQ(sorted(decisions[0].members), (std::vector<int>{1, 5, 6}));
}

TEST(preduce_policy, extra_queued_workers_stay_in_fifo_order_for_the_next_group) {
  preduce_policy policy(plain_settings(2, 1.0));
  policy.set_live_workers(iota(6));
  std::vector<std::vector<int>> groups;
  const std::vector<int> order = {4, 0, 5, 2, 1, 3};
  for (std::size_t i = 0; i < order.size(); ++i) {
    for (const auto& decision : policy.on_ready(ready(order[i], 1, 0.001 * static_cast<double>(i))))
      groups.push_back(sorted(decision.members));
  }
  EXPECT_EQ(groups, (std::vector<std::vector<int>>{{0, 4}, {2, 5}, {1, 3}}));
}

TEST(preduce_policy, a_worker_lost_in_a_group_and_then_replaced_is_queued_again) {
  preduce_policy policy(plain_settings(2, 1.0));
  policy.set_live_workers(iota(2));
  policy.on_ready(ready(0, 1, 0.0));
  const auto group = policy.on_ready(ready(1, 1, 0.0));
  ASSERT_EQ(group.size(), 1u);
  policy.set_live_workers({0});
  // Only the member that answered is reported; the lost one never comes back from that group.
  herd::policy::group_outcome done;
  done.members = {0};
  done.contributions.push_back({0, herd::policy::freshness::fresh, 1});
  policy.on_group_done(done);
  policy.set_live_workers(iota(2)); // a node joined in worker 1's place
  EXPECT_TRUE(policy.on_ready(ready(1, 5, 1.0)).empty());
  EXPECT_EQ(policy.queued(), 1u) << "the returning worker waits in the queue, not as held early";
  const auto next = policy.on_ready(ready(0, 2, 1.0));
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(sorted(next[0].members), (std::vector<int>{0, 1}));
}

TEST(preduce_policy, group_size_is_clamped_to_the_live_workers) {
  preduce_policy policy(plain_settings(4, 10.0));
  policy.set_live_workers({3, 7});
  EXPECT_TRUE(policy.on_ready(ready(7, 1, 0.0)).empty());
  const auto decisions = policy.on_ready(ready(3, 1, 0.0));
  ASSERT_EQ(decisions.size(), 1u) << "a group of 4 from 2 live workers is a group of 2";
  EXPECT_EQ(sorted(decisions[0].members), (std::vector<int>{3, 7}));
}

TEST(preduce_policy, a_single_live_worker_forms_a_group_of_one) {
  preduce_policy policy(plain_settings(2, 10.0));
  policy.set_live_workers({5});
  const auto decisions = policy.on_ready(ready(5, 1, 0.0));
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0].members, std::vector<int>{5});
  ASSERT_EQ(decisions[0].member_weights.size(), 1u);
  EXPECT_FLOAT_EQ(decisions[0].member_weights[0], 1.0f);
}

// Its next arrival can reach the coordinator before its group's completion does (different
// senders): it is held, and queued in arrival order once the group is done.
TEST(preduce_policy, a_member_of_a_group_in_flight_is_queued_again_once_its_group_is_done) {
  preduce_policy policy(plain_settings(2, 10.0));
  policy.set_live_workers(iota(4));
  policy.on_ready(ready(0, 1, 0.0));
  const auto first = policy.on_ready(ready(1, 1, 0.0));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(policy.on_ready(ready(0, 2, 0.1)).empty());
  EXPECT_TRUE(policy.on_ready(ready(2, 1, 0.2)).empty()) << "worker 0 must not pair with 2 yet";
  EXPECT_EQ(policy.queued(), 1u);
  const auto second = policy.on_group_done(done(first[0]));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(sorted(second[0].members), (std::vector<int>{0, 2}));
  EXPECT_EQ(policy.queued(), 0u);
  // A repeated arrival of a queued worker changes nothing.
  EXPECT_TRUE(policy.on_ready(ready(3, 1, 0.4)).empty());
  EXPECT_TRUE(policy.on_ready(ready(3, 1, 0.5)).empty());
  EXPECT_EQ(policy.queued(), 1u);
}

// A group's end brings its members back; the queue's window is judged on the clock of that end,
// not on the last arrival's, so a window that closed meanwhile forms its group then, not a timer
// tick later.
TEST(preduce_policy, a_finished_group_judges_the_wait_window_on_its_own_clock) {
  preduce_policy policy(plain_settings(3, 0.01));
  policy.set_live_workers(iota(4));
  policy.on_ready(ready(0, 1, 0.0));
  policy.on_ready(ready(1, 1, 0.0));
  const auto first = policy.on_ready(ready(2, 1, 0.0));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(policy.on_ready(ready(3, 1, 0.001)).empty()) << "alone in the queue";
  EXPECT_TRUE(policy.on_ready(ready(0, 2, 0.002)).empty()) << "held: its group is in flight";
  auto ended = done(first[0]);
  ended.at_seconds = 0.05; // worker 3 has waited 49 ms of a 10 ms window
  const auto second = policy.on_group_done(ended);
  ASSERT_EQ(second.size(), 1u) << "workers 3 and 0 are queued past the window";
  EXPECT_EQ(sorted(second[0].members), (std::vector<int>{0, 3}));
}

// -- weights on decisions -----------------------------------------------------------------------

TEST(preduce_policy, decisions_carry_staleness_weights_in_member_order) {
  auto settings = plain_settings(3, 10.0);
  settings.staleness_decay = 0.5;
  preduce_policy policy(settings);
  policy.set_live_workers(iota(6));
  const std::vector<std::uint64_t> step_of = {0, 0, 10, 0, 7, 9};
  policy.on_ready(ready(4, step_of[4], 0.0));
  policy.on_ready(ready(2, step_of[2], 0.0));
  const auto decisions = policy.on_ready(ready(5, step_of[5], 0.0));
  ASSERT_EQ(decisions.size(), 1u);
  const auto& group = decisions[0];
  EXPECT_EQ(sorted(group.members), (std::vector<int>{2, 4, 5}));
  EXPECT_EQ(group.weights, weighting::given);
  ASSERT_EQ(group.member_weights.size(), 3u);
  ASSERT_EQ(group.staleness.size(), 3u);
  const double total = 1.0 + std::exp(-0.5 * 3.0) + std::exp(-0.5 * 1.0);
  for (std::size_t i = 0; i < 3; ++i) {
    const int member = group.members[i];
    const std::uint64_t staleness = 10 - step_of[static_cast<std::size_t>(member)];
    EXPECT_EQ(group.staleness[i], staleness) << "worker " << member;
    EXPECT_NEAR(group.member_weights[i], std::exp(-0.5 * static_cast<double>(staleness)) / total,
                1e-6)
        << "worker " << member;
  }
}

// -- isolation: two fast workers, two 5x slower ------------------------------------------------

preduce_settings isolation_settings(int connect_every) {
  preduce_settings settings = plain_settings(2, 0.5);
  settings.staleness_decay = 0.5;
  settings.connect_every = connect_every;
  settings.connect_wait_seconds = 10.0; // longer than a slow step: a guarded group always forms
  return settings;
}

double fast_or_slow_step(int worker) {
  return worker < 2 ? 1.0 : 5.0;
}

bool is_fast(int worker) {
  return worker < 2;
}

TEST(preduce_isolation, without_the_guard_fast_and_slow_workers_never_meet) {
  scripted_cluster cluster(isolation_settings(0), 4, fast_or_slow_step);
  cluster.run_until(400);
  ASSERT_FALSE(HasFatalFailure());
  components connected(iota(4));
  std::size_t fast_groups = 0;
  std::size_t slow_groups = 0;
  for (std::size_t i = 0; i < cluster.log().size(); ++i) {
    const auto& members = cluster.log()[i].members;
    const auto fast = std::count_if(members.begin(), members.end(), is_fast);
    ASSERT_TRUE(fast == 0 || fast == static_cast<long>(members.size()))
        << "group " << i << " " << show(members) << " mixes fast and slow workers";
    (fast > 0 ? fast_groups : slow_groups) += 1;
    connected.merge(members);
    ASSERT_GT(connected.count(), 1u) << "group " << i << " connected everyone";
  }
  EXPECT_GE(fast_groups, 4 * slow_groups) << "the fast pair reduces about 5x as often";
  EXPECT_GT(slow_groups, 0u);
  EXPECT_EQ(cluster.policy().interventions(), 0u);
}

TEST(preduce_isolation, the_guard_connects_every_worker_within_connect_every_groups) {
  for (int connect_every : {4, 8}) {
    SCOPED_TRACE("connect_every " + std::to_string(connect_every));
    scripted_cluster cluster(isolation_settings(connect_every), 4, fast_or_slow_step);
    cluster.run_until(400);
    ASSERT_FALSE(HasFatalFailure());

    components connected(iota(4));
    std::size_t since_connected = 0;
    std::size_t connections = 0;
    std::size_t flagged = 0;
    std::size_t mixed = 0;
    for (std::size_t i = 0; i < cluster.log().size(); ++i) {
      const auto& group = cluster.log()[i];
      if (group.intervention) {
        flagged += 1;
        EXPECT_GE(connected.spanned_by(group.members), 2u)
            << "intervention " << i << " " << show(group.members) << " joins no components";
      }
      const auto fast = std::count_if(group.members.begin(), group.members.end(), is_fast);
      mixed += fast > 0 && fast < static_cast<long>(group.members.size()) ? 1 : 0;
      connected.merge(group.members);
      since_connected += 1;
      if (connected.count() == 1) {
        ASSERT_LE(since_connected, static_cast<std::size_t>(connect_every))
            << "group " << i << " connected everyone " << since_connected << " groups after the "
            << "last time";
        connections += 1;
        since_connected = 0;
        connected.reset();
      } else {
        ASSERT_LT(since_connected, static_cast<std::size_t>(connect_every))
            << "group " << i << ": " << since_connected << " groups without full connectivity";
      }
    }
    EXPECT_GE(connections, 400u / static_cast<std::size_t>(connect_every) - 1);
    EXPECT_GT(cluster.policy().interventions(), 0u);
    EXPECT_EQ(cluster.policy().interventions(), flagged)
        << "interventions() counts the groups flagged as interventions";
    EXPECT_GT(mixed, 0u);
  }
}

// 64 workers, 8 of them 5x faster, groups of 8, the automatic guard (a period of 36 groups): the
// same eight slow workers arrive together every time, so only the guard connects them. The guard
// once counted one merge per group whatever its size: due from the period's start, it built every
// group, at two members (a mean of 2.3), and still left everyone unconnected for 62 groups. Now
// it steps in late enough to leave groups of about 8 (6.6 here: the wait window cuts some short),
// in a few groups, and everyone is connected within the period or a few groups after it (the
// queued workers may span fewer components than a group could merge).
TEST(preduce_isolation, the_automatic_guard_keeps_large_groups_large) {
  preduce_settings settings = plain_settings(8, 0.5);
  settings.connect_every = -1;
  settings.connect_wait_seconds = 10.0;
  const auto step = [](int worker) { return worker < 8 ? 1.0 : 5.0; };
  scripted_cluster cluster(settings, 64, step);
  cluster.run_until(600);
  ASSERT_FALSE(HasFatalFailure());
  const std::size_t period = isolation_guard::automatic_connect_every(64, 8);
  EXPECT_EQ(period, 36u) << "max(16, 4 * ceil(63 / 7))";
  components connected(iota(64));
  std::size_t members = 0;
  std::size_t since_connected = 0;
  std::size_t connections = 0;
  for (std::size_t i = 0; i < cluster.log().size(); ++i) {
    const auto& group = cluster.log()[i].members;
    members += group.size();
    connected.merge(group);
    since_connected += 1;
    if (connected.count() == 1) {
      connections += 1;
      since_connected = 0;
      connected.reset();
    } else {
      ASSERT_LE(since_connected, period + period / 4)
          << "group " << i << ": " << since_connected << " groups without full connectivity";
    }
  }
  const double mean = static_cast<double>(members) / static_cast<double>(cluster.log().size());
  EXPECT_GE(mean, 6.0) << "mean group size with groups of 8";
  EXPECT_GE(connections, 600u / (period + period / 4));
  EXPECT_GT(cluster.policy().interventions(), 0u) << "the same groups form again without it";
  EXPECT_LT(cluster.policy().interventions(), cluster.log().size() / 10);
}

// Four workers, connect_every 4: once workers 0 and 1 have paired twice (components {0,1}, {2},
// {3}), the two groups left in the period must make the two merges still needed.
preduce_settings guarded_settings() {
  preduce_settings settings = plain_settings(2, 10.0);
  settings.connect_every = 4;
  settings.connect_wait_seconds = 1.0;
  return settings;
}

void pair_twice(preduce_policy& policy) {
  policy.set_live_workers(iota(4));
  for (std::uint64_t step = 1; step <= 2; ++step) {
    policy.on_ready(ready(0, step, 0.1 * static_cast<double>(step)));
    const auto pair = policy.on_ready(ready(1, step, 0.1 * static_cast<double>(step)));
    ASSERT_EQ(pair.size(), 1u);
    EXPECT_FALSE(pair[0].intervention) << "4 groups left, 3 merges needed: not due yet";
    policy.on_group_done(done(pair[0]));
  }
  EXPECT_EQ(policy.interventions(), 0u);
}

TEST(preduce_isolation, a_guarded_group_takes_the_oldest_worker_of_another_component) {
  preduce_policy policy(guarded_settings());
  pair_twice(policy);
  // Components {0,1}, {2}, {3}; 2 groups left in the period, 2 merges needed: the guard is due.
  EXPECT_TRUE(policy.on_ready(ready(0, 3, 1.0)).empty());
  EXPECT_TRUE(policy.on_ready(ready(1, 3, 1.0)).empty()) << "0 and 1 share a component";
  ASSERT_TRUE(policy.next_deadline().has_value());
  EXPECT_NEAR(*policy.next_deadline(), 1.0 + 1.0, 1e-12) << "the guard waits connect_wait";
  EXPECT_TRUE(policy.on_time(1.5).empty());

  const auto second = policy.on_ready(ready(2, 1, 1.6));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(sorted(second[0].members), (std::vector<int>{0, 2})) << "the oldest, then worker 2";
  EXPECT_TRUE(second[0].intervention);
  EXPECT_EQ(policy.interventions(), 1u);
  // Components {0,1,2}, {3}; 1 group left, 1 merge needed.
  const auto third = policy.on_ready(ready(3, 1, 1.7));
  ASSERT_EQ(third.size(), 1u);
  EXPECT_EQ(sorted(third[0].members), (std::vector<int>{1, 3}));
  EXPECT_TRUE(third[0].intervention);
  EXPECT_EQ(policy.interventions(), 2u);
  EXPECT_EQ(policy.queued(), 0u);
}

// Six workers in groups of 4, connect_every 2: two groups must connect them (ceil(5 / 3)), so
// the guard is due from the start; its group still waits for 4 workers (or the wait window), as
// any group does, rather than forming as soon as two components are queued.
TEST(preduce_isolation, a_guarded_group_waits_for_a_full_group_like_any_other) {
  preduce_settings settings = plain_settings(4, 10.0);
  settings.connect_every = 2;
  preduce_policy policy(settings);
  policy.set_live_workers(iota(6));
  EXPECT_TRUE(policy.on_ready(ready(0, 1, 0.1)).empty());
  EXPECT_TRUE(policy.on_ready(ready(1, 1, 0.2)).empty()) << "two components, but not 4 workers";
  EXPECT_TRUE(policy.on_ready(ready(2, 1, 0.3)).empty());
  const auto group = policy.on_ready(ready(3, 1, 0.4));
  ASSERT_EQ(group.size(), 1u);
  EXPECT_EQ(sorted(group[0].members), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(group[0].intervention);
  // With the wait window passed, the guard takes what is queued.
  EXPECT_TRUE(policy.on_ready(ready(4, 1, 1.0)).empty());
  EXPECT_TRUE(policy.on_ready(ready(5, 1, 1.1)).empty());
  const auto late = policy.on_time(11.0);
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(sorted(late[0].members), (std::vector<int>{4, 5}));
  EXPECT_TRUE(late[0].intervention);
}

TEST(preduce_isolation, a_guarded_group_forms_as_usual_after_connect_wait) {
  preduce_policy policy(guarded_settings());
  pair_twice(policy);
  EXPECT_TRUE(policy.on_ready(ready(0, 3, 1.0)).empty());
  EXPECT_TRUE(policy.on_ready(ready(1, 3, 1.0)).empty());
  EXPECT_TRUE(policy.on_time(1.9).empty()) << "still waiting for another component";
  ASSERT_TRUE(policy.next_deadline().has_value());
  const auto decisions = policy.on_time(*policy.next_deadline());
  ASSERT_EQ(decisions.size(), 1u) << "the guard gave up waiting";
  EXPECT_EQ(sorted(decisions[0].members), (std::vector<int>{0, 1}));
  EXPECT_FALSE(decisions[0].intervention) << "formed as usual, not built by the guard";
  EXPECT_EQ(policy.interventions(), 0u);
}

// -- consistency --------------------------------------------------------------------------------

TEST(preduce_policy, a_lost_worker_leaves_the_queue_and_never_appears_again) {
  preduce_policy policy(plain_settings(3, 10.0));
  policy.set_live_workers(iota(4));
  policy.on_ready(ready(0, 1, 0.0));
  policy.on_ready(ready(1, 1, 0.0));
  EXPECT_EQ(policy.queued(), 2u);
  EXPECT_TRUE(policy.set_live_workers({0, 2, 3}).empty());
  EXPECT_EQ(policy.queued(), 1u) << "worker 1 left the queue";
  EXPECT_TRUE(policy.on_ready(ready(1, 2, 0.1)).empty()) << "a late arrival of a lost worker";
  EXPECT_EQ(policy.queued(), 1u);
  EXPECT_TRUE(policy.on_ready(ready(2, 1, 0.2)).empty());
  const auto decisions = policy.on_ready(ready(3, 1, 0.3));
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(sorted(decisions[0].members), (std::vector<int>{0, 2, 3}));
}

TEST(preduce_policy, a_loss_can_complete_a_group) {
  preduce_policy policy(plain_settings(4, 10.0));
  policy.set_live_workers(iota(4));
  policy.on_ready(ready(0, 1, 0.0));
  policy.on_ready(ready(2, 1, 0.0));
  policy.on_ready(ready(3, 1, 0.0));
  const auto decisions = policy.set_live_workers({0, 2, 3});
  ASSERT_EQ(decisions.size(), 1u) << "group size 4 clamps to the 3 live workers, all queued";
  EXPECT_EQ(sorted(decisions[0].members), (std::vector<int>{0, 2, 3}));

  preduce_policy pair(plain_settings(2, 10.0));
  pair.set_live_workers({0, 1});
  pair.on_ready(ready(0, 1, 0.0));
  const auto alone = pair.set_live_workers({0});
  ASSERT_EQ(alone.size(), 1u) << "the last live worker reduces alone";
  EXPECT_EQ(alone[0].members, std::vector<int>{0});
}

// Random step and reduce times, several groups in flight, the guard, global averages and two
// losses; the cluster checks every decision (live, ready, in no other group, weights).
TEST(preduce_policy, decisions_stay_consistent_on_a_random_cluster_with_losses) {
  for (std::uint64_t seed : {3u, 19u, 71u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    std::lognormal_distribution<double> noise(0.0, 0.5);
    std::uniform_real_distribution<double> reduce(0.0, 0.3);
    const std::vector<double> base = {1.0, 1.0, 1.2, 0.8, 3.0, 1.0, 5.0, 1.1};
    preduce_settings settings;
    settings.group_size = 3;
    settings.wait_window_seconds = 0.3;
    settings.staleness_decay = 0.5;
    settings.connect_every = 6;
    settings.connect_wait_seconds = 0.5;
    settings.sync_every = 5;
    scripted_cluster cluster(
        settings, 8,
        [&](int worker) { return base[static_cast<std::size_t>(worker)] * noise(rng); },
        [&] { return reduce(rng); });
    cluster.run_until(150);
    ASSERT_FALSE(HasFatalFailure());
    cluster.lose(5);
    ASSERT_FALSE(HasFatalFailure());
    const std::size_t after_first_loss = cluster.log().size();
    cluster.run_until(300);
    ASSERT_FALSE(HasFatalFailure());
    cluster.lose(2);
    ASSERT_FALSE(HasFatalFailure());
    const std::size_t after_second_loss = cluster.log().size();
    cluster.run_until(450);
    ASSERT_FALSE(HasFatalFailure());

    std::size_t full_syncs = 0;
    std::size_t window_groups = 0;
    for (std::size_t i = 0; i < cluster.log().size(); ++i) {
      const auto& group = cluster.log()[i];
      const auto& members = group.members;
      full_syncs += group.kind == round_kind::full_sync ? 1 : 0;
      window_groups += group.kind == round_kind::partial && !group.intervention &&
                               members.size() < static_cast<std::size_t>(settings.group_size)
                           ? 1
                           : 0;
      if (i >= after_first_loss) {
        EXPECT_EQ(std::count(members.begin(), members.end(), 5), 0) << "group " << i;
      }
      if (i >= after_second_loss) {
        EXPECT_EQ(std::count(members.begin(), members.end(), 2), 0) << "group " << i;
      }
    }
    EXPECT_GE(full_syncs, 450u / 6 - 3) << "a global average every 5 partial groups";
    // The run exercised what it claims to: concurrent groups, the window and the guard.
    EXPECT_GE(cluster.most_in_flight(), 2u);
    EXPECT_GT(window_groups, 0u);
    EXPECT_GT(cluster.policy().interventions(), 0u);
    EXPECT_EQ(cluster.live(), (std::vector<int>{0, 1, 3, 4, 6, 7}));
  }
}

// -- global averages ----------------------------------------------------------------------------

TEST(preduce_policy, a_global_average_follows_every_sync_every_partial_groups) {
  auto settings = plain_settings(2, 10.0);
  settings.sync_every = 3;
  settings.staleness_decay = 0.5;
  preduce_policy policy(settings);
  policy.set_live_workers(iota(4));
  std::vector<std::uint64_t> step_of(4, 0);
  auto arrive = [&](int worker, double at) {
    step_of[static_cast<std::size_t>(worker)] += 1;
    return policy.on_ready(ready(worker, step_of[static_cast<std::size_t>(worker)], at));
  };
  double t = 0.0;
  for (int cycle = 0; cycle < 4; ++cycle) {
    SCOPED_TRACE("cycle " + std::to_string(cycle));
    // Three partial groups: {0,1} and {2,3}, then {0,1} again while {2,3} is in flight.
    arrive(0, t += 0.1);
    const auto g1 = arrive(1, t += 0.1);
    ASSERT_EQ(g1.size(), 1u);
    EXPECT_EQ(g1[0].kind, round_kind::partial);
    arrive(2, t += 0.1);
    const auto g2 = arrive(3, t += 0.1);
    ASSERT_EQ(g2.size(), 1u);
    EXPECT_EQ(g2[0].kind, round_kind::partial);
    EXPECT_TRUE(policy.on_group_done(done(g1[0], step_of)).empty());
    arrive(0, t += 0.1);
    const auto g3 = arrive(1, t += 0.1);
    ASSERT_EQ(g3.size(), 1u);
    EXPECT_EQ(g3[0].kind, round_kind::partial);
    EXPECT_EQ(sorted(g3[0].members), (std::vector<int>{0, 1}));

    // The global average is due: no partial group forms, it waits for all four.
    EXPECT_TRUE(policy.on_group_done(done(g3[0], step_of)).empty());
    EXPECT_TRUE(arrive(0, t += 0.1).empty());
    EXPECT_TRUE(arrive(1, t += 0.1).empty()) << "no partial group while a global average is due";
    EXPECT_TRUE(policy.on_time(t + 100.0).empty()) << "not even after the wait window";
    EXPECT_EQ(policy.queued(), 2u);
    EXPECT_TRUE(policy.on_group_done(done(g2[0], step_of)).empty());
    EXPECT_TRUE(arrive(2, t += 0.1).empty());
    const auto global = arrive(3, t += 0.1);
    ASSERT_EQ(global.size(), 1u);
    EXPECT_EQ(global[0].kind, round_kind::full_sync);
    EXPECT_EQ(sorted(global[0].members), iota(4));
    EXPECT_EQ(global[0].weights, weighting::given);
    std::vector<std::uint64_t> steps;
    for (int member : global[0].members)
      steps.push_back(step_of[static_cast<std::size_t>(member)]);
    const auto expected = expected_member_weights(settings, global[0].kind, steps);
    ASSERT_EQ(global[0].member_weights.size(), 4u);
    for (std::size_t i = 0; i < 4; ++i)
      EXPECT_NEAR(global[0].member_weights[i], expected[i], 1e-6);
    EXPECT_EQ(policy.queued(), 0u);
    EXPECT_TRUE(policy.on_group_done(done(global[0], step_of)).empty());
    t += 100.0; // the next cycle's window is fresh
  }
}

TEST(preduce_policy, a_due_global_average_forms_without_a_lost_worker) {
  auto settings = plain_settings(2, 10.0);
  settings.sync_every = 1;
  preduce_policy policy(settings);
  policy.set_live_workers(iota(3));
  policy.on_ready(ready(0, 1, 0.0));
  const auto partial = policy.on_ready(ready(1, 1, 0.0));
  ASSERT_EQ(partial.size(), 1u);
  policy.on_group_done(done(partial[0]));
  policy.on_ready(ready(0, 2, 0.1));
  EXPECT_TRUE(policy.on_ready(ready(1, 2, 0.1)).empty()) << "waiting for worker 2";
  const auto global = policy.set_live_workers({0, 1});
  ASSERT_EQ(global.size(), 1u) << "the loss completes the global average";
  EXPECT_EQ(global[0].kind, round_kind::full_sync);
  EXPECT_EQ(sorted(global[0].members), (std::vector<int>{0, 1}));
}

// -- the group average on the data plane --------------------------------------------------------

class group_average : public testing::Test {
protected:
  static constexpr std::size_t replicas = 6;
  static constexpr std::size_t count = 1000;

  void SetUp() override {
    std::mt19937 rng(2025);
    std::normal_distribution<float> value(0.0f, 1.0f);
    params_.assign(replicas, std::vector<float>(count));
    for (std::size_t r = 0; r < replicas; ++r) {
      for (auto& x : params_[r])
        x = value(rng);
      plane_->attach(static_cast<int>(r), params_[r].data(), count);
    }
  }

  void TearDown() override {
    for (std::size_t r = 0; r < replicas; ++r)
      plane_->detach(static_cast<int>(r));
  }

  std::vector<float> reduce(const std::vector<int>& members, const std::vector<float>& weights) {
    std::vector<herd::comm::weighted_input> inputs;
    for (std::size_t i = 0; i < members.size(); ++i)
      inputs.push_back({members[i], weights[i]});
    std::vector<float> out(count);
    auto work = plane_->group_reduce(inputs, nullptr, out.data(), count, {});
    EXPECT_EQ(work->wait(std::chrono::milliseconds(1000)).message(), "");
    EXPECT_TRUE(work->is_completed());
    return out;
  }

  std::vector<double> global_mean() const {
    std::vector<double> mean(count, 0.0);
    for (const auto& replica : params_)
      for (std::size_t i = 0; i < count; ++i)
        mean[i] += static_cast<double>(replica[i]) / static_cast<double>(replicas);
    return mean;
  }

  std::unique_ptr<herd::comm::data_plane> plane_ =
      herd::comm::make_local_plane(herd::kernels::cpu_ops());
  std::vector<std::vector<float>> params_;
};

TEST_F(group_average, a_uniform_group_average_preserves_the_mean_of_all_replicas) {
  const auto before = global_mean();
  const std::vector<int> members = {1, 3, 4};
  const auto weights = staleness_weighting(0.0).weights({12, 9, 4});
  const auto average = reduce(members, weights);
  for (std::size_t i = 0; i < count; ++i) {
    const double members_mean =
        (static_cast<double>(params_[1][i]) + params_[3][i] + params_[4][i]) / 3.0;
    ASSERT_NEAR(average[i], members_mean, 1e-5) << "parameter " << i;
  }
  for (int member : members)
    params_[static_cast<std::size_t>(member)] = average;
  const auto after = global_mean();
  for (std::size_t i = 0; i < count; ++i)
    ASSERT_NEAR(after[i], before[i], 1e-5) << "parameter " << i;
}

TEST_F(group_average, a_staleness_weighted_average_is_the_weighted_sum_of_the_members) {
  const std::vector<int> members = {0, 2, 5};
  const std::vector<std::uint64_t> steps = {10, 8, 5};
  const auto weights = staleness_weighting(0.7).weights(steps);
  ASSERT_GT(weights[0], weights[1]);
  ASSERT_GT(weights[1], weights[2]);
  const auto average = reduce(members, weights);
  for (std::size_t i = 0; i < count; ++i) {
    double expected = 0.0;
    for (std::size_t m = 0; m < members.size(); ++m)
      expected += static_cast<double>(weights[m]) *
                  static_cast<double>(params_[static_cast<std::size_t>(members[m])][i]);
    ASSERT_NEAR(average[i], expected, 1e-5 * (1.0 + std::abs(expected))) << "parameter " << i;
  }
}

} // namespace
