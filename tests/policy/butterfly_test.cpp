// The WAGMA-SGD butterfly schedule (docs/algorithms.md, "WAGMA-SGD") as a plain class: the paper's
// worked example, the default group size, exhaustive partitions and mixing for every P up to 64
// and every group size (absent members when P is not a power of two), and bad input.
#include <algorithm>
#include <cstdint>
#include <gtest/gtest.h>
#include <limits>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "policy/butterfly.hpp"

namespace {

using herd::policy::butterfly_schedule;
using groups_t = std::vector<std::vector<int>>;

constexpr int max_workers_tested = 64;

int padded(int workers) {
  int power = 1;
  while (power < workers)
    power *= 2;
  return power;
}

int log2_of(int power_of_two) {
  int bits = 0;
  while ((1 << bits) < power_of_two)
    ++bits;
  return bits;
}

bool is_power_of_two(int value) {
  return value > 0 && (value & (value - 1)) == 0;
}

// Every power-of-two group size the schedule accepts for `workers`: 1, 2, ..., P'.
std::vector<int> group_sizes(int workers) {
  std::vector<int> sizes;
  for (int size = 1; size <= padded(workers); size *= 2)
    sizes.push_back(size);
  return sizes;
}

// D_t straight from its definition (docs/algorithms.md), as a mask: bits (t*g + r) mod L for
// r = 0..g-1.
unsigned design_mask(int index_bits, int group_bits, std::uint64_t step) {
  unsigned mask = 0;
  for (int r = 0; r < group_bits; ++r)
    mask |= 1U << ((step * static_cast<std::uint64_t>(group_bits) + static_cast<std::uint64_t>(r)) %
                   static_cast<std::uint64_t>(index_bits));
  return mask;
}

// Steps to check: a whole period of the schedule (L steps) and two far-off ones.
std::vector<std::uint64_t> steps_to_check(int index_bits) {
  std::vector<std::uint64_t> steps;
  for (int step = 0; step < std::max(index_bits, 1); ++step)
    steps.push_back(static_cast<std::uint64_t>(step));
  steps.push_back(1'000'003);
  steps.push_back(std::numeric_limits<std::uint64_t>::max());
  return steps;
}

// The number of consecutive steps from `first_step` after which an update made at `origin` has
// reached every worker (a worker is reached once it shares a group with a reached one); nullopt
// when it has not within `limit` steps.
std::optional<int> steps_to_reach_everyone(const butterfly_schedule& schedule, int origin,
                                           std::uint64_t first_step, int limit) {
  std::set<int> reached{origin};
  int taken = 0;
  while (reached.size() < static_cast<std::size_t>(schedule.workers())) {
    if (taken == limit)
      return std::nullopt;
    for (const auto& group : schedule.groups(first_step + static_cast<std::uint64_t>(taken))) {
      const bool touched = std::any_of(group.begin(), group.end(),
                                       [&](int member) { return reached.count(member) > 0; });
      if (touched)
        reached.insert(group.begin(), group.end());
    }
    ++taken;
  }
  return taken;
}

template <class Call>
void expect_invalid_argument_naming(Call call, const std::string& text) {
  try {
    call();
    ADD_FAILURE() << "no exception; expected one naming \"" << text << "\"";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find(text), std::string::npos) << error.what();
  }
}

} // namespace

// -- the paper's example and the default size ---------------------------------------------------

// WAGMA-SGD's worked example: eight workers in groups of four; the varying bits walk 0,1 / 2,0 /
// 1,2 and back, so step 1 pairs each half of step 0's groups with the other group's.
TEST(butterfly_schedule, eight_workers_in_groups_of_four_follow_the_paper_example) {
  const butterfly_schedule schedule(8, 4);
  EXPECT_EQ(schedule.workers(), 8);
  EXPECT_EQ(schedule.group_size(), 4);
  EXPECT_EQ(schedule.bits(), 3);
  EXPECT_EQ(schedule.group_bits(), 2);

  EXPECT_EQ(schedule.varying_bits(0), (std::vector<int>{0, 1}));
  EXPECT_EQ(schedule.groups(0), (groups_t{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  // (1*2 + 0) mod 3 = 2, (1*2 + 1) mod 3 = 0.
  EXPECT_EQ(schedule.varying_bits(1), (std::vector<int>{0, 2}));
  EXPECT_EQ(schedule.groups(1), (groups_t{{0, 1, 4, 5}, {2, 3, 6, 7}}));
  EXPECT_EQ(schedule.varying_bits(2), (std::vector<int>{1, 2}));
  EXPECT_EQ(schedule.groups(2), (groups_t{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  // The walk repeats every L = 3 steps.
  EXPECT_EQ(schedule.groups(3), schedule.groups(0));
  EXPECT_EQ(schedule.groups(4), schedule.groups(1));

  EXPECT_EQ(schedule.group_of(5, 0), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(schedule.group_of(5, 1), (std::vector<int>{0, 1, 4, 5}));
  EXPECT_EQ(schedule.group_of(5, 2), (std::vector<int>{1, 3, 5, 7}));
  EXPECT_EQ(schedule.mixing_steps(), std::optional<int>(2));
}

TEST(butterfly_schedule, default_group_size_is_sqrt_of_padded_workers_rounded_down) {
  const std::vector<std::pair<int, int>> expected{{1, 1},
                                                  {2, 2},
                                                  {3, 2},
                                                  {4, 2},
                                                  {5, 2},
                                                  {8, 2},
                                                  {9, 4},
                                                  {16, 4},
                                                  {17, 4},
                                                  {32, 4},
                                                  {33, 8},
                                                  {64, 8},
                                                  {100, 8},
                                                  {128, 8},
                                                  {256, 16},
                                                  {1000, 32},
                                                  {1024, 32},
                                                  {4096, 64},
                                                  {1 << 30, 1 << 15}};
  for (const auto& [workers, size] : expected)
    EXPECT_EQ(butterfly_schedule::default_group_size(workers), size) << workers << " workers";

  for (int workers = 1; workers <= 4096; ++workers) {
    const int size = butterfly_schedule::default_group_size(workers);
    const long long padded_workers = padded(workers);
    ASSERT_TRUE(is_power_of_two(size)) << workers << " workers: " << size;
    ASSERT_LE(size, padded_workers) << workers << " workers";
    ASSERT_GE(size, workers >= 2 ? 2 : 1) << workers << " workers";
    if (padded_workers >= 4) { // S^2 <= P' < (2S)^2: the power of two at or below sqrt(P')
      ASSERT_LE(1LL * size * size, padded_workers) << workers << " workers";
      ASSERT_GT(4LL * size * size, padded_workers) << workers << " workers";
    }
  }
}

TEST(butterfly_schedule, group_size_zero_picks_the_default) {
  for (int workers = 1; workers <= max_workers_tested; ++workers) {
    const butterfly_schedule schedule(workers, 0);
    EXPECT_EQ(schedule.group_size(), butterfly_schedule::default_group_size(workers))
        << workers << " workers";
  }
}

// -- every P up to 64, every group size ---------------------------------------------------------

TEST(butterfly_schedule, groups_partition_the_workers_by_the_bits_outside_the_varying_ones) {
  for (int workers = 1; workers <= max_workers_tested; ++workers) {
    for (int size : group_sizes(workers)) {
      const butterfly_schedule schedule(workers, size);
      const int index_bits = log2_of(padded(workers));
      const int group_bits = log2_of(size);
      ASSERT_EQ(schedule.bits(), index_bits);
      ASSERT_EQ(schedule.group_bits(), group_bits);
      std::vector<std::uint64_t> steps;
      for (int step = 0; step < std::max(index_bits, 1) + 2; ++step)
        steps.push_back(static_cast<std::uint64_t>(step));
      steps.push_back(1'000'003);
      steps.push_back((std::uint64_t{1} << 40) + 7);
      for (std::uint64_t step : steps) {
        SCOPED_TRACE("P " + std::to_string(workers) + ", S " + std::to_string(size) + ", step " +
                     std::to_string(step));
        const unsigned mask = index_bits == 0 ? 0U : design_mask(index_bits, group_bits, step);
        std::vector<int> expected_bits;
        for (int bit = 0; bit < index_bits; ++bit)
          if ((mask >> bit) & 1U)
            expected_bits.push_back(bit);
        ASSERT_EQ(schedule.varying_bits(step), expected_bits);
        ASSERT_EQ(expected_bits.size(), static_cast<std::size_t>(group_bits));

        const groups_t groups = schedule.groups(step);
        std::vector<int> seen(static_cast<std::size_t>(workers), 0);
        std::set<unsigned> fixed_parts;
        int previous_smallest = -1;
        for (const auto& group : groups) {
          ASSERT_FALSE(group.empty());
          ASSERT_TRUE(std::is_sorted(group.begin(), group.end()));
          ASSERT_GT(group.front(), previous_smallest); // ordered by smallest member
          previous_smallest = group.front();
          ASSERT_LE(group.size(), static_cast<std::size_t>(size));
          if (is_power_of_two(workers)) {
            ASSERT_EQ(group.size(), static_cast<std::size_t>(size));
          }
          // Members agree on every bit outside D_t, and no two groups share those bits.
          const unsigned fixed_part = static_cast<unsigned>(group.front()) & ~mask;
          ASSERT_TRUE(fixed_parts.insert(fixed_part).second);
          for (int member : group) {
            ASSERT_GE(member, 0);
            ASSERT_LT(member, workers);
            ASSERT_EQ(static_cast<unsigned>(member) & ~mask, fixed_part) << "member " << member;
            ++seen[static_cast<std::size_t>(member)];
            ASSERT_EQ(schedule.group_of(member, step), group) << "member " << member;
          }
        }
        for (int worker = 0; worker < workers; ++worker)
          ASSERT_EQ(seen[static_cast<std::size_t>(worker)], 1) << "worker " << worker;
      }
    }
  }
}

TEST(butterfly_schedule, far_off_steps_repeat_the_walk_of_the_first_ones) {
  const std::uint64_t last = std::numeric_limits<std::uint64_t>::max();
  for (int workers : {3, 8, 12, 64}) {
    for (int size : group_sizes(workers)) {
      const butterfly_schedule schedule(workers, size);
      const auto period = static_cast<std::uint64_t>(schedule.bits());
      for (std::uint64_t step : {last, last - 1, last - 2, std::uint64_t{1} << 63})
        EXPECT_EQ(schedule.groups(step), schedule.groups(step % period))
            << "P " << workers << ", S " << size << ", step " << step;
    }
  }
}

// With P not a power of two, indices P..P'-1 are absent: each group is its power-of-two group
// without them, so some groups are smaller, down to one worker.
TEST(butterfly_schedule, absent_members_leave_the_power_of_two_groups_smaller) {
  for (int workers = 3; workers <= max_workers_tested; ++workers) {
    if (is_power_of_two(workers))
      continue;
    for (int size : group_sizes(workers)) {
      const butterfly_schedule schedule(workers, size);
      const butterfly_schedule full(padded(workers), size);
      bool some_group_smaller = false;
      for (std::uint64_t step = 0; step < static_cast<std::uint64_t>(schedule.bits()); ++step) {
        groups_t expected;
        for (auto group : full.groups(step)) {
          group.erase(std::remove_if(group.begin(), group.end(),
                                     [&](int member) { return member >= workers; }),
                      group.end());
          if (!group.empty())
            expected.push_back(group);
        }
        const groups_t groups = schedule.groups(step);
        ASSERT_EQ(groups, expected) << "P " << workers << ", S " << size << ", step " << step;
        for (const auto& group : groups)
          some_group_smaller = some_group_smaller || group.size() < static_cast<std::size_t>(size);
      }
      // At the step where the top bit varies, P'-1 is missing from its group.
      if (size >= 2) {
        EXPECT_TRUE(some_group_smaller) << "P " << workers << ", S " << size;
      }
    }
  }

  const butterfly_schedule five(5, 2);
  EXPECT_EQ(five.groups(0), (groups_t{{0, 1}, {2, 3}, {4}}));
  EXPECT_EQ(five.groups(1), (groups_t{{0, 2}, {1, 3}, {4}}));
  EXPECT_EQ(five.groups(2), (groups_t{{0, 4}, {1}, {2}, {3}}));
  EXPECT_EQ(five.group_of(1, 2), (std::vector<int>{1}));

  const butterfly_schedule six(6, 4);
  EXPECT_EQ(six.groups(0), (groups_t{{0, 1, 2, 3}, {4, 5}}));
  EXPECT_EQ(six.groups(1), (groups_t{{0, 1, 4, 5}, {2, 3}}));
  EXPECT_EQ(six.groups(2), (groups_t{{0, 2, 4}, {1, 3, 5}}));
}

// -- how fast an update spreads ------------------------------------------------------------------

// With P a power of two, steps t0..t0+k-1 (k = ceil(L/g)) vary every index bit, so an update from
// any worker reaches all in exactly k steps, from any starting step.
TEST(butterfly_schedule,
     an_update_reaches_everyone_in_ceil_l_over_g_steps_when_p_is_a_power_of_two) {
  for (int workers = 2; workers <= max_workers_tested; workers *= 2) {
    for (int size : group_sizes(workers)) {
      if (size == 1)
        continue;
      const butterfly_schedule schedule(workers, size);
      const int steps = (schedule.bits() + schedule.group_bits() - 1) / schedule.group_bits();
      ASSERT_EQ(schedule.mixing_steps(), std::optional<int>(steps));
      std::vector<std::uint64_t> first_steps;
      first_steps.reserve(static_cast<std::size_t>(schedule.bits()) + 1);
      for (int step = 0; step < schedule.bits(); ++step)
        first_steps.push_back(static_cast<std::uint64_t>(step));
      first_steps.push_back(1'000'003);
      for (std::uint64_t first_step : first_steps)
        for (int origin = 0; origin < workers; ++origin)
          ASSERT_EQ(steps_to_reach_everyone(schedule, origin, first_step, 2 * steps),
                    std::optional<int>(steps))
              << "P " << workers << ", S " << size << ", from worker " << origin << " at step "
              << first_step;
    }
  }
}

// With absent members, ceil(L/g) steps are not always enough: the path through an absent index
// is cut. 2*ceil(L/g) - 1 always is (butterfly.cpp says why), and P = P'/2 + 1 needs all of them.
TEST(butterfly_schedule,
     with_absent_members_an_update_can_need_up_to_twice_as_many_steps_less_one) {
  // P = 3, S = 2, from worker 2 at step 0: {2} (3 is absent), then {0,2}; 1 joins at step 2.
  const butterfly_schedule three(3, 2);
  EXPECT_EQ(three.group_of(2, 0), (std::vector<int>{2}));
  EXPECT_EQ(three.group_of(2, 1), (std::vector<int>{0, 2}));
  EXPECT_EQ(three.group_of(0, 2), (std::vector<int>{0, 1}));
  EXPECT_EQ(steps_to_reach_everyone(three, 2, 0, 2), std::nullopt);
  EXPECT_EQ(steps_to_reach_everyone(three, 2, 0, 3), std::optional<int>(3));
  EXPECT_EQ(three.mixing_steps(), std::optional<int>(3));

  for (int workers = 3; workers <= max_workers_tested; ++workers) {
    if (is_power_of_two(workers))
      continue;
    for (int size : group_sizes(workers)) {
      if (size == 1)
        continue;
      const butterfly_schedule schedule(workers, size);
      const int steps = (schedule.bits() + schedule.group_bits() - 1) / schedule.group_bits();
      ASSERT_EQ(schedule.mixing_steps(), std::optional<int>(2 * steps - 1));
      int slowest = 0;
      for (int first = 0; first < schedule.bits(); ++first) {
        for (int origin = 0; origin < workers; ++origin) {
          const auto taken = steps_to_reach_everyone(
              schedule, origin, static_cast<std::uint64_t>(first), *schedule.mixing_steps());
          ASSERT_TRUE(taken.has_value()) << "P " << workers << ", S " << size << ", from worker "
                                         << origin << " at step " << first;
          slowest = std::max(slowest, *taken);
        }
      }
      if (workers == padded(workers) / 2 + 1) {
        EXPECT_EQ(slowest, 2 * steps - 1) << "P " << workers << ", S " << size;
      }
    }
  }
  // The bound is not always reached: with 12 workers in groups of 4, no path needs index 12..15.
  const butterfly_schedule twelve(12, 4);
  for (int origin = 0; origin < 12; ++origin)
    for (std::uint64_t first = 0; first < 2; ++first)
      EXPECT_EQ(steps_to_reach_everyone(twelve, origin, first, 3), std::optional<int>(2))
          << "from worker " << origin << " at step " << first;
}

// -- the extremes ---------------------------------------------------------------------------------

TEST(butterfly_schedule, group_of_all_padded_workers_is_everyone_at_every_step) {
  for (int workers = 1; workers <= max_workers_tested; ++workers) {
    const butterfly_schedule schedule(workers, padded(workers));
    std::vector<int> everyone(static_cast<std::size_t>(workers));
    for (int worker = 0; worker < workers; ++worker)
      everyone[static_cast<std::size_t>(worker)] = worker;
    for (std::uint64_t step : steps_to_check(schedule.bits()))
      ASSERT_EQ(schedule.groups(step), groups_t{everyone}) << workers << " workers, step " << step;
    EXPECT_EQ(schedule.mixing_steps(), std::optional<int>(workers == 1 ? 0 : 1));
  }
}

TEST(butterfly_schedule, group_size_one_gives_singletons_and_never_mixes) {
  for (int workers = 1; workers <= max_workers_tested; ++workers) {
    const butterfly_schedule schedule(workers, 1);
    groups_t singletons;
    for (int worker = 0; worker < workers; ++worker)
      singletons.push_back({worker});
    for (std::uint64_t step : steps_to_check(schedule.bits())) {
      ASSERT_TRUE(schedule.varying_bits(step).empty());
      ASSERT_EQ(schedule.groups(step), singletons) << workers << " workers, step " << step;
    }
    const std::optional<int> expected = workers == 1 ? std::optional<int>(0) : std::nullopt;
    EXPECT_EQ(schedule.mixing_steps(), expected) << workers << " workers";
  }
}

TEST(butterfly_schedule, one_worker_is_its_own_group) {
  const butterfly_schedule schedule(1, 0);
  EXPECT_EQ(schedule.group_size(), 1);
  EXPECT_EQ(schedule.bits(), 0);
  EXPECT_EQ(schedule.group_bits(), 0);
  for (std::uint64_t step : {std::uint64_t{0}, std::uint64_t{7}, ~std::uint64_t{0}}) {
    EXPECT_TRUE(schedule.varying_bits(step).empty());
    EXPECT_EQ(schedule.groups(step), (groups_t{{0}}));
    EXPECT_EQ(schedule.group_of(0, step), (std::vector<int>{0}));
  }
}

// -- bad input -----------------------------------------------------------------------------------

TEST(butterfly_schedule, bad_input_throws_naming_the_value) {
  expect_invalid_argument_naming([] { butterfly_schedule(0, 0); }, "workers 0");
  expect_invalid_argument_naming([] { butterfly_schedule(-3, 1); }, "workers -3");
  expect_invalid_argument_naming([] { butterfly_schedule((1 << 30) + 1, 0); },
                                 "workers 1073741825");
  expect_invalid_argument_naming([] { butterfly_schedule::default_group_size(0); }, "workers 0");
  expect_invalid_argument_naming([] { butterfly_schedule(8, 3); }, "group size 3");
  expect_invalid_argument_naming([] { butterfly_schedule(8, 6); }, "group size 6");
  expect_invalid_argument_naming([] { butterfly_schedule(8, -2); }, "group size -2");
  expect_invalid_argument_naming([] { butterfly_schedule(8, 16); }, "group size 16");
  // Five workers round up to eight: 8 is a valid group size, 16 is not.
  EXPECT_EQ(butterfly_schedule(5, 8).groups(0), (groups_t{{0, 1, 2, 3, 4}}));
  expect_invalid_argument_naming([] { butterfly_schedule(5, 16); }, "group size 16");

  const butterfly_schedule schedule(8, 2);
  expect_invalid_argument_naming([&] { schedule.group_of(-1, 0); }, "worker -1");
  expect_invalid_argument_naming([&] { schedule.group_of(8, 0); }, "worker 8");
}
