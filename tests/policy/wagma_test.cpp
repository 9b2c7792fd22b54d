// WAGMA-SGD's grouping policy on scripted arrivals: the first arrival of a step activates every
// group of the butterfly schedule for that step, every sync-every-th step waits for everyone, and
// lost workers leave the groups.
#include <algorithm>
#include <gtest/gtest.h>
#include <numeric>
#include <set>
#include <vector>

#include "policy/wagma.hpp"
#include "support/arrivals.hpp"

namespace {

using herd::policy::group_decision;
using herd::policy::round_kind;
using herd::policy::wagma_policy;
using herd::policy::wagma_settings;
using herd::testing::iota;
using herd::testing::ready;

std::vector<std::vector<int>> members_of(const std::vector<group_decision>& decisions) {
  std::vector<std::vector<int>> groups;
  groups.reserve(decisions.size());
  for (const auto& decision : decisions)
    groups.push_back(decision.members);
  return groups;
}

wagma_settings settings(int group_size, int sync_every) {
  wagma_settings made;
  made.group_size = group_size;
  made.sync_every = sync_every;
  return made;
}

TEST(wagma_policy, the_first_arrival_of_a_step_activates_every_group_of_its_butterfly_step) {
  wagma_policy policy(8, settings(4, 0));
  EXPECT_TRUE(policy.set_live_workers(iota(8)).empty());
  const auto first = policy.on_ready(ready(5, 1));
  EXPECT_EQ(members_of(first), (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  for (const auto& group : first) {
    EXPECT_EQ(group.kind, round_kind::partial);
    EXPECT_EQ(group.step, 1u);
  }
  EXPECT_EQ(first[1].fresh_arrivals, 1u) << "only worker 5 had finished step 1";
  EXPECT_EQ(first[0].fresh_arrivals, 0u);
  // The others finishing step 1 (or being late for it) activate nothing more.
  for (int worker : {0, 1, 2, 3, 4, 6, 7})
    EXPECT_TRUE(policy.on_ready(ready(worker, 1)).empty());
  const auto second = policy.on_ready(ready(2, 2));
  EXPECT_EQ(members_of(second), (std::vector<std::vector<int>>{{0, 1, 4, 5}, {2, 3, 6, 7}}));
  EXPECT_EQ(policy.activated_step(), 2u);
}

TEST(wagma_policy, every_sync_every_th_step_is_a_global_average_once_everyone_finished_it) {
  wagma_policy policy(4, settings(2, 3));
  policy.set_live_workers(iota(4));
  for (std::uint64_t step = 1; step <= 2; ++step) {
    EXPECT_EQ(policy.on_ready(ready(0, step)).size(), 2u) << "step " << step;
    for (int worker = 1; worker < 4; ++worker)
      EXPECT_TRUE(policy.on_ready(ready(worker, step)).empty());
  }
  // Step 3: blocking. Three arrivals activate nothing, the fourth the global average.
  for (int worker : {2, 0, 3})
    EXPECT_TRUE(policy.on_ready(ready(worker, 3)).empty()) << "worker " << worker;
  const auto global = policy.on_ready(ready(1, 3));
  ASSERT_EQ(global.size(), 1u);
  EXPECT_EQ(global[0].kind, round_kind::full_sync);
  EXPECT_EQ(global[0].members, iota(4));
  EXPECT_EQ(global[0].step, 3u);
  EXPECT_EQ(global[0].fresh_arrivals, 4u);
  // Step 4 is wait-avoiding again.
  EXPECT_EQ(policy.on_ready(ready(3, 4)).size(), 2u);
}

TEST(wagma_policy, lost_workers_leave_the_groups_and_a_loss_can_complete_a_global_average) {
  wagma_policy policy(8, settings(4, 2));
  policy.set_live_workers({0, 1, 2, 3, 4, 5, 7}); // worker 6 lost
  const auto first = policy.on_ready(ready(0, 1));
  EXPECT_EQ(members_of(first), (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 7}}));
  EXPECT_TRUE(policy.on_ready(ready(6, 2)).empty()) << "a lost worker's arrival counts for nothing";
  for (int worker : {0, 1, 2, 3, 4, 5})
    EXPECT_TRUE(policy.on_ready(ready(worker, 2)).empty());
  const auto global = policy.set_live_workers({0, 1, 2, 3, 4, 5}); // losing 7 completes step 2
  ASSERT_EQ(global.size(), 1u);
  EXPECT_EQ(global[0].members, iota(6));
  EXPECT_EQ(global[0].kind, round_kind::full_sync);
}

TEST(wagma_policy,
     a_global_average_still_waits_for_the_live_workers_after_one_that_finished_is_lost) {
  wagma_policy policy(4, settings(2, 2));
  policy.set_live_workers(iota(4));
  EXPECT_EQ(policy.on_ready(ready(0, 1)).size(), 2u);
  for (int worker : {1, 2, 3})
    EXPECT_TRUE(policy.on_ready(ready(worker, 1)).empty());
  for (int worker : {0, 1, 2}) // three of four finish step 2, the global average's
    EXPECT_TRUE(policy.on_ready(ready(worker, 2)).empty()) << "worker " << worker;
  // Worker 2, which had finished it, is lost: the average still waits for worker 3.
  EXPECT_TRUE(policy.set_live_workers({0, 1, 3}).empty());
  const auto global = policy.on_ready(ready(3, 2));
  ASSERT_EQ(global.size(), 1u);
  EXPECT_EQ(global[0].kind, round_kind::full_sync);
  EXPECT_EQ(global[0].members, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(global[0].step, 2u);
}

TEST(wagma_policy, workers_that_are_not_a_power_of_two_form_smaller_groups) {
  wagma_policy policy(6, settings(4, 0));
  policy.set_live_workers(iota(6));
  const auto first = policy.on_ready(ready(4, 1));
  EXPECT_EQ(members_of(first), (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5}}));
  const auto second = policy.on_ready(ready(4, 2));
  EXPECT_EQ(members_of(second), (std::vector<std::vector<int>>{{0, 1, 4, 5}, {2, 3}}));
}

TEST(wagma_policy, every_step_partitions_the_live_workers_in_step_order) {
  for (int workers : {1, 2, 3, 5, 8, 13, 16}) {
    wagma_policy policy(workers, settings(0, 5));
    policy.set_live_workers(iota(workers));
    for (std::uint64_t step = 1; step <= 20; ++step) {
      std::vector<group_decision> decisions;
      for (int worker = 0; worker < workers; ++worker) {
        auto more = policy.on_ready(ready(worker, step));
        decisions.insert(decisions.end(), more.begin(), more.end());
      }
      std::multiset<int> covered;
      for (const auto& decision : decisions) {
        EXPECT_EQ(decision.step, step);
        EXPECT_EQ(decision.kind, step % 5 == 0 ? round_kind::full_sync : round_kind::partial);
        EXPECT_LE(decision.members.size(),
                  step % 5 == 0 ? static_cast<std::size_t>(workers)
                                : static_cast<std::size_t>(policy.schedule().group_size()));
        covered.insert(decision.members.begin(), decision.members.end());
      }
      const auto all = iota(workers);
      EXPECT_EQ(covered, std::multiset<int>(all.begin(), all.end()))
          << "P=" << workers << " step " << step;
    }
  }
}

} // namespace
