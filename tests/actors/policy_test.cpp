// Grouping policies as plain classes: exhaustive small cases, no actor system.
#include "actors/policy.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <numeric>
#include <random>

namespace {

using herd::actors::arrival;
using herd::actors::group_decision;
using herd::actors::sync_policy;

arrival ready(int worker, std::uint64_t step = 1) {
  arrival event;
  event.worker = worker;
  event.step = step;
  return event;
}

std::vector<int> iota(int n) {
  std::vector<int> values(static_cast<std::size_t>(n));
  std::iota(values.begin(), values.end(), 0);
  return values;
}

TEST(sync_policy, activates_only_when_every_live_worker_is_ready_for_every_p_and_order) {
  std::mt19937_64 rng(17);
  for (int workers = 1; workers <= 16; ++workers) {
    sync_policy policy;
    EXPECT_TRUE(policy.set_live_workers(iota(workers)).empty());
    for (int round = 0; round < 5; ++round) {
      auto order = iota(workers);
      std::shuffle(order.begin(), order.end(), rng);
      for (int i = 0; i < workers; ++i) {
        const auto decisions = policy.on_ready(ready(order[static_cast<std::size_t>(i)]));
        if (i + 1 < workers) {
          ASSERT_TRUE(decisions.empty()) << "P=" << workers << " after " << i + 1 << " arrivals";
        } else {
          ASSERT_EQ(decisions.size(), 1u) << "P=" << workers;
          EXPECT_EQ(decisions[0].members, iota(workers));
          EXPECT_EQ(decisions[0].kind, herd::actors::round_kind::full_sync);
        }
      }
      EXPECT_TRUE(policy.on_group_done(iota(workers)).empty());
    }
  }
}

TEST(sync_policy, duplicate_arrival_does_not_count_twice) {
  sync_policy policy;
  policy.set_live_workers({0, 1, 2});
  EXPECT_TRUE(policy.on_ready(ready(0)).empty());
  EXPECT_TRUE(policy.on_ready(ready(0)).empty());
  EXPECT_TRUE(policy.on_ready(ready(1)).empty());
  EXPECT_EQ(policy.on_ready(ready(2)).size(), 1u);
}

TEST(sync_policy, losing_the_last_missing_worker_completes_the_round_without_it) {
  sync_policy policy;
  policy.set_live_workers({0, 1, 2, 3});
  policy.on_ready(ready(0));
  policy.on_ready(ready(2));
  policy.on_ready(ready(3));
  const auto decisions = policy.set_live_workers({0, 2, 3});
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0].members, (std::vector<int>{0, 2, 3}));
  // A late arrival from the lost worker is ignored.
  EXPECT_TRUE(policy.on_ready(ready(1)).empty());
  policy.on_ready(ready(0));
  policy.on_ready(ready(2));
  EXPECT_EQ(policy.on_ready(ready(3)).size(), 1u);
}

TEST(sync_policy, readiness_of_a_lost_worker_is_forgotten) {
  sync_policy policy;
  policy.set_live_workers({0, 1});
  policy.on_ready(ready(1));
  EXPECT_TRUE(policy.set_live_workers({0}).empty());
  const auto decisions = policy.on_ready(ready(0));
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0].members, std::vector<int>{0});
}

TEST(policies, make_policy_knows_sync_and_rejects_unknown_names) {
  EXPECT_EQ(herd::actors::make_policy("sync")->name(), "sync");
  EXPECT_THROW(herd::actors::make_policy("bogus"), std::invalid_argument);
}

TEST(weights, uniform_weights_are_one_over_group_size) {
  for (std::size_t n = 1; n <= 16; ++n) {
    const auto weights = herd::actors::member_weights(herd::actors::weighting::uniform, n);
    ASSERT_EQ(weights.size(), n);
    for (float weight : weights)
      EXPECT_FLOAT_EQ(weight, 1.0f / static_cast<float>(n));
  }
  EXPECT_THROW(herd::actors::member_weights(herd::actors::weighting::uniform, 0),
               std::invalid_argument);
}

} // namespace
