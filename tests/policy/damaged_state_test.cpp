// A policy state from a damaged or crafted checkpoint is refused as it is loaded, naming what does
// not fit: worker indices outside the policy's tables (which indexed past them: a crash), repeats
// and disorder (a stalled run), tables of another size, and a component guard whose parents lead
// nowhere (which find() followed forever). The states are written field by field as the policies
// write them.
#include <cstdint>
#include <deque>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "policy/preduce.hpp"
#include "policy/state_archive.hpp"
#include "policy/wagma.hpp"

namespace {

using herd::policy::quorum_policy;
using herd::policy::detail::save_fields;
using testing::HasSubstr;

// What load_state throws, or "" when it takes the state.
template <class Policy>
std::string refusal(Policy& policy, const std::string& state) {
  try {
    policy.load_state(state);
  } catch (const std::runtime_error& refused) {
    return refused.what();
  }
  return "";
}

// A quorum policy's fields: live workers, ready and consumed steps, a round in flight, rounds.
std::string quorum_state(std::vector<int> live, std::vector<std::uint64_t> ready,
                         std::vector<std::uint64_t> consumed) {
  return save_fields("solo", live, ready, consumed, false, std::uint64_t{0});
}

TEST(damaged_policy_state, quorum_worker_indices_must_lie_in_its_tables_in_order) {
  quorum_policy policy("solo", 0.0, 0);
  EXPECT_EQ(refusal(policy, quorum_state({0, 1}, {3, 2}, {2, 2})), "");
  EXPECT_EQ(policy.live_workers(), (std::vector<int>{0, 1}));
  quorum_policy crafted("solo", 0.0, 0);
  EXPECT_THAT(refusal(crafted, quorum_state({0, 100000}, {0, 0}, {0, 0})),
              HasSubstr("the solo policy state is damaged: live workers hold worker 100000, "
                        "outside the 2 it keeps track of"));
  EXPECT_THAT(refusal(crafted, quorum_state({-7, 1}, {0, 0}, {0, 0})), HasSubstr("worker -7"));
  EXPECT_THAT(refusal(crafted, quorum_state({0, 0}, {0, 0}, {0, 0})),
              HasSubstr("live workers are not in ascending order (worker 0 after 0)"));
  EXPECT_THAT(refusal(crafted, quorum_state({0, 1}, {0, 0}, {0, 0, 0})),
              HasSubstr("consumed steps have 3 entries for 2 workers"));
  // Another policy's state is refused by its name first.
  EXPECT_THAT(refusal(crafted, save_fields("wagma", std::vector<int>{0})),
              HasSubstr("the policy state is wagma's, not solo's"));
}

TEST(damaged_policy_state, wagma_tables_are_the_runs_size) {
  herd::policy::wagma_settings settings;
  settings.group_size = 2;
  herd::policy::wagma_policy policy(4, settings);
  const std::vector<std::uint64_t> four(4, 0);
  EXPECT_EQ(
      refusal(policy, save_fields("wagma", std::vector<int>{0, 1, 2, 3}, four, std::uint64_t{0})),
      "");
  herd::policy::wagma_policy crafted(4, settings);
  EXPECT_THAT(refusal(crafted, save_fields("wagma", std::vector<int>{0, 1},
                                           std::vector<std::uint64_t>(2), std::uint64_t{0})),
              HasSubstr("fresh steps have 2 entries for 4 workers"));
  herd::policy::wagma_policy outside(4, settings);
  EXPECT_THAT(
      refusal(outside, save_fields("wagma", std::vector<int>{0, 4}, four, std::uint64_t{0})),
      HasSubstr("worker 4, outside the 4"));
}

// The isolation guard's fields, as preduce writes them.
struct guard_fields {
  int connect_every = 1;
  int group_size = 2;
  std::vector<int> live{0, 1};
  std::vector<int> parent{0, 0};
  std::size_t components = 1;
  std::size_t groups_since_connected = 0;

  template <class Archive>
  void serialize(Archive& archive) {
    archive(connect_every, group_size, live, parent, components, groups_since_connected);
  }
};

std::string preduce_state(const guard_fields& guard, std::vector<int> in_group = {}) {
  const std::deque<int> no_queue; // empty: its element type is never written
  return save_fields("preduce", guard, std::vector<int>{0, 1}, no_queue,
                     std::vector<std::uint64_t>(2), std::vector<std::uint64_t>(2), in_group,
                     std::vector<int>{}, std::uint64_t{0}, std::uint64_t{0},
                     std::optional<double>{}, 0.0);
}

TEST(damaged_policy_state, preduce_guard_components_must_reach_a_root) {
  herd::policy::preduce_settings settings;
  herd::policy::preduce_policy policy(settings);
  EXPECT_EQ(refusal(policy, preduce_state(guard_fields{})), "");
  guard_fields cycle;
  cycle.parent = {1, 0}; // each the other's parent: no root
  herd::policy::preduce_policy crafted(settings);
  EXPECT_THAT(refusal(crafted, preduce_state(cycle)),
              HasSubstr("the guard's component of worker 0 has no root"));
  guard_fields outside;
  outside.parent = {0, 7};
  EXPECT_THAT(refusal(crafted, preduce_state(outside)),
              HasSubstr("the guard's component of worker 1 leads outside its slots"));
  EXPECT_THAT(refusal(crafted, preduce_state(guard_fields{}, {1, 9})),
              HasSubstr("workers in a group hold worker 9"));
}

} // namespace
